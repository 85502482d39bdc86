//! Typed tensor arguments for `#[pyfunction]`s: a Rust kernel written once takes NumPy,
//! PyTorch, JAX (any DLPack producer) zero-copy, with its expectations checked at extraction.
//!
//! ```ignore
//! #[pyfunction]
//! fn scale(py: Python<'_>, x: TensorArg<'_, f32, Ix2, CContiguous>, mut out: TensorArgMut2<'_, f32>, factor: f32) {
//!     py.detach(|| out.view_mut().zip_mut_with(&x.view(), |o, &v| *o = v * factor));
//! }
//! ```
//!
//! - [`claims`]: the aliasing registry, so that no memory is written through one argument
//!   while another reaches it;
//! - [`borrow`]: the one order of sources a descriptor is borrowed from, and how each says
//!   whether its memory may be written;
//! - [`constraints`]: what an argument's type requires (dimensions, layout, extents, in any
//!   combination) and the check, whose message names why memory is read-only;
//! - [`accessors`]: the accessors of all four argument types, written once (a macro each type
//!   invokes for the kinds it has: every argument's, a host or a device argument's);
//! - [`tensor_arg`]: the argument types themselves, built from the four above;
//! - [`device_arg`]: the argument types in device memory (a device constraint, the device
//!   pointer, the stream to launch on), built on `tensor_arg`'s extraction.

pub(crate) mod claims;
pub(crate) mod borrow;
pub(crate) mod constraints;
pub(crate) mod accessors;
pub(crate) mod tensor_arg;
pub(crate) mod device_arg;
