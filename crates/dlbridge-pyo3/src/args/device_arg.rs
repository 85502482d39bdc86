//! Typed arguments in device memory, [`DeviceTensorArg`] and [`DeviceTensorArgMut`]: the
//! checks of [`TensorArg`](crate::TensorArg) with a device constraint instead of host memory,
//! the address of the first element for a kernel, and the stream it must launch on
//! ([`WorkStream`], found once per argument at extraction).

use std::cell::Cell;
use std::ffi::c_void;
use std::marker::PhantomData;

use dlbridge::{Device, Element, TensorView};
use ndarray::{Dimension, IxDyn};
use pyo3::prelude::*;

use super::accessors::argument_accessors;
use super::constraints::{
    Constraints, Cuda, DeviceConstraint, Dimensionality, check_at, placement,
};
use super::tensor_arg::{Held, WriteReport, extract_argument};
use crate::device::dlpack_device;
use crate::dispatch::type_info;
use crate::streams::consumer::{ConsumerStream, StreamHandle, has_streams};
use crate::streams::work::{WorkStream, work_stream_of};

/// A read-only tensor argument in device memory: element type `T`, device constraint `P`
/// ([`DeviceConstraint`]: [`Cuda`] by default, [`Rocm`](crate::Rocm),
/// [`AnyDevice`](crate::AnyDevice), [`HostMemory`](crate::HostMemory)), number of dimensions
/// `D` and constraints `C` as for [`TensorArg`](crate::TensorArg), borrowed zero-copy from any
/// DLPack producer (PyTorch, CuPy, JAX on the GPU) for the duration of the call.
///
/// It gives what a kernel launch needs, never a host view of the elements:
/// [`device_ptr`](Self::device_ptr) (the first element's address, `data + byte_offset`),
/// [`shape`](Self::shape), [`strides`](Self::strides) (in elements), [`device`](Self::device)
/// and [`stream`](Self::stream), the stream to launch on: the producer's current work stream
/// on the tensor's device (its exchange table's `current_work_stream`, else PyTorch's or
/// CuPy's current stream, else the legacy default stream: see [`WorkStream`]). Work enqueued
/// there runs after the producer's pending work on the tensor and before its later work, with
/// no synchronisation by dlbridge. A full import (producers without a fast path) asks
/// `__dlpack__(stream=...)` for that same stream.
///
/// Extraction refuses, with `TypeError` naming the argument (PyO3's `argument 'x'`), what was
/// wanted and what was given, a tensor of another data type, number of dimensions or layout,
/// and one elsewhere than `P` allows: `expected a float32 C-contiguous tensor with 1 dimension
/// on a CUDA device, got float32 shape (3,) strides (1,) on CPU:0`.
///
/// Release the GIL while the kernel is enqueued: the argument is `Send` and `Sync`.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// /// `y += a * x` on the GPU, on the caller's stream.
/// #[pyfunction]
/// fn saxpy(
///     py: Python<'_>,
///     a: f32,
///     x: CudaArg<'_, f32, Ix1, CContiguous>,
///     mut y: CudaArgMut<'_, f32, Ix1, CContiguous>,
/// ) -> PyResult<()> {
///     if x.shape() != y.shape() {
///         return Err(pyo3::exceptions::PyValueError::new_err("x and y differ in shape"));
///     }
///     // Both must be on one device, on one stream: the one the caller's framework uses.
///     let stream = WorkStream::common([x.stream(), y.stream()])?;
///     let (x_ptr, y_ptr, n) = (x.device_ptr(), y.device_ptr_mut(), x.len());
///     py.detach(|| {
///         // Launch the kernel here on `stream.as_raw()` (with cudarc: see the cuda_saxpy
///         // example); nothing waits for it.
///         let _ = (a, x_ptr, y_ptr, n, stream);
///     });
///     Ok(())
/// }
/// ```
pub struct DeviceTensorArg<
    'py,
    T: Element,
    P: DeviceConstraint = Cuda,
    D: Dimensionality = IxDyn,
    C: Constraints = (),
> {
    tensor: DeviceTensor<D>,
    held: Held,
    _types: TypeMarker<'py, T, P, C>,
}

/// The type parameters a device argument holds no value of.
type TypeMarker<'py, T, P, C> = PhantomData<(&'py (), fn() -> (T, P, C))>;

/// A writable tensor argument in device memory: as [`DeviceTensorArg`], and refused (as
/// [`TensorArgMut`](crate::TensorArgMut) refuses them) for read-only tensors, legacy capsules
/// (which cannot say their memory may be written), layouts in which two indices reach one
/// element, and memory another argument in use reaches. Taking
/// [`device_ptr_mut`](Self::device_ptr_mut) counts as writing: a PyTorch tensor's version
/// counter is bumped after the call, as its in-place operations do.
pub struct DeviceTensorArgMut<
    'py,
    T: Element,
    P: DeviceConstraint = Cuda,
    D: Dimensionality = IxDyn,
    C: Constraints = (),
