//! `dlbridge_peer_rust_numpy`: a benchmark peer, not part of dlbridge.
//!
//! The kernels `benches/python_exchange.py` times beside dlbridge's, written as a rust-numpy
//! user would write them: typed read-only arguments (`PyReadonlyArray2`, `PyReadonlyArrayDyn`),
//! and a new array returned with `into_pyarray`. Built by
//! `benches/peers/build-cargo-peer.sh rust-numpy` into `target/peers/python/`.

use numpy::ndarray::Zip;
use numpy::{IntoPyArray, PyArrayDyn, PyReadonlyArray2, PyReadonlyArrayDyn};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Takes three float32 matrices and does nothing: the cost of taking the arguments.
#[pyfunction]
fn noop3(
    _a: PyReadonlyArray2<'_, f32>,
    _b: PyReadonlyArray2<'_, f32>,
    _c: PyReadonlyArray2<'_, f32>,
) {
}

/// `a + b` for two float32 arrays of one shape (any number of dimensions), as a new NumPy
/// array: the same kernel as the dlbridge example's `add`.
#[pyfunction]
fn add<'py>(
    py: Python<'py>,
    a: PyReadonlyArrayDyn<'py, f32>,
    b: PyReadonlyArrayDyn<'py, f32>,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    let (a, b) = (a.as_array(), b.as_array());
    if a.shape() != b.shape() {
        return Err(PyValueError::new_err("add: shapes differ"));
    }
    let sum = Zip::from(&a).and(&b).map_collect(|&x, &y| x + y);
    Ok(sum.into_pyarray(py))
}

/// The `dlbridge_peer_rust_numpy` extension module.
#[pymodule]
fn dlbridge_peer_rust_numpy(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(noop3, module)?)?;
    module.add_function(wrap_pyfunction!(add, module)?)?;
    Ok(())
}
