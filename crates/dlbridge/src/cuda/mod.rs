//! cudarc device buffers as DLPack tensors, and CUDA tensors as cudarc views (feature
//! `cudarc`).
//!
//! Export: [`export_slice`] makes a [`CudaSlice<T>`] a tensor on
//! `(kDLCUDA, ordinal)`; the slice (and with it its stream and context) lives in the tensor and
//! is freed by the tensor's deleter, on whatever thread the consumer calls it, with the slice's
//! context made current there first.
//!
//! View: [`CudaViewExt::cuda_slice`] and [`CudaTensorExt::cuda_slice_mut`] see the memory of a
//! validated CUDA tensor as a [`CudaTensorSlice`], a cudarc buffer that dlbridge never frees
//! (it is made with [`CudaStream::upgrade_device_ptr`] and given back with
//! [`CudaSlice::leak`] when the view ends), from which cudarc's [`CudaView`] and
//! [`CudaViewMut`] are borrowed for kernel launches and copies. cudarc's views are
//! one-dimensional and contiguous, so a tensor is refused unless it is row-major compact (an
//! empty tensor and dimensions of extent 1 with any stride are compact).
//!
//! The checks, all before any driver call, are [`cuda_slice_parts`]: device type CUDA
//! ([`Error::NotOnDevice`]), the stream's device ordinal ([`Error::NotOnDevice`] naming both
//! devices), the element type ([`Error::DataTypeMismatch`]), row-major compactness
//! ([`Error::NotContiguous`]) and alignment ([`Error::Misaligned`]).
//!
//! # Streams
//!
//! DLPack tensors carry no stream. An exported slice's data is ready on the slice's own stream
//! ([`CudaSlice::stream`]): before a consumer on another stream reads it, make that stream
//! wait on an event recorded there (or synchronise the slice's stream). A viewed tensor's data
//! is ready on the stream the producer was asked for in `__dlpack__(stream=...)`; launch on
//! that stream (the stream given to [`CudaViewExt::cuda_slice`] is the one cudarc records its
//! read and write events on).
//!
//! Across streams: [`wait_for_stream`] makes a consumer's stream wait for the stream a
//! tensor's data is ready on ([`ManagedTensor::ready_stream`]) with an event, never a host
//! synchronisation, and [`copy_to_host`] copies a CUDA tensor to host memory on that stream;
//! neither breaks a CUDA graph capture in progress (they refuse instead).
//!
//! # CUDA graphs
//!
//! Nothing here breaks a stream capture in progress: before any call that would touch the
//! legacy default stream, wait on work from outside a capture, or synchronise a capturing
//! stream, the capture state is asked, and such an operation is refused with
//! [`Error::StreamCapture`] instead. Work enqueued outside a capture that has already finished
//! needs no wait, so a tensor imported before a capture can still be handed to a capturing
//! consumer. The calls made on streams outside a capture (a query, a host copy and its
//! synchronisation) run with the thread's capture mode relaxed, so that they do not invalidate
//! a capture in the global mode (PyTorch's default) that the caller's thread is making.
//!
//! # Without a driver
//!
//! Building needs no CUDA: cudarc loads `libcuda` at run time and **panics** where it cannot.
//! Nothing in this module loads the driver unasked: the slice functions take a [`CudaStream`],
//! which exists only once the driver is loaded, and [`wait_for_stream`] and [`copy_to_host`]
//! ask [`driver_available`] first ([`Error::NoDriver`] without one). Call [`driver_available`]
//! before the first `CudaContext::new` of a program that may run without a GPU.

mod driver;
mod streams;

pub use driver::driver_available;
pub use streams::{
    StreamOrder, copy_into_result, copy_to_host, is_legacy_default_stream, same_stream,
    wait_for_stream,
};

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr};

use crate::device::{Device, DeviceType};
use crate::element::Element;
use crate::elements::check_element_size;
use crate::error::{Error, Result};
use crate::export::Export;
use crate::managed::ManagedTensor;
use crate::view::TensorView;

