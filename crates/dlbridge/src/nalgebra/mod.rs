//! Zero-copy conversion between managed tensors and `nalgebra` matrices (feature `nalgebra`).
//!
//! Views: [`NalgebraViewExt::as_nalgebra_matrix`],
//! [`NalgebraViewExt::as_nalgebra_matrix_transposed`] and [`NalgebraViewExt::as_nalgebra_vector`]
//! see a 2-D or 1-D tensor's memory as nalgebra's `DMatrixView` or `DVectorView`;
//! [`NalgebraTensorExt::as_nalgebra_matrix_mut`] and its siblings are their mutable forms. Export:
//! [`NalgebraTensorExt::from_nalgebra_matrix`] and [`NalgebraTensorExt::from_nalgebra_vector`] move
//! a `DMatrix` or `DVector` into a managed tensor without copying an element.
//!
//! # How nalgebra and DLPack describe a layout
//!
//! A nalgebra view is a pointer to element `(0, 0)`, two extents and two unsigned strides in
//! elements. Its type can hold any row stride, but nalgebra 0.35 only handles a row stride of
//! 1 correctly: its matrix products and `axpy` loop over the bounding box of a strided column
//! rather than its elements, reading and writing out of bounds (nalgebra issue #1616, open at
//! the time of writing), and its iterators form pointers one row stride past each column,
//! outside the memory of a sliced tensor. So the views handed out here always have row
//! stride 1 (nalgebra's own `DMatrixView<T>` type, whose row stride is the constant `U1`):
//!
//! - [`NalgebraViewExt::as_nalgebra_matrix`] takes a tensor whose axis 0 has stride 1:
//!   column-major (NumPy's `order="F"`, a transposed PyTorch tensor), a slice of columns, or
//!   columns broadcast with stride 0;
//! - [`NalgebraViewExt::as_nalgebra_matrix_transposed`] takes one whose axis 1 has stride 1: a
//!   row-major `m x n` tensor, NumPy's and PyTorch's default, is seen as the column-major
//!   `n x m` matrix it is the transpose of. nalgebra's `tr_mul` and `tr_dot` then compute
//!   with the tensor itself;
//! - [`NalgebraViewExt::as_nalgebra_vector`] takes a 1-D tensor of stride 1.
//!
//! Anything else (a row stride above 1 or of 0, a negative column stride) is refused with
//! [`Error::Unrepresentable`], whose message names the strides and the way out; read such
//! tensors with [`TensorView::elements`], or copy them.
//!
//! An owned `DMatrix` stores its elements column-major in a `Vec`: it is exported with shape
//! `[nrows, ncols]` and strides `[1, nrows]`, the `Vec` as the owner. Every DLPack consumer
//! reads that layout as it is (NumPy and PyTorch see a Fortran-ordered array).
//!
//! Two DLPack liberties are normalised in the views, as in the `ndarray` bridge: an axis of
//! extent 1 may carry any stride in DLPack (huge or negative), and is given the stride that a
//! compact column-major matrix would have (it is never stepped along); an empty tensor may
//! have NULL data, and gets a dangling, aligned pointer.
//!
//! # Data types
//!
//! Every [`Element`] type of this crate is a nalgebra `Scalar` (any `Clone + PartialEq +
//! Debug + 'static` type is): the integers, `f32`, `f64`, `half::f16`, `half::bf16`, `bool`
//! and `num_complex::Complex<f32>`/`Complex<f64>` (nalgebra's own complex type). nalgebra's
//! arithmetic needs more (`ClosedAddAssign`, `RealField`, ...), which `f16`, `bf16` and `bool`
//! lack: such matrices can be viewed, indexed, copied and exported, not multiplied. Sub-byte
//! types and vectors of lanes have no Rust element type and are refused like any typed access.
//!
//! The tests are in `tests.rs` beside this file.

use std::ptr::NonNull;

use ::nalgebra::{
    DMatrix, DMatrixView, DMatrixViewMut, DVector, DVectorView, DVectorViewMut, Dim, Dyn, U1,
    ViewStorage, ViewStorageMut,
};

use crate::element::Element;
use crate::error::{Error, Result};
use crate::export::Export;
use crate::managed::ManagedTensor;
use crate::view::TensorView;

