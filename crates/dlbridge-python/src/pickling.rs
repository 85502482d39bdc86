//! Pickling `dlbridge.Tensor` (`__reduce_ex__`) and rebuilding it (the reconstructor,
//! `dlbridge._dlbridge._tensor_from_pickle`, whose arguments are an input boundary: a
//! corrupted or hostile pickle gives a clear error, never a tensor over memory it does not
//! describe). The frames of `dlbridge.distributed` (the module `frames`) are rebuilt here too.
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
//! - Rebuilding a protocol-5 pickle (or a frame) is zero-copy over the buffer handed back
//!   (out-of-band: what the transport gave; in-band: the `bytes` or `bytearray` pickle made)
//!   when that buffer is C-contiguous and aligned for the dtype. The tensor is a view of the
//!   buffer, read-only when the tensor was or when the buffer is (Ray's object store hands out
//!   read-only memory: the tensor is then read-only, as NumPy's arrays are, not a copy). It
//!   copies only a misaligned or strided buffer (flagged IS_COPIED, writable unless the tensor
//!   was read-only). Pickles of protocols 0 to 4 carry `bytes`, which are never written: a
//!   writable tensor is copied out of them and stays writable. `dlbridge.explain` says which
//!   happened and why (its `rebuilt` entry: [`Rebuilt`]).
//! - Tensors whose memory the host cannot read are refused with a `TypeError` naming their
//!   device.

use std::ffi::{c_int, c_void};

use dlbridge::{DataType, Device, Export, MAX_NDIM, ManagedTensor};
use dlbridge_pyo3::{ClassTensor, TensorClass, compact_copy, to_py_err};
use pyo3::PyClass;
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::pyclass::boolean_struct::True;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyMemoryView, PyTuple};

/// The reconstructor's name in `dlbridge._dlbridge`, which pickles refer to.
const RECONSTRUCTOR: &str = "_tensor_from_pickle";

/// The C-contiguous bytes that pickling and frames carry: a `dlbridge.Tensor`'s own tensor
/// (kept alive by the instance, which never replaces it: the class is frozen), or a compact
/// copy of it. Either goes to Python only (a `pickle.PickleBuffer`), never to Rust code.
pub(crate) enum CompactBytes {
    /// The instance, whose tensor is C-contiguous.
    Instance(Box<dyn HeldTensor>),
    /// A compact C-order copy of a strided tensor, dlbridge's own.
    Copy(ClassTensor),
}

impl CompactBytes {
    /// The tensor whose bytes these are: its descriptor, and its bytes for the buffer protocol.
    pub(crate) fn tensor(&self) -> &ClassTensor {
        match self {
            CompactBytes::Instance(instance) => instance.tensor(),
            CompactBytes::Copy(copy) => copy,
        }
    }
}

/// A reference to an instance of a frozen tensor class (`dlbridge.Tensor`), which keeps its
/// tensor, unreplaced, for as long as the reference lives.
pub(crate) trait HeldTensor: Send + Sync {
    /// The instance's tensor.
    fn tensor(&self) -> &ClassTensor;
}

impl<T: TensorClass + PyClass<Frozen = True> + Sync> HeldTensor for Py<T> {
    fn tensor(&self) -> &ClassTensor {
        self.get().tensor()
    }
}

/// The bytes of a C-contiguous tensor as a buffer (format "B"), read-only as the tensor is:
/// what `pickle.PickleBuffer` wraps. Not a class of the module: made only here.
#[pyclass(module = "dlbridge", name = "_TensorBytes", frozen)]
struct TensorBytes {
    bytes: CompactBytes,
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
        // getbuffer), and `slf` holds the tensor (the instance, or the copy), which keeps its
        // memory alive.
        unsafe {
            this.bytes
                .tensor()
                .get_byte_buffer(this.read_only, slf.as_any(), view, flags)
        }
    }

    unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
        // SAFETY: CPython releases each buffer that `__getbuffer__` filled once, here.
        unsafe { dlbridge_pyo3::produce::release_buffer(view) }
    }
}

