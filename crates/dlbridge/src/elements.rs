//! Typed access to the elements of a validated tensor: slices of contiguous layouts, and
//! strided [`Elements`] and [`ElementsMut`] for any layout; shared through [`TensorView`],
//! mutable through [`ManagedTensor`], whose `&mut self` makes the access exclusive.
//!
//! Validation vouches for the layout (V1 to V8, in the `validate` module). What only a typed
//! access can know is checked here, at every access, before any reference is made:
//!
//! - `T::DTYPE` is a whole-byte type of `size_of::<T>()` bytes, the device is host-readable,
//!   the data type is `T::DTYPE`, and the first element is aligned for `T`
//!   (`TensorView::first_element`);
//! - for a type with invalid bit patterns (`bool`), every element reached holds a valid one
//!   (`checked_slice`, `Elements::check_bit_patterns`);
//! - for mutable access, the handle is the only way Rust code reaches the memory
//!   ([`ManagedTensor::is_exclusive`]), the tensor is writable ([`Writability::Writable`]) and
//!   no two indices reach the same element (`ManagedTensor::view_for_writing`).
//!
//! `Offsets`, the row-major walk over a layout's element offsets, serves the iterators here and
//! the compact copy of `export`.

use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::element::Element;
use crate::error::{Error, Result};
use crate::flags::Writability;
use crate::layout;
use crate::managed::ManagedTensor;
use crate::view::TensorView;

impl<'a> TensorView<'a> {
    /// The first element as a typed pointer, after the checks every typed access needs:
    /// host-readable device, matching data type, alignment. Dangling for an empty tensor.
    pub(crate) fn first_element<T: Element>(&self) -> Result<NonNull<T>> {
        check_element_size::<T>()?;
        let device = self.device();
        if !device.is_host_readable() {
            return Err(Error::NotHostReadable { device });
        }
        if self.dtype() != T::DTYPE {
            return Err(Error::DataTypeMismatch {
                requested: T::DTYPE,
                actual: self.dtype(),
            });
        }
        if self.num_elements() == 0 {
            return Ok(NonNull::dangling());
        }
        let first = self.data_ptr().cast::<T>();
        if !first.is_aligned() {
            return Err(Error::Misaligned {
                address: first as usize,
                align: std::mem::align_of::<T>(),
            });
        }
        // Non-NULL by V6 and V8: a tensor with elements has non-NULL data, and on a
        // host-readable device `data + byte_offset` does not wrap, so it is a non-zero address.
        NonNull::new(first).ok_or_else(|| Error::NullData {
            elements: self.num_elements(),
        })
    }

    fn contiguity_error(&self, order: &'static str) -> Error {
        Error::NotContiguous {
            order,
            shape: self.shape().to_vec(),
            strides: self.strides().to_vec(),
        }
    }

