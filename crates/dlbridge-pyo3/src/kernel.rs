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
use dlbridge::{DataType, Element, ManagedTensor, TensorView, Writability};
use ndarray::{ArrayView, ArrayViewMut, Dimension, IxDyn};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::claims::Claim;
use crate::exchange::{exchange_api_enabled, ExchangeApi};
use crate::framework::FrameworkRules;
use crate::numpy;
use crate::producer::writability_from_code;
use crate::type_info::{type_info, BorrowedWritability, TypeInfo};
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
    /// A descriptor borrowed from the producer: its exchange table, or NumPy's array struct.
    Borrowed,
    /// A buffer-protocol export.
    Buffer(#[allow(dead_code)] HeldBuffer),
    /// An owned tensor: an export through the exchange table
    /// (`managed_tensor_from_py_object_no_sync`), or a full import ([`from_dlpack`], the
    /// reference path).
    Owned(Box<OwnedTensor>),
}

/// The tensor of [`Source::Owned`].
struct OwnedTensor {
    _tensor: ManagedTensor,
    /// Exported through the exchange table (not imported with [`from_dlpack`]).
    through_table: bool,
}

impl Source {
    /// An owned tensor.
    fn owned(tensor: ManagedTensor, through_table: bool) -> Self {
        Source::Owned(Box::new(OwnedTensor {
            _tensor: tensor,
            through_table,
        }))
    }
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
/// `dltensor_from_py_object_no_sync` without any heap allocation; NumPy arrays are read from
/// their struct, other host memory through the buffer protocol; otherwise the tensor is
/// imported with [`from_dlpack`] and released after the call. Every path sees what the
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
    _source: Source,
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
fn received(view: &TensorView<'_>, writability: Writability) -> String {
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
    let read_only = match writability {
        Writability::Unknown => {
            " (read-only: it came in a legacy DLPack capsule, which cannot say whether its \
             memory may be written; JAX and TensorFlow export only those)"
        }
        Writability::ReadOnly => " (read-only)",
        Writability::Writable => "",
    };
    format!(
        "{} shape {} strides {} on {}{read_only}",
        view.dtype(),
        tuple(view.shape()),
        tuple(view.strides()),
        view.device(),
    )
}

/// Checks a descriptor against an argument type's expectations.
fn check<T: Element, D: Dimension, L: Layout, S: Shape>(
    view: &TensorView<'_>,
    writable: bool,
    writability: Writability,
) -> PyResult<()> {
    let fits = view.dtype() == T::DTYPE
        && D::NDIM.is_none_or(|ndim| ndim == view.ndim())
        && L::accepts(view)
        && view.device().is_host_readable()
        && (!writable || writability.allows_writes());
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
        received(view, writability)
    );
    // The right kind of tensor with the wrong extents is a bad value, anything else a bad type.
    Err(if fits {
        PyValueError::new_err(message)
    } else {
        PyTypeError::new_err(message)
    })
}

