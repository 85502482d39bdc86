//! The typed argument types, [`TensorArg`] and [`TensorArgMut`]: what they hold for the call
//! (the view, the claim on the memory, the source of the descriptor) and their extraction,
//! which checks the constraints, claims the memory and makes the view while the descriptor
//! is alive.

use std::marker::PhantomData;

use dlbridge::ndarray::NdarrayViewExt;
use dlbridge::{Element, TensorView};
use ndarray::{ArrayView, ArrayViewMut, Ix1, Ix2, Ix3, Ix4, IxDyn};
use pyo3::prelude::*;

use super::accessors::{argument_accessors, contiguous_slice_mut};
use super::borrow::{Access, ImportStream, Source, extract_with};
use super::constraints::{CContiguous, Constraints, Contiguous, Dimensionality, check};
use crate::claims::Claim;
use crate::dispatch::type_info;
use crate::errors::argument_error;
use crate::framework::FrameworkRules;

/// A read-only tensor argument of element type `T` ([`Element`]: `f32`, `u8`, ...), number of
/// dimensions `D` ([`Dimensionality`]: `Ix2`, or `IxDyn` for any) and constraints `C`
/// ([`Constraints`]: a layout, a [`shape!`](crate::shape), a tuple of them, or `()` for none),
/// borrowed zero-copy from any DLPack producer for the duration of the call.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// shape!(pub Rgb = [_, _, 3]);
///
/// #[pyfunction]
/// fn mean(x: TensorArg<'_, f64>) -> f64 {
///     x.view().mean().unwrap_or(f64::NAN)
/// }
///
/// #[pyfunction]
/// fn brightest(image: TensorArg<'_, u8, Ix3, (Rgb, CContiguous)>) -> u8 {
///     // C-contiguous by its type: `as_slice` cannot fail.
///     image.as_slice().iter().copied().max().unwrap_or(0)
/// }
///
/// #[pyfunction]
/// #[pyo3(signature = (vectors, weights=None))]
/// fn weighted_total(vectors: Vec<TensorArg1<'_, f64>>, weights: Option<TensorArg1<'_, f64>>) -> f64 {
///     let totals = vectors.iter().map(|vector| vector.view().sum());
///     match weights {
///         Some(weights) => totals.zip(weights.view()).map(|(total, weight)| total * weight).sum(),
///         None => totals.sum(),
///     }
/// }
/// ```
///
/// Extraction checks the data type, the number of dimensions, the constraints and that the
/// data is in host memory, and raises `TypeError` naming what was expected and what was
/// received: `expected a float32 C-contiguous tensor with 2 dimensions in host memory, got
/// float64 shape (3, 4) strides (1, 3) on CPU:0` (`ValueError` for the right kind of tensor
/// with the wrong extents); PyO3 adds the note `while processing 'x'`, which the traceback
/// shows. When the producer's type publishes DLPack 1.3's C exchange API (PyTorch,
/// PaddlePaddle, dlbridge), the descriptor is borrowed through
/// `dltensor_from_py_object_no_sync` without any heap allocation; NumPy arrays are read from
/// their struct, other host memory through the buffer protocol; otherwise the tensor is
/// imported with [`from_dlpack`](crate::from_dlpack) and released after the call
/// ([`path`](Self::path) says which). Nothing is ever copied. Every path sees what the
/// producer's `__dlpack__` hands out, and refuses what it refuses (`BufferError`): a PyTorch
/// view with a lazy conjugation or negation bit, a sparse tensor. A tensor that autograd
/// tracks (PyTorch `requires_grad`, PaddlePaddle `stop_gradient=False`) is read as
/// `x.detach()` reads it: the same memory, outside the graph.
///
/// Arguments may come in a `Vec` (from any sequence: a list, a tuple), an `Option` (`None`
/// for a missing one) or a tuple. Each holds a reference to its object for as long as it
/// lives, so the memory it reads stays alive while a kernel runs with the GIL released,
/// even if the list it came from changes.
///
/// The argument is `Send` and `Sync`: the GIL may be released while the kernel runs (`py.detach`).
pub struct TensorArg<'a, T: Element, D: Dimensionality = IxDyn, C: Constraints = ()> {
    pub(crate) view: ArrayView<'a, T, D>,
    pub(crate) held: Held,
    _constraints: PhantomData<C>,
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
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// /// `x[i] = i` for every element of a contiguous int32 tensor, in place.
/// #[pyfunction]
/// fn iota(mut x: ContiguousArgMut<'_, i32>) {
///     for (index, value) in x.as_mut_slice().iter_mut().enumerate() {
///         *value = index as i32;
///     }
/// }
///
/// /// `x += 1` for a float64 vector of any strides.
/// #[pyfunction]
/// fn increment(mut x: TensorArgMut1<'_, f64>) {
///     x.view_mut().mapv_inplace(|value| value + 1.0);
/// }
/// # Python::initialize();
/// # Python::attach(|py| -> PyResult<()> {
/// #     let array = py.import("array")?;
/// #     let ints = array.call_method1("array", ("i", vec![0; 4]))?;
/// #     wrap_pyfunction!(iota, py)?.call1((&ints,))?;
/// #     assert_eq!(ints.call_method0("tolist")?.extract::<Vec<i32>>()?, [0, 1, 2, 3]);
/// #     let floats = array.call_method1("array", ("d", vec![1.0; 3]))?;
/// #     wrap_pyfunction!(increment, py)?.call1((&floats,))?;
/// #     assert_eq!(floats.call_method0("tolist")?.extract::<Vec<f64>>()?, [2.0; 3]);
/// #     // Read-only memory is refused for writing.
/// #     let error = wrap_pyfunction!(increment, py)?.call1((pyo3::types::PyBytes::new(py, &[0; 8]),)).unwrap_err();
/// #     assert!(error.is_instance_of::<pyo3::exceptions::PyTypeError>(py));
/// #     Ok(())
/// # }).unwrap();
/// ```
pub struct TensorArgMut<'a, T: Element, D: Dimensionality = IxDyn, C: Constraints = ()> {
    pub(crate) view: ArrayViewMut<'a, T, D>,
    held: Held,
    report: WriteReport,
    _constraints: PhantomData<C>,
}

