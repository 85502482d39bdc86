// `usize` has no DLPack data type of its own (its width depends on the platform).
//~ error[E0277]: `usize` is not a DLPack element type
//~ note: element types: bool, i8, i16, i32, i64, u8, u16, u32, u64, half::f16, half::bf16, f32, f64
use dlbridge_pyo3::prelude::*;

fn count(indices: TensorArg<'_, usize, Ix1>) -> usize {
    indices.view().len()
}

fn main() {}
