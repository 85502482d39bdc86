//! The producer half of the Python protocol, `__dlpack__` and `__dlpack_device__`, for a PyO3
//! tensor class: the export rules in one function ([`export_capsule`]), and the two methods
//! published on a class by [`publish_dlpack_methods`].
//!
//! The published `__dlpack__` is a hand-written `METH_FASTCALL | METH_KEYWORDS` method rather
//! than a `#[pymethods]` one: consumers such as `numpy.from_dlpack` call it with three
//! keywords on every exchange, and matching them by identity with the interned names
//! (falling back to comparing the text) takes a few nanoseconds where a generic argument
//! parser takes tens.

use std::ffi::{CStr, c_char, c_int};
use std::sync::Arc;

use dlbridge::{Device, DeviceType, ManagedTensor, RawManagedTensor};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCapsule, PyString, PyTuple};

use super::class::{TensorClass, instance, once_per_class};
use crate::capsule::wrap_in_capsule;
use crate::claims::Claim;
use crate::device::device_argument;
use crate::errors::{repr_of, to_py_err};
use crate::streams::consumer::{ConsumerStream, has_streams, standard_default_stream};
use crate::streams::order::{copy_to_host, order_for_consumer};
use crate::trampoline;
use crate::writability_hook::share_for_python;

/// What a consumer asked `__dlpack__` for (the array API's four keywords).
///
/// ```
/// use std::sync::Arc;
///
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::{produce::{export_capsule, ExportRequest}, capsule::from_capsule};
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     let tensor = Export::new(vec![1u8, 2, 3], &[3]).into_versioned().map_err(to_py_err)?;
///     let tensor = Arc::new(tensor);
///     // `__dlpack__(max_version=(1, 3), copy=True)`
///     let request = ExportRequest::default()
///         .with_max_version(Some((1, 3)))
///         .with_copy(Some(true));
///     let copy = from_capsule(export_capsule(py, &tensor, &request)?.as_any())?;
///     assert!(copy.view().flags().is_copied());
///     assert_ne!(copy.view().data_ptr(), tensor.view().data_ptr());
///     Ok(())
/// })
/// # .unwrap();
/// ```
#[derive(Clone, Copy, Default)]
#[non_exhaustive]
pub struct ExportRequest<'a, 'py> {
    /// `stream`: must be None for host memory; device tensors ignore it (Rust-owned tensors
    /// have no work pending on any stream).
    pub stream: Option<Borrowed<'a, 'py, PyAny>>,
    /// `max_version`: `None` asks for a legacy `dltensor` capsule, `(major, minor)` with
    /// `major >= 1` for a `dltensor_versioned` one.
    pub max_version: Option<(i64, i64)>,
    /// `dl_device`: the device the consumer wants the tensor on.
    pub dl_device: Option<Device>,
    /// `copy`: `Some(true)` always copies, `Some(false)` never does, `None` copies only when
    /// the device asks for it.
    pub copy: Option<bool>,
}

impl<'a, 'py> ExportRequest<'a, 'py> {
    /// This request with [`stream`](Self::stream) set.
    #[inline]
    pub fn with_stream(mut self, stream: Option<Borrowed<'a, 'py, PyAny>>) -> Self {
        self.stream = stream;
        self
    }

    /// This request with [`max_version`](Self::max_version) set.
    #[inline]
    pub fn with_max_version(mut self, max_version: Option<(i64, i64)>) -> Self {
        self.max_version = max_version;
        self
    }

    /// This request with [`dl_device`](Self::dl_device) set.
    #[inline]
    pub fn with_dl_device(mut self, dl_device: Option<Device>) -> Self {
        self.dl_device = dl_device;
        self
    }

    /// This request with [`copy`](Self::copy) set.
    #[inline]
    pub fn with_copy(mut self, copy: Option<bool>) -> Self {
        self.copy = copy;
        self
    }
}

