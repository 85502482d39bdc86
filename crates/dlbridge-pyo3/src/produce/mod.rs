//! Producing: a PyO3 class of one's own as a complete DLPack producer, and the protocol's
//! producer side piece by piece, for a class that publishes its methods itself.
//!
//! A kernel author needs only what the crate's root has: [`TensorClass`]
//! with [`ClassTensor`](crate::ClassTensor), [`publish_dlpack`] (which publishes everything
//! below at once), and [`return_like`] for results. Here are the parts:
//!
//! - [`publish_dlpack_methods`]: `__dlpack__` and `__dlpack_device__` on the class, by the
//!   rules of [`export_capsule`] (every keyword of the protocol: [`ExportRequest`]);
//! - [`publish_exchange_api`]: DLPack 1.3's C exchange table on the class (with dlbridge's
//!   writability hook, [`crate::writability_hook`]); [`exchange_api_exports`] counts its
//!   exports;
//! - [`get_buffer`], [`get_byte_buffer`], [`release_buffer`], [`buffer_format`]: the buffer
//!   protocol served over a tensor, for a class's `__getbuffer__`;
//! - [`TensorProducer`]: the one-shot producer `return_like` hands a framework whose only way
//!   in is `from_dlpack`.
//!
//! Every way out hands a tensor to Python writable or not by one rule: a tensor that other
//! Rust handles read goes to Python read-only.

// Inside: `class_tensor` (the tensor a class holds, read under a read claim in the aliasing
// registry), `class` (the trait and what the published functions share), `methods`,
// `exchange_table`, `pyarrow` (feature `arrow`: results to pyarrow through the Arrow
// PyCapsule interface), `returning`, `buffer`. Every way out follows
// `writability_hook::writability_for_python` (`share_for_python` and `owned_for_python`).
//
// The produce side never imports the consume side (`explain`, `exchange`, `streams::work`,
// `consume`, `args`, `libraries`): a producer's answers do not depend on how dlbridge reads
// other producers. `lib.rs` lists it before them and declares the rule, which
// `scripts/module-layers.py` checks; what both sides need (the `stream=` values, the type
// lookup with its exchange table, the capsules' names) lies beneath both.

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

#[cfg(any(Py_3_11, not(Py_LIMITED_API)))]
pub use self::buffer::{get_buffer, get_byte_buffer, release_buffer};
pub use self::exchange_table::{exchange_api_exports, publish_exchange_api};
pub use self::methods::{ExportRequest, export_capsule, publish_dlpack_methods};
pub use self::returning::TensorProducer;
#[cfg(doc)]
use self::returning::return_like;
pub use crate::host::formats::buffer_format;

/// Makes `T` a complete DLPack producer: publishes `__dlpack__` and `__dlpack_device__`
/// ([`publish_dlpack_methods`]) and the C exchange API
/// ([`publish_exchange_api`]) on its type. Call it once, after
/// the class is added to its module.
///
/// In the module's initialization (`Image`: the class of
/// [`TensorClass`]'s example):
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
