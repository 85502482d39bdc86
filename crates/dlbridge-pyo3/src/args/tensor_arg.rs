//! The typed argument types, [`TensorArg`] and [`TensorArgMut`]: what they hold for the call
//! (the view, the claim on the memory, the source of the descriptor) and their extraction,
//! which checks the constraints, claims the memory and makes the view while the descriptor
//! is alive.

use std::marker::PhantomData;
use std::ptr::NonNull;

use dlbridge::{Element, TensorView, Writability};
use ndarray::{ArrayView, ArrayViewMut, Dimension, IxDyn};
use pyo3::prelude::*;

use super::borrow::{extract_with, ArgumentPath, Source};
use super::claims::Claim;
use super::constraints::{check, AnyLayout, AnyShape, Layout, Shape};
use crate::dispatch::type_info;
use crate::errors::argument_error;
use crate::framework::FrameworkRules;
use crate::produce::returning::{return_like, IntoTensor};

/// A read-only tensor argument of element type `T`, dimensionality `D` and layout `L`,
/// borrowed zero-copy from any DLPack producer for the duration of the call.
///
/// Extraction checks the data type, the number of dimensions, the layout and that the data is
/// in host memory, and raises `TypeError` naming what was expected and what was received:
/// `argument 'x': expected a float32 C-contiguous cpu tensor with 2 dimensions, got float64
/// shape (3, 4) strides (1, 3) on CPU:0`. When the producer's type publishes DLPack 1.3's C
/// exchange API (PyTorch, PaddlePaddle, dlbridge), the descriptor is borrowed through
/// `dltensor_from_py_object_no_sync` without any heap allocation; NumPy arrays are read from
/// their struct, other host memory through the buffer protocol; otherwise the tensor is
/// imported with [`from_dlpack`](crate::from_dlpack) and released after the call. Every path sees what the
/// producer's `__dlpack__` hands out, and refuses what it refuses (`BufferError`): a PyTorch
/// view with a lazy conjugation or negation bit, a sparse tensor. A tensor that autograd
/// tracks (PyTorch `requires_grad`, PaddlePaddle `stop_gradient=False`) is read as
/// `x.detach()` reads it: the same memory, outside the graph.
///
/// The argument is `Send` and `Sync`: the GIL may be released while the kernel runs (`py.detach`).
pub struct TensorArg<
    'a,
    T: Element,
    D: Dimension = IxDyn,
    L: Layout = AnyLayout,
    S: Shape = AnyShape,
> {
    view: ArrayView<'a, T, D>,
    held: Held,
    _layout: PhantomData<(L, S)>,
}

/// A writable tensor argument: as [`TensorArg`], and refused for read-only tensors (flagged
/// so, or arrived in a legacy capsule, which cannot say its memory may be written:
/// [`dlbridge::Writability`]), for layouts in which two indices reach the same element, and
/// (`ValueError`) for memory that another tensor argument in use also reaches, on this
/// call or another thread's, in any extension module of the process (the overlap is exact for
/// strided views: `x[:, ::2]` and `x[:, 1::2]` may be passed together), so that no element
/// is ever both borrowed and written. Writes are seen by the caller's tensor (NumPy array,
/// PyTorch tensor, ...).
///
/// Autograd is never written behind its back: while grad mode is on, a tensor it tracks is
/// refused (`TypeError`; under `torch.no_grad()`, as an optimizer step runs, it is written),
/// and after a call that took a mutable view ([`TensorArgMut::view_mut`],
/// [`TensorArgMut::as_mut_slice`]) of a PyTorch or PaddlePaddle tensor, the tensor's version
/// counter is bumped as the framework's in-place operations do, so that `backward()` raises
/// if it saved the tensor.
pub struct TensorArgMut<
    'a,
    T: Element,
    D: Dimension = IxDyn,
    L: Layout = AnyLayout,
    S: Shape = AnyShape,
> {
    view: ArrayViewMut<'a, T, D>,
    held: Held,
    report: WriteReport,
    _layout: PhantomData<(L, S)>,
}

// SAFETY: the view is a borrow of the argument's elements for the call, which the caller's
// reference keeps alive; the descriptor is plain data, and the object pointer is only used
// with the GIL held (`object` takes a `Python` token). Sending it to another thread while the
// GIL is released is what `ArrayView` allows for `T: Sync`.
unsafe impl<T: Element, D: Dimension, L: Layout, S: Shape> Send for TensorArg<'_, T, D, L, S> {}
// SAFETY: as above, with exclusive access (`T: Send`).
unsafe impl<T: Element, D: Dimension, L: Layout, S: Shape> Send for TensorArgMut<'_, T, D, L, S> {}
// SAFETY: `&TensorArg` only reads the elements (`T: Sync`).
unsafe impl<T: Element, D: Dimension, L: Layout, S: Shape> Sync for TensorArg<'_, T, D, L, S> {}
// SAFETY: `&TensorArgMut` only reads the elements; writes need `&mut`.
unsafe impl<T: Element, D: Dimension, L: Layout, S: Shape> Sync for TensorArgMut<'_, T, D, L, S> {}