    /// The elements as a slice in row-major order. Needs a C-contiguous layout on a
    /// host-readable device, a data type equal to `T::DTYPE`, and an aligned first element.
    ///
    /// ```
    /// use dlbridge::Export;
    /// let tensor = Export::new(vec![1i32, 2, 3, 4, 5, 6], &[2, 3]).into_versioned().unwrap();
    /// assert_eq!(tensor.view().as_slice::<i32>().unwrap(), &[1, 2, 3, 4, 5, 6]);
    /// // int32 is not float32:
    /// assert!(matches!(tensor.view().as_slice::<f32>(), Err(dlbridge::Error::DataTypeMismatch { .. })));
    /// ```
    pub fn as_slice<T: Element>(&self) -> Result<&'a [T]> {
        let first = self.first_element::<T>()?;
        if !self.is_c_contiguous() {
            return Err(self.contiguity_error("C"));
        }
        // SAFETY: V5, V7 and V8: compact, so the elements are `num_elements` consecutive `T`s
        // from `first`, in one range of at most `isize::MAX` bytes; `first` is aligned (checked
        // above) and the memory readable for `'a` on a host-readable device (the entry point's
        // contract); the bytes are checked for validity before the slice is made.
        unsafe { checked_slice(first, self.num_elements() as usize) }
    }

    /// The bytes of a C-contiguous tensor on a host-readable device, whatever its data type:
    /// its compact storage in row-major order (packed sub-byte elements as they are stored, two
    /// float4s to a byte). What a file format or a hash reads.
    ///
    /// ```
    /// use dlbridge::Export;
    /// let tensor = Export::new(vec![1u16, 0x0302], &[2]).into_versioned()?;
    /// assert_eq!(tensor.view().as_bytes()?, &[1, 0, 2, 3][..]); // little-endian
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn as_bytes(&self) -> Result<&'a [u8]> {
        let device = self.device();
        if !device.is_host_readable() {
            return Err(Error::NotHostReadable { device });
        }
        if !self.is_c_contiguous() {
            return Err(self.contiguity_error("C"));
        }
        if self.num_elements() == 0 {
            return Ok(&[]);
        }
        let first = self.data_ptr().cast::<u8>();
        if first.is_null() {
            return Err(Error::NullData {
                elements: self.num_elements(),
            });
        }
        // SAFETY: V5, V7 and V8: a C-contiguous layout holds exactly `compact_byte_size` bytes
        // from its first element (packed or padded as its flag says), in one range of at most
        // `isize::MAX` bytes, readable for `'a` on a host-readable device (the entry point's
        // contract); any byte is a valid `u8`, and `first` is not NULL (checked above).
        Ok(unsafe { std::slice::from_raw_parts(first, self.compact_byte_size() as usize) })
    }

    /// The elements as a slice in memory order, for a layout that is C- or F-contiguous.
    pub fn as_slice_memory_order<T: Element>(&self) -> Result<&'a [T]> {
        let first = self.first_element::<T>()?;
        if !self.is_c_contiguous() && !self.is_f_contiguous() {
            return Err(self.contiguity_error("C or F"));
        }
        // SAFETY: as in `as_slice`: a compact layout with non-negative steps starts at its
        // first element.
        unsafe { checked_slice(first, self.num_elements() as usize) }
    }

    /// Strided, typed access to the elements of any layout: indexing and row-major iteration.
    ///
    /// ```
    /// use dlbridge::Export;
    /// // A 2x3 column-major tensor.
    /// let tensor = Export::new(vec![1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0], &[2, 3])
    ///     .strides(&[1, 2])
    ///     .into_versioned()
    ///     .unwrap();
    /// let elements = tensor.view().elements::<f64>().unwrap();
    /// assert_eq!(elements.get(&[1, 2]), Some(&6.0));
    /// assert_eq!(elements.iter().copied().collect::<Vec<_>>(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    /// ```
    pub fn elements<T: Element>(&self) -> Result<Elements<'a, T>> {
        let first = self.first_element::<T>()?;
        let elements = Elements {
            first,
            shape: self.shape(),
            strides: self.strides(),
            len: self.num_elements() as usize,
            _data: PhantomData,
        };
        elements.check_bit_patterns()?;
        Ok(elements)
    }

    /// Checks everything a mutable typed access needs on top of the shared one: not
    /// read-only, no two indices reaching the same element.
    pub(crate) fn check_writable(&self) -> Result<()> {
        match self.writability() {
            Writability::Writable => {}
            Writability::ReadOnly => {
                return Err(Error::ReadOnly {
                    flags: self.flags(),
                });
            }
            Writability::Unknown => return Err(Error::WritabilityUnknown),
        }
        if !layout::is_overlap_free(self.shape(), self.strides()) {
            return Err(Error::OverlappingLayout {
                shape: self.shape().to_vec(),
                strides: self.strides().to_vec(),
            });
        }
        Ok(())
    }
}

