//! Typed tensor arguments for `#[pyfunction]`s: a Rust kernel written once takes NumPy,
//! PyTorch, JAX (any DLPack producer) zero-copy, with its expectations checked at extraction.
//!
//! ```ignore
//! #[pyfunction]
//! fn scale(py: Python<'_>, x: TensorArg<'_, f32, Ix2, CContiguous>, mut out: TensorArgMut<'_, f32, Ix2>, factor: f32) {
//!     py.detach(|| out.view_mut().zip_mut_with(&x.view(), |o, &v| *o = v * factor));
//! }
//! ```

use std::fmt::Write as _;
use std::marker::PhantomData;
use std::ptr::NonNull;

use dlbridge::ffi::DLTensor;
use dlbridge::{DataType, Element, ManagedTensor, TensorView};
use ndarray::{ArrayView, ArrayViewMut, Dimension, IxDyn};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::claims::Claim;
use crate::exchange::exchange_api_enabled;
use crate::numpy;
use crate::type_info::type_info;
use crate::{from_dlpack, ImportOptions};

/// A memory layout a typed argument may require.
pub trait Layout: 'static {
    /// How the layout is named in error messages ("C-contiguous"), empty for any layout.
    const NAME: &'static str;
    /// Whether `view` has this layout.
    fn accepts(view: &TensorView<'_>) -> bool;
}

/// Any strides (negative, broadcast for reading, transposed): the default.
pub struct AnyLayout;
/// Compact row-major strides.
pub struct CContiguous;
/// Compact column-major strides.
pub struct FContiguous;

impl Layout for AnyLayout {
    const NAME: &'static str = "";
    fn accepts(_: &TensorView<'_>) -> bool {
        true
    }
}

impl Layout for CContiguous {
    const NAME: &'static str = "C-contiguous ";
    fn accepts(view: &TensorView<'_>) -> bool {
        view.is_c_contiguous()
    }
}

impl Layout for FContiguous {
    const NAME: &'static str = "F-contiguous ";
    fn accepts(view: &TensorView<'_>) -> bool {
        view.is_f_contiguous()
    }
}

/// Extents a typed argument requires: exact (`Some(n)`) or any (`None`) for each dimension.
/// Declare one with [`shape!`](crate::shape); [`AnyShape`] (the default) accepts any shape.
pub trait Shape: 'static {
    /// The required extents, one per dimension; `None` for no requirement.
    const EXTENTS: Option<&'static [Option<usize>]>;
}

/// Any shape: the default.
pub struct AnyShape;

impl Shape for AnyShape {
    const EXTENTS: Option<&'static [Option<usize>]> = None;
}