/// Exports `tensor` as a DLPack capsule by the rules of `__dlpack__`:
///
/// - a non-None `stream` for a tensor in host memory is a `ValueError`;
/// - a versioned capsule when `max_version` has major `>= 1`, a legacy one otherwise
///   (read-only tensors cannot be exported legacy: `BufferError`);
/// - `dl_device` equal to the tensor's device shares it; the CPU, for a tensor in
///   host-readable memory, means a host copy (flagged IS_COPIED); any other device is a
///   `BufferError`, as is `copy=False` when a copy is needed;
/// - `copy=True` gives a compact host copy flagged IS_COPIED; otherwise the capsule shares
///   the memory (one allocation, keeping `tensor` alive), flagged READ_ONLY where `tensor` is
///   read-only or other Rust handles read its memory (it is a share of a tensor Rust still
///   holds, or shares of it are alive in Rust: [`ManagedTensor::is_share`],
///   [`ManagedTensor::live_shares`]), and then refused in a legacy capsule, which cannot say
///   so (`BufferError`);
/// - a copy (either kind) holds a read claim on the tensor's memory in the aliasing registry
///   of typed arguments while it is made: while a writable argument (`TensorArgMut`) of a
///   call in progress, on any thread, reaches that memory, the copy is refused with
///   `ValueError` rather than made while the memory is written.
///
/// ```
/// use std::sync::Arc;
///
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::capsule::{from_capsule, DLTENSOR};
/// use dlbridge_pyo3::produce::{export_capsule, ExportRequest};
/// use pyo3::exceptions::PyValueError;
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     let tensor = Arc::new(ManagedTensor::zeros(DataType::FLOAT32, &[2, 2]).map_err(to_py_err)?);
///     // `__dlpack__()`: a legacy capsule.
///     let legacy = export_capsule(py, &tensor, &ExportRequest::default())?;
///     assert!(legacy.is_valid_checked(Some(DLTENSOR)));
///     // `__dlpack__(max_version=(1, 3))`: a versioned one, sharing the memory.
///     let versioned = ExportRequest::default().with_max_version(Some((1, 3)));
///     let shared = from_capsule(export_capsule(py, &tensor, &versioned)?.as_any())?;
///     assert_eq!(shared.view().data_ptr(), tensor.view().data_ptr());
///     // A stream for a tensor in host memory is refused.
///     let stream = 1i64.into_pyobject(py)?.into_any();
///     let on_stream = versioned.with_stream(Some(stream.as_borrowed()));
///     let error = export_capsule(py, &tensor, &on_stream).unwrap_err();
///     assert!(error.is_instance_of::<PyValueError>(py));
///     Ok(())
/// })
/// # .unwrap();
/// ```
#[inline]
pub fn export_capsule<'py>(
    py: Python<'py>,
    tensor: &Arc<ManagedTensor>,
    request: &ExportRequest<'_, 'py>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let view = tensor.view();
    let device = view.device();
    let consumer_stream = consumer_stream(request, device)?;
    let versioned = request.max_version.is_some_and(|(major, _)| major >= 1);
    // A different device is reachable only as a host copy: of host-readable memory, or of
    // CUDA memory through the driver.
    let needs_copy = match request.dl_device {
        Some(target) if target == device => false,
        Some(target) if target == Device::CPU && device.is_host_readable() => true,
        Some(target) if target == Device::CPU && device.device_type == DeviceType::CUDA => true,
        Some(target) => {
            return Err(PyBufferError::new_err(format!(
                "dl_device={target} cannot be reached from a tensor on {device}: dlbridge \
                 shares a tensor on its own device and copies host-readable and CUDA memory \
                 to the CPU"
            )));
        }
        None => false,
    };
    if needs_copy && request.copy == Some(false) {
        return Err(PyBufferError::new_err(format!(
            "copy=False, but exporting a tensor on {device} to CPU needs a copy"
        )));
    }
    if request.copy == Some(true) && !needs_copy && !device.is_host_readable() {
        return Err(PyBufferError::new_err(format!(
            "copy=True for a tensor on {device}: dlbridge makes no copies on a device; ask \
             for a host copy with dl_device=(1, 0)"
        )));
    }
    let exported = if needs_copy || request.copy == Some(true) {
        // The copy reads memory that typed arguments may reach (this tensor's, shared with
        // Python): held until it is made, a read claim keeps a `TensorArgMut` from writing it
        // meanwhile, and is refused (`ValueError`) while one does.
        let reason = match request.copy {
            Some(true) => "copy=True",
            _ => "dl_device=(1, 0)",
        };
        let _reading = Claim::for_copy(py, &view, reason)?;
        let copy = if device.is_host_readable() {
            view.to_compact_copy().map_err(to_py_err)?
        } else {
            copy_to_host(tensor)?
        };
        if versioned {
            copy.into_raw()
        } else {
            let raw = Arc::new(copy).share_legacy_into_raw().map_err(to_py_err)?;
            RawManagedTensor::Legacy(raw)
        }
    } else {
        if let Some(consumer) = consumer_stream {
            order_for_consumer(tensor, device, consumer)?;
        }
        // Flagged READ_ONLY where other Rust handles read the memory (legacy refused).
        share_for_python(tensor, !versioned)?
    };
    wrap_in_capsule(py, exported)
}