impl ManagedTensor {
    /// The elements as a mutable slice in row-major order (see [`TensorView::as_slice`]);
    /// refused for a read-only tensor and for a share whose memory another handle can still
    /// read ([`ManagedTensor::is_exclusive`]).
    pub fn as_mut_slice<T: Element>(&mut self) -> Result<&mut [T]> {
        let view = self.view_for_writing()?;
        let len = view.as_slice::<T>()?.len();
        // Made from the raw data pointer, never from the shared slice above.
        let first = view.first_element::<T>()?;
        // SAFETY: `as_slice` accepted the same elements (V5, V7 and V8 for the layout; type,
        // alignment and bit patterns checked); `&mut self` gives exclusive access for the
        // borrow, and the tensor is not read-only, so the producer allows writes.
        Ok(unsafe { std::slice::from_raw_parts_mut(first.as_ptr(), len) })
    }

    /// The elements as a mutable slice in memory order, for a C- or F-contiguous layout.
    pub fn as_mut_slice_memory_order<T: Element>(&mut self) -> Result<&mut [T]> {
        let view = self.view_for_writing()?;
        let len = view.as_slice_memory_order::<T>()?.len();
        let first = view.first_element::<T>()?;
        // SAFETY: as in `as_mut_slice`.
        Ok(unsafe { std::slice::from_raw_parts_mut(first.as_ptr(), len) })
    }

    /// Strided mutable access to the elements of any layout that reaches each element once;
    /// refused for a read-only tensor and for overlapping (broadcast) layouts.
    ///
    /// ```
    /// use dlbridge::Export;
    /// let mut tensor = Export::new(vec![0u8; 6], &[2, 3]).into_versioned()?;
    /// let mut elements = tensor.elements_mut::<u8>()?;
    /// *elements.get_mut(&[1, 2]).unwrap() = 7;
    /// assert_eq!(tensor.view().as_slice::<u8>()?, &[0, 0, 0, 0, 0, 7]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn elements_mut<T: Element>(&mut self) -> Result<ElementsMut<'_, T>> {
        let view = self.view_for_writing()?;
        // SAFETY: `&mut self` gives exclusive access for the borrow, and no other handle can
        // reach the memory (`view_for_writing`).
        unsafe { ElementsMut::new(view) }
    }
}

/// Checks that `T::DTYPE` is a whole-byte type of `size_of::<T>()` bytes, which V7 and V8 (and
/// a device view's length) speak of: an `Element` implemented for a sub-byte type would have
/// its elements counted one per `T` over packed memory. Constant for a given `T`, so it costs
/// nothing for the crate's own element types.
pub(crate) fn check_element_size<T: Element>() -> Result<()> {
    if T::DTYPE.size_in_bytes() == Some(size_of::<T>()) {
        Ok(())
    } else {
        Err(Error::ElementSize {
            dtype: T::DTYPE,
            size: size_of::<T>(),
        })
    }
}

/// Makes a slice of `len` elements from `first` after checking their bit patterns.
///
/// # Safety
///
/// `first` must be aligned and point to `len` consecutive readable `T`-sized slots that stay
/// valid and are not written except through this crate for `'a`.
unsafe fn checked_slice<'a, T: Element>(first: NonNull<T>, len: usize) -> Result<&'a [T]> {
    if T::HAS_INVALID_BIT_PATTERNS {
        // SAFETY: the same memory as bytes: readable, and `u8` has no invalid values.
        let bytes = unsafe {
            std::slice::from_raw_parts(first.as_ptr().cast::<u8>(), len * size_of::<T>())
        };
        for (offset, chunk) in bytes.chunks_exact(size_of::<T>()).enumerate() {
            if !T::is_valid_bit_pattern(chunk) {
                return Err(Error::InvalidBool {
                    offset: offset as isize,
                    value: chunk[0],
                });
            }
        }
    }
    // SAFETY: by this function's contract, and every element's bytes are a valid `T`.
    Ok(unsafe { std::slice::from_raw_parts(first.as_ptr(), len) })
}

/// Row-major walk over the element offsets of a layout.
pub(crate) struct Offsets<'a> {
    shape: &'a [i64],
    strides: &'a [i64],
    index: Vec<i64>,
    offset: isize,
    remaining: usize,
}

