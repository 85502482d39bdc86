"""Asks one framework what it does with a tensor handed to it, for test_framework_table.py,
which runs this script in a process of its own per framework (some frameworks cannot share
one: TensorFlow and then PaddlePaddle crash the interpreter).

    python _framework_probe.py FRAMEWORK

prints one JSON object:

- `"skip"` or `"fail"`: the framework cannot be imported here, and the reason, as
  `_frameworks.import_framework` gives it (a skip, or a failure where every framework is
  required);
- `"import"` (not for `buffer` and `pyarrow`): what the framework's own import
  (`from_dlpack`) does with a read-only tensor (`"read_only"`: `"refused"`, where it takes
  only legacy capsules, which cannot say read-only; `"write refused"`; `"written"`, its object
  wrote the memory; or `"copied"`) and which sample layouts it takes as they are
  (`"layouts"`: name -> taken, its values equal to the sample's);
- `"return_like"` (not for `mxnet`, which `return_like` has no way to): what
  `return_like` made for a caller of this framework of a read-only result (`"shares"` its
  memory, `"write"`: `"refused"`, `"written"` or `"none"` for a framework with no writes
  from Python, `"source_changed"`) and of each sample layout (`"ok"`, `"equal"`, `"shares"`),
  and the result's type.

Every sample is float32 over a 256-byte aligned base (JAX copies a less aligned buffer).
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any, Callable

import numpy as np
import pytest

#: The PyPI distribution and module of each framework.
DISTRIBUTIONS = {
    "numpy": ("numpy", "numpy"),
    "torch": ("torch", "torch"),
    "jax": ("jax", "jax"),
    "tensorflow": ("tensorflow", "tensorflow-cpu"),
    "paddle": ("paddle", "paddlepaddle"),
    "mxnet": ("mxnet", "mxnet"),
    "pyarrow": ("pyarrow", "pyarrow"),
}

#: The sample layouts, as NumPy views of a base of `arange` values.
LAYOUTS = (
    "row-major",
    "column-major",
    "padded rows",
    "padded columns",
    "gapped",
    "negative",
    "broadcast",
)


def aligned_base(count: int = 64) -> np.ndarray:
    """`count` float32 values 0, 1, 2, ... whose first is 256-byte aligned, writable."""
    raw = np.zeros(count * 4 + 256, dtype=np.uint8)
    start = -raw.ctypes.data % 256
    base = raw[start : start + count * 4].view(np.float32)
    base[:] = np.arange(count, dtype=np.float32)
    return base


def sample(layout: str) -> np.ndarray:
    """A writable view of a fresh aligned base in `layout`."""
    base = aligned_base()
    return {
        "row-major": lambda: base[:12].reshape(3, 4),
        "column-major": lambda: base[:12].reshape(4, 3).T,
        "padded rows": lambda: base[:16].reshape(4, 4)[:3, :3],
        # faer's products: column-major, columns padded.
        "padded columns": lambda: base[:16].reshape(4, 4)[:3, :3].T,
        "gapped": lambda: base[:12][::2],
        "negative": lambda: base[:6][::-1],
        "broadcast": lambda: np.lib.stride_tricks.as_strided(base[:3], (2, 3), (0, 4)),
    }[layout]()


class Producer:
    """Hands out `source`'s DLPack capsules as the consumer asks (what a framework's
    `from_dlpack` is given; never an exchange table)."""

    def __init__(self, source: Any) -> None:
        self.source = source

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.source.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self.source.__dlpack_device__()


def framework_ways(kind: str) -> dict[str, Callable[..., Any]]:
    """The framework's import (`take`: a Producer in, its object out), a reader (`values`: its
    object as a NumPy array), a writer (`write`: adds to every element, or raises), an
    `address` of the first element, and a `like` object for return_like."""
    import dlbridge

    if kind == "numpy":

        def write_numpy(x: Any) -> None:
            x[...] += 100

        return {
            "take": np.from_dlpack,
            "values": np.asarray,
            "write": write_numpy,
            "address": lambda x: x.ctypes.data,
            "like": lambda: np.zeros(1, dtype=np.float32),
        }
    if kind == "torch":
        import torch

        return {
            "take": torch.from_dlpack,
            "values": lambda x: x.numpy(),
            "write": lambda x: x.add_(100),
            "address": lambda x: x.data_ptr(),
            "like": lambda: torch.zeros(1),
        }
    if kind == "jax":
        import jax.dlpack
        import jax.numpy as jnp

        return {
            "take": jax.dlpack.from_dlpack,
            "values": np.asarray,
            "write": None,  # JAX arrays take no writes from Python
            "address": lambda x: x.unsafe_buffer_pointer(),
            "like": lambda: jnp.zeros(1),
        }
    if kind == "paddle":
        import paddle

        return {
            "take": paddle.from_dlpack,
            "values": lambda x: x.numpy(),
            "write": lambda x: x.add_(paddle.full_like(x, 100)),
            "address": lambda x: x.data_ptr(),
            "like": lambda: paddle.zeros([1]),
        }
    if kind == "tensorflow":
        import tensorflow as tf

        return {
            # TensorFlow's from_dlpack takes a capsule (legacy), not a producer.
            "take": lambda producer: tf.experimental.dlpack.from_dlpack(producer.__dlpack__()),
            "values": lambda x: x.numpy(),
            "write": None,
            "address": None,
            "like": lambda: tf.constant([0.0]),
        }
    if kind == "mxnet":
        import mxnet as mx

        return {
            "take": lambda producer: mx.nd.from_dlpack(producer.__dlpack__()),
            "values": lambda x: x.asnumpy(),
            "write": lambda x: x.__iadd__(100),
            "address": None,
            "like": None,
        }
    if kind == "dlbridge":
        from _kernels import kernels

        def write_dlbridge(x: Any) -> None:
            kernels.fill(x, 100.0)

        return {
            "take": dlbridge.from_dlpack,
            "values": np.from_dlpack,
            "write": write_dlbridge,
            "address": lambda x: x.data_ptr,
            "like": lambda: dlbridge.zeros([1]),
        }
    if kind == "pyarrow":
        import pyarrow as pa

        def arrow_values(x: Any) -> np.ndarray:
            if isinstance(x, pa.FixedShapeTensorArray):
                return x.to_numpy_ndarray()
            return x.to_numpy(zero_copy_only=True)

        def write_arrow(x: Any) -> None:
            arrow_values(x)[...] += 100  # pyarrow's views are read-only: refused

        def arrow_address(x: Any) -> int:
            values = x.storage.flatten() if isinstance(x, pa.FixedShapeTensorArray) else x
            return values.buffers()[1].address + values.offset * values.type.bit_width // 8

        return {
            # No import of pyarrow's is probed: the entry is about the arrays `return_like`
            # makes through the Arrow PyCapsule interface (`pa.Tensor.from_dlpack` is another
            # way in, with other rules).
            "take": None,
            "values": arrow_values,
            "write": write_arrow,
            "address": arrow_address,
            "like": lambda: pa.array([0.0], pa.float32()),
        }
    if kind == "buffer":

        def write_buffer(x: Any) -> None:
            x[(0,) * x.ndim] = 100.0

        return {
            "take": None,
            "values": np.asarray,
            "write": write_buffer,
            "address": lambda x: np.asarray(x).ctypes.data,
            "like": lambda: memoryview(bytearray(4)).cast("f"),
        }
    raise ValueError(kind)


def read_only_source() -> np.ndarray:
    source = sample("row-major")
    source.flags.writeable = False
    return source


def probe_import(ways: dict[str, Any]) -> dict[str, Any]:
    import dlbridge

    source = read_only_source()
    before = source.copy()
    # A READ_ONLY versioned tensor (dlbridge's export of a read-only array), or, for a
    # consumer that asks for a legacy capsule, dlbridge's BufferError.
    try:
        taken = ways["take"](Producer(dlbridge.from_dlpack(source)))
    except Exception:  # noqa: BLE001 - the framework's refusal, whatever its type
        read_only = "refused"
    else:
        if ways["write"] is None:
            read_only = "no writes from Python"
        else:
            try:
                ways["write"](taken)
            except Exception:  # noqa: BLE001 - the framework's refusal, whatever its type
                read_only = "write refused"
            else:
                read_only = "copied" if np.array_equal(source, before) else "written"
    layouts = {}
    for layout in LAYOUTS:
        data = sample(layout)
        try:
            made = ways["take"](Producer(data))
            layouts[layout] = bool(np.array_equal(ways["values"](made), data))
        except Exception:  # noqa: BLE001 - the framework's refusal, whatever its type
            layouts[layout] = False
    return {"read_only": read_only, "layouts": layouts}


def probe_return_like(ways: dict[str, Any]) -> dict[str, Any]:
    from _kernels import kernels

    like = ways["like"]()
    source = read_only_source()
    before = source.copy()
    try:
        result = kernels.import_return_like(source, like)
    except Exception as error:  # noqa: BLE001 - reported to the test, which fails
        return {"error": f"a read-only result: {type(error).__name__}: {error}"}
    kind_of_result = type(result).__module__ + "." + type(result).__qualname__
    if isinstance(result, memoryview):  # TensorFlow's callers get one too
        ways = framework_ways("buffer")
    shares = ways["address"] is not None and ways["address"](result) == source.ctypes.data
    equal = bool(np.array_equal(ways["values"](result), before))
    if ways["write"] is None:
        write = "none"
    else:
        try:
            ways["write"](result)
            write = "written"
        except Exception:  # noqa: BLE001 - the framework's refusal, whatever its type
            write = "refused"
    read_only = {
        "shares": bool(shares),
        "write": write,
        "source_changed": not np.array_equal(source, before),
        "equal": equal,
    }
    layouts = {}
    for layout in LAYOUTS:
        data = sample(layout)
        try:
            made = kernels.import_return_like(data, like)
        except Exception as error:  # noqa: BLE001 - reported to the test, which fails
            layouts[layout] = {"ok": False, "error": f"{type(error).__name__}: {error}"}
            continue
        layouts[layout] = {
            "ok": True,
            "equal": bool(np.array_equal(ways["values"](made), data)),
            "shares": ways["address"] is not None and ways["address"](made) == data.ctypes.data,
        }
    return {"type": kind_of_result, "read_only": read_only, "layouts": layouts}


def main(kind: str) -> dict[str, Any]:
    if kind in DISTRIBUTIONS:
        from _frameworks import import_framework

        module, distribution = DISTRIBUTIONS[kind]
        try:
            import_framework(module, distribution)
        except pytest.skip.Exception as skipped:
            return {"skip": str(skipped)}
        except pytest.fail.Exception as failed:
            return {"fail": str(failed)}
    ways = framework_ways(kind)
    report: dict[str, Any] = {}
    if ways["take"] is not None:
        report["import"] = probe_import(ways)
    if ways["like"] is not None:
        report["return_like"] = probe_return_like(ways)
    return report


if __name__ == "__main__":
    try:
        answer = main(sys.argv[1])
    except BaseException:  # noqa: BLE001 - reported to the test, which fails
        answer = {"error": traceback.format_exc()}
    sys.stdout.write("\nPROBE " + json.dumps(answer) + "\n")
