//! Zero-copy conversion between managed tensors and `faer` matrices (feature `faer`).
//!
//! Views: [`FaerViewExt::as_faer_mat`] sees a 2-D tensor's memory as a faer `MatRef`, and
//! [`FaerTensorExt::as_faer_mat_mut`] as a `MatMut`. Export: [`FaerTensorExt::from_faer_mat`]
//! moves an owned `Mat` into a managed tensor without copying an element.
//!
//! # How faer and DLPack describe a layout
//!
//! A faer view is a pointer to element `(0, 0)`, two extents and two *signed* strides in
//! elements, which is DLPack's description exactly: every 2-D DLPack layout is a faer view as
//! it is, row-major, column-major, sliced, transposed, reversed (negative strides) and
//! broadcast (stride 0; read-only views only, as a mutable view needs every index to reach
//! its own element). No layout is refused.
//!
//! An owned `Mat` stores its columns one after the other, each column padded to a multiple of
//! the SIMD width: it is exported with shape `[nrows, ncols]` and strides `[1, col_stride]`
//! (`col_stride >= nrows`), the `Mat` itself as the owner (its allocation does not move when
//! the `Mat` does). A consumer sees a Fortran-ordered array whose columns are padded; NumPy
//! and PyTorch read it as it is.
//!
//! Two DLPack liberties are normalised in the views, as in the `ndarray` bridge: an axis of
//! extent 1 may carry any stride in DLPack (huge, negative), and gets the stride a compact
//! column-major matrix would have (it is never stepped along); an empty tensor may have NULL
//! data, and gets a dangling, aligned pointer.
//!
//! # Data types
//!
//! A faer view holds any element type, so every [`Element`] type of this crate can be viewed
//! and exported: the integers, `f32`, `f64`, `half::f16`, `half::bf16`, `bool` and
//! `num_complex::Complex<f32>`/`Complex<f64>` (which are faer's `c32` and `c64`). faer's
//! linear algebra needs `ComplexField`: `f32`, `f64`, `c32` and `c64` (not `f16`, `bf16`,
//! integers or `bool`). Sub-byte types and vectors of lanes have no Rust element type and are
//! refused like any typed access.
//!
//! The tests are in `tests.rs` beside this file.

use std::ptr::NonNull;

use ::faer::{Mat, MatMut, MatRef};

use crate::device::Device;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::export::Export;
use crate::managed::ManagedTensor;
use crate::view::TensorView;

/// A validated 2-D layout in faer's terms: element `(0, 0)`, the extents and the signed
/// strides, in elements.
struct MatLayout<T> {
    first: NonNull<T>,
    nrows: usize,
    ncols: usize,
    row_stride: isize,
    col_stride: isize,
}

impl<T: Element> MatLayout<T> {
    /// The layout of a 2-D `view`, after the checks of every typed access
    /// ([`TensorView::elements`]).
    fn new(view: &TensorView<'_>) -> Result<Self> {
        if view.ndim() != 2 {
            return Err(Error::DimensionalityMismatch {
                expected: 2,
                actual: view.ndim(),
            });
        }
        let first = view.elements::<T>()?.first();
        let (shape, strides) = (view.shape(), view.strides());
        // A tensor with elements spans at most `isize::MAX` bytes (V5, V7), so its extents and
        // strides fit `usize` and `isize`; an empty tensor's extents are bounded by `i64` only.
        let extent = |axis: usize| {
            usize::try_from(shape[axis]).map_err(|_| Error::Unrepresentable {
                library: "faer",
                asked: "a faer matrix view",
                given: format!("a tensor of shape {shape:?}: extent {axis} exceeds usize"),
            })
        };
        let (nrows, ncols) = (extent(0)?, extent(1)?);
        // The compact column-major stride of the columns, for an axis never stepped along.
        let compact_col_stride = isize::try_from(nrows).unwrap_or(isize::MAX);
        if nrows == 0 || ncols == 0 {
            return Ok(MatLayout {
                first: NonNull::dangling(),
                nrows,
                ncols,
                row_stride: 1,
                col_stride: compact_col_stride,
            });
        }
        let stride = |axis: usize, extent: usize, compact: isize| -> Result<isize> {
            if extent == 1 {
                return Ok(compact);
            }
            // V7 keeps the offset of every element inside `isize`, and so a stride along an
            // axis that is stepped along; the conversion is checked all the same.
            isize::try_from(strides[axis]).map_err(|_| Error::Unrepresentable {
                library: "faer",
                asked: "a faer matrix view",
                given: format!("a tensor of strides {strides:?}: stride {axis} exceeds isize"),
            })
        };
        let row_stride = stride(0, nrows, 1)?;
        let col_stride = stride(
            1,
            ncols,
            if row_stride == 1 {
                compact_col_stride
            } else {
                1
            },
        )?;
        Ok(MatLayout {
            first,
            nrows,
            ncols,
            row_stride,
            col_stride,
        })
    }
}

