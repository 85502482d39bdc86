// Soundness: a view borrows its argument, which keeps the memory alive (its reference to the
// object, its held buffer or its imported tensor) and its claim in the aliasing registry; so
// the view cannot outlive the argument.
//~ error[E0505]: cannot move out of `x` because it is borrowed
use dlbridge_pyo3::prelude::*;

fn first(x: TensorArg<'_, f32, Ix1>) -> f32 {
    let view = x.view();
    drop(x);
    view[0]
}

fn main() {}
