//! Kernels over typed tensor arguments, for the test suite (`dlbridge._dlbridge._testing`):
//! they show the argument types at work on every framework.
//!
//! Built only with the cargo feature `testing` (off by default, so release wheels leave the
//! submodule out); every build for the tests turns it on (`make python-build`, the sanitizer
//! run).

use dlbridge::xla::{
    self,
    ffi::{XLA_FFI_CallFrame, XLA_FFI_Error},
};
use dlbridge::{DataType, ManagedTensor};
use dlbridge_pyo3::{
    AnyDevice, CContiguous, ContiguousArgMut, CudaArg, CudaArgMut, DeviceTensorArg, DimsBetween,
    ImportOptions, Rocm, TensorArg, TensorArg1, TensorArgMut, TensorArgMut1, from_dlpack as import,
    return_like, shape, streams::WorkStream, to_py_err,
};
use ndarray::{Ix1, Ix2, Ix3, IxDyn};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::tensor::Tensor;

/// The `_testing` submodule with every kernel below. Like its parent it runs without the GIL
/// on free-threaded Python.
pub(crate) fn module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    let testing = PyModule::new(py, "_testing")?;
    testing.gil_used(false)?;
    testing.add_function(wrap_pyfunction!(scale, &testing)?)?;
    testing.add_function(wrap_pyfunction!(add_one, &testing)?)?;
    testing.add_function(wrap_pyfunction!(total, &testing)?)?;
    testing.add_function(wrap_pyfunction!(noop3, &testing)?)?;
    testing.add_function(wrap_pyfunction!(channel_means, &testing)?)?;
    testing.add_function(wrap_pyfunction!(eye2, &testing)?)?;
    testing.add_function(wrap_pyfunction!(packed_rgb_total, &testing)?)?;
    testing.add_function(wrap_pyfunction!(fill_packed, &testing)?)?;
    testing.add_function(wrap_pyfunction!(total_of_all, &testing)?)?;
    testing.add_function(wrap_pyfunction!(scale_all, &testing)?)?;
    testing.add_function(wrap_pyfunction!(dot_with_bias, &testing)?)?;
    testing.add_function(wrap_pyfunction!(dot_of_pair, &testing)?)?;
    testing.add_function(wrap_pyfunction!(noop3_objects, &testing)?)?;
    testing.add_function(wrap_pyfunction!(fill, &testing)?)?;
    testing.add_function(wrap_pyfunction!(take_mut, &testing)?)?;
    testing.add_function(wrap_pyfunction!(copy_into, &testing)?)?;
    testing.add_function(wrap_pyfunction!(slow_total2, &testing)?)?;
    testing.add_function(wrap_pyfunction!(slow_fill, &testing)?)?;
    testing.add_function(wrap_pyfunction!(inspect_argument, &testing)?)?;
    testing.add_function(wrap_pyfunction!(cuda_vector, &testing)?)?;
    testing.add_function(wrap_pyfunction!(cuda_vector_mut, &testing)?)?;
    testing.add_function(wrap_pyfunction!(rocm_tensor, &testing)?)?;
    testing.add_function(wrap_pyfunction!(any_device_tensor, &testing)?)?;
    testing.add_function(wrap_pyfunction!(cuda_pair_stream, &testing)?)?;
    testing.add_function(wrap_pyfunction!(cuda_noop3, &testing)?)?;
    testing.add_function(wrap_pyfunction!(release_on_new_thread, &testing)?)?;
    testing.add_function(wrap_pyfunction!(zeros_like_framework, &testing)?)?;
    testing.add_function(wrap_pyfunction!(arange_like_framework, &testing)?)?;
    testing.add_function(wrap_pyfunction!(import_return_like, &testing)?)?;
    testing.add_function(wrap_pyfunction!(byte_histogram, &testing)?)?;
    testing.add_function(wrap_pyfunction!(halves, &testing)?)?;
    testing.add_function(wrap_pyfunction!(matrix_sums, &testing)?)?;
    testing.add_function(wrap_pyfunction!(owned_f32, &testing)?)?;
    testing.add_function(wrap_pyfunction!(owned_f32_holding, &testing)?)?;
    dlbridge_pyo3::xla::publish_xla_handlers(
        &testing,
        &[
            dlbridge_pyo3::xla::XlaHandler::cpu("add_f32", xla_add_f32),
            dlbridge_pyo3::xla::XlaHandler::cpu("scale_f32", xla_scale_f32),
            dlbridge_pyo3::xla::XlaHandler::cpu("panics", xla_panics),
        ],
    )?;
    dlbridge_pyo3::kernel::publish_kernels(
        &testing,
        &[
            axpy::KERNEL,
            matmul::KERNEL,
            clamp_::KERNEL,
            divmod_i64::KERNEL,
            doubled_and_row_sums::KERNEL,
        ],
    )?;
    Ok(testing)
}

