// Soundness: arguments are `Send` and `Sync` for every element type because an element type
// is `Sync` (`Element: Send + Sync`): a type with interior mutability, whose shared views
// threads could write through, is no element type.
//~ error[E0277]: `Cell<u8>` is not a DLPack element type
use dlbridge_pyo3::prelude::*;

fn count(x: TensorArg<'_, std::cell::Cell<u8>, Ix1>) -> usize {
    x.view().len()
}

fn main() {}
