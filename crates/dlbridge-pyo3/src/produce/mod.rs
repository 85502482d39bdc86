//! Production: making a PyO3 class of one's own a complete DLPack producer, and returning
//! Rust-owned tensors to Python.
//!
//! - [`class`]: the [`TensorClass`] trait a class implements, and what the functions
//!   published on it share; this module's [`publish_dlpack`] publishes everything at once;
//! - [`methods`]: `__dlpack__` and `__dlpack_device__`, by the rules of [`export_capsule`];
//! - [`exchange_table`]: DLPack 1.3's C exchange API and dlbridge's writability hook;
//! - [`returning`]: results handed to the caller's framework ([`return_like`]).
//!
//! The produce side never imports the consume side ([`crate::consume`], [`crate::args`]):
//! a producer's answers do not depend on how dlbridge reads other producers.

pub(crate) mod class;
pub(crate) mod exchange_table;
pub(crate) mod methods;
pub(crate) mod returning;

use pyo3::prelude::*;

use self::class::TensorClass;
#[cfg(doc)]
use self::{methods::export_capsule, returning::return_like};

/// Makes `T` a complete DLPack producer: publishes `__dlpack__` and `__dlpack_device__`
/// ([`publish_dlpack_methods`](crate::publish_dlpack_methods)) and the C exchange API
/// ([`publish_exchange_api`](crate::publish_exchange_api)) on its type. Call it once, after
/// the class is added to its module.
pub fn publish_dlpack<T: TensorClass>(py: Python<'_>) -> PyResult<()> {
    methods::publish_dlpack_methods::<T>(py)?;
    exchange_table::publish_exchange_api::<T>(py)
}
