//! Consumption: importing a tensor from any DLPack producer ([`from_dlpack`]), negotiating
//! with old and new producers as the array API and DLPack 1.3 describe, after the fast paths
//! (the type's exchange table, NumPy's struct) where a plain import allows them; and
//! [`from_dlpack_explained`], the same import saying which path it took and whether anything
//! was copied ([`ImportReport`]).

use dlbridge::{Device, DeviceType, ManagedTensor, Version};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCapsule, PyDict, PyTuple};

use crate::capsule::take_from_capsule;
use crate::claims::{Claim, claim_import, compact_copy};
use crate::device::device_from_tuple;
use crate::dispatch::{TypeInfo, type_info};
use crate::errors::{to_py_err, type_name};
use crate::exchange::{ExchangeApi, exchange_api_enabled};
use crate::explain::{Copier, ImportPath, ImportReport, ImportStep};
use crate::host::numpy;
use crate::stream_argument::{ConsumerStream, has_streams, standard_default_stream};
use crate::stream_order;
use crate::work_stream::work_stream_of;

/// What a consumer asks of a producer.
///
/// `#[non_exhaustive]`: the protocol's keywords grow with its versions, so options are built
/// from [`ImportOptions::default()`] with the `with_` methods (or by assigning fields):
/// `ImportOptions::default().with_copy(Some(true))`.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ImportOptions {
    /// The device the tensor must be on (`dl_device`); `None` accepts the producer's.
    pub device: Option<Device>,
    /// The array API's `copy`: `Some(true)` always copies, `Some(false)` never copies (a
    /// `BufferError` where one is needed), `None` copies only when needed.
    pub copy: Option<bool>,
    /// The stream the producer is asked to make the data ready on (`stream=`), for a tensor
    /// on a device with streams; the default is the producer's current work stream
    /// ([`ConsumerStream`]). The imported tensor records it
    /// ([`ManagedTensor::ready_stream`]).
    pub stream: ConsumerStream,
}

impl ImportOptions {
    /// These options with [`device`](Self::device) set.
    #[inline]
    pub fn with_device(mut self, device: Option<Device>) -> Self {
        self.device = device;
        self
    }

    /// These options with [`copy`](Self::copy) set.
    #[inline]
    pub fn with_copy(mut self, copy: Option<bool>) -> Self {
        self.copy = copy;
        self
    }

    /// These options with [`stream`](Self::stream) set.
    #[inline]
    pub fn with_stream(mut self, stream: ConsumerStream) -> Self {
        self.stream = stream;
        self
    }
}

