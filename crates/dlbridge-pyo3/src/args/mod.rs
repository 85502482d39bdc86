//! Typed tensor arguments for `#[pyfunction]`s: a Rust kernel written once takes NumPy,
//! PyTorch, JAX (any DLPack producer) zero-copy, with its expectations checked at extraction.
//!
//! ```
//! # use dlbridge_pyo3::prelude::*;
//! # use pyo3::prelude::*;
//! #[pyfunction]
//! fn scale(py: Python<'_>, x: TensorArg<'_, f32, Ix2, CContiguous>, mut out: TensorArgMut2<'_, f32>, factor: f32) {
//!     py.detach(|| out.view_mut().zip_mut_with(&x.view(), |o, &v| *o = v * factor));
//! }
//! # // Called here on buffer-protocol objects (the doc tests have no NumPy); from Python, on
//! # // NumPy arrays, PyTorch tensors or JAX arrays alike.
//! # Python::initialize();
//! # Python::attach(|py| -> PyResult<()> {
//! #     let globals = pyo3::types::PyDict::new(py);
//! #     globals.set_item("scale", wrap_pyfunction!(scale, py)?)?;
//! #     py.run(c"
//! # from array import array
//! # x, out = array('f', [1, 2, 3, 4]), array('f', [0] * 4)
//! # matrix = lambda values: memoryview(values).cast('B').cast('f', (2, 2))
//! # scale(matrix(x), matrix(out), 2.0)
//! # try:
//! #     scale(matrix(x), memoryview(bytes(16)).cast('f', (2, 2)), 2.0)
//! # except TypeError as error:
//! #     refused = str(error)
//! # ", Some(&globals), None)?;
//! #     let out: Vec<f32> = globals.get_item("out")?.unwrap().call_method0("tolist")?.extract()?;
//! #     assert_eq!(out, [2.0, 4.0, 6.0, 8.0]);
//! #     // `out` must be writable: read-only memory is refused at extraction.
//! #     let refused: String = globals.get_item("refused")?.unwrap().extract()?;
//! #     assert!(refused.contains("expected a writable float32 tensor"), "{refused}");
//! #     Ok(())
//! # }).unwrap();
//! ```
//!
//! - the aliasing registry, so that no memory is written through one argument while another
//!   reaches it, is below this module in the crate's layers ([`crate::claims`]: the copies
//!   of both sides of the protocol claim memory in it too); every argument holds a
//!   [`Claim`](crate::claims::Claim);
//! - [`borrow`]: the one order of sources a descriptor is borrowed from, and how each says
//!   whether its memory may be written;
//! - [`constraints`]: what an argument's type requires (dimensions, layout, extents, in any
//!   combination) and the check, whose message names why memory is read-only;
//! - [`accessors`]: the accessors of all four argument types, written once (a macro each type
//!   invokes for the kinds it has: every argument's, a host or a device argument's);
//! - [`tensor_arg`]: the argument types themselves, built from the four above;
//! - [`device_arg`]: the argument types in device memory (a device constraint, the device
//!   pointer, the stream to launch on), built on `tensor_arg`'s extraction.

pub(crate) mod borrow;
pub(crate) mod constraints;
pub(crate) mod accessors;
pub(crate) mod tensor_arg;
pub(crate) mod device_arg;
pub(crate) mod owned;
