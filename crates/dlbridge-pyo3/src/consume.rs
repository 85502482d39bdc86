//! Consumption: importing a tensor from any DLPack producer ([`from_dlpack`]), the imports'
//! order over the sources ([`crate::sources`]): a raw capsule; for a plain import, NumPy's
//! struct, then the type's exchange table; then `__dlpack__`'s negotiation with old and new
//! producers, as the array API and DLPack 1.3 describe it. And [`from_dlpack_explained`], the
//! same import saying which path it took and whether anything was copied
//! ([`ImportReport`]).

use dlbridge::ManagedTensor;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::capsule::take_from_capsule;
use crate::claims::claim_import;
use crate::dispatch::type_info;
use crate::exchange::{ExchangeApi, exchange_api_enabled};
use crate::explain::{Copier, ImportPath, ImportReport, ImportStep};
use crate::framework::Purpose;
use crate::host::numpy;
use crate::sources::dlpack::{ImportOptions, Recorder, Trace, Untraced, finish, negotiate};
use crate::streams::consumer::{ConsumerStream, has_streams};
use crate::streams::work::work_stream_of;

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
/// when it is dropped or given away ([`crate::capsule::into_capsule`], [`ManagedTensor::into_raw`]; a
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
/// use dlbridge_pyo3::{from_dlpack, capsule::into_capsule, ImportOptions, PyObjectOwner};
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
/// use dlbridge_pyo3::capsule::into_capsule;
/// use dlbridge_pyo3::{ClassTensor, ImportOptions, from_dlpack_unclaimed, to_py_err};
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
/// use dlbridge_pyo3::capsule::into_capsule;
/// use dlbridge_pyo3::explain::{Copier, ImportPath};
/// use dlbridge_pyo3::{from_dlpack_explained, to_py_err, ImportOptions};
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
    let mut admitted = false;
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
                rules.admit(object, Some(&tensor.view()), Purpose::Import)?;
                admitted = true;
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
            trace.step(ImportStep::ExchangeFailed);
        }
    }
    negotiate(object, info, options, trace, admitted)
}
