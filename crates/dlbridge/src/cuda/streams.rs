//! Stream ordering and host copies of CUDA tensors, with the driver loaded at run time: what a
//! DLPack producer owes a consumer on another stream ([`wait_for_stream`]: an event recorded
//! where the data is ready, waited on by the consumer's stream, never a host synchronisation)
//! and what `__dlpack__(dl_device=(1, 0))` gives for a CUDA tensor ([`copy_to_host`]: a
//! device-to-host copy on the stream the data is ready on).
//!
//! Streams are handles as DLPack passes them, integers: `0` and `1` are CUDA's legacy default
//! stream (`__dlpack__` says `1`, the driver `NULL` or `CU_STREAM_LEGACY`), `2` its per-thread
//! default stream, anything else a `CUstream`. Work is enqueued in the device's primary
//! context, the one PyTorch, CuPy and JAX use; the calling thread's current context is
//! restored afterwards.
//!
//! What they do during a CUDA graph capture: [the module docs](crate::cuda#cuda-graphs).

use std::ffi::{c_uint, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, OnceLock};

use cudarc::driver::sys;

use crate::device::{Device, DeviceType};
use crate::error::{Error, Result};
use crate::export::Export;
use crate::managed::ManagedTensor;
use crate::view::TensorView;
use crate::xla::ResultBuffer;

/// What [`wait_for_stream`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamOrder {
    /// The consumer's stream is the one the data is ready on: work there is already ordered.
    SameStream,
    /// The stream the data is ready on had no work left: nothing to wait for.
    AlreadyReady,
    /// An event was recorded on the data's stream and the consumer's stream waits on it.
    Waited,
}

/// Whether `stream` is CUDA's legacy default stream (`0`, `NULL`, or `1`, `CU_STREAM_LEGACY`).
#[inline]
pub fn is_legacy_default_stream(stream: usize) -> bool {
    stream <= 1
}

/// Whether two stream handles name the same stream (both forms of the legacy default stream
/// are one).
#[inline]
pub fn same_stream(a: usize, b: usize) -> bool {
    a == b || (is_legacy_default_stream(a) && is_legacy_default_stream(b))
}

/// Makes `consumer`'s later work wait for what was enqueued on `ready` so far, on CUDA device
/// `device`, without a host synchronisation: an event recorded on `ready` and waited on by
/// `consumer` (nothing when the two are one stream, or when `ready` has finished its work).
///
/// Errors: [`Error::NoDriver`] where the CUDA driver cannot be loaded, [`Error::NotOnDevice`]
/// for a device that is not CUDA, [`Error::StreamCapture`] where the wait would break a CUDA
/// graph capture (see [CUDA graphs](crate::cuda#cuda-graphs)), [`Error::Driver`] for a failed call.
///
// The example is the program examples/wait_for_stream.rs, included as it is: `make gpu-kit`
// builds it and scripts/gpu-run.sh runs it on a GPU.
#[doc = concat!("```no_run\n", include_str!("../../examples/wait_for_stream.rs"), "```")]
///
/// # Safety
///
/// `ready` and `consumer` must be streams of `device` that live until the call returns (`0`,
/// `1` and `2` always are).
pub unsafe fn wait_for_stream(
    device: Device,
    ready: usize,
    consumer: usize,
) -> Result<StreamOrder> {
    if same_stream(ready, consumer) {
        return Ok(StreamOrder::SameStream);
    }
    let ordinal = cuda_ordinal(device)?;
    with_primary_context(ordinal, "making a stream wait for another", || {
        let capturing = capture_state(consumer)?;
        let ready_capturing = capture_state(ready)?;
        match (capturing, ready_capturing) {
            // The legacy default stream cannot be touched while any stream captures.
            (Capture::LegacyUnusable, _) | (_, Capture::LegacyUnusable) => {
                return Err(Error::StreamCapture {
                    ready,
                    consumer: Some(consumer),
                });
            }
            // A capturing consumer cannot wait on work enqueued outside its capture: fine
            // if that work is done, refused otherwise.
            (Capture::Active, Capture::None) => {
                // SAFETY: `ready` is a live stream of the current context (the caller's
                // contract); a query enqueues nothing. Relaxed: a query of a stream outside
                // the capture must not count as an unsafe call that invalidates it.
                let status =
                    with_relaxed_capture_mode(|| unsafe { sys::cuStreamQuery(as_stream(ready)) })?;
                return match status {
                    sys::CUresult::CUDA_SUCCESS => Ok(StreamOrder::AlreadyReady),
                    sys::CUresult::CUDA_ERROR_NOT_READY => Err(Error::StreamCapture {
                        ready,
                        consumer: Some(consumer),
                    }),
                    other => Err(driver_error("cuStreamQuery", other)),
                };
            }
            _ => {}
        }
        let mut event: sys::CUevent = std::ptr::null_mut();
        let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as c_uint;
        // SAFETY: an out pointer for the event, in the primary context made current above.
        check("cuEventCreate", unsafe {
            sys::cuEventCreate(&mut event, flags)
        })?;
        // SAFETY: `event` was just created; the streams are live (the caller's contract).
        let recorded = check("cuEventRecord", unsafe {
            sys::cuEventRecord(event, as_stream(ready))
        })
        .and_then(|()| {
            // SAFETY: as above; flags 0 is the default wait.
            check("cuStreamWaitEvent", unsafe {
                sys::cuStreamWaitEvent(as_stream(consumer), event, 0)
            })
        });
        // Destroying an event whose record or wait is pending is allowed: the driver frees
        // it once the work completes.
        // SAFETY: `event` is ours and used no more.
        let destroyed = check("cuEventDestroy", unsafe { sys::cuEventDestroy_v2(event) });
        recorded.and(destroyed).map(|()| StreamOrder::Waited)
    })
}

