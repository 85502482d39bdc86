"""The MXNet leg of the TVM example (demo.py), run in MXNet's own interpreter (MXNet 1.9.1,
NumPy 1.23.5: scripts/mxnet-env.sh):

    python mxnet_leg.py LIBRARY SEED

loads the compiled matmul that demo.py exported (LIBRARY, a shared library) with
`tvm.runtime.load_module` and runs it on MXNet NDArrays through dlbridge, as MXNet's DLPack
support was made for: MXNet speaks DLPack only through legacy capsules, which cannot say
whether their memory may be written, so it hands out two kinds. The inputs go in as
`mx.nd.to_dlpack_for_read(x)` (dlbridge holds legacy capsules read-only), and the output is
MXNet's own array, handed out with `mx.nd.to_dlpack_for_write(z)` and imported with
`dlbridge.from_dlpack(..., legacy_writable=True)`: the caller's promise, which MXNet's
`for_write` makes true, that the memory may be written. TVM writes it through dlbridge and
MXNet reads the result in `z` itself. Prints one JSON line: the framework, dtype, shape,
whether every data address was the same on each side, and the largest difference from
`mx.nd.dot`.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # MXNet 1.9.1 uses np.bool
    import mxnet as mx

import numpy as np
import tvm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from demo import DTYPE, N, check_close, matmul_through_dlbridge

import dlbridge


def mxnet_address(array: mx.nd.NDArray) -> int:
    """The address of an NDArray's first element (MXNet's C API: MXNDArrayGetData)."""
    data = ctypes.c_void_p()
    mx.base.check_call(mx.base._LIB.MXNDArrayGetData(array.handle, ctypes.byref(data)))
    return data.value or 0


def main(library: str, seed: int) -> None:
    fmm = tvm.runtime.load_module(library)["fmm"]
    mx.random.seed(seed)
    x = mx.nd.random.normal(shape=(N, N), dtype=DTYPE)
    y = mx.nd.random.normal(shape=(N, N), dtype=DTYPE)
    z = mx.nd.zeros((N, N), dtype=DTYPE)
    out = dlbridge.from_dlpack(mx.nd.to_dlpack_for_write(z), legacy_writable=True)
    call = matmul_through_dlbridge(
        fmm, mx.nd.to_dlpack_for_read(x), mx.nd.to_dlpack_for_read(y), out
    )
    zero_copy = call.zero_copy([mxnet_address(x), mxnet_address(y), mxnet_address(z)])
    error = check_close(z.asnumpy(), mx.nd.dot(x, y).asnumpy())
    print(
        json.dumps(
            {
                "framework": f"mxnet {mx.__version__}",
                "dtype": str(np.dtype(z.dtype)),
                "shape": list(z.shape),
                "zero_copy": zero_copy,
                "max_abs_error": error,
                "numpy": np.__version__,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
