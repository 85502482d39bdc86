//! Rust's tensor libraries and Python's frameworks, through dlbridge: a burn tensor handed to
//! PyTorch or NumPy, a PyTorch tensor read by burn, nalgebra, faer and candle, an Arrow
//! `arrow.fixed_shape_tensor` column handed to NumPy and PyTorch. Each function says whether
//! the memory crossed without a copy by returning the addresses it saw, which `demo.py` (run
//! by `make tour`) compares with the framework's own.
//!
//! ```text
//! >>> import torch, dlbridge_tensor_libraries as libs
//! >>> tensor, address = libs.burn_arange(torch.empty(0), 2, 3)   # a burn tensor, as PyTorch's
//! >>> tensor.data_ptr() == address
//! True
//! ```

use std::sync::Arc;

use arrow_array::{Array, FixedSizeListArray, Float32Array};
use arrow_schema::{DataType as ArrowType, Field};
use burn_tensor::{Device, Int, Tensor};
use dlbridge_pyo3::dlbridge::arrow::ArrowTensorExt;
use dlbridge_pyo3::prelude::*;
use pyo3::prelude::*;

/// A `rows x cols` float32 burn tensor on burn's Flex (CPU) backend holding `0, 1, 2, ...`, handed
/// to the framework of `like` (a PyTorch tensor gives a PyTorch tensor, a NumPy array a NumPy
/// array), and the address of burn's data, which the result shares when nothing was copied.
#[pyfunction]
fn burn_arange<'py>(
    py: Python<'py>,
    like: &Bound<'py, PyAny>,
    rows: usize,
    cols: usize,
) -> KernelResult<(Bound<'py, PyAny>, usize)> {
    let device = Device::flex();
    let count = i64::try_from(rows * cols).unwrap_or(i64::MAX);
    let tensor: Tensor<2> = Tensor::<1, Int>::arange(0..count, &device)
        .float()
        .reshape([rows, cols]);
    // burn hands its data over: the Flex backend gives its bytes up without a copy when the
    // tensor is their only owner and contiguous.
    let data = tensor.into_data();
    let address = data.as_bytes().as_ptr() as usize;
    Ok((return_like(py, data, like)?, address))
}

/// The column sums of a float32 matrix computed by burn (Flex backend), as a tensor of `x`'s
/// framework, and whether burn's `TensorData` was the argument's own memory (a C-contiguous
/// matrix is handed over as it is; another layout is compacted first, a copy). Any tensor the
/// argument accepts is taken: a PyTorch tensor that autograd tracks is read as `x.detach()`.
#[pyfunction]
fn burn_column_sums<'py>(
    py: Python<'py>,
    x: TensorArg2<'_, f32>,
) -> KernelResult<(Bound<'py, PyAny>, bool)> {
    let data = x.to_burn_data(py)?;
    let in_place = data.as_bytes().as_ptr() == x.view().as_ptr().cast::<u8>();
    let columns = x.view().ncols();
    let sums: Tensor<1> = Tensor::<2>::from_data(data, &Device::flex())
        .sum_dim(0)
        .reshape([columns]);
    Ok((x.return_like(py, sums.into_data())?, in_place))
}

/// `x @ v` computed by nalgebra over a row-major float64 matrix and a vector, both read in
/// place (the matrix through its transpose, which is nalgebra's column-major layout), and
/// whether nalgebra's views were the arguments' own memory.
#[pyfunction]
fn nalgebra_matvec<'py>(
    py: Python<'py>,
    x: TensorArg2<'_, f64>,
    v: TensorArg1<'_, f64>,
) -> KernelResult<(Bound<'py, PyAny>, bool)> {
    let transposed = x.as_nalgebra_matrix_transposed()?;
    let vector = v.as_nalgebra_vector()?;
    let in_place = transposed.as_ptr() == x.view().as_ptr() && vector.as_ptr() == v.view().as_ptr();
    let product = transposed.tr_mul(&vector);
    Ok((v.return_like(py, product)?, in_place))
}

/// `a @ b` computed by faer over two float64 matrices of any layout, read in place, as a
/// tensor of `a`'s framework, and whether faer's views were the arguments' own memory.
#[pyfunction]
fn faer_matmul<'py>(
    py: Python<'py>,
    a: TensorArg2<'_, f64>,
    b: TensorArg2<'_, f64>,
) -> KernelResult<(Bound<'py, PyAny>, bool)> {
    let (left, right) = (a.as_faer_mat()?, b.as_faer_mat()?);
    let in_place = left.as_ptr() == a.view().as_ptr() && right.as_ptr() == b.view().as_ptr();
    Ok((a.return_like(py, left * right)?, in_place))
}

/// The column sums of a float32 matrix computed by candle, as a tensor of `x`'s framework.
/// Into candle is a copy: candle's CPU storage must own a `Vec`.
#[pyfunction]
fn candle_column_sums<'py>(
    py: Python<'py>,
    x: TensorArg2<'_, f32>,
) -> KernelResult<Bound<'py, PyAny>> {
    let tensor = x.to_candle_tensor()?;
    let sums = tensor
        .sum(0)
        .map_err(|error| pyo3::exceptions::PyValueError::new_err(error.to_string()))?;
    Ok(x.return_like(py, sums)?)
}

/// An Arrow `arrow.fixed_shape_tensor` column of `batch` float32 tensors of shape `[2, 3]`
/// (values `0, 1, 2, ...`), handed to the framework of `like` as one `[batch, 2, 3]` tensor,
/// and the address of the column's values buffer, which the result shares.
#[pyfunction]
fn arrow_fixed_shape_column<'py>(
    py: Python<'py>,
    like: &Bound<'py, PyAny>,
    batch: usize,
) -> KernelResult<(Bound<'py, PyAny>, usize)> {
    let values = Float32Array::from_iter_values((0..batch * 6).map(|value| value as f32));
    let address = values.values().as_ptr() as usize;
    let item = Arc::new(Field::new("item", ArrowType::Float32, false));
    let column = FixedSizeListArray::try_new(item, 6, Arc::new(values), None)
        .map_err(|error| pyo3::exceptions::PyValueError::new_err(error.to_string()))?;
    let extension =
        arrow_schema::extension::FixedShapeTensor::try_new(ArrowType::Float32, [2, 3], None, None)
            .map_err(|error| pyo3::exceptions::PyValueError::new_err(error.to_string()))?;
    let field =
        Field::new("tensors", column.data_type().clone(), false).with_extension_type(extension);
    let tensor = ManagedTensor::from_fixed_shape_tensor(&field, &column)?;
    Ok((return_like(py, tensor, like)?, address))
}

/// The Python module.
#[pymodule]
fn dlbridge_tensor_libraries(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(burn_arange, module)?)?;
    module.add_function(wrap_pyfunction!(burn_column_sums, module)?)?;
    module.add_function(wrap_pyfunction!(nalgebra_matvec, module)?)?;
    module.add_function(wrap_pyfunction!(faer_matmul, module)?)?;
    module.add_function(wrap_pyfunction!(candle_column_sums, module)?)?;
    module.add_function(wrap_pyfunction!(arrow_fixed_shape_column, module)?)?;
    Ok(())
}