/// A validated 1-D or 2-D layout in nalgebra's terms: element `(0, 0)`, the extents and the
/// column stride, in elements; the row stride is 1 (see the module docs for why).
struct MatrixLayout<T> {
    first: NonNull<T>,
    nrows: usize,
    ncols: usize,
    col_stride: usize,
}

/// Which tensor axis is nalgebra's row axis.
#[derive(Clone, Copy, PartialEq)]
enum Axes {
    /// Axis 0 indexes the rows (and axis 1, if any, the columns).
    AsIs,
    /// Axis 1 indexes the rows and axis 0 the columns: the view is the tensor's transpose.
    Transposed,
}

impl<T: Element> MatrixLayout<T> {
    /// The layout of `view`, which must have `ndim` dimensions (1: a column vector; 2: a
    /// matrix), after the checks of every typed access ([`TensorView::elements`]).
    fn new(view: &TensorView<'_>, ndim: usize, axes: Axes, asked: &'static str) -> Result<Self> {
        if view.ndim() != ndim {
            return Err(Error::DimensionalityMismatch {
                expected: ndim,
                actual: view.ndim(),
            });
        }
        let first = view.elements::<T>()?.first();
        let shape = view.shape();
        let strides = view.strides();
        let (row_axis, col_axis) = match axes {
            Axes::AsIs => (0, 1),
            Axes::Transposed => (1, 0),
        };
        let unrepresentable = |why: String| Error::Unrepresentable {
            library: "nalgebra",
            asked,
            given: format!("a tensor of shape {shape:?} and strides {strides:?}: {why}"),
        };
        // An extent above `usize::MAX` (only an empty tensor's can be: V5 bounds the others)
        // cannot be a nalgebra dimension.
        let extent = |axis: usize| {
            usize::try_from(shape.get(axis).copied().unwrap_or(1))
                .map_err(|_| unrepresentable(format!("extent {axis} exceeds usize")))
        };
        let (nrows, ncols) = (extent(row_axis)?, extent(col_axis)?);
        if nrows == 0 || ncols == 0 {
            return Ok(MatrixLayout {
                first: NonNull::dangling(),
                nrows,
                ncols,
                col_stride: nrows,
            });
        }
        // An axis of extent 1 is never stepped along, whatever its DLPack stride: it gets the
        // stride a compact column-major matrix would have.
        if nrows > 1 && strides[row_axis] != 1 {
            return Err(unrepresentable(format!(
                "the {} stride is {}, and nalgebra 0.35 reads and writes out of bounds on views \
                 whose row stride is not 1 (its products and axpy: nalgebra issue #1616){}",
                if axes == Axes::AsIs { "row" } else { "column" },
                strides[row_axis],
                match (ndim, axes) {
                    (2, Axes::AsIs) if strides[col_axis] == 1 => {
                        "; this row-major tensor is the transpose of a column-major matrix: \
                         as_nalgebra_matrix_transposed views it"
                    }
                    (1, _) => "; read it with TensorView::elements, or copy it",
                    _ => "",
                }
            )));
        }
        let col_stride = if ncols > 1 {
            usize::try_from(strides[col_axis]).map_err(|_| {
                unrepresentable(format!(
                    "nalgebra's strides are unsigned, and axis {col_axis} steps backwards"
                ))
            })?
        } else {
            nrows
        };
        Ok(MatrixLayout {
            first,
            nrows,
            ncols,
            col_stride,
        })
    }

    fn storage<'a, C: Dim>(&self, ncols: C) -> ViewStorage<'a, T, Dyn, C, U1, Dyn> {
        // SAFETY: `first` is element (0, 0) of a validated layout on host-readable memory,
        // aligned and of the right data type (`elements`); every index inside the extents
        // reaches an element of that layout with these strides (an extent-1 axis is never
        // stepped along, whatever its stride). Row stride 1 keeps every pointer nalgebra forms
        // (the end of a column, `first + nrows`) inside the layout's memory or one past an
        // element of it. The memory stays valid and unwritten for `'a`, which the caller ties
        // to the tensor view. An empty matrix is never read.
        unsafe {
            ViewStorage::from_raw_parts(
                self.first.as_ptr().cast_const(),
                (Dyn(self.nrows), ncols),
                (U1, Dyn(self.col_stride)),
            )
        }
    }

