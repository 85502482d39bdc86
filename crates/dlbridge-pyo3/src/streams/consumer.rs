//! The `stream=` argument of the DLPack protocol, as both sides read it: what a value means on
//! a device ([`ConsumerStream`], [`StreamHandle`]), which devices order their work by streams,
//! and the standard's default stream of each. The producer side answers `__dlpack__(stream=...)`
//! with it ([`crate::produce`]); the consumer side asks with it ([`crate::consume`], and
//! [`super::work`] for the producer's current stream). Nothing here calls a driver.

use dlbridge::{Device, DeviceType};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The stream rules of a device type.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamKind {
    Cuda,
    Rocm,
}

pub(crate) fn stream_kind(device: Device) -> Option<StreamKind> {
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
/// use dlbridge_pyo3::streams::{ConsumerStream, StreamHandle};
/// use dlbridge_pyo3::dlbridge::{Device, DeviceType};
/// # pyo3::Python::initialize();
/// let cuda0 = Device::new(DeviceType::CUDA, 0);
/// assert_eq!(ConsumerStream::default(), ConsumerStream::ProducerCurrent);
/// let legacy = ConsumerStream::Handle(StreamHandle::CUDA_LEGACY_DEFAULT);
/// assert_eq!(legacy.validate(cuda0).unwrap(), legacy);
/// // 0 is not a CUDA stream for DLPack: the standard forbids it (it is ROCm's default).
/// let refused = ConsumerStream::Handle(StreamHandle::ROCM_DEFAULT).validate(cuda0).unwrap_err();
/// assert!(refused.to_string().starts_with("ValueError: stream=0 is not a valid"), "{refused}");
/// // SAFETY: -1 asks for no synchronisation and names no stream.
/// assert_eq!(unsafe { ConsumerStream::from_dlpack_value(-1) }.unwrap(), ConsumerStream::NoSync);
/// ```
///
/// A stream the caller created (its raw `CUstream`, here a PyTorch stream's), kept alive as
/// long as the imported tensor:
///
// The example is the program examples/import_on_stream.rs, included here as it is: `make
// gpu-kit` builds it against the GPU machine's CPython and scripts/gpu-run.sh runs it there.
#[doc = concat!("```no_run\n", include_str!("../../examples/import_on_stream.rs"), "```")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConsumerStream {
    /// The producer's current work stream on the tensor's device ([`WorkStream`](crate::streams::WorkStream): its
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
/// use dlbridge_pyo3::streams::StreamHandle;
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
