//! # dlbridge-pyo3: DLPack tensors for Rust extensions written with PyO3
//!
//! Write a kernel once in Rust; call it zero-copy on NumPy arrays, PyTorch and PaddlePaddle
//! tensors, JAX arrays, CuPy's and TensorFlow's host tensors, `array.array`, anything that
//! speaks DLPack or the buffer protocol. This page is the kernel author's guide; the
//! [lower-level API](#the-rest-of-the-crate) follows it.
//!
//! # A kernel author's guide
//!
//! ## Setup
//!
//! ```toml
//! [dependencies]
//! dlbridge-pyo3 = "0.1"
//! pyo3 = { version = "0.30", features = ["extension-module"] }
//! ```
//!
//! `use dlbridge_pyo3::prelude::*;` brings the argument types, the constraints, the result
//! helpers, the core's tensor types and ndarray ([`ndarray`], re-exported at the version this
//! crate is built with: no `ndarray` dependency of your own is needed, and a second one of
//! another version would give "multiple versions of crate ndarray" errors). PyO3 is
//! re-exported too ([`pyo3`]), for matching its version. Build the module with
//! [maturin](https://www.maturin.rs) (`maturin develop`); `examples/matmul` in the repository is
//! a complete extension, built and tested against NumPy, PyTorch and JAX.
//!
//! ### abi3 wheels and 64-bit targets
//!
//! The crate builds for PyO3's stable ABI (`pyo3/abi3-py39` and up) as well as for one
//! interpreter, with the same acceptances, refusals and messages; below the level that has a
//! fast path in its limited API it takes a slower, equivalent one (a tuple call before 3.12,
//! a `METH_VARARGS` `__dlpack__` before 3.10, the GIL always taken to drop a
//! [`PyObjectOwner`]). One difference remains: the buffer protocol (`bytearray`,
//! `memoryview`, `array.array`, ...) is in the limited API only from Python 3.11, so a build
//! for `abi3-py39` or `abi3-py310` reads buffers only when it runs on 3.11 or later (never on
//! Windows); on 3.9 and 3.10 such an argument is refused with a `TypeError` that says why.
//! Build for `abi3-py311` to read buffers everywhere. The crate needs a 64-bit target (a
//! 32-bit one is a compile error saying why); the core crate `dlbridge` supports both.
//!
//! ## A complete module
//!
//! Four kernels: one that reads, one that writes in place, one that returns a new tensor in
//! the caller's framework, one that releases the GIL while it works.
//!
//! ```standalone_crate
//! # // A crate of its own: Rust 2024 merges doc tests into one binary, where this module's
//! # // `PyInit_kernels` would clash with the README's.
//! use dlbridge_pyo3::prelude::*;
//! use pyo3::exceptions::PyValueError;
//! use pyo3::prelude::*;
//!
//! shape!(
//!     /// Images of any height and width with three colour channels, last.
//!     pub Rgb = [_, _, 3]
//! );
//!
//! /// Reads: the mean of each channel of a uint8 RGB image (any strides).
//! #[pyfunction]
//! fn channel_means(image: TensorArg<'_, u8, Ix3, Rgb>) -> [f64; 3] {
//!     let pixels = image.view().len_of(Axis(0)) * image.view().len_of(Axis(1));
//!     let sums = image.view().map(|&value| f64::from(value)).sum_axis(Axis(0)).sum_axis(Axis(0));
//!     [0, 1, 2].map(|channel| sums[channel] / pixels.max(1) as f64)
//! }
//!
//! /// Writes in place: `x *= factor` for a float32 matrix; the caller sees the change.
//! #[pyfunction]
//! fn scale(mut x: TensorArgMut2<'_, f32>, factor: f32) {
//!     x.view_mut().mapv_inplace(|value| value * factor);
//! }
//!
//! /// Returns a new tensor of the image's framework (a NumPy array for a NumPy image, a
//! /// PyTorch tensor for a PyTorch one), zero-copy over the Rust result.
//! #[pyfunction]
//! fn to_gray<'py>(
//!     py: Python<'py>,
//!     image: TensorArg<'_, u8, Ix3, Rgb>,
//! ) -> KernelResult<Bound<'py, PyAny>> {
//!     let gray: Array2<u8> = image.view().map_axis(Axis(2), |rgb| {
//!         (0.299 * f32::from(rgb[0]) + 0.587 * f32::from(rgb[1]) + 0.114 * f32::from(rgb[2]))
//!             .round() as u8
//!     });
//!     Ok(image.return_like(py, gray)?)
//! }
//!
//! /// Releases the GIL while it works: other Python threads run meanwhile.
//! #[pyfunction]
//! fn dot(py: Python<'_>, x: TensorArg1<'_, f64>, y: TensorArg1<'_, f64>) -> PyResult<f64> {
//!     if x.view().len() != y.view().len() {
//!         return Err(PyValueError::new_err("dot: the vectors differ in length"));
//!     }
//!     Ok(py.detach(|| x.view().dot(&y.view())))
//! }
//!
//! #[pymodule]
//! fn kernels(module: &Bound<'_, PyModule>) -> PyResult<()> {
//!     module.add_function(wrap_pyfunction!(channel_means, module)?)?;
//!     module.add_function(wrap_pyfunction!(scale, module)?)?;
//!     module.add_function(wrap_pyfunction!(to_gray, module)?)?;
//!     module.add_function(wrap_pyfunction!(dot, module)?)?;
//!     Ok(())
//! }
//! # // Called here on buffer-protocol objects (the doc tests have no NumPy); from Python,
//! # // on NumPy, PyTorch or JAX alike.
//! # Python::initialize();
//! # Python::attach(|py| -> PyResult<()> {
//! #     let module = PyModule::new(py, "kernels")?;
//! #     kernels(&module)?;
//! #     let globals = pyo3::types::PyDict::new(py);
//! #     globals.set_item("k", &module)?;
//! #     let run = |code: &std::ffi::CStr| py.eval(code, Some(&globals), None);
//! #     let means: [f64; 3] = run(c"k.channel_means(memoryview(bytes([1, 2, 3, 5, 6, 7])).cast('B', (1, 2, 3)))")?.extract()?;
//! #     assert_eq!(means, [3.0, 4.0, 5.0]);
//! #     let scaled: Vec<f32> = run(c"(lambda a: (k.scale(memoryview(a).cast('B').cast('f', (2, 2)), 2.0), a.tolist())[1])(__import__('array').array('f', [1, 2, 3, 4]))")?.extract()?;
//! #     assert_eq!(scaled, [2.0, 4.0, 6.0, 8.0]);
//! #     let dot: f64 = run(c"k.dot(__import__('array').array('d', [1, 2]), __import__('array').array('d', [3, 4]))")?.extract()?;
//! #     assert_eq!(dot, 11.0);
//! #     let refused = run(c"k.scale(memoryview(bytes(16)).cast('f', (2, 2)), 2.0)").unwrap_err();
//! #     assert!(refused.to_string().contains("expected a writable float32 tensor with 2 dimensions in host memory, got float32 shape (2, 2) strides (2, 1) on CPU:0 (read-only: its buffer is read-only"), "{refused}");
//! #     Ok(())
//! # }).unwrap();
//! ```
//!
//! From Python: `kernels.scale(np_array, 2.0)`, `kernels.to_gray(torch_image)` (a PyTorch
//! tensor back), `kernels.dot(jax_x, jax_y)`.
//!
//! ## The argument types
//!
//! [`TensorArg<'_, T, D, C>`](TensorArg) reads a tensor, [`TensorArgMut<'_, T, D, C>`](TensorArgMut)
//! writes one in place. `T` is the element type ([`Element`](dlbridge::Element): `f32`, `u8`,
//! `bool`, `half::f16`, `num_complex::Complex<f64>`, ...), `D` the number of dimensions
//! ([`Dimensionality`]: ndarray's `Ix1`..`Ix6`, or `IxDyn`, the default, for any), `C` the
//! constraints ([`Constraints`]): nothing (`()`, the default), a layout ([`CContiguous`],
//! [`FContiguous`]), a shape declared with [`shape!`] or a range of numbers of dimensions
//! ([`DimsBetween<2, 3>`](DimsBetween), for `IxDyn`), or a layout with one of those as a
//! tuple in either order, `(Rgb, CContiguous)`. Aliases spell the common cases: [`TensorArg1`]..[`TensorArg4`],
//! [`TensorArgMut1`]..[`TensorArgMut4`], [`ContiguousArg`], [`ContiguousArgMut`]. A
//! parameter in the wrong place is a compile error that says which slot takes what.
//!
//! | the argument's object | `TensorArg` | `TensorArgMut` |
//! |---|---|---|
//! | a host tensor of the declared kind (NumPy, PyTorch, PaddlePaddle, JAX, CuPy/TensorFlow host tensors, `array.array`, `memoryview`, any `__dlpack__` or buffer-protocol object) | read, zero-copy | written, zero-copy; the caller sees the writes |
//! | another element type, number of dimensions or layout; device memory (CUDA, ...); not a tensor at all | `TypeError` | `TypeError` |
//! | the right kind with other extents than its `shape!` | `ValueError` | `ValueError` |
//! | read-only memory (a read-only NumPy array, `bytes`, a legacy DLPack capsule, which JAX and TensorFlow export, since it cannot say its memory may be written) | read | `TypeError` naming why |
//! | a layout in which two indices reach one element (a broadcast view) | read | `TypeError` |
//! | a PyTorch view with a lazy conjugation or negation bit | `BufferError` | `BufferError` |
//! | a PyTorch inference tensor outside `torch.inference_mode()` | read | `TypeError`, as PyTorch's in-place operations refuse it |
//! | memory that another tensor argument in use also reaches (this call or another thread's, in any extension module) | read, if no argument writes it | `ValueError` |
//! | a tensor autograd tracks (PyTorch `requires_grad`, PaddlePaddle `stop_gradient=False`) | read as `detach()` reads it | `TypeError` while grad mode is on; written under `torch.no_grad()`, with the version counter bumped |
//!
//! `as_slice()` (and `as_mut_slice()`) gives every element as one slice where the type
//! promises a contiguous layout, and does not compile elsewhere; `try_as_slice()` returns an
//! `Option` for any layout. Arguments also come in a `Vec` (from a list or any sequence),
//! an `Option` (`None` for a missing one) or a tuple.
//!
//! ## How an argument is read, and what is copied
//!
//! Nothing is ever copied: an argument is a view of the caller's memory for the call. Its
//! descriptor is taken from the first source that applies:
//!
//! 1. the type's DLPack 1.3 C exchange API (`__dlpack_c_exchange_api__`: PyTorch,
//!    PaddlePaddle, dlbridge's classes), a borrowed `DLTensor`, without allocating;
//! 2. NumPy's array struct, for exactly `numpy.ndarray`;
//! 3. the buffer protocol, for other host memory (`array.array`, `memoryview`, `bytearray`);
//! 4. a full DLPack import through `__dlpack__` (JAX, CuPy, TensorFlow, any other producer,
//!    and whatever a fast path cannot take), released after the call.
//!
//! Every path accepts and refuses what the producer's own `__dlpack__` does (or stricter), so
//! the answer does not depend on the path. To see which one an argument took:
//! [`TensorArg::path`] and `{:?}` on an argument in Rust, [`explain_argument`] for any
//! object, and `dlbridge.explain(x)` in Python (the `dlbridge` package), which also says
//! whether the argument would be read-only and why an object is refused. An import of one's
//! own ([`from_dlpack`]) reports its path, its negotiation with the producer and whether
//! (and by whom) the memory was copied with [`from_dlpack_explained`]; `dlbridge.explain(x)`
//! shows that too, under `"import"`.
//!
//! ## Returning results
//!
//! [`x.return_like(py, result)`](TensorArg::return_like) (or [`return_like`] with any object)
//! hands a Rust result to Python as a tensor of `x`'s framework, zero-copy: an ndarray
//! `Array`, a `Vec` with a shape (`(values, [rows, cols])`), a [`ManagedTensor`](dlbridge::ManagedTensor)
//! or an [`Export`](dlbridge::Export) ([`IntoTensor`]). A NumPy array is made directly with
//! NumPy's C API (about the cost of rust-numpy's `into_pyarray`); PyTorch and PaddlePaddle tensors
//! through their exchange table; any other framework through its module's `from_dlpack`; a
//! pyarrow array's caller (feature `arrow`) gets a pyarrow array over the result, through the
//! Arrow PyCapsule interface (`__arrow_c_array__`). The result owns the Rust buffer, which is
//! freed when the framework frees its tensor. One table ([`FRAMEWORK_HOLDINGS`](crate::framework_table::FRAMEWORK_HOLDINGS)) says what
//! each framework's tensors can hold: a read-only result (an Arrow column) goes to NumPy and
//! pyarrow zero-copy and read-only, but to PyTorch, PaddlePaddle, JAX and CuPy, which would
//! write it or cannot be told it is read-only, as a writable copy; a layout the framework
//! refuses (faer's padded columns for JAX) is compacted first.
//!
//! ## Rust's tensor libraries
//!
//! With the features `nalgebra`, `faer`, `image`, `burn`, `candle` and `arrow` (each turns on
//! the core crate's bridge of its name), a typed argument is the library's value in one line
//! (`x.as_faer_mat()?`, `x.as_nalgebra_matrix_transposed()?`, `x.as_image_buffer::<Rgb<u8>>()?`,
//! `x.to_candle_tensor()?`, `x.to_burn_data(py)?`; the mutable forms on [`TensorArgMut`]),
//! with the core's refusals as `TypeError`s. The methods belong to the extension traits of the
//! modules `faer`, `nalgebra`, `image`, `candle` and `burn` (`FaerArgExt`, `FaerArgMutExt`...),
//! which the [`prelude`] brings into scope with the core crate's bridge traits. The library's
//! values are [`IntoTensor`]: `DMatrix`, `DVector`, faer's `Mat`, `ImageBuffer`, burn's
//! `TensorData`, candle's `Tensor` (a copy) and Arrow's primitive arrays go back with
//! `return_like`. Values that own their memory (Arrow's arrays; burn's, which `to_burn_data`
//! makes this way) take the argument's owned tensor, [`TensorArg::to_managed`], zero-copy and
//! accepting what the argument accepted, then the core's `into_compact` where the layout
//! needs it and `into_arrow_array`.
//! `examples/tensor_libraries` in the repository does each of them on NumPy, PyTorch and JAX.
//!
//! ## Kernels on the device (CUDA, ROCm)
//!
//! [`TensorArg`] wants host memory: its views read the elements. A kernel that runs on a GPU
//! takes [`DeviceTensorArg`] / [`DeviceTensorArgMut`] ([`CudaArg`] / [`CudaArgMut`]), whose
//! device constraint ([`Cuda`], [`Rocm`], [`AnyDevice`], [`HostMemory`]) is checked with the
//! data type, dimensions and layout at extraction, and which give the device pointer and the
//! [`WorkStream`](crate::streams::WorkStream) to launch on: the producer's current work stream (its exchange table's
//! `current_work_stream`, else PyTorch's or CuPy's current stream, else the legacy default
//! stream). Enqueue there with the GIL released (`py.detach(|| launch(stream))`); nothing
//! waits. `examples/cuda_saxpy` is a complete extension (a kernel compiled with NVRTC through
//! cudarc, results returned on the device with `return_like`).
//!
//! Streams across imports and exports: [`from_dlpack`] asks the producer for the stream of
//! [`ImportOptions::stream`] ([`ConsumerStream`](crate::streams::ConsumerStream): by default the producer's current work
//! stream) and records it as the tensor's ready stream
//! ([`ManagedTensor::ready_stream`](dlbridge::ManagedTensor::ready_stream)). With the feature
//! `cuda`, `__dlpack__(stream=s)` on such a tensor makes `s` wait on an event recorded on the
//! ready stream, and `__dlpack__(dl_device=(1, 0))` (or an import with
//! `device=Some(Device::CPU)`) copies CUDA memory to the host on it; without the feature both
//! are `BufferError`s naming it.
//!
//! ## Kernels inside `jax.jit` and `torch.compile`
//!
//! Under `jax.jit` a function's arguments are tracers and under `torch.compile` an extension
//! function is a graph break: neither can call a `#[pyfunction]`. Declare the kernel with
//! [`kernel!`] instead: one function of typed arguments and scalars, its body written once on
//! ndarray views, becomes the eager `#[pyfunction]`, an XLA FFI handler and a signature with
//! the results' shape rules ([`mod@kernel`] has a complete module).
//! [`kernel::publish_kernels`] puts them on the module; from Python,
//! `dlbridge.jax.kernel(module, name)` calls it inside `jax.jit` (with `vmap`), and
//! `dlbridge.torch.register(module)` makes it a `torch.library` operator, which
//! `torch.compile(fullgraph=True)` keeps in its graph. A kernel of [`CudaArg`]s is a CUDA
//! kernel: its body gets [`kernel::CudaBuffer`]s and enqueues its work on their stream (XLA's
//! CUDA platform, PyTorch's CUDA key).
//!
//! ## Errors
//!
//! Return [`KernelResult<T>`](KernelResult): `?` then takes PyO3's `PyErr`, the core's
//! [`dlbridge::Error`] (raised as `BufferError`, with the field and the value it is about)
//! and ndarray's `ShapeError` (`ValueError`). The exceptions a kernel's caller meets:
//!
//! | exception | when |
//! |---|---|
//! | `TypeError` | an argument of the wrong kind (element type, dimensions, layout, device, read-only for writing, not a tensor); the message says what was expected and what came, e.g. `expected a float32 C-contiguous tensor with 2 dimensions in host memory, got float64 shape (3, 4) strides (1, 3) on CPU:0`, and PyO3 adds the note `while processing 'x'` |
//! | `ValueError` | an argument of the right kind with the wrong extents; a written argument whose memory another argument reaches; a copy (`copy=True`) of memory that a written argument of a call in progress reaches |
//! | `BufferError` | a tensor its producer will not export (a PyTorch view with a lazy conjugation or negation bit, a sparse tensor), or a result that cannot be exported |
//!
//! Every message a kernel's caller can meet, as the test kernels raise it, is in the
//! repository's `docs/kernel-messages.md`.
//!
//! ## Threads and aliasing
//!
//! Arguments are `Send` and `Sync`, and hold what keeps their memory alive, so a kernel may
//! release the GIL (`py.detach`) and share them with its own threads (rayon, say). While a
//! `TensorArgMut` lives, its memory is claimed in a registry that every dlbridge extension
//! module of the process shares: no other argument, in this call or in another thread's, may
//! reach it (overlap is computed exactly, so `x[:, ::2]` and `x[:, 1::2]` may be written
//! together). The copies dlbridge makes of such memory (`from_dlpack(x, copy=True)`, and
//! `__dlpack__(copy=True)` of the classes of [`publish_dlpack`]) claim it for reading while they
//! copy, so a copy of memory a `TensorArgMut` is writing is refused (`ValueError`) rather than
//! torn; [`compact_copy`] makes such a copy in a method of one's own. A class of one's own
//! ([`TensorClass`]) holds its tensor as a [`ClassTensor`], whose elements its Rust code reads
//! under such a read claim ([`ClassTensor::read`]): a kernel's `TensorArgMut` over the
//! instance and the class's own read of it are never alive at once. A tensor imported into
//! Rust ([`from_dlpack`], [`from_capsule`](crate::capsule::from_capsule)) reads the memory for as long as it lives, so it
//! holds a read claim until it is dropped or handed back to Python: a `TensorArgMut` over
//! memory a live import reads is refused, and so is an import of memory a running kernel
//! writes (both `ValueError`, naming the other). Memory is never written
//! behind its owner's back: a tensor that says it is
//! read-only, or cannot say that it is writable, is refused for writing. Modules built with
//! this crate run on free-threaded Python as well; declare
//! `#[pymodule(gil_used = false)]` when the module holds no state of its own.
//!
//! # The rest of the crate
//!
//! Built on the [`dlbridge`] core, for extension modules written with PyO3:
//!
//! - **consume** any Python object implementing `__dlpack__` / `__dlpack_device__`, or a raw
//!   capsule, into the core's owning [`dlbridge::ManagedTensor`] ([`from_dlpack`], [`from_capsule`](crate::capsule::from_capsule)),
//!   negotiating with old and new producers as the array API and DLPack 1.3 describe;
//! - **produce** capsules from any managed tensor ([`into_capsule`](crate::capsule::into_capsule)), whose destructor frees
//!   the tensor only when no consumer took it (decided by the capsule's name) and keeps an
//!   exception in flight intact; export by the rules of `__dlpack__` ([`export_capsule`](crate::produce::export_capsule));
//!   make a PyO3 class of one's own a complete producer with one call ([`publish_dlpack`]:
//!   `__dlpack__`, `__dlpack_device__` and the C exchange API);
//! - take the **fast path** of DLPack 1.3's C exchange API (`__dlpack_c_exchange_api__`, as
//!   PyTorch and PaddlePaddle publish it) when a type offers one ([`exchange_api`](crate::exchange::exchange_api)), and give
//!   on every path the answer of the producer's own `__dlpack__`, or a stricter one (PyTorch's
//!   and PaddlePaddle's tensors that autograd tracks, PyTorch's lazy views);
//! - classes published with [`publish_dlpack`] also carry a [`WritabilityHook`](crate::writability_hook::WritabilityHook), so that
//!   read-only instances are refused for writing on the borrowed path;
//! - keep Python objects alive from tensors whose deleter may run on any thread
//!   ([`PyObjectOwner`]).
//!
//! Errors follow the protocol: `BufferError` for a tensor that cannot be imported as sent
//! (with the core's message naming the field and the value), `TypeError` for an object that
//! is no DLPack producer, `ValueError` for a capsule that is not an unconsumed DLPack capsule.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

