// Soundness: with the GIL released (`py.detach`), a kernel may read its arguments' elements
// but not touch their Python objects: `object` needs a `Python` token, which cannot enter
// the closure.
//~ error[E0277]
//~ cannot be shared between threads safely
//~ to implement `Ungil`
use dlbridge_pyo3::prelude::*;
use pyo3::prelude::*;

#[pyfunction]
fn length(py: Python<'_>, x: TensorArg<'_, f32, Ix1>) -> usize {
    py.detach(|| x.object(py).len().unwrap_or(0))
}

fn main() {}
