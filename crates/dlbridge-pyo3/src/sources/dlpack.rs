//! The `__dlpack__` source: the protocol's negotiation with old and new producers, as the array
//! API and DLPack 1.3 describe it ([`negotiate`]), and what a consumer asks of a producer
//! ([`ImportOptions`]); with the record an explained import keeps of it ([`Trace`]). Both
//! orders end here: an import's ([`crate::consume`]) and a typed argument's reference path
//! ([`crate::args`]).

use dlbridge::{Device, DeviceType, ManagedTensor, Version};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCapsule, PyDict, PyTuple};

use crate::capsule::take_from_capsule;
use crate::claims::{Claim, compact_copy};
use crate::device::device_from_tuple;
use crate::dispatch::TypeInfo;
use crate::errors::{to_py_err, type_name};
use crate::explain::{ImportPath, ImportStep};
use crate::framework::Purpose;
use crate::streams::consumer::{ConsumerStream, has_streams, standard_default_stream};
use crate::streams::order::copy_to_host;
use crate::streams::work::work_stream_of;

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

/// What an import records as it goes: nothing for [`from_dlpack`] ([`Untraced`], whose calls
/// compile to nothing), the steps for [`from_dlpack_explained`] ([`Recorder`]).
pub(crate) trait Trace {
    /// Whether anything is recorded: work done only for the record is skipped when not.
    const RECORDS: bool;
    /// A step of the negotiation.
    fn step(&mut self, step: ImportStep);
    /// The path taken, and the tensor as it arrived there, before any device relabelling or
    /// copy.
    fn received(&mut self, path: ImportPath, tensor: &ManagedTensor);
}

/// [`from_dlpack`]'s trace: nothing.
pub(crate) struct Untraced;

impl Trace for Untraced {
    const RECORDS: bool = false;
    #[inline(always)]
    fn step(&mut self, _step: ImportStep) {}
    #[inline(always)]
    fn received(&mut self, _path: ImportPath, _tensor: &ManagedTensor) {}
}

/// [`from_dlpack_explained`]'s trace.
#[derive(Default)]
pub(crate) struct Recorder {
    pub(crate) path: Option<ImportPath>,
    pub(crate) steps: Vec<ImportStep>,
    pub(crate) version: Option<Version>,
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

/// Asks `object`'s `__dlpack__` for its tensor with what `options` asks (the protocol's
/// negotiation: `max_version`, then older producers' retries, a copy made here where the
/// producer cannot), checks the capsule it answers with, and applies the producer's device,
/// the requested device and copy ([`finish`]). `admitted`: the framework's rules were applied
/// already (by the exchange table's source, whose tensor was dropped).
#[inline(always)]
pub(crate) fn negotiate<T: Trace>(
    object: &Bound<'_, PyAny>,
    info: &TypeInfo,
    options: &ImportOptions,
    trace: &mut T,
    admitted: bool,
) -> PyResult<ManagedTensor> {
    let py = object.py();
    // The framework's refusals (a tracked tensor, a lazy view) come before `__dlpack__` is
    // asked, so that they read the same whatever the producer would say (its `__dlpack__`
    // hands a negated view out as it is); the table's export, when it was taken, applied them.
    if let Some(rules) = info.framework.filter(|_| !admitted) {
        rules.admit(object, None, Purpose::Import)?;
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
pub(crate) fn finish<T: Trace>(
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
        return copy_to_host(&tensor);
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
