#!/usr/bin/env python3
"""dlbridge's exchange and argument paths timed in several builds of its extension, one run.

Each build is a folder holding `_dlbridge<EXT_SUFFIX>` (crates/dlbridge-python built with the
cargo feature `testing`, whose `_testing` kernels the argument rows call) and, optionally,
`dlbridge_matmul<EXT_SUFFIX>` (the matmul example, for the `return_like` row of
benches/python_exchange.py); benches/build-at-commit.sh builds both, at any commit, in the
workspace's profile (fat LTO) and in cargo's default release profile. The builds are loaded
into one process under names of their own, as python_exchange.py loads its default-profile
build (a module is found by its file and initialised by the last part of its name), and every
row is timed with every build in the same interleaved run: each round times each row once per
build, the builds in a rotating order, so that a burst of noise on a shared machine lands on
one sample of each rather than on every sample of one build. A sample is the mean time of
`--calls` calls (python_exchange.py's method); a row's time is the best sample of `--rounds`
rounds (the median is in the second table and the JSON). Each build's objects (its tensors)
are made by that build; the NumPy arrays and PyTorch tensors are shared. Each module publishes
and uses an aliasing registry of its own, as an extension alone in its process does
(benches/aliasing_registries.py); `--shared-registry LABEL` (repeatable) leaves the build LABEL
to the registry's own rule instead: it calls the registry published by the build loaded before
it, through the capsule, as the second dlbridge module of a process does. Tensors are 4x4 float32
on the CPU unless a row says otherwise.

    bash benches/build-at-commit.sh 0744a74 target/compare/builds/before
    bash benches/build-at-commit.sh WORKTREE target/compare/builds/after
    .venv/bin/python benches/compare_builds.py \\
        before-lto=target/compare/builds/before/lto after-lto=target/compare/builds/after/lto \\
        before-default=target/compare/builds/before/default \\
        after-default=target/compare/builds/after/default

(`make bench-compare BASE=0744a74` does the same.) The tables give each build's time and its
change in percent against a baseline: by default the first build; `--against NEW:OLD`
(repeatable) compares the pairs named instead, here `--against after-lto:before-lto
--against after-default:before-default`. `--json FILE` also writes the run to FILE. The row
`no-op, 3 plain objects` calls a PyO3 function that takes three objects and touches no
tensor: the same code in every build, so its change is the run's noise.

`--row WORD` (repeatable) times only the rows whose label contains one of the words.
`--instructions` counts instead of timing: each build alone in a process of its own under
`valgrind --tool=callgrind` (with `PYTHONHASHSEED=0`), the instructions per call of each row,
whole calls from the Python loop (`--calls` calls, 2,000 by default, between two dumps at
libc's `getppid`, as benches/instructions.py counts). `--functions` adds, per row and pair,
the Rust functions whose inclusive instructions per call changed most (callgrind_annotate).
Counts move far less than times between runs (a few instructions in most rows), so they tell a
real change of a few percent from noise.
"""

import argparse
import importlib.util
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

import aliasing_registries
import numpy as np
from measuring import dump_parts, machine, total_instructions

try:
    import torch
except ImportError:  # pragma: no cover - torch is in the test environment
    torch = None

SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