// Kernels declared once for eager calls, `jax.jit` and `torch.compile` (`dlbridge.jax.kernel`,
// `dlbridge.torch.register`).

dlbridge_pyo3::kernel! {
    /// `out = alpha * x + y`, elementwise, for float32 tensors of one shape.
    pub fn axpy(x: TensorArg<'_, f32>, y: TensorArg<'_, f32>, out: TensorArgMut<'_, f32>, alpha: f32)
    where out = like(x)
    {
        if x.shape() != y.shape() {
            return Err(format!("x has shape {:?} and y {:?}", x.shape(), y.shape()).into());
        }
        ndarray::Zip::from(&mut out).and(&x).and(&y).for_each(|out, &x, &y| *out = alpha * x + y);
        Ok(())
    }
}

dlbridge_pyo3::kernel! {
    /// `out = a @ b` for float32 matrices.
    pub fn matmul(a: TensorArg<'_, f32, Ix2>, b: TensorArg<'_, f32, Ix2>, out: TensorArgMut<'_, f32, Ix2>)
    where out = shape(product_shape)
    {
        ndarray::linalg::general_mat_mul(1.0, &a, &b, 0.0, &mut out);
        Ok(())
    }
}

/// The shape of `a @ b` from the shapes of `a` and `b` (two dimensions each, by their types).
fn product_shape(shapes: &[&[usize]]) -> Result<Vec<usize>, dlbridge_pyo3::kernel::BodyError> {
    let (a, b) = (shapes[0], shapes[1]);
    if a[1] != b[0] {
        return Err(format!("a has shape {a:?} and b {b:?}: inner extents differ").into());
    }
    Ok(vec![a[0], b[1]])
}

dlbridge_pyo3::kernel! {
    /// `doubled = 2 * m` and `sums` its rows' sums, for a float32 matrix: a result shaped like
    /// an argument before one shaped by a function.
    pub fn doubled_and_row_sums(
        m: TensorArg<'_, f32, Ix2>,
        doubled: TensorArgMut<'_, f32, Ix2>,
        sums: TensorArgMut<'_, f32, Ix1>,
    )
    where doubled = like(m), sums = shape(row_count)
    {
        doubled.zip_mut_with(&m, |doubled, &m| *doubled = 2.0 * m);
        for (sum, row) in sums.iter_mut().zip(m.rows()) {
            *sum = row.sum();
        }
        Ok(())
    }
}

/// The shape of a matrix's row sums.
fn row_count(shapes: &[&[usize]]) -> Result<Vec<usize>, dlbridge_pyo3::kernel::BodyError> {
    Ok(vec![shapes[0][0]])
}

dlbridge_pyo3::kernel! {
    /// `x = min(max(x, low), high)`, in place, for a float64 tensor.
    pub fn clamp_(x: TensorArgMut<'_, f64>, low: f64, high: f64) {
        if low > high {
            return Err(format!("low {low} is above high {high}").into());
        }
        x.mapv_inplace(|value| value.clamp(low, high));
        Ok(())
    }
}

dlbridge_pyo3::kernel! {
    /// `quotient, remainder = divmod(a, b)` (Python's, rounding down), elementwise, for int64
    /// tensors of one shape; a zero divisor is refused.
    pub fn divmod_i64(
        a: TensorArg<'_, i64>,
        b: TensorArg<'_, i64>,
        quotient: TensorArgMut<'_, i64>,
        remainder: TensorArgMut<'_, i64>,
    )
    where quotient = like(a), remainder = like(a)
    {
        if a.shape() != b.shape() {
            return Err(format!("a has shape {:?} and b {:?}", a.shape(), b.shape()).into());
        }
        if b.iter().any(|&b| b == 0) {
            return Err("division by zero".into());
        }
        if ndarray::Zip::from(&a).and(&b).any(|&a, &b| a == i64::MIN && b == -1) {
            return Err("i64::MIN // -1 overflows int64".into());
        }
        ndarray::Zip::from(&mut quotient)
            .and(&mut remainder)
            .and(&a)
            .and(&b)
            .for_each(|quotient, remainder, &a, &b| {
                let rounds_up = a % b != 0 && (a < 0) != (b < 0);
                *quotient = a / b - i64::from(rounds_up);
                *remainder = a - *quotient * b;
            });
        Ok(())
    }
}

/// A zero-filled tensor of `dtype` (a DLPack name) and `shape`, made in Rust memory and
/// returned in the framework of `like` (`return_like`).
#[pyfunction]
fn zeros_like_framework<'py>(
    py: Python<'py>,
    like: &Bound<'py, PyAny>,
    dtype: &str,
    shape: Vec<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let dtype: DataType = dtype
        .parse()
        .map_err(|e: dlbridge::ParseDataTypeError| PyValueError::new_err(e.to_string()))?;
    let tensor = ManagedTensor::zeros(dtype, &shape).map_err(to_py_err)?;
    return_like(py, tensor, like)
}

/// An ndarray `Array` of `dtype` (a DLPack name: bool, uint8, int64, float16, float32,
/// float64, complex128) holding 0, 1, 2, ... in row-major order of `shape`, returned in the
/// framework of `like` (`return_like`: to NumPy, made over the array's own buffer). `layout`
/// is how the array holds them: "c" (standard), "f" (column-major: the transpose of a
/// standard array), "reversed" (the last axis inverted, so the first element is not at the
/// buffer's start) or "every_other" (every second element of the last axis of a buffer
/// twice as long); "vec" returns a `(Vec, shape)` instead, and "vec_short" one whose vector
/// has a value too few for the shape (the core's error). A bool array holds `value % 2 == 1`,
/// a complex one `value + 0.5i`.
#[pyfunction]
fn arange_like_framework<'py>(
    py: Python<'py>,
    like: &Bound<'py, PyAny>,
    dtype: &str,
    shape: Vec<usize>,
    layout: &str,
) -> PyResult<Bound<'py, PyAny>> {
    use dlbridge::half::f16;
    use dlbridge::num_complex::Complex64;
    use ndarray::{ArrayD, Axis, ShapeBuilder, Slice};

    fn arranged<T: Clone>(
        shape: &[usize],
        layout: &str,
        value: &dyn Fn(usize) -> T,
    ) -> PyResult<ArrayD<T>> {
        let count: usize = shape.iter().product();
        let wrong = |e: ndarray::ShapeError| PyValueError::new_err(e.to_string());
        // The last axis, which "reversed" and "every_other" change.
        let last_axis = || {
            shape
                .len()
                .checked_sub(1)
                .ok_or_else(|| PyValueError::new_err(format!("{layout}: needs a dimension")))
        };
        Ok(match layout {
            "c" => ArrayD::from_shape_vec(IxDyn(shape), (0..count).map(value).collect())
                .map_err(wrong)?,
            "f" => {
                // Column-major memory, the same logical values.
                let mut array = ArrayD::from_elem(IxDyn(shape).f(), value(0));
                array.assign(&arranged(shape, "c", value)?);
                array
            }
            "reversed" => {
                let last = last_axis()?;
                let mut array = arranged(shape, "c", value)?;
                // Values reversed along the last axis, so that inverting it restores 0, 1, 2...
                array.invert_axis(Axis(last));
                let mut stored = array.as_standard_layout().into_owned();
                stored.invert_axis(Axis(last));
                stored
            }
            "every_other" => {
                let last = last_axis()?;
                let mut wide = shape.to_vec();
                wide[last] *= 2;
                let mut array = ArrayD::from_elem(IxDyn(&wide), value(0));
                let mut kept = array.slice_axis_mut(Axis(last), Slice::new(0, None, 2));
                for (slot, index) in kept.iter_mut().zip(0..count) {
                    *slot = value(index);
                }
                array.slice_axis_inplace(Axis(last), Slice::new(0, None, 2));
                array
            }
            other => return Err(PyValueError::new_err(format!("unknown layout {other:?}"))),
        })
    }

    /// The result in `layout`: an `Array`, or a `(Vec, shape)` ("vec"; "vec_short" with one
    /// value too few for the shape).
    fn returned<'py, T: dlbridge::Element>(
        py: Python<'py>,
        like: &Bound<'py, PyAny>,
        shape: &[usize],
        layout: &str,
        value: &dyn Fn(usize) -> T,
    ) -> PyResult<Bound<'py, PyAny>> {
        let count: usize = shape.iter().product();
        match layout {
            "vec" => return_like(py, ((0..count).map(value).collect::<Vec<T>>(), shape), like),
            "vec_short" => {
                let values = (0..count.saturating_sub(1)).map(value).collect::<Vec<T>>();
                return_like(py, (values, shape), like)
            }
            _ => return_like(py, arranged(shape, layout, value)?, like),
        }
    }

    match dtype {
        "bool" => returned(py, like, &shape, layout, &|i| i % 2 == 1),
        "uint8" => returned(py, like, &shape, layout, &|i| i as u8),
        "int64" => returned(py, like, &shape, layout, &|i| i as i64),
        "float16" => returned(py, like, &shape, layout, &|i| f16::from_f64(i as f64)),
        "float32" => returned(py, like, &shape, layout, &|i| i as f32),
        "float64" => returned(py, like, &shape, layout, &|i| i as f64),
        "complex128" => returned(py, like, &shape, layout, &|i| Complex64::new(i as f64, 0.5)),
        other => Err(PyValueError::new_err(format!(
            "unsupported dtype {other:?}"
        ))),
    }
}

