//! Pickling `dlbridge.Tensor` (`__reduce_ex__`) and rebuilding it (the reconstructor,
//! `dlbridge._dlbridge._tensor_from_pickle`, whose arguments are an input boundary: a
//! corrupted or hostile pickle gives a clear error, never a tensor over memory it does not
//! describe).
//!
//! What travels: the tensor's bytes in C order, its dtype's name, its shape, whether it is
//! read-only and whether its sub-byte elements are padded. Strides do not travel: a
//! non-contiguous tensor is pickled as a compact C-order copy and comes back C-contiguous (a
//! strided sub-byte tensor, whose elements share bytes, is refused with a `BufferError`).
//!
//! - Protocol 5: the bytes are a `pickle.PickleBuffer` over the tensor's memory (no copy when
//!   the tensor is C-contiguous). With a `buffer_callback` they travel out-of-band, as they
//!   are; without, pickle writes them in-band (`bytes` for a read-only tensor, `bytearray`
//!   for a writable one).
//! - Protocols 0 to 4: a copy of the bytes, in-band, as `bytes`.
//! - Rebuilding is zero-copy over the buffer pickle hands back (out-of-band: what the
//!   transport gave; in-band: the `bytes` or `bytearray` pickle made) when that buffer is
//!   C-contiguous, aligned for the dtype, and writable unless the tensor was read-only. It
//!   copies otherwise (flagged IS_COPIED): a writable tensor never gets write access to memory
//!   whose owner made it read-only, and keeps its writability.
//! - Tensors whose memory the host cannot read are refused with a `TypeError` naming their
//!   device.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use dlbridge::{DataType, Device, Export, MAX_NDIM, ManagedTensor};
use dlbridge_pyo3::to_py_err;
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyMemoryView, PyTuple};

/// The reconstructor's name in `dlbridge._dlbridge`, which pickles refer to.
const RECONSTRUCTOR: &str = "_tensor_from_pickle";

/// The bytes of a C-contiguous tensor as a buffer (format "B"), read-only as the tensor is:
/// what `pickle.PickleBuffer` wraps. Not a class of the module: made only here.
#[pyclass(module = "dlbridge", name = "_TensorBytes", frozen)]
struct TensorBytes {
    tensor: Arc<ManagedTensor>,
    read_only: bool,
}

#[pymethods]
impl TensorBytes {
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        let this = slf.get();
        // SAFETY: `view` is NULL or a valid Py_buffer to fill (CPython's contract for
        // getbuffer), and `slf` holds the tensor, which keeps its memory alive.
        unsafe {
            dlbridge_pyo3::get_byte_buffer(&this.tensor, this.read_only, slf.as_any(), view, flags)
        }
    }

    unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
        // SAFETY: CPython releases each buffer that `__getbuffer__` filled once, here.
        unsafe { dlbridge_pyo3::release_buffer(view) }
    }
}

/// `Tensor.__reduce_ex__(protocol)`: `(reconstructor, (data, dtype, shape, read_only,
/// subbyte_padded))`, `data` a `PickleBuffer` from protocol 5 on, `bytes` before.
pub(crate) fn reduce<'py>(
    py: Python<'py>,
    tensor: &Arc<ManagedTensor>,
    protocol: i64,
) -> PyResult<Bound<'py, PyTuple>> {
    let view = tensor.view();
    let device = view.device();
    if !device.is_host_readable() {
        return Err(PyTypeError::new_err(format!(
            "cannot pickle a dlbridge.Tensor on {device}: pickling needs memory the host can \
             read; copy the tensor to the CPU first"
        )));
    }
    let read_only = view.is_read_only();
    let padded = view.flags().is_subbyte_type_padded();
    let source = if view.is_c_contiguous() {
        Arc::clone(tensor)
    } else if view.dtype().is_sub_byte() {
        // Sub-byte elements are copied as whole bytes (`to_compact_copy`), so only compact.
        return Err(PyBufferError::new_err(format!(
            "cannot pickle a strided {} tensor: sub-byte elements are pickled C-contiguous \
             only, and its strides are {:?}",
            view.dtype(),
            view.strides()
        )));
    } else {
        Arc::new(view.to_compact_copy().map_err(to_py_err)?)
    };
    let bytes = Py::new(
        py,
        TensorBytes {
            tensor: source,
            read_only,
        },
    )?;
    let data = if protocol >= 5 {
        static PICKLE_BUFFER: PyOnceLock<Py<pyo3::types::PyType>> = PyOnceLock::new();
        PICKLE_BUFFER
            .import(py, "pickle", "PickleBuffer")?
            .call1((bytes,))?
    } else {
        // `bytes(buffer)`: one copy, made by CPython from the buffer.
        py.get_type::<PyBytes>().call1((bytes,))?
    };
    static REBUILD: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let rebuild = REBUILD.get_or_try_init(py, || {
        py.import("dlbridge._dlbridge")?
            .getattr(RECONSTRUCTOR)
            .map(Bound::unbind)
    })?;
    let args = (
        data,
        view.dtype().to_string(),
        PyTuple::new(py, view.shape())?,
        read_only,
        padded,
    );
    PyTuple::new(
        py,
        [rebuild.bind(py).clone(), args.into_pyobject(py)?.into_any()],
    )
}

/// A buffer-protocol export of contiguous bytes (`PyBUF_SIMPLE`), held for as long as the
/// tensor rebuilt over it lives, and released with the interpreter attached.
struct HeldBytes(Box<ffi::Py_buffer>);

