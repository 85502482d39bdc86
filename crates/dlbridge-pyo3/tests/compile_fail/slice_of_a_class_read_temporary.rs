// Soundness: the read guard of a tensor class's tensor is a temporary here, dropped (and its
// read claim released) at the end of the statement: a slice borrowed from it cannot be kept.
//~ error[E0716]: temporary value dropped while borrowed
use dlbridge_pyo3::prelude::*;
use pyo3::prelude::*;

fn first(py: Python<'_>, tensor: &ClassTensor) -> PyResult<u8> {
    let values: &[u8] = tensor.read(py)?.view().as_slice().map_err(to_py_err)?;
    Ok(values[0])
}

fn main() {}
