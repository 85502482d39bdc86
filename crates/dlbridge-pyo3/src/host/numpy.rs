//! NumPy arrays described directly from their C struct, without `__dlpack__`, the buffer
//! protocol or any allocation: what `__dlpack__` would export, read in a few loads; and
//! tensors returned as NumPy arrays made directly over their memory ([`into_array`]), with
//! NumPy's own C API, without `numpy.from_dlpack`.
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
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use dlbridge::ffi::DLTensor;
use dlbridge::{Device, Element, ManagedTensor, TensorView, Writability};
use ndarray::{Array, Dimension};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyType;

use pyo3::sync::PyOnceLock;
use pyo3::types::PyCapsule;

use super::formats::{dtype_of_numpy_type, numpy_type_of};
use super::strides::{ElementStrides, HOST_MAX_NDIM};
use crate::capsule::mark_imported;
use crate::errors::to_py_err;
use crate::owner::PyObjectOwner;
use crate::writability_hook::writable_for_python;

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
    #[cfg(not(Py_LIMITED_API))]
    // SAFETY: a live type object; `tp_basicsize` is a plain field of every type.
    let basicsize = unsafe { (*kind.as_type_ptr()).tp_basicsize };
    // The limited API (abi3) hides the type struct's fields: the same field, read as the
    // type's `__basicsize__` attribute (asked once per process, by `crate::dispatch`).
    #[cfg(Py_LIMITED_API)]
    let Ok(basicsize) = kind
        .getattr(pyo3::intern!(kind.py(), "__basicsize__"))
        .and_then(|size| size.extract::<isize>())
    else {
        return false;
    };
    usize::try_from(basicsize).is_ok_and(|size| size >= std::mem::size_of::<ArrayFields>())
}

