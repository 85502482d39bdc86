//! faer matrices over typed arguments, and faer's `Mat` returned (feature `faer`).

use dlbridge::faer::{FaerTensorExt, FaerViewExt};
use dlbridge::{Element, ManagedTensor};
use faer::{Mat, MatMut, MatRef};
use pyo3::PyResult;

use super::core_view::with_core_view;
use super::sealed::Sealed;
use crate::args::constraints::{Constraints, Dimensionality};
use crate::args::tensor_arg::{TensorArg, TensorArgMut};
use crate::produce::returning::IntoTensor;

/// The faer views of a typed argument ([`TensorArg`](crate::TensorArg)), with the core's
/// checks and refusals as `TypeError`s (feature `faer`). In scope with
/// `dlbridge_pyo3::prelude::*`, or `use dlbridge_pyo3::faer::FaerArgExt;`.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// fn norm(x: &TensorArg2<'_, f64>) -> PyResult<f64> {
///     Ok(x.as_faer_mat()?.norm_l2())
/// }
/// ```
///
/// Sealed, as every argument trait of this crate: implemented for the typed arguments only, so
/// no other type can be handed out as one (E0277):
///
/// ```compile_fail,E0277
/// use dlbridge_pyo3::faer::FaerArgExt;
/// use pyo3::PyResult;
///
/// struct Mine;
/// impl FaerArgExt<f64> for Mine {
///     fn as_faer_mat(&self) -> PyResult<faer::MatRef<'_, f64>> {
///         unimplemented!()
///     }
/// }
/// ```
pub trait FaerArgExt<T: Element>: Sealed {
    /// The argument as a faer `MatRef`, without copying (feature `faer`): any 2-D layout,
    /// negative and zero strides included (`dlbridge`'s `FaerViewExt::as_faer_mat`). A tensor
    /// of another number of dimensions is a `TypeError`.
    fn as_faer_mat(&self) -> PyResult<MatRef<'_, T>>;
}

impl<T: Element, D: Dimensionality, C: Constraints> FaerArgExt<T> for TensorArg<'_, T, D, C> {
    fn as_faer_mat(&self) -> PyResult<MatRef<'_, T>> {
        let matrix = with_core_view(&self.view(), |view| {
            view.as_faer_mat::<T>().map(|m| {
                (
                    m.as_ptr(),
                    m.nrows(),
                    m.ncols(),
                    m.row_stride(),
                    m.col_stride(),
                )
            })
        })?;
        let (data, nrows, ncols, row_stride, col_stride) = matrix;
        // SAFETY: the core made this matrix over the argument's elements (checked and laid out
        // by its rules), and it is re-made here with the same parts for the argument's borrow:
        // the elements stay valid and unwritten while the argument is borrowed (its read claim).
        Ok(unsafe { MatRef::from_raw_parts(data, nrows, ncols, row_stride, col_stride) })
    }
}

/// The faer views of a writable typed argument ([`TensorArgMut`](crate::TensorArgMut)), with the
/// core's checks and refusals as `TypeError`s (feature `faer`). In scope with
/// `dlbridge_pyo3::prelude::*`, or `use dlbridge_pyo3::faer::FaerArgMutExt;`; sealed: implemented
/// for the typed arguments only.
pub trait FaerArgMutExt<T: Element>: Sealed {
    /// The argument as a faer `MatMut`, without copying (feature `faer`); taking it counts as
    /// writing, as [`TensorArgMut::view_mut`] does. Refused as `as_faer_mat` refuses, and for
    /// layouts in which two indices reach one element (which extraction already refused).
    fn as_faer_mat_mut(&mut self) -> PyResult<MatMut<'_, T>>;
}

impl<T: Element, D: Dimensionality, C: Constraints> FaerArgMutExt<T> for TensorArgMut<'_, T, D, C> {
    fn as_faer_mat_mut(&mut self) -> PyResult<MatMut<'_, T>> {
        let mut view = self.view_mut();
        let parts = with_core_view(&view.view(), |view| {
            // SAFETY: the core view is over the argument's elements, which the argument holds
            // exclusively (its write claim) and which may be written (checked at extraction);
            // the matrix made here is dropped before this closure returns.
            unsafe { view.as_faer_mat_mut_unchecked::<T>() }
                .map(|m| (m.nrows(), m.ncols(), m.row_stride(), m.col_stride()))
        })?;
        let (nrows, ncols, row_stride, col_stride) = parts;
        let data = view.as_mut_ptr();
        // SAFETY: as in `as_faer_mat`, mutably: the pointer comes from the argument's mutable
        // view (write provenance), the parts from the core's checks (writable, overlap-free),
        // and `&mut self` keeps every other access to the elements out for the borrow.
        Ok(unsafe { MatMut::from_raw_parts_mut(data, nrows, ncols, row_stride, col_stride) })
    }
}

impl<T: Element> IntoTensor for Mat<T> {
    /// Without copying: `FaerTensorExt::from_faer_mat`.
    fn into_tensor(self) -> dlbridge::Result<ManagedTensor> {
        ManagedTensor::from_faer_mat(self)
    }
}