/// Borrows or imports the tensor behind `object`, and runs `make` on its validated view while
/// the descriptor is alive, with whether it is read-only. In order:
///
/// 1. the producer's C exchange API (`dltensor_from_py_object_no_sync`, no allocation), when
///    its type publishes one that answers as its `__dlpack__` does. A `DLTensor` cannot say
///    READ_ONLY, so for a writable argument the writability comes from what is known of the
///    type (PyTorch and PaddlePaddle have no read-only tensors; dlbridge's classes publish a
///    writability hook), or else from an owned export (`managed_tensor_from_py_object_no_sync`),
///    which has flags;
/// 2. NumPy's array struct, for exactly `numpy.ndarray`;
/// 3. the buffer protocol (other host-memory exporters, no negotiation);
/// 4. the reference: a full DLPack import ([`from_dlpack`]) held for the call, of
///    `x.detach()` for a tensor autograd tracks (a read-only argument reads it as `detach()`
///    does; a writable one was checked before, [`crate::framework`]).
///
/// Whatever a fast path fails on (a tensor the table cannot describe, a lazy PyTorch view)
/// goes to the reference, so that a refusal is the producer's own (`BufferError` from
/// `__dlpack__`) on every path.
#[inline(always)]
fn extract_with<R>(
    object: &Bound<'_, PyAny>,
    info: &TypeInfo,
    writable: bool,
    make: impl Fn(&TensorView<'_>, Writability) -> PyResult<R>,
) -> PyResult<(Source, R)> {
    if writable {
        if let Some(rules) = info.framework {
            rules.check_writable(object)?;
        }
    }
    if let Some(api) = info.exchange {
        // A type with a table takes no other fast path: its buffer export (if any) may name
        // its data type differently (dlbridge's own shows bfloat16 as uint16 bits); with the
        // table turned off it goes to the reference.
        if exchange_api_enabled() {
            if let Some(made) = extract_from_table(api, info, object, writable, &make)? {
                return Ok(made);
            }
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
    let source = match info.framework {
        Some(rules) => rules.untracked(object)?,
        None => object.clone(),
    };
    let tensor = from_dlpack(&source, &ImportOptions::default())?;
    let made = {
        let view = tensor.view();
        make(&view, view.writability())?
    };
    Ok((Source::owned(tensor, false), made))
}

/// The exchange-table path of [`extract_with`]; `None` sends the argument to the reference
/// path (a descriptor the table cannot give, a lazy PyTorch view).
#[inline(always)]
fn extract_from_table<R>(
    api: ExchangeApi,
    info: &TypeInfo,
    object: &Bound<'_, PyAny>,
    writable: bool,
    make: &impl Fn(&TensorView<'_>, Writability) -> PyResult<R>,
) -> PyResult<Option<(Source, R)>> {
    let known_writability =
        !writable || !matches!(info.borrowed_writability, BorrowedWritability::Unknown);
    let described = if known_writability {
        match api.describe(object) {
            Ok(described) => described,
            Err(_) => return Ok(None),
        }
    } else {
        None
    };
    let Some(tensor) = described else {
        // No borrowed descriptor (the table has no `dltensor_from_py_object_no_sync`, or the
        // writability of one would not be known): an owned export, which has flags.
        let Ok(tensor) = api.managed_tensor(object) else {
            drop(PyErr::take(object.py()));
            return Ok(None);
        };
        let made = {
            let view = tensor.view();
            if !api.is_faithful(object, Some(&view))? {
                return Ok(None);
            }
            make(&view, view.writability())?
        };
        return Ok(Some((Source::owned(tensor, true), made)));
    };
    // SAFETY: the producer filled the descriptor for an object the caller keeps alive and
    // unchanged for the call.
    let view = unsafe { TensorView::from_dltensor(&tensor) }
        .map_err(|e| PyTypeError::new_err(e.to_string()))?;
    if !api.is_faithful(object, Some(&view))? {
        return Ok(None);
    }
    let writability = match info.borrowed_writability {
        // Reading does not ask.
        _ if !writable => Writability::Writable,
        BorrowedWritability::AlwaysWritable | BorrowedWritability::Unknown => Writability::Writable,
        BorrowedWritability::Hook(writability_of) => {
            let mut code = 0u32;
            // SAFETY: the hook's contract: a live object of the publishing type (the table's
            // type, checked by the per-type lookup), the GIL held, a slot for the answer.
            if unsafe { writability_of(object.as_ptr(), &mut code) } != 0 {
                return Err(PyErr::fetch(object.py()));
            }
            writability_from_code(code)
        }
    };
    Ok(Some((Source::Borrowed, make(&view, writability)?)))
}

/// The buffer-protocol path of [`extract_with`]; `None` when the object has no usable buffer
/// (no buffer, a format or layout this path does not take): DLPack is tried next.
fn extract_buffer<R>(
    object: &Bound<'_, PyAny>,
    make: &impl Fn(&TensorView<'_>, Writability) -> PyResult<R>,
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
    let writability = if buffer.readonly != 0 {
        Writability::ReadOnly
    } else {
        Writability::Writable
    };
    let made = make(&view, writability)?;
    Ok(Some((Source::Buffer(held), made)))
}

/// What a typed argument would see of an object, whatever its data type: for tests that
/// compare every path of typed arguments with the producer's own `__dlpack__`. Not a stable
/// API.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct ArgumentInspection {
    /// The path taken: `"exchange"` (a descriptor borrowed through the exchange table),
    /// `"exchange-export"` (an owned export through it), `"numpy"` (NumPy's array struct),
    /// `"buffer"` (the buffer protocol) or `"dlpack"` (a full import, the reference).
    pub path: &'static str,
    /// The data type.
    pub dtype: DataType,
    /// The device.
    pub device: dlbridge::Device,
    /// The extents.
    pub shape: Vec<i64>,
    /// The strides, in elements.
    pub strides: Vec<i64>,
    /// Whether the argument would be read-only (a `TensorArgMut` refuses it).
    pub read_only: bool,
    /// The address of the first element.
    pub data: usize,
    /// The elements' bytes in row-major order (host memory, whole-byte types), else `None`.
    pub bytes: Option<Vec<u8>>,
}

/// Runs the extraction of a typed argument (`writable`: a `TensorArgMut`'s, whose refusals
/// of tensors autograd tracks apply) on `object` and reports what it saw, with no check of
/// data type, dimensions or layout, and no claim on the memory. Not a stable API: for tests.
#[doc(hidden)]
pub fn inspect_argument(object: &Bound<'_, PyAny>, writable: bool) -> PyResult<ArgumentInspection> {
    let info = type_info(object)?;
    let (source, mut inspection) = extract_with(object, info, writable, |view, writability| {
        let bytes = if view.device().is_host_readable() && view.dtype().size_in_bytes().is_some() {
            let copy = view.to_compact_copy().map_err(crate::to_py_err)?;
            let copy_view = copy.view();
            let length = copy_view.compact_byte_size() as usize;
            // SAFETY: a compact copy of `length` readable bytes, alive for this block.
            Some(unsafe {
                std::slice::from_raw_parts(copy_view.data_ptr().cast::<u8>(), length).to_vec()
            })
        } else {
            None
        };
        Ok(ArgumentInspection {
            path: "",
            dtype: view.dtype(),
            device: view.device(),
            shape: view.shape().to_vec(),
            strides: view.strides().to_vec(),
            read_only: !writability.allows_writes(),
            data: view.data_ptr() as usize,
            bytes,
        })
    })?;
    inspection.path = match (&source, info.exchange.is_some()) {
        (Source::Borrowed, true) => "exchange",
        (Source::Borrowed, false) => "numpy",
        (Source::Buffer(_), _) => "buffer",
        (Source::Owned(owned), _) if owned.through_table => "exchange-export",
        (Source::Owned(_), _) => "dlpack",
    };
    Ok(inspection)
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
        _source: source,
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
                    unsafe { view.as_array_mut_unchecked_dim::<T, D>() }.map_err(array_error)?;
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
