// A tensor cannot be asked to be both C- and F-contiguous.
//~ error[E0277]: conflicting layouts: `dlbridge_pyo3::CContiguous` and `dlbridge_pyo3::FContiguous` cannot both be required
//~ give at most one of `CContiguous` and `FContiguous`
use dlbridge_pyo3::prelude::*;

fn total(x: TensorArg<'_, f32, Ix2, (CContiguous, FContiguous)>) -> f32 {
    x.view().sum()
}

fn main() {}