/// The DLPack descriptor of a NumPy array, with whether the array may be written: its
/// data and dimensions in place, its strides in elements written to `room` (the shape of a
/// 0-d array points to `no_extents`). `None` when the array is not one this path takes (see
/// the module docs): the caller then goes through `__dlpack__`.
///
/// # Safety
///
/// `object`'s type must be exactly `numpy.ndarray` (see [`crate::dispatch`]). The descriptor
/// points into `object`, `room` and `no_extents`: it may be used while all three live and the
/// array is neither resized nor given other data (the GIL is held by `object`'s token).
#[inline(always)]
unsafe fn describe(
    object: &Bound<'_, PyAny>,
    room: &mut ElementStrides,
    no_extents: &mut [i64; 1],
) -> Option<(DLTensor, Writability)> {
    // SAFETY: the caller's guarantee: a live `numpy.ndarray`, whose struct starts with these
    // fields; the GIL is held, so nothing changes them while they are read.
    let array = unsafe { &*object.as_ptr().cast::<ArrayFields>() };
    let ndim = match usize::try_from(array.nd) {
        Ok(ndim) if ndim <= HOST_MAX_NDIM => ndim,
        _ => return None,
    };
    if array.descr.is_null()
        || (ndim > 0 && (array.dimensions.is_null() || array.strides.is_null()))
    {
        return None;
    }
    // SAFETY: every array has a live descriptor, whose head is laid out as `DescrHead`.
    let descr = unsafe { &*array.descr };
    let native = matches!(descr.byteorder as u8, b'=' | b'|')
        || (descr.byteorder as u8 == b'<') == cfg!(target_endian = "little");
    let dtype = dtype_of_numpy_type(descr.type_num).filter(|_| native)?;
    let itemsize = dtype.size_in_bytes().unwrap_or(1) as isize;
    let (shape, byte_strides): (*mut i64, &[isize]) = if ndim == 0 {
        (no_extents.as_mut_ptr(), &[])
    } else {
        // SAFETY: an array of `nd` dimensions has `nd` strides, in bytes. `npy_intp` is `i64`
        // wherever this crate builds (checked in `host`).
        (array.dimensions.cast::<i64>(), unsafe {
            std::slice::from_raw_parts(array.strides, ndim)
        })
    };
    let strides = room.convert(byte_strides, itemsize)?;
    let tensor = DLTensor {
        data: array.data.cast::<c_void>(),
        device: Device::CPU,
        ndim: ndim as i32,
        dtype,
        shape,
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    let writability = if array.flags & WRITEABLE == 0 {
        Writability::ReadOnly
    } else {
        Writability::Writable
    };
    Some((tensor, writability))
}

/// Describes a NumPy array and runs `use_view` on the validated view, with whether the array
/// may be written. `None` when the array is not one this path takes (see the module docs):
/// the caller then goes through `__dlpack__`.
///
/// # Safety
///
/// `object`'s type must be exactly `numpy.ndarray` (see [`crate::dispatch`]), and `object`
/// must not be resized or have its data replaced while `use_view` runs (the GIL is held by
/// `object`'s token, and the view does not outlive the call).
#[inline(always)]
pub(crate) unsafe fn with_array_view<R>(
    object: &Bound<'_, PyAny>,
    use_view: impl FnOnce(&TensorView<'_>, Writability) -> PyResult<R>,
) -> PyResult<Option<R>> {
    let (mut room, mut no_extents) = (ElementStrides::new(), [0i64; 1]);
    // SAFETY: the caller's guarantees; the descriptor is used below, while `room` and
    // `no_extents` live.
    let Some((tensor, writability)) = (unsafe { describe(object, &mut room, &mut no_extents) })
    else {
        return Ok(None);
    };
    // SAFETY: the array's data and dimensions and the local strides stay valid and unchanged
    // while `use_view` runs (the caller's guarantee, and locals of this frame).
    let view = unsafe { TensorView::from_dltensor(&tensor) }.map_err(to_py_err)?;
    use_view(&view, writability).map(Some)
}

/// Imports a NumPy array as an owned tensor that keeps the array alive: zero-copy, as
/// `__dlpack__` would export it (read-only arrays flagged READ_ONLY), without the protocol's
/// calls: the view [`with_array_view`] shows, kept. `None` for an array this path does not
/// take.
///
/// # Safety
///
/// `object`'s type must be exactly `numpy.ndarray` (see [`crate::dispatch`]).
#[inline(always)]
pub(crate) unsafe fn import(object: &Bound<'_, PyAny>) -> PyResult<Option<ManagedTensor>> {
    let keep = |view: &TensorView<'_>, writability: Writability| {
        let owner = PyObjectOwner::new(object.clone().unbind());
        // SAFETY: the owner keeps the array, and so its data, alive (NumPy refuses to resize
        // an array that other references hold); the view is the array's own, validated.
        let mut tensor =
            unsafe { ManagedTensor::export_view(view, owner, !writability.allows_writes()) }
                .map_err(to_py_err)?;
        mark_imported(&mut tensor);
        Ok(tensor)
    };
    // SAFETY: the caller's guarantee on the type; the array is held by `object` for the call.
    unsafe { with_array_view(object, keep) }
}

/// `PyArray_Descr *PyArray_DescrFromType(int)`.
type DescrFromType = unsafe extern "C" fn(c_int) -> *mut ffi::PyObject;
/// `PyObject *PyArray_NewFromDescr(PyTypeObject *, PyArray_Descr *, int, npy_intp const *,
/// npy_intp const *, void *, int, PyObject *)`; steals the descriptor.
type NewFromDescr = unsafe extern "C" fn(
    *mut ffi::PyTypeObject,
    *mut ffi::PyObject,
    c_int,
    *const isize,
    *const isize,
    *mut c_void,
    c_int,
    *mut ffi::PyObject,
) -> *mut ffi::PyObject;
/// `int PyArray_SetBaseObject(PyArrayObject *, PyObject *)`; steals the base.
type SetBaseObject = unsafe extern "C" fn(*mut ffi::PyObject, *mut ffi::PyObject) -> c_int;

/// NumPy's C API table entries used to make arrays (the same slots in NumPy 1.x and 2.x).
struct ArrayApi {
    /// `PyArray_Type` (slot 2).
    array_type: *mut ffi::PyTypeObject,
    /// Slot 45.
    descr_from_type: DescrFromType,
    /// Slot 94.
    new_from_descr: NewFromDescr,
    /// Slot 282.
    set_base_object: SetBaseObject,
}

// SAFETY: process-lifetime pointers into NumPy's extension module (never unloaded), only used
// with the GIL held.
unsafe impl Send for ArrayApi {}
// SAFETY: as above.
unsafe impl Sync for ArrayApi {}

/// NumPy's C API, found once per process (`None` where NumPy cannot be imported or its table
/// does not check out: arrays are then returned through `numpy.from_dlpack`).
fn array_api(py: Python<'_>) -> Option<&'static ArrayApi> {
    static API: PyOnceLock<Option<ArrayApi>> = PyOnceLock::new();
    API.get_or_init(py, || {
        let found = find_array_api(py);
        // A failure here only turns the direct path off.
        drop(PyErr::take(py));
        found.ok().flatten()
    })
    .as_ref()
}

/// Reads `_ARRAY_API` of NumPy's `multiarray` module (`numpy._core` since 2.0, `numpy.core`
/// before), checking that its `PyArray_Type` is the imported `numpy.ndarray`.
fn find_array_api(py: Python<'_>) -> PyResult<Option<ArrayApi>> {
    let multiarray = py
        .import("numpy._core.multiarray")
        .or_else(|_| py.import("numpy.core.multiarray"))?;
    let capsule = multiarray.getattr("_ARRAY_API")?;
    let capsule = capsule.cast::<PyCapsule>()?;
    // NumPy publishes the table in a capsule without a name.
    let table = capsule
        .pointer_checked(None)?
        .as_ptr()
        .cast::<*mut c_void>();
    let ndarray = py.import("numpy")?.getattr("ndarray")?;
    // SAFETY: NumPy's API table is an array of at least 300 pointers (slot 282 exists since
    // NumPy 1.7), living as long as NumPy's module, which is never unloaded.
    let slot = |index: usize| unsafe { *table.add(index) };
    let array_type = slot(2).cast::<ffi::PyTypeObject>();
    if array_type != ndarray.as_ptr().cast() {
        return Ok(None);
    }
    // SAFETY: the slots hold these functions with these signatures (NumPy's C API,
    // `__multiarray_api.h`), the same in 1.x and 2.x; NULL would not pass the type check
    // above, which shows the table is NumPy's.
    Ok(Some(unsafe {
        ArrayApi {
            array_type,
            descr_from_type: std::mem::transmute::<*mut c_void, DescrFromType>(slot(45)),
            new_from_descr: std::mem::transmute::<*mut c_void, NewFromDescr>(slot(94)),
            set_base_object: std::mem::transmute::<*mut c_void, SetBaseObject>(slot(282)),
        }
    }))
}

/// The base object of a NumPy array made over a Rust result's memory ([`into_array`],
/// [`array_from_ndarray`]): it keeps that memory alive as long as the array (and its views)
/// live.
#[pyclass(frozen, module = "dlbridge_pyo3", name = "TensorMemory")]
pub(crate) struct TensorMemory {
    _memory: Memory,
}

/// What a [`TensorMemory`] keeps.
enum Memory {
    /// A tensor, and so its producer's memory.
    Tensor(#[allow(dead_code)] ManagedTensor),
    /// The buffer of an ndarray result, without a DLPack tensor around it.
    Elements(#[allow(dead_code)] OwnedElements),
}

/// A `Vec<T>` of some element type, taken apart: its buffer, freed as a `Vec<T>` of the same
/// type, length and capacity when this is dropped (as rust-numpy's base objects do). No
/// allocation of its own, unlike a `Box<dyn Send + Sync>`.
struct OwnedElements {
    ptr: NonNull<u8>,
    len: usize,
    capacity: usize,
    /// `release::<T>` for the vector's `T`.
    release: unsafe fn(NonNull<u8>, usize, usize),
}

impl OwnedElements {
    fn new<T: Element>(vector: Vec<T>) -> Self {
        /// Rebuilds and drops the vector.
        ///
        /// # Safety
        ///
        /// The arguments must be the parts of a `Vec<T>` taken apart by `new`, once.
        unsafe fn release<T>(ptr: NonNull<u8>, len: usize, capacity: usize) {
            // SAFETY: the contract: the parts of a `Vec<T>` that nothing else owns.
            drop(unsafe { Vec::from_raw_parts(ptr.cast::<T>().as_ptr(), len, capacity) });
        }
        let mut vector = ManuallyDrop::new(vector);
        OwnedElements {
            // SAFETY: a `Vec`'s pointer is never NULL (dangling but aligned when it holds
            // nothing); `as_mut_ptr` makes no reference, so pointers derived from this one
            // stay valid.
            ptr: unsafe { NonNull::new_unchecked(vector.as_mut_ptr()) }.cast(),
            len: vector.len(),
            capacity: vector.capacity(),
            release: release::<T>,
        }
    }
}

impl Drop for OwnedElements {
    fn drop(&mut self) {
        // SAFETY: the parts `new` took apart, released once (here, in the only drop).
        unsafe { (self.release)(self.ptr, self.len, self.capacity) }
    }
}

// SAFETY: it owns a `Vec<T>` of an `Element` type, which is `Send`; the pointer is never
// dereferenced from Rust (NumPy reads and writes the elements, under the GIL).
unsafe impl Send for OwnedElements {}
// SAFETY: no shared access from Rust at all (`&OwnedElements` gives nothing but the drop).
unsafe impl Sync for OwnedElements {}

/// Returns `tensor` as a new `numpy.ndarray` over its memory, zero-copy, made with NumPy's C
/// API: what `numpy.from_dlpack` would give (a read-only array for a read-only tensor, and for
/// one that other Rust handles read: `writability_hook::writability_for_python`), in a
/// fraction of the time. `Err(tensor)` gives the tensor back for a tensor this path does not
/// take (not in CPU memory, without elements, of a data type NumPy has no number for, more
/// than 64 dimensions) or when NumPy's API was not found: the caller then goes through
/// `numpy.from_dlpack`.
pub(crate) fn into_array(
    py: Python<'_>,
    tensor: ManagedTensor,
) -> PyResult<Result<Bound<'_, PyAny>, ManagedTensor>> {
    let view = tensor.view();
    let (Some(api), Some(numpy_type), Some(itemsize)) = (
        array_api(py),
        numpy_type_of(view.dtype()),
        view.dtype().size_in_bytes(),
    ) else {
        return Ok(Err(tensor));
    };
    if view.device() != Device::CPU || view.num_elements() == 0 || view.ndim() > HOST_MAX_NDIM {
        return Ok(Err(tensor));
    }
    let mut strides = IntpBuffer::new(view.ndim());
    for (bytes, &stride) in strides.as_mut().iter_mut().zip(view.strides()) {
        // Validation keeps every byte offset within `isize` (V8), so this fits.
        *bytes = stride as isize * itemsize as isize;
    }
    // The extents are read in place: `npy_intp` is `i64` wherever this crate builds (checked
    // in `host`).
    let extents = view.shape().as_ptr().cast::<isize>();
    let data = view.data_ptr();
    // The rule of every way out: read-only where other Rust handles read the memory.
    let writable = writable_for_python(&tensor);
    // SAFETY: `extents` and the strides describe the tensor's layout, which its validation
    // checked for `data` (V7, V8); the tensor, which owns that memory, becomes the base below.
    let array = unsafe {
        new_array(
            py,
            api,
            numpy_type,
            extents,
            strides.as_mut(),
            data,
            writable,
        )
    }?;
    let mut tensor = tensor;
    // Given away to Python, as into a capsule: an import's claim is released, since no Rust
    // code reads the memory through the tensor from here on (the base only keeps it alive).
    // SAFETY: the tensor goes into the array's base object, which never makes a reference to
    // its elements; Python code and kernels reach the memory through the array only.
    unsafe { crate::claims::release_import_claim(&mut tensor) };
    set_base(py, api, array, Memory::Tensor(tensor)).map(Ok)
}

/// Returns an ndarray result as a new `numpy.ndarray` over the array's own buffer, zero-copy,
/// without making a DLPack tensor of it first: the same array [`into_array`] makes of the
/// array's tensor (writable, in the array's strides), in fewer steps, as rust-numpy's
/// `into_pyarray` does. `Err(array)` gives the array back where [`into_array`] would not take
/// its tensor (no elements, a data type NumPy has no number for, more than 64 dimensions,
/// NumPy's API not found).
pub(crate) fn array_from_ndarray<T: Element, D: Dimension>(
    py: Python<'_>,
    array: Array<T, D>,
) -> PyResult<Result<Bound<'_, PyAny>, Array<T, D>>> {
    let Some(target) = NumpyTarget::of::<T>(py) else {
        return Ok(Err(array));
    };
    if array.is_empty() || array.ndim() > HOST_MAX_NDIM {
        return Ok(Err(array));
    }
    let ndim = array.ndim();
    let mut extents = IntpBuffer::new(ndim);
    for (out, &extent) in extents.as_mut().iter_mut().zip(array.shape()) {
        // An array's extents multiply to at most `isize::MAX` (ndarray's invariant).
        *out = extent as isize;
    }
    let mut strides = IntpBuffer::new(ndim);
    for (out, &stride) in strides.as_mut().iter_mut().zip(array.strides()) {
        // Its byte offsets fit `isize` too (ndarray's invariant: the elements lie in one
        // allocation of at most `isize::MAX` bytes).
        *out = stride * size_of::<T>() as isize;
    }
    let (vector, first) = array.into_raw_vec_and_offset();
    // SAFETY: the extents and strides are the array's, whose elements all lie in its buffer
    // from element `first`, the first element's index (ndarray's invariants; an array with
    // elements has one).
    unsafe {
        array_over_vector(
            py,
            target,
            vector,
            first.unwrap_or(0),
            extents.as_mut(),
            strides.as_mut(),
        )
    }
    .map(Ok)
}

/// Returns `values` as a new row-major `numpy.ndarray` of `shape` over the vector's own
/// buffer: [`array_from_ndarray`] for a `(Vec, shape)` result. `Err(values)` where the shape
/// does not describe exactly the values (the core's export then says why) and where
/// [`into_array`] would not take their tensor.
pub(crate) fn array_from_vec<'py, T: Element>(
    py: Python<'py>,
    values: Vec<T>,
    shape: &[usize],
) -> PyResult<Result<Bound<'py, PyAny>, Vec<T>>> {
    let Some(target) = NumpyTarget::of::<T>(py) else {
        return Ok(Err(values));
    };
    let count = shape
        .iter()
        .try_fold(1usize, |count, &extent| count.checked_mul(extent));
    if values.is_empty() || count != Some(values.len()) || shape.len() > HOST_MAX_NDIM {
        return Ok(Err(values));
    }
    let mut extents = IntpBuffer::new(shape.len());
    let mut strides = IntpBuffer::new(shape.len());
    // Row-major byte strides, from the last dimension; each is at most the vector's byte
    // size, which fits `isize` (a `Vec`'s invariant), as do the extents.
    let mut stride = size_of::<T>() as isize;
    for ((out_extent, out_stride), &extent) in extents
        .as_mut()
        .iter_mut()
        .zip(strides.as_mut().iter_mut())
        .zip(shape)
        .rev()
    {
        *out_extent = extent as isize;
        *out_stride = stride;
        stride = stride.saturating_mul(extent as isize);
    }
    // SAFETY: the shape describes exactly the vector's values (checked above), row-major
    // from its first element.
    unsafe { array_over_vector(py, target, values, 0, extents.as_mut(), strides.as_mut()) }.map(Ok)
}

