"""benches/chart.py, the benchmarks' picture: each path's ratios are to its best peer (never
one of dlbridge's two builds), the kernels' are dlbridge's over rust-numpy's per build
profile, every row it draws is a row benches/python_exchange.py times (a renamed row would
silently drop out of the chart), and a run is drawn into a PNG with the pinned matplotlib."""

from __future__ import annotations

import importlib.util
import json
import pathlib

import pytest

BENCHES = pathlib.Path(__file__).resolve().parents[2] / "benches"


def _chart():
    spec = importlib.util.spec_from_file_location("dlbridge_bench_chart", BENCHES / "chart.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


chart = _chart()


def test_every_row_the_chart_draws_is_timed_by_the_benchmark():
    source = (BENCHES / "python_exchange.py").read_text()
    for _, implementations in chart.PATHS:
        assert "dlbridge" in implementations
        for row in implementations.values():
            assert f'"{row}"' in source, row


def test_a_path_is_drawn_against_its_best_peer():
    title, rows = chart.PATHS[0][0], chart.PATHS[0][1]
    times = {rows["dlbridge"]: 150.0, rows["NumPy"]: 300.0, rows["PyTorch"]: 200.0}
    (drawn_title, bars), *rest = chart.path_ratios(times)
    assert drawn_title == title and rest == []
    ratios = {name: ratio for name, ratio, _ in bars}
    assert ratios == {"dlbridge": pytest.approx(0.75), "NumPy": 1.5, "PyTorch": 1.0}


def test_a_path_without_dlbridge_or_without_a_peer_is_left_out():
    rows = chart.PATHS[0][1]
    assert chart.path_ratios({rows["NumPy"]: 300.0}) == []
    assert chart.path_ratios({rows["dlbridge"]: 100.0}) == []


def test_kernels_are_compared_per_build_profile():
    kernels = [
        {"kernel": "softmax", "build": "default", "peer": "dlbridge", "ns": 90.0},
        {"kernel": "softmax", "build": "default", "peer": "rust-numpy", "ns": 100.0},
        {"kernel": "softmax", "build": "lto", "peer": "dlbridge", "ns": 60.0},
        {"kernel": "softmax", "build": "lto", "peer": "rust-numpy", "ns": 80.0},
        {"kernel": "softmax", "build": "lto", "peer": "dlbridge, torch", "ns": 500.0},
        {"kernel": "torch only", "build": "lto", "peer": "dlbridge, torch", "ns": 500.0},
    ]
    assert chart.kernel_ratios(kernels) == [
        ("softmax", {"default": pytest.approx(0.9), "lto": pytest.approx(0.75)})
    ]


def test_compiled_graph_rows_are_divided_by_their_floor():
    compiled = [
        {"measured": "jit", "implementation": "dlbridge, default", "ns": 300.0},
        {"measured": "jit", "implementation": "dlbridge, LTO", "ns": 250.0},
        {"measured": "jit", "implementation": "C handler (floor)", "ns": 100.0},
        {"measured": "jit", "implementation": "JAX's own", "ns": 50.0},
        {"measured": "compile", "implementation": "dlbridge, LTO", "ns": 400.0},
        {"measured": "compile", "implementation": "C++ operator (floor)", "ns": 200.0},
        # No floor: not drawn.
        {"measured": "eager", "implementation": "dlbridge, LTO", "ns": 600.0},
    ]
    assert chart.compiled_ratios(compiled) == [
        ("jit", {"default": pytest.approx(3.0), "lto": pytest.approx(2.5)}),
        ("compile", {"lto": pytest.approx(2.0)}),
    ]


def test_the_compiled_graph_table_and_the_chart_name_builds_and_floors_alike():
    spec = importlib.util.spec_from_file_location(
        "dlbridge_bench_compiled_graphs", BENCHES / "compiled_graphs.py"
    )
    compiled_graphs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compiled_graphs)
    named = {implementation for implementation, _ in chart.COMPILED_BUILDS} | set(chart.FLOORS)
    assert named <= set(compiled_graphs.COLUMNS)


def test_every_path_draws_both_builds_of_dlbridge():
    for title, implementations in chart.PATHS:
        assert implementations[chart.DEFAULT] == (
            implementations["dlbridge"] + " [default profile]"
        ), title


def test_neither_build_of_dlbridge_is_the_best_peer():
    rows = chart.PATHS[0][1]
    times = {rows["dlbridge"]: 100.0, rows[chart.DEFAULT]: 120.0, rows["NumPy"]: 200.0}
    ((_, bars),) = chart.path_ratios(times)
    ratios = {name: ratio for name, ratio, _ in bars}
    assert ratios == {"dlbridge": 0.5, chart.DEFAULT: 0.6, "NumPy": 1.0}
    # A path with dlbridge's builds alone has no peer to be drawn against.
    assert chart.path_ratios({rows["dlbridge"]: 100.0, rows[chart.DEFAULT]: 120.0}) == []


def test_the_caption_says_which_builds_of_dlbridge_were_timed():
    run = {"date": "2026-11-27", "machine": "a CPU, 2 cores", "versions": {"numpy": "2.3"}}
    one = chart.caption({**run, "rows": [{"path": "dlbridge_tensor.__dlpack__()", "ns": 1}]})
    assert "fat LTO) only" in one
    both = chart.caption(
        {**run, "rows": [{"path": "dlbridge_tensor.__dlpack__() [default profile]", "ns": 1}]}
    )
    assert "built twice" in both and "default release profile" in both


@pytest.mark.cpp_exception  # matplotlib's font module (pybind11) throws one while it loads
def test_a_run_is_drawn_into_a_png(tmp_path):
    """benches/chart.py end to end, from a made-up run of every path (both of dlbridge's builds
    and every peer) and kernel, as `make bench-python` calls it."""
    run_path = tmp_path / "run.json"
    rows = []
    for index, (_, implementations) in enumerate(chart.PATHS):
        for rank, row in enumerate(implementations.values()):
            rows.append({"path": row, "ns": 100.0 + 37.0 * rank + index})
    kernels = [
        {"kernel": kernel, "build": build, "peer": peer, "ns": ns}
        for kernel in ("no-op", "softmax")
        for build, peer, ns in (
            ("default", "dlbridge", 90.0),
            ("default", "rust-numpy", 100.0),
            ("lto", "dlbridge", 105.0),
            ("lto", "rust-numpy", 100.0),
        )
    ]
    run = {
        "date": "2026-11-27",
        "machine": "a CPU, 2 cores",
        "versions": {"python": "3.11", "numpy": "2.4"},
        "rows": rows,
        "kernels": kernels,
        "compiled": [
            {"measured": measured, "implementation": implementation, "ns": ns}
            for measured in ("jax.jit, per call", "torch.compile, per call")
            for implementation, ns in (
                ("dlbridge, default", 900.0),
                ("dlbridge, LTO", 800.0),
                ("C handler (floor)", 300.0),
            )
        ],
    }
    run_path.write_text(json.dumps(run))
    png = tmp_path / "chart" / "benchmarks.png"
    assert chart.main([str(run_path), str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image  # matplotlib's own dependency

    with Image.open(png) as image:
        width, height = image.size
    assert width > 1000 and height > 500, image.size


def test_the_command_line_wants_a_run_and_a_picture(capsys):
    assert chart.main(["only-one.json"]) == 2
    assert "usage: chart.py RUN.json CHART.png" in capsys.readouterr().err