/// Imports a tensor from any DLPack producer, or from a raw `dltensor` / `dltensor_versioned`
/// capsule, into an owned, validated [`ManagedTensor`].
///
/// Negotiation, as the protocol describes it:
/// 1. `dev = x.__dlpack_device__()` when the object has it;
/// 2. `x.__dlpack__(max_version=(1, 3), ...)`, passing `dl_device`, `copy` and `stream` only
///    when they are needed;
/// 3. on `TypeError` (an older producer), again without `max_version`; then without any
///    keyword when no copy and no other device was asked for. When a copy or a device was
///    asked for and the producer cannot take the keyword, the bare call is made and the copy
///    is made here (on the host), or a device mismatch is reported as `BufferError`;
///    when `copy=True` is answered with `BufferError` (a producer that cannot copy, as
///    tvm-ffi), again without `copy`, and the copy is made here (if that call fails too, its
///    error is raised with the refusal as its cause);
/// 4. the capsule that comes back is checked by name and version, whatever was asked for.
///
/// Before all that, when nothing but a plain import is asked for, the fast path: if the
/// object's type publishes DLPack 1.3's C exchange API (`__dlpack_c_exchange_api__`, PyTorch
/// and PaddlePaddle do) and no subclass overrides its `__dlpack__`, the tensor is taken with
/// `managed_tensor_from_py_object_no_sync`, without `__dlpack__`; any error there, or a
/// tensor on a device with streams, falls back to the protocol above, so that the answer (and
/// the exception) is the producer's `__dlpack__`'s. `DLBRIDGE_NO_EXCHANGE_API=1` turns the
/// fast path off.
///
/// Every path gives `__dlpack__`'s answer or a stricter one: a PyTorch
/// tensor that requires grad, or a PaddlePaddle one with `stop_gradient=False`, is refused
/// with `BufferError`, as their `__dlpack__` refuses it; so is a PyTorch view with a lazy
/// conjugation bit, and (stricter than PyTorch, whose `__dlpack__` hands its memory out as
/// it is, values negated) one with a lazy negation bit.
///
/// A tensor that arrives in a legacy `dltensor` capsule (JAX and TensorFlow export only
/// those) is read-only: a legacy tensor cannot say whether its memory may be written
/// ([`dlbridge::Writability`]).
///
/// NumPy arrays (exactly `numpy.ndarray`) take a fast path of their own for a plain import:
/// the array's struct is read directly and the tensor keeps the array alive, which is what
/// `__dlpack__` would export (READ_ONLY for a read-only array); data types and layouts that
/// `__dlpack__` refuses or converts go through it, so its errors are NumPy's.
///
/// The device from `__dlpack_device__` wins over the one written in the tensor (PyTorch's
/// pinned memory), and `copy=True` always yields a private copy: when the producer cannot
/// copy, or did not flag its result IS_COPIED (PyTorch 2.15 forgets), the copy is made here.
///
/// Which of these paths an import took, its retries, and whether (and by whom) the memory was
/// copied: [`from_dlpack_explained`].
///
/// # The import's claim
///
/// A tensor that is not a copy (none was asked for, and the producer did not flag IS_COPIED)
/// reaches memory that Python code and running kernels reach too. It holds a read claim on
/// that memory in the aliasing registry of typed arguments for as long as it lives, released
/// when it is dropped or given away ([`crate::into_capsule`], [`ManagedTensor::into_raw`]; a
/// share of it in an `Arc` keeps it): so that no kernel writes the memory through a
/// [`TensorArgMut`](crate::TensorArgMut) while Rust code can read it through this tensor's
/// `&[T]`. Memory that a `TensorArgMut` is writing (on any thread; or the kernel's own
/// argument, imported again from `x.object(py)`) is refused with `ValueError`, and a
/// `TensorArgMut` over memory that a live import reads is refused the same way. Reading
/// arguments (`TensorArg`) and imports go on side by side.
///
/// ```
/// use dlbridge::{DataType, Device, Export};
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::{from_dlpack, into_capsule, ImportOptions, PyObjectOwner};
/// use pyo3::exceptions::PyValueError;
/// use pyo3::prelude::*;
/// use pyo3::types::PyByteArray;
///
/// /// Writes through its argument.
/// #[pyfunction]
/// fn fill(mut x: TensorArgMut<'_, u8, Ix1>) {
///     x.view_mut().fill(7);
/// }
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     let bytes = PyByteArray::new(py, &[1, 2, 3]);
///     let owner = PyObjectOwner::new(bytes.clone().into_any().unbind());
///     // SAFETY: the bytearray's 3 bytes, kept alive (and never resized) by the owner.
///     let export = unsafe {
///         Export::from_raw_parts(owner, bytes.data().cast(), DataType::UINT8, Device::CPU, &[3])
///     };
///     let capsule = into_capsule(py, export.into_versioned().map_err(to_py_err)?)?;
///     let fill = wrap_pyfunction!(fill, py)?;
///     let imported = from_dlpack(capsule.as_any(), &ImportOptions::default())?;
///     // While the import lives, Rust may read the bytes through it: no kernel writes them.
///     let refused = fill.call1((&bytes,)).unwrap_err();
///     assert!(refused.is_instance_of::<PyValueError>(py));
///     assert!(refused.to_string().contains("a tensor imported into Rust that is still alive"));
///     assert_eq!(imported.view().as_slice::<u8>().map_err(to_py_err)?, &[1, 2, 3]);
///     drop(imported);
///     fill.call1((&bytes,))?;
///     assert_eq!(bytes.to_vec(), [7, 7, 7]);
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub fn from_dlpack(object: &Bound<'_, PyAny>, options: &ImportOptions) -> PyResult<ManagedTensor> {
    // `Untraced` records nothing: the same code as before the explained import existed
    // (`import` is inlined here; returning the path beside the tensor cost a copy of the
    // tensor, 35 instructions per call).
    let mut tensor = import(object, options, &mut Untraced, Some("from_dlpack"))?;
    claim_import(object.py(), &mut tensor, "from_dlpack")?;
    Ok(tensor)
}

