// Soundness: the slice of a contiguous argument lives as long as the argument (`&self`), not
// as long as its lifetime parameter: the argument's memory and claim end when it is dropped,
// at the end of the call, so a slice cannot be returned from the kernel.
//~ error[E0515]: cannot return value referencing function parameter `x`
//~ returns a value referencing data owned by the current function
use dlbridge_pyo3::prelude::*;

fn values<'py>(x: ContiguousArg<'py, f32>) -> &'py [f32] {
    x.as_slice()
}

fn main() {}
