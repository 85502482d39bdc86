//! The C exchange API of DLPack 1.3, producer side: publishing a function table on a PyO3
//! tensor class, so that consumers (dlbridge, tvm-ffi, ...) exchange its tensors without
//! calling `__dlpack__`.

use std::any::TypeId;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use dlbridge::ffi::{
    DLDeviceType, DLManagedTensorVersioned, DLPackExchangeAPI, DLPackExchangeAPIHeader,
    DLPackSetError, DLTensor,
};
use dlbridge::{DataType, ManagedTensor, Version, Writability, MAX_NDIM};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyType};
use pyo3::{ffi, PyClass};

use crate::exchange::DLPACK_EXCHANGE_API;
use crate::to_py_err;

/// A PyO3 class whose instances are tensors: what its type needs to publish the exchange API
/// with [`publish_exchange_api`].
pub trait TensorClass: PyClass + Sized + 'static {
    /// The instance's tensor (shared: exports keep it alive).
    fn tensor(&self) -> &Arc<ManagedTensor>;
    /// A new instance owning `tensor` (typically `Py::new(py, Self { .. })`).
    fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>>;
}

/// Tensors exported through published tables since the process started (a diagnostic: it
/// shows that a consumer took the fast path).
pub fn exchange_api_exports() -> u64 {
    EXPORTS.load(Ordering::Relaxed)
}

static EXPORTS: AtomicU64 = AtomicU64::new(0);

/// Makes `T` a complete DLPack producer: publishes `__dlpack__` and `__dlpack_device__`
/// ([`publish_dlpack_methods`](crate::publish_dlpack_methods)) and the C exchange API
/// ([`publish_exchange_api`]) on its type. Call it once, after the class is added to its module.
pub fn publish_dlpack<T: TensorClass>(py: Python<'_>) -> PyResult<()> {
    crate::publish_dlpack_methods::<T>(py)?;
    publish_exchange_api::<T>(py)
}

/// Publishes DLPack 1.3's C exchange API on `T`'s type, as the attribute
/// `__dlpack_c_exchange_api__` (a capsule named `dlpack_exchange_api` holding a
/// process-lifetime `DLPackExchangeAPI`). All five functions are implemented:
///
/// - `managed_tensor_allocator`: a zero-filled CPU tensor in Rust memory shaped like the
///   prototype (other devices are refused through `SetError`);
/// - `managed_tensor_from_py_object_no_sync`: shares the instance's tensor (one allocation);
/// - `managed_tensor_to_py_object_no_sync`: wraps an owned tensor in a new instance;
/// - `dltensor_from_py_object_no_sync`: fills a borrowed `DLTensor`, no allocation;
/// - `current_work_stream`: NULL (Rust-owned tensors enqueue no device work).
///
/// Each function catches panics and reports failures as a Python exception and -1.
///
/// Beside the table, the type gets `__dlbridge_writability__`: a capsule named
/// `dlbridge_writability_v1` holding a [`WritabilityHook`] that says whether an instance's
/// tensor may be written ([`dlbridge::Writability`]) without allocating, which the borrowed
/// `DLTensor` of `dltensor_from_py_object_no_sync` cannot say. dlbridge's writable typed
/// arguments ([`crate::TensorArgMut`]) use it to refuse read-only tensors on the borrowed
/// path, saying why. The signature belongs to the name: a changed one would get a new name.
pub fn publish_exchange_api<T: TensorClass>(py: Python<'_>) -> PyResult<()> {
    let table = NonNull::new(table_for::<T>().cast_mut()).expect("a leaked table");
    // SAFETY: the table is leaked, so it lives for the process as the standard requires (the
    // capsule has no destructor).
    let capsule = unsafe { PyCapsule::new_with_pointer(py, table.cast(), DLPACK_EXCHANGE_API) }?;
    let class = py.get_type::<T>();
    class.setattr("__dlpack_c_exchange_api__", capsule)?;
    let hook: WritabilityHook = writability_of::<T>;
    let hook = NonNull::new(hook as *mut c_void).expect("a function pointer");
    // SAFETY: the capsule holds a function pointer (as data, as capsules hold pointers), valid
    // for the process (the capsule has no destructor).
    let capsule = unsafe { PyCapsule::new_with_pointer(py, hook, WRITABILITY_CAPSULE) }?;
    class.setattr(WRITABILITY_ATTRIBUTE, capsule)
}

/// The type attribute holding a class's [`WritabilityHook`] capsule.
pub const WRITABILITY_ATTRIBUTE: &str = "__dlbridge_writability__";
/// The name of the capsule holding a [`WritabilityHook`].
pub const WRITABILITY_CAPSULE: &CStr = c"dlbridge_writability_v1";

/// `int hook(PyObject *object, uint32_t *out_writability)`: writes whether `object`'s tensor
/// may be written (0: writable, 1: flagged READ_ONLY, 2: unknown, a legacy import; the codes
/// of [`dlbridge::Writability`]) and returns 0, or returns -1 with a Python exception set.
/// Called with the GIL held; never allocates.
pub type WritabilityHook =
    unsafe extern "C" fn(object: *mut ffi::PyObject, out_writability: *mut u32) -> c_int;