/// [`from_dlpack`] without the import's read claim: for a tensor that goes straight into a
/// [`ClassTensor`](crate::ClassTensor), whose reads claim one by one (`ClassTensor::new` would
/// release the import's claim at once: this saves registering it). The same negotiation,
/// answers and errors otherwise.
///
/// # Safety
///
/// The tensor's elements must not be reached through it (no typed access, no view's slice)
/// while the registry does not know of the reader: move it into a `ClassTensor` (or give it
/// away with `into_raw*`) before any such access, or call nothing on it that hands out
/// references to its elements. A `TensorArgMut` may be writing the memory meanwhile.
///
/// ```
/// use dlbridge::Export;
/// use dlbridge_pyo3::{ClassTensor, ImportOptions, from_dlpack_unclaimed, into_capsule, to_py_err};
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     let exported = Export::new(vec![1u8, 2, 3], &[3]).into_versioned().map_err(to_py_err)?;
///     let capsule = into_capsule(py, exported)?;
///     // SAFETY: into a `ClassTensor` before anything reads the elements.
///     let tensor = unsafe { from_dlpack_unclaimed(&capsule, &ImportOptions::default()) }?;
///     let held = ClassTensor::new(tensor);
///     assert_eq!(held.read(py)?.view().as_slice::<u8>().map_err(to_py_err)?, &[1, 2, 3]);
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub unsafe fn from_dlpack_unclaimed(
    object: &Bound<'_, PyAny>,
    options: &ImportOptions,
) -> PyResult<ManagedTensor> {
    import(object, options, &mut Untraced, None)
}

/// [`from_dlpack`] without the import's claim, for a typed argument's full import, which
/// claims the memory itself (read, or written for a `TensorArgMut`) for as long as it holds
/// the tensor.
pub(crate) fn import_for_argument(
    object: &Bound<'_, PyAny>,
    options: &ImportOptions,
) -> PyResult<ManagedTensor> {
    import(object, options, &mut Untraced, None)
}

/// Imports a tensor as [`from_dlpack`] does (the same code, the same answers and errors), and
/// says what happened: the path taken, the negotiation's steps, whether the memory is a copy
/// and who made it, and the tensor received ([`ImportReport`]). For a user or a test who wants
/// to know why an import is read-only, slow, or a copy; `dlbridge.explain(x)["import"]` in
/// Python. The tensor is the caller's: dropping it releases the producer's memory at once.
/// It holds the import's read claim as [`from_dlpack`]'s does.
///
/// ```
/// use dlbridge::{Export, ManagedTensor};
/// use dlbridge_pyo3::{
///     from_dlpack_explained, into_capsule, to_py_err, Copier, ImportOptions, ImportPath,
/// };
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     // A legacy capsule handed over directly, imported with copy=True.
///     let legacy = Export::new(vec![1.0f32, 2.0, 3.0], &[3]).into_legacy().map_err(to_py_err)?;
///     let capsule = into_capsule(py, legacy)?;
///     let options = ImportOptions::default().with_copy(Some(true));
///     let (tensor, report): (ManagedTensor, _) = from_dlpack_explained(capsule.as_any(), &options)?;
///     assert_eq!(report.path, ImportPath::Capsule);
///     assert_eq!(report.version, None, "a legacy tensor has no version");
///     assert_eq!(report.copied, Some(Copier::Dlbridge), "a legacy tensor cannot say IS_COPIED");
///     assert!(!report.read_only, "the copy is the caller's");
///     assert_eq!(report.shape, [3]);
///     assert!(tensor.view().flags().is_copied());
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub fn from_dlpack_explained(
    object: &Bound<'_, PyAny>,
    options: &ImportOptions,
) -> PyResult<(ManagedTensor, ImportReport)> {
    let mut trace = Recorder::default();
    let mut tensor = import(object, options, &mut trace, Some("from_dlpack"))?;
    claim_import(object.py(), &mut tensor, "from_dlpack")?;
    let Some(path) = trace.path else {
        unreachable!("an import that succeeds has said which path it took")
    };
    let report = {
        let view = tensor.view();
        let copied_here = [ImportStep::CopiedHere, ImportStep::CopiedToHost];
        let copied = if trace.steps.iter().any(|step| copied_here.contains(step)) {
            Some(Copier::Dlbridge)
        } else if view.flags().is_copied() {
            Some(Copier::Producer)
        } else {
            None
        };
        ImportReport {
            path,
            steps: trace.steps,
            copied,
            version: trace.version,
            read_only: view.is_read_only(),
            dtype: view.dtype(),
            device: view.device(),
            shape: view.shape().to_vec(),
            strides: view.strides().to_vec(),
            ready_stream: tensor.ready_stream(),
        }
    };
    Ok((tensor, report))
}

