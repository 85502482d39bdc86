//! What a typed argument requires of a tensor, declared in its type: the number of
//! dimensions ([`Dimensionality`]: ndarray's `Ix1`..`Ix6`, `IxDyn`) and any constraints
//! ([`Constraints`]): a layout ([`LayoutConstraint`]: C- or F-contiguous), extents ([`shape!`](crate::shape)),
//! or both, as a tuple in either order; and the check of a descriptor against them, whose
//! message says what was expected and what was received.

use std::fmt::Write as _;

use dlbridge::{Device, DeviceType, Element, TensorView, Writability};

use super::borrow::Access;
use crate::errors::tuple;
use crate::explain::ArgumentPath;
use ndarray::{Dimension, Ix0, Ix1, Ix2, Ix3, Ix4, Ix5, Ix6, IxDyn};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// The number of dimensions a typed argument requires, its second type parameter: ndarray's
/// `Ix0` to `Ix6` for an exact number, `IxDyn` (the default) for any.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// // Exactly two dimensions, or any number.
/// type Matrix<'a> = TensorArg<'a, f32, Ix2>;
/// type AnyRank<'a> = TensorArg<'a, f32, IxDyn>;
/// assert_eq!(<Ix2 as ndarray::Dimension>::NDIM, Some(2));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a number of dimensions",
    label = "expected ndarray's `Ix0`..`Ix6` or `IxDyn` here",
    note = "the parameters are `TensorArg<'_, Element, Dimensions, Constraints>`: the element \
            type (`f32`, `u8`, ...), the number of dimensions (`Ix2`, `IxDyn`, ...), then the \
            constraints (`CContiguous`, a `shape!`, or a tuple of them)"
)]
pub trait Dimensionality: Dimension {}

impl Dimensionality for Ix0 {}
impl Dimensionality for Ix1 {}
impl Dimensionality for Ix2 {}
impl Dimensionality for Ix3 {}
impl Dimensionality for Ix4 {}
impl Dimensionality for Ix5 {}
impl Dimensionality for Ix6 {}
impl Dimensionality for IxDyn {}

/// A memory layout a typed argument may require: [`AnyLayout`], [`CContiguous`] or
/// [`FContiguous`]. A layout is also a [`Constraints`] on its own.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// assert_eq!(CContiguous::NAME, "C-contiguous ");
/// assert_eq!(AnyLayout::NAME, "");
/// // A layout is a constraint of its own: `TensorArg<'_, f64, Ix2, FContiguous>` takes
/// // column-major matrices (a transposed C-contiguous one, say) and nothing else.
/// type ColumnMajor<'a> = TensorArg<'a, f64, Ix2, FContiguous>;
/// ```
pub trait LayoutConstraint: 'static {
    /// How the layout is named in error messages ("C-contiguous"), empty for any layout.
    const NAME: &'static str;
    /// Whether `view` has this layout.
    fn accepts(view: &TensorView<'_>) -> bool;
}

/// Any strides (negative, broadcast for reading, transposed): the default, also what `()`
/// constrains to.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// fn same<A: 'static, B: 'static>() -> bool {
///     std::any::TypeId::of::<A>() == std::any::TypeId::of::<B>()
/// }
/// assert!(same::<<() as Constraints>::Layout, AnyLayout>());
/// ```
pub struct AnyLayout;
/// Compact row-major strides: the elements fill one slice, in the order of their indices.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// #[pyfunction]
/// fn checksum(bytes: TensorArg<'_, u8, IxDyn, CContiguous>) -> u64 {
///     bytes.as_slice().iter().map(|&byte| u64::from(byte)).sum()
/// }
/// # Python::initialize();
/// # Python::attach(|py| {
/// #     let checksum = wrap_pyfunction!(checksum, py).unwrap();
/// #     assert_eq!(checksum.call1((pyo3::types::PyBytes::new(py, &[1, 2, 3]),)).unwrap().extract::<u64>().unwrap(), 6);
/// # });
/// ```
pub struct CContiguous;
/// Compact column-major strides: the elements fill one slice, first index fastest.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// /// A column-major matrix for a Fortran-order routine (LAPACK, say).
/// type FortranMatrix<'a> = TensorArg2<'a, f64, FContiguous>;
/// assert_eq!(FContiguous::NAME, "F-contiguous ");
/// ```
pub struct FContiguous;

