// Soundness: a raw stream handle (a `cudaStream_t` that dlbridge records as a tensor's ready
// stream and hands to the driver) enters only through an `unsafe fn`: `StreamHandle::new`, or
// `ConsumerStream::from_dlpack_value` for a Python `stream=` integer.
//~ error[E0133]: call to unsafe function
//~ StreamHandle::new` is unsafe
//~ ConsumerStream::from_dlpack_value` is unsafe
use dlbridge_pyo3::streams::{ConsumerStream, StreamHandle};

fn main() {
    let handle = ConsumerStream::Handle(StreamHandle::new(0x1234));
    let parsed = ConsumerStream::from_dlpack_value(0x1234).ok();
    assert_eq!(Some(handle), parsed);
}