/// A compact row-major copy, in host memory, of a CUDA tensor whose data is ready on
/// `stream`: the bytes its layout reaches are copied device-to-host on `stream` (so after the
/// work enqueued there, and no other), that stream alone is synchronised, and the elements are
/// gathered in row-major order. The copy is a CPU tensor flagged IS_COPIED, 64-byte aligned,
/// as [`TensorView::to_compact_copy`] makes for host memory.
///
/// Errors: those of [`wait_for_stream`], [`Error::StreamCapture`] where `stream` is capturing
/// a CUDA graph (a host copy needs a host synchronisation), and [`Error::NotContiguous`] for a
/// strided tensor of a sub-byte type.
///
// The example is the program examples/copy_to_host.rs, included as it is: `make gpu-kit`
// builds it and scripts/gpu-run.sh runs it on a GPU.
#[doc = concat!("```no_run\n", include_str!("../../examples/copy_to_host.rs"), "```")]
///
/// # Safety
///
/// `view` must describe live device memory of its CUDA device (a validated import's or
/// export's), and `stream` must be a live stream of that device (`0`, `1` and `2` always are).
pub unsafe fn copy_to_host(view: &TensorView<'_>, stream: usize) -> Result<ManagedTensor> {
    let device = view.device();
    let ordinal = cuda_ordinal(device)?;
    let size = view.dtype().size_in_bytes();
    let compact = view.is_c_contiguous();
    if size.is_none() && !compact {
        return Err(Error::NotContiguous {
            order: "C",
            shape: view.shape().to_vec(),
            strides: view.strides().to_vec(),
        });
    }
    // The bytes the layout reaches, from its lowest element.
    let (low, bytes) = match size {
        _ if view.num_elements() == 0 => (0, 0),
        Some(size) => {
            let dims = view
                .shape()
                .iter()
                .copied()
                .zip(view.strides().iter().copied());
            let (low, high) = crate::layout::offsets_reached(dims)?;
            (low * size as i64, ((high - low + 1) as u64) * size as u64)
        }
        None => (0, view.compact_byte_size()),
    };
    let mut span = crate::export::zeroed_storage(bytes as usize)?;
    if bytes > 0 {
        with_primary_context(ordinal, "a host copy of a CUDA tensor", || {
            match capture_state(stream)? {
                Capture::None => {}
                Capture::Active | Capture::LegacyUnusable => {
                    return Err(Error::StreamCapture {
                        ready: stream,
                        consumer: None,
                    });
                }
            }
            // The device address of the lowest element: an integer, never dereferenced here.
            let source = (view.data_ptr() as usize as i64 + low) as u64;
            // Relaxed: the copy and the synchronisation are of a stream outside any capture
            // another stream may be making, which they must not invalidate.
            with_relaxed_capture_mode(|| {
                // SAFETY: `span` holds `bytes` bytes; the source range is the memory the
                // layout reaches, live on the device (the caller's contract); the stream is
                // live.
                check("cuMemcpyDtoHAsync", unsafe {
                    sys::cuMemcpyDtoHAsync_v2(
                        span.as_mut_ptr().cast::<c_void>(),
                        source,
                        bytes as usize,
                        as_stream(stream),
                    )
                })?;
                // SAFETY: a live stream; waits for the copy (and what came before it) alone.
                check("cuStreamSynchronize", unsafe {
                    sys::cuStreamSynchronize(as_stream(stream))
                })
            })?
        })?;
    }
    let shape: Vec<usize> = view.shape().iter().map(|&extent| extent as usize).collect();
    let strides = view.strides();
    // The element at index zero sits `-low` bytes into the span.
    let first = span
        .as_mut_ptr()
        .cast::<u8>()
        .wrapping_offset(-low as isize);
    let flags_padded = view.flags().is_subbyte_type_padded();
    // SAFETY: `span` holds every byte the layout reaches from `first` (computed above), and
    // moves into the export with its heap memory unchanged.
    let host =
        unsafe { Export::from_raw_parts(span, first.cast(), view.dtype(), Device::CPU, &shape) }
            .strides(strides)
            .subbyte_padded(flags_padded)
            .is_copied(true)
            .into_versioned()?;
    if compact {
        Ok(host)
    } else {
        host.view().to_compact_copy()
    }
}

