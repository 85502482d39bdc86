// Soundness: a kernel's body gets its `TensorArg` parameters as read-only views (`ArrayView`),
// eagerly and inside XLA, where the argument buffers are XLA's to keep unchanged: the body
// cannot write them.
//~ error[E0596]: cannot borrow data in dereference of `ArrayBase<ViewRepr<&f32>
//~ as mutable
use dlbridge_pyo3::prelude::*;

dlbridge_pyo3::kernel! {
    /// Writes its input.
    pub fn overwrite(x: TensorArg<'_, f32>, out: TensorArgMut<'_, f32>)
    where out = like(x)
    {
        x.fill(0.0);
        out.fill(1.0);
        Ok(())
    }
}

fn main() {
    let _ = overwrite::KERNEL;
}