/// NumPy's API and the type number of an element type, where both are there.
#[derive(Clone, Copy)]
struct NumpyTarget {
    api: &'static ArrayApi,
    numpy_type: c_int,
}

impl NumpyTarget {
    fn of<T: Element>(py: Python<'_>) -> Option<Self> {
        Some(NumpyTarget {
            api: array_api(py)?,
            numpy_type: numpy_type_of(T::DTYPE)?,
        })
    }
}

/// A new, writable array over a vector's buffer, which becomes (as [`OwnedElements`]) the
/// array's base.
///
/// # Safety
///
/// `extents` and the byte `strides` (one per dimension, at most [`HOST_MAX_NDIM`]) must
/// describe elements that all lie in the vector's values, starting from index `first`.
unsafe fn array_over_vector<'py, T: Element>(
    py: Python<'py>,
    target: NumpyTarget,
    values: Vec<T>,
    first: usize,
    extents: &[isize],
    strides: &[isize],
) -> PyResult<Bound<'py, PyAny>> {
    let elements = OwnedElements::new(values);
    // SAFETY: `first` is within the buffer (the contract); the pointer is derived from the
    // one the buffer's owner keeps, and nothing borrows the buffer after it.
    let data = unsafe { elements.ptr.cast::<T>().as_ptr().add(first) }.cast::<c_void>();
    // SAFETY: the layout lies in the buffer from `data` (the contract); the buffer, which
    // nothing else owns, becomes the base below and stays where it is when moved.
    let array = unsafe {
        new_array(
            py,
            target.api,
            target.numpy_type,
            extents.as_ptr(),
            strides,
            data,
            true,
        )
    }?;
    set_base(py, target.api, array, Memory::Elements(elements))
}