def load_build(index, label, folder, registries, *, own_registry=True):
    """{"_dlbridge": module, "dlbridge_matmul": module} of the build in `folder`, loaded under
    `dlbridge_compare_<index>.*`, each with its own aliasing registry (`own_registry`; else
    calling the one published before); the matmul example is left out where it is not
    there."""
    folder = pathlib.Path(folder)
    modules = {}
    for name in ("_dlbridge", "dlbridge_matmul"):
        path = folder / f"{name}{SUFFIX}"
        if not path.exists():
            if name == "_dlbridge":
                sys.exit(f"{label}: no {path}")
            continue
        spec = importlib.util.spec_from_file_location(f"dlbridge_compare_{index}.{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules[name] = module
    if not hasattr(modules["_dlbridge"], "_testing"):
        sys.exit(f"{label}: {folder} was built without the cargo feature `testing`")
    ones = np.ones((4, 4), dtype=np.float32)
    # Each module publishes and uses an aliasing registry of its own, as an extension alone in
    # its process does (benches/aliasing_registries.py), or calls the one published before.
    if own_registry:
        registry = aliasing_registries.own_registry
    else:
        registry = aliasing_registries.shared_registry
    registry(
        f"{label}: _dlbridge",
        lambda: modules["_dlbridge"]._testing.noop3(ones, ones, ones),
        registries,
    )
    if "dlbridge_matmul" in modules:
        registry(
            f"{label}: dlbridge_matmul",
            lambda: modules["dlbridge_matmul"].add(ones, ones),
            registries,
        )
    return modules


def build_rows(modules):
    """(row, call) of one build: the exchange rows, then the typed arguments' and the results'
    (`return_like`). A row whose kernel the build lacks is left out."""
    dl = modules["_dlbridge"]
    kernels = dl._testing
    matmul = modules.get("dlbridge_matmul")
    array = np.arange(16, dtype=np.float32).reshape(4, 4)
    tensor = dl.from_dlpack(array)
    na, nb, nc = (np.ones((4, 4), dtype=np.float32) for _ in range(3))
    nw = np.zeros(16)
    rows = [
        ("dlbridge.from_dlpack(numpy_array)", lambda: dl.from_dlpack(array)),
        ("dlbridge.from_dlpack(dlbridge_tensor)", lambda: dl.from_dlpack(tensor)),
        ("dlbridge_tensor.__dlpack__()", lambda: tensor.__dlpack__()),
        (
            "dlbridge_tensor.__dlpack__(max_version=(1, 3))",
            lambda: tensor.__dlpack__(max_version=(1, 3)),
        ),
        ("np.from_dlpack(dlbridge_tensor)", lambda: np.from_dlpack(tensor)),
    ]
    if torch is not None:
        t = torch.arange(16, dtype=torch.float32).reshape(4, 4)
        rows += [
            ("dlbridge.from_dlpack(torch_tensor)", lambda: dl.from_dlpack(t)),
            ("torch.from_dlpack(dlbridge_tensor)", lambda: torch.from_dlpack(tensor)),
        ]
    rows += [
        ("no-op, 3 numpy arrays, TensorArg<f32, Ix2> (noop3)", lambda: kernels.noop3(na, nb, nc)),
        (
            "write, 1 numpy array (16 float64), TensorArgMut<f64, Ix1> (add_one)",
            lambda: kernels.add_one(nw),
        ),
    ]
    if torch is not None:
        a, b, c = (torch.ones(4, 4) for _ in range(3))
        w = torch.zeros(16, dtype=torch.float64)
        rows += [
            ("no-op, 3 torch tensors, TensorArg<f32, Ix2> (noop3)", lambda: kernels.noop3(a, b, c)),
            (
                "write, 1 torch tensor (16 float64), TensorArgMut<f64, Ix1> (add_one)",
                lambda: kernels.add_one(w),
            ),
        ]
    # Rust's own from_dlpack (dlbridge_pyo3::from_dlpack, what extension authors call), then
    # the tensor back to Python with return_like: the import's claim is paid here.
    if hasattr(kernels, "import_return_like"):
        rows += [
            (
                "Rust from_dlpack(numpy_array) + return_like to numpy (import_return_like)",
                lambda: kernels.import_return_like(array, array),
            ),
        ]
        if torch is not None:
            rows += [
                (
                    "Rust from_dlpack(torch_tensor) + return_like to torch (import_return_like)",
                    lambda: kernels.import_return_like(t, t),
                ),
            ]
    if hasattr(kernels, "zeros_like_framework"):
        rows += [
            (
                "new 4x4 float32 from Rust, return_like to numpy (zeros_like_framework)",
                lambda: kernels.zeros_like_framework(na, "float32", [4, 4]),
            ),
        ]
    if matmul is not None:
        rows += [
            (
                "add, numpy in, new numpy array out, dlbridge example (`return_like`)",
                lambda: matmul.add(na, nb),
            ),
        ]
        if torch is not None:
            rows += [
                (
                    "add, torch in, new torch tensor out, dlbridge example (`return_like`)",
                    lambda: matmul.add(a, b),
                ),
            ]
    control = (na, nb, nc) if torch is None else (a, b, c)
    rows += [
        (
            "no-op, 3 plain objects, PyO3 (noop3_objects: the run's noise)",
            lambda: kernels.noop3_objects(*control),
        ),
    ]
    return rows


def time_interleaved(table, calls, rounds, warmup):
    """{(row, build): [sample, ...]}: the mean time of one call in nanoseconds, one sample a
    round. `table` is {row: {build: call}}; each round times every row with every build, the
    builds' order turned by one each round."""
    for calls_of_row in table.values():
        for function in calls_of_row.values():
            for _ in range(warmup):
                function()
    samples = {(row, build): [] for row, calls_of_row in table.items() for build in calls_of_row}
    for round_index in range(rounds):
        for row, calls_of_row in table.items():
            builds = list(calls_of_row)
            turn = round_index % len(builds)
            for build in builds[turn:] + builds[:turn]:
                function = calls_of_row[build]
                start = time.perf_counter_ns()
                for _ in range(calls):
                    function()
                samples[row, build].append((time.perf_counter_ns() - start) / calls)
    return samples


def change(new, old):
    """`new` against `old` in percent, signed ("+3.1%": slower)."""
    return f"{(new / old - 1) * 100:+.1f}%"


def print_table(title, rows, labels, pairs, value, *, unit=" ns"):
    """A Markdown table: row, each build's `value` (`unit`), then each pair's change."""
    print()
    print(title)
    print()
    print(
        "| row | "
        + " | ".join(labels)
        + " | "
        + " | ".join(f"{new} vs {old}" for new, old in pairs)
        + " |"
    )
    print("|---" * (1 + len(labels) + len(pairs)) + "|")
    for row in rows:
        cells = [
            f"{value(row, label):,.0f}{unit}" if value(row, label) else "-" for label in labels
        ]
        cells += [
            change(value(row, new), value(row, old)) if value(row, new) and value(row, old) else "-"
            for new, old in pairs
        ]
        print(f"| `{row}` | " + " | ".join(cells) + " |")


def parse_arguments():
    parser = argparse.ArgumentParser(
        description="Times dlbridge's exchange and argument rows in several builds, interleaved."
    )
    parser.add_argument(
        "builds", nargs="+", metavar="LABEL=FOLDER", help="a build: its label and its folder"
    )
    parser.add_argument(
        "--against",
        action="append",
        default=[],
        metavar="NEW:OLD",
        help="a pair to compare (repeatable); by default every build against the first",
    )
    parser.add_argument(
        "--calls",
        type=int,
        help="calls per sample (10,000; with --instructions, calls counted: 2,000)",
    )
    parser.add_argument("--rounds", type=int, default=21, help="samples per row and build")
    parser.add_argument("--warmup", type=int, default=1_000, help="calls before timing")
    parser.add_argument(
        "--row",
        action="append",
        default=[],
        metavar="WORD",
        help="time only the rows whose label contains WORD (repeatable; not with --instructions)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the run to FILE")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions per call (callgrind)"
    )
    parser.add_argument(
        "--functions", action="store_true", help="with --instructions: the functions that moved"
    )
    parser.add_argument(
        "--shared-registry",
        action="append",
        default=[],
        metavar="LABEL",
        help="the build LABEL calls the registry of the build loaded before it (repeatable)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    builds = {}
    for build in arguments.builds:
        label, separator, folder = build.partition("=")
        if not separator or not label or not folder:
            parser.error(f"{build!r}: not LABEL=FOLDER")
        if label in builds:
            parser.error(f"{label!r} named twice")
        builds[label] = folder
    labels = list(builds)
    pairs = []
    for pair in arguments.against:
        new, separator, old = pair.partition(":")
        if not separator or new not in builds or old not in builds:
            parser.error(f"--against {pair!r}: not NEW:OLD of two labels among {labels}")
        pairs.append((new, old))
    for label in arguments.shared_registry:
        if label not in labels[1:]:
            parser.error(f"--shared-registry {label!r}: not a label among {labels[1:]}")
    if arguments.row and arguments.instructions:
        parser.error("--row times the rows it names; --instructions counts every row")
    if not pairs:
        pairs = [(label, labels[0]) for label in labels[1:]]
    if arguments.calls is None:
        arguments.calls = 2_000 if arguments.instructions or arguments.child else 10_000
    return arguments, builds, pairs


def count_child(label, folder, calls):
    """Under callgrind: every row of the build in `folder`, `calls` calls between two calls of
    `os.getppid()` (where callgrind dumps its counters), each row's label printed."""
    for row, function in build_rows(load_build(0, label, folder, set())):
        for _ in range(100):
            function()
        os.getppid()
        for _ in range(calls):
            function()
        os.getppid()
        print(f"row\t{row}", flush=True)


def functions_per_call(path, calls):
    """{function: inclusive instructions per call} of one callgrind dump."""
    annotated = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(path)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    functions = {}
    for line in annotated.splitlines():
        found = re.match(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*?)(?: \[.*\])?$", line)
        if found:
            name = found.group(2).removeprefix("???:")
            count = int(found.group(1).replace(",", "")) / calls
            functions[name] = functions.get(name, 0) + count
    return functions


def count_build(label, folder, calls, with_functions):
    """{row: (instructions per call, {function: inclusive per call} or None)} of one build,
    counted in a process of its own under callgrind."""
    with tempfile.TemporaryDirectory() as directory:
        out = pathlib.Path(directory) / "callgrind.out"
        command = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=yes",
            "--dump-before=getppid",
            f"--callgrind-out-file={out}",
            sys.executable,
            __file__,
            "--child",
            "--calls",
            str(calls),
            f"{label}={folder}",
        ]
        environment = dict(os.environ, PYTHONHASHSEED="0")
        finished = subprocess.run(
            command, env=environment, capture_output=True, text=True, check=False
        )
        if finished.returncode != 0:
            sys.stderr.write(finished.stderr[-4000:])
            sys.exit(finished.returncode)
        rows = [line.split("\t", 1)[1] for line in finished.stdout.splitlines() if "\t" in line]
        parts = dump_parts(out.parent)
        return {
            row: (
                total_instructions(parts[2 * index + 1]) / calls,
                functions_per_call(parts[2 * index + 1], calls) if with_functions else None,
            )
            for index, row in enumerate(rows)
        }


