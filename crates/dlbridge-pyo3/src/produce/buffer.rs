//! The buffer protocol served over a tensor, for a class of one's own (`dlbridge.Tensor`,
//! the memoryviews [`return_like`](crate::return_like) hands back for buffer inputs): which
//! tensors it serves, the `Py_buffer` layout (format, shape and byte strides) owned from
//! `__getbuffer__` to `__releasebuffer__`; and the plain bytes of any tensor, which pickling
//! hands out. The format of a dtype comes from the one table ([`buffer_format`]).
//!
//! Buffers are served where PyO3 has `__getbuffer__`: the full API, or the limited API
//! (abi3) of Python 3.11 and later.

use std::ffi::{CString, c_int, c_void};

use dlbridge::ManagedTensor;
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;

use crate::host::formats::buffer_format;
use crate::writability_hook::{shared_reason, writable_for_python};

/// Fills `view` with a buffer over `tensor` (`__getbuffer__`): host-readable tensors whose
/// dtype has a `struct` format ([`buffer_format`]: bfloat16 and float8 as unsigned integers
/// of their width), in the layout that `flags` asks for; writable unless the tensor is
/// read-only or other Rust handles read its memory (it is a share of a tensor Rust still
/// holds, or shares of it are alive in Rust: [`ManagedTensor::is_share`],
/// [`ManagedTensor::live_shares`]). A request the tensor cannot serve is a `BufferError`
/// naming why (device memory, a data type without a format, a read-only tensor asked for
/// writing, a layout other than the contiguity asked for).
///
/// A class of one's own serves its tensor with it, and releases with [`release_buffer`]:
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::produce::{get_buffer, release_buffer};
/// use pyo3::ffi;
/// use pyo3::prelude::*;
/// use std::ffi::c_int;
///
/// #[pyclass(frozen)]
/// struct Pixels {
///     tensor: ManagedTensor,
/// }
///
/// #[pymethods]
/// impl Pixels {
///     unsafe fn __getbuffer__(
///         slf: Bound<'_, Self>,
///         view: *mut ffi::Py_buffer,
///         flags: c_int,
///     ) -> PyResult<()> {
///         // SAFETY: CPython hands a Py_buffer to fill; `slf` owns the tensor.
///         unsafe { get_buffer(&slf.get().tensor, slf.as_any(), view, flags) }
///     }
///
///     unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
///         // SAFETY: a buffer `__getbuffer__` filled, released once.
///         unsafe { release_buffer(view) }
///     }
/// }
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     let tensor = Export::new(vec![1u16, 2, 3, 4, 5, 6], &[2, 3]).into_versioned()
///         .map_err(to_py_err)?;
///     let pixels = Bound::new(py, Pixels { tensor })?;
///     let view = py.import("builtins")?.getattr("memoryview")?.call1((pixels,))?;
///     assert_eq!(view.getattr("format")?.extract::<String>()?, "H");
///     assert_eq!(view.getattr("shape")?.extract::<Vec<usize>>()?, [2, 3]);
///     assert_eq!(view.call_method0("tolist")?.extract::<Vec<Vec<u16>>>()?[1], [4, 5, 6]);
///     Ok(())
/// })
/// # .unwrap();
/// ```
///
/// # Safety
///
/// `view` must be NULL or a valid `Py_buffer` to fill, and `owner` must keep the memory of
/// `tensor` alive (the object whose `__getbuffer__` this is, which holds the tensor).
pub unsafe fn get_buffer(
    tensor: &ManagedTensor,
    owner: &Bound<'_, PyAny>,
    view: *mut ffi::Py_buffer,
    flags: c_int,
) -> PyResult<()> {
    // SAFETY: the caller's contract.
    unsafe { serve(view, owner, BufferLayout::new(tensor, flags)) }
}