/// `x` imported (`from_dlpack`, zero-copy) and returned in the framework of `like`: the
/// result shares `x`'s memory, and is read-only if `x` was.
#[pyfunction]
fn import_return_like<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    like: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let tensor = import(x, &ImportOptions::default())?;
    return_like(py, tensor, like)
}

/// The counts of each byte value in `x` (any number of dimensions), as 256 int64 counts in
/// the framework of `x`: a result of another data type than its input.
#[pyfunction]
fn byte_histogram<'py>(
    py: Python<'py>,
    x: TensorArg<'_, u8, IxDyn>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut counts = vec![0i64; 256];
    for &value in x.view() {
        counts[usize::from(value)] += 1;
    }
    x.return_like(py, (counts, [256]))
}

/// `x / 2` for a float64 vector, in the framework of `x`.
#[pyfunction]
fn halves<'py>(py: Python<'py>, x: TensorArg<'_, f64, Ix1>) -> PyResult<Bound<'py, PyAny>> {
    let halved = x.view().mapv(|value| value / 2.0);
    x.return_like(py, halved)
}

/// The sum of each matrix of `x`: one matrix (2 dimensions) or a batch of them (3).
#[pyfunction]
fn matrix_sums(x: TensorArg<'_, f64, IxDyn, DimsBetween<2, 3>>) -> Vec<f64> {
    let view = x.view();
    if view.ndim() == 2 {
        vec![view.sum()]
    } else {
        view.outer_iter().map(|matrix| matrix.sum()).collect()
    }
}

