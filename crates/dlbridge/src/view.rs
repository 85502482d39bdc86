//! Validated, borrowed views of a tensor descriptor, and typed element access.

use std::ffi::c_void;
use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::ffi::DLTensor;
use crate::{
    layout, DataType, Device, Element, Error, Flags, Result, Version, Writability, MAX_NDIM,
};

/// What validation learned about a descriptor, kept by the owner of the tensor.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Checked {
    /// Number of elements.
    pub elements: u64,
    /// `strides` is NULL with `ndim > 0` in a producer that may send that (legacy, < 1.2):
    /// the layout is compact row-major.
    pub strides_missing: bool,
    /// The lowest and highest element offsets the layout reaches, relative to the first
    /// element; `(0, -1)` without elements.
    pub offsets: (i64, i64),
}

/// Validates everything about a descriptor that can be checked without reading the data.
///
/// `version` is `None` for a legacy tensor (which may have NULL strides). `device` is where the
/// data is taken to live (normally `tensor.device`): addresses are judged for host devices.
///
/// # Safety
///
/// When `ndim > 0`, a non-NULL `shape` and a non-NULL `strides` must each point to `ndim`
/// readable `i64` values. Nothing else is dereferenced.
#[inline(always)]
pub(crate) unsafe fn check_descriptor(
    tensor: &DLTensor,
    version: Option<Version>,
    flags: Flags,
    device: Device,
) -> Result<Checked> {
    let ndim = tensor.ndim;
    if !(0..=MAX_NDIM).contains(&ndim) {
        return Err(Error::InvalidNdim { ndim: ndim.into() });
    }
    let dtype = tensor.dtype;
    dtype.check()?;
    let padded = flags.is_subbyte_type_padded();
    if padded && !dtype.is_sub_byte() {
        return Err(Error::PaddedFlagOnWholeByteType { dtype });
    }
    let rank = ndim as usize;
    let shape: &[i64] = if rank == 0 {
        &[]
    } else if tensor.shape.is_null() {
        return Err(Error::NullShape { ndim });
    } else {
        // SAFETY: non-NULL and, by this function's contract, valid for `ndim` values.
        unsafe { std::slice::from_raw_parts(tensor.shape, rank) }
    };
    let elements = layout::element_count(shape)?;
    let byte_size_error = || Error::ByteSizeOverflow { elements, dtype };
    match dtype.storage_bytes(elements, padded) {
        Some(bytes) if bytes <= isize::MAX as u64 => {}
        _ => return Err(byte_size_error()),
    }
    let strides_missing = rank > 0 && tensor.strides.is_null();
    if strides_missing {
        if let Some(version) = version.filter(|v| *v >= Version::STRIDES_REQUIRED) {
            return Err(Error::NullStrides { ndim, version });
        }
    }
    if elements == 0 {
        return Ok(Checked {
            elements,
            strides_missing,
            offsets: (0, -1),
        });
    }
    if tensor.data.is_null() {
        return Err(Error::NullData { elements });
    }
    // The element offsets reached, relative to the first element.
    let (low, high) = if strides_missing || rank == 0 {
        (0, elements as i64 - 1)
    } else {
        // SAFETY: non-NULL and, by this function's contract, valid for `ndim` values.
        let strides = unsafe { std::slice::from_raw_parts(tensor.strides, rank) };
        layout::offset_range(shape, strides)?
    };
    if let Some(size) = dtype.size_in_bytes() {
        let size = size as i128;
        let (low_byte, end_byte) = (low as i128 * size, (high as i128 + 1) * size);
        if end_byte - low_byte > isize::MAX as i128 {
            return Err(byte_size_error());
        }
        if device.is_host_readable() {
            let first = tensor.data as usize as i128 + tensor.byte_offset as i128;
            if first + low_byte < 0 || first + end_byte > usize::MAX as i128 {
                return Err(Error::AddressOverflow {
                    data: tensor.data as usize,
                    byte_offset: tensor.byte_offset,
                });
            }
        }
    }
    Ok(Checked {
        elements,
        strides_missing,
        offsets: (low, high),
    })
}