/// Fills `view` with the bytes of a C-contiguous host tensor of any dtype (sub-byte, bfloat16
/// and float8 included, which have no `struct` format): one dimension of unsigned bytes
/// (format "B"), `compact_byte_size` long, writable unless `read_only` or unless
/// [`get_buffer`] would serve the tensor read-only. What pickling hands
/// to `pickle.PickleBuffer`; released with [`release_buffer`]. A class of one's own uses it as
/// [`get_buffer`]'s example does.
///
/// # Safety
///
/// As [`get_buffer`].
pub unsafe fn get_byte_buffer(
    tensor: &ManagedTensor,
    read_only: bool,
    owner: &Bound<'_, PyAny>,
    view: *mut ffi::Py_buffer,
    flags: c_int,
) -> PyResult<()> {
    // SAFETY: the caller's contract.
    unsafe { serve(view, owner, BufferLayout::bytes(tensor, read_only, flags)) }
}

/// Hands `layout` to `view`, or its error.
///
/// # Safety
///
/// As [`get_buffer`], for the tensor `layout` describes.
unsafe fn serve(
    view: *mut ffi::Py_buffer,
    owner: &Bound<'_, PyAny>,
    layout: PyResult<BufferLayout>,
) -> PyResult<()> {
    if view.is_null() {
        return Err(PyBufferError::new_err("NULL Py_buffer"));
    }
    let buffer = layout?;
    // SAFETY: `view` is a valid Py_buffer to fill (CPython's contract for getbuffer); the
    // memory it describes is kept alive by `owner` (the Tensor), referenced from `obj`, and
    // the layout arrays and format live in `internal` until `__releasebuffer__`.
    unsafe { buffer.fill(view, owner.clone()) };
    Ok(())
}

/// Frees the layout that [`get_buffer`] or [`get_byte_buffer`] handed to `view`
/// (`__releasebuffer__`; see [`get_buffer`]'s example).
///
/// # Safety
///
/// `view` must be a buffer filled by [`get_buffer`] or [`get_byte_buffer`], released once.
pub unsafe fn release_buffer(view: *mut ffi::Py_buffer) {
    // SAFETY: `internal` was set by `get_buffer` to a leaked `BufferLayout`, released once,
    // here.
    unsafe { drop(Box::from_raw((*view).internal.cast::<BufferLayout>())) };
}

/// The address a buffer hands out for a tensor's first element: an empty tensor may have NULL
/// data, and buffers want an address.
fn buffer_address(data: *mut c_void) -> *mut c_void {
    if data.is_null() {
        std::ptr::NonNull::<u64>::dangling().as_ptr().cast()
    } else {
        data
    }
}

/// What a `Py_buffer` points to: the format and the shape and byte strides, owned until the
/// buffer is released.
struct BufferLayout {
    buf: *mut c_void,
    len: isize,
    itemsize: isize,
    readonly: bool,
    format: CString,
    /// `ndim` extents, then `ndim` strides in bytes.
    dims: Vec<isize>,
}

