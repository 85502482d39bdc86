//! The stream a consumer's device work must run on, for a tensor of a producer: [`WorkStream`],
//! and its lookup ([`work_stream_of`]), in the order the DLPack standard and the frameworks
//! give:
//!
//! 1. the producer type's C exchange table, `current_work_stream(device_type, device_id)`
//!    (PyTorch >= 2.10, PaddlePaddle);
//! 2. the framework's current stream: PyTorch `torch.cuda.current_stream(device_id).cuda_stream`,
//!    CuPy `cupy.cuda.get_current_stream(device_id).ptr`;
//! 3. otherwise the legacy default stream (handle 0): the stream `__dlpack__(stream=None)`
//!    makes data ready on, so that a producer that honours the standard (JAX) has made its
//!    data ready there when it hands the tensor out.
//!
//! Devices without streams (CPU and the other host-readable ones but CUDA managed memory,
//! Vulkan, ...) have no work stream ([`WorkStream::handle`] is `None`).
//!
//! This module enqueues nothing and calls no driver: it only finds stream handles and turns
//! them into the `stream=` value of `__dlpack__` ([`WorkStream::dlpack_stream_argument`]).

use std::ffi::c_void;
use std::fmt;

use dlbridge::Device;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;

use super::consumer::{StreamKind, has_streams, stream_kind};
use crate::dispatch::TypeInfo;

/// Where a [`WorkStream`] was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WorkStreamSource {
    /// The producer type's exchange table (`current_work_stream`).
    ExchangeTable,
    /// PyTorch's current stream on the device (`torch.cuda.current_stream`).
    TorchCurrentStream,
    /// CuPy's current stream on the device (`cupy.cuda.get_current_stream`).
    CupyCurrentStream,
    /// No stream of the producer's is known: the legacy default stream.
    LegacyDefault,
    /// The device has no streams.
    NoStreams,
}

impl WorkStreamSource {
    /// A short name: `"exchange-table"`, `"torch"`, `"cupy"`, `"legacy-default"`, `"none"`.
    pub fn name(self) -> &'static str {
        match self {
            WorkStreamSource::ExchangeTable => "exchange-table",
            WorkStreamSource::TorchCurrentStream => "torch",
            WorkStreamSource::CupyCurrentStream => "cupy",
            WorkStreamSource::LegacyDefault => "legacy-default",
            WorkStreamSource::NoStreams => "none",
        }
    }
}

/// The stream a kernel must launch on to see a tensor's data ready and to leave its results
/// ordered before the producer's later work: the producer's current work stream on the
/// tensor's device. Obtained once per argument at extraction
/// ([`DeviceTensorArg::stream`](crate::DeviceTensorArg::stream)).
///
/// ```
/// use dlbridge_pyo3::streams::{WorkStream, WorkStreamSource};
/// use dlbridge_pyo3::dlbridge::{Device, DeviceType};
///
/// let cuda0 = Device::new(DeviceType::CUDA, 0);
/// let stream = WorkStream::new(cuda0, Some(0x5555_0000), WorkStreamSource::ExchangeTable);
/// assert_eq!(stream.handle(), Some(0x5555_0000));
/// assert_eq!(stream.dlpack_stream_argument(), Some(0x5555_0000));
/// // The legacy default stream is handle 0, passed to `__dlpack__` as 1 (0 is forbidden).
/// let legacy = WorkStream::new(cuda0, Some(0), WorkStreamSource::LegacyDefault);
/// assert_eq!(legacy.dlpack_stream_argument(), Some(1));
/// assert!(legacy.as_raw().is_null());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct WorkStream {
    device: Device,
    handle: Option<usize>,
    source: WorkStreamSource,
}

impl WorkStream {
    /// A stream on `device`: its raw handle (`cudaStream_t` / `hipStream_t` as an integer; 0
    /// for the legacy default stream, 2 for CUDA's per-thread default), `None` for a device
    /// without streams.
    pub fn new(device: Device, handle: Option<usize>, source: WorkStreamSource) -> Self {
        WorkStream {
            device,
            handle,
            source,
        }
    }

    /// The device the stream belongs to.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The raw handle (0 is the legacy default stream); `None` for a device without streams.
    pub fn handle(&self) -> Option<usize> {
        self.handle
    }

    /// The handle as a pointer (`CUstream`, `cudaStream_t`, `hipStream_t`); NULL (the legacy
    /// default stream) for a device without streams too.
    pub fn as_raw(&self) -> *mut c_void {
        std::ptr::with_exposed_provenance_mut(self.handle.unwrap_or(0))
    }

    /// Where the stream was found.
    pub fn source(&self) -> WorkStreamSource {
        self.source
    }

