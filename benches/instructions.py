#!/usr/bin/env python3
"""Instructions per call of the kernel rows of benches/python_exchange.py, under callgrind.

Time on a shared two-core VM moves by a few percent between runs; the instructions a call runs
do not (for one build, with `PYTHONHASHSEED=0`). This runs every kernel row of the benchmark
(the kernels as users build them: benches/peers/dlbridge-user and benches/peers/rust-numpy, in
both profiles) in one process under `valgrind --tool=callgrind`, collecting only inside the
PyO3-generated function of a kernel (`__pyfunction_<name>`: argument extraction, the kernel,
the returned object made), and prints the instructions per call of each row. Per row, the
kernel is called WARMUP times (the first calls fill caches of types), then CALLS times between
two calls of `os.getppid()`, at which callgrind dumps its counters (`--dump-before`): the
part between the two dumps is the row's.

    .venv/bin/python benches/instructions.py [--calls N] [--functions] [--torch] [WORD ...]

WORDs keep the rows whose label, build or peer contains one of them. `--functions` also
prints, per row, the functions with the most inclusive instructions (callgrind_annotate).
`--torch` counts the PyTorch rows of the benchmark's first table instead (dlbridge's imports,
kernels and results beside tvm-ffi's, nanobind's, dlpark's and the C floors'), whole calls from
the Python loop: these peers are not PyO3 functions, so everything between the two markers is
counted, the loop's own few hundred instructions per call included alike in every row.
Needs valgrind (Debian's package) and the peers of `make bench-peers`.
"""

import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile

from measuring import dump_parts, total_instructions

HERE = pathlib.Path(__file__).resolve().parent
WARMUP = 100


def child(calls, words, torch_rows):
    sys.path.insert(0, str(HERE))
    import python_exchange

    # Each dlbridge module with a registry of its own, as python_exchange.py times them.
    python_exchange.own_registries()
    if torch_rows:
        array = python_exchange.np.arange(16, dtype=python_exchange.np.float32).reshape(4, 4)
        tensor = python_exchange.dlbridge.from_dlpack(array)
        cases = [
            (label, "", "", function)
            for label, function in python_exchange.torch_cases(array, tensor)
        ]
    else:
        cases = python_exchange.user_kernel_cases(python_exchange.torch)
    for label, build, peer, function in select(cases, words):
        for _ in range(WARMUP):
            function()
        os.getppid()
        for _ in range(calls):
            function()
        os.getppid()
        print(f"{label}\t{build}\t{peer}", flush=True)


def select(cases, words):
    if not words:
        return cases
    return [case for case in cases if any(word in " ".join(case[:3]) for word in words)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2_000)
    parser.add_argument("--functions", action="store_true")
    parser.add_argument("--torch", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("words", nargs="*")
    arguments = parser.parse_args()
    if arguments.child:
        child(arguments.calls, arguments.words, arguments.torch)
        return
    with tempfile.TemporaryDirectory() as directory:
        out = pathlib.Path(directory) / "callgrind.out"
        # The kernel rows collect inside PyO3's generated functions only; the torch rows
        # collect everything, and so dump at libc's `getppid` alone (not also at Python's
        # `os_getppid`, which would leave a small part between the two).
        collect = (
            ["--collect-atstart=yes", "--dump-before=getppid"]
            if arguments.torch
            else [
                "--collect-atstart=no",
                "--toggle-collect=*__pyfunction_*",
                "--dump-before=*getppid*",
            ]
        )
        command = [
            "valgrind",
            "--tool=callgrind",
            *collect,
            f"--callgrind-out-file={out}",
            sys.executable,
            __file__,
            "--child",
            "--calls",
            str(arguments.calls),
            *(["--torch"] if arguments.torch else []),
            *arguments.words,
        ]
        environment = dict(os.environ, PYTHONHASHSEED="0")
        finished = subprocess.run(
            command, env=environment, capture_output=True, text=True, check=False
        )
        if finished.returncode != 0:
            sys.stderr.write(finished.stderr[-4000:])
            sys.exit(finished.returncode)
        rows = [line.split("\t") for line in finished.stdout.splitlines() if "\t" in line]
        parts = dump_parts(directory)
        print(f"instructions per call ({arguments.calls:,} calls per row, callgrind)")
        print()
        if arguments.torch:
            print("| row | instructions per call |")
            print("|---|---|")
        else:
            print("| kernel | build | peer | instructions per call |")
            print("|---|---|---|---|")
        for index, (label, build, peer) in enumerate(rows):
            part = parts[2 * index + 1]
            per_call = total_instructions(part) / arguments.calls
            if arguments.torch:
                print(f"| `{label}` | {per_call:,.0f} |")
            else:
                print(f"| {label} | {build} | {peer} | {per_call:,.0f} |")
            if arguments.functions:
                annotated = subprocess.run(
                    ["callgrind_annotate", "--inclusive=yes", "--threshold=99", str(part)],
                    capture_output=True,
                    text=True,
                    check=False,
                ).stdout
                for line in annotated.splitlines()[:60]:
                    if re.match(r"^\s*[\d,]+ \(", line):
                        print(f"    {line.strip()[:160]}")


if __name__ == "__main__":
    main()