impl LayoutConstraint for AnyLayout {
    const NAME: &'static str = "";
    fn accepts(_: &TensorView<'_>) -> bool {
        true
    }
}

impl LayoutConstraint for CContiguous {
    const NAME: &'static str = "C-contiguous ";
    fn accepts(view: &TensorView<'_>) -> bool {
        view.is_c_contiguous()
    }
}

impl LayoutConstraint for FContiguous {
    const NAME: &'static str = "F-contiguous ";
    fn accepts(view: &TensorView<'_>) -> bool {
        view.is_f_contiguous()
    }
}

/// The layouts whose elements fill one slice, for which `as_slice` cannot fail.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// // `as_slice` is there for these argument types, and does not compile for `AnyLayout`:
/// fn first(x: &ContiguousArg<'_, f32>) -> Option<f32> {
///     x.as_slice().first().copied()
/// }
/// fn first_of_column_major(x: &TensorArg2<'_, f32, FContiguous>) -> Option<f32> {
///     x.as_slice().first().copied()
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`as_slice` needs a contiguous layout; `{Self}` allows any strides",
    label = "this argument's type does not promise one slice of elements",
    note = "require a layout in the argument's type (`TensorArg<'_, f32, Ix2, CContiguous>`, \
            or `(CContiguous, MyShape)` with a shape), or call `try_as_slice`, which is \
            `None` for a tensor that is not contiguous"
)]
pub trait Contiguous: LayoutConstraint {}

impl Contiguous for CContiguous {}
impl Contiguous for FContiguous {}

/// The layout that satisfies both `Self` and `Other`, for constraints given together in a
/// tuple. C- and F-contiguous cannot be asked for together.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::LayoutWith;
///
/// fn same<A: 'static, B: 'static>() -> bool {
///     std::any::TypeId::of::<A>() == std::any::TypeId::of::<B>()
/// }
/// assert!(same::<<AnyLayout as LayoutWith<CContiguous>>::Both, CContiguous>());
/// assert!(same::<<FContiguous as LayoutWith<FContiguous>>::Both, FContiguous>());
/// ```
#[diagnostic::on_unimplemented(
    message = "conflicting layouts: `{Self}` and `{Other}` cannot both be required",
    label = "two different layouts in one argument's constraints",
    note = "give at most one of `CContiguous` and `FContiguous`"
)]
pub trait LayoutWith<Other: LayoutConstraint>: LayoutConstraint {
    /// The layout both require.
    type Both: LayoutConstraint;
}

macro_rules! layouts_with {
    ($($first:ty, $second:ty => $both:ty;)*) => {
        $(impl LayoutWith<$second> for $first {
            type Both = $both;
        })*
    };
}

layouts_with! {
    AnyLayout, AnyLayout => AnyLayout;
    AnyLayout, CContiguous => CContiguous;
    AnyLayout, FContiguous => FContiguous;
    CContiguous, AnyLayout => CContiguous;
    CContiguous, CContiguous => CContiguous;
    FContiguous, AnyLayout => FContiguous;
    FContiguous, FContiguous => FContiguous;
}