/// An `npy_intp` per dimension (extents or byte strides), on the stack: up to 8 dimensions
/// (nearly every result) in a small buffer that is quick to clear.
// Both variants live on the stack for one call: the size is the point (no allocation), and
// only the small one is cleared for up to 8 dimensions.
#[allow(clippy::large_enum_variant)]
enum IntpBuffer {
    Few([isize; 8], usize),
    Many([isize; HOST_MAX_NDIM], usize),
}

impl IntpBuffer {
    fn new(ndim: usize) -> Self {
        if ndim <= 8 {
            IntpBuffer::Few([0; 8], ndim)
        } else {
            IntpBuffer::Many([0; HOST_MAX_NDIM], ndim)
        }
    }

    fn as_mut(&mut self) -> &mut [isize] {
        match self {
            IntpBuffer::Few(values, ndim) => &mut values[..*ndim],
            IntpBuffer::Many(values, ndim) => &mut values[..*ndim],
        }
    }
}

/// A new array without a base, from NumPy's `PyArray_NewFromDescr`; its reference is ours.
///
/// # Safety
///
/// `extents` must point to `strides.len()` extents (at most [`HOST_MAX_NDIM`]), which with the
/// byte `strides` describe elements of `numpy_type` that all lie in memory readable (and,
/// with `writable`, writable) from `data`, memory that the caller keeps alive for the array by
/// [`set_base`] before the array is handed out.
unsafe fn new_array<'py>(
    py: Python<'py>,
    api: &ArrayApi,
    numpy_type: c_int,
    extents: *const isize,
    strides: &[isize],
    data: *mut c_void,
    writable: bool,
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: a built-in type number (from the table), which NumPy always has a descriptor
    // for; a new reference, or NULL with an exception.
    let descr = unsafe { (api.descr_from_type)(numpy_type) };
    if descr.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: NumPy's contract: the descriptor is stolen; the extents and byte strides are
    // copied into the array; `data` and the layout are valid (this function's contract); no
    // flag asks NumPy to own or copy the data.
    let array = unsafe {
        (api.new_from_descr)(
            api.array_type,
            descr,
            strides.len() as c_int,
            extents,
            strides.as_ptr(),
            data,
            if writable { WRITEABLE } else { 0 },
            std::ptr::null_mut(),
        )
    };
    if array.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: a new array; its reference is ours. Should anything after this fail, it is
    // released without its data being read.
    Ok(unsafe { Bound::from_owned_ptr(py, array) })
}

/// Makes `memory` the base object of a new array from [`new_array`], which keeps it alive.
fn set_base<'py>(
    py: Python<'py>,
    api: &ArrayApi,
    array: Bound<'py, PyAny>,
    memory: Memory,
) -> PyResult<Bound<'py, PyAny>> {
    let base = Py::new(py, TensorMemory { _memory: memory })?;
    // SAFETY: a new array without a base; the base reference is stolen, also on failure.
    if unsafe { (api.set_base_object)(array.as_ptr(), base.into_ptr()) } != 0 {
        return Err(PyErr::fetch(py));
    }
    Ok(array)
}