/// A read-only vector argument: [`TensorArg`] with one dimension.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// // The same type, spelled two ways.
/// fn vector<'a>(x: TensorArg1<'a, f64>) -> TensorArg<'a, f64, Ix1> {
///     x
/// }
/// ```
pub type TensorArg1<'a, T, C = ()> = TensorArg<'a, T, Ix1, C>;
/// A read-only matrix argument: [`TensorArg`] with two dimensions.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// // The same type, spelled two ways.
/// fn matrix<'a>(x: TensorArg2<'a, f32, CContiguous>) -> TensorArg<'a, f32, Ix2, CContiguous> {
///     x
/// }
/// ```
pub type TensorArg2<'a, T, C = ()> = TensorArg<'a, T, Ix2, C>;
/// A read-only argument with three dimensions (an image with channels, say).
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// // The same type, spelled two ways.
/// fn image<'a>(x: TensorArg3<'a, u8>) -> TensorArg<'a, u8, Ix3> {
///     x
/// }
/// ```
pub type TensorArg3<'a, T, C = ()> = TensorArg<'a, T, Ix3, C>;
/// A read-only argument with four dimensions (a batch of images, say).
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// // The same type, spelled two ways.
/// fn batch<'a>(x: TensorArg4<'a, f32>) -> TensorArg<'a, f32, Ix4> {
///     x
/// }
/// ```
pub type TensorArg4<'a, T, C = ()> = TensorArg<'a, T, Ix4, C>;
/// A writable vector argument: [`TensorArgMut`] with one dimension.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// // The same type, spelled two ways.
/// fn vector<'a>(x: TensorArgMut1<'a, f64>) -> TensorArgMut<'a, f64, Ix1> {
///     x
/// }
/// ```
pub type TensorArgMut1<'a, T, C = ()> = TensorArgMut<'a, T, Ix1, C>;
/// A writable matrix argument: [`TensorArgMut`] with two dimensions.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// // The same type, spelled two ways.
/// fn matrix<'a>(x: TensorArgMut2<'a, f32, FContiguous>) -> TensorArgMut<'a, f32, Ix2, FContiguous> {
///     x
/// }
/// ```
pub type TensorArgMut2<'a, T, C = ()> = TensorArgMut<'a, T, Ix2, C>;
/// A writable argument with three dimensions.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// // The same type, spelled two ways.
/// fn image<'a>(x: TensorArgMut3<'a, u8>) -> TensorArgMut<'a, u8, Ix3> {
///     x
/// }
/// ```
pub type TensorArgMut3<'a, T, C = ()> = TensorArgMut<'a, T, Ix3, C>;
/// A writable argument with four dimensions.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// // The same type, spelled two ways.
/// fn batch<'a>(x: TensorArgMut4<'a, f32>) -> TensorArgMut<'a, f32, Ix4> {
///     x
/// }
/// ```
pub type TensorArgMut4<'a, T, C = ()> = TensorArgMut<'a, T, Ix4, C>;
/// A read-only C-contiguous argument, of any number of dimensions unless `D` says: its
/// [`as_slice`](TensorArg::as_slice) is every element in index order.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// // The same type, spelled two ways.
/// fn packed<'a>(x: ContiguousArg<'a, i64, Ix2>) -> TensorArg<'a, i64, Ix2, CContiguous> {
///     x
/// }
/// ```
pub type ContiguousArg<'a, T, D = IxDyn> = TensorArg<'a, T, D, CContiguous>;
/// A writable C-contiguous argument: its [`as_mut_slice`](TensorArgMut::as_mut_slice) is
/// every element in index order.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// // The same type, spelled two ways.
/// fn packed<'a>(x: ContiguousArgMut<'a, f32>) -> TensorArgMut<'a, f32, IxDyn, CContiguous> {
///     x
/// }
/// ```
pub type ContiguousArgMut<'a, T, D = IxDyn> = TensorArgMut<'a, T, D, CContiguous>;