impl<'a> Offsets<'a> {
    pub(crate) fn new(shape: &'a [i64], strides: &'a [i64], len: usize) -> Self {
        Offsets {
            shape,
            strides,
            index: vec![0; shape.len()],
            offset: 0,
            remaining: len,
        }
    }
}

impl Iterator for Offsets<'_> {
    type Item = isize;

    fn next(&mut self) -> Option<isize> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let current = self.offset;
        if self.remaining > 0 {
            for dim in (0..self.shape.len()).rev() {
                let stride = self.strides[dim] as isize;
                self.index[dim] += 1;
                if self.index[dim] < self.shape[dim] {
                    self.offset += stride;
                    break;
                }
                self.offset -= stride * (self.index[dim] - 1) as isize;
                self.index[dim] = 0;
            }
        }
        Some(current)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Offsets<'_> {}

/// The offset of `index` in a validated layout, or `None` when it is out of bounds.
fn offset_of(shape: &[i64], strides: &[i64], index: &[usize]) -> Option<isize> {
    if index.len() != shape.len() {
        return None;
    }
    let mut offset = 0isize;
    for ((&i, &extent), &stride) in index.iter().zip(shape).zip(strides) {
        if i as u64 >= extent as u64 {
            return None;
        }
        // Cannot overflow: V7 puts every partial sum of an in-bounds index in the validated
        // offset range.
        offset += i as isize * stride as isize;
    }
    Some(offset)
}

/// Read-only typed access to the elements of a strided tensor: index them or iterate them in
/// row-major order. Made by [`TensorView::elements`].
pub struct Elements<'a, T> {
    first: NonNull<T>,
    shape: &'a [i64],
    strides: &'a [i64],
    len: usize,
    _data: PhantomData<&'a [T]>,
}

// SAFETY: behaves like `&'a [T]`, and `T: Element` is `Sync`.
unsafe impl<T: Element> Send for Elements<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Element> Sync for Elements<'_, T> {}

impl<'a, T: Element> Elements<'a, T> {
    fn check_bit_patterns(&self) -> Result<()> {
        if !T::HAS_INVALID_BIT_PATTERNS {
            return Ok(());
        }
        for offset in Offsets::new(self.shape, self.strides, self.len) {
            // SAFETY: V7 and V8: every offset of the walk is an element of the layout, inside
            // its one address range, and readable by the entry point's contract.
            let bytes = unsafe {
                std::slice::from_raw_parts(
                    self.first.as_ptr().offset(offset).cast::<u8>(),
                    size_of::<T>(),
                )
            };
            if !T::is_valid_bit_pattern(bytes) {
                return Err(Error::InvalidBool {
                    offset,
                    value: bytes[0],
                });
            }
        }
        Ok(())
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The extents.
    pub fn shape(&self) -> &'a [i64] {
        self.shape
    }

    /// The strides in elements.
    pub fn strides(&self) -> &'a [i64] {
        self.strides
    }

    /// The first element (dangling for an empty tensor), readable for `'a` wherever the
    /// layout reaches, with every element's bit pattern checked.
    #[cfg(feature = "ndarray")]
    pub(crate) fn as_ptr(&self) -> *const T {
        self.first.as_ptr()
    }

    /// The first element as a `NonNull` (dangling for an empty tensor), for the library
    /// bridges.
    #[cfg(any(feature = "nalgebra", feature = "faer", feature = "arrow"))]
    pub(crate) fn first(&self) -> NonNull<T> {
        self.first
    }

    /// The element at `index` (one entry per dimension), or `None` when out of bounds.
    pub fn get(&self, index: &[usize]) -> Option<&'a T> {
        let offset = offset_of(self.shape, self.strides, index)?;
        // SAFETY: V7 and V8: an in-bounds index reaches an element of the layout, readable by
        // the entry point's contract, whose bit pattern was checked.
        Some(unsafe { &*self.first.as_ptr().offset(offset) })
    }

    /// The elements in row-major (logical) order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &'a T> + 'a + use<'a, T> {
        let first = self.first;
        Offsets::new(self.shape, self.strides, self.len)
            // SAFETY: V7 and V8: every offset of the walk is a readable element of the layout,
            // its bit pattern checked.
            .map(move |offset| unsafe { &*first.as_ptr().offset(offset) })
    }

    /// The elements in row-major order, copied into a vector.
    pub fn to_vec(&self) -> Vec<T> {
        self.iter().copied().collect()
    }
}