/// A validated, borrowed view of a tensor descriptor: shape, strides, data type, device, byte
/// offset, flags and version, plus typed access to host-readable data.
///
/// Obtained from [`crate::ManagedTensor::view`], or from a borrowed `DLTensor` with
/// [`TensorView::from_dltensor`]. The strides are always available: a legacy producer's NULL
/// strides are replaced by the compact row-major ones.
#[derive(Clone, Copy)]
pub struct TensorView<'a> {
    tensor: &'a DLTensor,
    shape: &'a [i64],
    strides: &'a [i64],
    version: Option<Version>,
    flags: Flags,
    writability: Writability,
    device: Device,
    elements: u64,
    offsets: (i64, i64),
}

// SAFETY: a view only reads the descriptor and hands out shared access to the data; the
// DLPack contract lets any thread read a tensor the consumer holds.
unsafe impl Send for TensorView<'_> {}
// SAFETY: as above; no method mutates through `&self`.
unsafe impl Sync for TensorView<'_> {}

/// The strides of a one-dimensional compact tensor, for descriptors that leave them out.
static UNIT_STRIDE: [i64; 1] = [1];

impl<'a> TensorView<'a> {
    /// Validates a borrowed `DLTensor` (as the exchange API's `dltensor_from_py_object_no_sync`
    /// fills it) and views it. It is taken to follow DLPack 1.3, so `strides` must not be NULL
    /// when `ndim > 1`; it carries no flags.
    ///
    /// # Safety
    ///
    /// `shape` and `strides`, when not NULL, must point to `ndim` readable `i64` values, and the
    /// descriptor and the data it describes must stay valid and unchanged (but for writes
    /// through this crate) for `'a`. For a host-readable device, `data + byte_offset` and every
    /// element the layout reaches must be readable memory.
    pub unsafe fn from_dltensor(tensor: &'a DLTensor) -> Result<Self> {
        let version = Version::CURRENT;
        // SAFETY: forwarded from this function's contract.
        let checked =
            unsafe { check_descriptor(tensor, Some(version), Flags::NONE, tensor.device) }?;
        // SAFETY: checked, and valid for `'a` by this function's contract.
        Ok(unsafe {
            Self::from_checked(
                tensor,
                Some(version),
                Flags::NONE,
                tensor.device,
                checked,
                None,
                false,
            )
        })
    }

    /// A view of a descriptor `check_descriptor` accepted.
    ///
    /// # Safety
    ///
    /// `checked` must be what `check_descriptor(tensor, version, flags, device)` returned, the
    /// contract
    /// of [`TensorView::from_dltensor`] must hold for `'a`, and when `checked.strides_missing`
    /// with `ndim > 1`, `implicit_strides` must hold the compact row-major strides.
    /// `legacy_writes_allowed` says that a legacy tensor (`version` None) is known to be
    /// writable (this crate exported it, or its holder vouched for it).
    pub(crate) unsafe fn from_checked(
        tensor: &'a DLTensor,
        version: Option<Version>,
        flags: Flags,
        device: Device,
        checked: Checked,
        implicit_strides: Option<&'a [i64]>,
        legacy_writes_allowed: bool,
    ) -> Self {
        let rank = tensor.ndim as usize;
        let shape: &[i64] = if rank == 0 {
            &[]
        } else {
            // SAFETY: validated non-NULL and valid for `ndim` values.
            unsafe { std::slice::from_raw_parts(tensor.shape, rank) }
        };
        let strides: &[i64] = if rank == 0 {
            &[]
        } else if !checked.strides_missing {
            // SAFETY: non-NULL and valid for `ndim` values by the contract.
            unsafe { std::slice::from_raw_parts(tensor.strides, rank) }
        } else if let Some(strides) = implicit_strides {
            strides
        } else {
            debug_assert_eq!(rank, 1, "implicit strides must be supplied for ndim > 1");
            &UNIT_STRIDE
        };
        let writability = if flags.is_read_only() {
            Writability::ReadOnly
        } else if version.is_none() && !legacy_writes_allowed {
            Writability::Unknown
        } else {
            Writability::Writable
        };
        TensorView {
            tensor,
            shape,
            strides,
            version,
            flags,
            writability,
            device,
            elements: checked.elements,
            offsets: checked.offsets,
        }
    }