/// `out[...] = x * factor`, with the GIL released while it runs.
#[pyfunction]
fn scale(
    py: Python<'_>,
    x: TensorArg<'_, f32, Ix2, CContiguous>,
    mut out: TensorArgMut<'_, f32, Ix2>,
    factor: f32,
) {
    py.detach(|| {
        out.view_mut()
            .zip_mut_with(&x.view(), |o, &v| *o = v * factor)
    });
}

/// Adds one to every element, in place.
#[pyfunction]
fn add_one(mut x: TensorArgMut<'_, f64, Ix1>) {
    x.view_mut().mapv_inplace(|v| v + 1.0);
}

/// The argument's owned tensor (`TensorArg::to_managed`) as a `dlbridge.Tensor`, with the
/// path the argument took and the address of its first element.
#[pyfunction]
fn owned_f32(py: Python<'_>, x: TensorArg<'_, f32, IxDyn>) -> PyResult<(Tensor, String, usize)> {
    let owned = x.to_managed(py)?;
    Ok((
        Tensor::new(owned),
        x.path().to_string(),
        x.view().as_ptr() as usize,
    ))
}

/// Holds the argument's owned tensor (`TensorArg::to_managed`), with its import's read claim,
/// while `then()` runs after the argument itself is gone; returns what `then` returned and the
/// owned tensor's elements, read after it.
#[pyfunction]
fn owned_f32_holding<'py>(
    py: Python<'py>,
    x: TensorArg<'_, f32, IxDyn>,
    then: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyAny>, Vec<f32>)> {
    let owned = x.to_managed(py)?;
    drop(x);
    let answer = then.call0()?;
    let values = owned
        .view()
        .to_compact_copy()
        .and_then(|copy| copy.view().as_slice::<f32>().map(<[f32]>::to_vec))
        .map_err(to_py_err)?;
    Ok((answer, values))
}

