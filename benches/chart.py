#!/usr/bin/env python3
"""The benchmarks as a picture: `make bench-python`'s run (benches/python_exchange.py --json)
drawn as ratios to the best peer, path by path.

    python benches/chart.py RUN.json CHART.png

Three panels:
- each exchange path (importing a NumPy array or a PyTorch tensor, exporting, a kernel call
  with three arguments, a kernel returning a new array): dlbridge's median time beside each
  peer's that does the same thing, every one divided by the best peer's (1.0 is the best
  peer; below 1.0 is faster than every peer), with the median itself in nanoseconds at the
  end of each bar. dlbridge has two bars where the run has both of its builds: its extension
  built as a user's crate is (cargo's default release profile) and with the project's (fat
  LTO);
- the kernels as users build them (benches/peers/dlbridge-user against the same kernels with
  rust-numpy), dlbridge's time over rust-numpy's, built with cargo's default release profile
  and with fat LTO;
- one kernel inside compiled graphs (`jax.jit`, `torch.compile`; benches/compiled_graphs.py),
  dlbridge's time per call over a floor written by hand (a C XLA handler, a C++
  `torch.library` operator), in both builds.

The caption names the machine, the date and the versions of the run. Uses matplotlib
(pinned in python/requirements-test.txt), without a display.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

#: dlbridge's extension built as a user's crate is (cargo's default release profile), beside
#: "dlbridge", the installed build (the workspace's profile: fat LTO). Its rows in the run are
#: the installed build's with DEFAULT_PROFILE_SUFFIX after them.
DEFAULT = "dlbridge, default profile"
DEFAULT_PROFILE_SUFFIX = " [default profile]"

#: Each exchange path: its title and, by implementation, the row of
#: benches/python_exchange.py that times it. dlbridge's two builds (the default-profile row is
#: added below) are compared with the others; a row the run lacks (a peer or a build not
#: there) is left out.
PATHS = [
    (
        "import a NumPy array\n(from_dlpack)",
        {
            "dlbridge": "dlbridge.from_dlpack(numpy_array)",
            "NumPy": "np.from_dlpack(numpy_array)",
            "PyTorch": "torch.from_dlpack(numpy_array)",
            "dlpark": "dlpark from_dlpack(numpy_array)",
        },
    ),
    (
        "import a PyTorch tensor\n(from_dlpack)",
        {
            "dlbridge": "dlbridge.from_dlpack(torch_tensor)",
            "PyTorch": "torch.from_dlpack(torch_tensor)",
            "NumPy": "numpy.from_dlpack(torch_tensor)",
            "tvm-ffi": "tvm_ffi.from_dlpack(torch_tensor)",
            "dlpark": "dlpark from_dlpack(torch_tensor)",
        },
    ),
    (
        "export its own tensor\n(__dlpack__)",
        {
            "dlbridge": "dlbridge_tensor.__dlpack__()",
            "NumPy": "numpy_array.__dlpack__()",
            "PyTorch": "torch_tensor.__dlpack__()",
        },
    ),
    (
        "kernel call,\n3 NumPy arrays",
        {
            "dlbridge": "no-op, 3 numpy arrays, dlbridge TensorArg<f32, Ix2>",
            "tvm-ffi": "no-op, 3 numpy arrays, tvm-ffi `testing.nop`",
            "nanobind": "no-op, 3 numpy arrays, nanobind `nb::ndarray<const float, ndim<2>, cpu>`",
            "dlpark": "no-op, 3 numpy arrays, dlpark",
            "rust-numpy": "no-op, 3 numpy arrays, rust-numpy `PyReadonlyArray2<f32>`",
        },
    ),
    (
        "kernel call,\n3 PyTorch tensors",
        {
            "dlbridge": "no-op, 3 torch tensors, dlbridge TensorArg<f32, Ix2>",
            "tvm-ffi": "no-op, 3 torch tensors, tvm-ffi `testing.nop`",
            "nanobind": "no-op, 3 torch tensors, nanobind `nb::ndarray<const float, ndim<2>, cpu>`",
            "dlpark": "no-op, 3 torch tensors, dlpark",
        },
    ),
    (
        "add: NumPy in,\nnew NumPy array out",
        {
            "dlbridge": "add, numpy in, new numpy array out, dlbridge example (`return_like`)",
            "rust-numpy": "add, numpy in, new numpy array out, rust-numpy (`into_pyarray`)",
        },
    ),
]
for _, _implementations in PATHS:
    _implementations[DEFAULT] = _implementations["dlbridge"] + DEFAULT_PROFILE_SUFFIX

#: One colour per implementation (dlbridge stands out; the peers are muted), and a hatch, so
#: that colour is not the only way to tell them apart.
STYLES = {
    DEFAULT: ("#d9480f", ""),
    "dlbridge": ("#f08c00", "//"),
    "NumPy": ("#4c6ef5", "//"),
    "PyTorch": ("#7950f2", "\\\\"),
    "tvm-ffi": ("#1098ad", ".."),
    "dlpark": ("#37b24d", "xx"),
    "nanobind": ("#868e96", "--"),
    "rust-numpy": ("#c2255c", "++"),
}


#: How each implementation is named on its bar: dlbridge's two builds by their profile.
BAR_NAMES = {"dlbridge": "dlbridge, fat LTO", DEFAULT: "dlbridge, default profile"}


def is_dlbridge(name: str) -> bool:
    return name in ("dlbridge", DEFAULT)


def path_ratios(rows: dict) -> list:
    """[(title, [(implementation, ratio to the best peer, ns)])] for every path with dlbridge
    and at least one peer in the run; the best peer is the fastest implementation that is not
    one of dlbridge's builds."""
    paths = []
    for title, implementations in PATHS:
        found = {name: rows[row] for name, row in implementations.items() if row in rows}
        peers = {name: ns for name, ns in found.items() if not is_dlbridge(name)}
        if "dlbridge" not in found or not peers:
            continue
        best = min(peers.values())
        paths.append((title, [(name, ns / best, ns) for name, ns in found.items()]))
    return paths