/// The consumer's stream of `request` for a tensor on `device`, as a handle that work must be
/// ordered before (`None`: nothing to order). `stream` must be None for a device without
/// streams and for a copy to the CPU (which is complete when `__dlpack__` returns), a Python
/// int otherwise; None means the standard's default stream (CUDA's legacy stream, ROCm's
/// default), -1 no synchronisation. Wrong values are `ValueError`s, never `TypeError`s, which
/// consumers read as "an old producer without keywords".
fn consumer_stream(request: &ExportRequest<'_, '_>, device: Device) -> PyResult<Option<usize>> {
    let stream = request.stream.filter(|stream| !stream.is_none());
    let to_cpu = request.dl_device == Some(Device::CPU) && device != Device::CPU;
    let Some(stream) = stream else {
        return Ok((has_streams(device) && !to_cpu).then(|| standard_default_stream(device)));
    };
    if !has_streams(device) {
        return Err(PyValueError::new_err(format!(
            "stream must be None for a tensor on {device} (a device without streams), got {}",
            repr_of(&stream)
        )));
    }
    if to_cpu {
        return Err(PyValueError::new_err(format!(
            "stream must be None with dl_device=(1, 0): the copy to the CPU is complete when \
             __dlpack__ returns; got {}",
            repr_of(&stream)
        )));
    }
    let value = stream.extract::<i64>().map_err(|_| {
        PyValueError::new_err(format!(
            "stream must be None or an int (-1, or a stream handle), got {}",
            repr_of(&stream)
        ))
    })?;
    // SAFETY: by the DLPack protocol (the array API standard's `__dlpack__(stream=...)`), the
    // consumer's stream integer is a live stream of the tensor's device that the consumer owns
    // for the call; Python code can pass any int, which no library can check (PyTorch's own
    // `__dlpack__` trusts it the same way). The handle is used only during this call (the
    // consumer's stream is made to wait on the ready stream) and never recorded.
    let choice = unsafe { ConsumerStream::from_dlpack_value(value) }?;
    Ok(match choice.validate(device)? {
        ConsumerStream::Handle(handle) => Some(handle.get()),
        _ => None,
    })
}