/// The device pointer and element count of a tensor that a cudarc view of `T` on device
/// `ordinal` may cover: the checks of [`CudaViewExt::cuda_slice`], without touching the driver
/// or the memory.
///
/// ```
/// use dlbridge::{DataType, Device, DeviceType, Error, Export};
/// let cuda0 = Device::new(DeviceType::CUDA, 0);
/// // A CUDA-typed descriptor over an address nothing dereferences.
/// // SAFETY: the memory is never read: only the descriptor is checked.
/// let tensor = unsafe {
///     Export::from_raw_parts((), std::ptr::without_provenance_mut(0x1000), DataType::FLOAT32,
/// cuda0, &[2, 3])
/// }
/// .into_versioned()?;
/// assert_eq!(dlbridge::cuda::cuda_slice_parts::<f32>(&tensor.view(), 0)?, (0x1000, 6));
/// assert!(matches!(
///     dlbridge::cuda::cuda_slice_parts::<f32>(&tensor.view(), 1),
///     Err(Error::NotOnDevice { .. })
/// ));
/// # Ok::<(), Error>(())
/// ```
pub fn cuda_slice_parts<T: Element>(view: &TensorView<'_>, ordinal: usize) -> Result<(u64, usize)> {
    let wanted = Device::new(DeviceType::CUDA, ordinal.try_into().unwrap_or(i32::MAX));
    let device = view.device();
    if device != wanted {
        return Err(Error::NotOnDevice {
            expected: wanted,
            actual: device,
        });
    }
    if view.dtype() != T::DTYPE {
        return Err(Error::DataTypeMismatch {
            requested: T::DTYPE,
            actual: view.dtype(),
        });
    }
    check_element_size::<T>()?;
    let elements = view.num_elements();
    if !view.is_c_contiguous() {
        return Err(Error::NotContiguous {
            order: "C",
            shape: view.shape().to_vec(),
            strides: view.strides().to_vec(),
        });
    }
    if elements == 0 {
        // An empty tensor may have NULL data; cudarc's empty buffers have address 0 too.
        return Ok((0, 0));
    }
    let address = view.data_ptr() as usize;
    if address % std::mem::align_of::<T>() != 0 {
        return Err(Error::Misaligned {
            address,
            align: std::mem::align_of::<T>(),
        });
    }
    // `num_elements` of a validated tensor fits the address space: its bytes do (V5).
    Ok((address as u64, elements as usize))
}

/// A CUDA tensor's memory as a cudarc buffer that dlbridge never frees: made by
/// [`CudaViewExt::cuda_slice`] and [`CudaTensorExt::cuda_slice_mut`], it borrows the tensor for
/// `'t` and gives the memory back to its owner (cudarc's [`CudaSlice::leak`]) when dropped.
///
/// Borrow cudarc's [`CudaView`] with [`CudaTensorSlice::as_view`] (and [`CudaViewMut`] with
/// [`CudaTensorSlice::as_view_mut`] for a writable one) to launch kernels or copy.
pub struct CudaTensorSlice<'t, T> {
    slice: ManuallyDrop<CudaSlice<T>>,
    writable: bool,
    _tensor: PhantomData<&'t ()>,
}

impl<T> CudaTensorSlice<'_, T> {
    /// The tensor's elements as a cudarc view.
    pub fn as_view(&self) -> CudaView<'_, T> {
        self.slice.as_view()
    }

    /// The tensor's elements as a mutable cudarc view: only for a slice made by
    /// [`CudaTensorExt::cuda_slice_mut`] (from a writable tensor), [`Error::ReadOnly`]
    /// otherwise.
    pub fn as_view_mut(&mut self) -> Result<CudaViewMut<'_, T>> {
        if !self.writable {
            return Err(Error::ReadOnly {
                flags: crate::flags::Flags::READ_ONLY,
            });
        }
        Ok(self.slice.as_view_mut())
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.slice.len()
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.slice.is_empty()
    }

    /// The stream cudarc records this buffer's reads and writes on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        self.slice.stream()
    }
}