def kernel_ratios(kernels: list) -> list:
    """[(kernel, {build: dlbridge's time over rust-numpy's})] for the kernels with both."""
    times = {(k["kernel"], k["build"], k["peer"]): k["ns"] for k in kernels}
    ratios = []
    for kernel in dict.fromkeys(k["kernel"] for k in kernels):
        by_build = {}
        for build in ("default", "lto"):
            ours = times.get((kernel, build, "dlbridge"))
            theirs = times.get((kernel, build, "rust-numpy"))
            if ours is not None and theirs is not None:
                by_build[build] = ours / theirs
        if by_build:
            ratios.append((kernel, by_build))
    return ratios


#: The floors a compiled-graph row is divided by: a handler or operator written by hand.
FLOORS = ("C handler (floor)", "C++ operator (floor)")
#: dlbridge's builds in the compiled-graph rows (benches/compiled_graphs.py).
COMPILED_BUILDS = (("dlbridge, default", "default"), ("dlbridge, LTO", "lto"))


def compiled_ratios(compiled: list) -> list:
    """[(measured, {build: dlbridge's time over the floor's})] for the compiled-graph rows
    with a floor and dlbridge."""
    times = {(row["measured"], row["implementation"]): row["ns"] for row in compiled}
    ratios = []
    for measured in dict.fromkeys(row["measured"] for row in compiled):
        floor = next((times[(measured, f)] for f in FLOORS if (measured, f) in times), None)
        if floor is None:
            continue
        by_build = {
            build: times[(measured, implementation)] / floor
            for implementation, build in COMPILED_BUILDS
            if (measured, implementation) in times
        }
        if by_build:
            ratios.append((measured, by_build))
    return ratios


def caption(run: dict) -> str:
    versions = ", ".join(f"{name} {version}" for name, version in run["versions"].items())
    builds = (
        "dlbridge's extension built twice: as a user's crate is (cargo's default release "
        "profile) and with the project's (fat LTO, one codegen unit)"
        if any(row["path"].endswith(DEFAULT_PROFILE_SUFFIX) for row in run["rows"])
        else "dlbridge's extension built with the project's release profile (fat LTO) only"
    )
    return (
        f"{run['date']}, {run['machine']}; {versions}. Median of 15 interleaved rounds of "
        f"10,000 calls, 4x4 float32 on the CPU; {builds}; the peers as their own builds "
        "make them (the Rust ones with cargo's default profile). `make bench-python`."
    )


def ratio_bar(axis, y, ratio, style, *, height, label=None) -> None:
    """A bar from 1.0 to `ratio` at height `y`, in `style` (colour, hatch), with a dot at its
    end (which shows a ratio of 1.0, the bar of no length, too)."""
    colour, hatch = style
    axis.barh(
        y,
        ratio - 1.0,
        left=1.0,
        height=height,
        color=colour,
        hatch=hatch,
        edgecolor="white",
        label=label,
    )
    axis.plot([ratio], [y], marker="o", markersize=3.5, color="#212529")


#: The ratios a log axis may be marked at: coarse ones for a wide axis, fine ones for a
#: narrow one (a factor of 10 or less from end to end).
RATIO_TICKS_WIDE = [0.1, 0.25, 0.5, 1.0, 2, 5, 10, 20, 50, 100, 200]
RATIO_TICKS_NARROW = [0.25, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2, 3, 5]