/// What an import records as it goes: nothing for [`from_dlpack`] ([`Untraced`], whose calls
/// compile to nothing), the steps for [`from_dlpack_explained`] ([`Recorder`]).
trait Trace {
    /// Whether anything is recorded: work done only for the record is skipped when not.
    const RECORDS: bool;
    /// A step of the negotiation.
    fn step(&mut self, step: ImportStep);
    /// The path taken, and the tensor as it arrived there, before any device relabelling or
    /// copy.
    fn received(&mut self, path: ImportPath, tensor: &ManagedTensor);
}

/// [`from_dlpack`]'s trace: nothing.
struct Untraced;

impl Trace for Untraced {
    const RECORDS: bool = false;
    #[inline(always)]
    fn step(&mut self, _step: ImportStep) {}
    #[inline(always)]
    fn received(&mut self, _path: ImportPath, _tensor: &ManagedTensor) {}
}

/// [`from_dlpack_explained`]'s trace.
#[derive(Default)]
struct Recorder {
    path: Option<ImportPath>,
    steps: Vec<ImportStep>,
    version: Option<Version>,
}

impl Trace for Recorder {
    const RECORDS: bool = true;
    fn step(&mut self, step: ImportStep) {
        self.steps.push(step);
    }
    fn received(&mut self, path: ImportPath, tensor: &ManagedTensor) {
        self.path = Some(path);
        self.version = tensor.view().version();
    }
}

