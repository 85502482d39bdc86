"""The MXNet leg of the TVM example (demo.py), run in MXNet's own interpreter (MXNet 1.9.1,
NumPy 1.23.5: scripts/mxnet-env.sh):

    python mxnet_leg.py LIBRARY SEED

loads the compiled matmul that demo.py exported (LIBRARY, a shared library) with
`tvm.runtime.load_module` and runs it on MXNet NDArrays through dlbridge. MXNet speaks DLPack
only through legacy capsules (`mx.nd.to_dlpack_for_read`), which dlbridge holds read-only:
the inputs go in that way, and the output is a tensor dlbridge allocates, written by TVM and
handed to MXNet zero-copy (`mx.nd.from_dlpack` of its capsule). Prints one JSON line: the
framework, dtype, shape, whether every data address was the same on each side, and the
largest difference from `mx.nd.dot`.
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
    out = dlbridge.empty((N, N), DTYPE)
    call = matmul_through_dlbridge(
        fmm, mx.nd.to_dlpack_for_read(x), mx.nd.to_dlpack_for_read(y), out
    )
    z = mx.nd.from_dlpack(out.__dlpack__())
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
