//! Results returned to a pyarrow caller (feature `arrow`): [`return_like`](crate::return_like)
//! hands a result to pyarrow through the Arrow PyCapsule interface, as a pyarrow array over the
//! result's memory.
//!
//! The result becomes an arrow-rs array (the core's Arrow bridge, which moves the tensor into
//! the array's values buffer without copying), the array its C data interface structs
//! (arrow-rs's `FFI_ArrowSchema` and `FFI_ArrowArray`), and those a pair of capsules named
//! `arrow_schema` and `arrow_array`, which an [`ArrowArrayProducer`]'s `__arrow_c_array__`
//! hands to `pyarrow.array`:
//!
//! - a 1-D result of an Arrow primitive type (int8 to int64, uint8 to uint64, float16,
//!   float32, float64) is a `pyarrow.Array` of that type over the result's memory;
//! - a result of two or more dimensions is a `pyarrow.FixedShapeTensorArray` (the canonical
//!   extension `arrow.fixed_shape_tensor`): one tensor per index of the first axis;
//! - a 1-D bool result is **copied** into a `pyarrow.BooleanArray`: Arrow stores one bit per
//!   boolean, DLPack one byte, so no Arrow array can share the result's memory;
//! - a layout Arrow cannot describe (strides other than row-major compact: reversed, stepped,
//!   column-major, broadcast) is **compacted** first (one row-major copy, under a read claim);
//!   so is a result whose first element is not aligned for its type, as Arrow requires;
//! - refused with `TypeError`: a data type Arrow lacks (complex, bfloat16, the float8 and
//!   sub-byte types, vector types), a 0-dimensional result, and bool of two or more
//!   dimensions; refused with `BufferError`: a result in memory the CPU cannot read (the Arrow
//!   C data interface describes host memory).
//!
//! The tensor is released exactly once, when the last holder lets go: the producer (until
//! pyarrow is done with it) or any array struct exported from it (until its release callback
//! runs: pyarrow's array, garbage-collected, or the capsule's destructor for a capsule no
//! consumer took). The release callback and the capsules' destructors contain panics (the
//! trampoline): none unwinds into pyarrow or CPython.

use std::ffi::{CStr, c_void};
use std::io::Write;

use arrow_array::{Array, BooleanArray};
use arrow_data::ArrayData;
use arrow_data::ffi::FFI_ArrowArray;
use arrow_schema::Field;
use arrow_schema::ffi::FFI_ArrowSchema;
use dlbridge::arrow::ArrowTensorExt;
use dlbridge::{DataType, ManagedTensor};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use pyo3::{ffi, intern};

use crate::capsule::SavedException;
use crate::claims::{Claim, compact_copy, release_import_claim};
use crate::errors::{to_py_err, tuple, type_name};
use crate::framework_table::{PYARROW, fit_for};
use crate::trampoline;

/// The name of a capsule holding an `ArrowSchema` (the Arrow PyCapsule interface).
const ARROW_SCHEMA: &CStr = c"arrow_schema";
/// The name of a capsule holding an `ArrowArray` (the Arrow PyCapsule interface).
const ARROW_ARRAY: &CStr = c"arrow_array";

/// `tensor` as a pyarrow array, for a caller whose argument `like` was one: made by
/// `pyarrow.array` from an [`ArrowArrayProducer`] (see the module docs).
pub(crate) fn pyarrow_result<'py>(
    py: Python<'py>,
    tensor: ManagedTensor,
    like: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let (field, data) = arrow_parts(py, tensor, like)?;
    let producer = Bound::new(py, ArrowArrayProducer { field, data })?;
    py.import(intern!(py, "pyarrow"))?
        .getattr(intern!(py, "array"))?
        .call1((producer,))
}

