//! # dlbridge-pyo3: the Python DLPack protocol for Rust extensions
//!
//! Built on the [`dlbridge`] core, for extension modules written with PyO3:
//!
//! - **consume** any Python object implementing `__dlpack__` / `__dlpack_device__`, or a raw
//!   capsule, into the core's owning [`dlbridge::ManagedTensor`] ([`from_dlpack`], [`from_capsule`]),
//!   negotiating with old and new producers as the array API and DLPack 1.3 describe;
//! - **produce** capsules from any managed tensor ([`into_capsule`]), whose destructor frees
//!   the tensor only when no consumer took it (decided by the capsule's name) and keeps an
//!   exception in flight intact; export by the rules of `__dlpack__` ([`export_capsule`]);
//!   make a PyO3 class of one's own a complete producer with one call ([`publish_dlpack`]:
//!   `__dlpack__`, `__dlpack_device__` and the C exchange API);
//! - take the **fast path** of DLPack 1.3's C exchange API (`__dlpack_c_exchange_api__`, as
//!   PyTorch and PaddlePaddle publish it) when a type offers one ([`exchange_api`]), and give
//!   on every path the answer of the producer's own `__dlpack__`, or a stricter one (PyTorch's
//!   and PaddlePaddle's tensors that autograd tracks, PyTorch's lazy views);
//! - **typed tensor arguments** for `#[pyfunction]`s ([`TensorArg`], [`TensorArgMut`]),
//!   borrowed zero-copy, whose writes never alias another argument (a registry shared by
//!   every module of the process) and never go behind autograd's back; classes published with
//!   [`publish_dlpack`] also carry a [`WritabilityHook`], so that read-only instances are
//!   refused for writing on the borrowed path;
//! - keep Python objects alive from tensors whose deleter may run on any thread
//!   ([`PyObjectOwner`]).
//!
//! A kernel author imports all of it with `use dlbridge_pyo3::prelude::*;` ([`prelude`]),
//! ndarray included: the crate re-exports [`ndarray`] (and [`pyo3`]) at the versions it is
//! built with, so that an extension does not have to match them by hand.
//!
//! Errors follow the protocol: `BufferError` for a tensor that cannot be imported as sent
//! (with the core's message naming the field and the value), `TypeError` for an object that
//! is no DLPack producer, `ValueError` for a capsule that is not an unconsumed DLPack capsule.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

// The modules in layers: each imports only modules listed before it (`make lint` checks it
// with scripts/module-layers.py). Leaves first; then host memory without DLPack; then the
// consumer side (the exchange table, per-type dispatch, consumption); then the producer side,
// which never imports the consumer side; on top, typed arguments, which read tensors as the
// consumer does and return results as the producer does.
mod errors;
mod owner;
mod trampoline;
mod capsule;
mod device;
mod writability_hook;
mod host;
mod framework;
mod exchange;
mod dispatch;
mod consume;
mod produce;
mod args;
pub mod prelude;

pub use args::borrow::{explain_argument, ArgumentPath, ArgumentReport};
#[doc(hidden)]
pub use args::borrow::{inspect_argument, ArgumentInspection};
pub use args::constraints::{AnyLayout, AnyShape, CContiguous, FContiguous, Layout, Shape};
pub use args::tensor_arg::{TensorArg, TensorArgMut};
pub use capsule::{
    from_capsule, into_capsule, DLTENSOR, DLTENSOR_VERSIONED, USED_DLTENSOR,
    USED_DLTENSOR_VERSIONED,
};
pub use consume::{from_dlpack, ImportOptions};
pub use consume::{from_dlpack_explained, Copier, ImportPath, ImportReport, ImportStep};
pub use device::{device_argument, device_from_tuple, dlpack_device};
pub use dispatch::exchange_api;
pub use dlbridge;
pub use errors::to_py_err;
pub use exchange::{exchange_api_enabled, ExchangeApi, DLPACK_EXCHANGE_API, NO_EXCHANGE_API_ENV};
pub use host::formats::buffer_format;
pub use ndarray;
pub use owner::PyObjectOwner;
pub use produce::class::TensorClass;
pub use produce::exchange_table::{exchange_api_exports, publish_exchange_api};
pub use produce::methods::{export_capsule, publish_dlpack_methods, ExportRequest};
pub use produce::publish_dlpack;
pub use produce::returning::{return_like, IntoTensor, TensorProducer};
pub use pyo3;
pub use writability_hook::{WritabilityHook, WRITABILITY_ATTRIBUTE, WRITABILITY_CAPSULE};
