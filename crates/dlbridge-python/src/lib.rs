//! The extension module of the `dlbridge` Python package: `dlbridge.Tensor`, `from_dlpack`
//! and the creation functions, on top of the `dlbridge` core and `dlbridge-pyo3`.
//!
//! The pure-Python parts, the type stubs and the tests live under `python/`.

use std::ffi::{c_int, c_void, CString};
use std::sync::Arc;

use dlbridge::{DataType, Element, Flags, ManagedTensor, Version};
use dlbridge_pyo3::{
    device_argument, exchange_api_exports, from_dlpack as import, publish_dlpack, to_py_err,
    ImportOptions, TensorClass,
};
use half::{bf16, f16};
use num_complex::Complex;
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// A tensor held by dlbridge: imported from any DLPack producer (zero-copy, keeping the
/// producer's memory alive) or created in Rust memory. Exported again with `__dlpack__`, or
/// through the buffer protocol for host memory.
#[pyclass(module = "dlbridge", name = "Tensor", frozen)]
pub struct Tensor {
    inner: Arc<ManagedTensor>,
}

impl Tensor {
    fn new(tensor: ManagedTensor) -> Self {
        Tensor {
            inner: Arc::new(tensor),
        }
    }
}

impl TensorClass for Tensor {
    fn tensor(&self) -> &Arc<ManagedTensor> {
        &self.inner
    }

    fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
        Py::new(py, Tensor::new(tensor))
    }
}

/// Tensors exported through `Tensor.__dlpack_c_exchange_api__` so far (diagnostics: shows
/// that a consumer took the fast path).
#[pyfunction]
fn _exchange_api_exports() -> u64 {
    exchange_api_exports()
}

#[pymethods]
impl Tensor {
    /// The extents.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.view().shape())
    }

    /// The strides, in elements.
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.view().strides())
    }

    /// The element type's name ("float32", "bfloat16", "float8_e4m3fn", "bool", ...).
    #[getter]
    fn dtype(&self) -> String {
        self.inner.view().dtype().to_string()
    }

    /// `(device_type, device_id)`.
    #[getter]
    fn device(&self) -> (i32, i32) {
        let device = self.inner.view().device();
        (device.device_type.0, device.device_id)
    }

    /// Whether the tensor must not be written: flagged READ_ONLY by its producer, or imported
    /// from a legacy capsule (`dltensor`, as JAX and TensorFlow export), which cannot say that
    /// its memory may be written.
    #[getter]
    fn readonly(&self) -> bool {
        self.inner.view().is_read_only()
    }

    /// The address of the first element (`data + byte_offset`).
    #[getter]
    fn data_ptr(&self) -> usize {
        self.inner.view().data_ptr() as usize
    }

    /// Bytes the elements take (packed for sub-byte types).
    #[getter]
    fn nbytes(&self) -> u64 {
        self.inner.view().compact_byte_size()
    }

    /// Number of dimensions.
    #[getter]
    fn ndim(&self) -> usize {
        self.inner.view().ndim()
    }

    /// Number of elements.
    #[getter]
    fn size(&self) -> u64 {
        self.inner.view().num_elements()
    }

    /// The DLPack version the producer wrote, or None for a legacy tensor.
    #[getter]
    fn version(&self) -> Option<(u32, u32)> {
        self.inner.view().version().map(|v| (v.major, v.minor))
    }

    /// The DLPack flag bits (READ_ONLY = 1, IS_COPIED = 2, IS_SUBBYTE_TYPE_PADDED = 4).
    #[getter]
    fn flags(&self) -> u64 {
        self.inner.view().flags().bits()
    }

    fn __repr__(&self) -> String {
        let view = self.inner.view();
        let shape: Vec<String> = view.shape().iter().map(i64::to_string).collect();
        let shape = match shape.len() {
            1 => format!("({},)", shape[0]),
            _ => format!("({})", shape.join(", ")),
        };
        format!(
            "dlbridge.Tensor(shape={shape}, dtype={}, device={}, flags={})",
            view.dtype(),
            view.device(),
            view.flags()
        )
    }

    /// A compact (C-contiguous) copy in Rust-owned memory.
    fn copy(&self) -> PyResult<Tensor> {
        let copy = self.inner.view().to_compact_copy().map_err(to_py_err)?;
        Ok(Tensor::new(copy))
    }

    /// The buffer protocol, for host-readable tensors whose dtype has a `struct` format.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("NULL Py_buffer"));
        }
        let buffer = BufferLayout::new(&slf.get().inner, flags)?;
        // SAFETY: `view` is a valid Py_buffer to fill (CPython's contract for getbuffer); the
        // memory it describes is kept alive by the Tensor, referenced from `obj`, and the
        // layout arrays and format live in `internal` until `__releasebuffer__`.
        unsafe { buffer.fill(view, slf.into_any()) };
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
        // SAFETY: `internal` was set by `__getbuffer__` to a leaked `BufferLayout`, released
        // once, here.
        unsafe { drop(Box::from_raw((*view).internal.cast::<BufferLayout>())) };
    }
}

