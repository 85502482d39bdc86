//! The buffer protocol (PEP 3118), consumer side: any exporter of host memory (NumPy arrays
//! of other types, `array.array`, `memoryview`, `bytearray`, ...) read as a validated view,
//! without negotiation and without allocating beyond the `Py_buffer` itself.

use std::ffi::CStr;

use dlbridge::ffi::DLTensor;
use dlbridge::{Device, TensorView, Writability};
use pyo3::ffi;
use pyo3::prelude::*;

use super::formats::dtype_of_buffer_format;
use super::strides::{ElementStrides, HOST_MAX_NDIM};
use crate::errors::argument_error;

/// A buffer-protocol export held for as long as a view of it is used, and released, with the
/// GIL, when dropped. Boxed: some exporters point the buffer's fields at the buffer itself.
pub(crate) struct HeldBuffer(Box<ffi::Py_buffer>);

impl Drop for HeldBuffer {
    fn drop(&mut self) {
        Python::attach(|_py| {
            // SAFETY: filled by a successful `PyObject_GetBuffer`, released once, here, with
            // the GIL held.
            unsafe { ffi::PyBuffer_Release(&mut *self.0) }
        });
    }
}

/// Exports `object`'s buffer (with strides and format, read-only allowed) and runs `use_view`
/// on it as a validated view, with whether it may be written; the buffer is returned with the
/// result, to be held for as long as the result uses the memory. `None` when the object has
/// no usable buffer (no buffer, a format or layout this path does not take): DLPack is tried
/// next. A buffer that fails validation is a `TypeError` ([`argument_error`]).
pub(crate) fn with_buffer_view<R>(
    object: &Bound<'_, PyAny>,
    use_view: impl FnOnce(&TensorView<'_>, Writability) -> PyResult<R>,
) -> PyResult<Option<(HeldBuffer, R)>> {
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
    let held = HeldBuffer(buffer);
    let buffer = &*held.0;
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
    let made = use_view(&view, writability)?;
    Ok(Some((held, made)))
}