/// The one import of [`from_dlpack`] and [`from_dlpack_explained`] (and of typed arguments'
/// full imports); `trace` records the path taken and the negotiation's steps. The import's
/// claim ([`claim_import`]) is the caller's to add, except that a capsule handed over as the
/// object is claimed as it is taken (before it is marked consumed, so that a refused capsule
/// keeps its tensor) when `claim` names the import and no copy or device is asked for;
/// typed arguments pass `None`, as they claim what they reach themselves.
#[inline(always)]
fn import<T: Trace>(
    object: &Bound<'_, PyAny>,
    options: &ImportOptions,
    trace: &mut T,
    claim: Option<&str>,
) -> PyResult<ManagedTensor> {
    let py = object.py();
    if object.is_instance_of::<PyCapsule>() {
        // Claimed as it is taken (a refused capsule keeps its tensor), unless a copy may be
        // made of it, whose own claim says why it is refused; what is not copied is claimed
        // by the caller.
        let claim = claim.filter(|_| options.copy != Some(true) && options.device.is_none());
        let tensor = take_from_capsule(object, claim)?;
        trace.received(ImportPath::Capsule, &tensor);
        return finish(py, tensor, None, options, false, trace);
    }
    let info = type_info(object)?;
    let plain = options.device.is_none()
        && options.copy.is_none()
        && options.stream == ConsumerStream::ProducerCurrent;
    if info.numpy_array && plain {
        // SAFETY: the type is exactly `numpy.ndarray`.
        if let Some(tensor) = unsafe { numpy::import(object) }? {
            trace.received(ImportPath::NumpyStruct, &tensor);
            return Ok(tensor);
        }
        trace.step(ImportStep::NumpyDeclined);
    }
    // What the framework's `__dlpack__` refuses, every path refuses (a tensor autograd
    // tracks; a PyTorch view with a lazy conjugation or negation bit, whose memory holds
    // other values than the tensor's), whatever was asked for: on the fast path below once
    // the exported data type and layout are known, else before `__dlpack__`.
    let mut refusals_checked = false;
    if T::RECORDS && plain && info.exchange_table.is_some() && !exchange_api_enabled() {
        trace.step(ImportStep::ExchangeDisabled);
    }
    if let Some(api) = ExchangeApi::of(info).filter(|_| plain && exchange_api_enabled()) {
        // The fast path: the type's C exchange API, for a plain import (no device, copy or
        // stream other than the producer's current one requested). It does not synchronize
        // streams, which a tensor on a device with streams needs none of when its data is
        // taken to be ready on the producer's current work stream, which the table says
        // (`current_work_stream`); without that, only host-readable results are kept.
        // Whatever it refuses goes to `__dlpack__`, the reference, whose answer and exception
        // are the producer's own (PyTorch's table raises RuntimeError with a C++ trace where
        // its `__dlpack__` raises BufferError).
        if let Ok(mut tensor) = api.managed_tensor_unclaimed(object) {
            if let Some(rules) = info.framework {
                rules.refuse_export(object, Some(&tensor.view()))?;
                refusals_checked = true;
            }
            let device = tensor.view().device();
            if !has_streams(device) {
                trace.received(ImportPath::ExchangeTable, &tensor);
                return Ok(tensor);
            }
            if api.table().current_work_stream.is_some() {
                let stream = work_stream_of(object, info, device)?;
                // SAFETY: the producer's current work stream, which the producer keeps alive
                // (default and pooled streams live as long as the process; a stream the user
                // made current is the user's to keep, as the protocol's stream handles are).
                unsafe { tensor.set_ready_stream(stream.handle()) };
                trace.received(ImportPath::ExchangeTable, &tensor);
                return Ok(tensor);
            }
            // Dropped: taken again through `__dlpack__`, which synchronizes streams.
            trace.step(ImportStep::ExchangeDeviceWithStreams);
        } else {
            drop(PyErr::take(py));
            trace.step(ImportStep::ExchangeFailed);
        }
    }
    if let Some(rules) = info.framework.filter(|_| !refusals_checked) {
        rules.refuse_export(object, None)?;
    }
    let Some(dlpack) = object.getattr_opt(intern!(py, "__dlpack__"))? else {
        return Err(PyTypeError::new_err(format!(
            "an object of type {} is not a DLPack producer (it has no __dlpack__ method): pass \
             an array or tensor (NumPy, PyTorch, JAX, CuPy, ...), np.asarray(x) for a list",
            type_name(object)
        )));
    };
    // A producer that cannot say its device (PyTorch's meta tensors raise ValueError here)
    // is still asked for the tensor: its `__dlpack__`'s refusal is the answer. Should it
    // export all the same, the device's error is raised.
    let (producer_device, device_error) =
        match object.getattr_opt(intern!(py, "__dlpack_device__"))? {
            Some(method) => match method.call0().and_then(|pair| device_from_tuple(&pair)) {
                Ok(device) => (Some(device), None),
                Err(error) => (None, Some(error)),
            },
            None => (None, None),
        };
    let wanted_device = options
        .device
        .filter(|device| Some(*device) != producer_device);
    let kwargs = PyDict::new(py);
    static MAX_VERSION: PyOnceLock<Py<PyTuple>> = PyOnceLock::new();
    let max_version = MAX_VERSION.get_or_try_init(py, || {
        PyTuple::new(py, [Version::CURRENT.major, Version::CURRENT.minor]).map(Bound::unbind)
    })?;
    kwargs.set_item(intern!(py, "max_version"), max_version.bind(py))?;
    if let Some(device) = wanted_device {
        kwargs.set_item(
            intern!(py, "dl_device"),
            (device.device_type.0, device.device_id),
        )?;
    }
    if let Some(copy) = options.copy {
        kwargs.set_item(intern!(py, "copy"), copy)?;
    }
    // A copy to a device without streams (the CPU) is synchronised by the producer and passes
    // no stream: the standard wants None there.
    let (stream_argument, mut ready_stream) = match options.device {
        Some(wanted) if !has_streams(wanted) => (None, None),
        _ => stream_to_ask(object, info, producer_device, options.stream)?,
    };
    if let Some(stream) = stream_argument {
        kwargs.set_item(intern!(py, "stream"), stream)?;
    }
    let mut copied_here = false;
    let copy_wanted = options.copy == Some(true);
    let capsule = match call_copying_here_if_refused(
        &dlpack,
        &kwargs,
        copy_wanted,
        &mut copied_here,
        trace,
    ) {
        Ok(capsule) => capsule,
        Err(error) if error.is_instance_of::<PyTypeError>(py) => {
            trace.step(ImportStep::MaxVersionRefused);
            kwargs.del_item(intern!(py, "max_version"))?;
            match call_copying_here_if_refused(
                &dlpack,
                &kwargs,
                copy_wanted,
                &mut copied_here,
                trace,
            ) {
                Ok(capsule) => capsule,
                Err(error) if error.is_instance_of::<PyTypeError>(py) => {
                    // An old producer: no keyword at all. What was asked is done here: the
                    // copy below, the device check in `finish`.
                    trace.step(ImportStep::KeywordsRefused);
                    copied_here = options.copy == Some(true);
                    // Asked for no stream: the data is ready on the standard's default stream.
                    ready_stream = producer_device
                        .filter(|&device| has_streams(device))
                        .map(standard_default_stream);
                    match dlpack.call0() {
                        Ok(capsule) => capsule,
                        Err(bare_error) => {
                            bare_error.set_cause(py, Some(error));
                            return Err(bare_error);
                        }
                    }
                }
                Err(error) => return Err(error),
            }
        }
        Err(error) => return Err(error),
    };
    if let Some(error) = device_error {
        return Err(error);
    }
    if !capsule.is_instance_of::<PyCapsule>() {
        return Err(PyTypeError::new_err(format!(
            "{}.__dlpack__() returned an object of type {}, not a DLPack capsule",
            type_name(object),
            type_name(&capsule)
        )));
    }
    // The producer's capsule, made for this import: claimed by the caller once it is known
    // whether a copy is made of it.
    let mut tensor = take_from_capsule(&capsule, None)?;
    if has_streams(tensor.view().device()) {
        // SAFETY: the stream the producer was asked to make the data ready on: its own current
        // stream (kept alive by the producer, or by the user who made it current), the
        // standard's default, or the caller's `StreamHandle`, which `StreamHandle::new`'s
        // contract keeps alive as long as this tensor or a share of it can be exported.
        unsafe { tensor.set_ready_stream(ready_stream) };
    }
    if T::RECORDS {
        let path = if tensor.is_versioned() {
            ImportPath::DlpackVersioned
        } else {
            ImportPath::DlpackLegacy
        };
        trace.received(path, &tensor);
    }
    finish(py, tensor, producer_device, options, copied_here, trace)
}