/// Publishes `__dlpack__` and `__dlpack_device__` on `T`'s type, exporting
/// [`TensorClass::tensor`] with [`export_capsule`]. With [`crate::produce::publish_exchange_api`]
/// (or both at once, [`crate::publish_dlpack`]) a class of one's own is a complete DLPack
/// producer.
///
/// `__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)` takes keywords
/// only; a positional argument or an unknown keyword is a `TypeError`, a malformed
/// `max_version` or `dl_device` a `ValueError`, and a `copy` that is not None or a bool a
/// `TypeError`. Methods of the same names defined in `#[pymethods]` are replaced.
///
/// Here on `Image`, the class of [`TensorClass`](crate::TensorClass)'s example, without the
/// exchange table:
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::{exchange::exchange_api, produce::publish_dlpack_methods};
/// use pyo3::prelude::*;
/// use pyo3::types::IntoPyDict;
/// # #[pyclass(frozen)]
/// # struct Image {
/// #     pixels: ClassTensor,
/// # }
/// # impl TensorClass for Image {
/// #     fn tensor(&self) -> &ClassTensor {
/// #         &self.pixels
/// #     }
/// #     fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
/// #         Py::new(py, Image { pixels: ClassTensor::new(tensor) })
/// #     }
/// # }
/// # fn image<'py>(
/// #     py: Python<'py>, pixels: Vec<u8>, shape: &[usize],
/// # ) -> PyResult<Bound<'py, Image>> {
/// #     let tensor = Export::new(pixels, shape).into_versioned().map_err(to_py_err)?;
/// #     Ok(Image::new_instance(py, tensor)?.into_bound(py))
/// # }
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     publish_dlpack_methods::<Image>(py)?;
///     let image = image(py, vec![1, 2, 3], &[3])?;
///     assert!(exchange_api(&image)?.is_none());
///     let locals = [("image", &image)].into_py_dict(py)?;
///     py.run(c"
/// assert image.__dlpack_device__() == (1, 0)
/// assert 'dltensor_versioned' in repr(image.__dlpack__(max_version=(1, 3)))
/// assert 'dltensor' in repr(image.__dlpack__())
/// ", None, Some(&locals))?;
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub fn publish_dlpack_methods<T: TensorClass>(py: Python<'_>) -> PyResult<()> {
    let class = py.get_type::<T>();
    let definitions = once_per_class::<T, _>(|| {
        [
            method_def(
                c"__dlpack__",
                dlpack_method_pointer::<T>(),
                DLPACK_METHOD_FLAGS,
                c"__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n\
                  Exports the tensor as a DLPack capsule: versioned when max_version's major is at \
                  least 1, legacy otherwise.",
            ),
            method_def(
                c"__dlpack_device__",
                ffi::PyMethodDefPointer {
                    PyCFunction: dlpack_device_method::<T>,
                },
                ffi::METH_NOARGS,
                c"__dlpack_device__($self, /)\n--\n\nThe (device_type, device_id) of the tensor's memory.",
            ),
        ]
    });
    keywords(py);
    for index in 0..2 {
        // SAFETY: `definitions` points to the class's two method definitions, kept for the
        // process (`once_per_class`); `index` is 0 or 1.
        let definition = unsafe { definitions.cast::<ffi::PyMethodDef>().add(index) };
        // SAFETY: the type object is live, and the method definition lives for the process:
        // descriptors keep a pointer to it for as long as they live.
        let descriptor = unsafe { ffi::PyDescr_NewMethod(class.as_type_ptr(), definition) };
        if descriptor.is_null() {
            return Err(PyErr::fetch(py));
        }
        // SAFETY: a new reference to the descriptor.
        let descriptor = unsafe { Bound::from_owned_ptr(py, descriptor) };
        // SAFETY: the name is a static C string.
        let name = unsafe { CStr::from_ptr((*definition).ml_name) };
        class.setattr(name.to_str().expect("ASCII method names"), descriptor)?;
    }
    Ok(())
}

/// A method definition for a static name and documentation.
fn method_def(
    name: &'static CStr,
    method: ffi::PyMethodDefPointer,
    flags: c_int,
    doc: &'static CStr,
) -> ffi::PyMethodDef {
    ffi::PyMethodDef {
        ml_name: name.as_ptr(),
        ml_meth: method,
        ml_flags: flags,
        ml_doc: doc.as_ptr() as *const c_char,
    }
}

/// The four keywords of `__dlpack__`, in [`Keyword`] order.
const KEYWORD_NAMES: [&CStr; 4] = [c"stream", c"max_version", c"dl_device", c"copy"];

/// A keyword of `__dlpack__`, by its position in [`KEYWORD_NAMES`].
type Keyword = usize;

