//! # dlbridge: DLPack for Rust
//!
//! [DLPack](https://dmlc.github.io/dlpack/latest/) is the in-memory tensor standard that
//! NumPy, PyTorch, JAX, TensorFlow, CuPy and others use to share tensors without copying.
//! This crate is its core for Rust, with no Python dependency: hand Rust memory to any DLPack
//! consumer, take a tensor from any producer, and read or write it through checked, typed,
//! zero-copy views, from safe code that cannot reach undefined behaviour (see [the safety
//! model](#safety-model)). For Python extensions written with PyO3, see `dlbridge-pyo3`.
//!
//! # Tasks
//!
//! ## Export a `Vec` to C
//!
//! [`Export`] turns a `Vec<T>`, `Box<[T]>` or `Arc<[T]>` (or memory any owner keeps alive:
//! [`Export::from_raw_parts`]) into a [`ManagedTensor`] in one heap allocation, without copying
//! the data. [`ManagedTensor::into_raw_versioned`] gives up the `DLManagedTensorVersioned*` a
//! DLPack 1.x consumer takes ([`ManagedTensor::into_raw_legacy`]: the pre-1.0
//! `DLManagedTensor*`); the consumer calls its `deleter` once, from any thread, which drops the
//! `Vec`.
//!
//! ```
//! use dlbridge::Export;
//! # unsafe extern "C" fn consume(tensor: *mut dlbridge::ffi::DLManagedTensorVersioned) {
//! #     unsafe { (*tensor).deleter.unwrap()(tensor) }
//! # }
//! // A C function of some library: `void consume(DLManagedTensorVersioned *tensor);`
//! // unsafe extern "C" { fn consume(tensor: *mut dlbridge::ffi::DLManagedTensorVersioned); }
//!
//! let tensor = Export::new(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).into_versioned()?;
//! let raw = tensor.into_raw_versioned()?;
//! // SAFETY: `consume` takes ownership of a live tensor and calls its deleter once.
//! unsafe { consume(raw) };
//! # Ok::<(), dlbridge::Error>(())
//! ```
//!
//! Strides ([`Export::strides`], in elements, negative allowed) and [`Export::read_only`] shape
//! the export; a shared `Arc<[T]>` goes out read-only by itself.
//!
//! ## Import from C
//!
//! Taking a pointer from C is the one `unsafe` step: [`ManagedTensor::from_raw_versioned`]
//! (or [`ManagedTensor::from_raw_legacy`], [`ManagedTensor::from_raw`]) validates the
//! descriptor and owns the tensor from then on, calling its deleter exactly once on drop, or
//! at once if the descriptor is refused. Everything after is safe and checked:
//! [`TensorView::as_slice`] for a compact tensor, [`TensorView::elements`] for any strides,
//! [`ManagedTensor::as_mut_slice`] and [`ManagedTensor::elements_mut`] to write.
//!
//! ```
//! use dlbridge::{DataType, Export, ManagedTensor};
//! # fn make_tensor() -> *mut dlbridge::ffi::DLManagedTensorVersioned {
//! #     Export::new(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).into_versioned().unwrap()
//! #         .into_raw_versioned().unwrap()
//! # }
//! // `DLManagedTensorVersioned *make_tensor(void);` in some C library.
//! let raw = make_tensor();
//! // SAFETY: `make_tensor` hands over a live tensor, which nothing else uses from now on.
//! let mut tensor = unsafe { ManagedTensor::from_raw_versioned(raw) }?;
//! let view = tensor.view();
//! assert_eq!((view.dtype(), view.shape()), (DataType::FLOAT32, &[2i64, 3][..]));
//! assert_eq!(view.as_slice::<f32>()?, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
//! assert_eq!(view.elements::<f32>()?.get(&[1, 0]), Some(&4.0));
//! tensor.as_mut_slice::<f32>()?[0] = 10.0; // refused if the producer flagged it read-only
//! # Ok::<(), dlbridge::Error>(())
//! ```
//!
//! A borrowed `DLTensor` (as the C exchange API's `dltensor_from_py_object_no_sync` fills
//! it) is viewed without ownership by [`TensorView::from_dltensor`]. The `repr(C)` structs and
//! every `kDL*` name of `dlpack.h` are in [`ffi`]; the enums are newtypes there
//! (`ffi::DLDeviceType::CPU`, or the alias `ffi::kDLCPU`).
//!
//! ## Hand a tensor to Rust's tensor libraries
//!
//! Each library is a feature of the same name and a public module of this crate, whose page
//! holds the bridge's data type table and the layouts the library cannot express:
//!
//! | module (feature) | from a tensor | to a tensor |
//! |---|---|---|
//! | `ndarray` | `as_array`, `as_array_dim`, `as_array_mut` (any strides) | `from_array`, `from_arc_array`, `from_array_view` |
//! | `nalgebra` | `as_nalgebra_matrix`, `as_nalgebra_vector` and their `_mut`s | `from_nalgebra_matrix`, `from_nalgebra_vector` |
//! | `faer` | `as_faer_mat`, `as_faer_mat_mut` (any strides) | `from_faer_mat` |
//! | `image` | `as_image_buffer`, `as_image_buffer_mut` | `from_image_buffer` |
//! | `burn` | `into_burn_data` | `from_burn_data` |
//! | `candle` | `to_candle_tensor` (a copy) | `from_candle_tensor` |
//! | `arrow` | `into_arrow_buffer`, `into_arrow_array`, `into_fixed_shape_tensor` | `from_arrow_array`, `from_fixed_shape_tensor` |
//! | `cuda` (feature `cudarc`) | `cuda_slice`, `cuda_slice_mut` | `cuda::export_slice` |
//!
//! The methods belong to two extension traits per module, one for [`TensorView`] and one for
//! [`ManagedTensor`] (`dlbridge::faer::FaerViewExt`, `dlbridge::faer::FaerTensorExt`...):
//! bring them into scope with a `use`, then call them on views and tensors. Every bridge is
//! zero-copy where the library can hold or lend foreign memory; what a library cannot express
//! (a data type, a layout) is an [`Error::Unrepresentable`] naming it, and a layout that only
//! needs to be made compact is fixed by [`ManagedTensor::into_compact`] first.
//!
//! ```
//! # #[cfg(feature = "ndarray")]
//! # {
//! use dlbridge::ManagedTensor;
//! use dlbridge::ndarray::{NdarrayTensorExt, NdarrayViewExt};
//! use ndarray::{Ix2, array};
//!
//! let mut tensor = ManagedTensor::from_array(array![[1.0f64, 2.0], [3.0, 4.0]])?;
//! let matrix = tensor.view().as_array_dim::<f64, Ix2>()?;
//! assert_eq!(matrix.t()[[0, 1]], 3.0);
//! tensor.as_array_mut::<f64>()?.mapv_inplace(|x| x * 2.0);
//! assert_eq!(tensor.view().as_slice::<f64>()?, &[2.0, 4.0, 6.0, 8.0]);
//! # }
//! # Ok::<(), dlbridge::Error>(())
//! ```
//!
//! ```
//! # #[cfg(feature = "faer")]
//! # {
//! use dlbridge::Export;
//! use dlbridge::faer::FaerViewExt;
//!
//! // A row-major 2x2 tensor seen by faer, without a copy.
//! let tensor = Export::new(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2]).into_versioned()?;
//! let view = tensor.view();
//! let matrix = view.as_faer_mat::<f64>()?;
//! assert_eq!(matrix[(1, 0)], 3.0);
//! # }
//! # Ok::<(), dlbridge::Error>(())
//! ```
//!
//! ## Handle errors
//!
//! Every refusal is an [`Error`] naming the field and the value
//! (`DLTensor.shape[1] = -3: extents must not be negative`). It is `#[non_exhaustive]`: match
//! the variants you handle and end with a `_` arm.
//!
//! ```
//! use dlbridge::{Error, Export};
//! let tensor = Export::new(vec![1u8, 2, 3], &[3]).read_only(true).into_versioned()?;
//! match tensor.into_raw_legacy() {
//!     Ok(_) => unreachable!("a legacy tensor cannot say it is read-only"),
//!     Err(Error::ReadOnlyLegacyExport) => { /* export it versioned instead */ }
//!     Err(other) => return Err(other),
//! }
//! # Ok::<(), dlbridge::Error>(())
//! ```
//!
//! # Safety model
//!
//! **What is `unsafe`, and why.** Only what a library cannot check: that a pointer from outside
//! is what it claims to be, and promises about memory the crate did not allocate.
//! Taking a raw tensor ([`ManagedTensor::from_raw`] and its siblings,
//! [`ManagedTensor::try_from_raw`], [`TensorView::from_dltensor`], [`RawManagedTensor::delete`]);
//! exporting memory an arbitrary owner keeps alive ([`Export::from_raw_parts`],
//! [`ManagedTensor::export_view`], `NdarrayTensorExt::from_array_view` with `ndarray`);
//! vouching for what the descriptor cannot say ([`ManagedTensor::assume_legacy_writable`],
//! [`ManagedTensor::set_device_unchecked`], [`ManagedTensor::set_ready_stream`]); writing
//! through a borrowed descriptor (`NdarrayViewExt::as_array_mut_unchecked` with `ndarray`); stream
//! operations on device memory (`cuda::copy_to_host`, `cuda::wait_for_stream` with `cudarc`);
//! and implementing [`Element`], an `unsafe trait`. Each has a `# Safety` section.
//!
//! **What import validates** (once, before any field is used; the guarantees V1 to V9 of the
//! `validate` module): the major version (only the stable prefix is read otherwise), `ndim`
//! (0 to [`MAX_NDIM`]), non-NULL shape and strides where required, non-negative extents whose
//! product fits, a data type the header allows, non-NULL data for a tensor with elements,
//! strides whose offsets cannot overflow, a span of at most `isize::MAX` bytes, and host
//! addresses that do not wrap. A refused tensor is released once; the error names the field.
//!
//! **What typed access checks**, every time, before a reference exists: the device is host
//! memory ([`Device::is_host_readable`]), the data type is `T`'s, the first element is aligned,
//! every `bool` is 0 or 1; a slice needs a contiguous layout. To write, also: the producer
//! allows writes ([`Writability`]: flagged READ_ONLY, or a legacy tensor that cannot say, is
//! refused), no two indices reach one element, and this handle is the only way Rust reaches
//! the memory ([`ManagedTensor::is_exclusive`]: a share of a tensor in an `Arc`, and an
//! import from Python that is not a copy, read only).
//!
//! **What the types guarantee.** Views, slices and element iterators borrow the tensor, so
//! they cannot outlive it, and writing takes `&mut ManagedTensor`, so no shared view lives
//! beside a mutable one. [`ManagedTensor`] is `Send` and `Sync` (DLPack lets any thread
//! release a tensor; shared access only reads); exported owners must be `Send + 'static`,
//! since their deleter may run on any thread; a panic in an owner's `Drop` never unwinds into
//! C. Setters cannot make memory readable that was not: [`ManagedTensor::set_device`] only
//! relabels host memory as host memory.
//!
//! **What no library can check**: that the allocation is as large as the descriptor says; that
//! the producer's promises hold (memory readable, and writable unless flagged read-only, for as
//! long as the tensor lives; a deleter that releases once); that foreign code does not write
//! the memory while a Rust reference to it lives (the `# Safety` contract of every import);
//! that device work on the memory has finished ([`ManagedTensor::ready_stream`]). These are
//! the caller's side of the `unsafe` import.
//!
//! Every safe public function, and why it cannot reach undefined behaviour, is listed in the
//! repository's
//! [SOUNDNESS.md](https://github.com/dlbridge/dlbridge/blob/main/SOUNDNESS.md); every
//! malformed input met so far, with the error it gets, in
//! [ROBUSTNESS.md](https://github.com/dlbridge/dlbridge/blob/main/ROBUSTNESS.md#hostile-input).
//! Miri runs the test suite under Stacked and Tree Borrows (`make miri`).
//!
//! # What is here
//!
//! - [`ffi`]: the complete C ABI of `dlpack.h` 1.3, checked against the real header;
//! - vocabulary types: [`Version`], [`Device`]/[`DeviceType`], [`DataType`]/[`DataTypeCode`],
//!   [`Flags`], all newtypes over the C integers, so unknown values from a producer are safe;
//! - [`ManagedTensor`]: ownership of a tensor from any producer, versioned or legacy, validated
//!   on entry, whose deleter runs exactly once;
//! - [`TensorView`]: the validated descriptor, with typed zero-copy access ([`Element`]), and
//!   its [`Writability`]: a legacy tensor, which cannot say that its memory may be written,
//!   is read-only ([`ManagedTensor::assume_legacy_writable`] vouches for one);
//! - sub-byte types: packed, or one byte per element where a versioned tensor sets
//!   IS_SUBBYTE_TYPE_PADDED. A legacy tensor has no flags: its sub-byte integers of one lane
//!   (`uint1`, MXNet's bool; `int4`...) are read one byte per element, as legacy producers
//!   stored them, and its float4/float6 packed, as the header defines them
//!   ([`DataType::legacy_sub_byte_padding`]); the view reports that layout in its flags, and
//!   sizes, copies and re-exports follow it (a versioned re-export carries the flag; a tensor
//!   whose layout a legacy consumer would misread is not exported legacy);
//! - [`overlap`]: whether two strided tensors share a byte, decided exactly;
//! - [`Export`]: Rust memory (`Vec`, `Box<[T]>`, `Arc<[T]>`, any owner) as a managed tensor in
//!   one heap allocation, aligned as that memory is; the crate's own allocations
//!   ([`ManagedTensor::zeros`], [`TensorView::to_compact_copy`]) are 64-byte aligned, as TVM's
//!   `from_dlpack` requires; [`ManagedTensor::share_versioned`] re-exports a tensor without a
//!   copy ([`ManagedTensor::share_versioned_into_raw`] straight to a consumer's pointer);
//! - the bridges, each a feature and a module (above): `ndarray`, `nalgebra`, `faer`, `image`,
//!   `burn`, `candle`, `arrow`, and `cuda` (feature `cudarc`: cudarc device buffers exported as
//!   CUDA tensors whose deleter frees them, and CUDA tensors seen as cudarc views that never
//!   free what they see).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

