// Soundness: while a mutable view (or slice) of a writable argument lives, no shared view of
// it can be taken: the elements are never read and written through it at once.
//~ error[E0502]: cannot borrow `x` as immutable because it is also borrowed as mutable
use dlbridge_pyo3::prelude::*;

fn shift(mut x: ContiguousArgMut<'_, f32, Ix1>) {
    let written = x.as_mut_slice();
    let read = x.view();
    written[0] = read[1];
}

fn main() {}