/// What an argument holds for the call besides its view: its claim on the memory, where its
/// descriptor came from, and the Python object passed.
struct Held {
    _claim: Claim,
    source: Source,
    /// The argument object, which the caller keeps alive for the call.
    object: NonNull<pyo3::ffi::PyObject>,
}

impl Held {
    /// The argument's Python object.
    fn object<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        object_of(py, self.object)
    }
}

/// The argument object behind `object`.
fn object_of(py: Python<'_>, object: NonNull<pyo3::ffi::PyObject>) -> Bound<'_, PyAny> {
    // SAFETY: the caller keeps the argument alive for the call, which outlives the argument
    // value holding the pointer; the GIL is held (`py`); a new strong reference is taken.
    unsafe { Bound::from_borrowed_ptr(py, object.as_ptr()) }
}

/// A writable argument's report of its write to the framework's autograd: for a tensor of a
/// framework with autograd (PyTorch, PaddlePaddle) whose mutable view the kernel took, its
/// version counter is bumped when the argument is dropped (after the call), as the
/// framework's in-place operations do.
struct WriteReport {
    /// The framework's rules, for a tensor of a framework with autograd.
    rules: Option<&'static FrameworkRules>,
    /// The kernel took mutable access (`view_mut`, `as_mut_slice`).
    written: bool,
    object: NonNull<pyo3::ffi::PyObject>,
}

impl Drop for WriteReport {
    fn drop(&mut self) {
        let Some(rules) = self.rules.filter(|_| self.written) else {
            return;
        };
        let object = self.object;
        // The argument may be dropped on a thread without the GIL (moved into `py.detach`).
        Python::attach(|py| {
            let object = object_of(py, object);
            if let Err(error) = rules.bump_version(&object) {
                // A drop cannot raise: the failure goes where Python reports those.
                error.write_unraisable(py, Some(&object));
            }
        });
    }
}

impl<'a, T: Element, D: Dimension, L: Layout, S: Shape> TensorArg<'a, T, D, L, S> {
    /// The Python object passed as this argument.
    pub fn object<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.held.object(py)
    }

    /// How the argument reached its tensor (which fast path, or a full DLPack import).
    pub fn path(&self) -> ArgumentPath {
        self.held.source.path()
    }

    /// Returns `result` (an ndarray `Array`, a [`dlbridge::ManagedTensor`]) to Python as a
    /// tensor of this argument's framework, zero-copy: [`return_like`] with this argument.
    pub fn return_like<'py>(
        &self,
        py: Python<'py>,
        result: impl IntoTensor,
    ) -> PyResult<Bound<'py, PyAny>> {
        return_like(py, result, &self.object(py))
    }

    /// The elements as an `ndarray` view.
    pub fn view(&self) -> ArrayView<'_, T, D> {
        self.view.view()
    }

    /// The elements as a slice in memory order, when the layout is contiguous.
    pub fn as_slice(&self) -> Option<&[T]> {
        self.view.as_slice_memory_order()
    }
}

impl<'a, T: Element, D: Dimension, L: Layout, S: Shape> TensorArgMut<'a, T, D, L, S> {
    /// The Python object passed as this argument.
    pub fn object<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.held.object(py)
    }

    /// How the argument reached its tensor (which fast path, or a full DLPack import).
    pub fn path(&self) -> ArgumentPath {
        self.held.source.path()
    }

    /// Returns `result` to Python as a tensor of this argument's framework, zero-copy:
    /// [`return_like`] with this argument.
    pub fn return_like<'py>(
        &self,
        py: Python<'py>,
        result: impl IntoTensor,
    ) -> PyResult<Bound<'py, PyAny>> {
        return_like(py, result, &self.object(py))
    }

    /// The elements as an `ndarray` view.
    pub fn view(&self) -> ArrayView<'_, T, D> {
        self.view.view()
    }

    /// The elements as a mutable `ndarray` view.
    ///
    /// Taking it counts as writing: for a PyTorch or PaddlePaddle tensor, the tensor's version
    /// counter is bumped when the argument is dropped, as the framework's own in-place
    /// operations do, so that `backward()` raises if autograd saved the tensor.
    pub fn view_mut(&mut self) -> ArrayViewMut<'_, T, D> {
        self.report.written = true;
        self.view.view_mut()
    }

    /// The elements as a mutable slice in memory order, when the layout is contiguous (taking
    /// it counts as writing, as for [`TensorArgMut::view_mut`]).
    pub fn as_mut_slice(&mut self) -> Option<&mut [T]> {
        self.report.written = true;
        self.view.as_slice_memory_order_mut()
    }
}