/// The `struct` module format of a dtype: its own code where the `struct` module has one, and
/// for other byte-addressable types (bfloat16, the float8 family, unknown codes) the unsigned
/// integer of the same width, so that the raw bits are exposed (NumPy sees uint16 for
/// bfloat16, uint8 for float8). `None` for sub-byte and odd-width types.
fn buffer_format(dtype: DataType) -> Option<String> {
    let scalar = DataType::new(dtype.code, dtype.bits, 1);
    let named = [
        (DataType::INT8, "b"),
        (DataType::UINT8, "B"),
        (DataType::INT16, "h"),
        (DataType::UINT16, "H"),
        (DataType::INT32, "i"),
        (DataType::UINT32, "I"),
        (DataType::INT64, "q"),
        (DataType::UINT64, "Q"),
        (DataType::FLOAT16, "e"),
        (DataType::FLOAT32, "f"),
        (DataType::FLOAT64, "d"),
        (DataType::BOOL, "?"),
        (DataType::COMPLEX64, "Zf"),
        (DataType::COMPLEX128, "Zd"),
    ]
    .into_iter()
    .find(|(d, _)| *d == scalar)
    .map(|(_, code)| code);
    let raw_bits = match scalar.bits {
        8 => Some("B"),
        16 => Some("H"),
        32 => Some("I"),
        64 => Some("Q"),
        _ => None,
    };
    let code = named.or(raw_bits)?;
    Some(if dtype.lanes == 1 {
        code.to_owned()
    } else {
        format!("{}{code}", dtype.lanes)
    })
}

/// What a `Py_buffer` points to: the format and the shape and byte strides, owned until the
/// buffer is released.
struct BufferLayout {
    buf: *mut c_void,
    len: isize,
    itemsize: isize,
    readonly: bool,
    format: CString,
    /// `ndim` extents, then `ndim` strides in bytes.
    dims: Vec<isize>,
}