/// Fills `result`, an XLA result buffer in CUDA device memory, with a copy of `source` (of its
/// data type and shape, compact, on its device), enqueued on `stream` (nothing waits for it):
/// how a device handler starts the result of an argument it updates in place, since XLA gives
/// each its own buffer. An error for another data type, shape, device or a strided `source`
/// ([`Error::InvalidArgument`], naming both), or from the driver.
///
/// # Safety
///
/// `source` describes live memory of the result's device that stays unchanged until the copy
/// has run on `stream`, a live stream of that device (a call's own:
/// [`Call::stream`](crate::xla::Call::stream)).
pub unsafe fn copy_into_result(
    result: &mut ResultBuffer<'_>,
    source: &TensorView<'_>,
    stream: usize,
) -> Result<()> {
    let target = result.view;
    let fits = source.dtype() == target.dtype()
        && source.shape() == target.shape()
        && source.device() == target.device()
        && source.is_c_contiguous();
    if !fits {
        return Err(Error::InvalidArgument {
            operation: "copy_into_result",
            argument: "source",
            value: format!(
                "{} shape {:?} on {}",
                source.dtype(),
                source.shape(),
                source.device()
            ),
            reason: format!(
                "the result is {} shape {:?} on {}, compact",
                target.dtype(),
                target.shape(),
                target.device()
            ),
        });
    }
    let bytes = usize::try_from(target.compact_byte_size()).unwrap_or(usize::MAX);
    // SAFETY: both are compact buffers of `bytes` bytes on one CUDA device: the result is
    // XLA's, which `handle` checked no other buffer reaches (`&mut` its only access); the
    // source live and unchanged, and the stream live (the caller's contract).
    unsafe {
        copy_device_bytes(
            target.device(),
            target.data_ptr() as usize as u64,
            source.data_ptr() as usize as u64,
            bytes,
            stream,
        )
    }
}

/// Copies `bytes` bytes from the device address `source` to `destination`, both on CUDA device
/// `device`, enqueued on `stream` (nothing waits for it), in the device's primary context.
///
/// # Safety
///
/// `source` and `destination` address `bytes` bytes each of memory of `device` that do not
/// overlap, live until the copy has run on `stream`, which is a live stream of `device`.
unsafe fn copy_device_bytes(
    device: Device,
    destination: u64,
    source: u64,
    bytes: usize,
    stream: usize,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let ordinal = cuda_ordinal(device)?;
    with_primary_context(ordinal, "a device-to-device copy", || {
        // SAFETY: the caller's contract: both ranges live on this device, apart, and the
        // stream live.
        check("cuMemcpyDtoDAsync", unsafe {
            sys::cuMemcpyDtoDAsync_v2(destination, source, bytes, as_stream(stream))
        })
    })
}

/// The ordinal of a CUDA device, or the error for another device.
fn cuda_ordinal(device: Device) -> Result<i32> {
    if device.device_type == DeviceType::CUDA {
        Ok(device.device_id)
    } else {
        Err(Error::NotOnDevice {
            expected: Device::new(DeviceType::CUDA, device.device_id),
            actual: device,
        })
    }
}

/// A stream handle as the driver takes it. Device handles are opaque integers to the host,
/// never dereferenced here: they carry no provenance.
fn as_stream(stream: usize) -> sys::CUstream {
    std::ptr::without_provenance_mut(stream)
}

/// The capture state of a stream, as it matters here.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Capture {
    /// Not capturing.
    None,
    /// Capturing a graph (or a capture that was invalidated).
    Active,
    /// The legacy default stream, while some stream captures: touching it would break that
    /// capture.
    LegacyUnusable,
}

