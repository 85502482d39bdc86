//! nalgebra views over typed arguments, and nalgebra's owned matrices returned (feature
//! `nalgebra`).

use dlbridge::nalgebra::{NalgebraTensorExt, NalgebraViewExt};
use dlbridge::{Element, ManagedTensor};
use nalgebra::{
    DMatrix, DMatrixView, DMatrixViewMut, DVector, DVectorView, Dyn, U1, ViewStorage,
    ViewStorageMut,
};
use pyo3::PyResult;

use super::core_view::with_core_view;
use super::sealed::Sealed;
use crate::args::constraints::{Constraints, Dimensionality};
use crate::args::tensor_arg::{TensorArg, TensorArgMut};
use crate::produce::returning::IntoTensor;

/// What the core decided of a matrix view: element `(0, 0)`, the extents and the column
/// stride (the row stride is 1).
type Parts<T> = (*const T, usize, usize, usize);

/// The nalgebra matrix and vector views of a typed argument ([`TensorArg`](crate::TensorArg)), with
/// the core's checks and refusals as `TypeError`s (feature `nalgebra`). In scope with
/// `dlbridge_pyo3::prelude::*`, or `use dlbridge_pyo3::nalgebra::NalgebraArgExt;`; sealed:
/// implemented for the typed arguments only.
pub trait NalgebraArgExt<T: Element>: Sealed {
    /// The argument as a nalgebra matrix view, without copying (feature `nalgebra`): a
    /// column-major tensor, or any whose rows are adjacent (row stride 1), as `dlbridge`'s
    /// `NalgebraViewExt::as_nalgebra_matrix` takes them. A row-major tensor (NumPy's and PyTorch's
    /// default) is a `TypeError` that names
    /// [`as_nalgebra_matrix_transposed`](Self::as_nalgebra_matrix_transposed).
    fn as_nalgebra_matrix(&self) -> PyResult<DMatrixView<'_, T>>;

    /// The transpose of the argument as a nalgebra matrix view, without copying (feature
    /// `nalgebra`): a row-major `m x n` tensor is nalgebra's column-major `n x m` matrix
    /// (`dlbridge`'s `NalgebraViewExt::as_nalgebra_matrix_transposed`).
    fn as_nalgebra_matrix_transposed(&self) -> PyResult<DMatrixView<'_, T>>;

    /// A 1-D argument of stride 1 as a nalgebra vector view, without copying (feature
    /// `nalgebra`).
    fn as_nalgebra_vector(&self) -> PyResult<DVectorView<'_, T>>;
}

impl<T: Element, D: Dimensionality, C: Constraints> NalgebraArgExt<T> for TensorArg<'_, T, D, C> {
    fn as_nalgebra_matrix(&self) -> PyResult<DMatrixView<'_, T>> {
        let parts = with_core_view(&self.view(), |view| {
            view.as_nalgebra_matrix::<T>().map(|m| parts(&m))
        })?;
        Ok(matrix_view(parts))
    }

    fn as_nalgebra_matrix_transposed(&self) -> PyResult<DMatrixView<'_, T>> {
        let parts = with_core_view(&self.view(), |view| {
            view.as_nalgebra_matrix_transposed::<T>().map(|m| parts(&m))
        })?;
        Ok(matrix_view(parts))
    }

    fn as_nalgebra_vector(&self) -> PyResult<DVectorView<'_, T>> {
        let (data, nrows, _, col_stride) = with_core_view(&self.view(), |view| {
            view.as_nalgebra_vector::<T>()
                .map(|v| (v.as_ptr(), v.nrows(), 1, v.strides().1))
        })?;
        // SAFETY: as in `matrix_view`, for the core's one-column view.
        let storage =
            unsafe { ViewStorage::from_raw_parts(data, (Dyn(nrows), U1), (U1, Dyn(col_stride))) };
        Ok(DVectorView::from_data(storage))
    }
}

/// The parts of a core matrix view.
fn parts<T>(matrix: &DMatrixView<'_, T>) -> Parts<T> {
    (
        matrix.as_ptr(),
        matrix.nrows(),
        matrix.ncols(),
        matrix.strides().1,
    )
}

