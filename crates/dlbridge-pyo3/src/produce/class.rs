//! The tensor class of a producer: the trait a PyO3 class implements ([`TensorClass`]), and
//! what the functions published on it share (the instance behind a `PyObject*`, the values
//! Python keeps pointers to).

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use dlbridge::ManagedTensor;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::{PyClass, ffi};

use super::class_tensor::ClassTensor;

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
/// The instance holds its tensor as a [`ClassTensor`]: the exports share it with Python, and
/// the class's own Rust code reads its elements under a read claim
/// ([`ClassTensor::read`]), in the registry where kernels' typed arguments claim the memory
/// they reach. A kernel `k(x: TensorArgMut<u8, Ix1>, image: PyRef<Image>)` called as
/// `k(img, img)` writes the memory through `x` while `image` reads it: the read is refused
/// (`ValueError`) rather than a `&[u8]` aliasing the argument's `&mut [u8]`.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// /// A greyscale image that Python frameworks read without a copy.
/// #[pyclass(frozen)]
/// struct Image {
///     pixels: ClassTensor,
/// }
///
/// impl TensorClass for Image {
///     fn tensor(&self) -> &ClassTensor {
///         &self.pixels
///     }
///
///     fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
///         Py::new(py, Image { pixels: ClassTensor::new(tensor) })
///     }
/// }
///
/// #[pymethods]
/// impl Image {
///     /// The mean brightness: the elements are read under a read claim.
///     fn mean(&self, py: Python<'_>) -> PyResult<f64> {
///         let pixels = self.pixels.read_for(py, "Image.mean()")?;
///         let values: &[u8] = pixels.view().as_slice().map_err(to_py_err)?;
///         let total: f64 = values.iter().map(|&value| f64::from(value)).sum();
///         Ok(total / values.len().max(1) as f64)
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
///     assert_eq!(image.get().mean(py)?, 111.75);
///     assert_eq!(image.get().tensor().shape(), &[2, 2]);
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub trait TensorClass: PyClass + Sized + 'static {
    /// The instance's tensor: its descriptor, and its elements under a read claim
    /// ([`ClassTensor::read`]). The exports share it with Python.
    fn tensor(&self) -> &ClassTensor;
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