/// Asks the driver whether `stream` is capturing; for the legacy default stream, whether any
/// blocking stream captures (the driver answers `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`).
fn capture_state(stream: usize) -> Result<Capture> {
    let handle = if is_legacy_default_stream(stream) {
        // `CU_STREAM_LEGACY`, whatever the handle said.
        as_stream(1)
    } else {
        as_stream(stream)
    };
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: a live stream (the callers' contract), an out pointer; a query enqueues nothing.
    match unsafe { sys::cuStreamIsCapturing(handle, &mut status) } {
        sys::CUresult::CUDA_SUCCESS => Ok(
            if status == sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
                Capture::None
            } else {
                Capture::Active
            },
        ),
        sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT => Ok(Capture::LegacyUnusable),
        other => Err(driver_error("cuStreamIsCapturing", other)),
    }
}

/// Runs `body` with the calling thread's stream capture mode relaxed, and restores the mode
/// after: calls on streams outside a capture (a query, a copy and its synchronisation) then do
/// not count as unsafe calls that invalidate a capture another stream is making in the global
/// mode (PyTorch's default), as the driver's documentation advises for such calls.
fn with_relaxed_capture_mode<R>(body: impl FnOnce() -> R) -> Result<R> {
    let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: an in-out pointer to a mode; swaps this thread's mode, nothing else.
    check("cuThreadExchangeStreamCaptureMode", unsafe {
        sys::cuThreadExchangeStreamCaptureMode(&mut mode)
    })?;
    let result = body();
    // SAFETY: as above; `mode` now holds the thread's previous mode, put back.
    check("cuThreadExchangeStreamCaptureMode", unsafe {
        sys::cuThreadExchangeStreamCaptureMode(&mut mode)
    })?;
    Ok(result)
}

fn driver_error(call: &'static str, status: sys::CUresult) -> Error {
    Error::Driver {
        call,
        status: Some(status as i32),
    }
}

fn check(call: &'static str, status: sys::CUresult) -> Result<()> {
    match status {
        sys::CUresult::CUDA_SUCCESS => Ok(()),
        other => Err(driver_error(call, other)),
    }
}

/// Whether the driver was found (once per process; [`super::driver_available`]).
fn driver_loaded() -> bool {
    static LOADED: OnceLock<bool> = OnceLock::new();
    *LOADED.get_or_init(super::driver::driver_available)
}

/// The retained primary context of each device ordinal used so far, as integers (contexts
/// are never released: the frameworks keep them for the process's life too).
static PRIMARY_CONTEXTS: Mutex<Vec<(i32, usize)>> = Mutex::new(Vec::new());

/// Runs `body` with the primary context of device `ordinal` current on this thread, restoring
/// the thread's context afterwards. A panic in cudarc (a symbol missing from an old driver) is
/// an [`Error::Driver`], never an unwind.
fn with_primary_context<R>(
    ordinal: i32,
    operation: &'static str,
    body: impl FnOnce() -> Result<R>,
) -> Result<R> {
    if !driver_loaded() {
        return Err(Error::NoDriver { operation });
    }
    catch_unwind(AssertUnwindSafe(|| {
        let context = primary_context(ordinal)?;
        // SAFETY: a retained primary context, never released.
        check("cuCtxPushCurrent", unsafe {
            sys::cuCtxPushCurrent_v2(std::ptr::with_exposed_provenance_mut::<sys::CUctx_st>(
                context,
            ))
        })?;
        let result = body();
        let mut popped: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: pops the context pushed above.
        let restored = check("cuCtxPopCurrent", unsafe {
            sys::cuCtxPopCurrent_v2(&mut popped)
        });
        result.and_then(|value| restored.map(|()| value))
    }))
    .unwrap_or(Err(Error::Driver {
        call: "a CUDA driver call (cudarc panicked: a symbol missing from this driver?)",
        status: None,
    }))
}

/// The primary context of device `ordinal`, retained once per process.
fn primary_context(ordinal: i32) -> Result<usize> {
    let mut contexts = PRIMARY_CONTEXTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(&(_, context)) = contexts.iter().find(|(known, _)| *known == ordinal) {
        return Ok(context);
    }
    let mut device: sys::CUdevice = 0;
    // SAFETY: an out pointer; an ordinal the driver checks.
    check("cuDeviceGet", unsafe {
        sys::cuDeviceGet(&mut device, ordinal)
    })?;
    let mut context: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: an out pointer for a device the driver returned.
    check("cuDevicePrimaryCtxRetain", unsafe {
        sys::cuDevicePrimaryCtxRetain(&mut context, device)
    })?;
    let context = context.expose_provenance();
    contexts.push((ordinal, context));
    Ok(context)
}