/// What a typed argument requires beyond its element type and number of dimensions, its last
/// type parameter: `()` (the default: nothing), a layout ([`CContiguous`], [`FContiguous`]),
/// a shape declared with [`shape!`](crate::shape), or a tuple of those in any order
/// (`(Rgb, CContiguous)`), with at most one layout and one shape.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// shape!(
///     /// Images with three colour channels, last.
///     pub Rgb = [_, _, 3]
/// );
///
/// // Any image, read through any strides:
/// type Image<'a> = TensorArg<'a, u8, Ix3, Rgb>;
/// // A C-contiguous one, whose `as_slice()` cannot fail:
/// type PackedImage<'a> = TensorArg<'a, u8, Ix3, (Rgb, CContiguous)>;
/// // The order in the tuple does not matter:
/// type SamePackedImage<'a> = TensorArg<'a, u8, Ix3, (CContiguous, Rgb)>;
///
/// assert_eq!(<(CContiguous, Rgb) as Constraints>::EXTENTS, Some(&[None, None, Some(3)][..]));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tensor constraint",
    label = "expected a layout, a shape or a tuple of them here",
    note = "the parameters are `TensorArg<'_, Element, Dimensions, Constraints>`; constraints \
            are `CContiguous`, `FContiguous`, a shape declared with `shape!`, or a tuple of \
            them such as `(Rgb, CContiguous)`"
)]
pub trait Constraints: 'static {
    /// The layout required ([`AnyLayout`] for none).
    type Layout: LayoutConstraint;
    /// The required extents, one per dimension (`None` for a free one); `None` for no shape.
    const EXTENTS: Option<&'static [Option<usize>]>;
    /// The range of numbers of dimensions allowed, both ends included ([`DimsBetween`]);
    /// `None` for any.
    const NDIM_RANGE: Option<(usize, usize)> = None;
}

impl Constraints for () {
    type Layout = AnyLayout;
    const EXTENTS: Option<&'static [Option<usize>]> = None;
}

macro_rules! layout_constraints {
    ($($layout:ty),*) => {
        $(impl Constraints for $layout {
            type Layout = Self;
            const EXTENTS: Option<&'static [Option<usize>]> = None;
        })*
    };
}

layout_constraints!(AnyLayout, CContiguous, FContiguous);

/// The one shape among two constraints' (a compile-time error when both have one).
const fn one_shape(
    first: Option<&'static [Option<usize>]>,
    second: Option<&'static [Option<usize>]>,
) -> Option<&'static [Option<usize>]> {
    match (first, second) {
        (Some(_), Some(_)) => panic!("a typed argument's constraints hold two shapes: give one"),
        (Some(extents), None) | (None, Some(extents)) => Some(extents),
        (None, None) => None,
    }
}

impl<A: Constraints, B: Constraints> Constraints for (A, B)
where
    A::Layout: LayoutWith<B::Layout>,
{
    type Layout = <A::Layout as LayoutWith<B::Layout>>::Both;
    const EXTENTS: Option<&'static [Option<usize>]> = one_shape(A::EXTENTS, B::EXTENTS);
    const NDIM_RANGE: Option<(usize, usize)> = one_range(A::NDIM_RANGE, B::NDIM_RANGE);
}

impl<A: Constraints, B: Constraints, C: Constraints> Constraints for (A, B, C)
where
    (A, B): Constraints,
    ((A, B), C): Constraints,
{
    type Layout = <((A, B), C) as Constraints>::Layout;
    const EXTENTS: Option<&'static [Option<usize>]> = <((A, B), C) as Constraints>::EXTENTS;
    const NDIM_RANGE: Option<(usize, usize)> = <((A, B), C) as Constraints>::NDIM_RANGE;
}

/// The one range of numbers of dimensions among two constraints' (a compile-time error when
/// both have one).
const fn one_range(
    first: Option<(usize, usize)>,
    second: Option<(usize, usize)>,
) -> Option<(usize, usize)> {
    match (first, second) {
        (Some(_), Some(_)) => {
            panic!("a typed argument's constraints hold two DimsBetween: give one")
        }
        (Some(range), None) | (None, Some(range)) => Some(range),
        (None, None) => None,
    }
}

