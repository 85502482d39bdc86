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
//! Three kernels are declared once with `dlbridge_pyo3::kernel!` (`matmul_into`, `to_gray`,
//! `add_scaled_`): each is the eager function of its name and, through `dlbridge.jax.kernel`
//! and `dlbridge.torch.register`, a function `jax.jit` compiles and an operator
//! `torch.compile` keeps in its graph (`compiled_graphs.py` runs all three ways).
//!
//! Everything dlbridge-specific comes from `dlbridge_pyo3::prelude`, ndarray included (at the
//! version dlbridge-pyo3 uses): the crate depends on `dlbridge-pyo3` and `pyo3` only.

use dlbridge_pyo3::dlbridge::ndarray::NdarrayTensorExt;
use dlbridge_pyo3::kernel::{BodyError, publish_kernels};
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
    let shape = matmul_shape(&[a.view().shape(), b.view().shape()])
        .map_err(|error| PyValueError::new_err(format!("matmul: {error}")))?;
    Ok((shape[0], shape[1]))
}

/// The shape of `a @ b` from the shapes of `a` and `b` (two dimensions each, by their types):
/// the shape rule of `matmul_into`, and `matmul`'s check.
fn matmul_shape(shapes: &[&[usize]]) -> Result<Vec<usize>, BodyError> {
    let (a, b) = (shapes[0], shapes[1]);
    if a[1] != b[0] {
        return Err(format!(
            "a has shape ({}, {}) and b ({}, {}): inner extents differ",
            a[0], a[1], b[0], b[1]
        )
        .into());
    }
    Ok(vec![a[0], b[1]])
}

dlbridge_pyo3::kernel! {
    /// `out[...] = a @ b`, in place, for a preallocated float32 result of any framework; the
    /// same kernel inside `jax.jit` and `torch.compile`, where `out` is the result.
    pub fn matmul_into(a: TensorArg2<'_, f32>, b: TensorArg2<'_, f32>, out: TensorArgMut2<'_, f32>)
    where out = shape(matmul_shape)
    {
        general_mat_mul(1.0, &a, &b, 0.0, &mut out);
        Ok(())
    }
}

shape!(
    /// RGB images: height, width and three channels, last.
    pub Rgb = [_, _, 3]
);

/// The shape of a gray image from its RGB image's.
fn gray_shape(shapes: &[&[usize]]) -> Result<Vec<usize>, BodyError> {
    match shapes[0] {
        &[height, width, 3] => Ok(vec![height, width]),
        other => Err(format!("image has shape {other:?}, not (height, width, 3)").into()),
    }
}

dlbridge_pyo3::kernel! {
    /// `gray = round(0.299 r + 0.587 g + 0.114 b)`, for a uint8 RGB image of any strides.
    pub fn to_gray(image: TensorArg<'_, u8, Ix3, Rgb>, gray: TensorArgMut2<'_, u8>)
    where gray = shape(gray_shape)
    {
        ndarray::Zip::from(&mut gray)
            .and(image.lanes(Axis(2)))
            .for_each(|gray, rgb| {
                let luma = 0.299 * f32::from(rgb[0]) + 0.587 * f32::from(rgb[1]) + 0.114 * f32::from(rgb[2]);
                *gray = luma.round() as u8;
            });
        Ok(())
    }
}

dlbridge_pyo3::kernel! {
    /// `acc += alpha * x`, in place (an optimizer's step), for float32 tensors of one shape.
    pub fn add_scaled_(acc: TensorArgMut<'_, f32>, x: TensorArg<'_, f32>, alpha: f32) {
        if acc.shape() != x.shape() {
            return Err(format!("acc has shape {:?} and x {:?}", acc.shape(), x.shape()).into());
        }
        acc.zip_mut_with(&x, |acc, &x| *acc += alpha * x);
        Ok(())
    }
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
    module.add_function(wrap_pyfunction!(add, module)?)?;
    // The eager functions `matmul_into`, `to_gray`, `add_scaled_`, their XLA handlers and
    // their signatures (for dlbridge.jax and dlbridge.torch).
    publish_kernels(
        module,
        &[matmul_into::KERNEL, to_gray::KERNEL, add_scaled_::KERNEL],
    )?;
    Ok(())
}