/// Sums a float32 tensor of any shape and layout.
#[pyfunction]
fn total(x: TensorArg<'_, f32, IxDyn>) -> f64 {
    x.view().iter().map(|&v| f64::from(v)).sum()
}

shape!(
    /// Images of any height and width with three channels, last.
    pub Rgb = [_, _, 3]
);
shape!(
    /// Exactly 2x2.
    pub TwoByTwo = [2, 2]
);

/// The mean of each channel of an RGB image (shape `(_, _, 3)`, uint8).
#[pyfunction]
fn channel_means(image: TensorArg<'_, u8, Ix3, Rgb>) -> [f64; 3] {
    let view = image.view();
    let pixels = (view.len() / 3).max(1) as f64;
    let mut sums = [0.0; 3];
    for ((_, _, channel), &value) in view.indexed_iter() {
        sums[channel] += f64::from(value);
    }
    sums.map(|sum| sum / pixels)
}

/// Writes the 2x2 identity into `out` (exactly 2x2, float64).
#[pyfunction]
fn eye2(mut out: TensorArgMut<'_, f64, Ix2, TwoByTwo>) {
    out.view_mut()
        .indexed_iter_mut()
        .for_each(|((i, j), v)| *v = f64::from(u8::from(i == j)));
}

/// The sum of a C-contiguous RGB image's bytes, read as one slice (constraints given as a
/// tuple: a shape and a layout).
#[pyfunction]
fn packed_rgb_total(image: TensorArg<'_, u8, Ix3, (Rgb, CContiguous)>) -> u64 {
    image.as_slice().iter().map(|&value| u64::from(value)).sum()
}

/// Writes `value` into every element of a C-contiguous float32 tensor, through one slice.
#[pyfunction]
fn fill_packed(mut x: ContiguousArgMut<'_, f32>, value: f32) {
    x.as_mut_slice().fill(value);
}