    /// The lowest and highest element offsets the layout reaches, in elements relative to the
    /// first element (`data + byte_offset`), as validation computed them: `(0, n - 1)` for a
    /// compact tensor of `n` elements, negative lows for negative strides, `(0, -1)` for a
    /// tensor without elements.
    ///
    /// ```
    /// use dlbridge::Export;
    /// let tensor = Export::new(vec![0u8; 6], &[2, 3]).into_versioned()?;
    /// assert_eq!(tensor.view().element_offset_range(), (0, 5));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn element_offset_range(&self) -> (i64, i64) {
        self.offsets
    }

    /// The raw descriptor.
    pub fn dl_tensor(&self) -> &'a DLTensor {
        self.tensor
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// The extents.
    pub fn shape(&self) -> &'a [i64] {
        self.shape
    }

    /// The strides in elements (the compact row-major ones when the producer sent NULL).
    pub fn strides(&self) -> &'a [i64] {
        self.strides
    }

    /// The element type.
    pub fn dtype(&self) -> DataType {
        self.tensor.dtype
    }

    /// The device the data lives on: `DLTensor.device`, unless the owner corrected it (see
    /// [`crate::ManagedTensor::set_device`]).
    pub fn device(&self) -> Device {
        self.device
    }

    /// `DLTensor.data` as sent (see [`TensorView::data_ptr`] for the first element).
    pub fn raw_data(&self) -> *mut c_void {
        self.tensor.data
    }

    /// Bytes from `data` to the first element.
    pub fn byte_offset(&self) -> u64 {
        self.tensor.byte_offset
    }

    /// The address of the first element: `data + byte_offset` (NULL when the producer sent
    /// NULL data for an empty tensor).
    pub fn data_ptr(&self) -> *mut c_void {
        self.tensor
            .data
            .cast::<u8>()
            .wrapping_add(self.tensor.byte_offset as usize)
            .cast()
    }

    /// The flags as the producer sent them ([`Flags::NONE`] for a legacy tensor, which has none:
    /// see [`TensorView::writability`]).
    pub fn flags(&self) -> Flags {
        self.flags
    }

    /// The version the producer wrote; `None` for a legacy tensor.
    pub fn version(&self) -> Option<Version> {
        self.version
    }

    /// Whether the tensor must not be written: flagged READ_ONLY, or a legacy tensor whose
    /// producer could not say that writes are allowed ([`Writability::Unknown`]).
    pub fn is_read_only(&self) -> bool {
        !self.writability.allows_writes()
    }

    /// Whether the memory may be written, and if not, why (see [`Writability`]).
    pub fn writability(&self) -> Writability {
        self.writability
    }

    /// Number of elements.
    pub fn num_elements(&self) -> u64 {
        self.elements
    }

    /// Bytes the elements take when stored compactly (packed for sub-byte types unless the
    /// padded flag is set).
    pub fn compact_byte_size(&self) -> u64 {
        self.dtype()
            .storage_bytes(self.elements, self.flags.is_subbyte_type_padded())
            .unwrap_or(u64::MAX)
    }

    /// Whether the layout is compact row-major (extent-1 dimensions and empty tensors are
    /// handled as [`layout::is_c_contiguous`] says).
    pub fn is_c_contiguous(&self) -> bool {
        layout::is_c_contiguous(self.shape, self.strides)
    }

    /// Whether the layout is compact column-major.
    pub fn is_f_contiguous(&self) -> bool {
        layout::is_f_contiguous(self.shape, self.strides)
    }

    /// The first element as a typed pointer, after the checks every typed access needs:
    /// host-readable device, matching data type, alignment. Dangling for an empty tensor.
    pub(crate) fn first_element<T: Element>(&self) -> Result<NonNull<T>> {
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
        if self.elements == 0 {
            return Ok(NonNull::dangling());
        }
        let first = self.data_ptr().cast::<T>();
        if !first.is_aligned() {
            return Err(Error::Misaligned {
                address: first as usize,
                align: std::mem::align_of::<T>(),
            });
        }
        // Non-NULL: validation rejected NULL data for a non-empty tensor and an address
        // overflow, so `data + byte_offset` is a non-zero address.
        NonNull::new(first).ok_or(Error::NullData {
            elements: self.elements,
        })
    }

    fn contiguity_error(&self, order: &'static str) -> Error {
        Error::NotContiguous {
            order,
            shape: self.shape.to_vec(),
            strides: self.strides.to_vec(),
        }
    }

    /// The elements as a slice in row-major order. Needs a C-contiguous layout on a
    /// host-readable device, a data type equal to `T::DTYPE`, and an aligned first element.
    ///
    /// ```
    /// use dlbridge::Export;
    /// let tensor = Export::new(vec![1i32, 2, 3, 4, 5, 6], &[2, 3]).into_versioned().unwrap();
    /// assert_eq!(tensor.view().as_slice::<i32>().unwrap(), &[1, 2, 3, 4, 5, 6]);
    /// assert!(tensor.view().as_slice::<f32>().is_err()); // int32 is not float32
    /// ```
    pub fn as_slice<T: Element>(&self) -> Result<&'a [T]> {
        let first = self.first_element::<T>()?;
        if !self.is_c_contiguous() {
            return Err(self.contiguity_error("C"));
        }
        // SAFETY: compact, so the elements are `elements` consecutive `T`s from `first`, which
        // is aligned and readable for `'a` (host-readable device, validated layout); the bytes
        // are checked for validity before the slice is made.
        unsafe { checked_slice(first, self.elements as usize) }
    }

    /// The elements as a slice in memory order, for a layout that is C- or F-contiguous.
    pub fn as_slice_memory_order<T: Element>(&self) -> Result<&'a [T]> {
        let first = self.first_element::<T>()?;
        if !self.is_c_contiguous() && !self.is_f_contiguous() {
            return Err(self.contiguity_error("C or F"));
        }
        // SAFETY: as in `as_slice`: a compact layout with non-negative steps starts at its
        // first element.
        unsafe { checked_slice(first, self.elements as usize) }
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
            shape: self.shape,
            strides: self.strides,
            len: self.elements as usize,
            _data: PhantomData,
        };
        elements.check_bit_patterns()?;
        Ok(elements)
    }

    /// Checks everything a mutable typed access needs on top of the shared one: not
    /// read-only, no two indices reaching the same element.
    pub(crate) fn check_writable(&self) -> Result<()> {
        match self.writability {
            Writability::Writable => {}
            Writability::ReadOnly => return Err(Error::ReadOnly { flags: self.flags }),
            Writability::Unknown => return Err(Error::WritabilityUnknown),
        }
        if !layout::is_overlap_free(self.shape, self.strides) {
            return Err(Error::OverlappingLayout {
                shape: self.shape.to_vec(),
                strides: self.strides.to_vec(),
            });
        }
        Ok(())
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

impl fmt::Debug for TensorView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorView")
            .field("shape", &self.shape)
            .field("strides", &self.strides)
            .field("dtype", &format_args!("{}", self.dtype()))
            .field("device", &format_args!("{}", self.device()))
            .field("byte_offset", &self.byte_offset())
            .field("flags", &self.flags)
            .field(
                "version",
                &format_args!(
                    "{}",
                    self.version
                        .map_or_else(|| "legacy".to_owned(), |v| v.to_string())
                ),
            )
            .finish()
    }
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
        // Cannot overflow: validation bounded every reachable offset.
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
            // SAFETY: every offset of the validated layout is a readable element.
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

    /// The element at `index` (one entry per dimension), or `None` when out of bounds.
    pub fn get(&self, index: &[usize]) -> Option<&'a T> {
        let offset = offset_of(self.shape, self.strides, index)?;
        // SAFETY: an in-bounds index of the validated layout reaches a readable element whose
        // bit pattern was checked.
        Some(unsafe { &*self.first.as_ptr().offset(offset) })
    }

    /// The elements in row-major (logical) order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &'a T> + 'a {
        let first = self.first;
        Offsets::new(self.shape, self.strides, self.len)
            // SAFETY: every offset of the validated layout is a readable, checked element.
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
    /// The caller must hold exclusive access to the tensor for `'a`.
    pub(crate) unsafe fn new(view: TensorView<'a>) -> Result<Self> {
        view.check_writable()?;
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
        // SAFETY: an in-bounds index reaches a writable element (the pointer comes from the
        // raw data pointer, not from a shared reference); `&mut self` makes it unique.
        Some(unsafe { &mut *self.as_mut_ptr().offset(offset) })
    }

    /// The elements in row-major order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &T> + '_ {
        self.elements.iter().map(|element| -> &T { element })
    }

    /// The elements in row-major order, for writing.
    pub fn iter_mut(&mut self) -> impl ExactSizeIterator<Item = &mut T> + '_ {
        let first = self.as_mut_ptr();
        Offsets::new(
            self.elements.shape,
            self.elements.strides,
            self.elements.len,
        )
        // SAFETY: the layout was checked overlap-free, so each offset is a distinct element
        // and the references never alias; `&mut self` keeps them unique for the borrow.
        .map(move |offset| unsafe { &mut *first.offset(offset) })
    }
}
