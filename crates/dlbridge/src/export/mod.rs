//! Export: Rust memory, or memory any owner keeps alive, as DLPack managed tensors, each in one
//! heap allocation.
//!
//! Every export ends in `block::export_owner`, which moves the owner of the memory into a
//! single heap block with the managed struct, the shape and the strides (the `block` module:
//! the crate's only raw allocation and deallocation, and the deleter), and validates the
//! tensor made like any import, unless it copies a descriptor already validated. What goes in,
//! by file:
//!
//! - `block`: the one-allocation block, the crate's only allocation and deleter;
//! - `host_buffer`: the Rust buffers the builder takes, and whether each exports writable;
//! - `builder`: the [`Export`] builder, over a [`HostBuffer`] or any owner
//!   ([`Export::from_raw_parts`]);
//! - `sharing`: a tensor or view this crate validated, re-exported without a copy and without
//!   a second validation, kept alive by its owner;
//! - `fresh_storage`: memory this crate allocates: zero-filled tensors and compact copies;
//! - `relayout`: a tensor's elements with a new shape or axis order, without a copy, kept alive
//!   by the tensor (reshape, permute, insert_axis), and a compact copy where one is needed;
//! - and, with the `ndarray` feature, the `ndarray` module's arrays.

pub(crate) mod block;
mod host_buffer;
mod builder;
mod sharing;
mod fresh_storage;
mod relayout;

pub use builder::Export;
#[cfg(feature = "candle")]
pub(crate) use builder::check_layout;
#[cfg(feature = "burn")]
pub(crate) use fresh_storage::CacheLine;
#[cfg(any(feature = "cudarc", feature = "burn"))]
pub(crate) use fresh_storage::zeroed_storage;
pub use host_buffer::HostBuffer;
