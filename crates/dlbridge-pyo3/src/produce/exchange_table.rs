//! The C exchange API of DLPack 1.3, producer side: publishing a function table on a PyO3
//! tensor class, so that consumers (dlbridge, tvm-ffi, ...) exchange its tensors without
//! calling `__dlpack__`.

use std::any::TypeId;
use std::ffi::{CString, c_char, c_int, c_void};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use dlbridge::ffi::{
    DLDeviceType, DLManagedTensorVersioned, DLPackDLTensorFromPyObjectNoSync, DLPackExchangeAPI,
    DLPackExchangeAPIHeader, DLPackSetError, DLTensor,
};
use dlbridge::{DataType, MAX_NDIM, ManagedTensor, Version};
use pyo3::PyClass;
use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use super::class::{TensorClass, instance, once_per_class};
use crate::capsule::DLPACK_EXCHANGE_API;
use crate::errors::to_py_err;
use crate::trampoline;
use crate::writability_hook::{
    WRITABILITY_ATTRIBUTE, WRITABILITY_CAPSULE, WritabilityHook, share_for_python, writability_code,
};

/// Tensors exported through published tables since the process started (a diagnostic: it
/// shows that a consumer took the fast path).
///
/// Here on `Image`, the class of [`TensorClass`](crate::TensorClass)'s example:
///
/// ```
/// use dlbridge_pyo3::produce::exchange_api_exports;
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
/// # #[pyclass(frozen)]
/// # struct Image {
/// #     pixels: ClassTensor,
/// # }
/// # impl TensorClass for Image {
/// #     fn tensor(&self) -> &ClassTensor {
/// #         &self.pixels
/// #     }
/// #     fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
/// #         Py::new(py, Image { pixels: ClassTensor::new(tensor) })
/// #     }
/// # }
/// # fn image<'py>(
/// #     py: Python<'py>, pixels: Vec<u8>, shape: &[usize],
/// # ) -> PyResult<Bound<'py, Image>> {
/// #     let tensor = Export::new(pixels, shape).into_versioned().map_err(to_py_err)?;
/// #     Ok(Image::new_instance(py, tensor)?.into_bound(py))
/// # }
/// # // SAFETY: one thread, so none reads the environment while it changes.
/// # unsafe { std::env::remove_var(dlbridge_pyo3::exchange::NO_EXCHANGE_API_ENV) };
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     publish_dlpack::<Image>(py)?;
///     let image = image(py, vec![1, 2, 3], &[3])?;
///     let before = exchange_api_exports();
///     from_dlpack(&image, &ImportOptions::default())?;
///     // Taken through the table, without calling `__dlpack__`.
///     assert_eq!(exchange_api_exports(), before + 1);
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub fn exchange_api_exports() -> u64 {
    EXPORTS.load(Ordering::Relaxed)
}

static EXPORTS: AtomicU64 = AtomicU64::new(0);

