//! The cross-framework kernel, done in Rust: one matmul and one elementwise add, written once
//! against `dlbridge-pyo3`'s typed tensor arguments, called zero-copy on NumPy arrays, PyTorch
//! tensors and JAX arrays, and returning results of the caller's own framework.
//!
//! ```text
//! >>> import numpy as np, torch, dlbridge_matmul
//! >>> dlbridge_matmul.matmul(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))  # numpy in, numpy out
//! >>> dlbridge_matmul.matmul(torch.ones(2, 3), torch.ones(3, 4))                        # torch in, torch out
//! ```
//!
//! Everything dlbridge-specific comes from `dlbridge_pyo3::prelude`, ndarray included (at the
//! version dlbridge-pyo3 uses): the crate depends on `dlbridge-pyo3` and `pyo3` only.

use dlbridge_pyo3::dlbridge::ndarray::NdarrayTensorExt;
use dlbridge_pyo3::prelude::*;
use ndarray::linalg::general_mat_mul;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// `a @ b` for two float32 matrices, as a new tensor of `a`'s framework (zero-copy). The GIL is
/// released while the product is computed. The result is written into dlbridge's own allocation
/// (`ManagedTensor::zeros`), aligned to 64 bytes as consumers such as TVM require.
#[pyfunction]
fn matmul<'py>(
    py: Python<'py>,
    a: TensorArg2<'_, f32>,
    b: TensorArg2<'_, f32>,
) -> KernelResult<Bound<'py, PyAny>> {
    let (rows, cols) = product_shape(&a, &b)?;
    // The core's errors convert with `?` in a function returning `KernelResult`.
    let mut result = ManagedTensor::zeros(DataType::FLOAT32, &[rows, cols])?;
    let mut out = result.as_array_mut::<f32>()?;
    py.detach(|| {
        let mut out = out
            .view_mut()
            .into_dimensionality::<Ix2>()
            .expect("a 2-d result");
        general_mat_mul(1.0, &a.view(), &b.view(), 0.0, &mut out);
    });
    drop(out);
    Ok(a.return_like(py, result)?)
}

/// The shape of `a @ b`, or a `ValueError` naming both shapes.
fn product_shape(a: &TensorArg2<'_, f32>, b: &TensorArg2<'_, f32>) -> PyResult<(usize, usize)> {
    let (rows, inner) = a.view().dim();
    let (inner_b, cols) = b.view().dim();
    if inner != inner_b {
        return Err(PyValueError::new_err(format!(
            "matmul: a has shape ({rows}, {inner}) and b ({inner_b}, {cols}): inner extents differ"
        )));
    }
    Ok((rows, cols))
}

/// `out[...] = a @ b`, in place, for a preallocated float32 result of any framework.
#[pyfunction]
fn matmul_into(
    py: Python<'_>,
    a: TensorArg2<'_, f32>,
    b: TensorArg2<'_, f32>,
    mut out: TensorArgMut2<'_, f32>,
) -> PyResult<()> {
    let shape = product_shape(&a, &b)?;
    if out.view().dim() != shape {
        return Err(PyValueError::new_err(format!(
            "matmul_into: a @ b has shape {shape:?} but out has {:?}",
            out.view().dim()
        )));
    }
    py.detach(|| general_mat_mul(1.0, &a.view(), &b.view(), 0.0, &mut out.view_mut()));
    Ok(())
}

/// `a + b` elementwise for float32 tensors of one shape (any layout), as a new tensor of
/// `a`'s framework: the ndarray the kernel makes is returned as it is, zero-copy (its own
/// allocation, aligned for `f32`). The GIL is released only for sums large enough to be
/// worth it: releasing and taking it back costs about as much as adding a few thousand
/// elements.
#[pyfunction]
fn add<'py>(
    py: Python<'py>,
    a: TensorArg<'_, f32>,
    b: TensorArg<'_, f32>,
) -> PyResult<Bound<'py, PyAny>> {
    if a.view().shape() != b.view().shape() {
        return Err(PyValueError::new_err(format!(
            "add: shapes {:?} and {:?} differ",
            a.view().shape(),
            b.view().shape()
        )));
    }
    let sum = || {
        ndarray::Zip::from(&a.view())
            .and(&b.view())
            .map_collect(|&x, &y| x + y)
    };
    let sum = if a.view().len() < DETACH_ABOVE_ELEMENTS {
        sum()
    } else {
        py.detach(sum)
    };
    a.return_like(py, sum)
}

/// The number of elements from which `add` releases the GIL while it works.
const DETACH_ABOVE_ELEMENTS: usize = 1 << 14;

/// The example module. It holds no state of its own, so it runs without the GIL on
/// free-threaded Python (`gil_used = false`).
#[pymodule(gil_used = false)]
fn dlbridge_matmul(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(matmul, module)?)?;
    module.add_function(wrap_pyfunction!(matmul_into, module)?)?;
    module.add_function(wrap_pyfunction!(add, module)?)?;
    Ok(())
}
