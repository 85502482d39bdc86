// Soundness: the read guard of a tensor class's tensor cannot be dropped (its claim released,
// so that a `TensorArgMut` may write the bytes) while a slice borrowed from it lives.
//~ error[E0505]: cannot move out of `read` because it is borrowed
use dlbridge_pyo3::prelude::*;
use pyo3::prelude::*;

fn first(py: Python<'_>, tensor: &ClassTensor) -> PyResult<u8> {
    let read = tensor.read(py)?;
    let values: &[u8] = read.view().as_slice().map_err(to_py_err)?;
    drop(read);
    Ok(values[0])
}

fn main() {}