/// The sum of every element of a list (or any sequence) of float64 vectors.
#[pyfunction]
fn total_of_all(vectors: Vec<TensorArg1<'_, f64>>) -> f64 {
    vectors.iter().map(|vector| vector.view().sum()).sum()
}

/// Multiplies every vector of a list by `factor`, in place, with the GIL released.
#[pyfunction]
fn scale_all(py: Python<'_>, mut vectors: Vec<TensorArgMut1<'_, f64>>, factor: f64) {
    py.detach(|| {
        for vector in &mut vectors {
            vector.view_mut().mapv_inplace(|value| value * factor);
        }
    });
}

/// `x . y`, plus `bias`'s sum when one is given.
#[pyfunction]
#[pyo3(signature = (x, y, bias=None))]
fn dot_with_bias(
    x: TensorArg1<'_, f64>,
    y: TensorArg1<'_, f64>,
    bias: Option<TensorArg1<'_, f64>>,
) -> f64 {
    x.view().dot(&y.view()) + bias.map_or(0.0, |bias| bias.view().sum())
}

/// The dot product of a tuple's two vectors.
#[pyfunction]
fn dot_of_pair(pair: (TensorArg1<'_, f64>, TensorArg1<'_, f64>)) -> f64 {
    pair.0.view().dot(&pair.1.view())
}

/// Takes three tensors and does nothing: the cost of the arguments alone.
#[pyfunction]
fn noop3(_a: TensorArg<'_, f32, Ix2>, _b: TensorArg<'_, f32, Ix2>, _c: TensorArg<'_, f32, Ix2>) {}

/// Fills a float32 tensor of any shape and layout with `value`, in place.
#[pyfunction]
fn fill(mut x: TensorArgMut<'_, f32, IxDyn>, value: f32) {
    x.view_mut().fill(value);
}

/// Takes a writable float32 tensor and neither reads nor writes it (its version counter
/// is left alone: no mutable view is taken).
#[pyfunction]
fn take_mut(x: TensorArgMut<'_, f32, IxDyn>) -> usize {
    x.view().len()
}

/// `out[...] = x` for two float32 tensors of one shape, any layouts: a kernel whose two
/// arguments may be views of one tensor (the aliasing registry decides).
#[pyfunction]
fn copy_into(x: TensorArg<'_, f32, IxDyn>, mut out: TensorArgMut<'_, f32, IxDyn>) {
    out.view_mut().assign(&x.view());
}

/// Sums two float32 tensors with the GIL released for `seconds` meanwhile: a call that
/// holds its arguments while other threads run.
#[pyfunction]
fn slow_total2(
    py: Python<'_>,
    a: TensorArg<'_, f32, IxDyn>,
    b: TensorArg<'_, f32, IxDyn>,
    seconds: f64,
) -> f64 {
    py.detach(|| {
        std::thread::sleep(std::time::Duration::from_secs_f64(seconds));
        a.view()
            .iter()
            .chain(b.view().iter())
            .map(|&v| f64::from(v))
            .sum()
    })
}

/// Fills a float32 tensor with `value` after holding it for `seconds` with the GIL
/// released: a call that writes memory while other threads run.
#[pyfunction]
fn slow_fill(py: Python<'_>, mut x: TensorArgMut<'_, f32, IxDyn>, value: f32, seconds: f64) {
    py.detach(|| {
        std::thread::sleep(std::time::Duration::from_secs_f64(seconds));
        x.view_mut().fill(value);
    });
}

/// What a typed argument sees of `x` on the path it takes (see
/// `dlbridge_pyo3::inspect_argument`): a dict with `path`, `dtype`, `device`, `shape`,
/// `strides`, `read_only`, `data` and `bytes`.
#[pyfunction]
#[pyo3(signature = (x, writable=false))]
fn inspect_argument<'py>(
    x: &Bound<'py, PyAny>,
    writable: bool,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let seen = dlbridge_pyo3::inspect_argument(x, writable)?;
    let py = x.py();
    let dict = pyo3::types::PyDict::new(py);
    dict.set_item("path", seen.path)?;
    dict.set_item("dtype", seen.dtype.to_string())?;
    dict.set_item(
        "dtype_code",
        (seen.dtype.code.0, seen.dtype.bits, seen.dtype.lanes),
    )?;
    dict.set_item("device", (seen.device.device_type.0, seen.device.device_id))?;
    dict.set_item("shape", pyo3::types::PyTuple::new(py, &seen.shape)?)?;
    dict.set_item("strides", pyo3::types::PyTuple::new(py, &seen.strides)?)?;
    dict.set_item("read_only", seen.read_only)?;
    dict.set_item("data", seen.data)?;
    dict.set_item(
        "bytes",
        seen.bytes
            .map(|bytes| pyo3::types::PyBytes::new(py, &bytes)),
    )?;
    Ok(dict)
}