/// The field and the array data of `tensor` as Arrow holds it, or the refusal that says why
/// it cannot be (the module docs' list).
fn arrow_parts(
    py: Python<'_>,
    tensor: ManagedTensor,
    like: &Bound<'_, PyAny>,
) -> PyResult<(Field, ArrayData)> {
    let (dtype, shape) = {
        let view = tensor.view();
        let device = view.device();
        if !device.is_host_readable() {
            return Err(PyBufferError::new_err(format!(
                "cannot return a result in {device} memory like a pyarrow {}: pyarrow's arrays \
                 are host memory (the Arrow C data interface describes no device); copy the \
                 result to the host first",
                type_name(like)
            )));
        }
        (view.dtype(), view.shape().to_vec())
    };
    if shape.is_empty() {
        return Err(PyTypeError::new_err(format!(
            "cannot return a 0-dimensional result like a pyarrow {}: an Arrow array has a \
             length (a result of two or more dimensions becomes an arrow.fixed_shape_tensor \
             array, one tensor per index of its first axis); return shape (1,)",
            type_name(like)
        )));
    }
    if dtype == DataType::BOOL {
        if shape.len() != 1 {
            return Err(PyTypeError::new_err(format!(
                "cannot return a bool result of shape {} like a pyarrow {}: Arrow's booleans \
                 are bit-packed, so dlbridge copies 1-D bool results into a BooleanArray, and \
                 pyarrow's arrow.fixed_shape_tensor arrays hold no bool tensors; return uint8 \
                 values (no copy) or a 1-D result",
                tuple(&shape),
                type_name(like)
            )));
        }
        return bool_parts(py, &tensor);
    }
    let Some(size) = primitive_size(dtype) else {
        return Err(PyTypeError::new_err(format!(
            "cannot return a result of data type {dtype} like a pyarrow {}: pyarrow has no \
             {dtype} arrays (the Arrow types dlbridge hands over without a copy are int8 to \
             int64, uint8 to uint64, float16, float32 and float64; 1-D bool results are copied \
             into a BooleanArray)",
            type_name(like)
        )));
    };
    // A layout Arrow cannot describe is compacted (pyarrow's entry of the table: row-major
    // compact; it holds read-only memory, so a read-only result goes over as it is).
    let mut tensor = fit_for(py, tensor, &PYARROW)?;
    let misaligned = {
        let view = tensor.view();
        view.num_elements() != 0 && view.data_ptr().addr() % size != 0
    };
    if misaligned {
        tensor = compact_copy(
            py,
            &tensor.view(),
            "the copy of a result for pyarrow (its first element is not aligned for its type, \
             which Arrow requires)",
        )?;
    }
    // SAFETY: the tensor goes into Arrow buffers that only describe its memory to pyarrow
    // (arrow-rs's C data export reads pointers and lengths, never the elements); no Rust
    // code reaches its elements through it from here on.
    unsafe { release_import_claim(&mut tensor) };
    into_arrow(tensor).map_err(to_py_err)
}

/// The size of an element of `dtype` where Arrow has a primitive type for it (the core's
/// table, `dlbridge::arrow::arrow_type`).
fn primitive_size(dtype: DataType) -> Option<usize> {
    dlbridge::arrow::arrow_type(dtype).and(dtype.size_in_bytes())
}

/// The one place that calls the core's Arrow bridge: a compact, aligned host tensor of an
/// Arrow primitive type as a primitive array (1-D) or an `arrow.fixed_shape_tensor` column,
/// without copying; the tensor moves into the array's values buffer.
fn into_arrow(tensor: ManagedTensor) -> dlbridge::Result<(Field, ArrayData)> {
    if tensor.view().ndim() != 1 {
        let (field, array) = tensor.into_fixed_shape_tensor()?;
        return Ok((field, array.to_data()));
    }
    let data = tensor.into_arrow_array_of_its_type()?.to_data();
    Ok((Field::new("", data.data_type().clone(), false), data))
}

/// A 1-D bool result copied into an Arrow `BooleanArray` (one bit per value), read under a
/// read claim as every copy is; a byte other than 0 and 1 is refused by the core's typed
/// access.
fn bool_parts(py: Python<'_>, tensor: &ManagedTensor) -> PyResult<(Field, ArrayData)> {
    let view = tensor.view();
    let _reading = Claim::for_copy(
        py,
        &view,
        "the copy of a bool result for pyarrow (Arrow's booleans are bit-packed)",
    )?;
    let values: Vec<bool> = view.elements::<bool>().map_err(to_py_err)?.to_vec();
    let data = BooleanArray::from(values).to_data();
    Ok((Field::new("", data.data_type().clone(), false), data))
}