/// `Tensor.__reduce_ex__(protocol)`: `(reconstructor, (data, dtype, shape, read_only,
/// subbyte_padded, view_read_only_buffers))`, `data` a `PickleBuffer` from protocol 5 on
/// (`view_read_only_buffers` True: a read-only buffer is shared read-only), `bytes` before
/// (False: copied out of the `bytes` when the tensor was writable).
pub(crate) fn reduce<'py, T: TensorClass + PyClass<Frozen = True> + Sync>(
    instance: &Bound<'py, T>,
    protocol: i64,
) -> PyResult<Bound<'py, PyTuple>> {
    let py = instance.py();
    let tensor = instance.get().tensor();
    let read_only = tensor.is_read_only();
    let padded = tensor.flags().is_subbyte_type_padded();
    let source = compact_host_bytes(instance, "pickle")?;
    let data = if protocol >= 5 {
        pickle_buffer(py, source, read_only)?
    } else {
        // `bytes(buffer)`: one copy, made by CPython from the buffer.
        let bytes = Py::new(
            py,
            TensorBytes {
                bytes: source,
                read_only,
            },
        )?;
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
        tensor.dtype().to_string(),
        PyTuple::new(py, tensor.shape())?,
        read_only,
        padded,
        protocol >= 5,
    );
    PyTuple::new(
        py,
        [rebuild.bind(py).clone(), args.into_pyobject(py)?.into_any()],
    )
}

/// The instance's own tensor when it is C-contiguous, else a compact C-order copy of it: the
/// bytes that pickling (`action` "pickle") and frames ("send") carry. A tensor the host cannot
/// read is refused with a `TypeError` naming its device, and a strided sub-byte tensor (whose
/// elements share bytes) with a `BufferError`. The copy is made under a read claim
/// (`ValueError` while a kernel's `TensorArgMut` writes the memory).
pub(crate) fn compact_host_bytes<T: TensorClass + PyClass<Frozen = True> + Sync>(
    instance: &Bound<'_, T>,
    action: &str,
) -> PyResult<CompactBytes> {
    let tensor = instance.get().tensor();
    let device = tensor.device();
    if !device.is_host_readable() {
        return Err(PyTypeError::new_err(format!(
            "cannot {action} a dlbridge.Tensor on {device}: this needs memory the host can \
             read; copy the tensor to the CPU first"
        )));
    }
    if tensor.is_c_contiguous() {
        Ok(CompactBytes::Instance(Box::new(instance.clone().unbind())))
    } else if tensor.dtype().is_sub_byte() {
        // Sub-byte elements are copied as whole bytes (`to_compact_copy`), so only compact.
        Err(PyBufferError::new_err(format!(
            "cannot {action} a strided {} tensor: sub-byte elements travel C-contiguous only, \
             and its strides are {:?}",
            tensor.dtype(),
            tensor.strides()
        )))
    } else {
        let copy = tensor.compact_copy(
            instance.py(),
            &format!("cannot {action} this strided dlbridge.Tensor (a copy is made first)"),
        )?;
        Ok(CompactBytes::Copy(ClassTensor::new(copy)))
    }
}

/// A `pickle.PickleBuffer` over the bytes of a C-contiguous host tensor (read-only as
/// `read_only` says): what protocol 5 and frames carry out-of-band.
pub(crate) fn pickle_buffer<'py>(
    py: Python<'py>,
    compact: CompactBytes,
    read_only: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes = Py::new(
        py,
        TensorBytes {
            bytes: compact,
            read_only,
        },
    )?;
    static PICKLE_BUFFER: PyOnceLock<Py<pyo3::types::PyType>> = PyOnceLock::new();
    PICKLE_BUFFER
        .import(py, "pickle", "PickleBuffer")?
        .call1((bytes,))
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
        // The last tensor over the buffer may be dropped after the interpreter is finalized
        // (a transport's thread: Ray's frees its objects at exit): the export is then left as
        // it is, as nothing may be released any more, rather than attaching (which panics).
        let _released = Python::try_attach(|_py| {
            // SAFETY: filled by a successful `PyObject_GetBuffer`, released once, here, attached.
            unsafe { ffi::PyBuffer_Release(&mut *self.0) }
        });
    }
}