// The modules in layers: each imports only modules listed before it (`make lint` checks it
// with scripts/module-layers.py).
//
// Unit tests only: the test binary's global allocator, which shows a test the blocks freed.
#[cfg(test)]
mod alloc_watch;

// Vocabulary: the header's value types and constants; they import nothing of the crate.
mod device;
mod dtype;
mod flags;
mod version;

// The C ABI over that vocabulary; the error type; stride arithmetic and the overlap test.
mod error;
pub mod ffi;
pub mod layout;
pub mod overlap;

// Rust element types; validation, the one trust boundary; and what stands on it: views of
// the validated descriptor, the owning handle, typed access to the elements.
mod element;
mod validate;
mod view;
mod managed;
mod elements;
// XLA's FFI, through which JAX calls native code inside `jax.jit`: its C ABI, its data types,
// and a handler's call read as views.
pub mod xla;
// The seal of the bridges' extension traits: only the crate's own types implement them.
#[cfg(any(
    feature = "ndarray",
    feature = "nalgebra",
    feature = "faer",
    feature = "image",
    feature = "burn",
    feature = "candle",
    feature = "arrow",
    feature = "cudarc"
))]
mod sealed;

// Export of memory as managed tensors, and the `ndarray` bridge.
mod export;
#[cfg(feature = "ndarray")]
#[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
pub mod ndarray;
// The bridges to the Rust libraries users hold tensors in, one folder each, in the order of the
// layout they speak: nalgebra and faer (matrices), image (pixels), burn and candle (row-major
// tensors), arrow (columns).
#[cfg(feature = "nalgebra")]
#[cfg_attr(docsrs, doc(cfg(feature = "nalgebra")))]
pub mod nalgebra;
#[cfg(feature = "faer")]
#[cfg_attr(docsrs, doc(cfg(feature = "faer")))]
pub mod faer;
#[cfg(feature = "image")]
#[cfg_attr(docsrs, doc(cfg(feature = "image")))]
pub mod image;
#[cfg(feature = "burn")]
#[cfg_attr(docsrs, doc(cfg(feature = "burn")))]
pub mod burn;
#[cfg(feature = "candle")]
#[cfg_attr(docsrs, doc(cfg(feature = "candle")))]
pub mod candle;
#[cfg(feature = "arrow")]
#[cfg_attr(docsrs, doc(cfg(feature = "arrow")))]
pub mod arrow;

