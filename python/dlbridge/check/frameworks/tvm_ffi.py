"""tvm-ffi, as the checker drives it: its tensors and `tvm_ffi.from_dlpack`. It has no
catalogue: the exchange table is compared on the checker's one tensor.
"""

from __future__ import annotations

import numpy as np

from .base import via_numpy

NAME = "tvm_ffi"
MODULE = "tvm_ffi"
DISTRIBUTION = "apache-tvm-ffi"


def make(array):
    """A tensor over a copy of `array`."""
    import tvm_ffi

    return tvm_ffi.from_dlpack(np.array(array, copy=True))


def make_view(view):
    """A tensor over the NumPy view, keeping its strides."""
    import tvm_ffi

    return tvm_ffi.from_dlpack(view)


#: What its from_dlpack lacks.
FROM_DLPACK_LACKS = {
    "copy": "tvm_ffi.from_dlpack(ext_tensor, *, require_alignment, require_contiguous) has no "
    "copy parameter"
}


def consume(obj):
    """`tvm_ffi.from_dlpack(obj)`."""
    import tvm_ffi

    return tvm_ffi.from_dlpack(obj)


#: A result read back through NumPy's from_dlpack.
to_numpy = via_numpy
