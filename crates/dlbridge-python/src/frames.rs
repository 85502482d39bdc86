//! Frames: a host tensor as a small header and its bytes, the format `dlbridge.distributed`
//! sends through Ray's object store and Dask's comms. The bytes travel out-of-band (a
//! `pickle.PickleBuffer` over the tensor's memory: no copy on the sender for a C-contiguous
//! tensor); the header is a dict of plain values, which pickle and msgpack both carry.
//!
//! The header (format version 1.0):
//!
//! | field | value |
//! |---|---|
//! | `format` | `"dlbridge.frame"` |
//! | `version` | `[1, 0]`: a reader takes any 1.x and refuses another major |
//! | `dtype` | dlbridge's dtype name (`"float32"`, `"bfloat16"`, `"float8_e4m3fn"`, ...) |
//! | `shape` | the extents |
//! | `strides` | in elements: version 1 carries C-contiguous bytes only, so the row-major strides |
//! | `device` | `[device_type, device_id]` of the bytes: `[1, 0]` (CPU) in version 1 |
//! | `flags` | DLPack's bits: READ_ONLY and IS_SUBBYTE_TYPE_PADDED are honoured, others ignored |
//! | `nbytes` | the length of the bytes |
//!
//! `strides` and `device` are there so that a later version can send strided layouts and
//! device memory (CUDA IPC handles, Ray's GPU transports) without a new header: version 1
//! refuses both with a clear error. The receiver validates every field, as the core validates
//! a descriptor: a truncated, corrupted or hostile frame gives a `ValueError` or `TypeError`
//! naming the field and its value, never a tensor over bytes it does not describe.

use dlbridge::{DataType, Flags, MAX_NDIM, layout};
use dlbridge_pyo3::TensorClass;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::creation::dtype_argument;
use crate::pickling::{self, compact_host_bytes, pickle_buffer, storage_bytes};
use crate::tensor::Tensor;

/// The header's `format`.
const FORMAT: &str = "dlbridge.frame";
/// The header's `version`: the major a reader must know, the minor it may ignore.
const VERSION: (u32, u32) = (1, 0);
/// DLPack's device type of host memory, the only one version 1 carries.
const CPU: i32 = 1;

/// `_frame_of(tensor)`: `(header, data)`, `data` a `pickle.PickleBuffer` over the tensor's
/// bytes (a compact C-order copy first when the tensor is strided). A tensor the host cannot
/// read is refused with a `TypeError` naming its device.
#[pyfunction]
pub(crate) fn _frame_of<'py>(
    tensor: &Bound<'py, Tensor>,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyAny>)> {
    let py = tensor.py();
    let read_only = tensor.get().tensor().is_read_only();
    let compact = compact_host_bytes(tensor, "send")?;
    let compact_tensor = compact.tensor();
    let shape = compact_tensor.shape();
    let mut strides = vec![0i64; shape.len()];
    layout::fill_row_major_strides(shape, &mut strides);
    let flags = Flags::NONE.with(Flags::READ_ONLY, read_only).with(
        Flags::IS_SUBBYTE_TYPE_PADDED,
        compact_tensor.flags().is_subbyte_type_padded(),
    );
    let header = PyDict::new(py);
    header.set_item("format", FORMAT)?;
    header.set_item("version", PyList::new(py, [VERSION.0, VERSION.1])?)?;
    header.set_item("dtype", compact_tensor.dtype().to_string())?;
    header.set_item("shape", PyList::new(py, shape)?)?;
    header.set_item("strides", PyList::new(py, strides)?)?;
    header.set_item("device", PyList::new(py, [CPU, 0])?)?;
    header.set_item("flags", flags.bits())?;
    header.set_item("nbytes", compact_tensor.compact_byte_size())?;
    let data = pickle_buffer(py, compact, read_only)?;
    Ok((header, data))
}