#[cfg(feature = "cudarc")]
#[cfg_attr(docsrs, doc(cfg(feature = "cudarc")))]
pub mod cuda;

#[cfg(feature = "safetensors")]
#[cfg_attr(docsrs, doc(cfg(feature = "safetensors")))]
pub mod safetensors;

// Compile-fail doc tests of the lifetimes and bounds the safety model relies on.
#[cfg(doctest)]
mod compile_fail_checks;

pub use device::{Device, DeviceType};
pub use dtype::{DataType, DataTypeCode, ParseDataTypeError};
pub use element::Element;
pub use elements::{Elements, ElementsMut};
pub use error::{Error, MAX_NDIM, Result};
pub use export::{Export, HostBuffer};
pub use flags::{Flags, Writability};
pub use managed::{ManagedTensor, RawManagedTensor, ReleaseOnDrop};
pub use version::Version;
pub use view::TensorView;

/// The `half` crate, at the version whose `f16` and `bf16` are [`Element`]s here: use it
/// through this path (`dlbridge::half::bf16`) rather than a dependency of one's own, whose
/// version could differ (its types would then be other types, and not elements).
pub use half;
/// The `num-complex` crate, at the version whose `Complex<f32>` and `Complex<f64>` are
/// [`Element`]s here (`dlbridge::num_complex::Complex`), as for [`half`].
pub use num_complex;

/// The crate's README (its crates.io page), whose examples are compiled and run as doc tests.
/// The repository's README shows the same quick start: `tests/readme_quick_start.rs` keeps
/// the two equal.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(doctest)]
mod guide_doctests;