/// The interned keyword strings: callers compiled from Python source, and C callers such as
/// NumPy that intern their keyword names, pass these very objects.
fn keywords(py: Python<'_>) -> &'static [usize; 4] {
    // A `PyOnceLock`: a thread waiting for another's initialization (which calls into
    // Python) detaches, as free-threaded Python needs of a blocked thread.
    static INTERNED: PyOnceLock<[usize; 4]> = PyOnceLock::new();
    INTERNED.get_or_init(py, || {
        KEYWORD_NAMES.map(|name| {
            // SAFETY: a static C string; the interned string is kept for the process (the
            // reference is never released), so its address stays valid to compare with.
            let interned = unsafe { ffi::PyUnicode_InternFromString(name.as_ptr()) };
            if interned.is_null() {
                // Out of memory at start-up: no fast match, the text comparison still works.
                drop(PyErr::take(py));
            }
            interned as usize
        })
    })
}

/// Which keyword `name` is: by identity with the interned names first, then by text.
fn keyword(py: Python<'_>, name: Borrowed<'_, '_, PyAny>) -> PyResult<Keyword> {
    let address = name.as_ptr() as usize;
    if let Some(found) = keywords(py).iter().position(|&k| k == address) {
        return Ok(found);
    }
    let name = name.cast::<PyString>()?;
    let text = name.to_cow()?;
    KEYWORD_NAMES
        .iter()
        .position(|k| k.to_bytes() == text.as_bytes())
        .ok_or_else(|| {
            PyTypeError::new_err(format!(
                "__dlpack__() got an unexpected keyword argument '{text}'"
            ))
        })
}

/// Reads the arguments of a vectorcall to `__dlpack__`.
///
/// # Safety
///
/// `args` holds `nargs` positional arguments followed by one value per name in `kwnames`
/// (NULL or a tuple of strings), all borrowed for `'a`, as CPython's `METH_FASTCALL |
/// METH_KEYWORDS` convention passes them.
#[inline(always)]
#[cfg(any(Py_3_10, not(Py_LIMITED_API)))]
unsafe fn parse_request<'a, 'py>(
    py: Python<'py>,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> PyResult<ExportRequest<'a, 'py>> {
    if nargs != 0 {
        return Err(PyTypeError::new_err(format!(
            "__dlpack__() takes no positional arguments ({nargs} given); its arguments are \
             keyword-only"
        )));
    }
    let mut request = ExportRequest::default();
    if kwnames.is_null() {
        return Ok(request);
    }
    // SAFETY: a tuple of keyword names, by the contract.
    let names = unsafe { Borrowed::from_ptr(py, kwnames).cast_unchecked::<PyTuple>() };
    for (index, name) in names.iter_borrowed().enumerate() {
        // SAFETY: the value of the `index`-th keyword (after the positional arguments, of
        // which there are none), borrowed like the names.
        let value = unsafe { Borrowed::from_ptr(py, *args.add(index)) };
        if value.is_none() {
            // Every keyword defaults to None, but the name must still be a known one.
            keyword(py, name)?;
            continue;
        }
        match keyword(py, name)? {
            0 => request.stream = Some(value),
            1 => request.max_version = Some(max_version(value)?),
            2 => request.dl_device = Some(device_argument("dl_device", &value)?),
            _ => request.copy = Some(copy_flag(value)?),
        }
    }
    Ok(request)
}

/// Reads one keyword argument of `__dlpack__` into `request`, as [`parse_request`]'s loop
/// does (which keeps its own copy, the vectorcall path being the measured one).
#[cfg(all(Py_LIMITED_API, not(Py_3_10)))]
fn apply_keyword<'a, 'py>(
    py: Python<'py>,
    request: &mut ExportRequest<'a, 'py>,
    name: Borrowed<'_, 'py, PyAny>,
    value: Borrowed<'a, 'py, PyAny>,
) -> PyResult<()> {
    if value.is_none() {
        // Every keyword defaults to None, but the name must still be a known one.
        keyword(py, name)?;
        return Ok(());
    }
    match keyword(py, name)? {
        0 => request.stream = Some(value),
        1 => request.max_version = Some(max_version(value)?),
        2 => request.dl_device = Some(device_argument("dl_device", &value)?),
        _ => request.copy = Some(copy_flag(value)?),
    }
    Ok(())
}

/// Reads the arguments of a `METH_VARARGS | METH_KEYWORDS` call to `__dlpack__` (the limited
/// API before Python 3.10 has no `METH_FASTCALL`): the same checks, in the same order (a
/// keyword dictionary keeps the order of the call), with the same errors as
/// [`parse_request`].
///
/// # Safety
///
/// `args` is a tuple and `kwargs` NULL or a dictionary with string keys, both borrowed for
/// `'a`, as CPython's `METH_VARARGS | METH_KEYWORDS` convention passes them.
#[cfg(all(Py_LIMITED_API, not(Py_3_10)))]
unsafe fn parse_request_from_tuple<'a, 'py>(
    py: Python<'py>,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
) -> PyResult<ExportRequest<'a, 'py>> {
    // SAFETY: a tuple, by the contract.
    let nargs = unsafe { ffi::PyTuple_Size(args) };
    if nargs != 0 {
        return Err(PyTypeError::new_err(format!(
            "__dlpack__() takes no positional arguments ({nargs} given); its arguments are \
             keyword-only"
        )));
    }
    let mut request = ExportRequest::default();
    if kwargs.is_null() {
        return Ok(request);
    }
    let mut position: ffi::Py_ssize_t = 0;
    let mut name: *mut ffi::PyObject = std::ptr::null_mut();
    let mut value: *mut ffi::PyObject = std::ptr::null_mut();
    // SAFETY: a dictionary, by the contract, not changed while it is iterated (nothing here
    // runs code that could reach it); its keys and values are borrowed for `'a`.
    while unsafe { ffi::PyDict_Next(kwargs, &mut position, &mut name, &mut value) } != 0 {
        // SAFETY: live entries of the dictionary, borrowed as it is.
        let (name, value) =
            unsafe { (Borrowed::from_ptr(py, name), Borrowed::from_ptr(py, value)) };
        apply_keyword(py, &mut request, name, value)?;
    }
    Ok(request)
}

/// `max_version`: a `(major, minor)` tuple of ints.
fn max_version(value: Borrowed<'_, '_, PyAny>) -> PyResult<(i64, i64)> {
    let read = || -> Option<(i64, i64)> {
        let pair = value.cast::<PyTuple>().ok()?;
        if pair.len() != 2 {
            return None;
        }
        let major = pair.get_borrowed_item(0).ok()?.extract().ok()?;
        let minor = pair.get_borrowed_item(1).ok()?.extract().ok()?;
        Some((major, minor))
    };
    read().ok_or_else(|| {
        PyValueError::new_err(format!(
            "max_version must be None or a (major, minor) tuple of ints, got {}",
            repr_of(&value)
        ))
    })
}

/// `copy`: a bool (Python's, or anything PyO3 reads as one, such as NumPy's).
fn copy_flag(value: Borrowed<'_, '_, PyAny>) -> PyResult<bool> {
    value.extract::<bool>().map_err(|_| {
        PyTypeError::new_err(format!(
            "copy must be None or a bool, got {}",
            repr_of(&value)
        ))
    })
}

/// `__dlpack__` of `T`, a `METH_FASTCALL | METH_KEYWORDS` method.
///
/// # Safety
///
/// CPython's calling convention: `object` is an instance of `T` (the descriptor checks it),
/// `args` holds `nargs` positional values and one per name in `kwnames`, the thread is
/// attached.
#[cfg(any(Py_3_10, not(Py_LIMITED_API)))]
unsafe extern "C" fn dlpack_method<T: TensorClass>(
    object: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    let body = |py: Python<'_>| -> PyResult<*mut ffi::PyObject> {
        // SAFETY: CPython passes the instance and the arguments by the vectorcall convention.
        let (instance, request) = unsafe {
            (
                instance::<T>(py, object, "self")?,
                parse_request(py, args, nargs, kwnames)?,
            )
        };
        let borrowed = instance.try_borrow()?;
        Ok(export_capsule(py, borrowed.tensor().shared(), &request)?.into_ptr())
    };
    // SAFETY: CPython calls methods with the thread attached.
    unsafe { trampoline::attached("__dlpack__", body) }
}

