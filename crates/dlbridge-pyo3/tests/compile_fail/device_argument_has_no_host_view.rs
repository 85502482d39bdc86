// Soundness: a device argument's memory is on a device, never read by the CPU: it has no host
// view or slice, only its address (whose use is the kernel's `unsafe` launch).
//~ error[E0599]: no method named `view` found
//~ error[E0599]: no method named `as_slice` found
use dlbridge_pyo3::prelude::*;

fn total(x: CudaArg<'_, f32, Ix1, CContiguous>) -> f32 {
    x.view().sum() + x.as_slice().iter().sum::<f32>()
}

fn main() {}