/// The faer views of a [`TensorView`]: `use dlbridge::faer::FaerViewExt;` and call them on any
/// view.
///
/// The bridge's entry points for the feature `faer`; the trait is sealed (implemented for this
/// crate's types only), so methods can be added to it without breaking anyone.
pub trait FaerViewExt<'a>: crate::sealed::Sealed {
    /// A 2-D tensor as a faer `MatRef` of any layout, without copying (feature `faer`).
    ///
    /// Checks what every typed access checks (see [`TensorView::elements`]): a host-readable
    /// device, the data type `T::DTYPE`, an aligned first element, and for `bool` every
    /// element 0 or 1. Every stride is kept as DLPack gives it, negative and zero ones too.
    ///
    /// Fails with [`Error::DimensionalityMismatch`] unless the tensor has two dimensions.
    ///
    /// ```
    /// use dlbridge::faer::FaerViewExt;
    /// use dlbridge::Export;
    ///
    /// // A row-major 2x3 tensor, as NumPy or PyTorch sends one.
    /// let tensor = Export::new(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).into_versioned()?;
    /// let view = tensor.view();
    /// let matrix = view.as_faer_mat::<f64>()?;
    /// assert_eq!(matrix, faer::mat![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    /// assert_eq!((matrix.row_stride(), matrix.col_stride()), (3, 1));
    /// assert_eq!(matrix.as_ptr(), view.data_ptr() as *const f64); // no copy
    /// assert_eq!(matrix * matrix.transpose(), faer::mat![[14.0, 32.0], [32.0, 77.0]]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn as_faer_mat<T: Element>(&self) -> Result<MatRef<'a, T>>;

    /// A faer `MatMut` of a 2-D tensor borrowed from a producer (as typed kernel arguments
    /// get it); refused, like [`FaerTensorExt::as_faer_mat_mut`], for read-only tensors,
    /// overlapping layouts and everything [`FaerViewExt::as_faer_mat`] refuses.
    ///
    /// # Safety
    ///
    /// Nothing else may read or write the elements during `'a`, and the producer must allow
    /// writes to them.
    unsafe fn as_faer_mat_mut_unchecked<T: Element>(&self) -> Result<MatMut<'a, T>>;
}

impl<'a> FaerViewExt<'a> for TensorView<'a> {
    fn as_faer_mat<T: Element>(&self) -> Result<MatRef<'a, T>> {
        let layout = MatLayout::<T>::new(self)?;
        // SAFETY: `first` is element (0, 0) of a validated layout on host-readable memory,
        // aligned and of the right data type (`elements` checked it, and every bool); every
        // index inside the extents reaches an element of that layout with these strides (an
        // axis of extent 1 is never stepped along), all inside one allocation (V7); the memory
        // stays valid and is not written except through this crate, which needs exclusive
        // access to the tensor, for `'a`. An empty matrix gets a dangling, aligned pointer and
        // is never read.
        Ok(unsafe {
            MatRef::from_raw_parts(
                layout.first.as_ptr().cast_const(),
                layout.nrows,
                layout.ncols,
                layout.row_stride,
                layout.col_stride,
            )
        })
    }

    unsafe fn as_faer_mat_mut_unchecked<T: Element>(&self) -> Result<MatMut<'a, T>> {
        self.check_writable()?;
        let layout = MatLayout::<T>::new(self)?;
        // SAFETY: as in `as_faer_mat`; the layout is writable and overlap-free (checked above:
        // each index reaches its own element, so faer's mutable views do not alias), and the
        // caller guarantees exclusive access for `'a`.
        Ok(unsafe {
            MatMut::from_raw_parts_mut(
                layout.first.as_ptr(),
                layout.nrows,
                layout.ncols,
                layout.row_stride,
                layout.col_stride,
            )
        })
    }
}

