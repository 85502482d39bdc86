// Soundness: a `StreamHandle`'s raw handle is a private field, so safe code cannot build one
// around an arbitrary integer and skip the `unsafe` `StreamHandle::new`.
//~ error[E0423]: cannot initialize a tuple struct which contains private fields
use dlbridge_pyo3::streams::{ConsumerStream, StreamHandle};

fn main() {
    let built = ConsumerStream::Handle(StreamHandle(0x1234));
    assert_ne!(built, ConsumerStream::NoSync);
}