/// The code of a [`Writability`] in a [`WritabilityHook`]'s answer.
fn writability_code(writability: Writability) -> u32 {
    match writability {
        Writability::Writable => 0,
        Writability::ReadOnly => 1,
        Writability::Unknown => 2,
    }
}

/// The [`Writability`] of a [`WritabilityHook`]'s answer (an unknown code: read-only).
pub(crate) fn writability_from_code(code: u32) -> Writability {
    match code {
        0 => Writability::Writable,
        2 => Writability::Unknown,
        _ => Writability::ReadOnly,
    }
}

/// The writability hook a type publishes ([`WRITABILITY_ATTRIBUTE`]), if it has one.
pub(crate) fn writability_hook(kind: &Bound<'_, PyType>) -> PyResult<Option<WritabilityHook>> {
    let Some(capsule) = kind.getattr_opt(WRITABILITY_ATTRIBUTE)? else {
        return Ok(None);
    };
    let Ok(capsule) = capsule.cast_into::<PyCapsule>() else {
        return Ok(None);
    };
    // A capsule of another name is not the hook.
    let Ok(pointer) = capsule.pointer_checked(Some(WRITABILITY_CAPSULE)) else {
        return Ok(None);
    };
    // SAFETY: a capsule of this name holds a `WritabilityHook` (the name's contract, kept by
    // `publish_exchange_api`), valid for the process.
    Ok(Some(unsafe {
        std::mem::transmute::<*mut c_void, WritabilityHook>(pointer.as_ptr())
    }))
}

unsafe extern "C" fn writability_of<T: TensorClass>(
    object: *mut ffi::PyObject,
    out_writability: *mut u32,
) -> c_int {
    with_gil_held(|py| {
        output_slot(out_writability, "out_writability")?;
        // SAFETY: the caller passes a live object (NULL is refused).
        let instance = unsafe { instance::<T>(py, object.cast()) }?;
        let code = writability_code(instance.borrow().tensor().view().writability());
        // SAFETY: `out_writability` is the caller's slot (checked non-NULL).
        unsafe { out_writability.write(code) };
        Ok(())
    })
}

fn table_for<T: TensorClass>() -> *const DLPackExchangeAPI {
    once_per_class::<T, _>(|| DLPackExchangeAPI {
        header: DLPackExchangeAPIHeader {
            version: Version::CURRENT,
            prev_api: std::ptr::null_mut(),
        },
        managed_tensor_allocator: Some(allocate),
        managed_tensor_from_py_object_no_sync: Some(from_py_object::<T>),
        managed_tensor_to_py_object_no_sync: Some(to_py_object::<T>),
        dltensor_from_py_object_no_sync: Some(dltensor_from_py_object::<T>),
        current_work_stream: Some(current_work_stream),
    })
}

/// A value that Python keeps pointers to for the life of the process (an exchange table, a
/// method definition), made on the first call for the class `T` and returned again on every
/// later one: publishing a class twice reuses it, so the process holds one per class and
/// kind of value, however often a module is imported or a class re-published.
pub(crate) fn once_per_class<T: 'static, V: 'static>(make: impl FnOnce() -> V) -> *mut V {
    // Addresses rather than pointers: the values hold raw pointers, which are not `Send`.
    static VALUES: OnceLock<Mutex<HashMap<(TypeId, TypeId), usize>>> = OnceLock::new();
    let values = VALUES.get_or_init(Default::default);
    let mut values = values
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let address = *values
        .entry((TypeId::of::<T>(), TypeId::of::<V>()))
        .or_insert_with(|| Box::into_raw(Box::new(make())) as usize);
    address as *mut V
}

/// Runs `body` for a table function: a Python error or a panic becomes a Python exception
/// and -1. The standard has consumers call with the GIL held; attaching (a no-op then) also
/// keeps a consumer that forgot it from corrupting the interpreter.
fn with_gil_held(body: impl FnOnce(Python<'_>) -> PyResult<()>) -> c_int {
    Python::attach(|py| with_python(py, body))
}

fn with_python(py: Python<'_>, body: impl FnOnce(Python<'_>) -> PyResult<()>) -> c_int {
    match catch_unwind(AssertUnwindSafe(|| body(py))) {
        Ok(Ok(())) => 0,
        Ok(Err(error)) => {
            error.restore(py);
            -1
        }
        Err(_) => {
            PyRuntimeError::new_err("dlbridge: a panic in a DLPack exchange API function")
                .restore(py);
            -1
        }
    }
}

/// The instance behind a `PyObject*` handed to a table function.
///
/// # Safety
///
/// `object` must be NULL or a live Python object, borrowed for `'py`.
unsafe fn instance<'py, T: TensorClass>(
    py: Python<'py>,
    object: *mut c_void,
) -> PyResult<Bound<'py, T>> {
    // SAFETY: by the contract; NULL is refused rather than read.
    let object = unsafe { Bound::from_borrowed_ptr_or_opt(py, object.cast()) }
        .ok_or_else(|| PyValueError::new_err("the Python object `py_object` is NULL"))?;
    Ok(object.cast_into::<T>()?)
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