> {
    tensor: DeviceTensor<D>,
    held: Held,
    report: WriteReport,
    _types: TypeMarker<'py, T, P, C>,
}

/// A read-only CUDA tensor argument: [`DeviceTensorArg`] with [`Cuda`].
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// // The same type, spelled two ways.
/// fn vector<'a>(x: CudaArg<'a, f32, Ix1>) -> DeviceTensorArg<'a, f32, Cuda, Ix1> {
///     x
/// }
/// ```
pub type CudaArg<'py, T, D = IxDyn, C = ()> = DeviceTensorArg<'py, T, Cuda, D, C>;
/// A writable CUDA tensor argument: [`DeviceTensorArgMut`] with [`Cuda`].
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// // The same type, spelled two ways.
/// fn vector<'a>(x: CudaArgMut<'a, f32, Ix1>) -> DeviceTensorArgMut<'a, f32, Cuda, Ix1> {
///     x
/// }
/// ```
pub type CudaArgMut<'py, T, D = IxDyn, C = ()> = DeviceTensorArgMut<'py, T, Cuda, D, C>;

// SAFETY: the argument holds the address of elements it never dereferences (kernels do, on
// the device), plain descriptor data, and a `Py<PyAny>` used with the GIL held (`object`
// takes a `Python` token) and released wherever the argument is dropped, as `Py` allows.
unsafe impl<T: Element, P: DeviceConstraint, D: Dimensionality, C: Constraints> Send
    for DeviceTensorArg<'_, T, P, D, C>
{
}
// SAFETY: as above; `&self` only reads the descriptor.
unsafe impl<T: Element, P: DeviceConstraint, D: Dimensionality, C: Constraints> Sync
    for DeviceTensorArg<'_, T, P, D, C>
{
}
// SAFETY: as for `DeviceTensorArg`.
unsafe impl<T: Element, P: DeviceConstraint, D: Dimensionality, C: Constraints> Send
    for DeviceTensorArgMut<'_, T, P, D, C>
{
}
// SAFETY: as for `DeviceTensorArg`; the write report is changed through `&mut self` only.
unsafe impl<T: Element, P: DeviceConstraint, D: Dimensionality, C: Constraints> Sync
    for DeviceTensorArgMut<'_, T, P, D, C>
{
}

/// What a device argument keeps of its descriptor: plain values, read without the GIL.
struct DeviceTensor<D> {
    /// The first element (`data + byte_offset`).
    first: *mut c_void,
    device: Device,
    shape: D,
    /// The strides in elements, as ndarray keeps them (`isize` bits in `usize`).
    strides: D,
    elements: usize,
    stream: WorkStream,
}

impl<D: Dimension> DeviceTensor<D> {
    fn new(view: &TensorView<'_>, stream: WorkStream) -> Self {
        let mut shape = D::zeros(view.ndim());
        let mut strides = D::zeros(view.ndim());
        for (out, &extent) in shape.slice_mut().iter_mut().zip(view.shape()) {
            *out = extent as usize;
        }
        for (out, &stride) in strides.slice_mut().iter_mut().zip(view.strides()) {
            *out = stride as isize as usize;
        }
        DeviceTensor {
            first: view.data_ptr(),
            device: view.device(),
            shape,
            strides,
            // A validated tensor's element count fits the address space (its bytes do).
            elements: view.num_elements() as usize,
            stream,
        }
    }

    fn strides(&self) -> &[i64] {
        let strides = self.strides.slice();
        // SAFETY: `usize` and `i64` have one size and alignment (the crate builds for 64-bit
        // targets only, checked in `host`); every bit pattern is valid.
        unsafe { std::slice::from_raw_parts(strides.as_ptr().cast::<i64>(), strides.len()) }
    }
}

/// Gives a closure the signature of an import stream (`borrow::ImportStream`, for any `'py`).
fn import_stream_function<F>(function: F) -> F
where
    F: for<'py> Fn(&Bound<'py, PyAny>) -> PyResult<ConsumerStream>,
{
    function
}

