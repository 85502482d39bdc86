//! The buffer protocol (PEP 3118), consumer side: any exporter of host memory (NumPy arrays
//! of other types, `array.array`, `memoryview`, `bytearray`, ...) read as a validated view,
//! without negotiation and without allocating beyond the `Py_buffer` itself.
//!
//! The buffer protocol's C API is in the limited API (abi3) only from Python 3.11. A build
//! for an older abi3 level (`pyo3/abi3-py39`, `abi3-py310`) declares the few functions and
//! the `Py_buffer` struct itself (their signatures and layout have not changed since Python
//! 3.3, and are the stable ABI's from 3.11) and calls them only when the running interpreter
//! is 3.11 or later, where its stable ABI promises them; on 3.9 and 3.10 an object that
//! exports a buffer (one `memoryview` accepts) is refused with a `TypeError` that says so,
//! never read another way. On Windows such a build never calls them (`python3.dll` before
//! 3.11 does not export them): build for `abi3-py311` to read buffers there.

use std::ffi::CStr;
use std::ptr::NonNull;

use dlbridge::ffi::DLTensor;
use dlbridge::{Device, ManagedTensor, TensorView, Writability};
use pyo3::prelude::*;

use super::formats::dtype_of_buffer_format;
use super::strides::{ElementStrides, HOST_MAX_NDIM};
use crate::capsule::mark_imported;
use crate::errors::{argument_error, to_py_err};

/// The buffer protocol's C API: PyO3's declarations wherever the API has it.
#[cfg(not(all(Py_LIMITED_API, not(Py_3_11))))]
mod ffi {
    pub(super) use pyo3::ffi::{
        Py_buffer, PyBUF_RECORDS_RO, PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer,
    };
}

/// The buffer protocol's C API in a build for the limited API before Python 3.11, which
/// leaves it out: declared here, and called only when [`ffi::available`] says so (see the
/// module docs).
#[cfg(all(Py_LIMITED_API, not(Py_3_11)))]
#[allow(non_snake_case, non_camel_case_types, non_upper_case_globals)]
mod ffi {
    use std::ffi::{c_char, c_int, c_void};

    use pyo3::Python;
    pub(super) use pyo3::ffi::{Py_ssize_t, PyObject};

    /// `Py_buffer`, as CPython has laid it out since 3.3 (the stable ABI's from 3.11).
    #[repr(C)]
    pub(super) struct Py_buffer {
        pub(super) buf: *mut c_void,
        pub(super) obj: *mut PyObject,
        pub(super) len: Py_ssize_t,
        pub(super) itemsize: Py_ssize_t,
        pub(super) readonly: c_int,
        pub(super) ndim: c_int,
        pub(super) format: *mut c_char,
        pub(super) shape: *mut Py_ssize_t,
        pub(super) strides: *mut Py_ssize_t,
        pub(super) suboffsets: *mut Py_ssize_t,
        pub(super) internal: *mut c_void,
    }

    /// `PyBUF_RECORDS_RO`: strides and format, read-only allowed.
    pub(super) const PyBUF_RECORDS_RO: c_int = 0x0010 | 0x0008 | 0x0004;

    #[cfg(not(windows))]
    unsafe extern "C" {
        pub(super) fn PyObject_CheckBuffer(obj: *mut PyObject) -> c_int;
        pub(super) fn PyObject_GetBuffer(
            obj: *mut PyObject,
            view: *mut Py_buffer,
            flags: c_int,
        ) -> c_int;
        pub(super) fn PyBuffer_Release(view: *mut Py_buffer);
    }

    /// Never called: [`available`] is false on Windows in this build.
    #[cfg(windows)]
    pub(super) unsafe fn PyObject_CheckBuffer(_obj: *mut PyObject) -> c_int {
        0
    }

    /// Never called: [`available`] is false on Windows in this build.
    #[cfg(windows)]
    pub(super) unsafe fn PyObject_GetBuffer(
        _obj: *mut PyObject,
        _view: *mut Py_buffer,
        _flags: c_int,
    ) -> c_int {
        -1
    }

    /// Never called: [`available`] is false on Windows in this build.
    #[cfg(windows)]
    pub(super) unsafe fn PyBuffer_Release(_view: *mut Py_buffer) {}

