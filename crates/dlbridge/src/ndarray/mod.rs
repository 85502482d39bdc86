//! Zero-copy conversion between managed tensors and `ndarray` arrays (feature `ndarray`).
//!
//! Views: [`NdarrayViewExt::as_array`] and [`NdarrayTensorExt::as_array_mut`] see a tensor's memory
//! as an `ndarray` view, after the same checks as every typed access of this crate.
//! Export: [`NdarrayTensorExt::from_array`], [`NdarrayTensorExt::from_array_legacy`],
//! [`NdarrayTensorExt::from_arc_array`] and [`NdarrayTensorExt::from_array_view`] move an array (or
//! the owner of a view's memory) into a managed tensor without copying an element.
//!
//! # How ndarray and DLPack describe a layout
//!
//! Both keep a pointer to the *first logical element* (the one at index `[0, 0, ..]`) and
//! strides in elements that may be negative, so an exported array's pointer and strides are
//! exactly DLPack's `data` (with `byte_offset = 0`) and `strides`.
//!
//! Building a view is where they differ. `ArrayView::from_shape_ptr` (and the raw and mutable
//! variants) in ndarray 0.17 use the pointer as given, as the first logical element, but
//! their safety contract requires *non-negative* strides (a debug assertion checks it); only
//! the slice-based `from_shape` accepts negative strides, and it takes the *lowest* address
//! and moves to the logical first element itself. A view of a DLPack layout with negative
//! strides is therefore built from its lowest address with the absolute strides, and each
//! axis whose stride is negative is then flipped with `invert_axis`, which moves the pointer
//! to the last element of that axis and negates the stride: the result points at DLPack's
//! first element again, with DLPack's strides.
//!
//! Two DLPack liberties are normalised on the way, as ndarray's own slicing does:
//!
//! - a dimension of extent 1 may carry any stride in DLPack (huge, negative, `i64::MIN`); it is
//!   given stride 0 in the view, so no pointer arithmetic ever steps along it;
//! - an empty tensor may have NULL data and any strides; its view gets a dangling, aligned
//!   pointer and all-zero strides (ndarray's own convention for empty arrays), so no offset is
//!   ever applied to the dangling pointer.
//!
//! The tests, one per layout liberty and export path, are in `tests.rs` beside this file.

use std::ptr::NonNull;
use std::sync::atomic::{Ordering, fence};

use ::ndarray::{
    ArcArray, Array, ArrayBase, ArrayView, ArrayViewD, ArrayViewMut, ArrayViewMutD, Axis,
    Dimension, IxDyn, RawArrayView, RawArrayViewMut, RawData, ShapeBuilder, StrideShape,
};

use crate::device::Device;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::export::block::{Descriptor, export_owner};
use crate::flags::Flags;
use crate::managed::ManagedTensor;
use crate::view::TensorView;

// ndarray's extents (at most `isize::MAX`) and strides (`isize`) convert to the ABI's `i64`
// without loss on every platform this crate builds for.
const _: () = assert!(std::mem::size_of::<isize>() <= std::mem::size_of::<i64>());

/// A validated DLPack layout expressed the way ndarray's pointer constructors want it, in
/// ndarray's dimension type `D` (a fixed `Ix2` keeps everything on the stack).
struct NdLayout<D: Dimension> {
    /// The extents.
    dim: D,
    /// The absolute strides; 0 for dimensions of extent 1 and for every dimension of an empty
    /// tensor.
    strides: D,
    /// Elements from the first logical element to the lowest address reached (`<= 0`).
    low_offset: isize,
    /// Whether the tensor has no elements (its view gets a dangling pointer).
    empty: bool,
    /// Bit `i` set: axis `i` has a negative DLPack stride (extent above 1), to flip after
    /// construction.
    negative: u64,
    /// Some axis from 64 on has a negative DLPack stride (rare: only tensors of more than 64
    /// dimensions); `Orientation::orient` finds them from the strides. Plain data rather than
    /// a list keeps the layout cheap to build and to move on the per-argument hot path.
    negative_beyond_64: bool,
}