// The modules in layers: each imports only modules listed before it (`make lint` checks it
// with scripts/module-layers.py). Leaves first (capsules and their names, the aliasing
// registry that typed arguments and the copies of both sides claim memory in, the protocol's
// `stream=` values, stream ordering and host copies through the CUDA driver among them); then
// host memory without DLPack; then what both sides look up about a Python type (its
// framework's rules, its C exchange table) and what each framework's tensors can hold of a
// result (one table, read by every way a result goes back); then the producer side, which
// never imports the consumer side (module-layers.py refuses any import of a consumer-side
// module in produce/);
// then the consumer side (explain's report vocabulary, imports through the exchange table,
// producers' work streams, consumption); on top, typed arguments, which read tensors as the
// consumer does and return results as the producer does, and the Rust libraries' adapters.
// module-layers: produce never imports explain, exchange, streams::work, consume, args, libraries.
mod errors;
mod owner;
mod trampoline;
mod claims;
pub mod writability_hook;
pub mod capsule;
pub mod device;
mod host;
mod framework;
mod dispatch;
pub mod streams;
pub mod framework_table;
pub mod produce;
pub mod explain;
pub mod exchange;
mod sources;
mod consume;
mod args;
mod libraries;
pub mod prelude;
pub mod xla;
pub mod kernel;

