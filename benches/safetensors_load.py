"""Loading a safetensors file's tensors into PyTorch: dlbridge beside the `safetensors` package.

    .venv/bin/python benches/safetensors_load.py [--size-mib 1024] [--rounds 5] [--json FILE]

The file (target/bench/model.safetensors, made once by the `safetensors` package's own writer,
`safetensors.torch.save_file`) holds SIZE MiB of tensors shaped like a model's weights: 8 MiB
matrices in bfloat16 and float32, and small float32 vectors between them. Each measurement runs
in a fresh interpreter, after its imports, so that every loader starts from the same state; the
loaders alternate round by round (interleaved), and each cell is the median of the rounds.

- **load**: from the path to a dict of `torch.Tensor`s (dlbridge: `dlbridge.safetensors.load`
  and `torch.from_dlpack` of each; the package: `safetensors.torch.load_file`).
- **resident after load**: what the load added to the process's resident memory (VmRSS), in MiB.
- **read every page**: then one byte of every 4 KiB page of every tensor is summed, so every
  page is brought in; the time of that, and the resident memory it added.

The file is in the page cache (it was just written or read), as a model loaded a second time
is; a cold read from disk adds the disk's time to "read every page" for every loader alike.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOADERS = ("dlbridge", "safetensors")
MIB = 1 << 20


def resident_bytes() -> int:
    """This process's resident memory (VmRSS), in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def make_file(path: Path, size_mib: int) -> None:
    """A file of `size_mib` MiB of weights, written by the safetensors package itself."""
    import torch
    from safetensors.torch import save_file

    tensors = {}
    generator = torch.Generator().manual_seed(0)
    layer = 0
    written = 0
    while written + 8 * MIB <= size_mib * MIB:
        if layer % 2 == 0:
            weight = torch.randn(2048, 2048, generator=generator).to(torch.bfloat16)
        else:
            weight = torch.randn(1024, 2048, generator=generator)
        tensors[f"layers.{layer}.weight"] = weight
        tensors[f"layers.{layer}.bias"] = torch.zeros(256)
        written += weight.numel() * weight.element_size() + 1024
        layer += 1
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata={"format": "pt"})


def measure(loader: str, path: str) -> dict:
    """One load by `loader`, in this (fresh) process: times and resident memory."""
    import safetensors.torch
    import torch

    import dlbridge.safetensors

    before = resident_bytes()
    start = time.perf_counter()
    if loader == "dlbridge":
        tensors = {
            name: torch.from_dlpack(tensor)
            for name, tensor in dlbridge.safetensors.load(path).items()
        }
    else:
        tensors = safetensors.torch.load_file(path)
    loaded = time.perf_counter()
    after_load = resident_bytes()
    total = 0
    for tensor in tensors.values():
        pages = tensor.reshape(-1).view(torch.uint8)[::4096]
        total += int(pages.sum())
    read = time.perf_counter()
    after_read = resident_bytes()
    return {
        "tensors": len(tensors),
        "bytes": sum(t.numel() * t.element_size() for t in tensors.values()),
        "load_s": loaded - start,
        "load_rss": after_load - before,
        "read_s": read - loaded,
        "read_rss": after_read - after_load,
        "checksum": total,
    }


def run(loader: str, path: Path) -> dict:
    """`measure` in a fresh interpreter."""
    output = subprocess.run(
        [sys.executable, __file__, "--measure", loader, str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(output.splitlines()[-1])


def table(results: dict[str, list[dict]]) -> str:
    rows = [
        "| loader | load | resident after load | read every page | resident after reading |",
        "|---|---|---|---|---|",
    ]
    names = {
        "dlbridge": "`dlbridge.safetensors.load` + `torch.from_dlpack`",
        "safetensors": "`safetensors.torch.load_file`",
    }
    for loader, runs in results.items():
        median = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        rows.append(
            f"| {names[loader]} | {median['load_s'] * 1e3:.2f} ms "
            f"| +{median['load_rss'] / MIB:.1f} MiB | {median['read_s'] * 1e3:.1f} ms "
            f"| +{median['read_rss'] / MIB:.1f} MiB |"
        )
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--path", type=Path, default=ROOT / "target/bench/model.safetensors")
    parser.add_argument("--measure", nargs=2, metavar=("LOADER", "PATH"), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.measure:
        print(json.dumps(measure(*arguments.measure)))
        return 0

    path = arguments.path
    expected = arguments.size_mib * MIB
    if not path.exists() or abs(path.stat().st_size - expected) > 64 * MIB:
        make_file(path, arguments.size_mib)
    results: dict[str, list[dict]] = {loader: [] for loader in LOADERS}
    run("dlbridge", path)  # warm-up: the file's pages into the page cache
    for round_index in range(arguments.rounds):
        order = LOADERS if round_index % 2 == 0 else tuple(reversed(LOADERS))
        for loader in order:
            results[loader].append(run(loader, path))
    checksums = {runs[0]["checksum"] for runs in results.values()}
    if len(checksums) != 1:
        raise SystemExit(f"the loaders read different bytes: checksums {checksums}")

    import safetensors
    import torch

    import dlbridge

    first = results["dlbridge"][0]
    print(
        f"{first['tensors']} tensors, {first['bytes'] / MIB:.0f} MiB "
        f"({path.stat().st_size / MIB:.0f} MiB file), median of {arguments.rounds} rounds; "
        f"dlbridge {dlbridge.__version__}, safetensors {safetensors.__version__}, "
        f"torch {torch.__version__}"
    )
    print(table(results))
    if arguments.json:
        arguments.json.parent.mkdir(parents=True, exist_ok=True)
        arguments.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