impl BufferLayout {
    fn new(tensor: &ManagedTensor, flags: c_int) -> PyResult<Self> {
        let view = tensor.view();
        let device = view.device();
        if !device.is_host_readable() {
            return Err(PyBufferError::new_err(format!(
                "the buffer protocol needs host memory; this tensor is on {device}"
            )));
        }
        let dtype = view.dtype();
        let format = buffer_format(dtype).ok_or_else(|| {
            PyBufferError::new_err(format!(
                "{dtype} has no buffer-protocol format; export it with DLPack instead"
            ))
        })?;
        let itemsize = dtype.size_in_bytes().unwrap_or(1) as isize;
        let readonly = view.is_read_only();
        if readonly && flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err(
                "the tensor is read-only; a writable buffer was requested",
            ));
        }
        let c = view.is_c_contiguous();
        let f = view.is_f_contiguous();
        let refused = |order: &str| {
            PyBufferError::new_err(format!(
                "a {order}-contiguous buffer was requested but the tensor's strides are {:?}",
                view.strides()
            ))
        };
        if flags & ffi::PyBUF_C_CONTIGUOUS == ffi::PyBUF_C_CONTIGUOUS && !c {
            return Err(refused("C"));
        }
        if flags & ffi::PyBUF_F_CONTIGUOUS == ffi::PyBUF_F_CONTIGUOUS && !f {
            return Err(refused("Fortran"));
        }
        if flags & ffi::PyBUF_ANY_CONTIGUOUS == ffi::PyBUF_ANY_CONTIGUOUS && !c && !f {
            return Err(refused("C or Fortran"));
        }
        if flags & ffi::PyBUF_STRIDES != ffi::PyBUF_STRIDES && !c {
            return Err(refused("C (no strides requested)"));
        }
        let mut dims: Vec<isize> = view.shape().iter().map(|&e| e as isize).collect();
        dims.extend(view.strides().iter().map(|&s| s as isize * itemsize));
        let elements = view.num_elements() as isize;
        let data = view.data_ptr();
        // An empty tensor may have NULL data; buffers want an address.
        let buf = if data.is_null() {
            std::ptr::NonNull::<u64>::dangling().as_ptr().cast()
        } else {
            data
        };
        Ok(BufferLayout {
            buf,
            len: elements * itemsize,
            itemsize,
            readonly,
            format: CString::new(format).expect("formats have no NUL"),
            dims,
        })
    }

    /// Fills `view` and hands this layout to it.
    ///
    /// # Safety
    ///
    /// `view` must be a valid `Py_buffer` to fill, and `owner` must keep the memory alive.
    unsafe fn fill(self, view: *mut ffi::Py_buffer, owner: Bound<'_, PyAny>) {
        let ndim = self.dims.len() / 2;
        let layout = Box::into_raw(Box::new(self));
        // SAFETY: by the contract; `layout` stays allocated until `__releasebuffer__`.
        unsafe {
            let layout = &mut *layout;
            (*view).obj = owner.into_ptr();
            (*view).buf = layout.buf;
            (*view).len = layout.len;
            (*view).itemsize = layout.itemsize;
            (*view).readonly = c_int::from(layout.readonly);
            (*view).format = layout.format.as_ptr().cast_mut();
            (*view).ndim = ndim as c_int;
            (*view).shape = layout.dims.as_mut_ptr();
            (*view).strides = layout.dims.as_mut_ptr().add(ndim);
            (*view).suboffsets = std::ptr::null_mut();
            (*view).internal = (layout as *mut BufferLayout).cast();
        }
    }
}

/// Imports any DLPack producer or capsule as a `dlbridge.Tensor`.
#[pyfunction]
#[pyo3(signature = (x, /, *, device=None, copy=None))]
fn from_dlpack(
    x: &Bound<'_, PyAny>,
    device: Option<&Bound<'_, PyAny>>,
    copy: Option<bool>,
) -> PyResult<Tensor> {
    let device = match device.filter(|d| !d.is_none()) {
        Some(device) => Some(device_argument("device", device)?),
        None => None,
    };
    let options = ImportOptions {
        device,
        copy,
        stream: None,
    };
    Ok(Tensor::new(import(x, &options)?))
}

/// Reads a shape argument: an int or a sequence of non-negative ints.
fn shape_argument(shape: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let extents: Vec<i64> = match shape.extract::<i64>() {
        Ok(n) => vec![n],
        Err(_) => shape
            .extract()
            .map_err(|_| PyTypeError::new_err("shape must be an int or a sequence of ints"))?,
    };
    extents
        .iter()
        .map(|&extent| {
            usize::try_from(extent).map_err(|_| {
                PyValueError::new_err(format!("shape extents must be >= 0, got {extent}"))
            })
        })
        .collect()
}

fn dtype_argument(dtype: &str) -> PyResult<DataType> {
    let parsed: DataType = dtype
        .parse()
        .map_err(|e: dlbridge::ParseDataTypeError| PyValueError::new_err(e.to_string()))?;
    parsed
        .check()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(parsed)
}

/// A zero-filled tensor in Rust memory (64-byte aligned).
fn zeroed(shape: &[usize], dtype: DataType) -> PyResult<Tensor> {
    let tensor =
        ManagedTensor::zeros(dtype, shape).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(Tensor::new(tensor))
}

/// A new tensor in Rust memory, of the given shape and dtype (zero-filled).
#[pyfunction]
#[pyo3(signature = (shape, dtype="float32"))]
fn empty(shape: &Bound<'_, PyAny>, dtype: &str) -> PyResult<Tensor> {
    zeroed(&shape_argument(shape)?, dtype_argument(dtype)?)
}