pub use args::borrow::explain_argument;
#[doc(hidden)]
pub use args::borrow::{ArgumentInspection, inspect_argument};
pub use args::constraints::{
    AnyDevice, AnyLayout, CContiguous, Constraints, Contiguous, Cuda, DeviceConstraint,
    Dimensionality, DimsBetween, FContiguous, HostMemory, LayoutConstraint, LayoutWith, Rocm,
};
pub use args::device_arg::{CudaArg, CudaArgMut, DeviceTensorArg, DeviceTensorArgMut};
pub use args::tensor_arg::{
    ContiguousArg, ContiguousArgMut, TensorArg, TensorArg1, TensorArg2, TensorArg3, TensorArg4,
    TensorArgMut, TensorArgMut1, TensorArgMut2, TensorArgMut3, TensorArgMut4,
};
pub use claims::compact_copy;
pub use consume::{from_dlpack, from_dlpack_explained, from_dlpack_unclaimed};
pub use dlbridge;
pub use errors::{KernelError, KernelResult, to_py_err};
#[cfg(feature = "burn")]
#[cfg_attr(docsrs, doc(cfg(feature = "burn")))]
pub use libraries::burn;
#[cfg(feature = "candle")]
#[cfg_attr(docsrs, doc(cfg(feature = "candle")))]
pub use libraries::candle;
#[cfg(feature = "faer")]
#[cfg_attr(docsrs, doc(cfg(feature = "faer")))]
pub use libraries::faer;
#[cfg(feature = "image")]
#[cfg_attr(docsrs, doc(cfg(feature = "image")))]
pub use libraries::image;
#[cfg(feature = "nalgebra")]
#[cfg_attr(docsrs, doc(cfg(feature = "nalgebra")))]
pub use libraries::nalgebra;
pub use ndarray;
pub use owner::PyObjectOwner;
pub use produce::class::TensorClass;
pub use produce::class_tensor::{ClassTensor, ClassTensorRead};
pub use produce::publish_dlpack;
pub use produce::returning::{IntoTensor, return_like};
pub use pyo3;
pub use sources::dlpack::ImportOptions;

/// The crate's README (its crates.io page), whose example is compiled as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(doctest)]
mod guide_doctests;