impl<T: Element> fmt::Debug for Elements<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Elements")
            .field("dtype", &format_args!("{}", T::DTYPE))
            .field("shape", &self.shape)
            .field("strides", &self.strides)
            .finish()
    }
}

/// Mutable typed access to the elements of a strided tensor whose layout reaches every
/// element once. Made by [`crate::ManagedTensor::elements_mut`].
pub struct ElementsMut<'a, T> {
    /// The same layout, read-only; only `ElementsMut` hands out writes.
    elements: Elements<'a, T>,
    _unique: PhantomData<&'a mut [T]>,
}

// SAFETY: behaves like `&'a mut [T]`, and `T: Element` is `Send + Sync`.
unsafe impl<T: Element> Send for ElementsMut<'_, T> {}
// SAFETY: as above; shared access only reads.
unsafe impl<T: Element> Sync for ElementsMut<'_, T> {}

impl<T: Element> fmt::Debug for ElementsMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ElementsMut").field(&self.elements).finish()
    }
}

impl<'a, T: Element> ElementsMut<'a, T> {
    /// Mutable access over `view`'s elements.
    ///
    /// # Safety
    ///
    /// The caller must hold exclusive access to the tensor's memory for `'a`, and have checked
    /// `view` writable (`ManagedTensor::view_for_writing`).
    pub(crate) unsafe fn new(view: TensorView<'a>) -> Result<Self> {
        Ok(ElementsMut {
            elements: view.elements::<T>()?,
            _unique: PhantomData,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.elements.len
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.elements.is_empty()
    }

    /// The extents.
    pub fn shape(&self) -> &'a [i64] {
        self.elements.shape
    }

    /// The strides in elements.
    pub fn strides(&self) -> &'a [i64] {
        self.elements.strides
    }

    /// The first element (dangling for an empty tensor), writable for `'a` wherever the
    /// overlap-free layout reaches.
    pub(crate) fn as_mut_ptr(&self) -> *mut T {
        self.elements.first.as_ptr()
    }

    /// The element at `index`, or `None` when out of bounds.
    pub fn get(&self, index: &[usize]) -> Option<&T> {
        self.elements.get(index)
    }

    /// The element at `index` for writing, or `None` when out of bounds.
    pub fn get_mut(&mut self, index: &[usize]) -> Option<&mut T> {
        let offset = offset_of(self.elements.shape, self.elements.strides, index)?;
        // SAFETY: V7 and V8: an in-bounds index reaches an element of the layout, writable (the
        // tensor is, and the pointer comes from the raw data pointer, not from a shared
        // reference); `&mut self` makes it unique.
        Some(unsafe { &mut *self.as_mut_ptr().offset(offset) })
    }

    /// The elements in row-major order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &T> + '_ {
        self.elements.iter().map(|element| -> &T { element })
    }

    /// The elements in row-major order, for writing.
    pub fn iter_mut(&mut self) -> impl ExactSizeIterator<Item = &mut T> + '_ + use<'_, T> {
        let first = self.as_mut_ptr();
        Offsets::new(
            self.elements.shape,
            self.elements.strides,
            self.elements.len,
        )
        // SAFETY: V7 and V8: each offset is a writable element of the layout; the layout was
        // checked overlap-free, so each offset is a distinct element and the references never
        // alias; `&mut self` keeps them unique for the borrow.
        .map(move |offset| unsafe { &mut *first.offset(offset) })
    }
}
