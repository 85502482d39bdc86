//! # dlbridge: DLPack for Rust
//!
//! [DLPack](https://dmlc.github.io/dlpack/latest/) is the in-memory tensor standard that
//! NumPy, PyTorch, JAX, TensorFlow, CuPy and others use to share tensors without copying.
//! This crate is its core for Rust, with no Python dependency:
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
//!   `from_dlpack` requires;
//! - with the `ndarray` feature, zero-copy conversion to and from `ndarray` arrays;
//! - with the `cudarc` feature, [`cuda`]: cudarc device buffers exported as CUDA tensors whose
//!   deleter frees them, and CUDA tensors seen as cudarc views that never free what they see.
//!
//! ```
//! use dlbridge::{DataType, Export, ManagedTensor};
//!
//! // Export a Rust vector as a 2x3 DLPack tensor...
//! let tensor = Export::new(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).into_versioned()?;
//! let raw = tensor.into_raw().versioned().unwrap(); // a DLManagedTensorVersioned*
//!
//! // ...and import it back, as a consumer would.
//! let imported = unsafe { ManagedTensor::from_raw_versioned(raw) }?;
//! let view = imported.view();
//! assert_eq!(view.dtype(), DataType::FLOAT32);
//! assert_eq!(view.shape(), &[2, 3]);
//! assert_eq!(view.elements::<f32>()?.get(&[1, 0]), Some(&4.0));
//! # Ok::<(), dlbridge::Error>(())
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

// The modules in layers: each imports only modules listed before it (`make lint` checks it
// with scripts/module-layers.py).
//
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

// Export of memory as managed tensors, and the `ndarray` bridge.
mod export;
#[cfg(feature = "ndarray")]
mod ndarray;

#[cfg(feature = "cudarc")]
#[cfg_attr(docsrs, doc(cfg(feature = "cudarc")))]
pub mod cuda;

pub use device::{Device, DeviceType};
pub use dtype::{DataType, DataTypeCode, ParseDataTypeError};
pub use element::Element;
pub use elements::{Elements, ElementsMut};
pub use error::{Error, Result, MAX_NDIM};
pub use export::{Export, HostBuffer};
pub use flags::{Flags, Writability};
pub use managed::{ManagedTensor, RawManagedTensor};
pub use version::Version;
pub use view::TensorView;

/// The crate's README (its crates.io page), whose examples are compiled and run as doc tests.
/// The repository's README shows the same quick start: `tests/readme_quick_start.rs` keeps
/// the two equal.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