    /// Whether the running interpreter's stable ABI has the functions: Python 3.11 or later
    /// (and not on Windows, see the module docs).
    pub(super) fn available(py: Python<'_>) -> bool {
        #[cfg(windows)]
        {
            let _ = py;
            false
        }
        #[cfg(not(windows))]
        {
            static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
            *AVAILABLE.get_or_init(|| py.version_info() >= (3, 11))
        }
    }
}

/// The refusal of an object whose buffer this build cannot read on this interpreter (see the
/// module docs); `None` when it exports no buffer (DLPack is tried next, as always).
#[cfg(all(Py_LIMITED_API, not(Py_3_11)))]
#[cold]
fn refusal_without_buffer_api(object: &Bound<'_, PyAny>) -> Option<PyErr> {
    let py = object.py();
    match pyo3::types::PyMemoryView::from(object) {
        Ok(view) => {
            // Release the export now rather than when the view is collected.
            drop(view.call_method0(pyo3::intern!(py, "release")));
            let version = py.version_info();
            Some(pyo3::exceptions::PyTypeError::new_err(format!(
                "{} exports its memory through the buffer protocol, which this build of \
                 dlbridge-pyo3 (for the limited API of Python before 3.11) reads only on \
                 Python 3.11 or later, where the buffer protocol is in the stable ABI{}; this \
                 is Python {}.{}: use a build for this Python or for abi3-py311",
                crate::errors::type_name(object),
                if cfg!(windows) {
                    " (and never on Windows)"
                } else {
                    ""
                },
                version.major,
                version.minor,
            )))
        }
        Err(_) => None,
    }
}

/// A buffer-protocol export held for as long as a view of it is used, and released, with the
/// GIL, when dropped. On the heap, where it stays: some exporters point the buffer's fields at
/// the buffer itself (CPython's `bytes` and `bytearray` point `shape` at `len`), and a view
/// made from them stays in use while this value moves. Held by a raw pointer, not a `Box`, so
/// that moving it asserts no exclusive access to the buffer those pointers reach.
pub(crate) struct HeldBuffer(NonNull<ffi::Py_buffer>);

impl HeldBuffer {
    /// Holds a buffer filled by a successful `PyObject_GetBuffer`, to be released once, by
    /// this value's drop.
    fn new(buffer: Box<ffi::Py_buffer>) -> Self {
        HeldBuffer(NonNull::from(Box::leak(buffer)))
    }
}