/// Requires between `MIN` and `MAX` dimensions, both included, of an `IxDyn` argument: a
/// kernel that takes "a matrix or a batch of matrices" says so in its type, and a tensor of
/// another number of dimensions is refused at extraction with a `TypeError` that says
/// "with 2 to 3 dimensions". Give it alone or in a tuple with a layout
/// (`(DimsBetween<2, 3>, CContiguous)`); not with a [`shape!`](crate::shape), which fixes
/// the number of dimensions itself. `MIN` above `MAX`, or a fixed number of dimensions
/// (`Ix1`..`Ix6`) outside the range, fails to build.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// /// The sum of each matrix of `x`: one matrix, or a batch of them.
/// #[pyfunction]
/// fn matrix_sums(x: TensorArg<'_, f64, IxDyn, DimsBetween<2, 3>>) -> Vec<f64> {
///     let view = x.view();
///     if view.ndim() == 2 {
///         vec![view.sum()]
///     } else {
///         view.outer_iter().map(|matrix| matrix.sum()).collect()
///     }
/// }
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     let matrix_sums = wrap_pyfunction!(matrix_sums, py)?;
///     let ones = |shape: &str| {
///         let code = format!("memoryview(__import__('struct').pack('24d', *[1.0] * 24)).cast('B').cast('d', {shape})");
///         py.eval(&std::ffi::CString::new(code).unwrap(), None, None)
///     };
///     let batch = ones("(2, 3, 4)")?;
///     assert_eq!(matrix_sums.call1((batch,))?.extract::<Vec<f64>>()?, [12.0, 12.0]);
///     let vector = ones("(24,)")?;
///     let refused = matrix_sums.call1((vector,)).unwrap_err().to_string();
///     assert!(refused.contains("with 2 to 3 dimensions"), "{refused}");
///     Ok(())
/// })
/// # .unwrap();
/// ```
///
/// A fixed number of dimensions outside the range fails to build (`cargo build`: the
/// constant that checks it cannot be evaluated, E0080):
///
/// ```compile_fail,E0080
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// Python::initialize();
/// Python::attach(|py| {
///     let matrix = py.eval(c"memoryview(bytearray(4)).cast('B', (2, 2))", None, None).unwrap();
///     // One dimension cannot be between 2 and 3.
///     let matrix = matrix.extract::<TensorArg<'_, u8, Ix1, DimsBetween<2, 3>>>().unwrap();
///     assert_eq!(matrix.view().ndim(), 2);
/// });
/// ```
///
/// Twin, with a number of dimensions in the range: it builds, and the matrix is taken.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// Python::initialize();
/// Python::attach(|py| {
///     let matrix = py.eval(c"memoryview(bytearray(4)).cast('B', (2, 2))", None, None).unwrap();
///     // Two dimensions are between 2 and 3.
///     let matrix = matrix.extract::<TensorArg<'_, u8, Ix2, DimsBetween<2, 3>>>().unwrap();
///     assert_eq!(matrix.view().ndim(), 2);
/// });
/// ```
///
/// An empty range fails to build too (E0080),
///
/// ```compile_fail,E0080
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// Python::initialize();
/// Python::attach(|py| {
///     let matrix = py.eval(c"memoryview(bytearray(4)).cast('B', (2, 2))", None, None).unwrap();
///     // No number of dimensions is between 3 and 2.
///     let matrix = matrix.extract::<TensorArg<'_, u8, IxDyn, DimsBetween<3, 2>>>().unwrap();
///     assert_eq!(matrix.view().ndim(), 2);
/// });
/// ```
///
/// where its twin, a range that holds the tensor's number of dimensions, builds and runs:
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// Python::initialize();
/// Python::attach(|py| {
///     let matrix = py.eval(c"memoryview(bytearray(4)).cast('B', (2, 2))", None, None).unwrap();
///     // Two is between 2 and 3.
///     let matrix = matrix.extract::<TensorArg<'_, u8, IxDyn, DimsBetween<2, 3>>>().unwrap();
///     assert_eq!(matrix.view().ndim(), 2);
/// });
/// ```
pub struct DimsBetween<const MIN: usize, const MAX: usize>;

impl<const MIN: usize, const MAX: usize> Constraints for DimsBetween<MIN, MAX> {
    type Layout = AnyLayout;
    const EXTENTS: Option<&'static [Option<usize>]> = None;
    const NDIM_RANGE: Option<(usize, usize)> = Some((MIN, MAX));
}

