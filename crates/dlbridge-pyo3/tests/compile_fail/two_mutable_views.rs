// Soundness: a writable argument hands out one mutable view at a time (`&mut self`), so no
// two `&mut` reach one element through it.
//~ error[E0499]: cannot borrow `x` as mutable more than once at a time
use dlbridge_pyo3::prelude::*;

fn fill(mut x: TensorArgMut<'_, f32, Ix1>) {
    let mut a = x.view_mut();
    let mut b = x.view_mut();
    a[0] = 1.0;
    b[0] = 2.0;
}

fn main() {}