/// `_tensor_from_frame(header, data)`: the `dlbridge.Tensor` a frame describes, a view of
/// `data` when it is aligned for the dtype (read-only when the tensor was, or when `data` is
/// read-only), a copy otherwise; every header field validated against `data`.
#[pyfunction]
pub(crate) fn _tensor_from_frame(
    header: &Bound<'_, PyAny>,
    data: &Bound<'_, PyAny>,
) -> PyResult<Tensor> {
    let header = header.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "a dlbridge frame's header must be a dict, got {}",
            type_name(header)
        ))
    })?;
    let format: String = field(header, "format", "a str")?;
    if format != FORMAT {
        return Err(PyValueError::new_err(format!(
            "a dlbridge frame's header field 'format' must be {FORMAT:?}, got {format:?}"
        )));
    }
    let version = list_field(header, "version", "a list [major, minor]")?;
    match version.as_slice() {
        [major, _] if *major == i64::from(VERSION.0) => {}
        _ => {
            return Err(PyValueError::new_err(format!(
                "a dlbridge frame's header field 'version' is {version:?}: this dlbridge reads \
                 version {}.x (upgrade dlbridge where the frame is read)",
                VERSION.0
            )));
        }
    }
    let dtype_name: String = field(header, "dtype", "a dtype name")?;
    let dtype: DataType = dtype_argument(&dtype_name).map_err(|error| {
        PyValueError::new_err(format!(
            "a dlbridge frame's header field 'dtype' is {dtype_name:?}: {}",
            error.value(header.py())
        ))
    })?;
    let extents = list_field(header, "shape", "a list of ints")?;
    if extents.len() > MAX_NDIM as usize {
        return Err(PyValueError::new_err(format!(
            "a dlbridge frame's header field 'shape' has {} dimensions, at most {MAX_NDIM} \
             are allowed",
            extents.len()
        )));
    }
    let shape = extents
        .iter()
        .map(|&extent| usize::try_from(extent))
        .collect::<Result<Vec<usize>, _>>()
        .map_err(|_| {
            PyValueError::new_err(format!(
                "a dlbridge frame's header field 'shape' is {extents:?}: extents must be >= 0"
            ))
        })?;
    let strides = list_field(header, "strides", "a list of ints")?;
    if extents.len() != strides.len() || !layout::is_c_contiguous(&extents, &strides) {
        return Err(PyValueError::new_err(format!(
            "a dlbridge frame's header field 'strides' is {strides:?}, not the row-major \
             strides of shape {extents:?}: this dlbridge reads C-contiguous frames only"
        )));
    }
    let device = list_field(header, "device", "a list [device_type, device_id]")?;
    match device.as_slice() {
        [device_type, 0] if *device_type == i64::from(CPU) => {}
        [_, _] => {
            return Err(PyValueError::new_err(format!(
                "a dlbridge frame's header field 'device' is {device:?}: this dlbridge reads \
                 frames of host memory only ([1, 0], the CPU)"
            )));
        }
        _ => {
            return Err(PyValueError::new_err(format!(
                "a dlbridge frame's header field 'device' must be [device_type, device_id], \
                 got {device:?}"
            )));
        }
    }
    let bits: u64 = field(header, "flags", "an int >= 0")?;
    let flags = Flags::from_bits(bits);
    let read_only = flags.contains(Flags::READ_ONLY);
    let padded = flags.contains(Flags::IS_SUBBYTE_TYPE_PADDED);
    if padded && !dtype.is_sub_byte() {
        return Err(PyValueError::new_err(format!(
            "a dlbridge frame's header field 'flags' is {bits}: IS_SUBBYTE_TYPE_PADDED is set \
             for {dtype}, which is not a sub-byte type"
        )));
    }
    let nbytes: u64 = field(header, "nbytes", "an int >= 0")?;
    let expected = storage_bytes(dtype, &shape, padded).ok_or_else(|| {
        PyValueError::new_err(format!(
            "a dlbridge frame's header describes a {dtype} tensor of shape {extents:?}, which \
             would not fit in memory"
        ))
    })?;
    if nbytes != expected {
        return Err(PyValueError::new_err(format!(
            "a dlbridge frame's header field 'nbytes' is {nbytes}, but a {dtype} tensor of \
             shape {extents:?} takes {expected} bytes"
        )));
    }
    if let Ok(length) = data.len() {
        if length as u64 != nbytes {
            return Err(PyValueError::new_err(format!(
                "a dlbridge frame's data holds {length} bytes, its header says {nbytes} \
                 (a truncated or mismatched frame)"
            )));
        }
    }
    let (tensor, rebuilt) =
        pickling::rebuild(data, dtype, &shape, read_only, padded, true, "frame")?;
    Ok(Tensor::rebuilt(tensor, rebuilt))
}

/// Header field `name`, of the type `expected` describes (a `str` only where `T` is one: a
/// str is never read as a list of anything).
fn field<'py, T: for<'a> FromPyObject<'a, 'py>>(
    header: &Bound<'py, PyDict>,
    name: &str,
    expected: &str,
) -> PyResult<T> {
    let value = header.get_item(name)?.ok_or_else(|| {
        PyValueError::new_err(format!("a dlbridge frame's header has no field '{name}'"))
    })?;
    let wrong = || wrong_type(name, expected, &value);
    let wants_text = std::any::type_name::<T>() == std::any::type_name::<String>();
    if value.is_instance_of::<PyString>() != wants_text {
        return Err(wrong());
    }
    value.extract::<T>().map_err(|_| wrong())
}

/// Header field `name`, a list (or tuple) of ints as `expected` describes: not any other
/// sequence of ints (`bytes`, a `range`), which the header's format does not write.
fn list_field(header: &Bound<'_, PyDict>, name: &str, expected: &str) -> PyResult<Vec<i64>> {
    if let Some(value) = header.get_item(name)? {
        if !(value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>()) {
            return Err(wrong_type(name, expected, &value));
        }
    }
    field(header, name, expected)
}

/// The `TypeError` of header field `name` holding `value` where `expected` belongs.
fn wrong_type(name: &str, expected: &str, value: &Bound<'_, PyAny>) -> PyErr {
    let shown = value
        .repr()
        .map(|repr| repr.to_string())
        .unwrap_or_else(|_| "?".into());
    PyTypeError::new_err(format!(
        "a dlbridge frame's header field '{name}' must be {expected}, got {} {shown}",
        type_name(value)
    ))
}

/// The name of an object's type, for messages.
fn type_name(object: &Bound<'_, PyAny>) -> String {
    object
        .get_type()
        .name()
        .map(|name| name.to_string())
        .unwrap_or_else(|_| "?".into())
}
