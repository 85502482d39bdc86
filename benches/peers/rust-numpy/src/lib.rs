//! `dlbridge_peer_rust_numpy`: a benchmark peer, not part of dlbridge.
//!
//! The kernels of `../dlbridge-user`, written as a rust-numpy user would write them: typed
//! arguments (`PyReadonlyArray2`, `PyReadonlyArrayDyn`, `PyReadwriteArray1`), and a new array
//! returned with `into_pyarray`. Built by `benches/peers/build-cargo-peer.sh rust-numpy` into
//! `target/peers/python/`; benches/python_exchange.py times both in one run.

use numpy::ndarray::{Array1, Array2, Axis, Zip};
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayDyn, PyReadonlyArray1, PyReadonlyArray2,
    PyReadonlyArray3, PyReadonlyArrayDyn, PyReadwriteArray1, PyReadwriteArray2,
};
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
/// array.
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

/// The softmax of each row of a float32 matrix, as a new NumPy array.
#[pyfunction]
fn softmax<'py>(py: Python<'py>, x: PyReadonlyArray2<'py, f32>) -> Bound<'py, PyArray2<f32>> {
    let view = x.as_array();
    let mut result = Array2::<f32>::zeros(view.raw_dim());
    for (row, mut out) in view.rows().into_iter().zip(result.rows_mut()) {
        let max = row.fold(f32::NEG_INFINITY, |max, &value| max.max(value));
        let mut total = 0.0;
        for (value, out) in row.iter().zip(out.iter_mut()) {
            *out = (value - max).exp();
            total += *out;
        }
        out.mapv_inplace(|value| value / total);
    }
    result.into_pyarray(py)
}

/// The 256-bin histogram of a uint8 array of any number of dimensions, as int64 counts.
#[pyfunction]
fn histogram<'py>(py: Python<'py>, x: PyReadonlyArrayDyn<'py, u8>) -> Bound<'py, PyArray1<i64>> {
    let mut counts = Array1::<i64>::zeros(256);
    for &value in x.as_array().iter() {
        counts[usize::from(value)] += 1;
    }
    counts.into_pyarray(py)
}

/// `out = x * factor` for float64 matrices of one shape, written into the caller's `out`.
#[pyfunction]
fn scale_into(
    x: PyReadonlyArray2<'_, f64>,
    factor: f64,
    mut out: PyReadwriteArray2<'_, f64>,
) -> PyResult<()> {
    let view = x.as_array();
    let mut target = out.as_array_mut();
    if view.shape() != target.shape() {
        return Err(PyValueError::new_err("scale_into: shapes differ"));
    }
    Zip::from(&mut target).and(&view).for_each(|out, &value| *out = value * factor);
    Ok(())
}

/// `y += alpha * x` for float32 vectors of one length, in place.
#[pyfunction]
fn axpy(alpha: f32, x: PyReadonlyArray1<'_, f32>, mut y: PyReadwriteArray1<'_, f32>) -> PyResult<()> {
    let view = x.as_array();
    let mut target = y.as_array_mut();
    if view.len() != target.len() {
        return Err(PyValueError::new_err("axpy: lengths differ"));
    }
    target.scaled_add(alpha, &view);
    Ok(())
}

/// The luma of a uint8 HxWx3 image (ITU-R BT.601 weights), as a new uint8 HxW image.
#[pyfunction]
fn to_gray<'py>(
    py: Python<'py>,
    image: PyReadonlyArray3<'py, u8>,
) -> PyResult<Bound<'py, PyArray2<u8>>> {
    let view = image.as_array();
    if view.shape()[2] != 3 {
        return Err(PyValueError::new_err("to_gray: expected 3 channels"));
    }
    let gray = view.map_axis(Axis(2), |rgb| {
        (0.299 * f32::from(rgb[0]) + 0.587 * f32::from(rgb[1]) + 0.114 * f32::from(rgb[2]))
            .round() as u8
    });
    Ok(gray.into_pyarray(py))
}

fn add_kernels(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(noop3, module)?)?;
    module.add_function(wrap_pyfunction!(add, module)?)?;
    module.add_function(wrap_pyfunction!(softmax, module)?)?;
    module.add_function(wrap_pyfunction!(histogram, module)?)?;
    module.add_function(wrap_pyfunction!(scale_into, module)?)?;
    module.add_function(wrap_pyfunction!(axpy, module)?)?;
    module.add_function(wrap_pyfunction!(to_gray, module)?)?;
    Ok(())
}

/// The module as built with cargo's default release profile.
#[cfg(not(feature = "lto-module"))]
#[pymodule]
fn dlbridge_peer_rust_numpy(module: &Bound<'_, PyModule>) -> PyResult<()> {
    add_kernels(module)
}

/// The module as built with fat LTO and one codegen unit (the dlbridge workspace's profile).
#[cfg(feature = "lto-module")]
#[pymodule]
fn dlbridge_peer_rust_numpy_lto(module: &Bound<'_, PyModule>) -> PyResult<()> {
    add_kernels(module)
}