/// `__dlpack__` of `T`, a `METH_VARARGS | METH_KEYWORDS` method: the limited API (abi3)
/// before Python 3.10 has no `METH_FASTCALL`.
///
/// # Safety
///
/// CPython's calling convention: `object` is an instance of `T` (the descriptor checks it),
/// `args` a tuple of positional values, `kwargs` NULL or a dictionary of keyword values, the
/// thread is attached.
#[cfg(all(Py_LIMITED_API, not(Py_3_10)))]
unsafe extern "C" fn dlpack_method_from_tuple<T: TensorClass>(
    object: *mut ffi::PyObject,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    let body = |py: Python<'_>| -> PyResult<*mut ffi::PyObject> {
        // SAFETY: CPython passes the instance and the arguments by the tuple-and-dictionary
        // convention.
        let (instance, request) = unsafe {
            (
                instance::<T>(py, object, "self")?,
                parse_request_from_tuple(py, args, kwargs)?,
            )
        };
        let borrowed = instance.try_borrow()?;
        Ok(export_capsule(py, borrowed.tensor().shared(), &request)?.into_ptr())
    };
    // SAFETY: CPython calls methods with the thread attached.
    unsafe { trampoline::attached("__dlpack__", body) }
}

/// The calling convention of `__dlpack__`: vectorcall wherever the API has it.
#[cfg(any(Py_3_10, not(Py_LIMITED_API)))]
const DLPACK_METHOD_FLAGS: c_int = ffi::METH_FASTCALL | ffi::METH_KEYWORDS;
/// The calling convention of `__dlpack__`: an argument tuple and a keyword dictionary in the
/// limited API before Python 3.10.
#[cfg(all(Py_LIMITED_API, not(Py_3_10)))]
const DLPACK_METHOD_FLAGS: c_int = ffi::METH_VARARGS | ffi::METH_KEYWORDS;

