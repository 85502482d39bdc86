//! Streams, in one place: what a device tensor's exchange owes the other side when its device
//! orders work by streams (CUDA, ROCm).
//!
//! - [`ConsumerStream`] and [`StreamHandle`]: the protocol's `stream=` argument, as a consumer
//!   asks for it ([`ImportOptions::stream`](crate::ImportOptions::stream)) and a producer reads
//!   it (`__dlpack__(stream=...)`), with the standard's default stream of each device
//!   (`consumer`);
//! - [`WorkStream`] and [`WorkStreamSource`]: the stream a consumer's device work must run on
//!   for a producer's tensor (a device argument's `stream()`), from the producer's exchange
//!   table, its framework's current stream, or the legacy default (`work`);
//! - the ordering itself, through the CUDA driver (feature `cuda`): a consumer's stream made to
//!   wait for the stream a tensor is ready on, and a CUDA tensor copied to the host (`order`).

pub(crate) mod consumer;
pub(crate) mod order;
pub(crate) mod work;

pub use consumer::{ConsumerStream, StreamHandle};
pub use work::{WorkStream, WorkStreamSource};