/// A new zero-filled tensor in Rust memory.
#[pyfunction]
#[pyo3(signature = (shape, dtype="float32"))]
fn zeros(shape: &Bound<'_, PyAny>, dtype: &str) -> PyResult<Tensor> {
    zeroed(&shape_argument(shape)?, dtype_argument(dtype)?)
}

fn counting<T: Element>(n: usize, value: impl Fn(usize) -> T) -> PyResult<Tensor> {
    let mut tensor = ManagedTensor::zeros(T::DTYPE, &[n]).map_err(to_py_err)?;
    for (i, element) in tensor
        .as_mut_slice::<T>()
        .map_err(to_py_err)?
        .iter_mut()
        .enumerate()
    {
        *element = value(i);
    }
    Ok(Tensor::new(tensor))
}

/// `[0, 1, ..., n - 1]` in Rust memory.
#[pyfunction]
#[pyo3(signature = (n, dtype="int64"))]
fn arange(n: i64, dtype: &str) -> PyResult<Tensor> {
    let n = usize::try_from(n)
        .map_err(|_| PyValueError::new_err(format!("n must be >= 0, got {n}")))?;
    let dtype = dtype_argument(dtype)?;
    match dtype {
        DataType::INT8 => counting(n, |i| i as i8),
        DataType::INT16 => counting(n, |i| i as i16),
        DataType::INT32 => counting(n, |i| i as i32),
        DataType::INT64 => counting(n, |i| i as i64),
        DataType::UINT8 => counting(n, |i| i as u8),
        DataType::UINT16 => counting(n, |i| i as u16),
        DataType::UINT32 => counting(n, |i| i as u32),
        DataType::UINT64 => counting(n, |i| i as u64),
        DataType::FLOAT16 => counting(n, |i| f16::from_f64(i as f64)),
        DataType::BFLOAT16 => counting(n, |i| bf16::from_f64(i as f64)),
        DataType::FLOAT32 => counting(n, |i| i as f32),
        DataType::FLOAT64 => counting(n, |i| i as f64),
        DataType::COMPLEX64 => counting(n, |i| Complex::new(i as f32, 0.0)),
        DataType::COMPLEX128 => counting(n, |i| Complex::new(i as f64, 0.0)),
        other => match minifloat::Format::of(other) {
            Some(format) => {
                let bytes = (0..n)
                    .map(|i| format.encode_integer(i as u64))
                    .collect::<Option<Vec<u8>>>()
                    .ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "arange({n}) does not fit {other}: its largest values overflow"
                        ))
                    })?;
                let tensor = ManagedTensor::zeros(other, &[n]).map_err(to_py_err)?;
                // SAFETY: the new tensor owns `n` bytes (one per float8 element) at its first
                // element, and nothing else refers to them yet.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        bytes.as_ptr(),
                        tensor.view().data_ptr().cast::<u8>(),
                        n,
                    )
                };
                Ok(Tensor::new(tensor))
            }
            None => Err(PyValueError::new_err(format!(
                "arange supports integer, float, bfloat16, float8 and complex dtypes, not {other}"
            ))),
        },
    }
}

/// Encoding small non-negative integers in the float8 formats, for `arange`.
mod minifloat {
    use dlbridge::DataType;

    /// How a float8 format spends its bits and its special values.
    #[derive(Clone, Copy)]
    pub struct Format {
        exponent_bits: u32,
        mantissa_bits: u32,
        bias: i32,
        specials: Specials,
    }

    #[derive(Clone, Copy, PartialEq)]
    enum Specials {
        /// IEEE-like: the all-ones exponent holds infinities and NaNs.
        Ieee,
        /// "fn": finite, only all-ones exponent and mantissa is NaN.
        FiniteNan,
        /// "fnuz": finite, unsigned zero, NaN is 0x80: every exponent holds numbers.
        FiniteUnsignedZero,
    }

