//! Production: making a PyO3 class of one's own a complete DLPack producer, and returning
//! Rust-owned tensors to Python.
//!
//! - [`class_tensor`]: the tensor a class holds ([`ClassTensor`](crate::ClassTensor)), whose
//!   elements Rust code reads under a read claim in the aliasing registry;
//! - [`class`]: the [`TensorClass`] trait a class implements, and what the functions
//!   published on it share; this module's [`publish_dlpack`] publishes everything at once;
//! - [`methods`]: `__dlpack__` and `__dlpack_device__`, by the rules of [`export_capsule`];
//! - [`exchange_table`]: DLPack 1.3's C exchange API and dlbridge's writability hook;
//! - `pyarrow` (feature `arrow`): results handed to pyarrow through the Arrow PyCapsule
//!   interface (`__arrow_c_array__`), as pyarrow arrays over the result's memory;
//! - [`returning`]: results handed to the caller's framework ([`return_like`]);
//! - `buffer`: the buffer protocol served over a tensor
//!   ([`get_buffer`](crate::get_buffer)), for classes of one's own and for results returned
//!   like buffer-protocol inputs.
//!
//! Every way out hands a tensor to Python writable or not by one rule,
//! `writability_hook::writability_for_python`: a tensor that other Rust handles read goes to
//! Python read-only (its shares and results are made so by `share_for_python` and
//! `owned_for_python` there).
//!
//! The produce side never imports the consume side (`explain`, `exchange`, `work_stream`,
//! [`crate::consume`], [`crate::args`], `libraries`): a producer's answers do not depend on how
//! dlbridge reads other producers. `lib.rs` lists it before them and declares the rule, which
//! `scripts/module-layers.py` checks; what both sides need (the `stream=` values, the type
//! lookup with its exchange table, the capsules' names) lies beneath both.

#[cfg(any(Py_3_11, not(Py_LIMITED_API)))]
pub(crate) mod buffer;
pub(crate) mod class_tensor;
pub(crate) mod class;
pub(crate) mod exchange_table;
pub(crate) mod methods;
#[cfg(feature = "arrow")]
pub(crate) mod pyarrow;
pub(crate) mod returning;

use pyo3::prelude::*;

use self::class::TensorClass;
#[cfg(doc)]
use self::{methods::export_capsule, returning::return_like};

/// Makes `T` a complete DLPack producer: publishes `__dlpack__` and `__dlpack_device__`
/// ([`publish_dlpack_methods`](crate::publish_dlpack_methods)) and the C exchange API
/// ([`publish_exchange_api`](crate::publish_exchange_api)) on its type. Call it once, after
/// the class is added to its module.
///
/// In the module's initialization (`Image`: the class of
/// [`TensorClass`](crate::TensorClass)'s example):
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
/// use pyo3::types::IntoPyDict;
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
///
/// #[pymodule]
/// fn imaging(module: &Bound<'_, PyModule>) -> PyResult<()> {
///     module.add_class::<Image>()?;
///     publish_dlpack::<Image>(module.py())
/// }
///
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     let imaging = pyo3::wrap_pymodule!(imaging)(py).into_bound(py);
///     let image = image(py, vec![1, 2, 3, 4], &[2, 2])?;
///     let locals = [("imaging", imaging.as_any()), ("image", image.as_any())].into_py_dict(py)?;
///     py.run(c"
/// assert isinstance(image, imaging.Image)
/// assert image.__dlpack_device__() == (1, 0)
/// assert 'dltensor_versioned' in repr(image.__dlpack__(max_version=(1, 3)))
/// assert hasattr(imaging.Image, '__dlpack_c_exchange_api__')
/// ", None, Some(&locals))?;
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub fn publish_dlpack<T: TensorClass>(py: Python<'_>) -> PyResult<()> {
    methods::publish_dlpack_methods::<T>(py)?;
    exchange_table::publish_exchange_api::<T>(py)
}