impl<D: Dimension> NdLayout<D> {
    /// Converts a layout that validation accepted (V1 to V8).
    ///
    /// Fails with [`Error::DimensionalityMismatch`] when `D` has a fixed number of dimensions
    /// other than the layout's, and for an empty tensor whose non-zero extents multiply past
    /// `isize::MAX` (`[2^62, 4, 0]` is a valid DLPack tensor but not a valid ndarray shape); a
    /// non-empty validated layout always converts, as its elements fit in `isize::MAX` bytes.
    #[inline(always)]
    fn new(shape: &[i64], strides: &[i64]) -> Result<Self> {
        let ndim = shape.len();
        if let Some(expected) = D::NDIM.filter(|&expected| expected != ndim) {
            return Err(Error::DimensionalityMismatch {
                expected,
                actual: ndim,
            });
        }
        let mut dim = D::zeros(ndim);
        let mut abs_strides = D::zeros(ndim);
        let mut nonzero_product: usize = 1;
        let mut empty = false;
        for (axis, (&extent, len)) in shape.iter().zip(dim.slice_mut()).enumerate() {
            let overflow = || Error::ElementCountOverflow { dim: axis, extent };
            *len = usize::try_from(extent).map_err(|_| overflow())?;
            if *len == 0 {
                empty = true;
            } else {
                nonzero_product = nonzero_product
                    .checked_mul(*len)
                    .filter(|&product| product <= isize::MAX as usize)
                    .ok_or_else(overflow)?;
            }
        }
        let mut low_offset: isize = 0;
        let mut negative = 0u64;
        let mut negative_beyond_64 = false;
        if !empty {
            let axes = dim.slice().iter().zip(strides).zip(abs_strides.slice_mut());
            for (axis, ((&len, &stride), abs_stride)) in axes.enumerate() {
                if len == 1 {
                    continue;
                }
                // V7 and V8 bound `(len - 1) * |stride|` elements, and their bytes, by
                // `isize::MAX`; the checks only guard against a caller breaking that.
                let overflow = || Error::StrideOverflow { dim: axis, stride };
                let step = isize::try_from(stride).map_err(|_| overflow())?;
                *abs_stride = step.unsigned_abs();
                if step < 0 {
                    low_offset = (len as isize - 1)
                        .checked_mul(step)
                        .and_then(|reach| low_offset.checked_add(reach))
                        .ok_or_else(overflow)?;
                    if axis < 64 {
                        negative |= 1 << axis;
                    } else {
                        negative_beyond_64 = true;
                    }
                }
            }
        }
        Ok(NdLayout {
            dim,
            strides: abs_strides,
            low_offset,
            empty,
            negative,
            negative_beyond_64,
        })
    }

    /// The pointer to hand to `from_shape_ptr`: the lowest address the layout reaches, given
    /// its first logical element; a dangling pointer for an empty tensor.
    #[inline]
    fn lowest<T>(&self, first: *mut T) -> *mut T {
        if self.empty {
            NonNull::dangling().as_ptr()
        } else {
            // In bounds by V7: the lowest offset is an element of the validated layout.
            first.wrapping_offset(self.low_offset)
        }
    }

    /// The shape with the absolute strides, for `from_shape_ptr`, and what `orient` needs.
    ///
    /// An empty tensor gets ndarray's own default strides (all zero) rather than custom ones:
    /// ndarray requires custom strides to pass its overlap test, which, visiting the axes by
    /// stride, can call an empty layout overlapping (`[2^63 - 1, 0]` with zero strides) although
    /// it has no element at all. (Found by the fuzz target `import_descriptor`.)
    #[inline]
    fn into_parts(self) -> (StrideShape<D>, Orientation) {
        let orientation = Orientation {
            negative: self.negative,
            negative_beyond_64: self.negative_beyond_64,
        };
        let shape = if self.empty {
            StrideShape::from(self.dim)
        } else {
            self.dim.strides(self.strides)
        };
        (shape, orientation)
    }
}

/// The axes of a layout whose DLPack strides are negative.
struct Orientation {
    /// Bit `i` set: axis `i` has a negative stride.
    negative: u64,
    /// Some axis from 64 on has a negative stride.
    negative_beyond_64: bool,
}

