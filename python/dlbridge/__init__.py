"""dlbridge: DLPack for Rust, in Python.

Zero-copy tensor exchange with any framework that speaks DLPack (NumPy, PyTorch, JAX,
TensorFlow, PaddlePaddle, CuPy, Arrow, TVM):

>>> import numpy as np, dlbridge
>>> t = dlbridge.from_dlpack(np.arange(6, dtype=np.float32).reshape(2, 3))
>>> t.shape, t.dtype, t.device
((2, 3), 'float32', (1, 0))
>>> np.from_dlpack(t).sum()
np.float32(15.0)

Nothing beyond the standard library is needed to import dlbridge and exchange tensors.
`from_dlpack` takes any object with `__dlpack__`, or a DLPack capsule; `empty`, `zeros` and
`arange` make tensors in Rust memory, and `memoryview(tensor)` reads a host tensor through the
buffer protocol. A `bytearray`, `memoryview`, `bytes` or `array.array` has no `__dlpack__`:
`from_dlpack` refuses it with a TypeError (wrap it first, zero-copy, e.g.
`np.frombuffer(data, dtype=np.float32)`). Kernels written with dlbridge-pyo3 read such
buffer-protocol objects directly, as `explain(x)["argument"]` shows. The conformance checker,
`dlbridge check`, needs NumPy: `pip install "dlbridge[check]"`. `dlbridge.__version__` is the
version of the installed extension module.
"""

from ._dlbridge import (
    DLPACK_VERSION,
    FLAG_IS_COPIED,
    FLAG_IS_SUBBYTE_TYPE_PADDED,
    FLAG_READ_ONLY,
    Tensor,
    arange,
    empty,
    explain,
    from_dlpack,
    zeros,
)
from ._dlbridge import __version__ as __version__

__all__ = [
    "DLPACK_VERSION",
    "FLAG_IS_COPIED",
    "FLAG_IS_SUBBYTE_TYPE_PADDED",
    "FLAG_READ_ONLY",
    "Tensor",
    "arange",
    "empty",
    "explain",
    "from_dlpack",
    "zeros",
]