/// The `stream=` to pass to `__dlpack__` (`None`: none) and the stream the data will then be
/// ready on, for `choice` and the producer's device (`None` where it cannot say it: the choice
/// is passed as it is, but the producer's current stream cannot be looked up).
fn stream_to_ask(
    object: &Bound<'_, PyAny>,
    info: &TypeInfo,
    producer_device: Option<Device>,
    choice: ConsumerStream,
) -> PyResult<(Option<i64>, Option<usize>)> {
    let handle_argument = |handle: usize| {
        i64::try_from(handle).map_err(|_| {
            PyValueError::new_err(format!("stream={handle:#x} does not fit a Python int64"))
        })
    };
    match producer_device {
        Some(device) if !has_streams(device) => Ok((None, None)),
        Some(device) => match choice.validate(device)? {
            ConsumerStream::ProducerCurrent => {
                let stream = work_stream_of(object, info, device)?;
                let argument = stream.dlpack_stream_argument().map(handle_argument);
                Ok((argument.transpose()?, stream.handle()))
            }
            ConsumerStream::StandardDefault => Ok((None, Some(standard_default_stream(device)))),
            ConsumerStream::NoSync => Ok((Some(-1), None)),
            ConsumerStream::Handle(handle) => {
                Ok((Some(handle_argument(handle.get())?), Some(handle.get())))
            }
        },
        None => match choice {
            ConsumerStream::NoSync => Ok((Some(-1), None)),
            ConsumerStream::Handle(handle) => {
                Ok((Some(handle_argument(handle.get())?), Some(handle.get())))
            }
            _ => Ok((None, None)),
        },
    }
}