    impl Format {
        /// The format of a float8 data type (not e8m0fnu, which has no zero).
        pub fn of(dtype: DataType) -> Option<Self> {
            let (exponent_bits, mantissa_bits, bias, specials) = match dtype {
                DataType::FLOAT8_E3M4 => (3, 4, 3, Specials::Ieee),
                DataType::FLOAT8_E4M3 => (4, 3, 7, Specials::Ieee),
                DataType::FLOAT8_E4M3FN => (4, 3, 7, Specials::FiniteNan),
                DataType::FLOAT8_E4M3FNUZ => (4, 3, 8, Specials::FiniteUnsignedZero),
                DataType::FLOAT8_E4M3B11FNUZ => (4, 3, 11, Specials::FiniteUnsignedZero),
                DataType::FLOAT8_E5M2 => (5, 2, 15, Specials::Ieee),
                DataType::FLOAT8_E5M2FNUZ => (5, 2, 16, Specials::FiniteUnsignedZero),
                _ => return None,
            };
            Some(Format {
                exponent_bits,
                mantissa_bits,
                bias,
                specials,
            })
        }

        /// The bits of `value` rounded to nearest, ties to even; `None` when it overflows to
        /// infinity or NaN.
        pub fn encode_integer(self, value: u64) -> Option<u8> {
            if value == 0 {
                return Some(0);
            }
            let mut exponent = 63 - value.leading_zeros(); // floor(log2(value))
            let fraction = value - (1 << exponent); // value = 2^e * (1 + fraction / 2^e)
            let scaled = u128::from(fraction) << self.mantissa_bits;
            let mut mantissa = (scaled >> exponent) as u64;
            let remainder = scaled & ((1u128 << exponent) - 1);
            let half = if exponent == 0 {
                0
            } else {
                1u128 << (exponent - 1)
            };
            if exponent > 0 && (remainder > half || (remainder == half && mantissa & 1 == 1)) {
                mantissa += 1;
            }
            if mantissa == 1 << self.mantissa_bits {
                mantissa = 0;
                exponent += 1;
            }
            let field = i64::from(exponent) + i64::from(self.bias);
            let all_ones = (1i64 << self.exponent_bits) - 1;
            let top = if self.specials == Specials::Ieee {
                all_ones - 1
            } else {
                all_ones
            };
            let nan_mantissa = (1u64 << self.mantissa_bits) - 1;
            if field > top
                || (self.specials == Specials::FiniteNan
                    && field == all_ones
                    && mantissa == nan_mantissa)
            {
                return None;
            }
            Some(((field as u64) << self.mantissa_bits | mantissa) as u8)
        }
    }
}

/// Kernels over typed tensor arguments, for the test suite (`dlbridge._dlbridge._testing`):
/// they show the argument types at work on every framework.
mod testing {
    use dlbridge_pyo3::{shape, AnyLayout, CContiguous, TensorArg, TensorArgMut};
    use ndarray::{Ix1, Ix2, Ix3, IxDyn};
    use pyo3::exceptions::PyRuntimeError;
    use pyo3::prelude::*;