impl<T> Drop for CudaTensorSlice<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the slice is taken once, here, and never used again.
        let slice = unsafe { ManuallyDrop::take(&mut self.slice) };
        // The memory belongs to the tensor's producer: cudarc forgets it without freeing.
        let _address = slice.leak();
    }
}

/// Wraps `parts` (from [`cuda_slice_parts`]) as a cudarc buffer on `stream`.
///
/// # Safety
///
/// `parts` must address `len` elements of device memory that stay allocated for `'t`.
unsafe fn upgrade<'t, T>(
    stream: &Arc<CudaStream>,
    (address, len): (u64, usize),
    writable: bool,
) -> Result<CudaTensorSlice<'t, T>> {
    // cudarc unwraps the creation of its read and write events: a failure is an error here.
    let upgraded = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: forwarded from the caller; the slice is never freed (see `Drop`).
        unsafe { stream.upgrade_device_ptr::<T>(address, len) }
    }));
    match upgraded {
        Ok(slice) => Ok(CudaTensorSlice {
            slice: ManuallyDrop::new(slice),
            writable,
            _tensor: PhantomData,
        }),
        Err(_) => Err(Error::Driver {
            call: "cuEventCreate (cudarc's CudaStream::upgrade_device_ptr)",
            status: None,
        }),
    }
}

/// The cudarc buffers over a CUDA [`TensorView`]: `use dlbridge::cuda::CudaViewExt;` and call it on
/// any view.
///
/// The bridge's entry points for the feature `cudarc`; the trait is sealed (implemented for this
/// crate's types only), so methods can be added to it without breaking anyone.
pub trait CudaViewExt<'a>: crate::sealed::Sealed {
    /// The tensor's memory as a read-only cudarc buffer on `stream`'s device, without a copy
    /// (feature `cudarc`).
    ///
    /// Refuses a tensor that is not on `(CUDA, stream's ordinal)` ([`Error::NotOnDevice`]),
    /// whose data type is not `T`'s ([`Error::DataTypeMismatch`]), that is not row-major
    /// compact ([`Error::NotContiguous`]) or misaligned ([`Error::Misaligned`]). The memory is
    /// never freed by dlbridge or cudarc: the tensor's owner keeps it.
    ///
    // The example is the program examples/cuda_slice.rs, included as it is: `make gpu-kit`
    // builds it and scripts/gpu-run.sh runs it on a GPU.
    #[doc = concat!("```no_run\n", include_str!("../../examples/cuda_slice.rs"), "```")]
    fn cuda_slice<T: Element>(&self, stream: &Arc<CudaStream>) -> Result<CudaTensorSlice<'a, T>>;
}

impl<'a> CudaViewExt<'a> for TensorView<'a> {
    fn cuda_slice<T: Element>(&self, stream: &Arc<CudaStream>) -> Result<CudaTensorSlice<'a, T>> {
        let parts = cuda_slice_parts::<T>(self, stream.context().ordinal())?;
        // SAFETY: a validated CUDA tensor's compact elements are device memory its owner keeps
        // allocated while the view's borrow (`'a`) lasts.
        unsafe { upgrade(stream, parts, false) }
    }
}

