//! `dlbridge_peer_dlbridge_user`: benchmark kernels, not part of dlbridge.
//!
//! Small kernels written with dlbridge-pyo3 the way its users write them, in a crate of their
//! own built with cargo's default release profile (see Cargo.toml). `../rust-numpy` has the
//! same kernels written with rust-numpy; benches/python_exchange.py times both in one run.
//! Each kernel checks what a user's would, and fails with a Python exception otherwise.

use dlbridge_pyo3::ndarray::Zip;
use dlbridge_pyo3::prelude::*;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Takes three float32 matrices and does nothing: the cost of taking the arguments.
#[pyfunction]
fn noop3(_a: TensorArg2<'_, f32>, _b: TensorArg2<'_, f32>, _c: TensorArg2<'_, f32>) {}

/// `a + b` for two float32 arrays of one shape (any number of dimensions), as a new array of
/// `a`'s framework.
#[pyfunction]
fn add<'py>(
    py: Python<'py>,
    a: TensorArg<'_, f32>,
    b: TensorArg<'_, f32>,
) -> PyResult<Bound<'py, PyAny>> {
    let (x, y) = (a.view(), b.view());
    if x.shape() != y.shape() {
        return Err(PyValueError::new_err("add: shapes differ"));
    }
    let sum = Zip::from(&x).and(&y).map_collect(|&x, &y| x + y);
    a.return_like(py, sum)
}

/// The softmax of each row of a float32 matrix, as a new matrix of the caller's framework.
#[pyfunction]
fn softmax<'py>(py: Python<'py>, x: TensorArg2<'_, f32>) -> PyResult<Bound<'py, PyAny>> {
    let view = x.view();
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
    x.return_like(py, result)
}

/// The 256-bin histogram of a uint8 array of any number of dimensions, as int64 counts.
#[pyfunction]
fn histogram<'py>(py: Python<'py>, x: TensorArg<'_, u8>) -> PyResult<Bound<'py, PyAny>> {
    let mut counts = Array1::<i64>::zeros(256);
    for &value in x.view().iter() {
        counts[usize::from(value)] += 1;
    }
    x.return_like(py, counts)
}

/// `out = x * factor` for float64 matrices of one shape, written into the caller's `out`.
#[pyfunction]
fn scale_into(
    x: TensorArg2<'_, f64>,
    factor: f64,
    mut out: TensorArgMut2<'_, f64>,
) -> PyResult<()> {
    let view = x.view();
    let mut target = out.view_mut();
    if view.shape() != target.shape() {
        return Err(PyValueError::new_err("scale_into: shapes differ"));
    }
    Zip::from(&mut target)
        .and(&view)
        .for_each(|out, &value| *out = value * factor);
    Ok(())
}

/// `y += alpha * x` for float32 vectors of one length, in place.
#[pyfunction]
fn axpy(alpha: f32, x: TensorArg1<'_, f32>, mut y: TensorArgMut1<'_, f32>) -> PyResult<()> {
    let view = x.view();
    let mut target = y.view_mut();
    if view.len() != target.len() {
        return Err(PyValueError::new_err("axpy: lengths differ"));
    }
    target.scaled_add(alpha, &view);
    Ok(())
}

/// The luma of a uint8 HxWx3 image (ITU-R BT.601 weights), as a new uint8 HxW image.
#[pyfunction]
fn to_gray<'py>(py: Python<'py>, image: TensorArg3<'_, u8>) -> PyResult<Bound<'py, PyAny>> {
    let view = image.view();
    if view.shape()[2] != 3 {
        return Err(PyValueError::new_err("to_gray: expected 3 channels"));
    }
    let gray = view.map_axis(Axis(2), |rgb| {
        (0.299 * f32::from(rgb[0]) + 0.587 * f32::from(rgb[1]) + 0.114 * f32::from(rgb[2])).round()
            as u8
    });
    image.return_like(py, gray)
}

dlbridge_pyo3::kernel! {
    /// `out = alpha * x + y` for float32 tensors of one shape, declared once for eager calls,
    /// `jax.jit` (`dlbridge.jax.kernel`) and `torch.compile` (`dlbridge.torch.register`).
    pub fn axpy_into(x: TensorArg<'_, f32>, y: TensorArg<'_, f32>, out: TensorArgMut<'_, f32>, alpha: f32)
    where out = like(x)
    {
        if x.shape() != y.shape() {
            return Err("x and y differ in shape".into());
        }
        Zip::from(&mut out).and(&x).and(&y).for_each(|out, &x, &y| *out = alpha * x + y);
        Ok(())
    }
}

fn add_kernels(module: &Bound<'_, PyModule>) -> PyResult<()> {
    dlbridge_pyo3::kernel::publish_kernels(module, &[axpy_into::KERNEL])?;
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
fn dlbridge_peer_dlbridge_user(module: &Bound<'_, PyModule>) -> PyResult<()> {
    add_kernels(module)
}

/// The module as built with fat LTO and one codegen unit (the dlbridge workspace's profile).
#[cfg(feature = "lto-module")]
#[pymodule]
fn dlbridge_peer_dlbridge_user_lto(module: &Bound<'_, PyModule>) -> PyResult<()> {
    add_kernels(module)
}
