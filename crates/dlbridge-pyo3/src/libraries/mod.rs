//! Rust's tensor libraries in kernels: typed arguments seen as nalgebra, faer, image and
//! candle values, and those libraries' values (and burn's and Arrow's) returned to the
//! caller's framework, one line each way (features `nalgebra`, `faer`, `image`, `burn`,
//! `candle`, `arrow`, which turn on the core crate's bridge of the same name).
//!
//! In: [`TensorArg`](crate::TensorArg) and [`TensorArgMut`](crate::TensorArgMut) get the
//! methods of the core's bridges (`as_nalgebra_matrix`, `as_faer_mat`, `as_image_buffer`,
//! `to_candle_tensor`, ...), borrowing the argument for the call, with the core's checks and
//! refusals (a `TypeError` naming the library and the layout). burn's `TensorData` and Arrow's
//! arrays own their memory, so they take the argument's owned tensor
//! ([`TensorArg::to_managed`](crate::TensorArg::to_managed)), which lives as long as they do:
//! `x.to_burn_data(py)?` (compacted where burn needs it), or
//! `x.to_managed(py)?.into_arrow_array::<Float32Type>()?`.
//!
//! Out: [`IntoTensor`](crate::IntoTensor) is implemented for `DMatrix`, `DVector`, faer's
//! `Mat`, `ImageBuffer`, burn's `TensorData`, candle's `Tensor` (a copy) and Arrow's primitive
//! arrays, so `x.return_like(py, matrix)` hands any of them to the caller's framework, without
//! a copy where the core's bridge has none.
//!
//! pyarrow is one of those frameworks, with `arrow`: a caller whose argument was a pyarrow
//! array (`pyarrow.Array`, whose `__dlpack__` typed arguments read) gets any result back as a
//! pyarrow array over the result's memory, through the Arrow PyCapsule interface
//! (`__arrow_c_array__`; pyarrow has no `from_dlpack` of its module): a `pyarrow.Array` for a
//! 1-D result of an Arrow primitive type, a `pyarrow.FixedShapeTensorArray` for two or more
//! dimensions, a `BooleanArray` copy of a 1-D bool result; what Arrow cannot hold is a
//! `TypeError` naming it ([`return_like`](crate::return_like) has the details).
//!
//! ```
//! # #[cfg(feature = "faer")]
//! # {
//! use dlbridge_pyo3::prelude::*;
//! use pyo3::prelude::*;
//!
//! /// `a @ b` by faer, returned as the framework of `a` (NumPy, PyTorch, JAX...).
//! #[pyfunction]
//! fn matmul<'py>(
//!     py: Python<'py>,
//!     a: TensorArg2<'_, f64>,
//!     b: TensorArg2<'_, f64>,
//! ) -> PyResult<Bound<'py, PyAny>> {
//!     let product = a.as_faer_mat()? * b.as_faer_mat()?;
//!     a.return_like(py, product)
//! }
//! # }
//! ```
//!
//! The argument's view is handed to the core as a descriptor of the argument's own memory
//! (validated again: a few dozen nanoseconds), so that one set of rules decides what each
//! library can express, whether the tensor came from PyTorch, NumPy or anywhere else.

#[cfg(any(
    feature = "nalgebra",
    feature = "faer",
    feature = "image",
    feature = "candle"
))]
mod core_view;
#[cfg(any(
    feature = "nalgebra",
    feature = "faer",
    feature = "image",
    feature = "candle",
    feature = "burn"
))]
mod sealed;
#[cfg(feature = "candle")]
pub mod candle;
#[cfg(feature = "faer")]
pub mod faer;
#[cfg(feature = "image")]
pub mod image;
#[cfg(feature = "nalgebra")]
pub mod nalgebra;
#[cfg(feature = "arrow")]
mod arrow;
#[cfg(feature = "burn")]
pub mod burn;
