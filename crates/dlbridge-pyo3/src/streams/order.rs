//! What a DLPack exchange of device memory owes the other side, done through the CUDA driver
//! (feature `cuda`, which loads the driver at run time): making a consumer's stream wait for
//! the stream a tensor's data is ready on ([`order_for_consumer`], for `__dlpack__(stream=...)`)
//! and copying a CUDA tensor to host memory ([`copy_to_host`], for `dl_device=(1, 0)` on
//! either side). Without the feature, or for ROCm, both refuse with a `BufferError` that says
//! what to do instead.

use dlbridge::{Device, DeviceType, ManagedTensor};
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;

#[cfg(feature = "cuda")]
use crate::errors::to_py_err;

/// Makes the consumer's stream `consumer` (a handle as the protocol passes it) wait for the
/// stream `tensor`'s data is ready on, for a tensor on `device`, a device with streams.
/// Nothing is done where the ready stream is unknown ([`ManagedTensor::ready_stream`] is
/// `None`: nothing is pending that dlbridge knows of, or the importer took the ordering on
/// itself with `stream=-1`) or is the consumer's stream.
pub(crate) fn order_for_consumer(
    tensor: &ManagedTensor,
    device: Device,
    consumer: usize,
) -> PyResult<()> {
    let Some(ready) = tensor.ready_stream() else {
        return Ok(());
    };
    if ready == consumer {
        return Ok(());
    }
    if device.device_type == DeviceType::ROCM {
        return Err(PyBufferError::new_err(format!(
            "the tensor's data is ready on ROCm stream {ready:#x} and stream={consumer:#x} was \
             asked for; dlbridge cannot order ROCm streams: pass stream=-1 and synchronise \
             yourself"
        )));
    }
    // CUDA: 0 and 1 both name the legacy default stream.
    if ready <= 1 && consumer <= 1 {
        return Ok(());
    }
    wait_on_cuda(ready, consumer, device.device_id)
}

#[cfg(feature = "cuda")]
fn wait_on_cuda(ready: usize, consumer: usize, device_id: i32) -> PyResult<()> {
    let cuda = Device::new(DeviceType::CUDA, device_id);
    // SAFETY: `ready` is the tensor's ready stream, alive while the tensor can be exported
    // (the contract of `ManagedTensor::set_ready_stream`); `consumer` is the stream the
    // consumer passed, its own and alive during the call (the protocol's contract).
    unsafe { dlbridge::cuda::wait_for_stream(cuda, ready, consumer) }
        .map(|_| ())
        .map_err(to_py_err)
}

#[cfg(not(feature = "cuda"))]
fn wait_on_cuda(ready: usize, consumer: usize, _device_id: i32) -> PyResult<()> {
    Err(PyBufferError::new_err(format!(
        "the tensor's data is ready on CUDA stream {ready:#x} and stream={consumer:#x} was asked \
         for, but this build of dlbridge-pyo3 cannot order CUDA streams (its cargo feature \
         `cuda` is off): pass stream=-1 and synchronise yourself, or build with the feature"
    )))
}

/// A compact host copy (a CPU tensor flagged IS_COPIED) of `tensor`, on CUDA device memory,
/// made on the stream its data is ready on (the legacy default stream where that is unknown,
/// as the standard's `stream=None` assumes).
pub(crate) fn copy_to_host(tensor: &ManagedTensor) -> PyResult<ManagedTensor> {
    let device = tensor.view().device();
    if device.device_type != DeviceType::CUDA {
        return Err(PyBufferError::new_err(format!(
            "a tensor on {device} cannot be copied to the CPU by dlbridge (it copies CUDA \
             memory only)"
        )));
    }
    copy_cuda_to_host(tensor)
}

#[cfg(feature = "cuda")]
fn copy_cuda_to_host(tensor: &ManagedTensor) -> PyResult<ManagedTensor> {
    let stream = tensor.ready_stream().unwrap_or(1);
    // SAFETY: a validated tensor's view of memory on its CUDA device; the ready stream lives
    // while the tensor can be exported (`set_ready_stream`'s contract) and 1 always does.
    unsafe { dlbridge::cuda::copy_to_host(&tensor.view(), stream) }.map_err(to_py_err)
}

#[cfg(not(feature = "cuda"))]
fn copy_cuda_to_host(tensor: &ManagedTensor) -> PyResult<ManagedTensor> {
    Err(PyBufferError::new_err(format!(
        "a host copy of a tensor on {} needs the CUDA driver, and this build of dlbridge-pyo3 \
         has no CUDA support (its cargo feature `cuda` is off)",
        tensor.view().device()
    )))
}