    /// `out[...] = x * factor`, with the GIL released while it runs.
    #[pyfunction]
    pub fn scale(
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
    pub fn add_one(mut x: TensorArgMut<'_, f64, Ix1>) {
        x.view_mut().mapv_inplace(|v| v + 1.0);
    }

    /// Sums a float32 tensor of any shape and layout.
    #[pyfunction]
    pub fn total(x: TensorArg<'_, f32, IxDyn>) -> f64 {
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
    pub fn channel_means(image: TensorArg<'_, u8, Ix3, AnyLayout, Rgb>) -> [f64; 3] {
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
    pub fn eye2(mut out: TensorArgMut<'_, f64, Ix2, AnyLayout, TwoByTwo>) {
        out.view_mut()
            .indexed_iter_mut()
            .for_each(|((i, j), v)| *v = f64::from(u8::from(i == j)));
    }

    /// Takes three tensors and does nothing: the cost of the arguments alone.
    #[pyfunction]
    pub fn noop3(
        _a: TensorArg<'_, f32, Ix2>,
        _b: TensorArg<'_, f32, Ix2>,
        _c: TensorArg<'_, f32, Ix2>,
    ) {
    }

    /// Fills a float32 tensor of any shape and layout with `value`, in place.
    #[pyfunction]
    pub fn fill(mut x: TensorArgMut<'_, f32, IxDyn>, value: f32) {
        x.view_mut().fill(value);
    }

    /// Takes a writable float32 tensor and neither reads nor writes it (its version counter
    /// is left alone: no mutable view is taken).
    #[pyfunction]
    pub fn take_mut(x: TensorArgMut<'_, f32, IxDyn>) -> usize {
        x.view().len()
    }

    /// `out[...] = x` for two float32 tensors of one shape, any layouts: a kernel whose two
    /// arguments may be views of one tensor (the aliasing registry decides).
    #[pyfunction]
    pub fn copy_into(x: TensorArg<'_, f32, IxDyn>, mut out: TensorArgMut<'_, f32, IxDyn>) {
        out.view_mut().assign(&x.view());
    }

    /// Sums two float32 tensors with the GIL released for `seconds` meanwhile: a call that
    /// holds its arguments while other threads run.
    #[pyfunction]
    pub fn slow_total2(
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
    pub fn slow_fill(
        py: Python<'_>,
        mut x: TensorArgMut<'_, f32, IxDyn>,
        value: f32,
        seconds: f64,
    ) {
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
    pub fn inspect_argument<'py>(
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
    pub fn noop3_objects(_a: &Bound<'_, PyAny>, _b: &Bound<'_, PyAny>, _c: &Bound<'_, PyAny>) {}

    /// Imports `x` (any producer, as `dlbridge.from_dlpack` does) and releases the tensor on
    /// a new thread that has never held the GIL, while this thread waits with the GIL
    /// released: the producer's deleter runs on a thread without the GIL, as it may when a
    /// Rust library drops a tensor from its own worker threads.
    #[pyfunction]
    pub fn release_on_new_thread(py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<()> {
        let tensor = super::import(x, &super::ImportOptions::default())?;
        py.detach(|| std::thread::spawn(move || drop(tensor)).join())
            .map_err(|_| PyRuntimeError::new_err("the releasing thread panicked"))
    }
}

/// The `dlbridge._dlbridge` extension module. It runs without the GIL on free-threaded Python
/// (`gil_used = false`): its state is dlbridge-pyo3's, which is safe without it.
#[pymodule(gil_used = false)]
fn _dlbridge(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Tensor>()?;
    publish_dlpack::<Tensor>(module.py())?;
    module.add_function(wrap_pyfunction!(_exchange_api_exports, module)?)?;
    let testing = PyModule::new(module.py(), "_testing")?;
    testing.gil_used(false)?;
    testing.add_function(wrap_pyfunction!(testing::scale, &testing)?)?;
    testing.add_function(wrap_pyfunction!(testing::add_one, &testing)?)?;
    testing.add_function(wrap_pyfunction!(testing::total, &testing)?)?;
    testing.add_function(wrap_pyfunction!(testing::noop3, &testing)?)?;
    testing.add_function(wrap_pyfunction!(testing::channel_means, &testing)?)?;
    testing.add_function(wrap_pyfunction!(testing::eye2, &testing)?)?;
    testing.add_function(wrap_pyfunction!(testing::noop3_objects, &testing)?)?;
    testing.add_function(wrap_pyfunction!(testing::fill, &testing)?)?;
    testing.add_function(wrap_pyfunction!(testing::take_mut, &testing)?)?;
    testing.add_function(wrap_pyfunction!(testing::copy_into, &testing)?)?;
    testing.add_function(wrap_pyfunction!(testing::slow_total2, &testing)?)?;
    testing.add_function(wrap_pyfunction!(testing::slow_fill, &testing)?)?;
    testing.add_function(wrap_pyfunction!(testing::inspect_argument, &testing)?)?;
    testing.add_function(wrap_pyfunction!(testing::release_on_new_thread, &testing)?)?;
    module.add_submodule(&testing)?;
    module.add_function(wrap_pyfunction!(from_dlpack, module)?)?;
    module.add_function(wrap_pyfunction!(empty, module)?)?;
    module.add_function(wrap_pyfunction!(zeros, module)?)?;
    module.add_function(wrap_pyfunction!(arange, module)?)?;
    module.add(
        "DLPACK_VERSION",
        (Version::CURRENT.major, Version::CURRENT.minor),
    )?;
    module.add("FLAG_READ_ONLY", Flags::READ_ONLY.bits())?;
    module.add("FLAG_IS_COPIED", Flags::IS_COPIED.bits())?;
    module.add(
        "FLAG_IS_SUBBYTE_TYPE_PADDED",
        Flags::IS_SUBBYTE_TYPE_PADDED.bits(),
    )?;
    Ok(())
}