// SAFETY: the export is only released (in `drop`, attached to the interpreter) and its memory
// only read through the tensor that owns it, from whatever thread: CPython's buffers may be
// used from any thread, and released from any that is attached.
unsafe impl Send for HeldBytes {}

impl Drop for HeldBytes {
    fn drop(&mut self) {
        Python::attach(|_py| {
            // SAFETY: filled by a successful `PyObject_GetBuffer`, released once, here, attached.
            unsafe { ffi::PyBuffer_Release(&mut *self.0) }
        });
    }
}

impl HeldBytes {
    /// The contiguous bytes of `object`; `None` when it exports a buffer that is not
    /// C-contiguous (or refuses a plain byte view), `TypeError` when it exports none.
    fn get(object: &Bound<'_, PyAny>) -> PyResult<Option<Self>> {
        // SAFETY: a live object; the call only inspects its type.
        if unsafe { ffi::PyObject_CheckBuffer(object.as_ptr()) } != 1 {
            return Err(PyTypeError::new_err(format!(
                "the data of a pickled dlbridge.Tensor must be a bytes-like object (the buffer \
                 protocol), got {}",
                object.get_type().name()?
            )));
        }
        // SAFETY: an all-zero Py_buffer is a valid value to hand to `PyObject_GetBuffer`.
        let mut buffer: Box<ffi::Py_buffer> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: a live object and a Py_buffer to fill: contiguous bytes, read-only allowed.
        if unsafe { ffi::PyObject_GetBuffer(object.as_ptr(), &mut *buffer, ffi::PyBUF_SIMPLE) } != 0
        {
            drop(PyErr::take(object.py()));
            return Ok(None);
        }
        Ok(Some(HeldBytes(buffer)))
    }

    fn address(&self) -> *mut c_void {
        self.0.buf
    }

    fn len(&self) -> usize {
        // A filled buffer's length is never negative.
        usize::try_from(self.0.len).unwrap_or(0)
    }

    fn is_read_only(&self) -> bool {
        self.0.readonly != 0
    }
}

/// The alignment a rebuilt tensor's first element needs to be shared rather than copied: the
/// largest power of two dividing its element size, up to 8 (the widest scalar any dtype is
/// made of); 1 for sub-byte types.
fn required_alignment(dtype: DataType) -> usize {
    match dtype.size_in_bytes() {
        Some(size) => 1 << size.trailing_zeros().min(3),
        None => 1,
    }
}

/// The reconstructor's work: a CPU tensor of `dtype` and `shape` over (or copied from) the
/// bytes of `data`, validated: the arguments must describe exactly the bytes given.
pub(crate) fn rebuild(
    data: &Bound<'_, PyAny>,
    dtype: DataType,
    shape: &[usize],
    read_only: bool,
    subbyte_padded: bool,
) -> PyResult<ManagedTensor> {
    if shape.len() > MAX_NDIM as usize {
        return Err(PyValueError::new_err(format!(
            "a pickled dlbridge.Tensor has at most {MAX_NDIM} dimensions, got {}",
            shape.len()
        )));
    }
    if subbyte_padded && !dtype.is_sub_byte() {
        return Err(PyValueError::new_err(format!(
            "subbyte_padded is set for {dtype}, which is not a sub-byte type"
        )));
    }
    let expected = shape
        .iter()
        .try_fold(1u64, |count, &extent| count.checked_mul(extent as u64))
        .and_then(|elements| dtype.storage_bytes(elements, subbyte_padded))
        .filter(|&bytes| bytes <= isize::MAX as u64)
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "a pickled {dtype} tensor of shape {shape:?} would not fit in memory"
            ))
        })?;
    let held = match HeldBytes::get(data)? {
        Some(held) => held,
        None => {
            // A strided buffer from the transport: its bytes in C order, copied.
            let copy = PyMemoryView::from(data)?.call_method0("tobytes")?;
            HeldBytes::get(&copy)?.ok_or_else(|| {
                PyBufferError::new_err("the bytes of a pickled dlbridge.Tensor cannot be read")
            })?
        }
    };
    if held.len() as u64 != expected {
        return Err(PyValueError::new_err(format!(
            "the data of a pickled {dtype} tensor of shape {shape:?} must hold {expected} \
             bytes, got {}",
            held.len()
        )));
    }
    let shareable = (read_only || !held.is_read_only())
        && held.address() as usize % required_alignment(dtype) == 0;
    let address = held.address();
    // SAFETY: `held` keeps its `expected` contiguous bytes alive at `address` until it is
    // dropped by the tensor's deleter, and the tensor reaches exactly those bytes: a compact
    // row-major layout of `shape` in `dtype` (padded as said) takes `storage_bytes` bytes. The
    // tensor is writable only where the buffer is (`shareable` and not `read_only`); the one
    // made only to be copied is read-only.
    let over_buffer = unsafe { Export::from_raw_parts(held, address, dtype, Device::CPU, shape) }
        .read_only(read_only || !shareable)
        .subbyte_padded(subbyte_padded)
        .into_versioned()
        .map_err(to_py_err)?;
    if shareable {
        return Ok(over_buffer);
    }
    let copy = over_buffer.view().to_compact_copy().map_err(to_py_err)?;
    if !read_only {
        return Ok(copy);
    }
    // A read-only tensor over a misaligned buffer: the aligned copy, flagged read-only.
    let data = copy.view().data_ptr();
    // SAFETY: the copy, moved into the new tensor, owns the compact bytes at `data`.
    unsafe { Export::from_raw_parts(copy, data, dtype, Device::CPU, shape) }
        .read_only(true)
        .is_copied(true)
        .subbyte_padded(subbyte_padded)
        .into_versioned()
        .map_err(to_py_err)
}