// SAFETY: the view is a borrow of elements that the argument keeps alive (its strong reference to
// the object, its held buffer or its owned tensor); the descriptor is plain data; the object is a
// `Py<PyAny>`, used with the GIL held (`object` takes a `Python` token) and released wherever the
// argument is dropped, as `Py` allows. Sending it to another thread while the GIL is released is
// what `ArrayView` allows for `T: Sync`.
unsafe impl<T: Element, D: Dimensionality, C: Constraints> Send for TensorArg<'_, T, D, C> {}
// SAFETY: as above, with exclusive access (`T: Send`).
unsafe impl<T: Element, D: Dimensionality, C: Constraints> Send for TensorArgMut<'_, T, D, C> {}
// SAFETY: `&TensorArg` only reads the elements (`T: Sync`).
unsafe impl<T: Element, D: Dimensionality, C: Constraints> Sync for TensorArg<'_, T, D, C> {}
// SAFETY: `&TensorArgMut` only reads the elements; writes need `&mut`.
unsafe impl<T: Element, D: Dimensionality, C: Constraints> Sync for TensorArgMut<'_, T, D, C> {}

/// What an argument holds for the call besides its view: its claim on the memory, where its
/// descriptor came from, and the Python object passed.
pub(crate) struct Held {
    _claim: Claim,
    pub(crate) source: Source,
    /// The argument object: a strong reference, so that the memory the view reads stays alive
    /// while the argument does, wherever the object came from (a list the call was given, say).
    pub(crate) object: Py<PyAny>,
}
/// A writable argument's report of its write to the framework's autograd: for a tensor of a
/// framework with autograd (PyTorch, PaddlePaddle) whose mutable view the kernel took, its
/// version counter is bumped when the argument is dropped (after the call), as the
/// framework's in-place operations do.
pub(crate) struct WriteReport {
    /// The framework's rules, for a tensor of a framework with autograd.
    pub(crate) rules: Option<&'static FrameworkRules>,
    /// The kernel took mutable access (`view_mut`, `as_mut_slice`).
    pub(crate) written: bool,
}

impl WriteReport {
    /// Reports the write of `object`'s memory, if the kernel made one.
    pub(crate) fn report(&self, object: &Py<PyAny>) {
        let Some(rules) = self.rules.filter(|_| self.written) else {
            return;
        };
        // The argument may be dropped on a thread without the GIL (moved into `py.detach`).
        Python::attach(|py| {
            let object = object.bind(py);
            if let Err(error) = rules.bump_version(object) {
                // A drop cannot raise: the failure goes where Python reports those.
                error.write_unraisable(py, Some(object));
            }
        });
    }
}

impl<T: Element, D: Dimensionality, C: Constraints> Drop for TensorArgMut<'_, T, D, C> {
    fn drop(&mut self) {
        self.report.report(&self.held.object);
    }
}

// The accessors all typed arguments share, and those of host arguments (`args/accessors.rs`).
argument_accessors!(
    ///
    /// ```
    /// use dlbridge_pyo3::prelude::*;
    /// use pyo3::prelude::*;
    ///
    /// #[pyfunction]
    /// fn path_of(x: TensorArg<'_, u8>) -> String {
    ///     format!("{} {x:?}", x.path())
    /// }
    /// # Python::initialize();
    /// # Python::attach(|py| {
    /// #     let bytes = pyo3::types::PyBytes::new(py, &[1, 2, 3]);
    /// #     let text: String = wrap_pyfunction!(path_of, py).unwrap().call1((bytes,)).unwrap().extract().unwrap();
    /// #     assert_eq!(text, "buffer TensorArg { dtype: uint8, shape: [3], strides: [1], path: buffer }");
    /// # });
    /// ```
    every host: impl['a, T: Element, D: Dimensionality, C: Constraints] TensorArg['a, T, D, C],
    token 'py
);
argument_accessors!(
    every host: impl['a, T: Element, D: Dimensionality, C: Constraints] TensorArgMut['a, T, D, C],
    token 'py
);