/// Calls `__dlpack__(**kwargs)`. Where `copy=True` was asked and the producer raises
/// `BufferError` (it cannot copy: tvm-ffi says "copy not yet supported"), asks again without
/// `copy` and sets `copied_here`, so that the copy is made here: `copy=True` is always honoured
/// when dlbridge can copy the memory. Should that second call fail as well, its error is
/// raised with the producer's refusal as its cause.
fn call_copying_here_if_refused<'py, T: Trace>(
    dlpack: &Bound<'py, PyAny>,
    kwargs: &Bound<'py, PyDict>,
    copy_wanted: bool,
    copied_here: &mut bool,
    trace: &mut T,
) -> PyResult<Bound<'py, PyAny>> {
    let py = dlpack.py();
    match dlpack.call((), Some(kwargs)) {
        Err(refusal)
            if copy_wanted && !*copied_here && refusal.is_instance_of::<PyBufferError>(py) =>
        {
            trace.step(ImportStep::CopyRefused);
            kwargs.del_item(intern!(py, "copy"))?;
            *copied_here = true;
            dlpack
                .call((), Some(kwargs))
                .inspect_err(|error| error.set_cause(py, Some(refusal)))
        }
        answer => answer,
    }
}

/// Applies the producer's device, checks the requested device, makes a requested copy. A
/// copy made here reads memory that Python code and typed arguments may still reach (the
/// producer's own, shared), so it is made under a read claim in the aliasing registry
/// ([`Claim::for_copy`]): memory that a live `TensorArgMut` writes, on any thread, is refused
/// with `ValueError` instead of copied while it is written.
fn finish<T: Trace>(
    py: Python<'_>,
    mut tensor: ManagedTensor,
    producer_device: Option<Device>,
    options: &ImportOptions,
    must_copy: bool,
    trace: &mut T,
) -> PyResult<ManagedTensor> {
    // `__dlpack_device__` wins over the tensor's device (PyTorch's pinned memory), unless the
    // producer gave the device that was asked for with `dl_device`. Only host memory is taken
    // for another host memory: a producer that calls device memory host memory (or the
    // reverse) cannot be believed either way, and the CPU must never read a device address.
    if let Some(device) = producer_device {
        let received = tensor.view().device();
        if device != received && options.device != Some(received) {
            tensor.set_device(device).map_err(|error| match error {
                dlbridge::Error::DeviceChange { .. } => PyBufferError::new_err(format!(
                    "the producer's __dlpack_device__() says {device}, but the tensor its \
                     __dlpack__() exported is on {received} (DLTensor.device): only host \
                     memories are taken for one another, so where the data lives is unknown"
                )),
                other => to_py_err(other),
            })?;
            trace.step(ImportStep::DeviceFromDlpackDevice);
        }
    }
    let device = tensor.view().device();
    if options.device == Some(Device::CPU) && device.device_type == DeviceType::CUDA {
        // The producer could not copy to the host (or did not take the keyword): done here,
        // on the stream its data is ready on.
        if options.copy == Some(false) {
            return Err(PyBufferError::new_err(format!(
                "copy=False, but the producer gave a tensor on {device} where the CPU was asked \
                 for: a copy is needed"
            )));
        }
        trace.step(ImportStep::CopiedToHost);
        let _reading = Claim::for_copy(py, &tensor.view(), "device=CPU")?;
        return stream_order::copy_to_host(&tensor);
    }
    if let Some(wanted) = options.device {
        let host_copy_ok = wanted == Device::CPU && device.is_host_readable();
        if wanted != device && !host_copy_ok {
            return Err(PyBufferError::new_err(format!(
                "the producer sent a tensor on {device}, not on the requested device {wanted}"
            )));
        }
        if wanted != device {
            // Host-readable memory seen as CPU: a view, no copy needed.
            tensor.set_device(wanted).map_err(to_py_err)?;
            trace.step(ImportStep::DeviceAsCpu);
        }
    }
    let copy_needed =
        must_copy || (options.copy == Some(true) && !tensor.view().flags().is_copied());
    if copy_needed {
        let device = tensor.view().device();
        if !device.is_host_readable() {
            return Err(PyBufferError::new_err(format!(
                "copy=True, but the producer did not copy its tensor on {device} and dlbridge \
                 makes no copies on a device; ask for a host copy with device=(1, 0)"
            )));
        }
        trace.step(ImportStep::CopiedHere);
        // Under a read claim: no `TensorArgMut` writes the memory while it is copied.
        return compact_copy(py, &tensor.view(), "copy=True");
    }
    if options.copy == Some(false) && tensor.view().flags().is_copied() {
        return Err(PyBufferError::new_err(
            "copy=False was asked for but the producer returned a copy (IS_COPIED is set)",
        ));
    }
    Ok(tensor)
}