/// Declares a shape for typed arguments, a [`Constraints`]: `_` for a free extent, an
/// integer for an exact one. A tensor of another shape is refused at extraction with
/// `ValueError` (wrong extents) or `TypeError` (wrong number of dimensions, or anything else
/// wrong as well). Give it alone (`TensorArg<'_, u8, Ix3, Rgb>`) or with a layout
/// (`TensorArg<'_, u8, Ix3, (Rgb, CContiguous)>`); its number of extents must be the
/// argument's number of dimensions (a compile-time error otherwise, unless that is `IxDyn`).
///
/// ```
/// use dlbridge_pyo3::prelude::*;
///
/// shape!(
///     /// Images with three colour channels, last.
///     pub Rgb = [_, _, 3]
/// );
/// assert_eq!(Rgb::EXTENTS, Some(&[None, None, Some(3)][..]));
///
/// // A kernel argument: `image: TensorArg<'_, u8, Ix3, Rgb>`.
/// type Image<'a> = TensorArg<'a, u8, Ix3, Rgb>;
/// ```
///
/// A shape whose number of extents is not the argument's number of dimensions fails to build
/// (`cargo build`; `cargo check` does not evaluate it), with the message "a typed argument's
/// shape (shape!) has a different number of extents than its dimension type (Ix1..Ix6) has
/// dimensions" (E0080: the constant that checks it cannot be evaluated):
///
/// ```compile_fail,E0080
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// shape!(pub Rgb = [_, _, 3]);
///
/// Python::initialize();
/// Python::attach(|py| {
///     let image = py.eval(c"memoryview(bytearray(12)).cast('B', (2, 2, 3))", None, None).unwrap();
///     // An `Ix2` argument cannot have the three extents of `Rgb`.
///     let image = image.extract::<TensorArg<'_, u8, Ix2, Rgb>>().unwrap();
///     assert_eq!(image.view().shape(), &[2, 2, 3]);
/// });
/// ```
///
/// Twin, an `Ix3` argument: it builds, and the image is taken.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// shape!(pub Rgb = [_, _, 3]);
///
/// Python::initialize();
/// Python::attach(|py| {
///     let image = py.eval(c"memoryview(bytearray(12)).cast('B', (2, 2, 3))", None, None).unwrap();
///     // An `Ix3` argument has the three extents of `Rgb`.
///     let image = image.extract::<TensorArg<'_, u8, Ix3, Rgb>>().unwrap();
///     assert_eq!(image.view().shape(), &[2, 2, 3]);
/// });
/// ```
#[macro_export]
macro_rules! shape {
    ($(#[$meta:meta])* $vis:vis $name:ident = [$($extent:tt),* $(,)?]) => {
        $(#[$meta])*
        $vis struct $name;
        impl $crate::Constraints for $name {
            type Layout = $crate::AnyLayout;
            const EXTENTS: ::core::option::Option<&'static [::core::option::Option<usize>]> =
                ::core::option::Option::Some(&[$($crate::shape!(@extent $extent)),*]);
        }
    };
    (@extent _) => { ::core::option::Option::None };
    (@extent $n:literal) => { ::core::option::Option::Some($n) };
}

/// The compile-time agreement of an argument's number of dimensions and its shape.
struct Agreement<D, C>(std::marker::PhantomData<(D, C)>);

impl<D: Dimension, C: Constraints> Agreement<D, C> {
    /// Evaluated where an argument type is used: a compile-time error for a shape whose number
    /// of extents differs from the dimension type's.
    const HOLDS: () = {
        match (D::NDIM, C::EXTENTS) {
            (Some(ndim), Some(extents)) if ndim != extents.len() => panic!(
                "a typed argument's shape (shape!) has a different number of extents than its \
                 dimension type (Ix1..Ix6) has dimensions"
            ),
            _ => (),
        }
        match (C::NDIM_RANGE, D::NDIM, C::EXTENTS) {
            (Some((min, max)), _, _) if min > max => {
                panic!("DimsBetween<MIN, MAX> with MIN above MAX allows no tensor")
            }
            (Some((min, max)), Some(ndim), _) if ndim < min || ndim > max => panic!(
                "a typed argument's fixed number of dimensions (Ix1..Ix6) is outside its \
                 DimsBetween range"
            ),
            (Some(_), _, Some(_)) => panic!(
                "a typed argument has both a shape (shape!) and a DimsBetween: the shape fixes \
                 the number of dimensions, give one"
            ),
            _ => (),
        }
    };
}

/// Where a typed argument's memory must be: in host memory for [`TensorArg`](crate::TensorArg)
/// (its views read the elements), on a device of the argument's [`DeviceConstraint`] for
/// [`DeviceTensorArg`](crate::DeviceTensorArg).
#[derive(Clone, Copy)]
pub(crate) struct Placement {
    /// How the place is named in messages: "in host memory", "on a CUDA device".
    pub(crate) name: &'static str,
    /// Whether a tensor on `device` is there.
    pub(crate) accepts: fn(Device) -> bool,
}

/// Host memory, the place of [`TensorArg`](crate::TensorArg): CPU, CUDA host (pinned), ROCm
/// host and CUDA managed memory.
pub(crate) const HOST_MEMORY: Placement = Placement {
    name: "in host memory",
    accepts: Device::is_host_readable,
};

/// The device a typed argument's memory must be on, a type parameter of
/// [`DeviceTensorArg`](crate::DeviceTensorArg): [`Cuda`], [`Rocm`], [`AnyDevice`] or
/// [`HostMemory`]. [`TensorArg`](crate::TensorArg) always wants host memory (its views read
/// the elements).
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::dlbridge::{Device, DeviceType};
///
/// assert!(Cuda::accepts(Device::new(DeviceType::CUDA, 1)));
/// assert!(!Cuda::accepts(Device::CPU));
/// assert!(AnyDevice::accepts(Device::CPU));
/// assert_eq!(Rocm::NAME, "on a ROCm device");
/// ```
pub trait DeviceConstraint: 'static {
    /// How the place is named in error messages: "on a CUDA device".
    const NAME: &'static str;
    /// Whether a tensor on `device` is accepted.
    fn accepts(device: Device) -> bool;
}

/// CUDA device memory (`kDLCUDA`, any ordinal).
pub struct Cuda;
/// ROCm device memory (`kDLROCM`, any ordinal).
pub struct Rocm;
/// Any device, host included: the kernel dispatches on [`DeviceTensorArg::device`](crate::DeviceTensorArg::device).
pub struct AnyDevice;
/// Host memory (CPU, CUDA host, ROCm host, CUDA managed), as [`TensorArg`](crate::TensorArg).
pub struct HostMemory;

impl DeviceConstraint for Cuda {
    const NAME: &'static str = "on a CUDA device";
    fn accepts(device: Device) -> bool {
        device.device_type == DeviceType::CUDA
    }
}

impl DeviceConstraint for Rocm {
    const NAME: &'static str = "on a ROCm device";
    fn accepts(device: Device) -> bool {
        device.device_type == DeviceType::ROCM
    }
}

impl DeviceConstraint for AnyDevice {
    const NAME: &'static str = "on any device";
    fn accepts(_: Device) -> bool {
        true
    }
}

impl DeviceConstraint for HostMemory {
    const NAME: &'static str = HOST_MEMORY.name;
    fn accepts(device: Device) -> bool {
        device.is_host_readable()
    }
}

/// The [`Placement`] of a device constraint.
pub(crate) fn placement<P: DeviceConstraint>() -> Placement {
    Placement {
        name: P::NAME,
        accepts: P::accepts,
    }
}

/// What an argument's type asks for, in words: "a float32 C-contiguous tensor with 2
/// dimensions in host memory" (at `placement`).
pub(crate) fn expectation_at<T: Element, D: Dimension, C: Constraints>(
    writable: bool,
    placement: Placement,
) -> String {
    let mut text = format!(
        "a {}{} {}tensor",
        if writable { "writable " } else { "" },
        T::DTYPE,
        <C::Layout as LayoutConstraint>::NAME
    );
    if let Some(extents) = C::EXTENTS {
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
    } else if let Some((min, max)) = C::NDIM_RANGE {
        let _ = write!(text, " with {min} to {max} dimensions");
    }
    text.push(' ');
    text.push_str(placement.name);
    text
}

/// What was received, in words: "float64 shape (3, 4) strides (1, 3) on CPU:0", with why it
/// is read-only where being read-only is what the argument refuses (`refused_for_writing`).
fn received(view: &TensorView<'_>, access: Access, refused_for_writing: bool) -> String {
    let read_only = if refused_for_writing {
        format!(" (read-only: {})", read_only_reason(access))
    } else {
        String::new()
    };
    format!(
        "{} shape {} strides {} on {}{read_only}",
        view.dtype(),
        tuple(view.shape()),
        tuple(view.strides()),
        view.device(),
    )
}

/// Why memory reached by `access` may not be written, in the words of the object the user
/// passed.
pub(crate) fn read_only_reason(access: Access) -> &'static str {
    match (access.writability, access.path) {
        (Writability::Unknown, _) => {
            "it came in a legacy DLPack capsule, which cannot say whether its memory may be \
             written; JAX, TensorFlow and MXNet export only those (an MXNet array from \
             to_dlpack_for_write may be written: pass dlbridge.from_dlpack(capsule, \
             legacy_writable=True))"
        }
        (_, ArgumentPath::NumpyStruct) => {
            "the NumPy array's flags.writeable is False (as for np.broadcast_to and arrays over \
             read-only memory)"
        }
        (_, ArgumentPath::BufferProtocol) => {
            "its buffer is read-only (JAX arrays are immutable; so are bytes, read-only \
             memoryviews and mmaps, and memory an object store shares read-only)"
        }
        (_, ArgumentPath::ExchangeTable) => {
            "its class marks it read-only (as dlbridge.Tensor.readonly says of a tensor over \
             read-only memory, or of memory that other Rust handles read: a share of a tensor \
             Rust still holds)"
        }
        (_, ArgumentPath::ExchangeExport | ArgumentPath::Dlpack) => {
            "its producer flagged it READ_ONLY (a NumPy array that is not writeable, memory \
             shared read-only)"
        }
    }
}

