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

use dlbridge::{Device, DeviceType};
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;

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
/// use dlbridge_pyo3::{WorkStream, WorkStreamSource};
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
    /// use dlbridge_pyo3::{WorkStream, WorkStreamSource};
    /// use dlbridge_pyo3::dlbridge::{Device, DeviceType};
    /// # pyo3::Python::initialize();
    ///
    /// let cuda0 = Device::new(DeviceType::CUDA, 0);
    /// let a = WorkStream::new(cuda0, Some(7), WorkStreamSource::ExchangeTable);
    /// let b = WorkStream::new(cuda0, Some(9), WorkStreamSource::CupyCurrentStream);
    /// assert_eq!(WorkStream::common([a, a]).unwrap(), a);
    /// assert!(WorkStream::common([a, b]).is_err());
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

/// The stream rules of a device type.
#[derive(Clone, Copy, PartialEq, Eq)]
enum StreamKind {
    Cuda,
    Rocm,
}

fn stream_kind(device: Device) -> Option<StreamKind> {
    match device.device_type {
        DeviceType::CUDA | DeviceType::CUDA_MANAGED => Some(StreamKind::Cuda),
        DeviceType::ROCM => Some(StreamKind::Rocm),
        _ => None,
    }
}

/// Whether tensors on `device` are ordered by streams (CUDA, CUDA managed, ROCm).
pub(crate) fn has_streams(device: Device) -> bool {
    stream_kind(device).is_some()
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
        .exchange
        .and_then(|api| api.table().current_work_stream)
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
    let module: String = object
        .get_type()
        .getattr(intern!(py, "__module__"))?
        .extract()
        .unwrap_or_default();
    match module.split('.').next().unwrap_or_default() {
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

/// The stream an import asks the producer to make its data ready on: the `stream=` of
/// `__dlpack__`, chosen by a Rust caller in [`ImportOptions`](crate::ImportOptions) (and by
/// `dlbridge.from_dlpack(x, stream=...)` in Python). The stream passed is where the imported
/// tensor's data is ready ([`dlbridge::ManagedTensor::ready_stream`]); a re-export to a
/// consumer on another stream makes that stream wait for it.
///
/// Only devices with streams (CUDA, CUDA managed, ROCm) are asked for one: for a tensor on
/// any other device (the CPU) nothing is passed, whatever the choice, as the standard allows
/// only `None` there.
///
/// A stream handle of one's own enters through the `unsafe` [`StreamHandle::new`] (dlbridge
/// records it and, with the feature `cuda`, hands it to the driver); the standard's special
/// values are the safe constants of [`StreamHandle`].
///
/// ```
/// use dlbridge_pyo3::{ConsumerStream, StreamHandle};
/// use dlbridge_pyo3::dlbridge::{Device, DeviceType};
/// # pyo3::Python::initialize();
/// let cuda0 = Device::new(DeviceType::CUDA, 0);
/// assert_eq!(ConsumerStream::default(), ConsumerStream::ProducerCurrent);
/// let legacy = ConsumerStream::Handle(StreamHandle::CUDA_LEGACY_DEFAULT);
/// assert_eq!(legacy.validate(cuda0).unwrap(), legacy);
/// // 0 is not a CUDA stream for DLPack: the standard forbids it (it is ROCm's default).
/// assert!(ConsumerStream::Handle(StreamHandle::ROCM_DEFAULT).validate(cuda0).is_err());
/// // SAFETY: -1 asks for no synchronisation and names no stream.
/// assert_eq!(unsafe { ConsumerStream::from_dlpack_value(-1) }.unwrap(), ConsumerStream::NoSync);
/// ```
///
/// A stream the caller created (its raw `CUstream`), kept alive as long as the imported
/// tensor:
///
/// ```no_run
/// # use dlbridge_pyo3::{ConsumerStream, ImportOptions, StreamHandle};
/// # fn import(x: &pyo3::Bound<'_, pyo3::PyAny>, raw: usize) -> pyo3::PyResult<()> {
/// // `raw`: the `CUstream` of a stream of the tensor's device, alive until `tensor` is dropped.
/// // SAFETY: the stream is of the tensor's device and outlives the tensor and its shares.
/// let stream = unsafe { StreamHandle::new(raw) };
/// let options = ImportOptions::default().with_stream(ConsumerStream::Handle(stream));
/// let tensor = dlbridge_pyo3::from_dlpack(x, &options)?;
/// # drop(tensor);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConsumerStream {
    /// The producer's current work stream on the tensor's device ([`WorkStream`]: its
    /// exchange table's `current_work_stream`, else PyTorch's or CuPy's current stream, else
    /// the legacy default stream). The producer then has nothing to synchronise (its current
    /// stream is the one asked for), a CUDA graph being captured on that stream stays intact,
    /// and work the caller enqueues there is ordered after the producer's. The default.
    #[default]
    ProducerCurrent,
    /// `stream=None`: the standard's default, CUDA's legacy default stream (ROCm's default
    /// stream): the producer makes that stream wait for its work.
    StandardDefault,
    /// `stream=-1`: no synchronisation at all; the caller orders its work after the
    /// producer's itself. The tensor's ready stream is then unknown.
    NoSync,
    /// A stream as the standard writes it: CUDA `1` (legacy default), `2` (per-thread
    /// default) or a `cudaStream_t` above 2; ROCm `0` (default) or a `hipStream_t` above 2.
    /// Made with the `unsafe` [`StreamHandle::new`], or one of [`StreamHandle`]'s constants.
    Handle(StreamHandle),
}

impl ConsumerStream {
    /// The choice a `stream=` integer of the protocol makes: `-1` is [`ConsumerStream::NoSync`],
    /// a value `>= 0` a [`ConsumerStream::Handle`]; anything else is a `ValueError`. For the
    /// `stream=` arguments Python code passes (`from_dlpack(x, stream=...)`,
    /// `__dlpack__(stream=...)`); Rust code names its stream with [`StreamHandle`].
    ///
    /// # Safety
    ///
    /// A `value` of `3` or more is taken for a stream handle as [`StreamHandle::new`] takes
    /// it, with its contract: a stream of the device of the tensor it is used for, alive as
    /// long as dlbridge may use it (for an import, as long as the imported tensor or a share
    /// of it can be exported). `-1` and the standard's special values `0`, `1` and `2` need no
    /// liveness. The DLPack protocol puts this on whoever passes the integer: the array API
    /// standard's `stream` argument of `__dlpack__` and `from_dlpack` is a live stream of the
    /// caller's, which no library can check (Python code can pass any int).
    pub unsafe fn from_dlpack_value(value: i64) -> PyResult<Self> {
        match value {
            -1 => Ok(ConsumerStream::NoSync),
            _ => usize::try_from(value)
                // SAFETY: the caller's contract, the same as `StreamHandle::new`'s.
                .map(|handle| ConsumerStream::Handle(unsafe { StreamHandle::new(handle) }))
                .map_err(|_| {
                    PyValueError::new_err(format!(
                        "stream={value} is not a DLPack stream: -1 (no synchronisation), or a \
                     stream handle >= 0"
                    ))
                }),
        }
    }

    /// This choice, checked against the rules of `device`'s streams: CUDA forbids `0`, ROCm
    /// `1` and `2` (`ValueError` naming the value and the device). For devices without
    /// streams every choice is valid (nothing is passed).
    pub fn validate(self, device: Device) -> PyResult<Self> {
        if let ConsumerStream::Handle(handle) = self {
            let handle = handle.get();
            let forbidden = match stream_kind(device) {
                Some(StreamKind::Cuda) => handle == 0,
                Some(StreamKind::Rocm) => handle == 1 || handle == 2,
                None => false,
            };
            if forbidden {
                return Err(PyValueError::new_err(format!(
                    "stream={handle} is not a valid DLPack stream for a tensor on {device}: \
                     CUDA takes 1 (legacy default), 2 (per-thread default) or a stream \
                     pointer; ROCm 0 (default) or a stream pointer; -1 means no \
                     synchronisation"
                )));
            }
        }
        Ok(self)
    }
}

/// A stream handle for [`ConsumerStream::Handle`]: a `cudaStream_t` / `hipStream_t` as an
/// integer, or one of the values the DLPack standard gives a meaning of its own, which are
/// read by the tensor's device type ([`ConsumerStream::validate`] refuses those that are not
/// streams of it: `0` on CUDA, `1` and `2` on ROCm).
///
/// dlbridge passes the handle to the producer's `__dlpack__(stream=...)`, records it as the
/// imported tensor's ready stream
/// ([`ManagedTensor::ready_stream`](dlbridge::ManagedTensor::ready_stream)) and, with the
/// feature `cuda`, hands it to the CUDA driver when the tensor is exported again. A handle of
/// one's own therefore enters through the `unsafe` [`StreamHandle::new`]; the standard's
/// special values, which name streams that live as long as the process, are the safe
/// constants.
///
/// ```
/// use dlbridge_pyo3::StreamHandle;
/// assert_eq!(StreamHandle::CUDA_LEGACY_DEFAULT.get(), 1);
/// assert_eq!(StreamHandle::CUDA_PER_THREAD_DEFAULT.get(), 2);
/// assert_eq!(StreamHandle::ROCM_DEFAULT.get(), 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamHandle(usize);

impl StreamHandle {
    /// CUDA's legacy default stream (`1`, `CU_STREAM_LEGACY` / `cudaStreamLegacy`): what the
    /// standard's `stream=None` means for a CUDA tensor.
    pub const CUDA_LEGACY_DEFAULT: StreamHandle = StreamHandle(1);

    /// CUDA's per-thread default stream (`2`, `CU_STREAM_PER_THREAD` /
    /// `cudaStreamPerThread`) of the thread that uses it.
    pub const CUDA_PER_THREAD_DEFAULT: StreamHandle = StreamHandle(2);

    /// ROCm's default stream (`0`, the NULL `hipStream_t`): what the standard's `stream=None`
    /// means for a ROCm tensor. Not a DLPack stream of a CUDA tensor.
    pub const ROCM_DEFAULT: StreamHandle = StreamHandle(0);

    /// The stream whose raw handle (`CUstream`, `cudaStream_t`, `hipStream_t` as an integer)
    /// is `handle`.
    ///
    /// # Safety
    ///
    /// `handle` must be one of the standard's special values (those of the constants), or a
    /// stream of the device of the tensor it is used for that stays alive as long as dlbridge
    /// may use it: passed to an import ([`ImportOptions::stream`](crate::ImportOptions::stream)),
    /// as long as the imported tensor or a share of it
    /// ([`ManagedTensor::share_versioned`](dlbridge::ManagedTensor::share_versioned)) can be
    /// exported, since it becomes the tensor's ready stream, on which a re-export records an
    /// event ([`ManagedTensor::set_ready_stream`](dlbridge::ManagedTensor::set_ready_stream)'s
    /// contract). A bogus or destroyed handle is undefined behaviour in the driver.
    #[inline]
    pub const unsafe fn new(handle: usize) -> Self {
        StreamHandle(handle)
    }

    /// The raw handle.
    #[inline]
    pub const fn get(self) -> usize {
        self.0
    }
}

/// The standard's default stream of a device with streams as a handle: CUDA's legacy default
/// stream (`1`, `CU_STREAM_LEGACY`), ROCm's default (`0`).
pub(crate) fn standard_default_stream(device: Device) -> usize {
    match stream_kind(device) {
        Some(StreamKind::Rocm) => 0,
        _ => 1,
    }
}