/// A result on its way to pyarrow: what [`return_like`](crate::return_like) hands to
/// `pyarrow.array` for a caller whose argument was a pyarrow array (feature `arrow`). It
/// implements the Arrow PyCapsule interface's `__arrow_c_array__`, which any Arrow consumer
/// reads (pyarrow 14 and later, polars, DuckDB...).
///
/// It holds the array data (and, through its values buffer, the result's tensor); each
/// `__arrow_c_array__` call exports a new pair of structs over the same buffers, and the tensor
/// is released when the producer and every exported array are released.
#[pyclass(module = "dlbridge_pyo3", name = "ArrowArrayProducer", frozen)]
pub(crate) struct ArrowArrayProducer {
    field: Field,
    data: ArrayData,
}

#[pymethods]
impl ArrowArrayProducer {
    /// The array as a pair of capsules, `arrow_schema` and `arrow_array`. A requested schema
    /// is not followed (the interface makes it best-effort): the array is offered in its own
    /// schema, which the consumer casts or refuses.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let _ = requested_schema;
        let schema = FFI_ArrowSchema::try_from(&self.field).map_err(|error| {
            PyValueError::new_err(format!("the Arrow schema of the result: {error}"))
        })?;
        let schema = boxed_capsule(py, schema, ARROW_SCHEMA, destroy_schema_capsule)?;
        let array = boxed_capsule(
            py,
            exported_array(&self.data),
            ARROW_ARRAY,
            destroy_array_capsule,
        )?;
        Ok((schema, array))
    }
}

/// What [`release_kept`] restores and keeps: arrow-rs's own release callback and private data,
/// and a clone of the array data, so that the buffers' last reference (the tensor's) is
/// dropped in this crate's callback, where a panic is contained, not in arrow-rs's.
struct Kept {
    release: unsafe extern "C" fn(*mut FFI_ArrowArray),
    private_data: *mut c_void,
    #[expect(dead_code, reason = "held for its buffers, never read")]
    data: ArrayData,
}

/// `data` as a C data interface array whose release callback is [`release_kept`].
fn exported_array(data: &ArrayData) -> FFI_ArrowArray {
    let mut array = FFI_ArrowArray::new(data);
    let Some(release) = array.release() else {
        // Never: arrow-rs sets its release callback on every array it exports.
        return array;
    };
    let kept = Box::new(Kept {
        release,
        private_data: array.private_data(),
        data: data.clone(),
    });
    // SAFETY: `release_kept` reads the `Kept` the private data now points to, puts arrow-rs's
    // callback and private data back and calls that callback, which then releases the array as
    // it would have; the `Kept` is freed there, once, since the callback is called at most once
    // (the C data interface: a released array has no callback).
    unsafe {
        array.set_private_data(Box::into_raw(kept).cast());
        array.set_release(Some(release_kept));
    }
    array
}

/// The release callback of every array this module exports: arrow-rs's own release (its
/// private data: buffer references, the children), then the array data [`Kept`], whose
/// buffers may hold the tensor's last reference, dropped with any panic contained and
/// reported on stderr (a release callback has no way to fail). Called by the consumer (from
/// any thread) or by the capsule's destructor.
///
/// # Safety
///
/// `array` is NULL or an array made by [`exported_array`] (moved by a consumer, maybe) whose
/// release has not run.
unsafe extern "C" fn release_kept(array: *mut FFI_ArrowArray) {
    let body = || {
        // SAFETY: the caller's guarantee: a live exported array, or NULL.
        let Some(array) = (unsafe { array.as_mut() }) else {
            return Ok(());
        };
        // SAFETY: set by `exported_array` to a `Kept` that only this call frees.
        let kept = unsafe { Box::from_raw(array.private_data().cast::<Kept>()) };
        // SAFETY: arrow-rs's callback and private data, as `FFI_ArrowArray::new` made them;
        // its callback frees that private data and marks the array released.
        unsafe {
            array.set_private_data(kept.private_data);
            array.set_release(Some(kept.release));
            (kept.release)(array);
        }
        drop(kept);
        Ok(())
    };
    let report = |message: &str| {
        // Not `eprintln!`, which panics when stderr is gone.
        let _ = writeln!(std::io::stderr(), "{message}");
    };
    trampoline::detached("the release of an Arrow array", body, report);
}