impl HeldBytes {
    /// The contiguous bytes of `object`; `None` when it exports a buffer that is not
    /// C-contiguous (or refuses a plain byte view), `TypeError` when it exports none.
    fn get(object: &Bound<'_, PyAny>, what: &str) -> PyResult<Option<Self>> {
        // SAFETY: a live object; the call only inspects its type.
        if unsafe { ffi::PyObject_CheckBuffer(object.as_ptr()) } != 1 {
            return Err(PyTypeError::new_err(format!(
                "the data of {what} must be a bytes-like object (the buffer protocol), got {}",
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

/// How a tensor was rebuilt from a pickle or a frame: `dlbridge.explain`'s `rebuilt` entry.
#[derive(Clone, Debug)]
pub(crate) struct Rebuilt {
    /// `"pickle"` or `"frame"`.
    pub(crate) from: &'static str,
    /// Whether the tensor is a view of the buffer it was rebuilt from (else a copy of it).
    pub(crate) shared: bool,
    /// Why it is shared or copied, read-only or writable, in words.
    pub(crate) reason: String,
}

/// The reconstructor's work: a CPU tensor of `dtype` and `shape` over (or copied from) the
/// bytes of `data`, validated: the arguments must describe exactly the bytes given.
/// `view_read_only_buffers`: a read-only buffer is shared read-only (protocol 5, frames); else
/// a writable tensor is copied out of it (the `bytes` of protocols 0 to 4). `from` names the
/// source for [`Rebuilt`] and the messages: `"pickle"` or `"frame"`.
pub(crate) fn rebuild(
    data: &Bound<'_, PyAny>,
    dtype: DataType,
    shape: &[usize],
    read_only: bool,
    subbyte_padded: bool,
    view_read_only_buffers: bool,
    from: &'static str,
) -> PyResult<(ManagedTensor, Rebuilt)> {
    let what = if from == "frame" {
        "a dlbridge frame"
    } else {
        "a pickled dlbridge.Tensor"
    };
    if shape.len() > MAX_NDIM as usize {
        return Err(PyValueError::new_err(format!(
            "{what} has at most {MAX_NDIM} dimensions, got {}",
            shape.len()
        )));
    }
    if subbyte_padded && !dtype.is_sub_byte() {
        return Err(PyValueError::new_err(format!(
            "subbyte_padded is set for {dtype}, which is not a sub-byte type"
        )));
    }
    let expected = storage_bytes(dtype, shape, subbyte_padded).ok_or_else(|| {
        PyValueError::new_err(format!(
            "{what}: a {dtype} tensor of shape {shape:?} would not fit in memory"
        ))
    })?;
    let (held, strided) = match HeldBytes::get(data, what)? {
        Some(held) => (held, false),
        None => {
            // A strided buffer from the transport: its bytes in C order, copied.
            let copy = PyMemoryView::from(data)?.call_method0("tobytes")?;
            let held = HeldBytes::get(&copy, what)?.ok_or_else(|| {
                PyBufferError::new_err(format!("the bytes of {what} cannot be read"))
            })?;
            (held, true)
        }
    };
    if held.len() as u64 != expected {
        return Err(PyValueError::new_err(format!(
            "the data of {what} of {dtype} and shape {shape:?} must hold {expected} bytes, \
             got {}",
            held.len()
        )));
    }
    let alignment = required_alignment(dtype);
    let aligned = held.address() as usize % alignment == 0;
    let buffer_read_only = held.is_read_only();
    // Why the buffer cannot be shared, if it cannot.
    let copy_reason = if strided {
        Some("the buffer is not C-contiguous".to_string())
    } else if !aligned {
        Some(format!(
            "the buffer's address {:#x} is not aligned for {dtype} ({alignment} bytes)",
            held.address() as usize
        ))
    } else if buffer_read_only && !read_only && !view_read_only_buffers {
        Some(
            "the buffer is read-only bytes (pickle protocol 0 to 4) and the tensor was \
             writable"
                .to_string(),
        )
    } else {
        None
    };
    let shareable = copy_reason.is_none();
    let view_read_only = read_only || buffer_read_only || !shareable;
    let address = held.address();
    // SAFETY: `held` keeps its `expected` contiguous bytes alive at `address` until it is
    // dropped by the tensor's deleter, and the tensor reaches exactly those bytes: a compact
    // row-major layout of `shape` in `dtype` (padded as said) takes `storage_bytes` bytes. The
    // tensor is writable only where the buffer is (`buffer_read_only` makes it read-only);
    // the one made only to be copied is read-only.
    let over_buffer = unsafe { Export::from_raw_parts(held, address, dtype, Device::CPU, shape) }
        .read_only(view_read_only)
        .subbyte_padded(subbyte_padded)
        .into_versioned()
        .map_err(to_py_err)?;
    if let Some(why) = copy_reason {
        let reason = format!("cannot rebuild {what} (copied out of its buffer)");
        let copied = copy_of(
            data.py(),
            &reason,
            &over_buffer,
            dtype,
            shape,
            read_only,
            subbyte_padded,
        )?;
        let writability = if read_only {
            "read-only: the tensor was read-only when sent"
        } else {
            "writable: the copy is dlbridge's own"
        };
        let rebuilt = Rebuilt {
            from,
            shared: false,
            reason: format!("copied: {why}; {writability}"),
        };
        return Ok((copied, rebuilt));
    }
    let writability = match (read_only, buffer_read_only) {
        (true, _) => "read-only: the tensor was read-only when sent",
        (false, true) => {
            "read-only: the buffer is read-only (a transport's memory that no one may write, \
             such as Ray's object store); copy it to write"
        }
        (false, false) => "writable: the buffer is writable",
    };
    let rebuilt = Rebuilt {
        from,
        shared: true,
        reason: format!("shared: a view of the {from}'s buffer (zero-copy); {writability}"),
    };
    Ok((over_buffer, rebuilt))
}

/// The bytes a compact tensor of `dtype` and `shape` takes (padded as said), if they fit in
/// memory.
pub(crate) fn storage_bytes(dtype: DataType, shape: &[usize], subbyte_padded: bool) -> Option<u64> {
    shape
        .iter()
        .try_fold(1u64, |count, &extent| count.checked_mul(extent as u64))
        .and_then(|elements| dtype.storage_bytes(elements, subbyte_padded))
        .filter(|&bytes| bytes <= isize::MAX as u64)
}

/// An aligned copy of `over_buffer` in dlbridge's memory, flagged IS_COPIED, and read-only
/// when `read_only`; made under a read claim, as the buffer is Python's (`ValueError`, after
/// `reason`, while a kernel's `TensorArgMut` writes it).
fn copy_of(
    py: Python<'_>,
    reason: &str,
    over_buffer: &ManagedTensor,
    dtype: DataType,
    shape: &[usize],
    read_only: bool,
    subbyte_padded: bool,
) -> PyResult<ManagedTensor> {
    let copy = compact_copy(py, &over_buffer.view(), reason)?;
    if !read_only {
        return Ok(copy);
    }
    let data = copy.view().data_ptr();
    // SAFETY: the copy, moved into the new tensor, owns the compact bytes at `data`.
    unsafe { Export::from_raw_parts(copy, data, dtype, Device::CPU, shape) }
        .read_only(true)
        .is_copied(true)
        .subbyte_padded(subbyte_padded)
        .into_versioned()
        .map_err(to_py_err)
}