    /// # Safety
    ///
    /// Nothing else reads or writes the elements during `'a`; the layout is overlap-free and
    /// writable (`check_writable`).
    unsafe fn storage_mut<'a, C: Dim>(&self, ncols: C) -> ViewStorageMut<'a, T, Dyn, C, U1, Dyn> {
        // SAFETY: as in `storage`; each index reaches its own element (overlap-free, and
        // extent-1 axes have a single index) and the caller guarantees exclusive access.
        unsafe {
            ViewStorageMut::from_raw_parts(
                self.first.as_ptr(),
                (Dyn(self.nrows), ncols),
                (U1, Dyn(self.col_stride)),
            )
        }
    }
}

const MATRIX_VIEW: &str = "a nalgebra matrix view";
const TRANSPOSED_VIEW: &str = "a nalgebra view of the transpose";
const VECTOR_VIEW: &str = "a nalgebra vector view";

/// The nalgebra matrix and vector views of a [`TensorView`]: `use
/// dlbridge::nalgebra::NalgebraViewExt;` and call them on any view.
///
/// The bridge's entry points for the feature `nalgebra`; the trait is sealed (implemented for this
/// crate's types only), so methods can be added to it without breaking anyone.
pub trait NalgebraViewExt<'a>: crate::sealed::Sealed {
    /// A 2-D tensor as a nalgebra matrix view, without copying (feature `nalgebra`): a
    /// column-major (Fortran-order) tensor, or any whose rows are adjacent in memory (row
    /// stride 1) and whose column stride is not negative.
    ///
    /// Checks what every typed access checks (see [`TensorView::elements`]): a host-readable
    /// device, the data type `T::DTYPE`, an aligned first element, and for `bool` every
    /// element 0 or 1.
    ///
    /// Fails with [`Error::DimensionalityMismatch`] unless the tensor has two dimensions, and
    /// with [`Error::Unrepresentable`] for a row stride other than 1 (a row-major tensor: see
    /// [`NalgebraViewExt::as_nalgebra_matrix_transposed`], and the module docs for why) or a
    /// negative column stride.
    ///
    /// ```
    /// use dlbridge::nalgebra::NalgebraViewExt;
    /// use dlbridge::Export;
    /// use nalgebra::{DMatrix, DVector};
    ///
    /// // A column-major 2x3 tensor (NumPy's order="F", a transposed PyTorch tensor).
    /// let tensor = Export::new(vec![1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0], &[2, 3])
    ///     .strides(&[1, 2])
    ///     .into_versioned()?;
    /// let view = tensor.view();
    /// let matrix = view.as_nalgebra_matrix::<f64>()?;
    /// assert_eq!(matrix, DMatrix::from_row_slice(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
    /// assert_eq!(matrix.as_ptr(), view.data_ptr() as *const f64); // no copy
    /// assert_eq!(matrix * DVector::from_element(3, 1.0), DVector::from_vec(vec![6.0, 15.0]));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn as_nalgebra_matrix<T: Element>(&self) -> Result<DMatrixView<'a, T>>;

    /// The transpose of a 2-D tensor as a nalgebra matrix view, without copying (feature
    /// `nalgebra`): a row-major `m x n` tensor (NumPy's and PyTorch's default order) is the
    /// column-major `n x m` matrix nalgebra stores natively. Refused as
    /// [`NalgebraViewExt::as_nalgebra_matrix`] refuses, with the axes swapped: the tensor's
    /// columns must be adjacent in memory (column stride 1).
    ///
    /// nalgebra's `tr_mul`, `ad_mul` and `transpose` (a copy) then give products with the
    /// tensor itself.
    ///
    /// ```
    /// use dlbridge::nalgebra::NalgebraViewExt;
    /// use dlbridge::Export;
    /// use nalgebra::{DMatrix, DVector};
    ///
    /// // A row-major 2x3 tensor, as NumPy or PyTorch sends one.
    /// let tensor = Export::new(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).into_versioned()?;
    /// let view = tensor.view();
    /// let transposed = view.as_nalgebra_matrix_transposed::<f64>()?;
    /// assert_eq!(transposed.shape(), (3, 2));
    /// assert_eq!(transposed.as_ptr(), view.data_ptr() as *const f64); // no copy
    /// // The tensor times a vector: (A^T)^T x.
    /// assert_eq!(transposed.tr_mul(&DVector::from_element(3, 1.0)), DVector::from_vec(vec![6.0, 15.0]));
    /// // Row stride 3: nalgebra's matrix views need a row stride of 1.
    /// let refused = view.as_nalgebra_matrix::<f64>();
    /// assert!(matches!(refused, Err(dlbridge::Error::Unrepresentable { library: "nalgebra", .. })));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn as_nalgebra_matrix_transposed<T: Element>(&self) -> Result<DMatrixView<'a, T>>;

    /// A 1-D tensor as a nalgebra column vector view, without copying (feature `nalgebra`):
    /// its elements must be adjacent (stride 1), for the reason the module docs give; the
    /// other checks are those of [`NalgebraViewExt::as_nalgebra_matrix`].
    ///
    /// ```
    /// use dlbridge::nalgebra::NalgebraViewExt;
    /// use dlbridge::Export;
    /// use nalgebra::DVector;
    ///
    /// let tensor = Export::new(vec![1i32, 2, 3], &[3]).into_versioned()?;
    /// let vector = tensor.view().as_nalgebra_vector::<i32>()?;
    /// assert_eq!(vector, DVector::from_vec(vec![1, 2, 3]));
    /// assert_eq!(vector.dot(&vector), 14);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn as_nalgebra_vector<T: Element>(&self) -> Result<DVectorView<'a, T>>;

    /// A mutable nalgebra matrix view of a 2-D tensor borrowed from a producer (as typed
    /// kernel arguments get it); refused, like [`NalgebraTensorExt::as_nalgebra_matrix_mut`], for
    /// read-only tensors, overlapping layouts and everything the shared view refuses.
    ///
    /// # Safety
    ///
    /// Nothing else may read or write the elements during `'a`, and the producer must allow
    /// writes to them.
    unsafe fn as_nalgebra_matrix_mut_unchecked<T: Element>(&self) -> Result<DMatrixViewMut<'a, T>>;

    /// [`NalgebraViewExt::as_nalgebra_matrix_transposed`], mutable, for a descriptor borrowed from
    /// a producer; refused as [`NalgebraViewExt::as_nalgebra_matrix_mut_unchecked`] refuses.
    ///
    /// # Safety
    ///
    /// As for [`NalgebraViewExt::as_nalgebra_matrix_mut_unchecked`].
    unsafe fn as_nalgebra_matrix_transposed_mut_unchecked<T: Element>(
        &self,
    ) -> Result<DMatrixViewMut<'a, T>>;

    /// A mutable nalgebra vector view of a 1-D tensor borrowed from a producer, refused as
    /// [`NalgebraViewExt::as_nalgebra_matrix_mut_unchecked`] refuses.
    ///
    /// # Safety
    ///
    /// As for [`NalgebraViewExt::as_nalgebra_matrix_mut_unchecked`].
    unsafe fn as_nalgebra_vector_mut_unchecked<T: Element>(&self) -> Result<DVectorViewMut<'a, T>>;
}

