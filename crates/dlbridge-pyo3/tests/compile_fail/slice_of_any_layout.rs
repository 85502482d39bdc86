// `as_slice` cannot fail only where the argument's type promises a contiguous layout.
//~ error[E0277]: `as_slice` needs a contiguous layout; `AnyLayout` allows any strides
//~ or call `try_as_slice`, which is `None` for a tensor that is not contiguous
use dlbridge_pyo3::prelude::*;

fn total(x: TensorArg<'_, f32, Ix2>) -> f32 {
    x.as_slice().iter().sum()
}

fn main() {}