/// Checks a descriptor against an argument type's expectations.
pub(crate) fn check<T: Element, D: Dimension, C: Constraints>(
    view: &TensorView<'_>,
    writable: bool,
    access: Access,
) -> PyResult<()> {
    check_at::<T, D, C>(view, writable, access, HOST_MEMORY)
}

/// Whether `view` is what an argument of type `T`, `D`, `C` at `placement` takes, writability
/// aside: (its data type, dimensions, layout and place fit; its extents fit).
pub(crate) fn fits<T: Element, D: Dimension, C: Constraints>(
    view: &TensorView<'_>,
    placement: Placement,
) -> (bool, bool) {
    let () = Agreement::<D, C>::HOLDS;
    let fits = view.dtype() == T::DTYPE
        && D::NDIM.is_none_or(|ndim| ndim == view.ndim())
        && C::NDIM_RANGE.is_none_or(|(min, max)| (min..=max).contains(&view.ndim()))
        && C::Layout::accepts(view)
        && (placement.accepts)(view.device());
    let shape_fits = C::EXTENTS.is_none_or(|extents| {
        extents.len() == view.ndim()
            && extents
                .iter()
                .zip(view.shape())
                .all(|(expected, &extent)| expected.is_none_or(|n| n as i64 == extent))
    });
    (fits, shape_fits)
}

/// [`check`] for an argument whose memory must be at `placement`.
pub(crate) fn check_at<T: Element, D: Dimension, C: Constraints>(
    view: &TensorView<'_>,
    writable: bool,
    access: Access,
    placement: Placement,
) -> PyResult<()> {
    let refused_for_writing = writable && !access.writability.allows_writes();
    let (fits, shape_fits) = fits::<T, D, C>(view, placement);
    let fits = fits && !refused_for_writing;
    if fits && shape_fits {
        return Ok(());
    }
    let message = format!(
        "expected {}, got {}",
        expectation_at::<T, D, C>(writable, placement),
        received(view, access, refused_for_writing)
    );
    // The right kind of tensor with the wrong extents is a bad value, anything else a bad type.
    Err(if fits {
        PyValueError::new_err(message)
    } else {
        PyTypeError::new_err(message)
    })
}