impl<'a> NalgebraViewExt<'a> for TensorView<'a> {
    fn as_nalgebra_matrix<T: Element>(&self) -> Result<DMatrixView<'a, T>> {
        let layout = MatrixLayout::<T>::new(self, 2, Axes::AsIs, MATRIX_VIEW)?;
        Ok(DMatrixView::from_data(layout.storage(Dyn(layout.ncols))))
    }

    fn as_nalgebra_matrix_transposed<T: Element>(&self) -> Result<DMatrixView<'a, T>> {
        let layout = MatrixLayout::<T>::new(self, 2, Axes::Transposed, TRANSPOSED_VIEW)?;
        Ok(DMatrixView::from_data(layout.storage(Dyn(layout.ncols))))
    }

    fn as_nalgebra_vector<T: Element>(&self) -> Result<DVectorView<'a, T>> {
        let layout = MatrixLayout::<T>::new(self, 1, Axes::AsIs, VECTOR_VIEW)?;
        Ok(DVectorView::from_data(layout.storage(U1)))
    }

    unsafe fn as_nalgebra_matrix_mut_unchecked<T: Element>(&self) -> Result<DMatrixViewMut<'a, T>> {
        // SAFETY: forwarded.
        unsafe { self.matrix_mut(Axes::AsIs, MATRIX_VIEW) }
    }

    unsafe fn as_nalgebra_matrix_transposed_mut_unchecked<T: Element>(
        &self,
    ) -> Result<DMatrixViewMut<'a, T>> {
        // SAFETY: forwarded.
        unsafe { self.matrix_mut(Axes::Transposed, TRANSPOSED_VIEW) }
    }

    unsafe fn as_nalgebra_vector_mut_unchecked<T: Element>(&self) -> Result<DVectorViewMut<'a, T>> {
        self.check_writable()?;
        let layout = MatrixLayout::<T>::new(self, 1, Axes::AsIs, VECTOR_VIEW)?;
        // SAFETY: writable and overlap-free (checked above); exclusive by the caller's
        // guarantee.
        Ok(DVectorViewMut::from_data(unsafe { layout.storage_mut(U1) }))
    }
}

