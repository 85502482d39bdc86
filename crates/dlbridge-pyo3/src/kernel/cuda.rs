//! CUDA kernels: [`CudaArg`](crate::CudaArg) and [`CudaArgMut`](crate::CudaArgMut) parameters,
//! whose body gets [`CudaBuffer`](crate::kernel::CudaBuffer)s and
//! [`CudaBufferMut`](crate::kernel::CudaBufferMut)s (device addresses, shapes, strides, the device
//! and the stream to launch on) and enqueues its work without waiting for it, eagerly on the
//! caller's stream and inside XLA on the call's stream.

use std::marker::PhantomData;

use dlbridge::xla::HandlerError;
use dlbridge::{DataType, Device, Element, TensorView};
use ndarray::Dimension;

use super::parameter::KernelParameter;
use super::signature::{Parameter, Platform, Role};
use super::xla_buffers::{XlaBuffers, check_buffer, usize_extents};
use crate::args::constraints::{Constraints, Cuda, Dimensionality, placement};
use crate::args::device_arg::{CudaArg, CudaArgMut};
use crate::streams::WorkStream;

/// A read-only CUDA tensor as a kernel's body gets it: where its elements are on the device,
/// its shape and strides, and the stream the body launches its work on. The memory is never
/// read on the host; the body passes [`device_ptr`](Self::device_ptr) to a kernel launched on
/// [`stream`](Self::stream), and returns without waiting for it.
///
/// Eagerly the stream is the caller's framework's current stream on the tensor's device (as
/// [`CudaArg::stream`](crate::CudaArg::stream) finds it, one for every tensor of the call); inside
/// `jax.jit` it is XLA's stream for the call. Either way, work enqueued there runs after what
/// produced the arguments and before what reads the results.
pub struct CudaBuffer<'v, T: Element, D: Dimension> {
    address: u64,
    shape: D,
    strides: &'v [i64],
    device: Device,
    stream: usize,
    _element: PhantomData<fn() -> T>,
}

/// A writable CUDA tensor as a kernel's body gets it: a result, or a tensor updated in place
/// ([`CudaBuffer`](crate::kernel::CudaBuffer), and [`device_ptr_mut`](Self::device_ptr_mut)).
/// Inside `jax.jit` an argument updated in place is XLA's result buffer, which starts as a copy of
/// the argument (enqueued on the call's stream before the body's work).
pub struct CudaBufferMut<'v, T: Element, D: Dimension> {
    buffer: CudaBuffer<'v, T, D>,
}

impl<'v, T: Element, D: Dimension> CudaBuffer<'v, T, D> {
    fn new(
        address: u64,
        shape: impl ExactSizeIterator<Item = usize>,
        strides: &'v [i64],
        device: Device,
        stream: usize,
    ) -> Self {
        let mut dim = D::zeros(shape.len());
        for (extent, from) in dim.slice_mut().iter_mut().zip(shape) {
            *extent = from;
        }
        CudaBuffer {
            address,
            shape: dim,
            strides,
            device,
            stream,
            _element: PhantomData,
        }
    }

    /// The device address of the first element (never dereference it on the host).
    pub fn device_ptr(&self) -> u64 {
        self.address
    }

    /// The first element as a typed device pointer (never dereference it on the host).
    pub fn as_ptr(&self) -> *const T {
        std::ptr::with_exposed_provenance(self.address as usize)
    }

    /// The extents.
    pub fn shape(&self) -> &[usize] {
        self.shape.slice()
    }

    /// The extents, as ndarray's dimension of the parameter's type (`Ix2`: two of them).
    pub fn dim(&self) -> D {
        self.shape.clone()
    }

    /// The strides, in elements.
    pub fn strides(&self) -> &[i64] {
        self.strides
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.shape.size()
    }

    /// Whether there are no elements (a launch over them has nothing to do).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The CUDA device the memory is on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The stream to launch the body's work on: a `CUstream` (`cudaStream_t`), or 0 and 1 for
    /// the legacy default stream, 2 for the per-thread one.
    pub fn stream(&self) -> usize {
        self.stream
    }
}

impl<'v, T: Element, D: Dimension> CudaBufferMut<'v, T, D> {
    /// The device address of the first element, to write (never dereference it on the host).
    pub fn device_ptr_mut(&mut self) -> u64 {
        self.buffer.address
    }

    /// The first element as a typed device pointer, to write (never dereference it on the
    /// host).
    pub fn as_mut_ptr(&mut self) -> *mut T {
        std::ptr::with_exposed_provenance_mut(self.buffer.address as usize)
    }
}

impl<'v, T: Element, D: Dimension> std::ops::Deref for CudaBufferMut<'v, T, D> {
    type Target = CudaBuffer<'v, T, D>;

    fn deref(&self) -> &CudaBuffer<'v, T, D> {
        &self.buffer
    }
}

impl<T: Element, D: Dimension> std::fmt::Debug for CudaBuffer<'_, T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBuffer")
            .field("dtype", &T::DTYPE.to_string())
            .field("device_ptr", &format_args!("{:#x}", self.address))
            .field("shape", &self.shape())
            .field("strides", &self.strides)
            .field("device", &self.device)
            .field("stream", &format_args!("{:#x}", self.stream))
            .finish()
    }
}

impl<T: Element, D: Dimension> std::fmt::Debug for CudaBufferMut<'_, T, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.buffer.fmt(f)
    }
}

