// Constraints come last; an element type in their place is not one.
//~ error[E0277]: `f64` is not a tensor constraint
//~ expected a layout, a shape or a tuple of them here
use dlbridge_pyo3::prelude::*;

fn total(x: TensorArg<'_, f32, Ix2, f64>) -> f32 {
    x.view().sum()
}

fn main() {}