/// Publishes DLPack 1.3's C exchange API on `T`'s type, as the attribute
/// `__dlpack_c_exchange_api__` (a capsule named `dlpack_exchange_api` holding a
/// process-lifetime `DLPackExchangeAPI`). The functions:
///
/// - `managed_tensor_allocator`: a zero-filled CPU tensor in Rust memory shaped like the
///   prototype (other devices are refused through `SetError`);
/// - `managed_tensor_from_py_object_no_sync`: shares the instance's tensor (one allocation),
///   flagged READ_ONLY where it is handed to Python read-only (the rule of every way out:
///   flagged so by its producer, or read by other Rust handles, a share's source say);
/// - `managed_tensor_to_py_object_no_sync`: wraps an owned tensor in a new instance;
/// - `dltensor_from_py_object_no_sync`: fills a borrowed `DLTensor`, no allocation; for a
///   frozen class (`#[pyclass(frozen)]`) only, whose instances keep their tensor for life
///   (another class may replace its tensor while a consumer still reads the borrowed memory:
///   its consumers take the owned export, which keeps the tensor alive);
/// - `current_work_stream`: NULL (Rust-owned tensors enqueue no device work).
///
/// Each function runs through the crate's trampoline: a failure or a panic (with its message)
/// is a Python exception and -1 (the allocator's goes to `SetError`, as the standard asks).
///
/// Beside the table, a frozen class's type gets `__dlbridge_writability__`: a capsule named
/// `dlbridge_writability_v2` holding a [`WritabilityHook`] that describes an instance's tensor
/// as `dltensor_from_py_object_no_sync` does and says, in the same answer (one call of
/// [`TensorClass::tensor`]) and without allocating, whether that tensor may be written, which
/// the borrowed `DLTensor` cannot say. dlbridge's writable typed arguments
/// ([`crate::TensorArgMut`]) take it on the borrowed path, refusing read-only tensors and
/// saying why. The signature belongs to the name: a changed one would get a new name.
///
/// The table alone, without `__dlpack__` (`Image`: the class of
/// [`TensorClass`](crate::TensorClass)'s example):
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::exchange::exchange_api;
/// use dlbridge_pyo3::produce::publish_exchange_api;
/// use dlbridge_pyo3::writability_hook::WRITABILITY_ATTRIBUTE;
/// use pyo3::prelude::*;
/// # #[pyclass(frozen)]
/// # struct Image {
/// #     pixels: ClassTensor,
/// # }
/// # impl TensorClass for Image {
/// #     fn tensor(&self) -> &ClassTensor {
/// #         &self.pixels
/// #     }
/// #     fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
/// #         Py::new(py, Image { pixels: ClassTensor::new(tensor) })
/// #     }
/// # }
/// # fn image<'py>(
/// #     py: Python<'py>, pixels: Vec<u8>, shape: &[usize],
/// # ) -> PyResult<Bound<'py, Image>> {
/// #     let tensor = Export::new(pixels, shape).into_versioned().map_err(to_py_err)?;
/// #     Ok(Image::new_instance(py, tensor)?.into_bound(py))
/// # }
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     publish_exchange_api::<Image>(py)?;
///     assert!(py.get_type::<Image>().hasattr(WRITABILITY_ATTRIBUTE)?);
///     let image = image(py, vec![1, 2, 3], &[3])?;
///     assert!(!image.hasattr("__dlpack__")?);
///     let api = exchange_api(&image)?.expect("the table just published");
///     assert_eq!(api.managed_tensor(&image)?.view().shape(), &[3]);
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub fn publish_exchange_api<T: TensorClass>(py: Python<'_>) -> PyResult<()> {
    let table = NonNull::new(table_for::<T>().cast_mut()).expect("a leaked table");
    // SAFETY: the table is leaked, so it lives for the process as the standard requires (the
    // capsule has no destructor).
    let capsule = unsafe { PyCapsule::new_with_pointer(py, table.cast(), DLPACK_EXCHANGE_API) }?;
    let class = py.get_type::<T>();
    class.setattr("__dlpack_c_exchange_api__", capsule)?;
    if !is_frozen::<T>() {
        // The hook lends a descriptor as `dltensor_from_py_object_no_sync` does, which only
        // an instance that keeps its tensor for life may (see `table_for`).
        return Ok(());
    }
    let hook: WritabilityHook = writability_of::<T>;
    let hook = NonNull::new(hook as *mut c_void).expect("a function pointer");
    // SAFETY: the capsule holds a function pointer (as data, as capsules hold pointers), valid
    // for the process (the capsule has no destructor).
    let capsule = unsafe { PyCapsule::new_with_pointer(py, hook, WRITABILITY_CAPSULE) }?;
    class.setattr(WRITABILITY_ATTRIBUTE, capsule)
}

/// The [`WritabilityHook`] of `T` (a frozen class): the borrowed descriptor of the instance's
/// tensor and whether it is handed to Python writable
/// ([`crate::writability_hook::writability_for_python`]), both of the tensor that one call of
/// [`TensorClass::tensor`] returned.
///
/// # Safety
///
/// `object` is NULL or a live object, `out_tensor` NULL or a `DLTensor` to fill, and
/// `out_writability` NULL or a slot to write (the hook's contract); the GIL is held (else it
/// is taken).
unsafe extern "C" fn writability_of<T: TensorClass>(
    object: *mut ffi::PyObject,
    out_tensor: *mut DLTensor,
    out_writability: *mut u32,
) -> c_int {
    trampoline::attaching("the writability hook", |py| {
        output_slot(out_tensor, "out_tensor")?;
        output_slot(out_writability, "out_writability")?;
        // SAFETY: the caller passes a live object (NULL is refused).
        let instance = unsafe { instance::<T>(py, object, "object") }?;
        let borrowed = instance.borrow();
        // One answer: the descriptor and the writability are of this one tensor.
        let tensor = borrowed.tensor().shared();
        let described = borrowed_descriptor(tensor);
        let code = writability_code(tensor);
        // SAFETY: the caller's descriptor and slot (both checked non-NULL). The descriptor's
        // shape and strides point into the instance's tensor, which the instance of a frozen
        // class (the only ones the hook is published for) keeps for its life.
        unsafe {
            out_tensor.write(described);
            out_writability.write(code);
        }
        Ok(0)
    })
}

/// A `DLTensor` describing `tensor`, borrowed: its shape and strides point into `tensor`.
fn borrowed_descriptor(tensor: &ManagedTensor) -> DLTensor {
    let view = tensor.view();
    DLTensor {
        data: view.data_ptr(),
        device: view.device(),
        ndim: view.ndim() as i32,
        dtype: view.dtype(),
        shape: view.shape().as_ptr().cast_mut(),
        strides: view.strides().as_ptr().cast_mut(),
        byte_offset: 0,
    }
}

