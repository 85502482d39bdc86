//! Consumption: importing a tensor from any DLPack producer ([`from_dlpack`]), negotiating
//! with old and new producers as the array API and DLPack 1.3 describe, after the fast paths
//! (the type's exchange table, NumPy's struct) where a plain import allows them.

use dlbridge::{Device, ManagedTensor, Version};
use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCapsule, PyDict, PyTuple};

use crate::capsule::from_capsule;
use crate::device::device_from_tuple;
use crate::dispatch::type_info;
use crate::errors::{to_py_err, type_name};
use crate::exchange::exchange_api_enabled;
use crate::host::numpy;

/// What a consumer asks of a producer.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions<'py> {
    /// The device the tensor must be on (`dl_device`); `None` accepts the producer's.
    pub device: Option<Device>,
    /// The array API's `copy`: `Some(true)` always copies, `Some(false)` never copies (a
    /// `BufferError` where one is needed), `None` copies only when needed.
    pub copy: Option<bool>,
    /// The consumer's stream, passed on as `stream=`; `None` passes nothing.
    pub stream: Option<Bound<'py, PyAny>>,
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
/// pinned memory), and `copy=True` always yields a private copy: when the producer did not
/// flag its result IS_COPIED (PyTorch 2.15 forgets), the copy is made here.
pub fn from_dlpack(
    object: &Bound<'_, PyAny>,
    options: &ImportOptions<'_>,
) -> PyResult<ManagedTensor> {
    let py = object.py();
    if object.is_instance_of::<PyCapsule>() {
        let tensor = from_capsule(object)?;
        return finish(tensor, None, options, false);
    }
    let info = type_info(object)?;
    let plain = options.device.is_none() && options.copy.is_none() && options.stream.is_none();
    if info.numpy_array && plain {
        // SAFETY: the type is exactly `numpy.ndarray`.
        if let Some(tensor) = unsafe { numpy::import(object) }? {
            return Ok(tensor);
        }
    }
    // What the framework's `__dlpack__` refuses, every path refuses (a tensor autograd
    // tracks; a PyTorch view with a lazy conjugation or negation bit, whose memory holds
    // other values than the tensor's), whatever was asked for: on the fast path below once
    // the exported data type and layout are known, else before `__dlpack__`.
    let mut refusals_checked = false;
    if let Some(api) = info.exchange.filter(|_| plain && exchange_api_enabled()) {
        // The fast path: the type's C exchange API, for a plain import (no device, copy or
        // stream requested). It does not synchronize streams, so only host-readable results
        // are kept. Whatever it refuses goes to `__dlpack__`, the reference, whose answer and
        // exception are the producer's own (PyTorch's table raises RuntimeError with a C++
        // trace where its `__dlpack__` raises BufferError).
        if let Ok(tensor) = api.managed_tensor(object) {
            if let Some(rules) = info.framework {
                rules.refuse_export(object, Some(&tensor.view()))?;
                refusals_checked = true;
            }
            if tensor.view().device().is_host_readable() {
                return Ok(tensor);
            }
            // Dropped: taken again through `__dlpack__`, which synchronizes streams.
        } else {
            drop(PyErr::take(py));
        }
    }
    if let Some(rules) = info.framework.filter(|_| !refusals_checked) {
        rules.refuse_export(object, None)?;
    }
    let Some(dlpack) = object.getattr_opt(intern!(py, "__dlpack__"))? else {
        return Err(PyTypeError::new_err(format!(
            "an object of type {} is not a DLPack producer (it has no __dlpack__ method)",
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
    if let Some(stream) = &options.stream {
        kwargs.set_item(intern!(py, "stream"), stream)?;
    }
    let mut copied_here = false;
    let capsule = match dlpack.call((), Some(&kwargs)) {
        Ok(capsule) => capsule,
        Err(error) if error.is_instance_of::<PyTypeError>(py) => {
            kwargs.del_item(intern!(py, "max_version"))?;
            match dlpack.call((), Some(&kwargs)) {
                Ok(capsule) => capsule,
                Err(error) if error.is_instance_of::<PyTypeError>(py) => {
                    // An old producer: no keyword at all. What was asked is done here: the
                    // copy below, the device check in `finish`.
                    copied_here = options.copy == Some(true);
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
    let tensor = from_capsule(&capsule)?;
    finish(tensor, producer_device, options, copied_here)
}

/// Applies the producer's device, checks the requested device, makes a requested copy.
fn finish(
    mut tensor: ManagedTensor,
    producer_device: Option<Device>,
    options: &ImportOptions<'_>,
    must_copy: bool,
) -> PyResult<ManagedTensor> {
    if let Some(device) = producer_device {
        if device != tensor.view().device() {
            tensor.set_device(device).map_err(to_py_err)?;
        }
    }
    let device = tensor.view().device();
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
        }
    }
    let copy_needed =
        must_copy || (options.copy == Some(true) && !tensor.view().flags().is_copied());
    if copy_needed {
        return tensor.view().to_compact_copy().map_err(to_py_err);
    }
    if options.copy == Some(false) && tensor.view().flags().is_copied() {
        return Err(PyBufferError::new_err(
            "copy=False was asked for but the producer returned a copy (IS_COPIED is set)",
        ));
    }
    Ok(tensor)
}