impl Orientation {
    /// Flips the axes with negative DLPack strides, bringing the pointer back to the first
    /// logical element and the strides to DLPack's (extent-1 axes keep stride 0).
    /// `shape` and `strides` are the DLPack layout the array was built from.
    ///
    /// Nearly every layout has no negative stride: that case returns at once, inlined, so that
    /// the array is not written to memory for a call (and read back wider than it was
    /// written, a store-forwarding stall `perf annotate` showed on every typed argument).
    #[inline(always)]
    fn orient<S: RawData, D: Dimension>(
        &self,
        array: &mut ArrayBase<S, D>,
        shape: &[i64],
        strides: &[i64],
    ) {
        if self.negative != 0 || self.negative_beyond_64 {
            self.flip(array, shape, strides);
        }
    }

    /// [`Orientation::orient`] for a layout with negative strides.
    #[inline(never)]
    fn flip<S: RawData, D: Dimension>(
        &self,
        array: &mut ArrayBase<S, D>,
        shape: &[i64],
        strides: &[i64],
    ) {
        let mut bits = self.negative;
        while bits != 0 {
            array.invert_axis(Axis(bits.trailing_zeros() as usize));
            bits &= bits - 1;
        }
        if self.negative_beyond_64 {
            let axes = shape.iter().zip(strides).enumerate().skip(64);
            for (axis, (&extent, &stride)) in axes {
                if extent > 1 && stride < 0 {
                    array.invert_axis(Axis(axis));
                }
            }
        }
    }
}

/// The `ndarray` views of a [`TensorView`]: `use dlbridge::ndarray::NdarrayViewExt;` and call them
/// on any view.
///
/// The bridge's entry points for the feature `ndarray`; the trait is sealed (implemented for this
/// crate's types only), so methods can be added to it without breaking anyone.
pub trait NdarrayViewExt<'a>: crate::sealed::Sealed {
    /// The tensor as an `ndarray` view of any layout, without copying (feature `ndarray`).
    ///
    /// Checks what every typed access checks (see [`TensorView::elements`]): the device is
    /// host-readable, the data type is `T::DTYPE`, the first element is aligned, and for
    /// `bool` every element is 0 or 1. Negative strides, broadcast (zero) strides and
    /// transposed layouts are kept as they are. A dimension of extent 1 gets stride 0 in the
    /// view whatever its DLPack stride, and an empty tensor (whose data may be NULL) gets a
    /// dangling pointer and zero strides, as ndarray itself does.
    ///
    /// Fails with [`Error::ElementCountOverflow`] for an empty tensor whose non-zero extents
    /// multiply past `isize::MAX`, which ndarray cannot represent.
    ///
    /// ```
    /// use dlbridge::ndarray::NdarrayViewExt;
    /// use dlbridge::Export;
    /// use ndarray::array;
    ///
    /// // A 2x3 column-major tensor, as any producer may send it.
    /// let tensor = Export::new(vec![1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0], &[2, 3])
    ///     .strides(&[1, 2])
    ///     .into_versioned()?;
    /// let view = tensor.view();
    /// let array = view.as_array::<f64>()?;
    /// assert_eq!(array, array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]].into_dyn());
    /// assert_eq!(array.strides(), &[1, 2]);
    /// assert_eq!(array.as_ptr(), view.data_ptr() as *const f64); // no copy
    /// // float64 is not float32:
    /// assert!(matches!(view.as_array::<f32>(), Err(dlbridge::Error::DataTypeMismatch { .. })));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn as_array<T: Element>(&self) -> Result<ArrayViewD<'a, T>>;

    /// [`NdarrayViewExt::as_array`] with ndarray's dimension type chosen by the caller: a fixed
    /// `Ix2` view keeps its shape and strides on the stack (no allocation), which is what
    /// typed kernel arguments use. A fixed `D` of another number of dimensions than the
    /// tensor's is [`Error::DimensionalityMismatch`].
    ///
    /// ```
    /// use dlbridge::ndarray::NdarrayViewExt;
    /// use dlbridge::Export;
    /// use ndarray::Ix2;
    ///
    /// let tensor = Export::new(vec![1u8, 2, 3, 4, 5, 6], &[2, 3]).into_versioned()?;
    /// let matrix = tensor.view().as_array_dim::<u8, Ix2>()?;
    /// assert_eq!(matrix[[1, 2]], 6);
    /// let refused = tensor.view().as_array_dim::<u8, ndarray::Ix3>();
    /// assert!(matches!(refused, Err(dlbridge::Error::DimensionalityMismatch { expected: 3, actual: 2 })));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn as_array_dim<T: Element, D: Dimension>(&self) -> Result<ArrayView<'a, T, D>>;

    /// A mutable `ndarray` view of the elements, for a descriptor borrowed from a producer
    /// (as typed kernel arguments get it). Refused, like [`NdarrayTensorExt::as_array_mut`], for
    /// read-only tensors, overlapping layouts and everything typed access refuses.
    ///
    /// # Safety
    ///
    /// Nothing else may read or write the elements during `'a`, and the producer must allow
    /// writes to them.
    unsafe fn as_array_mut_unchecked<T: Element>(&self) -> Result<ArrayViewMutD<'a, T>>;

    /// [`NdarrayViewExt::as_array_mut_unchecked`] with ndarray's dimension type chosen by the
    /// caller, as [`NdarrayViewExt::as_array_dim`].
    ///
    /// # Safety
    ///
    /// As for [`NdarrayViewExt::as_array_mut_unchecked`].
    unsafe fn as_array_mut_unchecked_dim<T: Element, D: Dimension>(
        &self,
    ) -> Result<ArrayViewMut<'a, T, D>>;
}