impl<'a, T: Element, D: Dimensionality, C: Constraints> TensorArgMut<'a, T, D, C> {
    /// The elements as a mutable `ndarray` view.
    ///
    /// Taking it counts as writing: for a PyTorch or PaddlePaddle tensor, the tensor's version
    /// counter is bumped when the argument is dropped, as the framework's own in-place
    /// operations do, so that `backward()` raises if autograd saved the tensor.
    pub fn view_mut(&mut self) -> ArrayViewMut<'_, T, D> {
        self.report.written = true;
        self.view.view_mut()
    }

    /// The elements as one mutable slice in memory order, for argument types that require a
    /// contiguous layout, which extraction checked, so that this cannot fail (taking it counts
    /// as writing, as for [`TensorArgMut::view_mut`]).
    pub fn as_mut_slice(&mut self) -> &mut [T]
    where
        C::Layout: Contiguous,
    {
        self.report.written = true;
        contiguous_slice_mut(self.view.view_mut())
    }

    /// The elements as one mutable slice in memory order, when the tensor happens to be
    /// contiguous; `None` otherwise (taking it counts as writing, as for
    /// [`TensorArgMut::view_mut`]).
    pub fn try_as_mut_slice(&mut self) -> Option<&mut [T]> {
        self.report.written = true;
        self.view.as_slice_memory_order_mut()
    }
}

/// What the two argument types share at extraction: borrow or import the tensor, check it
/// against the type's expectations (`check`), claim its memory (written or not), and make the
/// argument's view (`make`) while the descriptor is alive.
#[inline(always)]
pub(crate) fn extract_argument<V>(
    object: &Borrowed<'_, '_, PyAny>,
    writable: bool,
    import_stream: Option<&ImportStream<'_>>,
    check: impl Fn(&TensorView<'_>, Access) -> PyResult<()>,
    make: impl Fn(&TensorView<'_>) -> PyResult<V>,
) -> PyResult<(Held, V, Option<&'static FrameworkRules>)> {
    let info = type_info(object)?;
    let (source, (claim, view)) =
        extract_with(object, info, writable, import_stream, |view, access| {
            check(view, access)?;
            let claim = Claim::new(object.py(), view, writable)?;
            Ok((claim, make(view)?))
        })?;
    let held = Held {
        _claim: claim,
        source,
        object: (*object).to_owned().unbind(),
    };
    Ok((held, view, info.framework))
}

// Extraction from a borrow of any lifetime (`'a`), so that arguments can be extracted from
// the items of a list (`Vec<TensorArg<..>>`) and a tuple: the argument holds a strong
// reference to its object. Its own lifetime is the GIL token's (`'py`), which keeps it from
// being stored beyond the call's reach (in a `#[pyclass]`, say).
impl<'a, 'py, T: Element, D: Dimensionality, C: Constraints> FromPyObject<'a, 'py>
    for TensorArg<'py, T, D, C>
{
    type Error = PyErr;

    fn extract(object: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let (held, view, _) = extract_argument(
            &object,
            false,
            None,
            |view, access| check::<T, D, C>(view, false, access),
            |view| {
                let array = view.as_array_dim::<T, D>().map_err(argument_error)?;
                // SAFETY: the view reads elements that live as long as the returned value:
                // the object it holds a strong reference to owns or keeps them alive (borrowed
                // sources), its held buffer keeps them exported (buffer source), or they are
                // the owned tensor's, stored in it (imported source); they are reached only
                // through `&self`, never for `'py` itself. The view holds no reference to the
                // descriptor (shape and strides are copied into it).
                Ok(unsafe {
                    std::mem::transmute::<ArrayView<'_, T, D>, ArrayView<'py, T, D>>(array)
                })
            },
        )?;
        Ok(TensorArg {
            view,
            held,
            _constraints: PhantomData,
        })
    }
}

impl<'a, 'py, T: Element, D: Dimensionality, C: Constraints> FromPyObject<'a, 'py>
    for TensorArgMut<'py, T, D, C>
{
    type Error = PyErr;

    fn extract(object: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let (held, view, framework) = extract_argument(
            &object,
            true,
            None,
            |view, access| check::<T, D, C>(view, true, access),
            |view| {
                // SAFETY: the argument is the caller's tensor, not read-only, lent to this
                // call for writing (as any in-place kernel argument); the claim made before
                // this runs guarantees that no other tensor argument reaches its memory while
                // the call runs.
                let array =
                    unsafe { view.as_array_mut_unchecked_dim::<T, D>() }.map_err(argument_error)?;
                // SAFETY: as for `TensorArg`: the elements live as long as the returned value,
                // are reached only through it, and the view holds no reference to the
                // descriptor.
                Ok(unsafe {
                    std::mem::transmute::<ArrayViewMut<'_, T, D>, ArrayViewMut<'py, T, D>>(array)
                })
            },
        )?;
        let report = WriteReport {
            rules: framework,
            written: false,
        };
        Ok(TensorArgMut {
            view,
            held,
            report,
            _constraints: PhantomData,
        })
    }
}