/// The cudarc buffers over a CUDA [`ManagedTensor`], writable: `use
/// dlbridge::cuda::CudaTensorExt;`.
///
/// The bridge's entry points for the feature `cudarc`; the trait is sealed (implemented for this
/// crate's types only), so methods can be added to it without breaking anyone.
pub trait CudaTensorExt: crate::sealed::Sealed {
    /// The tensor's memory as a writable cudarc buffer on `stream`'s device, without a copy
    /// (feature `cudarc`): the checks of [`CudaViewExt::cuda_slice`], and a read-only tensor
    /// ([`Error::ReadOnly`]), a legacy one ([`Error::WritabilityUnknown`]) or a share another
    /// handle can still read ([`Error::SharedMemory`]) is refused.
    ///
    // The example is the program examples/cuda_slice_mut.rs, included as it is: `make gpu-kit`
    // builds it and scripts/gpu-run.sh runs it on a GPU.
    #[doc = concat!("```no_run\n", include_str!("../../examples/cuda_slice_mut.rs"), "```")]
    fn cuda_slice_mut<T: Element>(
        &mut self,
        stream: &Arc<CudaStream>,
    ) -> Result<CudaTensorSlice<'_, T>>;
}

impl CudaTensorExt for ManagedTensor {
    fn cuda_slice_mut<T: Element>(
        &mut self,
        stream: &Arc<CudaStream>,
    ) -> Result<CudaTensorSlice<'_, T>> {
        let view = self.view_for_writing()?;
        let parts = cuda_slice_parts::<T>(&view, stream.context().ordinal())?;
        // SAFETY: as in `CudaViewExt::cuda_slice`; `&mut self` makes the access exclusive.
        unsafe { upgrade(stream, parts, true) }
    }
}

/// The owner of [`export_slice`]'s exports: the exported [`CudaSlice`], kept alive
/// by the tensor; dropping it (the tensor's deleter) frees the memory with the slice's context
/// made current on the deleter's thread.
pub struct CudaSliceOwner<T>(CudaSlice<T>);

impl<T> Drop for CudaSliceOwner<T> {
    fn drop(&mut self) {
        // The consumer may call the deleter on a thread where no context is current; cudarc
        // records (and never panics on) a failure of either call.
        let context = self.0.context();
        context.record_err(context.bind_to_thread());
    }
}

/// Exports a cudarc device buffer as a tensor on `(kDLCUDA, its ordinal)` with a shape
/// (compact row-major unless [`Export::strides`] says otherwise), without a copy (feature
/// `cudarc`). The slice, its stream and its context live in the tensor; its deleter frees
/// the memory on the slice's stream.
///
/// The shape must cover exactly the slice's elements (with strides, every element reached
/// must lie in it). The data is ready on [`CudaSlice::stream`]: a consumer on another
/// stream must wait for it (see the [module docs](crate::cuda#streams)).
///
// The example is the program examples/export_cuda_slice.rs, included as it is: `make gpu-kit`
// builds it and scripts/gpu-run.sh runs it on a GPU.
#[doc = concat!("```no_run\n", include_str!("../../examples/export_cuda_slice.rs"), "```")]
pub fn export_slice<T: Element>(
    slice: CudaSlice<T>,
    shape: &[usize],
) -> Export<'_, CudaSliceOwner<T>> {
    let ordinal = slice.ordinal();
    let len = slice.len();
    let address = {
        // Records a read on the slice's own stream (cudarc's bookkeeping); nothing waits.
        let (address, _read) = slice.device_ptr(slice.stream());
        address
    };
    let device = Device::new(DeviceType::CUDA, ordinal.try_into().unwrap_or(i32::MAX));
    // The handle as an integer (device streams are not memory the host reads).
    let stream_handle = slice.stream().cu_stream() as usize;
    let owner = CudaSliceOwner(slice);
    // SAFETY: the slice, moved into the owner, holds `len` elements of `T` at `address` on
    // the CUDA device `ordinal` until it is dropped; the length bounds the layout.
    let export = unsafe {
        Export::from_raw_parts(
            owner,
            // A device address: the host never dereferences it (no provenance).
            std::ptr::without_provenance_mut::<std::ffi::c_void>(address as usize),
            T::DTYPE,
            device,
            shape,
        )
        .with_buffer_len(len)
    };
    // SAFETY: the slice's stream (an `Arc` in the slice) lives in the owner, and so as long
    // as the tensor and its shares, which hold the owner.
    unsafe { export.ready_stream(Some(stream_handle)) }
}