impl Drop for HeldBuffer {
    fn drop(&mut self) {
        // Where the interpreter is finalizing or gone (a tensor dropped by a thread at exit),
        // nothing may be released any more: the export is left as it is (attaching panics).
        let _released = Python::try_attach(|_py| {
            // SAFETY: filled by a successful `PyObject_GetBuffer` (`new`'s contract), released
            // once, here, with the GIL held.
            unsafe { ffi::PyBuffer_Release(self.0.as_ptr()) }
        });
        // SAFETY: the box leaked by `new`, freed once, here; nothing reads it after the drop.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

// SAFETY: the export is plain data (pointers into memory its exporter keeps for it) that no
// thread reads through this value; its only use is its release, in `drop`, which attaches to
// the interpreter first, as releasing a buffer needs on any thread.
unsafe impl Send for HeldBuffer {}

/// Exports `object`'s buffer (with strides and format, read-only allowed) and runs `use_view`
/// on it as a validated view, with whether it may be written; the buffer is returned with the
/// result, to be held for as long as the result uses the memory. `None` when the object has
/// no usable buffer (no buffer, a format or layout this path does not take): DLPack is tried
/// next. A buffer that fails validation is a `TypeError` ([`argument_error`]).
#[inline]
pub(crate) fn with_buffer_view<R>(
    object: &Bound<'_, PyAny>,
    use_view: impl FnOnce(&TensorView<'_>, Writability) -> PyResult<R>,
) -> PyResult<Option<(HeldBuffer, R)>> {
    export_buffer(object, |held, view, writability| {
        Ok((held, use_view(view, writability)?))
    })
}

/// `object`'s buffer as an owned tensor that holds the export (zero-copy, read-only where
/// the buffer is), the same tensor that [`with_buffer_view`] shows; `None` where that gives
/// none. The memory stays the object's: the tensor is marked shared.
pub(crate) fn import_buffer(object: &Bound<'_, PyAny>) -> PyResult<Option<ManagedTensor>> {
    export_buffer(object, |held, view, writability| {
        // SAFETY: the export (`held`, moved into the tensor as its owner) keeps the buffer's
        // memory alive and its layout unchanged (an exporter refuses to resize while
        // exported) until it is released, and writable only where it was exported writable.
        let mut tensor =
            unsafe { ManagedTensor::export_view(view, held, !writability.allows_writes()) }
                .map_err(to_py_err)?;
        mark_imported(&mut tensor);
        Ok(tensor)
    })
}

/// The export of [`with_buffer_view`] and [`import_buffer`]: `use_view` gets the held export
/// (which the view's memory lives as long as: moving it does not move the boxed `Py_buffer`),
/// the validated view, and whether it may be written.
#[inline(always)]
fn export_buffer<R>(
    object: &Bound<'_, PyAny>,
    use_view: impl FnOnce(HeldBuffer, &TensorView<'_>, Writability) -> PyResult<R>,
) -> PyResult<Option<R>> {
    #[cfg(all(Py_LIMITED_API, not(Py_3_11)))]
    if !ffi::available(object.py()) {
        return match refusal_without_buffer_api(object) {
            Some(refusal) => Err(refusal),
            None => Ok(None),
        };
    }
    // SAFETY: a live object; the call only inspects its type.
    if unsafe { ffi::PyObject_CheckBuffer(object.as_ptr()) } != 1 {
        return Ok(None);
    }
    // SAFETY: an all-zero Py_buffer is a valid value to hand to `PyObject_GetBuffer`.
    let mut buffer: Box<ffi::Py_buffer> = Box::new(unsafe { std::mem::zeroed() });
    // SAFETY: a live object and a Py_buffer to fill; strides and format are requested.
    if unsafe { ffi::PyObject_GetBuffer(object.as_ptr(), &mut *buffer, ffi::PyBUF_RECORDS_RO) } != 0
    {
        drop(PyErr::take(object.py()));
        return Ok(None);
    }
    let held = HeldBuffer::new(buffer);
    // SAFETY: the filled buffer `held` keeps on the heap until it is dropped, after every use
    // of this reference and of the view made from it (`held` is moved meanwhile, which leaves
    // the buffer where it is).
    let buffer: &ffi::Py_buffer = unsafe { held.0.as_ref() };
    let ndim = match usize::try_from(buffer.ndim) {
        Ok(ndim) if ndim <= HOST_MAX_NDIM => ndim,
        _ => return Ok(None),
    };
    if buffer.format.is_null()
        || buffer.itemsize <= 0
        || (ndim > 0 && (buffer.shape.is_null() || buffer.strides.is_null()))
    {
        return Ok(None);
    }
    // SAFETY: a filled buffer's format is a NUL-terminated string.
    let format = unsafe { CStr::from_ptr(buffer.format) }.to_bytes();
    let Some(dtype) = dtype_of_buffer_format(format, buffer.itemsize) else {
        return Ok(None);
    };
    let byte_strides: &[isize] = if ndim == 0 {
        &[]
    } else {
        // SAFETY: strides were requested: `ndim` byte strides.
        unsafe { std::slice::from_raw_parts(buffer.strides, ndim) }
    };
    let writability = if buffer.readonly != 0 {
        Writability::ReadOnly
    } else {
        Writability::Writable
    };
    let mut room = ElementStrides::new();
    let Some(strides) = room.convert(byte_strides, buffer.itemsize) else {
        return Ok(None);
    };
    let tensor = DLTensor {
        data: buffer.buf,
        device: Device::CPU,
        ndim: ndim as i32,
        dtype,
        // `Py_ssize_t` is `i64` wherever this crate builds (checked in `host`).
        shape: buffer.shape.cast::<i64>(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    // SAFETY: the buffer's memory and shape stay valid while `held` lives, and the strides
    // while `room` does, which is past every use of the view (inside `use_view`).
    let view = unsafe { TensorView::from_dltensor(&tensor) }.map_err(argument_error)?;
    use_view(held, &view, writability).map(Some)
}
