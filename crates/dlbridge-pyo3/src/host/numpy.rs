//! NumPy arrays described directly from their C struct, without `__dlpack__`, the buffer
//! protocol or any allocation: what `__dlpack__` would export, read in a few loads.
//!
//! NumPy's C API promises the layout read here (its `PyArray_DATA`, `PyArray_NDIM`,
//! `PyArray_DIMS`, `PyArray_STRIDES`, `PyArray_DESCR` and `PyArray_FLAGS` are inline functions
//! compiled into every extension, so the fields cannot move without breaking them all). It is
//! the same in NumPy 1.x and 2.x, and so are the descriptor fields read (`byteorder`,
//! `type_num`); the parts of the descriptor that 2.0 changed are not read. Only objects whose
//! type is exactly `numpy.ndarray` (checked by identity with the imported module's class) come
//! here, and only the built-in numeric data types in native byte order with strides in whole
//! elements; everything else goes through `__dlpack__`, whose answer (or error) is NumPy's.

use std::ffi::{c_char, c_int, c_void};

use dlbridge::ffi::DLTensor;
use dlbridge::{Device, ManagedTensor, TensorView, Writability};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyType;

use super::formats::dtype_of_numpy_type;
use super::strides::{ElementStrides, HOST_MAX_NDIM};
use crate::errors::to_py_err;
use crate::owner::PyObjectOwner;

/// The head of NumPy's `PyArrayObject_fields`.
#[repr(C)]
#[allow(dead_code)] // Fields kept to give the read ones their offsets.
struct ArrayFields {
    ob_base: ffi::PyObject,
    data: *mut c_char,
    nd: c_int,
    dimensions: *mut isize,
    strides: *mut isize,
    base: *mut ffi::PyObject,
    descr: *mut DescrHead,
    flags: c_int,
}

/// The head of NumPy's `PyArray_Descr`, identical in 1.x and 2.x up to `type_num`.
#[repr(C)]
#[allow(dead_code)] // Fields kept to give the read ones their offsets.
struct DescrHead {
    ob_base: ffi::PyObject,
    typeobj: *mut ffi::PyTypeObject,
    kind: c_char,
    type_char: c_char,
    byteorder: c_char,
    former_flags: c_char,
    type_num: c_int,
}

/// `NPY_ARRAY_WRITEABLE`.
const WRITEABLE: c_int = 0x0400;

/// Whether objects of `kind` are at least as large as the fields read here (a sanity check
/// on the class found as `numpy.ndarray`).
pub(crate) fn layout_fits(kind: &Bound<'_, PyType>) -> bool {
    // SAFETY: a live type object; `tp_basicsize` is a plain field of every type.
    let basicsize = unsafe { (*kind.as_type_ptr()).tp_basicsize };
    usize::try_from(basicsize).is_ok_and(|size| size >= std::mem::size_of::<ArrayFields>())
}

/// Describes a NumPy array and runs `use_view` on the validated view, with whether the array
/// may be written. `None` when the array is not one this path takes (see the module docs):
/// the caller then goes through `__dlpack__`.
///
/// # Safety
///
/// `object`'s type must be exactly `numpy.ndarray` (see [`crate::dispatch`]), and `object` must not be
/// resized or have its data replaced while `use_view` runs (the GIL is held by `object`'s
/// token, and the view does not outlive the call).
#[inline(always)]
pub(crate) unsafe fn with_array_view<R>(
    object: &Bound<'_, PyAny>,
    use_view: impl FnOnce(&TensorView<'_>, Writability) -> PyResult<R>,
) -> PyResult<Option<R>> {
    // SAFETY: the caller's guarantee: a live `numpy.ndarray`, whose struct starts with these
    // fields; the GIL is held, so nothing changes them while they are read.
    let array = unsafe { &*object.as_ptr().cast::<ArrayFields>() };
    let ndim = match usize::try_from(array.nd) {
        Ok(ndim) if ndim <= HOST_MAX_NDIM => ndim,
        _ => return Ok(None),
    };
    if array.descr.is_null()
        || (ndim > 0 && (array.dimensions.is_null() || array.strides.is_null()))
    {
        return Ok(None);
    }
    // SAFETY: every array has a live descriptor, whose head is laid out as `DescrHead`.
    let descr = unsafe { &*array.descr };
    let native = matches!(descr.byteorder as u8, b'=' | b'|')
        || (descr.byteorder as u8 == b'<') == cfg!(target_endian = "little");
    let Some(dtype) = dtype_of_numpy_type(descr.type_num).filter(|_| native) else {
        return Ok(None);
    };
    let itemsize = dtype.size_in_bytes().unwrap_or(1) as isize;
    let byte_strides: &[isize] = if ndim == 0 {
        &[]
    } else {
        // SAFETY: an array of `nd` dimensions has `nd` strides, in bytes.
        unsafe { std::slice::from_raw_parts(array.strides, ndim) }
    };
    let mut no_extents = [0i64; 1];
    let shape = if ndim == 0 {
        no_extents.as_mut_ptr()
    } else {
        // `npy_intp` is `i64` wherever this crate builds (checked in `host`).
        array.dimensions.cast::<i64>()
    };
    let mut room = ElementStrides::new();
    let Some(strides) = room.convert(byte_strides, itemsize) else {
        return Ok(None);
    };
    let tensor = DLTensor {
        data: array.data.cast::<c_void>(),
        device: Device::CPU,
        ndim: ndim as i32,
        dtype,
        shape,
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    // SAFETY: the array's data, its dimensions and the local strides stay valid and unchanged
    // while `use_view` runs (the caller's guarantee, and locals of this frame).
    let view = unsafe { TensorView::from_dltensor(&tensor) }.map_err(to_py_err)?;
    let writability = if array.flags & WRITEABLE == 0 {
        Writability::ReadOnly
    } else {
        Writability::Writable
    };
    use_view(&view, writability).map(Some)
}

/// Imports a NumPy array as an owned tensor that keeps the array alive: zero-copy, as
/// `__dlpack__` would export it (read-only arrays flagged READ_ONLY), without the protocol's
/// calls. `None` for an array this path does not take.
///
/// # Safety
///
/// `object`'s type must be exactly `numpy.ndarray` (see [`crate::dispatch`]).
pub(crate) unsafe fn import(object: &Bound<'_, PyAny>) -> PyResult<Option<ManagedTensor>> {
    let export = |view: &TensorView<'_>, writability: Writability| {
        let owner = PyObjectOwner::new(object.clone().unbind());
        // SAFETY: the owner keeps the array, and so its data, alive (NumPy refuses to resize
        // an array that other references hold); the view is the array's own, validated.
        unsafe { ManagedTensor::export_view(view, owner, !writability.allows_writes()) }
            .map_err(to_py_err)
    };
    // SAFETY: the caller's guarantee on the type; the view is used only inside `export`, with
    // the GIL held.
    unsafe { with_array_view(object, export) }
}
