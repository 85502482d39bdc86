// Soundness: `TensorArgMut` is `Sync` because `&TensorArgMut` only reads: threads that share
// the argument cannot write through it (every writing accessor takes `&mut self`).
//~ error[E0596]: cannot borrow `*x` as mutable, as it is behind a `&` reference
use dlbridge_pyo3::prelude::*;

fn race(x: &TensorArgMut<'_, f32, Ix1>) {
    std::thread::scope(|scope| {
        scope.spawn(|| x.view_mut().fill(1.0));
        scope.spawn(|| x.view().sum());
    });
}

fn main() {}
