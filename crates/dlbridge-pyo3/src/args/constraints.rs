//! What a typed argument requires of a tensor, declared in its type: the layout ([`Layout`]:
//! any, C- or F-contiguous) and the extents ([`Shape`], declared with [`shape!`](crate::shape)),
//! beside the element type and the number of dimensions; and the check of a descriptor
//! against them, whose message says what was expected and what was received.

use std::fmt::Write as _;

use dlbridge::{Element, TensorView, Writability};
use ndarray::Dimension;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

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

/// What an argument's type asks for, in words: "a float32 C-contiguous cpu tensor with 2
/// dimensions".
pub(crate) fn expectation<T: Element, D: Dimension, L: Layout, S: Shape>(writable: bool) -> String {
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
pub(crate) fn check<T: Element, D: Dimension, L: Layout, S: Shape>(
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
