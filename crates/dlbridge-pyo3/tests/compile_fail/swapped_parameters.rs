// The shape and the number of dimensions in each other's places.
//~ error[E0277]: `Rgb` is not a number of dimensions
//~ expected ndarray's `Ix0`..`Ix6` or `IxDyn` here
//~ error[E0277]: `Dim<[usize; 3]>` is not a tensor constraint
//~ the parameters are `TensorArg<'_, Element, Dimensions, Constraints>`
use dlbridge_pyo3::prelude::*;
use pyo3::prelude::*;

shape!(pub Rgb = [_, _, 3]);

#[pyfunction]
fn brightness(image: TensorArg<'_, u8, Rgb, Ix3>) -> u64 {
    image.view().iter().map(|&value| u64::from(value)).sum()
}

fn main() {}