    /// The `stream=` value that asks a producer's `__dlpack__` to make its data ready on this
    /// stream: CUDA's legacy default stream (handle 0) is 1 there, 0 being forbidden; ROCm's
    /// default is 0; `None` for a device without streams, whose only valid value is None.
    pub fn dlpack_stream_argument(&self) -> Option<usize> {
        let handle = self.handle?;
        Some(match stream_kind(self.device) {
            Some(StreamKind::Cuda) if handle == 0 => 1,
            _ => handle,
        })
    }

    /// The one stream of several arguments of a call: they must all be on the same device and
    /// agree on the stream, or the kernel would race one of them (`ValueError` naming both).
    ///
    /// ```
    /// use dlbridge_pyo3::streams::{WorkStream, WorkStreamSource};
    /// use dlbridge_pyo3::dlbridge::{Device, DeviceType};
    /// # pyo3::Python::initialize();
    ///
    /// let cuda0 = Device::new(DeviceType::CUDA, 0);
    /// let a = WorkStream::new(cuda0, Some(7), WorkStreamSource::ExchangeTable);
    /// let b = WorkStream::new(cuda0, Some(9), WorkStreamSource::CupyCurrentStream);
    /// assert_eq!(WorkStream::common([a, a]).unwrap(), a);
    /// let refused = WorkStream::common([a, b]).unwrap_err();
    /// assert!(refused.to_string().starts_with("ValueError: the device arguments disagree"), "{refused}");
    /// ```
    pub fn common(streams: impl IntoIterator<Item = WorkStream>) -> PyResult<WorkStream> {
        let mut streams = streams.into_iter();
        let first = streams
            .next()
            .ok_or_else(|| PyValueError::new_err("no device argument to take a stream from"))?;
        for other in streams {
            if other.device != first.device || other.handle != first.handle {
                return Err(PyValueError::new_err(format!(
                    "the device arguments disagree on where the kernel must run: {first} and \
                     {other}; pass tensors of one device whose producers use one stream"
                )));
            }
        }
        Ok(first)
    }
}

impl fmt::Display for WorkStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.handle {
            Some(handle) => write!(
                f,
                "stream {handle:#x} on {} (from {})",
                self.device,
                self.source.name()
            ),
            None => write!(f, "no stream on {}", self.device),
        }
    }
}

impl fmt::Debug for WorkStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The work stream of `object` (whose type's cached information is `info`) for a tensor on
/// `device`, in the order of the [module docs](self).
pub(crate) fn work_stream_of(
    object: &Bound<'_, PyAny>,
    info: &TypeInfo,
    device: Device,
) -> PyResult<WorkStream> {
    if !has_streams(device) {
        return Ok(WorkStream::new(device, None, WorkStreamSource::NoStreams));
    }
    if let Some(current) = info
        .exchange_table
        .and_then(|table| table.current_work_stream)
    {
        let mut out: *mut c_void = std::ptr::null_mut();
        // SAFETY: the table's contract: a device type and id, an out pointer, the GIL held.
        let status = unsafe { current(device.device_type, device.device_id, &mut out) };
        if status != 0 {
            return Err(PyErr::take(object.py()).unwrap_or_else(|| {
                PyBufferError::new_err(format!(
                    "current_work_stream({}, {}) failed ({status}) without an error",
                    device.device_type.0, device.device_id
                ))
            }));
        }
        return Ok(WorkStream::new(
            device,
            Some(out as usize),
            WorkStreamSource::ExchangeTable,
        ));
    }
    let py = object.py();
    match info.module_root.as_deref().unwrap_or_default() {
        "torch" => {
            let stream = py
                .import(intern!(py, "torch"))?
                .getattr(intern!(py, "cuda"))?
                .call_method1(intern!(py, "current_stream"), (device.device_id,))?;
            let handle: usize = stream.getattr(intern!(py, "cuda_stream"))?.extract()?;
            Ok(WorkStream::new(
                device,
                Some(handle),
                WorkStreamSource::TorchCurrentStream,
            ))
        }
        "cupy" => {
            let stream = py
                .import(intern!(py, "cupy"))?
                .getattr(intern!(py, "cuda"))?
                .call_method1(intern!(py, "get_current_stream"), (device.device_id,))?;
            let handle: usize = stream.getattr(intern!(py, "ptr"))?.extract()?;
            Ok(WorkStream::new(
                device,
                Some(handle),
                WorkStreamSource::CupyCurrentStream,
            ))
        }
        _ => Ok(WorkStream::new(
            device,
            Some(0),
            WorkStreamSource::LegacyDefault,
        )),
    }
}