/// Takes three plain objects and does nothing: the floor of a three-argument call.
#[pyfunction]
fn noop3_objects(_a: &Bound<'_, PyAny>, _b: &Bound<'_, PyAny>, _c: &Bound<'_, PyAny>) {}

/// Imports `x` (any producer, as `dlbridge.from_dlpack` does) and releases the tensor on
/// a new thread that has never held the GIL, while this thread waits with the GIL
/// released: the producer's deleter runs on a thread without the GIL, as it may when a
/// Rust library drops a tensor from its own worker threads.
#[pyfunction]
fn release_on_new_thread(py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<()> {
    let tensor = import(x, &ImportOptions::default())?;
    py.detach(|| std::thread::spawn(move || drop(tensor)).join())
        .map_err(|_| PyRuntimeError::new_err("the releasing thread panicked"))
}

/// What a device argument gives a kernel, as a dict: `device`, `ptr` (the first element's
/// device address), `shape`, `strides`, `stream` (its handle, None without streams),
/// `stream_source` and `path`.
fn device_argument_dict<'py>(
    py: Python<'py>,
    device: dlbridge::Device,
    ptr: u64,
    shape: &[usize],
    strides: &[i64],
    stream: WorkStream,
    path: dlbridge_pyo3::explain::ArgumentPath,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let dict = pyo3::types::PyDict::new(py);
    dict.set_item("device", (device.device_type.0, device.device_id))?;
    dict.set_item("ptr", ptr)?;
    dict.set_item("shape", pyo3::types::PyTuple::new(py, shape)?)?;
    dict.set_item("strides", pyo3::types::PyTuple::new(py, strides)?)?;
    dict.set_item("stream", stream.handle())?;
    dict.set_item("stream_source", stream.source().name())?;
    dict.set_item("path", path.name())?;
    Ok(dict)
}

/// A C-contiguous float32 CUDA vector argument, as the kernel sees it.
#[pyfunction]
fn cuda_vector<'py>(
    py: Python<'py>,
    x: CudaArg<'_, f32, Ix1, CContiguous>,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let stream = x.stream();
    device_argument_dict(
        py,
        x.device(),
        x.device_ptr(),
        x.shape(),
        x.strides(),
        stream,
        x.path(),
    )
}

/// A writable float32 CUDA vector argument (any strides), as the kernel sees it; takes the
/// pointer for writing (writes nothing).
#[pyfunction]
fn cuda_vector_mut<'py>(
    py: Python<'py>,
    mut x: CudaArgMut<'_, f32, Ix1>,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let ptr = x.device_ptr_mut();
    device_argument_dict(
        py,
        x.device(),
        ptr,
        x.shape(),
        x.strides(),
        x.stream(),
        x.path(),
    )
}

/// A float32 ROCm tensor argument, as the kernel sees it.
#[pyfunction]
fn rocm_tensor<'py>(
    py: Python<'py>,
    x: DeviceTensorArg<'_, f32, Rocm>,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    device_argument_dict(
        py,
        x.device(),
        x.device_ptr(),
        x.shape(),
        x.strides(),
        x.stream(),
        x.path(),
    )
}