def count_instructions(arguments, builds, pairs):
    """--instructions: each build counted alone, then the table and the functions that moved."""
    counts = {
        label: count_build(label, folder, arguments.calls, arguments.functions)
        for label, folder in builds.items()
    }
    rows = list(dict.fromkeys(row for counted in counts.values() for row in counted))
    print(
        f"Python {sys.version.split()[0]}, numpy {np.__version__}; instructions per call"
        f" ({arguments.calls:,} calls per row, callgrind, each build in a process of its own)"
    )
    for label, folder in builds.items():
        print(f"- {label}: {folder}")
    print_table(
        "Instructions per call (a change above 0: more)",
        rows,
        list(builds),
        pairs,
        lambda row, label: counts[label].get(row, (None, None))[0],
        unit="",
    )
    if arguments.functions:
        for new, old in pairs:
            print()
            print(f"Functions whose inclusive instructions per call moved most, {new} vs {old}:")
            for row in rows:
                if row not in counts[new] or row not in counts[old]:
                    continue
                after, before = counts[new][row][1], counts[old][row][1]
                # Rust functions below the kernel's PyO3 wrapper: its callers (Python's
                # frames, the trampoline) all move by the row's whole difference.
                moved = sorted(
                    (
                        (after.get(name, 0) - before.get(name, 0), name)
                        for name in after | before
                        if "::" in name and not re.search("trampoline|__pyfunction_", name)
                    ),
                    key=lambda item: -abs(item[0]),
                )
                print(f"- `{row}`:")
                for difference, name in [item for item in moved if abs(item[0]) >= 1][:8]:
                    print(
                        f"  {difference:+6.0f} {before.get(name, 0):6.0f} -> "
                        f"{after.get(name, 0):6.0f}  {name[:110]}"
                    )
    if arguments.json is not None:
        record = {
            "date": time.strftime("%Y-%m-%d"),
            "machine": machine(),
            "calls": arguments.calls,
            "builds": builds,
            "against": [list(pair) for pair in pairs],
            "instructions_per_call": {
                row: {label: counts[label][row][0] for label in builds if row in counts[label]}
                for row in rows
            },
        }
        path = pathlib.Path(arguments.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1) + "\n")