unsafe extern "C" fn from_py_object<T: TensorClass>(
    object: *mut c_void,
    out: *mut *mut DLManagedTensorVersioned,
) -> c_int {
    with_gil_held(|py| {
        output_slot(out, "out")?;
        // SAFETY: the consumer passes a live object (NULL is refused).
        let instance = unsafe { instance::<T>(py, object) }?;
        let tensor = Arc::clone(instance.borrow().tensor());
        let shared = tensor.share_versioned().map_err(to_py_err)?;
        let raw = shared
            .into_raw()
            .versioned()
            .expect("shared tensors are versioned");
        EXPORTS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `out` is the consumer's slot for the owned tensor (checked non-NULL).
        unsafe { out.write(raw) };
        Ok(())
    })
}

unsafe extern "C" fn to_py_object<T: TensorClass>(
    tensor: *mut DLManagedTensorVersioned,
    out: *mut *mut c_void,
) -> c_int {
    with_gil_held(|py| {
        // SAFETY: the caller hands over an owned tensor (ownership is stolen, on success and
        // on failure alike: a rejected tensor is deleted, NULL is refused).
        let tensor = unsafe { ManagedTensor::from_raw_versioned(tensor) }.map_err(to_py_err)?;
        // Checked after taking the tensor, which is then released with the error.
        output_slot(out, "out_py_object")?;
        let object = T::new_instance(py, tensor)?;
        // SAFETY: `out` is the caller's slot for a new reference (checked non-NULL).
        unsafe { out.write(object.into_ptr().cast()) };
        Ok(())
    })
}

unsafe extern "C" fn dltensor_from_py_object<T: TensorClass>(
    object: *mut c_void,
    out: *mut DLTensor,
) -> c_int {
    with_gil_held(|py| {
        output_slot(out, "out")?;
        // SAFETY: the consumer passes a live object (NULL is refused).
        let instance = unsafe { instance::<T>(py, object) }?;
        let borrowed = instance.borrow();
        let view = borrowed.tensor().view();
        // The shape and strides point into the instance's tensor, which the object keeps
        // alive at least until control returns to the caller, as the standard requires.
        let described = DLTensor {
            data: view.data_ptr(),
            device: view.device(),
            ndim: view.ndim() as i32,
            dtype: view.dtype(),
            shape: view.shape().as_ptr().cast_mut(),
            strides: view.strides().as_ptr().cast_mut(),
            byte_offset: 0,
        };
        // SAFETY: `out` is the caller's DLTensor to fill (checked non-NULL).
        unsafe { out.write(described) };
        Ok(())
    })
}

unsafe extern "C" fn current_work_stream(
    _device_type: DLDeviceType,
    _device_id: i32,
    out_current_stream: *mut *mut c_void,
) -> c_int {
    if !out_current_stream.is_null() {
        // SAFETY: the caller's slot for the stream; Rust-owned tensors have none.
        unsafe { out_current_stream.write(std::ptr::null_mut()) };
    }
    0
}

unsafe extern "C" fn allocate(
    prototype: *mut DLTensor,
    out: *mut *mut DLManagedTensorVersioned,
    error_ctx: *mut c_void,
    set_error: DLPackSetError,
) -> c_int {
    let result = catch_unwind(AssertUnwindSafe(
        || -> Result<*mut DLManagedTensorVersioned, String> {
            if prototype.is_null() || out.is_null() {
                return Err("NULL prototype or output pointer".to_owned());
            }
            // SAFETY: a caller-provided prototype; only dtype, ndim, shape and device are read.
            let prototype = unsafe { &*prototype };
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
                // SAFETY: a caller-provided shape of `ndim` values.
                unsafe { std::slice::from_raw_parts(prototype.shape, ndim as usize) }
            };
            let extents = shape
                .iter()
                .map(|&extent| {
                    usize::try_from(extent).map_err(|_| format!("negative extent {extent}"))
                })
                .collect::<Result<Vec<usize>, String>>()?;
            let dtype: DataType = prototype.dtype;
            let tensor = ManagedTensor::zeros(dtype, &extents).map_err(|e| e.to_string())?;
            Ok(tensor.into_raw().versioned().expect("zeros are versioned"))
        },
    ));
    match result {
        Ok(Ok(tensor)) => {
            // SAFETY: checked non-NULL above.
            unsafe { out.write(tensor) };
            0
        }
        Ok(Err(message)) => report(error_ctx, set_error, &message),
        Err(_) => report(error_ctx, set_error, "dlbridge: a panic in the allocator"),
    }
}

/// Reports an allocator failure through `SetError`, as the standard asks.
fn report(error_ctx: *mut c_void, set_error: DLPackSetError, message: &str) -> c_int {
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
    -1
}