/// The C function of `T`'s `__dlpack__`, for [`DLPACK_METHOD_FLAGS`].
#[cfg(any(Py_3_10, not(Py_LIMITED_API)))]
fn dlpack_method_pointer<T: TensorClass>() -> ffi::PyMethodDefPointer {
    ffi::PyMethodDefPointer {
        PyCFunctionFastWithKeywords: dlpack_method::<T>,
    }
}
/// The C function of `T`'s `__dlpack__`, for [`DLPACK_METHOD_FLAGS`].
#[cfg(all(Py_LIMITED_API, not(Py_3_10)))]
fn dlpack_method_pointer<T: TensorClass>() -> ffi::PyMethodDefPointer {
    ffi::PyMethodDefPointer {
        PyCFunctionWithKeywords: dlpack_method_from_tuple::<T>,
    }
}

/// `__dlpack_device__` of `T`, a `METH_NOARGS` method.
///
/// # Safety
///
/// CPython's calling convention: `object` is an instance of `T` (the descriptor checks it),
/// the thread is attached.
unsafe extern "C" fn dlpack_device_method<T: TensorClass>(
    object: *mut ffi::PyObject,
    _no_arguments: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    let body = |py: Python<'_>| -> PyResult<*mut ffi::PyObject> {
        // SAFETY: CPython passes the instance.
        let instance = unsafe { instance::<T>(py, object, "self") }?;
        let device = instance.try_borrow()?.tensor().device();
        Ok((device.device_type.0, device.device_id)
            .into_pyobject(py)?
            .into_ptr())
    };
    // SAFETY: CPython calls methods with the thread attached.
    unsafe { trampoline::attached("__dlpack_device__", body) }
}