/// A float32 tensor on any device (host included), as the kernel sees it.
#[pyfunction]
fn any_device_tensor<'py>(
    py: Python<'py>,
    x: DeviceTensorArg<'_, f32, AnyDevice>,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    device_argument_dict(
        py,
        x.device(),
        x.device_ptr(),
        x.shape(),
        x.strides(),
        x.stream(),
        x.path(),
    )
}

/// The one stream two CUDA arguments agree on (its handle), found with the GIL released as a
/// kernel launch would be; `ValueError` when they disagree.
#[pyfunction]
fn cuda_pair_stream(
    py: Python<'_>,
    x: CudaArg<'_, f32>,
    y: CudaArgMut<'_, f32>,
) -> PyResult<Option<usize>> {
    let stream = WorkStream::common([x.stream(), y.stream()])?;
    Ok(py.detach(|| {
        // A launch would enqueue on `stream` here, reading `x` and writing `y`.
        let _ = (&x, &y);
        stream.handle()
    }))
}

/// A kernel call's argument handling without the kernel, for the GPU benchmark
/// (benches/gpu_exchange.py): two float32 CUDA tensors read and one written, of any shape,
/// on one stream (its handle), with the GIL released where a launch would enqueue.
#[pyfunction]
fn cuda_noop3(
    py: Python<'_>,
    x: CudaArg<'_, f32>,
    y: CudaArg<'_, f32>,
    mut out: CudaArgMut<'_, f32>,
) -> PyResult<Option<usize>> {
    let stream = WorkStream::common([x.stream(), y.stream(), out.stream()])?;
    let pointers = (x.device_ptr(), y.device_ptr(), out.device_ptr_mut());
    Ok(py.detach(|| {
        // A launch would enqueue on `stream` here, reading two pointers and writing the third.
        let _ = pointers;
        stream.handle()
    }))
}

/// XLA handler: `out = a + b` for float32 buffers of one shape (`dlbridge.jax` tests).
unsafe extern "C" fn xla_add_f32(frame: *mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error {
    // SAFETY: XLA calls a CPU handler with a live frame of host buffers.
    unsafe { xla::handle(frame, dlbridge::Device::CPU, 0, add_f32_body) }
}

fn add_f32_body(call: &mut xla::Call<'_>) -> Result<(), xla::HandlerError> {
    let (a, b) = (call.args[0], call.args[1]);
    if a.shape() != b.shape() || a.shape() != call.results[0].view().shape() {
        return Err(xla::HandlerError::invalid_argument(format!(
            "add_f32: shapes {:?}, {:?} and the result's {:?} differ",
            a.shape(),
            b.shape(),
            call.results[0].view().shape()
        )));
    }
    let (a, b) = (a.as_slice::<f32>()?, b.as_slice::<f32>()?);
    let out = call.results[0].as_mut_slice::<f32>()?;
    for ((out, a), b) in out.iter_mut().zip(a).zip(b) {
        *out = a + b;
    }
    Ok(())
}

/// XLA handler: `out = x * alpha` for a float32 buffer and a float32 attribute `alpha`.
unsafe extern "C" fn xla_scale_f32(frame: *mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error {
    // SAFETY: as above.
    unsafe {
        xla::handle(frame, dlbridge::Device::CPU, 0, |call| {
            let alpha = call.scalar::<f32>("alpha")?;
            let x = call.args[0].as_slice::<f32>()?;
            for (out, x) in call.results[0].as_mut_slice::<f32>()?.iter_mut().zip(x) {
                *out = x * alpha;
            }
            Ok(())
        })
    }
}

/// XLA handler whose body panics: the panic must reach JAX as an error, not unwind into XLA.
unsafe extern "C" fn xla_panics(frame: *mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error {
    // SAFETY: as above.
    unsafe {
        xla::handle(frame, dlbridge::Device::CPU, 0, |_| {
            panic!("the kernel panicked on purpose")
        })
    }
}