/// What the two argument types share at extraction: borrow or import the tensor, check it
/// against the type's expectations (`check`), claim its memory (written or not), and make the
/// argument's view (`make`) while the descriptor is alive.
#[inline(always)]
fn extract_argument<V>(
    object: &Borrowed<'_, '_, PyAny>,
    writable: bool,
    check: impl Fn(&TensorView<'_>, Writability) -> PyResult<()>,
    make: impl Fn(&TensorView<'_>) -> PyResult<V>,
) -> PyResult<(Held, V, Option<&'static FrameworkRules>)> {
    let info = type_info(object)?;
    let (source, (claim, view)) = extract_with(object, info, writable, |view, writability| {
        check(view, writability)?;
        let claim = Claim::new(object.py(), view, writable)?;
        Ok((claim, make(view)?))
    })?;
    let held = Held {
        _claim: claim,
        source,
        object: NonNull::new(object.as_ptr()).expect("a Python object"),
    };
    Ok((held, view, info.framework))
}

impl<'a, 'py, T: Element, D: Dimension, L: Layout, S: Shape> FromPyObject<'a, 'py>
    for TensorArg<'a, T, D, L, S>
{
    type Error = PyErr;

    fn extract(object: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let (held, view, _) = extract_argument(
            &object,
            false,
            |view, writability| check::<T, D, L, S>(view, false, writability),
            |view| {
                let array = view.as_array_dim::<T, D>().map_err(argument_error)?;
                // SAFETY: the view reads elements that live as long as the argument object,
                // which the caller borrows for `'a` (borrowed and buffer sources; a held
                // buffer keeps them exported), or as long as the owned tensor stored in the
                // returned value; it holds no reference to the descriptor (shape and strides
                // are copied into it).
                Ok(unsafe {
                    std::mem::transmute::<ArrayView<'_, T, D>, ArrayView<'a, T, D>>(array)
                })
            },
        )?;
        Ok(TensorArg {
            view,
            held,
            _layout: PhantomData,
        })
    }
}

impl<'a, 'py, T: Element, D: Dimension, L: Layout, S: Shape> FromPyObject<'a, 'py>
    for TensorArgMut<'a, T, D, L, S>
{
    type Error = PyErr;

    fn extract(object: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let (held, view, framework) = extract_argument(
            &object,
            true,
            |view, writability| check::<T, D, L, S>(view, true, writability),
            |view| {
                // SAFETY: the argument is the caller's tensor, not read-only, lent to this
                // call for writing (as any in-place kernel argument); the claim made before
                // this runs guarantees that no other tensor argument reaches its memory while
                // the call runs.
                let array =
                    unsafe { view.as_array_mut_unchecked_dim::<T, D>() }.map_err(argument_error)?;
                // SAFETY: as for `TensorArg`: the elements outlive `'a` and the view holds no
                // reference to the descriptor.
                Ok(unsafe {
                    std::mem::transmute::<ArrayViewMut<'_, T, D>, ArrayViewMut<'a, T, D>>(array)
                })
            },
        )?;
        let report = WriteReport {
            rules: framework,
            written: false,
            object: held.object,
        };
        Ok(TensorArgMut {
            view,
            held,
            report,
            _layout: PhantomData,
        })
    }
}

/// The argument's element type, extents, strides (in elements) and path, for `{:?}`:
/// `TensorArg { dtype: float32, shape: [4, 4], strides: [4, 1], path: numpy }`.
fn debug_argument<T: Element, D: Dimension>(
    f: &mut std::fmt::Formatter<'_>,
    name: &str,
    view: &ArrayView<'_, T, D>,
    path: ArgumentPath,
) -> std::fmt::Result {
    f.debug_struct(name)
        .field("dtype", &format_args!("{}", T::DTYPE))
        .field("shape", &view.shape())
        .field("strides", &view.strides())
        .field("path", &format_args!("{path}"))
        .finish()
}

impl<T: Element, D: Dimension, L: Layout, S: Shape> std::fmt::Debug for TensorArg<'_, T, D, L, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_argument(f, "TensorArg", &self.view, self.held.source.path())
    }
}

impl<T: Element, D: Dimension, L: Layout, S: Shape> std::fmt::Debug
    for TensorArgMut<'_, T, D, L, S>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        debug_argument(
            f,
            "TensorArgMut",
            &self.view.view(),
            self.held.source.path(),
        )
    }
}