impl<'a> NdarrayViewExt<'a> for TensorView<'a> {
    fn as_array<T: Element>(&self) -> Result<ArrayViewD<'a, T>> {
        self.as_array_dim::<T, IxDyn>()
    }

    #[inline(always)]
    fn as_array_dim<T: Element, D: Dimension>(&self) -> Result<ArrayView<'a, T, D>> {
        let elements = self.elements::<T>()?;
        let layout = NdLayout::<D>::new(self.shape(), self.strides())?;
        let lowest = layout.lowest(elements.as_ptr().cast_mut());
        let (stride_shape, orientation) = layout.into_parts();
        // SAFETY: V7 and V8: `lowest` is non-NULL and aligned (an aligned first element moved
        // by whole elements, or dangling when empty); the absolute strides from the lowest
        // address reach exactly the elements of the validated layout, which lie in memory
        // readable for `'a` and span at most `isize::MAX` bytes; the non-zero extents multiply
        // to at most `isize::MAX`; the strides are non-negative. An empty layout has zero
        // strides, so its dangling pointer is only ever offset by zero.
        let mut raw = unsafe { RawArrayView::from_shape_ptr(stride_shape, lowest) };
        orientation.orient(&mut raw, self.shape(), self.strides());
        // SAFETY: `elements` checked the device, the data type, the alignment and every bool;
        // the memory stays valid and is not written except through this crate (which needs
        // exclusive access to the tensor) for `'a`, per the view's own guarantee.
        Ok(unsafe { raw.deref_into_view() })
    }

    unsafe fn as_array_mut_unchecked<T: Element>(&self) -> Result<ArrayViewMutD<'a, T>> {
        // SAFETY: the caller's guarantee, passed on.
        unsafe { self.as_array_mut_unchecked_dim::<T, IxDyn>() }
    }

    #[inline(always)]
    unsafe fn as_array_mut_unchecked_dim<T: Element, D: Dimension>(
        &self,
    ) -> Result<ArrayViewMut<'a, T, D>> {
        self.check_writable()?;
        let first = self.elements::<T>()?.as_ptr().cast_mut();
        let layout = NdLayout::<D>::new(self.shape(), self.strides())?;
        let lowest = layout.lowest(first);
        let (stride_shape, orientation) = layout.into_parts();
        // SAFETY: as in `NdarrayViewExt::as_array_dim`; in addition the layout was checked
        // overlap-free (ndarray's own overlap test agrees: both sort the axes of extent above
        // 1 by absolute stride and require each stride to clear what the smaller ones reach).
        let mut raw = unsafe { RawArrayViewMut::from_shape_ptr(stride_shape, lowest) };
        orientation.orient(&mut raw, self.shape(), self.strides());
        // SAFETY: the elements are writable (not read-only, host-readable, checked above), each
        // reached by one index only, and the caller guarantees exclusive access for `'a`.
        Ok(unsafe { raw.deref_into_view_mut() })
    }
}

