// Soundness: a tensor class's tensor gives its elements only through its read guard
// (`ClassTensor::read`): it has no view of its own, and the `Arc` its exports share with
// Python is private to dlbridge-pyo3.
//~ error[E0599]: no method named `view` found for reference `&dlbridge_pyo3::ClassTensor`
//~ error[E0624]: method `shared` is private
use dlbridge_pyo3::prelude::*;

fn first(tensor: &ClassTensor) -> u8 {
    tensor.view().as_slice::<u8>().unwrap()[0]
}

fn shared(tensor: &ClassTensor) -> usize {
    std::sync::Arc::strong_count(tensor.shared())
}

fn main() {}