/// Declares a [`Shape`] for typed arguments: `_` for a free extent, an integer for an exact
/// one. A tensor of another shape is refused at extraction with `ValueError` (wrong extents)
/// or `TypeError` (wrong number of dimensions, or anything else wrong as well).
///
/// ```
/// use dlbridge_pyo3::{shape, AnyLayout, Shape, TensorArg};
/// use ndarray::Ix3;
///
/// shape!(
///     /// Images with three colour channels, last.
///     pub Rgb = [_, _, 3]
/// );
/// assert_eq!(Rgb::EXTENTS, Some(&[None, None, Some(3)][..]));
///
/// // A kernel argument: `image: TensorArg<'_, u8, Ix3, AnyLayout, Rgb>`.
/// type Image<'a> = TensorArg<'a, u8, Ix3, AnyLayout, Rgb>;
/// ```
#[macro_export]
macro_rules! shape {
    ($(#[$meta:meta])* $vis:vis $name:ident = [$($extent:tt),* $(,)?]) => {
        $(#[$meta])*
        $vis struct $name;
        impl $crate::Shape for $name {
            const EXTENTS: ::core::option::Option<&'static [::core::option::Option<usize>]> =
                ::core::option::Option::Some(&[$($crate::shape!(@extent $extent)),*]);
        }
    };
    (@extent _) => { ::core::option::Option::None };
    (@extent $n:literal) => { ::core::option::Option::Some($n) };
}

/// Where an argument's descriptor came from: borrowed from the producer through its exchange
/// API table (no allocation), or imported and owned for the call. One pointer wide (the
/// owned tensor is boxed on that path, which allocates anyway), so that arguments stay small
/// to move on the borrowed path.
enum Source {
    Borrowed,
    Buffer(#[allow(dead_code)] HeldBuffer),
    Owned(#[allow(dead_code)] Box<ManagedTensor>),
}

/// A buffer-protocol export (NumPy arrays, any exporter of host memory) held for the call and
/// released, with the GIL, when the argument is dropped. Boxed: some exporters point the
/// buffer's fields at the buffer itself.
struct HeldBuffer(Box<pyo3::ffi::Py_buffer>);

impl Drop for HeldBuffer {
    fn drop(&mut self) {
        Python::attach(|_py| {
            // SAFETY: filled by a successful `PyObject_GetBuffer`, released once, here, with
            // the GIL held.
            unsafe { pyo3::ffi::PyBuffer_Release(&mut *self.0) }
        });
    }
}

/// The most dimensions the buffer-protocol path handles (more go through DLPack).
const BUFFER_MAX_NDIM: usize = 32;

/// Converts byte strides (the buffer protocol's, NumPy's) into DLPack's strides in items,
/// written to the front of `out`; `false` when a stride is not a whole number of items.
/// `itemsize` is positive.
pub(crate) fn element_strides(byte_strides: &[isize], itemsize: isize, out: &mut [i64]) -> bool {
    // Item sizes are powers of two for every data type taken here: strides in whole items are
    // then shifts, which the per-argument hot path prefers to divisions.
    let power_of_two = itemsize & (itemsize - 1) == 0;
    let shift = itemsize.trailing_zeros();
    for (stride, &bytes) in out.iter_mut().zip(byte_strides) {
        let (whole, items) = if power_of_two {
            (bytes & (itemsize - 1) == 0, bytes >> shift)
        } else {
            (bytes % itemsize == 0, bytes / itemsize)
        };
        if !whole {
            return false;
        }
        *stride = items as i64;
    }
    true
}

/// The DLPack data type of a `struct`-module buffer format with this item size, for the
/// formats host tensors use (native byte order only).
fn buffer_dtype(format: &[u8], itemsize: isize) -> Option<DataType> {
    let format = match format {
        [b'@' | b'=' | b'<', rest @ ..] if cfg!(target_endian = "little") => rest,
        [b'@' | b'=', rest @ ..] => rest,
        other => other,
    };
    let dtype = match format {
        b"b" => DataType::INT8,
        b"B" => DataType::UINT8,
        b"h" => DataType::INT16,
        b"H" => DataType::UINT16,
        b"i" | b"l" | b"q" => DataType::int((itemsize * 8) as u8),
        b"I" | b"L" | b"Q" => DataType::uint((itemsize * 8) as u8),
        b"e" => DataType::FLOAT16,
        b"f" => DataType::FLOAT32,
        b"d" => DataType::FLOAT64,
        b"?" => DataType::BOOL,
        b"Zf" => DataType::COMPLEX64,
        b"Zd" => DataType::COMPLEX128,
        _ => return None,
    };
    (dtype.size_in_bytes() == Some(itemsize as usize)).then_some(dtype)
}

/// A read-only tensor argument of element type `T`, dimensionality `D` and layout `L`,
/// borrowed zero-copy from any DLPack producer for the duration of the call.
///
/// Extraction checks the data type, the number of dimensions, the layout and that the data is
/// in host memory, and raises `TypeError` naming what was expected and what was received:
/// `argument 'x': expected a float32 C-contiguous cpu tensor with 2 dimensions, got float64
/// shape (3, 4) strides (1, 3) on CPU:0`. When the producer's type publishes DLPack 1.3's C
/// exchange API (PyTorch, PaddlePaddle, dlbridge), the descriptor is borrowed through
/// `dltensor_from_py_object_no_sync` without any heap allocation; otherwise the tensor is
/// imported with [`from_dlpack`] and released after the call.
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

/// A writable tensor argument: as [`TensorArg`], and refused for read-only tensors, for
/// layouts in which two indices reach the same element, and (`ValueError`) for memory that
/// another tensor argument in use also reaches, so that no element is ever both borrowed and
/// written. Writes are seen by the caller's tensor (NumPy array, PyTorch tensor, ...).
pub struct TensorArgMut<
    'a,
    T: Element,
    D: Dimension = IxDyn,
    L: Layout = AnyLayout,
    S: Shape = AnyShape,
> {
    view: ArrayViewMut<'a, T, D>,
    held: Held,
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
    _source: Source,
    /// The argument object, which the caller keeps alive for the call.
    object: NonNull<pyo3::ffi::PyObject>,
}

impl Held {
    /// The argument's Python object.
    fn object<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        // SAFETY: the caller keeps the argument alive for the call, which outlives the
        // argument value holding `self`; the GIL is held (`py`); a new strong reference is
        // taken.
        unsafe { Bound::from_borrowed_ptr(py, self.object.as_ptr()) }
    }
}

impl<'a, T: Element, D: Dimension, L: Layout, S: Shape> TensorArg<'a, T, D, L, S> {
    /// The Python object passed as this argument (to return results of its framework with
    /// [`crate::return_like`], say).
    pub fn object<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.held.object(py)
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

    /// The elements as an `ndarray` view.
    pub fn view(&self) -> ArrayView<'_, T, D> {
        self.view.view()
    }

    /// The elements as a mutable `ndarray` view.
    pub fn view_mut(&mut self) -> ArrayViewMut<'_, T, D> {
        self.view.view_mut()
    }

    /// The elements as a mutable slice in memory order, when the layout is contiguous.
    pub fn as_mut_slice(&mut self) -> Option<&mut [T]> {
        self.view.as_slice_memory_order_mut()
    }
}

/// What an argument's type asks for, in words: "a float32 C-contiguous cpu tensor with 2
/// dimensions".
fn expectation<T: Element, D: Dimension, L: Layout, S: Shape>(writable: bool) -> String {
    let mut text = format!(
        "a {}{} {}cpu tensor",
        if writable { "writable " } else { "" },
        T::DTYPE,
        L::NAME
    );
    if let Some(extents) = S::EXTENTS {
        let parts: Vec<String> = extents
            .iter()
            .map(|extent| extent.map_or_else(|| "_".to_owned(), |n| n.to_string()))
            .collect();
        let comma = if parts.len() == 1 { "," } else { "" };
        let _ = write!(text, " of shape ({}{comma})", parts.join(", "));
    } else if let Some(ndim) = D::NDIM {
        let _ = write!(
            text,
            " with {ndim} dimension{}",
            if ndim == 1 { "" } else { "s" }
        );
    }
    text
}

/// What was received, in words: "float64 shape (3, 4) strides (1, 3) on CPU:0".
fn received(view: &TensorView<'_>, read_only: bool) -> String {
    let tuple = |values: &[i64]| match values {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            values
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    format!(
        "{} shape {} strides {} on {}{}",
        view.dtype(),
        tuple(view.shape()),
        tuple(view.strides()),
        view.device(),
        if read_only { " (read-only)" } else { "" }
    )
}

/// Checks a descriptor against an argument type's expectations.
fn check<T: Element, D: Dimension, L: Layout, S: Shape>(
    view: &TensorView<'_>,
    writable: bool,
    read_only: bool,
) -> PyResult<()> {
    let fits = view.dtype() == T::DTYPE
        && D::NDIM.is_none_or(|ndim| ndim == view.ndim())
        && L::accepts(view)
        && view.device().is_host_readable()
        && !(writable && read_only);
    let shape_fits = S::EXTENTS.is_none_or(|extents| {
        extents.len() == view.ndim()
            && extents
                .iter()
                .zip(view.shape())
                .all(|(expected, &extent)| expected.is_none_or(|n| n as i64 == extent))
    });
    if fits && shape_fits {
        return Ok(());
    }
    let message = format!(
        "expected {}, got {}",
        expectation::<T, D, L, S>(writable),
        received(view, read_only)
    );
    // The right kind of tensor with the wrong extents is a bad value, anything else a bad type.
    Err(if fits {
        PyValueError::new_err(message)
    } else {
        PyTypeError::new_err(message)
    })
}

/// Borrows or imports the tensor behind `object`, and runs `make` on its validated view while
/// the descriptor is alive. In order: the producer's C exchange API
/// (`dltensor_from_py_object_no_sync`, no allocation), the buffer protocol (NumPy and other
/// host-memory exporters, no negotiation), then a full DLPack import held for the call.
#[inline(always)]
fn extract_with<R>(
    object: &Bound<'_, PyAny>,
    writable: bool,
    make: impl Fn(&TensorView<'_>, bool) -> PyResult<R>,
) -> PyResult<(Source, R)> {
    let info = type_info(object)?;
    if let Some(api) = info.exchange {
        let described = if exchange_api_enabled() {
            api.describe(object)?
        } else {
            None
        };
        let view = match &described {
            // SAFETY: the producer filled the descriptor for an object the caller keeps alive
            // and unchanged for the call.
            Some(tensor) => Some(
                unsafe { TensorView::from_dltensor(tensor) }
                    .map_err(|e| PyTypeError::new_err(e.to_string()))?,
            ),
            None => None,
        };
        let faithful = api.is_faithful(object, view.as_ref())?;
        if !faithful && writable {
            return Err(PyTypeError::new_err(
                "a PyTorch view with a lazy conjugation or negation bit cannot be written in \
                 place (its memory holds other values); pass x.resolve_conj().resolve_neg()",
            ));
        }
        if let Some(view) = view.filter(|_| faithful) {
            return Ok((Source::Borrowed, make(&view, false)?));
        }
    } else if info.numpy_array {
        // SAFETY: the type is exactly `numpy.ndarray`; the caller holds the array for the
        // call, and the view is used only inside `make`.
        if let Some(made) = unsafe { numpy::with_array_view(object, &make) }? {
            return Ok((Source::Borrowed, made));
        }
    } else if let Some(result) = extract_buffer(object, &make)? {
        return Ok(result);
    }
    // `from_dlpack` resolves lazy PyTorch views (a copy, read-only use only).
    let tensor = from_dlpack(object, &ImportOptions::default())?;
    let made = {
        let view = tensor.view();
        make(&view, view.is_read_only())?
    };
    Ok((Source::Owned(Box::new(tensor)), made))
}

/// The buffer-protocol path of [`extract_with`]; `None` when the object has no usable buffer
/// (no buffer, a format or layout this path does not take): DLPack is tried next.
fn extract_buffer<R>(
    object: &Bound<'_, PyAny>,
    make: &impl Fn(&TensorView<'_>, bool) -> PyResult<R>,
) -> PyResult<Option<(Source, R)>> {
    // SAFETY: a live object; the call only inspects its type.
    if unsafe { pyo3::ffi::PyObject_CheckBuffer(object.as_ptr()) } != 1 {
        return Ok(None);
    }
    // SAFETY: an all-zero Py_buffer is a valid value to hand to `PyObject_GetBuffer`.
    let mut buffer: Box<pyo3::ffi::Py_buffer> = Box::new(unsafe { std::mem::zeroed() });
    // SAFETY: a live object and a Py_buffer to fill; strides and format are requested.
    if unsafe {
        pyo3::ffi::PyObject_GetBuffer(object.as_ptr(), &mut *buffer, pyo3::ffi::PyBUF_RECORDS_RO)
    } != 0
    {
        drop(PyErr::take(object.py()));
        return Ok(None);
    }
    let held = HeldBuffer(buffer);
    let buffer = &*held.0;
    let ndim = buffer.ndim as usize;
    if buffer.format.is_null() || ndim > BUFFER_MAX_NDIM || buffer.itemsize <= 0 {
        return Ok(None);
    }
    // SAFETY: a filled buffer's format is a NUL-terminated string.
    let format = unsafe { std::ffi::CStr::from_ptr(buffer.format) }.to_bytes();
    let Some(dtype) = buffer_dtype(format, buffer.itemsize) else {
        return Ok(None);
    };
    let mut strides = [0i64; BUFFER_MAX_NDIM];
    if ndim > 0 {
        if buffer.shape.is_null() || buffer.strides.is_null() {
            return Ok(None);
        }
        // SAFETY: strides were requested: `ndim` byte strides.
        let byte_strides = unsafe { std::slice::from_raw_parts(buffer.strides, ndim) };
        if !element_strides(byte_strides, buffer.itemsize, &mut strides) {
            return Ok(None);
        }
    }
    let tensor = DLTensor {
        data: buffer.buf,
        device: dlbridge::Device::CPU,
        ndim: ndim as i32,
        dtype,
        // `Py_ssize_t` is `i64` wherever this crate builds (checked below).
        shape: buffer.shape.cast::<i64>(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    // SAFETY: the buffer's memory, shape and the local strides stay valid while `held` and
    // `strides` live, which is past every use of the view (inside `make`).
    let view = unsafe { TensorView::from_dltensor(&tensor) }
        .map_err(|e| PyTypeError::new_err(e.to_string()))?;
    let made = make(&view, buffer.readonly != 0)?;
    Ok(Some((Source::Buffer(held), made)))
}

const _: () = assert!(std::mem::size_of::<isize>() == std::mem::size_of::<i64>());

fn array_error(error: dlbridge::Error) -> PyErr {
    PyTypeError::new_err(error.to_string())
}

/// What the two argument types share at extraction: borrow or import the tensor, check it
/// against the type's expectations (`check`), claim its memory (written or not), and make the
/// argument's view (`make`) while the descriptor is alive.
#[inline(always)]
fn extract_argument<V>(
    object: &Borrowed<'_, '_, PyAny>,
    writable: bool,
    check: impl Fn(&TensorView<'_>, bool) -> PyResult<()>,
    make: impl Fn(&TensorView<'_>) -> PyResult<V>,
) -> PyResult<(Held, V)> {
    let (source, (claim, view)) = extract_with(object, writable, |view, read_only| {
        check(view, read_only)?;
        let claim = Claim::new(object.py(), view, writable)?;
        Ok((claim, make(view)?))
    })?;
    let held = Held {
        _claim: claim,
        _source: source,
        object: NonNull::new(object.as_ptr()).expect("a Python object"),
    };
    Ok((held, view))
}

impl<'a, 'py, T: Element, D: Dimension, L: Layout, S: Shape> FromPyObject<'a, 'py>
    for TensorArg<'a, T, D, L, S>
{
    type Error = PyErr;

    fn extract(object: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let (held, view) = extract_argument(
            &object,
            false,
            |view, read_only| check::<T, D, L, S>(view, false, read_only),
            |view| {
                let array = view.as_array_dim::<T, D>().map_err(array_error)?;
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
        let (held, view) = extract_argument(
            &object,
            true,
            |view, read_only| check::<T, D, L, S>(view, true, read_only),
            |view| {
                // SAFETY: the argument is the caller's tensor, not read-only, lent to this
                // call for writing (as any in-place kernel argument); the claim made before
                // this runs guarantees that no other tensor argument reaches its memory while
                // the call runs.
                let array =
                    unsafe { view.as_array_mut_unchecked_dim::<T, D>() }.map_err(array_error)?;
                // SAFETY: as for `TensorArg`: the elements outlive `'a` and the view holds no
                // reference to the descriptor.
                Ok(unsafe {
                    std::mem::transmute::<ArrayViewMut<'_, T, D>, ArrayViewMut<'a, T, D>>(array)
                })
            },
        )?;
        Ok(TensorArgMut {
            view,
            held,
            _layout: PhantomData,
        })
    }
}