/// The faer bridge on a [`ManagedTensor`]: a mutable `MatMut` view, and an owned `Mat` exported
/// without a copy (`FaerTensorExt::from_faer_mat`, with this trait in scope).
///
/// The bridge's entry points for the feature `faer`; the trait is sealed (implemented for this
/// crate's types only), so methods can be added to it without breaking anyone.
pub trait FaerTensorExt: crate::sealed::Sealed {
    /// A 2-D tensor as a faer `MatMut`, without copying (feature `faer`).
    ///
    /// Checks everything [`FaerViewExt::as_faer_mat`] checks, and refuses a read-only tensor
    /// ([`Error::ReadOnly`]), a share another handle can still read ([`Error::SharedMemory`])
    /// and a layout in which two indices reach the same element
    /// ([`Error::OverlappingLayout`]), as [`ManagedTensor::elements_mut`] does.
    ///
    /// ```
    /// use dlbridge::faer::FaerTensorExt;
    /// use dlbridge::Export;
    ///
    /// let mut tensor = Export::new(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).into_versioned()?;
    /// let mut matrix = tensor.as_faer_mat_mut::<f32>()?;
    /// matrix.col_mut(0).fill(0.0);
    /// assert_eq!(tensor.view().as_slice::<f32>()?, &[0.0, 2.0, 0.0, 4.0]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn as_faer_mat_mut<T: Element>(&mut self) -> Result<MatMut<'_, T>>;

    /// Exports an owned faer `Mat` as a versioned, writable managed tensor, without copying
    /// its elements (feature `faer`): shape `[nrows, ncols]`, strides `[1, col_stride]` (the
    /// columns padded as faer allocates them), the `Mat` as the owner, dropped by the deleter
    /// on whatever thread the consumer calls it.
    ///
    /// ```
    /// use dlbridge::faer::FaerTensorExt;
    /// use dlbridge::ManagedTensor;
    ///
    /// let matrix = faer::Mat::<f64>::from_fn(3, 2, |i, j| (10 * i + j) as f64);
    /// let data = matrix.as_ptr();
    /// let tensor = ManagedTensor::from_faer_mat(matrix)?;
    /// let view = tensor.view();
    /// assert_eq!(view.shape(), &[3, 2]);
    /// assert_eq!(view.strides()[0], 1); // column-major, columns maybe padded
    /// assert_eq!(view.data_ptr() as *const f64, data); // no copy
    /// assert_eq!(view.elements::<f64>()?.get(&[2, 1]), Some(&21.0));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn from_faer_mat<T: Element>(matrix: Mat<T>) -> Result<ManagedTensor>;
}

impl FaerTensorExt for ManagedTensor {
    fn as_faer_mat_mut<T: Element>(&mut self) -> Result<MatMut<'_, T>> {
        self.check_exclusive()?;
        // SAFETY: `&mut self` gives the view exclusive access to the tensor's elements, which
        // no other handle can reach (`check_exclusive`); writability is checked by the callee.
        unsafe { self.view().as_faer_mat_mut_unchecked() }
    }

    fn from_faer_mat<T: Element>(mut matrix: Mat<T>) -> Result<ManagedTensor> {
        let (nrows, ncols) = (matrix.nrows(), matrix.ncols());
        // faer's strides are `isize`, which `i64` holds on every target.
        let strides = [matrix.row_stride() as i64, matrix.col_stride() as i64];
        let data = matrix.as_ptr_mut();
        let shape = [nrows, ncols];
        // SAFETY: `data` is element (0, 0) of the matrix's allocation, which the `Mat` owns
        // and keeps in place when it is moved (into the tensor, then dropped by its deleter);
        // every index inside the extents reaches an initialised `T` of it with the matrix's
        // own strides; nothing else can reach the memory once the `Mat` is moved in, so the
        // export is writable and exclusive. An empty `Mat`'s dangling pointer is never read.
        unsafe { Export::from_raw_parts(matrix, data.cast(), T::DTYPE, Device::CPU, &shape) }
            .strides(&strides)
            .into_versioned()
    }
}

#[cfg(test)]
mod tests;
