//! The functions that make a `dlbridge.Tensor`: `from_dlpack` (import from any producer) and
//! the creation functions `empty`, `zeros` and `arange` (Rust memory), the reconstructor of
//! pickled tensors, with the reading of their shape and dtype arguments.

use dlbridge::{DataType, Element, ManagedTensor};
use dlbridge_pyo3::{
    ImportOptions, device::device_argument, from_dlpack_unclaimed as import_unclaimed,
    streams::ConsumerStream, to_py_err,
};
use half::{bf16, f16};
use num_complex::Complex;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::minifloat;
use crate::pickling;
use crate::tensor::Tensor;

/// Imports any DLPack producer or capsule as a `dlbridge.Tensor`. `stream`: None asks the
/// producer for its current work stream (nothing to synchronise), -1 for no synchronisation,
/// another int is a stream handle of the protocol (CUDA: 1 legacy default, 2 per-thread
/// default, or a `cudaStream_t`). As the protocol has it, a handle is trusted, not checked:
/// it must be a live stream of the tensor's device, kept alive as long as the tensor (or a
/// re-export of it) is used; an int that is not one is undefined behaviour in the driver.
///
/// `legacy_writable=True` is the caller's promise that the producer allows writes to the
/// memory of a legacy capsule (`dltensor`, which has no flags to say so, and which dlbridge
/// holds read-only otherwise): MXNet's `to_dlpack_for_write(x)` is made for this. It changes
/// nothing for a versioned tensor, whose flags say what the producer allows (one flagged
/// READ_ONLY stays read-only), and is never the default.
#[pyfunction]
#[pyo3(signature = (x, /, *, device=None, copy=None, stream=None, legacy_writable=false))]
pub(crate) fn from_dlpack(
    x: &Bound<'_, PyAny>,
    device: Option<&Bound<'_, PyAny>>,
    copy: Option<bool>,
    stream: Option<i64>,
    legacy_writable: bool,
) -> PyResult<Tensor> {
    let options = import_options(device, copy, stream)?;
    // SAFETY: the tensor goes into the class's `ClassTensor` (`Tensor::new`) before anything
    // reads its elements (`vouch_legacy_writable` changes the flags only), and from there on
    // its reads are claimed one by one.
    let mut tensor = unsafe { import_unclaimed(x, &options) }?;
    if legacy_writable {
        vouch_legacy_writable(&mut tensor);
    }
    Ok(Tensor::new(tensor))
}

/// `legacy_writable=True`: a legacy tensor becomes writable, by the caller's promise.
pub(crate) fn vouch_legacy_writable(tensor: &mut ManagedTensor) {
    // SAFETY: the caller of `from_dlpack(..., legacy_writable=True)` (or of `explain` with
    // it) promises that the producer allows writes to the memory of a legacy capsule, as
    // the keyword's documentation says; a versioned tensor is not changed (its flags stand).
    unsafe { tensor.assume_legacy_writable() };
}

/// `from_dlpack`'s keywords, as `explain` takes them, as the import's options.
pub(crate) fn import_options(
    device: Option<&Bound<'_, PyAny>>,
    copy: Option<bool>,
    stream: Option<i64>,
) -> PyResult<ImportOptions> {
    let device = match device.filter(|d| !d.is_none()) {
        Some(device) => Some(device_argument("device", device)?),
        None => None,
    };
    let stream = match stream {
        // SAFETY: as in `from_dlpack`: by the DLPack protocol the caller's stream integer is a
        // live stream of the tensor's device it owns and keeps alive as long as the imported
        // tensor can be exported (`explain` releases it at once); no library can check it.
        Some(stream) => unsafe { ConsumerStream::from_dlpack_value(stream) }?,
        None => ConsumerStream::default(),
    };
    Ok(ImportOptions::default()
        .with_device(device)
        .with_copy(copy)
        .with_stream(stream))
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

pub(crate) fn dtype_argument(dtype: &str) -> PyResult<DataType> {
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
pub(crate) fn empty(shape: &Bound<'_, PyAny>, dtype: &str) -> PyResult<Tensor> {
    zeroed(&shape_argument(shape)?, dtype_argument(dtype)?)
}

/// A new zero-filled tensor in Rust memory.
#[pyfunction]
#[pyo3(signature = (shape, dtype="float32"))]
pub(crate) fn zeros(shape: &Bound<'_, PyAny>, dtype: &str) -> PyResult<Tensor> {
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
pub(crate) fn arange(n: i64, dtype: &str) -> PyResult<Tensor> {
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

/// The reconstructor of pickled tensors (`Tensor.__reduce_ex__` names it): a CPU tensor of
/// `dtype` and `shape` over the bytes of `data`, shared when they allow it, copied otherwise
/// (see the module `pickling`; `view_read_only_buffers`, False in pickles made before it
/// existed, says whether a read-only buffer is shared read-only). Every argument is checked:
/// a corrupted pickle is an error.
#[pyfunction]
#[pyo3(signature = (data, dtype, shape, read_only, subbyte_padded, view_read_only_buffers=false, /))]
pub(crate) fn _tensor_from_pickle(
    data: &Bound<'_, PyAny>,
    dtype: &str,
    shape: &Bound<'_, PyAny>,
    read_only: bool,
    subbyte_padded: bool,
    view_read_only_buffers: bool,
) -> PyResult<Tensor> {
    let dtype = dtype_argument(dtype)?;
    let shape = shape_argument(shape)?;
    let (tensor, rebuilt) = pickling::rebuild(
        data,
        dtype,
        &shape,
        read_only,
        subbyte_padded,
        view_read_only_buffers,
        "pickle",
    )?;
    Ok(Tensor::rebuilt(tensor, rebuilt))
}