def ratio_axis(axis, low: float, high: float) -> None:
    """A log x axis from `low` to `high`, marked at the round ratios inside it, with a line at
    1.0."""
    axis.set_xscale("log")
    axis.set_xlim(low, high)
    ticks = RATIO_TICKS_WIDE if high / low > 10 else RATIO_TICKS_NARROW
    marks = [tick for tick in ticks if low <= tick <= high]
    axis.set_xticks(marks, [f"{tick:g}" for tick in marks])
    axis.minorticks_off()
    axis.axvline(1.0, color="#212529", linewidth=1)
    axis.spines[["top", "right"]].set_visible(False)


def draw_ratio_rows(axis, rows: list, builds: list, xlabel: str, title: str) -> None:
    """Rows of (name, {build: ratio}) as one bar per build, as the kernels' panel draws them."""
    for offset, (build, legend, style) in enumerate(builds):
        unnamed = True  # one legend entry per build: its first bar's
        for index, (_, by_build) in enumerate(rows):
            value = by_build.get(build)
            if value is None:
                continue
            spot = index * 2.6 + offset
            ratio_bar(axis, spot, value, style, height=0.9, label=legend if unnamed else None)
            unnamed = False
            axis.text(max(value, 1.0) * 1.01, spot, f"{value:.2f}", va="center", fontsize=8)
    axis.set_yticks([index * 2.6 + 0.5 for index in range(len(rows))], [n for n, _ in rows])
    axis.tick_params(axis="y", labelsize=8)
    axis.invert_yaxis()
    values = [value for _, by_build in rows for value in by_build.values()]
    ratio_axis(axis, min(values, default=1.0) / 1.08, max(values, default=1.0) * 1.12)
    axis.set_xlabel(xlabel)
    axis.set_title(title, fontsize=12, loc="left")
    axis.legend(loc="upper left", bbox_to_anchor=(0.0, -0.09), ncol=2, fontsize=8, frameon=False)


def draw(run: dict, output: Path) -> None:
    """The three panels into `output` (PNG)."""
    import matplotlib as mpl

    mpl.use("Agg")
    import matplotlib.pyplot as plt

    paths = path_ratios({row["path"]: row["ns"] for row in run["rows"]})
    kernels = kernel_ratios(run.get("kernels", []))
    compiled = compiled_ratios(run.get("compiled", []))
    figure, (left, right, third) = plt.subplots(
        1,
        3,
        figsize=(21, 7.5),
        gridspec_kw={"width_ratios": [3, 2, 2]},
        constrained_layout=True,
    )
    # Left: each path's implementations, as bars from the best peer's time (1.0) to their
    # own, on a log scale: a bar to the left of the line is faster than every peer.
    position, ticks, labels = 0.0, [], []
    for title, bars in reversed(paths):
        start = position
        for name, ratio, ns in sorted(bars, key=lambda bar: -bar[1]):
            ratio_bar(left, position, ratio, STYLES.get(name, ("#adb5bd", "")), height=0.8)
            left.text(
                max(ratio, 1.0) * 1.04,
                position,
                f"{BAR_NAMES.get(name, name)}  {ns:,.0f} ns ({ratio:.2f})",
                va="center",
                fontsize=8,
                fontweight="bold" if is_dlbridge(name) else "normal",
            )
            position += 1
        ticks.append((start + position - 1) / 2)
        labels.append(title)
        position += 0.8
    left.set_yticks(ticks, labels, fontsize=9)
    all_ratios = [ratio for _, bars in paths for _, ratio, _ in bars]
    ratio_axis(left, min(all_ratios, default=1.0) / 1.3, max(all_ratios, default=1.0) * 4)
    left.set_xlabel(
        "time per call / the best peer's, log scale (1.0: the best peer; left of it: faster "
        "than every peer)"
    )
    left.set_title("Exchange paths: dlbridge beside each peer", fontsize=12, loc="left")
    # Right: the kernels as users build them, both profiles, the same way against rust-numpy;
    # then the kernels inside compiled graphs against the floors written by hand.
    builds = [
        ("default", "cargo's default release profile", STYLES[DEFAULT]),
        ("lto", "fat LTO, one codegen unit", STYLES["dlbridge"]),
    ]
    draw_ratio_rows(
        right,
        kernels,
        builds,
        "dlbridge's time / rust-numpy's, log scale (left of 1.0: faster)",
        "Kernels as users build them, against rust-numpy",
    )
    draw_ratio_rows(
        third,
        compiled,
        builds,
        "dlbridge's time per call / the floor's, log scale (1.0: the floor)",
        "Kernels inside compiled graphs, against a floor\nwritten by hand (C XLA handler, C++ "
        "torch.library operator)",
    )
    figure.suptitle("dlbridge against its peers, Python side (BENCHMARKS.md)", fontsize=14)
    figure.text(0.01, -0.02, caption(run), fontsize=8, wrap=True, ha="left", va="top")
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=110, bbox_inches="tight")
    plt.close(figure)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: chart.py RUN.json CHART.png", file=sys.stderr)
        return 2
    run = json.loads(Path(argv[0]).read_text())
    draw(run, Path(argv[1]))
    print(f"chart: {argv[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
