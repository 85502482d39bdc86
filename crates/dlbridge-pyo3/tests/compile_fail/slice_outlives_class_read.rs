// Soundness: a slice of a tensor class's tensor borrows the read guard, which holds the read
// claim in the aliasing registry: it cannot outlive the guard, so no `&[T]` of the class's
// memory lives unclaimed beside a kernel's `&mut [T]` (`TensorArgMut`) of the same bytes.
//~ error[E0597]: `read` does not live long enough
use dlbridge_pyo3::prelude::*;
use pyo3::prelude::*;

fn first(py: Python<'_>, tensor: &ClassTensor) -> PyResult<u8> {
    let values: &[u8] = {
        let read = tensor.read(py)?;
        read.view().as_slice().map_err(to_py_err)?
    };
    Ok(values[0])
}

fn main() {}
