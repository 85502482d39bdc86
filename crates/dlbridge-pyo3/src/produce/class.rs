//! The tensor class of a producer: the trait a PyO3 class implements ([`TensorClass`]), and
//! what the functions published on it share (the instance behind a `PyObject*`, the values
//! Python keeps pointers to).

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use dlbridge::ManagedTensor;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::{PyClass, ffi};

/// A PyO3 class whose instances are tensors: what [`publish_dlpack`](crate::publish_dlpack) needs to make it a
/// DLPack producer.
///
/// Declare it `#[pyclass(frozen)]` where it can be: an instance of a frozen class keeps the
/// tensor it exports for as long as it lives, so consumers may borrow its descriptor without
/// any allocation (the exchange table's `dltensor_from_py_object_no_sync`, which dlbridge's
/// typed arguments take). A class that is not frozen may replace its tensor in a `&mut self`
/// method while a consumer still reads the old memory, so its table leaves that function out
/// and consumers take an owned export instead, which keeps the old tensor alive (one small
/// allocation per argument).
///
/// ```
/// use std::sync::Arc;
///
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// /// A greyscale image that Python frameworks read without a copy.
/// #[pyclass(frozen)]
/// struct Image {
///     pixels: Arc<ManagedTensor>,
/// }
///
/// impl TensorClass for Image {
///     fn tensor(&self) -> &Arc<ManagedTensor> {
///         &self.pixels
///     }
///
///     fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
///         Py::new(py, Image { pixels: Arc::new(tensor) })
///     }
/// }
///
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     publish_dlpack::<Image>(py)?;
///     let pixels = Export::new(vec![0u8, 64, 128, 255], &[2, 2]).into_versioned();
///     let image = Image::new_instance(py, pixels.map_err(to_py_err)?)?.into_bound(py);
///     // Any DLPack consumer now reads it: dlbridge's own, NumPy's, PyTorch's, ...
///     let read = from_dlpack(&image, &ImportOptions::default())?;
///     assert_eq!(read.view().as_slice::<u8>().map_err(to_py_err)?, &[0, 64, 128, 255]);
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub trait TensorClass: PyClass + Sized + 'static {
    /// The instance's tensor (shared: exports keep it alive).
    fn tensor(&self) -> &Arc<ManagedTensor>;
    /// A new instance owning `tensor` (typically `Py::new(py, Self { .. })`).
    fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>>;
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

/// The instance of `T` behind a `PyObject*` handed to a published function (a method's
/// `self`, an exchange-table function's `py_object`, named `name` in the error for NULL).
///
/// # Safety
///
/// `object` must be NULL or a live Python object, borrowed for `'a`.
#[inline(always)]
pub(crate) unsafe fn instance<'a, 'py, T: TensorClass>(
    py: Python<'py>,
    object: *mut ffi::PyObject,
    name: &str,
) -> PyResult<Borrowed<'a, 'py, T>> {
    // SAFETY: by the contract; NULL is refused rather than read.
    let object = unsafe { Borrowed::from_ptr_or_opt(py, object) }
        .ok_or_else(|| PyValueError::new_err(format!("the Python object `{name}` is NULL")))?;
    Ok(object.cast::<T>()?)
}
