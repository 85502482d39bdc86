// Soundness (hygiene): an argument's lifetime is the GIL token's, so that it is not kept
// beyond the attachment it was extracted in (nor stored in a `#[pyclass]`, or a static).
//~ lifetime may not live long enough
use dlbridge_pyo3::prelude::*;
use pyo3::prelude::*;

fn keep(object: Py<PyAny>) {
    let kept = Python::attach(|py| object.bind(py).extract::<TensorArg<'_, f32>>().unwrap());
    drop(kept);
}

fn main() {}
