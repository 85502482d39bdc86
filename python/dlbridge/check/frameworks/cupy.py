"""CuPy, as the checker drives it: its arrays (on CUDA device 0, with its streams) and
`cupy.from_dlpack`. It needs a CUDA driver, and has no catalogue.
"""

from __future__ import annotations

import numpy as np

NAME = "cupy"
MODULE = "cupy"
NEEDS_GPU = True

#: A kernel that spins for `cycles` clock cycles, for `write_late`.
SPIN_KERNEL = """
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
}
"""


def make(array):
    """`cupy.asarray(array)`: on the current device."""
    import cupy

    return cupy.asarray(array)


def consume(obj):
    """`cupy.from_dlpack(obj)`."""
    import cupy

    return cupy.from_dlpack(obj)


def consume_copy(obj):
    """`cupy.from_dlpack(obj, copy=True)`."""
    import cupy

    return cupy.from_dlpack(obj, copy=True)


def to_numpy(result):
    """`result.get()`: a host copy."""
    return result.get()


#: Its arrays are CUDA arrays.
make_cuda = make


def new_cuda_stream():
    """A new non-blocking stream: (its handle, the stream)."""
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    return stream.ptr, stream


def current_cuda_stream():
    """The handle of the current stream on device 0."""
    import cupy

    return cupy.cuda.get_current_stream(0).ptr


def write_late(tensor, array):
    """About 0.1 s of spinning on the current stream, then `array`'s values into `tensor`."""
    import cupy

    source = cupy.asarray(array)
    spin = cupy.RawKernel(SPIN_KERNEL, "spin")
    spin((1,), (1,), (np.int64(200_000_000),))  # about 0.1 s, on the current stream
    tensor[...] = source