/// Whether `T` is a frozen class (`#[pyclass(frozen)]`): no `&mut self` reaches an instance,
/// so the tensor [`TensorClass::tensor`] returns stays in the instance for as long as the
/// instance lives.
fn is_frozen<T: TensorClass>() -> bool {
    TypeId::of::<<T as PyClass>::Frozen>() == TypeId::of::<pyo3::pyclass::boolean_struct::True>()
}

/// The table of `T`. `dltensor_from_py_object_no_sync` is in it for frozen classes only: its
/// descriptor borrows the instance's tensor, and a consumer that reads the memory after
/// control returned to Python (dlbridge's own typed arguments, while a kernel runs with the
/// GIL released) holds only the object. A class with `&mut self` methods may replace its
/// tensor meanwhile, which frees the memory the consumer reads; without the function,
/// consumers take the owned export (`managed_tensor_from_py_object_no_sync`), which keeps the
/// tensor alive.
fn table_for<T: TensorClass>() -> *const DLPackExchangeAPI {
    let borrowed: DLPackDLTensorFromPyObjectNoSync = if is_frozen::<T>() {
        Some(dltensor_from_py_object::<T>)
    } else {
        None
    };
    once_per_class::<T, _>(|| DLPackExchangeAPI {
        header: DLPackExchangeAPIHeader {
            version: Version::CURRENT,
            prev_api: std::ptr::null_mut(),
        },
        managed_tensor_allocator: Some(allocate),
        managed_tensor_from_py_object_no_sync: Some(from_py_object::<T>),
        managed_tensor_to_py_object_no_sync: Some(to_py_object::<T>),
        dltensor_from_py_object_no_sync: borrowed,
        current_work_stream: Some(current_work_stream),
    })
}

/// Refuses a NULL output slot (a caller's bug), named as the standard's header names it.
fn output_slot<P>(out: *mut P, name: &str) -> PyResult<()> {
    if out.is_null() {
        return Err(PyValueError::new_err(format!(
            "the output pointer `{name}` is NULL"
        )));
    }
    Ok(())
}

/// `managed_tensor_from_py_object_no_sync` of `T`'s table: shares the instance's tensor.
///
/// # Safety
///
/// The standard's contract: `object` is NULL or a live object, `out` NULL or a slot for the
/// owned tensor; the GIL is held (else it is taken).
unsafe extern "C" fn from_py_object<T: TensorClass>(
    object: *mut c_void,
    out: *mut *mut DLManagedTensorVersioned,
) -> c_int {
    trampoline::attaching(
        "the DLPack exchange API's managed_tensor_from_py_object_no_sync",
        |py| {
            output_slot(out, "out")?;
            // SAFETY: the consumer passes a live object (NULL is refused).
            let instance = unsafe { instance::<T>(py, object.cast(), "py_object") }?;
            // One answer: the memory and its flags are of this one tensor.
            let borrowed = instance.borrow();
            let raw = share_for_python(borrowed.tensor().shared(), false)?
                .versioned()
                .expect("shared tensors are versioned");
            EXPORTS.fetch_add(1, Ordering::Relaxed);
            // SAFETY: `out` is the consumer's slot for the owned tensor (checked non-NULL).
            unsafe { out.write(raw) };
            Ok(0)
        },
    )
}

/// `managed_tensor_to_py_object_no_sync` of `T`'s table: a new instance owning `tensor`.
///
/// # Safety
///
/// The standard's contract: `tensor` is NULL or an owned tensor, whose ownership passes to
/// this function (on failure too); `out` is NULL or a slot for a new reference; the GIL is
/// held (else it is taken).
unsafe extern "C" fn to_py_object<T: TensorClass>(
    tensor: *mut DLManagedTensorVersioned,
    out: *mut *mut c_void,
) -> c_int {
    trampoline::attaching(
        "the DLPack exchange API's managed_tensor_to_py_object_no_sync",
        |py| {
            // SAFETY: the caller hands over an owned tensor (ownership is stolen, on success and
            // on failure alike: a rejected tensor is deleted, NULL is refused).
            let tensor = unsafe { ManagedTensor::from_raw_versioned(tensor) }.map_err(to_py_err)?;
            // Checked after taking the tensor, which is then released with the error.
            output_slot(out, "out_py_object")?;
            let object = T::new_instance(py, tensor)?;
            // SAFETY: `out` is the caller's slot for a new reference (checked non-NULL).
            unsafe { out.write(object.into_ptr().cast()) };
            Ok(0)
        },
    )
}