/// A capsule named `name` owning `value` (an Arrow C struct) in a box of its own, freed with
/// `destructor`.
fn boxed_capsule<'py, T>(
    py: Python<'py>,
    value: T,
    name: &'static CStr,
    destructor: unsafe extern "C" fn(*mut ffi::PyObject),
) -> PyResult<Bound<'py, PyCapsule>> {
    let pointer = Box::into_raw(Box::new(value));
    // SAFETY: a live, non-NULL pointer that the capsule now owns; the name is a static C
    // string, as capsule names must outlive the capsule.
    let capsule = unsafe { ffi::PyCapsule_New(pointer.cast(), name.as_ptr(), Some(destructor)) };
    if capsule.is_null() {
        // SAFETY: the capsule was not made: the box is still ours to free (releasing the
        // struct it holds).
        drop(unsafe { Box::from_raw(pointer) });
        return Err(PyErr::fetch(py));
    }
    // SAFETY: a new reference to a capsule object.
    Ok(unsafe { Bound::from_owned_ptr(py, capsule).cast_into_unchecked() })
}

/// The destructor of an `arrow_schema` capsule: see [`free_boxed`].
///
/// # Safety
///
/// CPython calls it with the GIL held, on a live capsule that is being destroyed.
unsafe extern "C" fn destroy_schema_capsule(capsule: *mut ffi::PyObject) {
    // SAFETY: forwarded; a capsule of this name was made by `boxed_capsule` over a schema.
    unsafe {
        free_boxed::<FFI_ArrowSchema>(
            capsule,
            ARROW_SCHEMA,
            "the destructor of an arrow_schema capsule",
        )
    }
}

/// The destructor of an `arrow_array` capsule: see [`free_boxed`].
///
/// # Safety
///
/// CPython calls it with the GIL held, on a live capsule that is being destroyed.
unsafe extern "C" fn destroy_array_capsule(capsule: *mut ffi::PyObject) {
    // SAFETY: forwarded; a capsule of this name was made by `boxed_capsule` over an array.
    unsafe {
        free_boxed::<FFI_ArrowArray>(
            capsule,
            ARROW_ARRAY,
            "the destructor of an arrow_array capsule",
        )
    }
}

/// Frees the struct a capsule holds, as the Arrow PyCapsule interface says: its release
/// callback is called first unless a consumer moved the struct out (and so set it to NULL),
/// by the struct's `Drop` (arrow-rs's). Keeps any exception in flight; a panic is reported as
/// unraisable, never unwound into CPython.
///
/// # Safety
///
/// The GIL is held and `capsule` is live; a capsule named `name` holds a `Box<T>` made by
/// [`boxed_capsule`].
unsafe fn free_boxed<T>(capsule: *mut ffi::PyObject, name: &'static CStr, place: &str) {
    let body = |_py: Python<'_>| -> PyResult<()> {
        let _in_flight = SavedException::fetch();
        // SAFETY: a live capsule, the GIL held; checking the name sets no exception.
        if unsafe { ffi::PyCapsule_IsValid(capsule, name.as_ptr()) } == 0 {
            // Renamed by someone else: what it holds is no longer known to be ours (leaked).
            return Ok(());
        }
        // SAFETY: the name is ours, so the pointer is the box `boxed_capsule` made, freed
        // only here (a capsule is destroyed once).
        drop(unsafe {
            Box::from_raw(ffi::PyCapsule_GetPointer(capsule, name.as_ptr()).cast::<T>())
        });
        Ok(())
    };
    // SAFETY: CPython runs capsule destructors with the thread attached.
    unsafe { trampoline::attached(place, body) }
}

#[cfg(test)]
mod tests {
    use std::ptr::NonNull;
    use std::sync::Arc;

    use dlbridge::Export;

    use super::*;

    /// A 1-D float32 tensor over an `Arc` of which the test keeps a clone: the `Arc`'s strong
    /// count says whether the tensor is alive (2) or released (1).
    fn counted(values: &[f32]) -> (Arc<[f32]>, ManagedTensor) {
        let values: Arc<[f32]> = values.into();
        let tensor = Export::new(Arc::clone(&values), &[values.len()])
            .into_versioned()
            .unwrap();
        (values, tensor)
    }