/// A core matrix view re-made for the argument's borrow.
fn matrix_view<'a, T>((data, nrows, ncols, col_stride): Parts<T>) -> DMatrixView<'a, T> {
    // SAFETY: the core made this view over the argument's elements (checked, and laid out by
    // its rules: row stride 1, a column stride that reaches only the layout's elements), and it
    // is re-made with the same parts for the argument's borrow, during which the elements stay
    // valid and unwritten (the argument's read claim).
    let storage = unsafe {
        ViewStorage::from_raw_parts(data, (Dyn(nrows), Dyn(ncols)), (U1, Dyn(col_stride)))
    };
    DMatrixView::from_data(storage)
}

/// The nalgebra mutable matrix views of a writable typed argument
/// ([`TensorArgMut`](crate::TensorArgMut)), with the core's checks and refusals as `TypeError`s
/// (feature `nalgebra`). In scope with `dlbridge_pyo3::prelude::*`, or `use
/// dlbridge_pyo3::nalgebra::NalgebraArgMutExt;`; sealed: implemented for the typed arguments only.
pub trait NalgebraArgMutExt<T: Element>: Sealed {
    /// The argument as a mutable nalgebra matrix view, without copying (feature `nalgebra`),
    /// refused as [`TensorArg::as_nalgebra_matrix`] refuses; taking it counts as writing, as
    /// [`TensorArgMut::view_mut`] does.
    fn as_nalgebra_matrix_mut(&mut self) -> PyResult<DMatrixViewMut<'_, T>>;

    /// The transpose of the argument as a mutable nalgebra matrix view (feature `nalgebra`),
    /// as [`TensorArg::as_nalgebra_matrix_transposed`]; taking it counts as writing.
    fn as_nalgebra_matrix_transposed_mut(&mut self) -> PyResult<DMatrixViewMut<'_, T>>;
}

impl<T: Element, D: Dimensionality, C: Constraints> NalgebraArgMutExt<T>
    for TensorArgMut<'_, T, D, C>
{
    fn as_nalgebra_matrix_mut(&mut self) -> PyResult<DMatrixViewMut<'_, T>> {
        self.matrix_mut(|view| view.as_nalgebra_matrix::<T>().map(|m| parts(&m)))
    }

    fn as_nalgebra_matrix_transposed_mut(&mut self) -> PyResult<DMatrixViewMut<'_, T>> {
        self.matrix_mut(|view| view.as_nalgebra_matrix_transposed::<T>().map(|m| parts(&m)))
    }
}

impl<T: Element, D: Dimensionality, C: Constraints> TensorArgMut<'_, T, D, C> {
    /// A mutable matrix view laid out as the core's `bridge` decides for the argument.
    fn matrix_mut(
        &mut self,
        bridge: impl FnOnce(dlbridge::TensorView<'_>) -> dlbridge::Result<Parts<T>>,
    ) -> PyResult<DMatrixViewMut<'_, T>> {
        let mut view = self.view_mut();
        let (_, nrows, ncols, col_stride) = with_core_view(&view.view(), bridge)?;
        let data = view.as_mut_ptr();
        // SAFETY: as in `matrix_view`, mutably: the pointer comes from the argument's mutable
        // view (write provenance), the layout is overlap-free and writable (checked at
        // extraction), and `&mut self` keeps every other access out for the borrow.
        let storage = unsafe {
            ViewStorageMut::from_raw_parts(data, (Dyn(nrows), Dyn(ncols)), (U1, Dyn(col_stride)))
        };
        Ok(DMatrixViewMut::from_data(storage))
    }
}

impl<T: Element> IntoTensor for DMatrix<T> {
    /// Without copying: `NalgebraTensorExt::from_nalgebra_matrix` (column-major).
    fn into_tensor(self) -> dlbridge::Result<ManagedTensor> {
        ManagedTensor::from_nalgebra_matrix(self)
    }
}

impl<T: Element> IntoTensor for DVector<T> {
    /// Without copying: `NalgebraTensorExt::from_nalgebra_vector`.
    fn into_tensor(self) -> dlbridge::Result<ManagedTensor> {
        ManagedTensor::from_nalgebra_vector(self)
    }
}