impl crate::xla::ResultBuffer<'_> {
    /// The elements, to write, as an `ndarray` view of `D` dimensions (feature `ndarray`):
    /// checked as [`NdarrayViewExt::as_array_dim`] checks (host memory, the data type `T`,
    /// alignment, the number of dimensions).
    pub fn as_array_mut<T: Element, D: Dimension>(&mut self) -> Result<ArrayViewMut<'_, T, D>> {
        // SAFETY: XLA allocated the buffer for this call to write (its descriptor is not
        // read-only, a dense row-major layout), and `xla::handle` refused a call where any
        // other buffer reaches its bytes, so `&mut self` is the only access for the view's
        // life.
        unsafe { self.view.as_array_mut_unchecked_dim::<T, D>() }
    }
}

/// The `ndarray` bridge on a [`ManagedTensor`]: a mutable array view, and arrays exported without a
/// copy (`NdarrayTensorExt::from_array`, with this trait in scope).
///
/// The bridge's entry points for the feature `ndarray`; the trait is sealed (implemented for this
/// crate's types only), so methods can be added to it without breaking anyone.
pub trait NdarrayTensorExt: crate::sealed::Sealed {
    /// The tensor as a mutable `ndarray` view, without copying (feature `ndarray`).
    ///
    /// Checks everything [`NdarrayViewExt::as_array`] checks, and refuses a read-only tensor
    /// ([`Error::ReadOnly`]), a share another handle can still read ([`Error::SharedMemory`])
    /// and a layout in which two indices reach the same element
    /// ([`Error::OverlappingLayout`]), as [`ManagedTensor::elements_mut`] does.
    ///
    /// ```
    /// use dlbridge::ndarray::NdarrayTensorExt;
    /// use dlbridge::Export;
    /// use ndarray::Axis;
    ///
    /// let mut tensor = Export::new(vec![0i32; 6], &[2, 3]).into_versioned()?;
    /// tensor.as_array_mut::<i32>()?.index_axis_mut(Axis(0), 1).fill(7);
    /// assert_eq!(tensor.view().as_slice::<i32>()?, &[0, 0, 0, 7, 7, 7]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn as_array_mut<T: Element>(&mut self) -> Result<ArrayViewMutD<'_, T>>;

    /// Exports an owned `ndarray` array as a versioned, writable managed tensor, without
    /// copying its elements (feature `ndarray`).
    ///
    /// The array's own layout is exported as it is: `data` is the array's first logical
    /// element, `byte_offset` is 0 and the strides are ndarray's (possibly negative, as after
    /// slicing with a negative step, or transposed). The array is moved into the tensor's
    /// single heap block and dropped by its deleter.
    ///
    /// ```
    /// use dlbridge::ndarray::NdarrayTensorExt;
    /// use dlbridge::ManagedTensor;
    /// use ndarray::{array, s};
    ///
    /// let a = array![[1i32, 2, 3], [4, 5, 6]];
    /// let first = a.as_ptr();
    /// let tensor = ManagedTensor::from_array(a)?;
    /// assert_eq!(tensor.view().shape(), &[2, 3]);
    /// assert_eq!(tensor.view().strides(), &[3, 1]);
    /// assert_eq!(tensor.view().data_ptr() as *const i32, first); // no copy
    ///
    /// // Reversed columns: negative strides, data at the first logical element.
    /// let b = array![[1i32, 2, 3], [4, 5, 6]];
    /// let reversed = ManagedTensor::from_array(b.slice_move(s![.., ..;-1]))?;
    /// assert_eq!(reversed.view().strides(), &[3, -1]);
    /// assert_eq!(reversed.view().elements::<i32>()?.to_vec(), [3, 2, 1, 6, 5, 4]);
    ///
    /// let raw = tensor.into_raw(); // hand this pointer to any DLPack consumer
    /// # drop(unsafe { ManagedTensor::from_raw(raw) }?);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn from_array<T: Element, D: Dimension>(array: Array<T, D>) -> Result<ManagedTensor>;

