// Soundness: a view may go to threads that end before the argument does (scoped threads,
// rayon), never to one that may outlive the call, where the memory and its claim are gone.
//~ error[E0597]: `x` does not live long enough
//~ argument requires that `x` is borrowed for `'static`
use dlbridge_pyo3::prelude::*;

fn fill_later(mut x: TensorArgMut<'_, f32, Ix1>) {
    let mut view = x.view_mut();
    std::thread::spawn(move || view.fill(0.0));
}

fn main() {}