impl BufferLayout {
    fn new(tensor: &ManagedTensor, flags: c_int) -> PyResult<Self> {
        let view = tensor.view();
        let device = view.device();
        if !device.is_host_readable() {
            return Err(PyBufferError::new_err(format!(
                "the buffer protocol needs host memory; this tensor is on {device}"
            )));
        }
        let dtype = view.dtype();
        let format = buffer_format(dtype).ok_or_else(|| {
            PyBufferError::new_err(format!(
                "{dtype} has no buffer-protocol format; export it with DLPack instead"
            ))
        })?;
        let itemsize = dtype.size_in_bytes().unwrap_or(1) as isize;
        let readonly = !writable_for_python(tensor);
        if readonly && flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(writable_refused(tensor));
        }
        let c = view.is_c_contiguous();
        let f = view.is_f_contiguous();
        let refused = |order: &str| {
            PyBufferError::new_err(format!(
                "a {order}-contiguous buffer was requested but the tensor's strides are {:?}",
                view.strides()
            ))
        };
        if flags & ffi::PyBUF_C_CONTIGUOUS == ffi::PyBUF_C_CONTIGUOUS && !c {
            return Err(refused("C"));
        }
        if flags & ffi::PyBUF_F_CONTIGUOUS == ffi::PyBUF_F_CONTIGUOUS && !f {
            return Err(refused("Fortran"));
        }
        if flags & ffi::PyBUF_ANY_CONTIGUOUS == ffi::PyBUF_ANY_CONTIGUOUS && !c && !f {
            return Err(refused("C or Fortran"));
        }
        if flags & ffi::PyBUF_STRIDES != ffi::PyBUF_STRIDES && !c {
            return Err(refused("C (no strides requested)"));
        }
        let mut dims: Vec<isize> = view.shape().iter().map(|&e| e as isize).collect();
        dims.extend(view.strides().iter().map(|&s| s as isize * itemsize));
        let elements = view.num_elements() as isize;
        Ok(BufferLayout {
            buf: buffer_address(view.data_ptr()),
            len: elements * itemsize,
            itemsize,
            readonly,
            format: CString::new(format).expect("formats have no NUL"),
            dims,
        })
    }

    /// The layout of [`get_byte_buffer`]: the tensor's bytes as one dimension of "B".
    fn bytes(tensor: &ManagedTensor, read_only: bool, flags: c_int) -> PyResult<Self> {
        let view = tensor.view();
        let device = view.device();
        if !device.is_host_readable() {
            return Err(PyBufferError::new_err(format!(
                "the buffer protocol needs host memory; this tensor is on {device}"
            )));
        }
        if !view.is_c_contiguous() {
            return Err(PyBufferError::new_err(format!(
                "the bytes of a tensor are served C-contiguous only; its strides are {:?}",
                view.strides()
            )));
        }
        let read_only = read_only || !writable_for_python(tensor);
        if read_only && flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(writable_refused(tensor));
        }
        let len = isize::try_from(view.compact_byte_size())
            .map_err(|_| PyBufferError::new_err("the tensor is too large for a buffer"))?;
        Ok(BufferLayout {
            buf: buffer_address(view.data_ptr()),
            len,
            itemsize: 1,
            readonly: read_only,
            format: CString::new("B").expect("no NUL"),
            dims: vec![len, 1],
        })
    }

    /// Fills `view` and hands this layout to it.
    ///
    /// # Safety
    ///
    /// `view` must be a valid `Py_buffer` to fill, and `owner` must keep the memory alive.
    unsafe fn fill(self, view: *mut ffi::Py_buffer, owner: Bound<'_, PyAny>) {
        let ndim = self.dims.len() / 2;
        let layout = Box::into_raw(Box::new(self));
        // SAFETY: by the contract; `layout` stays allocated until `__releasebuffer__`.
        unsafe {
            let layout = &mut *layout;
            (*view).obj = owner.into_ptr();
            (*view).buf = layout.buf;
            (*view).len = layout.len;
            (*view).itemsize = layout.itemsize;
            (*view).readonly = c_int::from(layout.readonly);
            (*view).format = layout.format.as_ptr().cast_mut();
            (*view).ndim = ndim as c_int;
            (*view).shape = layout.dims.as_mut_ptr();
            (*view).strides = layout.dims.as_mut_ptr().add(ndim);
            (*view).suboffsets = std::ptr::null_mut();
            (*view).internal = (layout as *mut BufferLayout).cast();
        }
    }
}

/// The refusal of a writable buffer (`PyBUF_WRITABLE`) over a tensor served read-only, saying
/// why: its producer's flag, or other Rust handles reading its memory.
fn writable_refused(tensor: &ManagedTensor) -> PyErr {
    let why = if tensor.view().is_read_only() {
        format!("the tensor is read-only ({:?})", tensor.writability())
    } else {
        format!("the tensor is served read-only: {}", shared_reason(tensor))
    };
    PyBufferError::new_err(format!("{why}; a writable buffer was requested"))
}