    /// As [`NdarrayTensorExt::from_array`], but as a legacy `DLManagedTensor`, for consumers that
    /// predate DLPack 1.0.
    fn from_array_legacy<T: Element, D: Dimension>(array: Array<T, D>) -> Result<ManagedTensor>;

    /// Exports an `ArcArray` as a versioned managed tensor, without copying (feature
    /// `ndarray`).
    ///
    /// The tensor is writable only when this `ArcArray` is the only handle to its data; when
    /// other clones exist it is flagged read-only (they may be reading it). The data is never
    /// unshared: ndarray's copy-on-write is not triggered, so the tensor shares the memory of
    /// the other clones, which copy before they write while the tensor lives.
    ///
    /// A sliced, transposed or reversed `ArcArray` (`a.slice_move(s![.., ..;-1])`) exports that
    /// view of the data while keeping the whole buffer alive.
    fn from_arc_array<T: Element, D: Dimension>(array: ArcArray<T, D>) -> Result<ManagedTensor>;

    /// Exports the memory of an `ndarray` view, kept alive by `owner`, as a read-only
    /// versioned managed tensor, without copying (feature `ndarray`).
    ///
    /// The view's layout is exported as it is (negative strides included), and `owner` is
    /// moved into the tensor and dropped by its deleter, on whatever thread the consumer calls
    /// it. For arrays this crate can own itself, prefer [`NdarrayTensorExt::from_array`] or
    /// [`NdarrayTensorExt::from_arc_array`].
    ///
    /// ```
    /// use dlbridge::ndarray::NdarrayTensorExt;
    /// use dlbridge::{Flags, ManagedTensor};
    /// use ndarray::ArrayView;
    /// use std::sync::Arc;
    ///
    /// let buffer: Arc<[f32]> = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0].into();
    /// // SAFETY: the Arc's six floats, never written, live as long as the Arc.
    /// let view = unsafe { ArrayView::from_shape_ptr((2, 3), buffer.as_ptr()) };
    /// // SAFETY: `buffer` owns the viewed memory; moving an Arc does not move it.
    /// let tensor = unsafe { ManagedTensor::from_array_view(view.reversed_axes(), buffer) }?;
    /// assert_eq!(tensor.view().flags(), Flags::READ_ONLY);
    /// assert_eq!(tensor.view().strides(), &[1, 3]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    ///
    /// # Safety
    ///
    /// For as long as `owner` lives, wherever it is moved and on any thread:
    ///
    /// - every element the view reaches must be memory that `owner` keeps alive and valid, so
    ///   moving `owner` must not invalidate pointers into it: owners such as `Vec`, `Arc`,
    ///   `ArcArray` or a memory map are fine, while a `Box` (or a `&mut`) asserts unique
    ///   access to its memory when moved and may not own the viewed memory;
    /// - the elements must not be written by anyone (the tensor is read-only, and consumers
    ///   read it from any thread).
    unsafe fn from_array_view<T: Element, D: Dimension, O: Send + 'static>(
        view: ArrayView<'_, T, D>,
        owner: O,
    ) -> Result<ManagedTensor>;
}

