//! Host memory as Python describes it without DLPack: NumPy's array struct and the buffer
//! protocol, read into validated DLPack views without allocating, and the tables that name
//! their element types.
//!
//! These are the fast paths of consumption ([`crate::from_dlpack`] for NumPy arrays) and of
//! typed arguments; whatever they do not take (a data type without a DLPack code, a foreign
//! byte order, strides that are not whole elements) goes through `__dlpack__`, whose answer
//! is the producer's.

pub(crate) mod strides;
pub(crate) mod formats;
pub(crate) mod numpy;
pub(crate) mod buffer;

// NumPy's `npy_intp` and Python's `Py_ssize_t` are `isize`; the descriptors built here point
// DLPack's `int64_t` shape at them directly (no allocation, no copy), which needs them to be
// 64 bits wide. On a 32-bit target they are not: refused at compile time, with the reason.
#[cfg(not(target_pointer_width = "64"))]
compile_error!(
    "dlbridge-pyo3 supports 64-bit targets only: it points DLPack's int64_t shapes directly at \
     NumPy's npy_intp and Python's Py_ssize_t extents, which are 32 bits wide on this target \
     (the core crate `dlbridge` supports 32-bit targets)"
);
