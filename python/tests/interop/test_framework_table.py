"""One table of what each framework's tensors can hold of a result (dlbridge-pyo3's
`FRAMEWORK_HOLDINGS`, `dlbridge._dlbridge._framework_table()`), read by every way a tensor
goes back to a framework: `return_like` (NumPy's C API, exchange tables, `from_dlpack`, the
buffer protocol) and `dlbridge.distributed`.

Each entry is pinned against the framework itself, asked in a process of its own
(`_framework_probe.py`; TensorFlow and PaddlePaddle cannot share one): whether its import
keeps a READ_ONLY tensor read-only, which layouts it takes, and that `return_like` hands it a
read-only result zero-copy exactly where it holds read-only memory (a copy elsewhere, which
writing leaves the source unchanged) and a layout zero-copy exactly where the entry says it
takes it (compacted elsewhere, with the same values). CuPy's entry is from CuPy's source (no
GPU here); MXNet's is asked in MXNet's environment (scripts/mxnet-env.sh).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import pytest

import dlbridge
from _skips import strict
from dlbridge import distributed

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(TESTS))
PROBE = os.path.join(TESTS, "_framework_probe.py")
TABLE = dlbridge._dlbridge._framework_table()

#: The sample layouts (`_framework_probe.LAYOUTS`) each rule takes.
ALL = {
    "row-major",
    "column-major",
    "padded rows",
    "padded columns",
    "gapped",
    "negative",
    "broadcast",
}
TAKEN = {
    "any": ALL,
    "non-negative": ALL - {"negative"},
    "compact": {"row-major", "column-major"},
    "row-major compact": {"row-major"},
}
#: What a framework's import does with a READ_ONLY tensor, by whether it holds read-only
#: memory: it refuses writes (or copied on import), or it wrote the memory, or it cannot be
#: handed one at all (it asks for legacy capsules, which cannot say read-only, and dlbridge
#: refuses those for read-only memory).
HOLDS = {"write refused", "copied", "no writes from Python"}


@functools.cache
def probe(kind: str) -> dict:
    """`_framework_probe.py kind`'s answer, in a fresh interpreter (MXNet's own for mxnet),
    asked once per framework."""
    python = sys.executable
    if kind == "mxnet":
        python = os.environ.get(
            "MXNET_PYTHON", os.path.join(ROOT, "target", "mxnet-venv", "bin", "python")
        )
        if not os.path.exists(python):
            reason = (
                f"MXNet's environment ({python}) is missing: scripts/mxnet-env.sh makes it "
                "(make python-test runs it)"
            )
            if strict():
                pytest.fail(reason, pytrace=False)
            pytest.skip(reason)
    done = subprocess.run(
        [python, PROBE, kind], capture_output=True, text=True, timeout=600, check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("PROBE ")]
    assert lines, f"the probe of {kind} printed no answer:\n{done.stdout}\n{done.stderr}"
    answer = json.loads(lines[-1][len("PROBE ") :])
    if "skip" in answer:
        pytest.skip(answer["skip"])
    if "fail" in answer:
        pytest.fail(answer["fail"], pytrace=False)
    assert "error" not in answer, answer["error"]
    return answer


def test_the_table_is_the_extensions_and_distributed_reads_it():
    assert set(TABLE) == {
        "numpy",
        "torch",
        "jax",
        "tensorflow",
        "paddle",
        "cupy",
        "mxnet",
        "pyarrow",
        "dlbridge",
        "buffer",
    }
    for entry in TABLE.values():
        assert entry["layouts"] in TAKEN
    # CuPy (from its source, cupy/_core/dlpack.pyx: no GPU here): ignores READ_ONLY, takes
    # the DLPack strides as they are.
    assert TABLE["cupy"] == {"holds_read_only": False, "layouts": "any"}
    # dlbridge.distributed rebuilds by the same table, taken from the extension.
    assert distributed._FRAMEWORK_TABLE == TABLE
    for kind in distributed.FRAMEWORKS:
        assert distributed._holds_read_only(kind) == TABLE[kind]["holds_read_only"]
    numpy_type = distributed.tensor_type("numpy")
    assert numpy_type.holds_read_only == TABLE["numpy"]["holds_read_only"]
    # Every rule takes the frames' layout, row-major compact: deserialize needs no compaction.
    assert all("row-major" in taken for taken in TAKEN.values())


@pytest.mark.parametrize(
    "kind", ["numpy", "torch", "jax", "tensorflow", "paddle", "mxnet", "dlbridge"]
)
def test_each_entry_is_what_the_frameworks_import_does(kind):
    entry = TABLE[kind]
    seen = probe(kind)["import"]
    assert (seen["read_only"] in HOLDS) == entry["holds_read_only"], seen["read_only"]
    taken = {layout for layout, took in seen["layouts"].items() if took}
    assert taken == TAKEN[entry["layouts"]], seen["layouts"]


@pytest.mark.parametrize(
    "kind", ["numpy", "torch", "jax", "tensorflow", "paddle", "pyarrow", "dlbridge", "buffer"]
)
def test_return_like_hands_each_framework_what_it_can_hold(kind):
    seen = probe(kind)["return_like"]
    assert "error" not in seen, seen["error"]
    # TensorFlow's module has no from_dlpack: its callers get a memoryview (the buffer entry).
    entry = TABLE["buffer" if seen["type"] == "builtins.memoryview" else kind]
    if kind == "tensorflow":
        assert seen["type"] == "builtins.memoryview"
    read_only = seen["read_only"]
    assert read_only["equal"]
    assert not read_only["source_changed"]  # whatever the caller wrote
    if entry["holds_read_only"]:
        # Zero-copy, and read-only there.
        assert read_only["shares"]
        assert read_only["write"] == "refused"
    else:
        # A copy: PyTorch and PaddlePaddle write it, the source stays as it was.
        assert not read_only["shares"]
        assert read_only["write"] in {"written", "none"}
    for layout, made in seen["layouts"].items():
        assert made["ok"], (layout, made)
        assert made["equal"], layout
        assert made["shares"] == (layout in TAKEN[entry["layouts"]]), (layout, made)