/// `dltensor_from_py_object_no_sync` of `T`'s table: describes the instance's tensor in a
/// borrowed `DLTensor`.
///
/// # Safety
///
/// The standard's contract: `object` is NULL or a live object, `out` NULL or a `DLTensor` to
/// fill; the GIL is held (else it is taken).
unsafe extern "C" fn dltensor_from_py_object<T: TensorClass>(
    object: *mut c_void,
    out: *mut DLTensor,
) -> c_int {
    trampoline::attaching(
        "the DLPack exchange API's dltensor_from_py_object_no_sync",
        |py| {
            output_slot(out, "out")?;
            // SAFETY: the consumer passes a live object (NULL is refused).
            let instance = unsafe { instance::<T>(py, object.cast(), "py_object") }?;
            // The shape and strides point into the instance's tensor, which the object keeps
            // alive at least until control returns to the caller, as the standard requires.
            let described = borrowed_descriptor(instance.borrow().tensor().shared());
            // SAFETY: `out` is the caller's DLTensor to fill (checked non-NULL).
            unsafe { out.write(described) };
            Ok(0)
        },
    )
}

/// `current_work_stream` of every table: NULL, since Rust-owned tensors enqueue no device
/// work (a NULL output slot is ignored).
///
/// # Safety
///
/// `out_current_stream` is NULL or a slot for the stream.
unsafe extern "C" fn current_work_stream(
    _device_type: DLDeviceType,
    _device_id: i32,
    out_current_stream: *mut *mut c_void,
) -> c_int {
    trampoline::attaching("the DLPack exchange API's current_work_stream", |_py| {
        if !out_current_stream.is_null() {
            // SAFETY: the caller's slot for the stream.
            unsafe { out_current_stream.write(std::ptr::null_mut()) };
        }
        Ok(0)
    })
}

/// `managed_tensor_allocator` of every table: a zero-filled tensor in host memory shaped
/// like the prototype. Touches no Python: failures go to `set_error`.
///
/// # Safety
///
/// The standard's contract: `prototype` is NULL or a `DLTensor` whose `ndim` values of
/// `shape` are readable, `out` NULL or a slot for the owned tensor; `set_error`, if any,
/// accepts `error_ctx`.
unsafe extern "C" fn allocate(
    prototype: *mut DLTensor,
    out: *mut *mut DLManagedTensorVersioned,
    error_ctx: *mut c_void,
    set_error: DLPackSetError,
) -> c_int {
    trampoline::detached(
        "the DLPack exchange API's managed_tensor_allocator",
        || {
            if prototype.is_null() || out.is_null() {
                return Err("NULL prototype or output pointer".to_owned());
            }
            // SAFETY: a caller-provided prototype; only dtype, ndim, shape and device are
            // read, the shape for `ndim` values (checked in range and non-NULL first).
            let tensor = unsafe { zeros_like(&*prototype) }?;
            // SAFETY: checked non-NULL above; the caller's slot for the owned tensor.
            unsafe { out.write(tensor.into_raw().versioned().expect("zeros are versioned")) };
            Ok(())
        },
        |message| report(error_ctx, set_error, message),
    )
}

/// A zero-filled tensor in host memory with `prototype`'s data type and shape.
///
/// # Safety
///
/// `prototype.shape` holds `prototype.ndim` readable values when it is non-NULL and `ndim`
/// is in range.
unsafe fn zeros_like(prototype: &DLTensor) -> Result<ManagedTensor, String> {
    if !prototype.device.is_host_readable() {
        return Err(format!(
            "dlbridge allocates in host memory only, not on {}",
            prototype.device
        ));
    }
    let ndim = prototype.ndim;
    if !(0..=MAX_NDIM).contains(&ndim) {
        return Err(format!("prototype ndim = {ndim} is out of range"));
    }
    let shape: &[i64] = if ndim == 0 {
        &[]
    } else if prototype.shape.is_null() {
        return Err(format!("prototype shape is NULL with ndim = {ndim}"));
    } else {
        // SAFETY: a caller-provided shape of `ndim` values (the contract).
        unsafe { std::slice::from_raw_parts(prototype.shape, ndim as usize) }
    };
    let extents = shape
        .iter()
        .map(|&extent| usize::try_from(extent).map_err(|_| format!("negative extent {extent}")))
        .collect::<Result<Vec<usize>, String>>()?;
    let dtype: DataType = prototype.dtype;
    ManagedTensor::zeros(dtype, &extents).map_err(|error| error.to_string())
}

/// Reports an allocator failure through `SetError`, as the standard asks.
fn report(error_ctx: *mut c_void, set_error: DLPackSetError, message: &str) {
    if let Some(set_error) = set_error {
        let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
        // SAFETY: the caller's callback with its own context; both strings outlive the call.
        unsafe {
            set_error(
                error_ctx,
                c"BufferError".as_ptr() as *const c_char,
                message.as_ptr(),
            )
        };
    }
}
