//! faer matrices over typed arguments, and faer's `Mat` returned (feature `faer`).

use dlbridge::{Element, ManagedTensor};
use faer::{Mat, MatMut, MatRef};
use pyo3::PyResult;

use super::core_view::with_core_view;
use crate::args::constraints::{Constraints, Dimensionality};
use crate::args::tensor_arg::{TensorArg, TensorArgMut};
use crate::produce::returning::IntoTensor;

impl<T: Element, D: Dimensionality, C: Constraints> TensorArg<'_, T, D, C> {
    /// The argument as a faer `MatRef`, without copying (feature `faer`): any 2-D layout,
    /// negative and zero strides included (`dlbridge`'s `TensorView::as_faer_mat`). A tensor
    /// of another number of dimensions is a `TypeError`.
    pub fn as_faer_mat(&self) -> PyResult<MatRef<'_, T>> {
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

impl<T: Element, D: Dimensionality, C: Constraints> TensorArgMut<'_, T, D, C> {
    /// The argument as a faer `MatMut`, without copying (feature `faer`); taking it counts as
    /// writing, as [`TensorArgMut::view_mut`] does. Refused as `as_faer_mat` refuses, and for
    /// layouts in which two indices reach one element (which extraction already refused).
    pub fn as_faer_mat_mut(&mut self) -> PyResult<MatMut<'_, T>> {
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
    /// Without copying: `ManagedTensor::from_faer_mat`.
    fn into_tensor(self) -> dlbridge::Result<ManagedTensor> {
        ManagedTensor::from_faer_mat(self)
    }
}