impl<'a> TensorView<'a> {
    /// The mutable matrix views, after the writability and overlap checks.
    ///
    /// # Safety
    ///
    /// As for [`NalgebraViewExt::as_nalgebra_matrix_mut_unchecked`].
    unsafe fn matrix_mut<T: Element>(
        &self,
        axes: Axes,
        asked: &'static str,
    ) -> Result<DMatrixViewMut<'a, T>> {
        self.check_writable()?;
        let layout = MatrixLayout::<T>::new(self, 2, axes, asked)?;
        // SAFETY: writable and overlap-free (checked above); exclusive by the caller's
        // guarantee.
        Ok(DMatrixViewMut::from_data(unsafe {
            layout.storage_mut(Dyn(layout.ncols))
        }))
    }
}

/// The nalgebra bridge on a [`ManagedTensor`]: mutable matrix and vector views, and
/// `DMatrix`/`DVector` exported without a copy (`NalgebraTensorExt::from_nalgebra_matrix`, with
/// this trait in scope).
///
/// The bridge's entry points for the feature `nalgebra`; the trait is sealed (implemented for this
/// crate's types only), so methods can be added to it without breaking anyone.
pub trait NalgebraTensorExt: crate::sealed::Sealed {
    /// A 2-D tensor as a mutable nalgebra matrix view, without copying (feature `nalgebra`).
    ///
    /// Checks everything [`NalgebraViewExt::as_nalgebra_matrix`] checks, and refuses a read-only
    /// tensor ([`Error::ReadOnly`]), a share another handle can still read
    /// ([`Error::SharedMemory`]) and a layout in which two indices reach the same element
    /// ([`Error::OverlappingLayout`]), as [`ManagedTensor::elements_mut`] does.
    ///
    /// ```
    /// use dlbridge::nalgebra::NalgebraTensorExt;
    /// use dlbridge::Export;
    ///
    /// // Column-major 2x2: [[1, 2], [3, 4]].
    /// let mut tensor = Export::new(vec![1.0f32, 3.0, 2.0, 4.0], &[2, 2])
    ///     .strides(&[1, 2])
    ///     .into_versioned()?;
    /// tensor.as_nalgebra_matrix_mut::<f32>()?.row_mut(1).fill(0.0);
    /// assert_eq!(tensor.view().as_slice_memory_order::<f32>()?, &[1.0, 0.0, 2.0, 0.0]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn as_nalgebra_matrix_mut<T: Element>(&mut self) -> Result<DMatrixViewMut<'_, T>>;

    /// The transpose of a 2-D tensor as a mutable nalgebra matrix view, without copying
    /// (feature `nalgebra`): [`NalgebraViewExt::as_nalgebra_matrix_transposed`] with the checks of
    /// [`NalgebraTensorExt::as_nalgebra_matrix_mut`].
    ///
    /// ```
    /// use dlbridge::nalgebra::NalgebraTensorExt;
    /// use dlbridge::Export;
    ///
    /// // Row-major 2x3: its transpose is nalgebra's column-major 3x2.
    /// let mut tensor = Export::new(vec![0u8; 6], &[2, 3]).into_versioned()?;
    /// tensor.as_nalgebra_matrix_transposed_mut::<u8>()?.column_mut(1).fill(9);
    /// assert_eq!(tensor.view().as_slice::<u8>()?, &[0, 0, 0, 9, 9, 9]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn as_nalgebra_matrix_transposed_mut<T: Element>(&mut self) -> Result<DMatrixViewMut<'_, T>>;

