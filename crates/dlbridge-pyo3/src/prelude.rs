//! Everything a kernel author needs, in one import:
//!
//! ```
//! use dlbridge_pyo3::prelude::*;
//! use pyo3::prelude::*;
//!
//! /// `out[...] = x * factor`, in place, for float32 matrices of any framework.
//! #[pyfunction]
//! fn scale(
//!     py: Python<'_>,
//!     x: TensorArg<'_, f32, Ix2>,
//!     mut out: TensorArgMut<'_, f32, Ix2>,
//!     factor: f32,
//! ) -> PyResult<()> {
//!     py.detach(|| out.view_mut().zip_mut_with(&x.view(), |o, &v| *o = v * factor));
//!     Ok(())
//! }
//! ```
//!
//! It holds the typed arguments and their constraints ([`TensorArg`], [`TensorArgMut`],
//! [`shape!`](crate::shape), [`DimsBetween`], the layouts), what returns and imports tensors
//! ([`return_like`], [`from_dlpack`], [`ImportOptions`], [`to_py_err`]), what makes a class of
//! one's own a producer ([`publish_dlpack`], [`TensorClass`], [`ClassTensor`] and its read
//! guard [`ClassTensorRead`], [`PyObjectOwner`]), the core's tensor types ([`ManagedTensor`], [`Export`], [`TensorView`], [`DataType`], [`Device`],
//! [`Element`], [`Writability`]), the element types of other crates with those crates
//! themselves (`half` with [`f16`](struct@f16) and [`bf16`], `num_complex` with [`Complex`],
//! [`Complex32`], [`Complex64`]), at the versions dlbridge's elements are implemented for, and
//! ndarray: its prelude (`Array2`, `ArrayView2`, `Ix2`,
//! `IxDyn`, `s!`, ...) and the crate itself as `ndarray`, at the version dlbridge-pyo3 is built
//! with, so that an extension needs no `ndarray` dependency of its own (a second one, of
//! another version, would give "multiple versions of crate ndarray" errors; the same holds for
//! `half` and `num_complex`). PyO3's own
//! prelude is imported beside it, from the extension's `pyo3` dependency.
//!
//! The element types of other crates come with the prelude, at dlbridge's versions.
//!
//! ```
//! use dlbridge_pyo3::prelude::*;
//! use pyo3::prelude::*;
//!
//! /// The squared magnitudes of a complex128 vector.
//! #[pyfunction]
//! fn norms(x: TensorArg<'_, Complex<f64>, Ix1>) -> Vec<f64> {
//!     x.view().iter().map(|z| z.norm_sqr()).collect()
//! }
//!
//! /// The sum of a bfloat16 vector, in float32.
//! #[pyfunction]
//! fn bf16_total(x: TensorArg<'_, bf16, Ix1>) -> f32 {
//!     x.view().iter().map(|value| value.to_f32()).sum()
//! }
//! # Python::initialize();
//! Python::attach(|py| -> PyResult<()> {
//!     let _ = wrap_pyfunction!(norms, py)?;
//!     assert_eq!(Complex64::new(0.0, 2.0).norm_sqr(), 4.0);
//!     assert_eq!(half::f16::from_f32(1.5).to_f32(), 1.5);
//!     let _ = wrap_pyfunction!(bf16_total, py)?;
//!     Ok(())
//! })
//! # .unwrap();
//! ```

pub use crate::args::borrow::explain_argument;
pub use crate::args::constraints::{
    AnyDevice, AnyLayout, CContiguous, Constraints, Contiguous, Cuda, DeviceConstraint,
    Dimensionality, DimsBetween, FContiguous, HostMemory, LayoutConstraint, Rocm,
};
pub use crate::args::device_arg::{CudaArg, CudaArgMut, DeviceTensorArg, DeviceTensorArgMut};
pub use crate::args::tensor_arg::{
    ContiguousArg, ContiguousArgMut, TensorArg, TensorArg1, TensorArg2, TensorArg3, TensorArg4,
    TensorArgMut, TensorArgMut1, TensorArgMut2, TensorArgMut3, TensorArgMut4,
};
pub use crate::consume::{from_dlpack, from_dlpack_explained};
pub use crate::errors::{KernelError, KernelResult, to_py_err};
pub use crate::explain::ArgumentPath;
pub use crate::explain::ImportPath;
pub use crate::owner::PyObjectOwner;
pub use crate::produce::class::TensorClass;
pub use crate::produce::class_tensor::{ClassTensor, ClassTensorRead};
pub use crate::produce::publish_dlpack;
pub use crate::produce::returning::{IntoTensor, return_like};
pub use crate::shape;
pub use crate::sources::dlpack::ImportOptions;
pub use crate::streams::{WorkStream, WorkStreamSource};
pub use dlbridge::half::{self, bf16, f16};
pub use dlbridge::num_complex::{self, Complex, Complex32, Complex64};
pub use dlbridge::{DataType, Device, Element, Export, ManagedTensor, TensorView, Writability};
pub use ndarray;
pub use ndarray::prelude::*;

// The bridges' extension traits, so that their methods are there wherever the prelude is: on
// typed arguments (this crate's) and on views and tensors (the core crate's).
#[cfg(feature = "burn")]
pub use crate::libraries::burn::BurnArgExt as _;
#[cfg(feature = "candle")]
pub use crate::libraries::candle::CandleArgExt as _;
#[cfg(feature = "faer")]
pub use crate::libraries::faer::{FaerArgExt as _, FaerArgMutExt as _};
#[cfg(feature = "image")]
pub use crate::libraries::image::{ImageArgExt as _, ImageArgMutExt as _};
#[cfg(feature = "nalgebra")]
pub use crate::libraries::nalgebra::{NalgebraArgExt as _, NalgebraArgMutExt as _};
#[cfg(feature = "arrow")]
pub use dlbridge::arrow::ArrowTensorExt as _;
#[cfg(feature = "burn")]
pub use dlbridge::burn::BurnTensorExt as _;
#[cfg(feature = "candle")]
pub use dlbridge::candle::{CandleTensorExt as _, CandleViewExt as _};
#[cfg(feature = "cuda")]
pub use dlbridge::cuda::{CudaTensorExt as _, CudaViewExt as _};
#[cfg(feature = "faer")]
pub use dlbridge::faer::{FaerTensorExt as _, FaerViewExt as _};
#[cfg(feature = "image")]
pub use dlbridge::image::{ImageTensorExt as _, ImageViewExt as _};
#[cfg(feature = "nalgebra")]
pub use dlbridge::nalgebra::{NalgebraTensorExt as _, NalgebraViewExt as _};
pub use dlbridge::ndarray::{NdarrayTensorExt as _, NdarrayViewExt as _};