def main():
    arguments, builds, pairs = parse_arguments()
    if arguments.child:
        [(label, folder)] = builds.items()
        count_child(label, folder, arguments.calls)
        return
    if arguments.instructions:
        count_instructions(arguments, builds, pairs)
        return
    labels = list(builds)
    table = {}
    registries = set()
    for index, (label, folder) in enumerate(builds.items()):
        own_registry = label not in arguments.shared_registry
        modules = load_build(index, label, folder, registries, own_registry=own_registry)
        for row, function in build_rows(modules):
            if not arguments.row or any(word in row for word in arguments.row):
                table.setdefault(row, {})[label] = function
    samples = time_interleaved(table, arguments.calls, arguments.rounds, arguments.warmup)
    best = {key: min(values) for key, values in samples.items()}
    median = {key: statistics.median(values) for key, values in samples.items()}
    print(
        f"Python {sys.version.split()[0]}, numpy {np.__version__}"
        + (f", torch {torch.__version__}" if torch is not None else "")
        + f"; {machine()}; best and median of {arguments.rounds} interleaved rounds"
        + f" of {arguments.calls:,} calls"
    )
    for label, folder in builds.items():
        print(f"- {label}: {folder}")
    print_table(
        f"Best of {arguments.rounds} rounds, ns (a change above 0: slower)",
        table,
        labels,
        pairs,
        lambda row, label: best.get((row, label)),
    )
    print_table(
        f"Median of {arguments.rounds} rounds",
        table,
        labels,
        pairs,
        lambda row, label: median.get((row, label)),
    )
    if arguments.json is not None:
        record = {
            "date": time.strftime("%Y-%m-%d"),
            "machine": machine(),
            "versions": {
                "python": sys.version.split()[0],
                "numpy": np.__version__,
                **({"torch": torch.__version__} if torch is not None else {}),
            },
            "calls": arguments.calls,
            "rounds": arguments.rounds,
            "builds": builds,
            "against": [list(pair) for pair in pairs],
            "rows": [
                {
                    "row": row,
                    "best_ns": {label: best[row, label] for label in calls_of_row},
                    "median_ns": {label: median[row, label] for label in calls_of_row},
                    "samples_ns": {label: samples[row, label] for label in calls_of_row},
                }
                for row, calls_of_row in table.items()
            ],
        }
        path = pathlib.Path(arguments.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