/// Extracts a device argument: the checks of its type, the claim on its memory, the
/// descriptor's values, and its work stream, looked up once (before a full import, which
/// asks the producer for it, or once the descriptor is borrowed).
fn extract_device<T: Element, P: DeviceConstraint, D: Dimensionality, C: Constraints>(
    object: &Borrowed<'_, '_, PyAny>,
    writable: bool,
) -> PyResult<(Held, DeviceTensor<D>, WriteReport)> {
    let info = type_info(object)?;
    let found: Cell<Option<WorkStream>> = Cell::new(None);
    let import_stream = import_stream_function(|source| {
        let device = dlpack_device(source)?;
        if !has_streams(device) || !P::accepts(device) {
            return Ok(ConsumerStream::default());
        }
        // The argument's own object: a PyTorch tensor `untracked` for the import is of the
        // same type, on the same device.
        let stream = work_stream_of(object, info, device)?;
        found.set(Some(stream));
        Ok(stream
            .dlpack_stream_argument()
            .map_or(ConsumerStream::default(), |handle| {
                // SAFETY: the producer's own current work stream on the tensor's device, found
                // by `work_stream_of` (its exchange table, PyTorch's or CuPy's current stream,
                // or the legacy default), which the producer keeps alive: default and pooled
                // streams live as long as the process, a stream the user made current is the
                // user's to keep, as the protocol's streams are (the same stream the
                // `ProducerCurrent` import records).
                ConsumerStream::Handle(unsafe { StreamHandle::new(handle) })
            }))
    });
    let (held, tensor, framework) = extract_argument(
        object,
        writable,
        Some(&import_stream),
        |view, access| check_at::<T, D, C>(view, writable, access, placement::<P>()),
        |view| {
            let stream = match found.get() {
                Some(stream) if stream.device() == view.device() => stream,
                _ => work_stream_of(object, info, view.device())?,
            };
            Ok(DeviceTensor::new(view, stream))
        },
    )?;
    let report = WriteReport {
        rules: framework,
        written: false,
    };
    Ok((held, tensor, report))
}

/// The extraction of a device argument type, the same for both but for whether it writes and
/// what the argument keeps of it (`assemble`).
macro_rules! device_argument_from_py_object {
    ($name:ident, writable: $writable:literal) => {
        impl<'a, 'py, T: Element, P: DeviceConstraint, D: Dimensionality, C: Constraints>
            FromPyObject<'a, 'py> for $name<'py, T, P, D, C>
        {
            type Error = PyErr;

            fn extract(object: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
                let (held, tensor, report) = extract_device::<T, P, D, C>(&object, $writable)?;
                Ok($name::assemble(held, tensor, report))
            }
        }
    };
}

device_argument_from_py_object!(DeviceTensorArg, writable: false);
device_argument_from_py_object!(DeviceTensorArgMut, writable: true);

impl<T: Element, P: DeviceConstraint, D: Dimensionality, C: Constraints>
    DeviceTensorArg<'_, T, P, D, C>
{
    /// The argument made of what extraction found: a read-only argument reports no write.
    fn assemble(held: Held, tensor: DeviceTensor<D>, _report: WriteReport) -> Self {
        DeviceTensorArg {
            tensor,
            held,
            _types: PhantomData,
        }
    }
}

impl<T: Element, P: DeviceConstraint, D: Dimensionality, C: Constraints>
    DeviceTensorArgMut<'_, T, P, D, C>
{
    /// The argument made of what extraction found.
    fn assemble(held: Held, tensor: DeviceTensor<D>, report: WriteReport) -> Self {
        DeviceTensorArgMut {
            tensor,
            held,
            report,
            _types: PhantomData,
        }
    }
}

impl<T: Element, P: DeviceConstraint, D: Dimensionality, C: Constraints> Drop
    for DeviceTensorArgMut<'_, T, P, D, C>
{
    fn drop(&mut self) {
        self.report.report(&self.held.object);
    }
}

// The accessors all typed arguments share, and those of device arguments
// (`args/accessors.rs`).
argument_accessors!(
    every device: impl['py, T: Element, P: DeviceConstraint, D: Dimensionality, C: Constraints]
        DeviceTensorArg['py, T, P, D, C],
    token 'b
);
argument_accessors!(
    every device: impl['py, T: Element, P: DeviceConstraint, D: Dimensionality, C: Constraints]
        DeviceTensorArgMut['py, T, P, D, C],
    token 'b
);

impl<T: Element, P: DeviceConstraint, D: Dimensionality, C: Constraints>
    DeviceTensorArgMut<'_, T, P, D, C>
{
    /// The first element's device address for writing (see
    /// [`DeviceTensorArg::device_ptr`]); taking it counts as writing (a PyTorch tensor's
    /// version counter is bumped after the call).
    pub fn device_ptr_mut(&mut self) -> u64 {
        self.report.written = true;
        self.tensor.first as usize as u64
    }

    /// The first element as a typed pointer for writing (device memory: never dereference it
    /// on the host); taking it counts as writing.
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.report.written = true;
        self.tensor.first.cast::<T>()
    }
}