/// An XLA buffer of a CUDA call as the body's view, after checking it against the parameter's
/// type (data type, dimensions, `shape!`, layout, a CUDA device).
fn xla_buffer<'c, T: Element, D: Dimensionality, C: Constraints>(
    buffers: &XlaBuffers<'c, '_>,
    parameter: &Parameter,
    buffer: TensorView<'c>,
) -> Result<CudaBuffer<'c, T, D>, HandlerError> {
    check_buffer::<T, D, C>(buffers.name, parameter, &buffer, placement::<Cuda>())?;
    Ok(CudaBuffer::new(
        buffer.data_ptr().expose_provenance() as u64,
        usize_extents(&buffer),
        buffer.strides(),
        buffer.device(),
        buffers.stream,
    ))
}

impl<'a, T: Element, D: Dimensionality, C: Constraints> KernelParameter for CudaArg<'a, T, D, C> {
    const ROLE: Role = Role::Input;
    const DATA_TYPE: DataType = T::DTYPE;
    const NDIM: Option<usize> = D::NDIM;
    const PLATFORM: Option<Platform> = Some(Platform::Cuda);
    type View<'v> = CudaBuffer<'v, T, D>;

    fn shape(&self) -> Option<&[usize]> {
        Some(CudaArg::shape(self))
    }

    fn work_stream(&self) -> Option<WorkStream> {
        Some(self.stream())
    }

    fn kernel_view(&mut self) -> CudaBuffer<'_, T, D> {
        eager_buffer(
            self.device_ptr(),
            CudaArg::shape(self),
            self.strides(),
            self.device(),
            self.stream(),
        )
    }

    fn xla_view<'c>(
        buffers: &mut XlaBuffers<'c, '_>,
    ) -> Result<CudaBuffer<'c, T, D>, HandlerError> {
        let (parameter, argument) = buffers.next_argument()?;
        xla_buffer::<T, D, C>(buffers, parameter, argument)
    }
}

impl<'a, T: Element, D: Dimensionality, C: Constraints> KernelParameter
    for CudaArgMut<'a, T, D, C>
{
    const ROLE: Role = Role::Mutated;
    const DATA_TYPE: DataType = T::DTYPE;
    const NDIM: Option<usize> = D::NDIM;
    const PLATFORM: Option<Platform> = Some(Platform::Cuda);
    type View<'v> = CudaBufferMut<'v, T, D>;

    fn shape(&self) -> Option<&[usize]> {
        Some(CudaArgMut::shape(self))
    }

    fn work_stream(&self) -> Option<WorkStream> {
        Some(self.stream())
    }

    fn kernel_view(&mut self) -> CudaBufferMut<'_, T, D> {
        // Taking the address to write counts as writing (a PyTorch tensor's version counter
        // is bumped after the call).
        let address = self.device_ptr_mut();
        let buffer = eager_buffer(
            address,
            CudaArgMut::shape(self),
            self.strides(),
            self.device(),
            self.stream(),
        );
        CudaBufferMut { buffer }
    }

    fn xla_view<'c>(
        buffers: &mut XlaBuffers<'c, '_>,
    ) -> Result<CudaBufferMut<'c, T, D>, HandlerError> {
        let stream = buffers.stream;
        let (parameter, result, argument) = buffers.next_result()?;
        if let Some(argument) = argument {
            // An argument updated in place: its result starts as its value (`XlaBuffers::new`
            // checked that both have one shape and data type).
            start_as_copy(buffers.name, parameter, result, &argument, stream)?;
        }
        // Written by the device alone, through the address: the buffer stays borrowed for
        // the call, read-only on the host.
        let result: &'c dlbridge::xla::ResultBuffer<'_> = result;
        let buffer = xla_buffer::<T, D, C>(buffers, parameter, result.view())?;
        Ok(CudaBufferMut { buffer })
    }
}

/// An eager argument's buffer.
fn eager_buffer<'v, T: Element, D: Dimension>(
    address: u64,
    shape: &[usize],
    strides: &'v [i64],
    device: Device,
    stream: WorkStream,
) -> CudaBuffer<'v, T, D> {
    let stream = stream.handle().unwrap_or(0);
    CudaBuffer::new(address, shape.iter().copied(), strides, device, stream)
}

/// Starts a result of an argument updated in place as a copy of the argument, on the call's
/// stream: the CUDA driver's device-to-device copy, through dlbridge's `cuda` feature.
#[cfg(feature = "cuda")]
fn start_as_copy(
    kernel: &str,
    parameter: &Parameter,
    result: &mut dlbridge::xla::ResultBuffer<'_>,
    argument: &TensorView<'_>,
    stream: usize,
) -> Result<(), HandlerError> {
    // SAFETY: the argument is XLA's buffer of this call on the result's device, unchanged
    // for the call; the stream is the call's own.
    unsafe { dlbridge::cuda::copy_into_result(result, argument, stream) }.map_err(|error| {
        HandlerError::invalid_argument(format!(
            "{kernel}: {}: starting its result as a copy of it: {error}",
            parameter.name
        ))
    })
}

/// Without dlbridge-pyo3's `cuda` feature there is no driver to copy with: refused, saying
/// so.
#[cfg(not(feature = "cuda"))]
fn start_as_copy(
    kernel: &str,
    parameter: &Parameter,
    _result: &mut dlbridge::xla::ResultBuffer<'_>,
    _argument: &TensorView<'_>,
    _stream: usize,
) -> Result<(), HandlerError> {
    Err(HandlerError::invalid_argument(format!(
        "{kernel}: {} is updated in place, which inside XLA starts its result as a copy of it \
         on the device: build dlbridge-pyo3 with its feature `cuda`",
        parameter.name
    )))
}