    /// The producer of `tensor`, and one `__arrow_c_array__` answer of it.
    fn exported<'py>(
        py: Python<'py>,
        tensor: ManagedTensor,
    ) -> (
        Bound<'py, ArrowArrayProducer>,
        Bound<'py, PyCapsule>,
        Bound<'py, PyCapsule>,
    ) {
        let (field, data) = into_arrow(tensor).unwrap();
        let producer = Bound::new(py, ArrowArrayProducer { field, data }).unwrap();
        let (schema, array) = producer
            .call_method0("__arrow_c_array__")
            .unwrap()
            .extract()
            .unwrap();
        (producer, schema, array)
    }

    #[test]
    fn capsules_no_consumer_took_release_the_tensor_exactly_once() {
        Python::initialize();
        Python::attach(|py| {
            let (values, tensor) = counted(&[1.0, 2.0, 3.0]);
            let (producer, schema, array) = exported(py, tensor);
            assert!(schema.is_valid_checked(Some(ARROW_SCHEMA)));
            assert!(array.is_valid_checked(Some(ARROW_ARRAY)));
            drop(producer);
            assert_eq!(Arc::strong_count(&values), 2, "the array capsule holds it");
            drop(schema);
            assert_eq!(Arc::strong_count(&values), 2);
            drop(array);
            assert_eq!(
                Arc::strong_count(&values),
                1,
                "released by the capsule's destructor"
            );
        });
    }

    #[test]
    fn a_struct_a_consumer_moved_out_is_released_by_the_consumer_only() {
        Python::initialize();
        Python::attach(|py| {
            let (values, tensor) = counted(&[1.0, 2.0, 3.0]);
            let (producer, schema, array) = exported(py, tensor);
            drop(producer);
            let pointer = array.pointer_checked(Some(ARROW_ARRAY)).unwrap();
            // SAFETY: a capsule named arrow_array holds an `FFI_ArrowArray`; moving it out
            // (the capsule's struct marked released) is a consumer's part of the interface.
            let moved = unsafe { FFI_ArrowArray::from_raw(pointer.cast().as_ptr()) };
            let pointer = schema.pointer_checked(Some(ARROW_SCHEMA)).unwrap();
            // SAFETY: as above, for the schema.
            let moved_schema = unsafe { FFI_ArrowSchema::from_raw(pointer.cast().as_ptr()) };
            assert_eq!(moved_schema.format(), "f");
            assert_eq!((moved.len(), moved.null_count(), moved.offset()), (3, 0, 0));
            // Zero-copy: the values buffer is the tensor's memory.
            assert_eq!(moved.buffer(1), values.as_ptr().cast::<u8>());
            drop((schema, array));
            assert_eq!(
                Arc::strong_count(&values),
                2,
                "the consumer's struct holds it"
            );
            drop(moved);
            assert_eq!(Arc::strong_count(&values), 1, "released by the consumer");
            drop(moved_schema);
        });
    }

    #[test]
    fn each_export_holds_the_tensor_until_its_own_release() {
        Python::initialize();
        Python::attach(|py| {
            let (values, tensor) = counted(&[1.0, 2.0]);
            let (producer, schema, array) = exported(py, tensor);
            let (schema2, array2): (Bound<'_, PyCapsule>, Bound<'_, PyCapsule>) = producer
                .call_method0("__arrow_c_array__")
                .unwrap()
                .extract()
                .unwrap();
            drop((producer, schema, array));
            assert_eq!(Arc::strong_count(&values), 2, "the second export holds it");
            drop((schema2, array2));
            assert_eq!(Arc::strong_count(&values), 1);
        });
    }

    #[test]
    fn a_panic_while_releasing_the_last_buffer_is_contained() {
        // An allocation whose `Drop` panics; its fields are dropped all the same (`_held`).
        struct Bomb {
            _held: Arc<()>,
        }
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("an owner that panics when dropped");
            }
        }
        let held = Arc::new(());
        let bomb = Arc::new(Bomb {
            _held: Arc::clone(&held),
        });
        // SAFETY: zero bytes: no memory is reached.
        let buffer =
            unsafe { arrow_buffer::Buffer::from_custom_allocation(NonNull::dangling(), 0, bomb) };
        let data = ArrayData::builder(arrow_schema::DataType::UInt8)
            .len(0)
            .add_buffer(buffer)
            .build()
            .unwrap();
        let array = exported_array(&data);
        drop(data);
        // The release callback runs (the struct's `Drop`), drops the last reference to the
        // allocation, whose panic stays inside it: the test goes on (an unwind out of an
        // `extern "C"` function would abort the process).
        drop(array);
        assert_eq!(Arc::strong_count(&held), 1, "the allocation was released");
    }
}