    /// A 1-D tensor as a mutable nalgebra vector view, without copying (feature `nalgebra`),
    /// with the checks of [`NalgebraViewExt::as_nalgebra_vector`] and
    /// [`NalgebraTensorExt::as_nalgebra_matrix_mut`].
    ///
    /// ```
    /// use dlbridge::nalgebra::NalgebraTensorExt;
    /// use dlbridge::Export;
    ///
    /// let mut tensor = Export::new(vec![1.0f64, 2.0, 3.0], &[3]).into_versioned()?;
    /// tensor.as_nalgebra_vector_mut::<f64>()?.scale_mut(2.0);
    /// assert_eq!(tensor.view().as_slice::<f64>()?, &[2.0, 4.0, 6.0]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn as_nalgebra_vector_mut<T: Element>(&mut self) -> Result<DVectorViewMut<'_, T>>;

    /// Exports an owned `DMatrix` as a versioned, writable managed tensor, without copying its
    /// elements (feature `nalgebra`): shape `[nrows, ncols]`, column-major strides
    /// `[1, nrows]`, the matrix's `Vec` as the owner, dropped by the deleter on whatever thread
    /// the consumer calls it.
    ///
    /// ```
    /// use dlbridge::nalgebra::NalgebraTensorExt;
    /// use dlbridge::ManagedTensor;
    ///
    /// let matrix = nalgebra::DMatrix::from_row_slice(2, 3, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]);
    /// let data = matrix.as_ptr();
    /// let tensor = ManagedTensor::from_nalgebra_matrix(matrix)?;
    /// assert_eq!(tensor.view().shape(), &[2, 3]);
    /// assert_eq!(tensor.view().strides(), &[1, 2]); // column-major
    /// assert_eq!(tensor.view().data_ptr() as *const f32, data); // no copy
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn from_nalgebra_matrix<T: Element>(matrix: DMatrix<T>) -> Result<ManagedTensor>;

    /// Exports an owned `DVector` as a versioned, writable 1-D managed tensor, without copying
    /// its elements (feature `nalgebra`).
    ///
    /// ```
    /// use dlbridge::nalgebra::NalgebraTensorExt;
    /// use dlbridge::ManagedTensor;
    ///
    /// let tensor = ManagedTensor::from_nalgebra_vector(nalgebra::DVector::from_vec(vec![1u8, 2, 3]))?;
    /// assert_eq!(tensor.view().as_slice::<u8>()?, &[1, 2, 3]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn from_nalgebra_vector<T: Element>(vector: DVector<T>) -> Result<ManagedTensor>;
}

impl NalgebraTensorExt for ManagedTensor {
    fn as_nalgebra_matrix_mut<T: Element>(&mut self) -> Result<DMatrixViewMut<'_, T>> {
        self.check_exclusive()?;
        // SAFETY: `&mut self` gives the view exclusive access to the tensor's elements, which
        // no other handle can reach (`check_exclusive`); writability is checked by the callee.
        unsafe { self.view().as_nalgebra_matrix_mut_unchecked() }
    }

    fn as_nalgebra_matrix_transposed_mut<T: Element>(&mut self) -> Result<DMatrixViewMut<'_, T>> {
        self.check_exclusive()?;
        // SAFETY: as in `as_nalgebra_matrix_mut`.
        unsafe { self.view().as_nalgebra_matrix_transposed_mut_unchecked() }
    }

    fn as_nalgebra_vector_mut<T: Element>(&mut self) -> Result<DVectorViewMut<'_, T>> {
        self.check_exclusive()?;
        // SAFETY: as in `as_nalgebra_matrix_mut`.
        unsafe { self.view().as_nalgebra_vector_mut_unchecked() }
    }

    fn from_nalgebra_matrix<T: Element>(matrix: DMatrix<T>) -> Result<ManagedTensor> {
        let (nrows, ncols) = matrix.shape();
        let elements: Vec<T> = matrix.data.into();
        // A column-major matrix's row stride is 1 and its column stride `nrows`, which fits
        // `i64` because the `Vec` holds `nrows * ncols` elements (or `ncols` is 0 or 1, where
        // the stride is never stepped along; it is clamped to keep the conversion exact).
        let col_stride = i64::try_from(nrows).unwrap_or(i64::MAX);
        Export::new(elements, &[nrows, ncols])
            .strides(&[1, col_stride])
            .into_versioned()
    }

    fn from_nalgebra_vector<T: Element>(vector: DVector<T>) -> Result<ManagedTensor> {
        let len = vector.len();
        let elements: Vec<T> = vector.data.into();
        Export::new(elements, &[len]).into_versioned()
    }
}

#[cfg(test)]
mod tests;