impl NdarrayTensorExt for ManagedTensor {
    fn as_array_mut<T: Element>(&mut self) -> Result<ArrayViewMutD<'_, T>> {
        // Writability and overlaps are checked by `as_array_mut_unchecked` itself.
        self.check_exclusive()?;
        // SAFETY: `&mut self` gives the view exclusive access to the tensor's elements, which
        // no other handle can reach (`check_exclusive`).
        unsafe { self.view().as_array_mut_unchecked() }
    }

    fn from_array<T: Element, D: Dimension>(array: Array<T, D>) -> Result<ManagedTensor> {
        export_owned(array, false)
    }

    fn from_array_legacy<T: Element, D: Dimension>(array: Array<T, D>) -> Result<ManagedTensor> {
        export_owned(array, true)
    }

    fn from_arc_array<T: Element, D: Dimension>(array: ArcArray<T, D>) -> Result<ManagedTensor> {
        let array = array.into_dyn();
        let unique = array.is_unique();
        if unique {
            // `is_unique` reads the count without ordering; pair it with the release decrement
            // of every clone already dropped, so their reads happen before the consumer's
            // writes (what `Arc::get_mut` does).
            fence(Ordering::Acquire);
        }
        // Not `as_mut_ptr`, which would unshare (copy) shared data.
        let data = array.as_ptr().cast_mut();
        let flags = Flags::NONE.with(Flags::READ_ONLY, !unique);
        // SAFETY: `data` is the array's first element, and its layout stays valid while the
        // array (its `Arc`) lives, wherever it is moved. When unique, no other handle exists
        // or can be made (ndarray never hands out the `Arc`), so the consumer may write, and
        // the pointer came from the array's own buffer allocation, which allows writes. When
        // shared, the tensor is read-only and the other clones copy before writing.
        unsafe { export_array(array, data, flags, false) }
    }

    unsafe fn from_array_view<T: Element, D: Dimension, O: Send + 'static>(
        view: ArrayView<'_, T, D>,
        owner: O,
    ) -> Result<ManagedTensor> {
        let descriptor = Descriptor {
            data: view.as_ptr().cast_mut().cast(),
            dtype: T::DTYPE,
            device: Device::CPU,
            flags: Flags::READ_ONLY,
            legacy: false,
        };
        // SAFETY: the view's pointer and layout describe initialised `T`s (an ndarray
        // invariant) that `owner` keeps alive and unchanged while it lives, by this function's
        // contract; the tensor is read-only.
        unsafe {
            export_owner(owner, view.ndim(), descriptor, None, |_, shape, strides| {
                write_dims(view.shape(), view.strides(), shape, strides);
            })
        }
    }
}

/// Exports an owned array, writable.
fn export_owned<T: Element, D: Dimension>(
    array: Array<T, D>,
    legacy: bool,
) -> Result<ManagedTensor> {
    // `IxDyn` makes the owner `'static` whatever `D` is; the elements stay where they are.
    let mut array = array.into_dyn();
    let data = array.as_mut_ptr();
    // SAFETY: an owned array is the only handle to its heap buffer, which does not move when
    // the array does; `data` is its first element, with write access, and its layout reaches
    // only initialised elements of that buffer.
    unsafe { export_array(array, data, Flags::NONE, legacy) }
}

/// Moves an array into an export block, taking the shape and strides from the array at its
/// final address.
///
/// # Safety
///
/// `data` must be the array's first logical element, and the elements its layout reaches must
/// stay valid while the array lives, wherever it is moved: readable, and writable by the
/// consumer unless `flags` is read-only.
unsafe fn export_array<S, T>(
    array: ArrayBase<S, IxDyn>,
    data: *mut T,
    flags: Flags,
    legacy: bool,
) -> Result<ManagedTensor>
where
    T: Element,
    S: RawData<Elem = T>,
    ArrayBase<S, IxDyn>: Send + 'static,
{
    let descriptor = Descriptor {
        data: data.cast(),
        dtype: T::DTYPE,
        device: Device::CPU,
        flags,
        legacy,
    };
    let ndim = array.ndim();
    // SAFETY: forwarded from this function's contract; the shape and strides written are the
    // array's own.
    unsafe {
        export_owner(array, ndim, descriptor, None, |array, shape, strides| {
            write_dims(array.shape(), array.strides(), shape, strides);
        })
    }
}

/// Writes ndarray's extents and strides in the ABI's `i64` (lossless: see the assertion at
/// the top of this module).
fn write_dims(shape: &[usize], strides: &[isize], shape_out: &mut [i64], strides_out: &mut [i64]) {
    for (out, &len) in shape_out.iter_mut().zip(shape) {
        *out = len as i64;
    }
    for (out, &stride) in strides_out.iter_mut().zip(strides) {
        *out = stride as i64;
    }
}

#[cfg(test)]
mod tests;
