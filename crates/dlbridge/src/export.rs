//! Export of Rust memory as DLPack managed tensors, in one heap allocation.
//!
//! The managed struct, the shape, the strides and the owner of the memory live in a single
//! block: `[managed struct | ndim | owner | shape[ndim] | strides[ndim]]`. The deleter drops the
//! owner and frees the block; it may run on any thread, and a panic in the owner's `Drop`
//! never crosses into C.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ffi::c_void;
use std::io::Write;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::Arc;

use crate::ffi::{DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use crate::view::Checked;
use crate::{
    layout, DataType, Device, Element, Error, Flags, ManagedTensor, Result, TensorView, Version,
    Writability, MAX_NDIM,
};

/// An exporter of Rust memory as a DLPack managed tensor.
///
/// Made from a [`HostBuffer`] (`Vec<T>`, `Box<[T]>`, `Arc<[T]>`) with [`Export::new`], or from
/// any owner value that keeps memory alive with [`Export::from_raw_parts`]; then shaped with
/// [`Export::strides`] and [`Export::read_only`], and finished with
/// [`Export::into_versioned`] or [`Export::into_legacy`]. The result is a [`ManagedTensor`]
/// whose [`ManagedTensor::into_raw`] pointer can be handed to any DLPack consumer.
///
/// Every exported tensor passes this crate's own validation, has non-NULL `shape` and
/// `strides`, `byte_offset = 0` and `data` pointing at the first element, and takes exactly one
/// heap allocation (the owner's memory is not copied). Its deleter may run on any thread.
///
/// ```
/// use dlbridge::{Export, Flags};
/// use std::sync::Arc;
///
/// let shared: Arc<[f32]> = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0].into();
/// let other_owner = Arc::clone(&shared);
/// // Shared memory is exported read-only: another owner may be reading it.
/// let tensor = Export::new(shared, &[3, 2]).into_versioned()?;
/// assert_eq!(tensor.view().flags(), Flags::READ_ONLY);
/// assert_eq!(tensor.view().strides(), &[2, 1]);
/// drop(tensor);
/// assert_eq!(Arc::strong_count(&other_owner), 1);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub struct Export<'s, O> {
    owner: O,
    data: *mut c_void,
    dtype: DataType,
    device: Device,
    shape: &'s [usize],
    strides: Option<&'s [isize]>,
    /// Elements reachable from `data`, for a bounds check; `None` when the caller vouched.
    buffer_len: Option<usize>,
    flags: Flags,
}

mod sealed {
    pub trait Sealed {}
}

/// Host memory this crate knows how to export safely: `Vec<T>`, `Box<[T]>` and `Arc<[T]>` of
/// any [`Element`] type.
///
/// Uniquely owned buffers export writable; an `Arc<[T]>` exports writable only when no other
/// `Arc` or `Weak` points to it, and read-only otherwise. For other owners use
/// [`Export::from_raw_parts`].
pub trait HostBuffer: sealed::Sealed + Send + 'static {
    /// The element type.
    type Element: Element;
    /// The value the exported tensor keeps alive.
    #[doc(hidden)]
    type Owner: Send + 'static;
    /// Splits the buffer into its owner, its first element, its length, and whether the
    /// consumer may write. The pointer must stay valid while the owner lives, wherever it is
    /// moved.
    #[doc(hidden)]
    fn into_parts(self) -> (Self::Owner, *mut Self::Element, usize, bool);
}

impl<T: Element> sealed::Sealed for Vec<T> {}
impl<T: Element> HostBuffer for Vec<T> {
    type Element = T;
    type Owner = Vec<T>;
    fn into_parts(mut self) -> (Vec<T>, *mut T, usize, bool) {
        let (data, len) = (self.as_mut_ptr(), self.len());
        (self, data, len, true)
    }
}

impl<T: Element> sealed::Sealed for Box<[T]> {}
impl<T: Element> HostBuffer for Box<[T]> {
    type Element = T;
    // Kept as a Vec (same allocation, no copy): moving a `Box` asserts unique access to its
    // memory, which would invalidate the pointer handed to the consumer.
    type Owner = Vec<T>;
    fn into_parts(self) -> (Vec<T>, *mut T, usize, bool) {
        HostBuffer::into_parts(self.into_vec())
    }
}

impl<T: Element> sealed::Sealed for Arc<[T]> {}
impl<T: Element> HostBuffer for Arc<[T]> {
    type Element = T;
    type Owner = Arc<[T]>;
    fn into_parts(mut self) -> (Arc<[T]>, *mut T, usize, bool) {
        let len = self.len();
        match Arc::get_mut(&mut self) {
            Some(unique) => {
                let data = unique.as_mut_ptr();
                (self, data, len, true)
            }
            None => {
                let data = Arc::as_ptr(&self).cast::<T>().cast_mut();
                (self, data, len, false)
            }
        }
    }
}

impl<'s, O: Send + 'static> Export<'s, O> {
    /// Exports a host buffer with a shape; compact row-major unless [`Export::strides`] says
    /// otherwise. Without strides the shape must describe exactly the buffer's elements; with
    /// them, every element reached must lie inside the buffer.
    ///
    /// ```
    /// let tensor = dlbridge::Export::new(vec![0u16; 12], &[3, 4]).into_versioned()?;
    /// assert_eq!(tensor.view().strides(), &[4, 1]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn new<B>(buffer: B, shape: &'s [usize]) -> Self
    where
        B: HostBuffer<Owner = O>,
    {
        let (owner, data, len, writable) = buffer.into_parts();
        Export {
            owner,
            data: data.cast(),
            dtype: B::Element::DTYPE,
            device: Device::CPU,
            shape,
            strides: None,
            buffer_len: Some(len),
            flags: Flags::NONE.with(Flags::READ_ONLY, !writable),
        }
    }

    /// Exports memory kept alive by any owner value: device memory, a memory map, a foreign
    /// allocation. The owner is dropped by the tensor's deleter, on whatever thread the
    /// consumer calls it.
    ///
    /// # Safety
    ///
    /// For as long as `owner` lives (wherever it is moved), `data` must address the first
    /// element of memory on `device` that holds `dtype` elements at every offset the shape
    /// and strides reach, and that consumers may read, and write unless the export is made
    /// read-only.
    pub unsafe fn from_raw_parts(
        owner: O,
        data: *mut c_void,
        dtype: DataType,
        device: Device,
        shape: &'s [usize],
    ) -> Self {
        Export {
            owner,
            data,
            dtype,
            device,
            shape,
            strides: None,
            buffer_len: None,
            flags: Flags::NONE,
        }
    }

    /// Sets the strides, in elements (negative steps allowed), one per dimension.
    #[must_use]
    pub fn strides(mut self, strides: &'s [isize]) -> Self {
        self.strides = Some(strides);
        self
    }

    /// Flags the tensor read-only (consumers must not write). Shared memory is read-only
    /// whatever is asked.
    #[must_use]
    pub fn read_only(mut self, read_only: bool) -> Self {
        if read_only {
            self.flags |= Flags::READ_ONLY;
        }
        self
    }

    /// Flags the tensor IS_COPIED: a private copy that the consumer owns alone.
    #[must_use]
    pub fn is_copied(mut self, copied: bool) -> Self {
        self.flags = self.flags.with(Flags::IS_COPIED, copied);
        self
    }

    /// Finishes the export as a `DLManagedTensorVersioned` (version 1.3).
    pub fn into_versioned(self) -> Result<ManagedTensor> {
        self.finish(false)
    }

    /// Finishes the export as a legacy `DLManagedTensor`, for consumers that predate
    /// DLPack 1.0. A read-only tensor cannot be expressed there and is refused.
    pub fn into_legacy(self) -> Result<ManagedTensor> {
        if self.flags.is_read_only() {
            return Err(Error::ReadOnlyLegacyExport);
        }
        if self.flags.is_subbyte_type_padded() {
            return Err(Error::PaddedLegacyExport { dtype: self.dtype });
        }
        self.finish(true)
    }

    fn finish(self, legacy: bool) -> Result<ManagedTensor> {
        // Checked without allocating: the block below is the export's only allocation.
        let ndim = self.shape.len();
        if ndim > MAX_NDIM as usize {
            return Err(Error::InvalidNdim { ndim: ndim as i64 });
        }
        if let Some(&extent) = self.shape.iter().find(|&&e| e > i64::MAX as usize) {
            return Err(Error::ValueOutOfRange {
                field: "shape",
                value: extent as u128,
            });
        }
        let shape = self.shape.iter().map(|&extent| extent as i64);
        if let Some(strides) = self.strides {
            if strides.len() != ndim {
                return Err(Error::StridesLength {
                    ndim,
                    strides: strides.len(),
                });
            }
        }
        let elements = layout::count_elements(shape.clone())?;
        if let Some(buffer_len) = self.buffer_len {
            match self.strides {
                None if elements != buffer_len as u64 => {
                    return Err(Error::ShapeMismatch {
                        elements,
                        buffer_len,
                    });
                }
                Some(strides) if elements > 0 => {
                    let dims = shape.clone().zip(strides.iter().map(|&s| s as i64));
                    let (min_offset, max_offset) = layout::offsets_reached(dims)?;
                    if min_offset < 0 || max_offset >= buffer_len as i64 {
                        return Err(Error::OutOfBounds {
                            min_offset,
                            max_offset,
                            buffer_len,
                        });
                    }
                }
                _ => {}
            }
        }
        let descriptor = Descriptor {
            data: self.data,
            dtype: self.dtype,
            device: self.device,
            flags: self.flags,
            legacy,
        };
        let strides = self.strides;
        // SAFETY: the buffer's pointer (or the caller of `from_raw_parts`) guarantees the
        // memory for the layout, which was bounds-checked above where the length is known.
        unsafe {
            export_owner(
                self.owner,
                ndim,
                descriptor,
                None,
                |_, shape_out, strides_out| {
                    for (out, extent) in shape_out.iter_mut().zip(shape) {
                        *out = extent;
                    }
                    match strides {
                        Some(strides) => {
                            for (out, &stride) in strides_out.iter_mut().zip(strides) {
                                *out = stride as i64;
                            }
                        }
                        None => layout::fill_row_major_strides(shape_out, strides_out),
                    }
                },
            )
        }
    }
}

impl ManagedTensor {
    /// A new versioned tensor viewing the same memory, which keeps this one alive: how a
    /// consumer re-exports what it imported (NumPy -> dlbridge -> PyTorch) without a copy.
    ///
    /// The new tensor has this one's shape, strides (made explicit), dtype and device, `data`
    /// at the first element with `byte_offset = 0`, and the padded flag, with READ_ONLY when
    /// this one may not be written (flagged so, or a legacy tensor of unknown writability:
    /// [`crate::Writability`]); not
    /// IS_COPIED, since its memory is now shared. One allocation; this tensor's deleter runs
    /// when the last tensor sharing it is dropped, on whatever thread that happens.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dlbridge::{Export, ManagedTensor};
    /// let original = Arc::new(Export::new(vec![1u8, 2, 3], &[3]).into_versioned()?);
    /// let shared = Arc::clone(&original).share_versioned()?;
    /// assert_eq!(shared.view().data_ptr(), original.view().data_ptr());
    /// assert_eq!(Arc::strong_count(&original), 2);
    /// drop(shared);
    /// assert_eq!(Arc::strong_count(&original), 1);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[inline]
    pub fn share_versioned(self: Arc<Self>) -> Result<ManagedTensor> {
        share(self, false)
    }

    /// As [`ManagedTensor::share_versioned`], as a legacy `DLManagedTensor`; refused for a
    /// tensor flagged READ_ONLY, which the legacy layout cannot mark. A tensor of unknown
    /// writability (itself legacy, from outside) may go out legacy as it came in.
    #[inline]
    pub fn share_legacy(self: Arc<Self>) -> Result<ManagedTensor> {
        share(self, true)
    }
}

/// 64 bytes aligned to 64: the unit of Rust-owned tensor storage, so that consumers with
/// alignment demands (XLA wants 64 bytes for zero-copy) can share it.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct CacheLine([u8; 64]);

/// Zero-filled, 64-byte aligned storage of at least `bytes` bytes.
fn zeroed_storage(bytes: usize) -> Vec<CacheLine> {
    vec![CacheLine([0; 64]); bytes.div_ceil(64)]
}

impl ManagedTensor {
    /// A new zero-filled, compact row-major CPU tensor in Rust memory, 64-byte aligned (as XLA
    /// wants for zero-copy imports). Any data type with non-zero bits and lanes, sub-byte types
    /// packed.
    ///
    /// ```
    /// use dlbridge::{DataType, ManagedTensor};
    /// let mut tensor = ManagedTensor::zeros(DataType::FLOAT32, &[2, 3])?;
    /// tensor.as_mut_slice::<f32>()?[5] = 1.0;
    /// assert_eq!(tensor.view().as_slice::<f32>()?, &[0.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
    /// assert_eq!(tensor.view().data_ptr() as usize % 64, 0);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn zeros(dtype: DataType, shape: &[usize]) -> Result<ManagedTensor> {
        dtype.check()?;
        let elements = shape
            .iter()
            .enumerate()
            .try_fold(1u64, |count, (dim, &extent)| {
                count
                    .checked_mul(extent as u64)
                    .ok_or(Error::ElementCountOverflow {
                        dim,
                        extent: i64::try_from(extent).unwrap_or(i64::MAX),
                    })
            })?;
        let bytes = dtype
            .storage_bytes(elements, false)
            .filter(|&bytes| bytes <= isize::MAX as u64 / 2)
            .ok_or(Error::ByteSizeOverflow { elements, dtype })?;
        let mut storage = zeroed_storage(bytes as usize);
        let data = storage.as_mut_ptr().cast();
        // SAFETY: `storage` holds the compact bytes of the tensor and moves into it with its
        // heap memory unchanged.
        unsafe { Export::from_raw_parts(storage, data, dtype, Device::CPU, shape) }.into_versioned()
    }
}

impl TensorView<'_> {
    /// A compact row-major copy of the elements in Rust memory, as a versioned CPU tensor
    /// flagged IS_COPIED (and READ_ONLY never: the copy is the caller's). Needs host-readable
    /// memory; sub-byte types must already be C-contiguous (their packed elements are copied as
    /// bytes). The copy is 64-byte aligned, as XLA wants for zero-copy imports.
    ///
    /// ```
    /// use dlbridge::Export;
    /// let transposed = Export::new(vec![1u16, 3, 2, 4], &[2, 2]).strides(&[1, 2]).into_versioned()?;
    /// let copy = transposed.view().to_compact_copy()?;
    /// assert_eq!(copy.view().as_slice::<u16>()?, &[1, 2, 3, 4]);
    /// assert!(copy.view().flags().is_copied());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn to_compact_copy(&self) -> Result<ManagedTensor> {
        let device = self.device();
        if !device.is_host_readable() {
            return Err(Error::NotHostReadable { device });
        }
        let padded = self.flags().is_subbyte_type_padded();
        let bytes = self.compact_byte_size() as usize;
        let mut storage = zeroed_storage(bytes);
        let target = storage.as_mut_ptr().cast::<u8>();
        let compact = self.is_c_contiguous();
        match self.dtype().size_in_bytes() {
            _ if self.num_elements() == 0 => {}
            Some(size) if !compact => {
                let first = self.data_ptr().cast::<u8>();
                for (index, offset) in crate::view::Offsets::new(
                    self.shape(),
                    self.strides(),
                    self.num_elements() as usize,
                )
                .enumerate()
                {
                    // SAFETY: every offset of the validated layout is a readable element of
                    // `size` bytes; `storage` holds `num_elements * size` bytes.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            first.offset(offset * size as isize),
                            target.add(index * size),
                            size,
                        )
                    };
                }
            }
            _ if compact => {
                // SAFETY: a compact layout holds exactly `bytes` readable bytes from its first
                // element; `storage` holds at least that many.
                unsafe {
                    std::ptr::copy_nonoverlapping(self.data_ptr().cast::<u8>(), target, bytes)
                };
            }
            _ => {
                return Err(Error::NotContiguous {
                    order: "C",
                    shape: self.shape().to_vec(),
                    strides: self.strides().to_vec(),
                })
            }
        }
        let shape: Vec<usize> = self.shape().iter().map(|&extent| extent as usize).collect();
        let data = target.cast();
        // SAFETY: `storage` holds the compact bytes of the elements and moves into the tensor
        // with its heap memory unchanged.
        // The copy is in Rust's host memory, whatever device the source was on (pinned,
        // managed): it is CPU memory.
        let export =
            unsafe { Export::from_raw_parts(storage, data, self.dtype(), Device::CPU, &shape) }
                .is_copied(true);
        let export = if padded {
            Export {
                flags: export.flags | Flags::IS_SUBBYTE_TYPE_PADDED,
                ..export
            }
        } else {
            export
        };
        export.into_versioned()
    }
}

#[inline(always)]
fn share(tensor: Arc<ManagedTensor>, legacy: bool) -> Result<ManagedTensor> {
    // SAFETY: the `Arc` moves into the export (and lives as long as it), but its target does
    // not move, so a view of the target stays valid through the call, which only reads it.
    let view = unsafe { &*Arc::as_ptr(&tensor) }.view();
    // SAFETY: the `Arc` keeps the validated tensor, and so the memory its view describes,
    // alive; the view's read-only flag carries over.
    unsafe { export_view(&view, tensor, legacy, false) }
}

impl ManagedTensor {
    /// Exports the tensor a validated view describes, as a versioned tensor whose deleter
    /// drops `owner`: one allocation, the shape and strides copied, and no second validation
    /// (the view's holds for the copy). READ_ONLY is set when `read_only` is true or the view
    /// is read-only. This is how a consumer that validated a borrowed descriptor (a NumPy
    /// array's, say) keeps it as an owned tensor.
    ///
    /// ```
    /// use dlbridge::{Export, ManagedTensor};
    /// use std::sync::Arc;
    ///
    /// let source = Arc::new(Export::new(vec![1.0f32, 2.0, 3.0], &[3]).into_versioned()?);
    /// // SAFETY: the `Arc` passed as the owner keeps the memory of `source` alive.
    /// let copy = unsafe { ManagedTensor::export_view(&source.view(), Arc::clone(&source), true) }?;
    /// assert_eq!(copy.view().as_slice::<f32>()?, &[1.0, 2.0, 3.0]);
    /// assert!(copy.view().is_read_only());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    ///
    /// # Safety
    ///
    /// `owner` must keep the memory `view` describes alive, readable, and writable unless the
    /// export is read-only, for as long as `owner` lives, wherever it is dropped.
    pub unsafe fn export_view<O: Send + 'static>(
        view: &TensorView<'_>,
        owner: O,
        read_only: bool,
    ) -> Result<ManagedTensor> {
        // SAFETY: forwarded.
        unsafe { export_view(view, owner, false, read_only) }
    }
}

/// [`ManagedTensor::export_view`], versioned or `legacy`.
///
/// # Safety
///
/// As for [`ManagedTensor::export_view`].
#[inline(always)]
unsafe fn export_view<O: Send + 'static>(
    view: &TensorView<'_>,
    owner: O,
    legacy: bool,
    read_only: bool,
) -> Result<ManagedTensor> {
    let flags = Flags::NONE
        .with(Flags::READ_ONLY, read_only || view.is_read_only())
        .with(
            Flags::IS_SUBBYTE_TYPE_PADDED,
            view.flags().is_subbyte_type_padded(),
        );
    // A legacy tensor cannot say READ_ONLY; memory of unknown writability (a legacy source)
    // may still go out legacy, as it came in, and stays of unknown writability.
    if legacy && (read_only || view.writability() == Writability::ReadOnly) {
        return Err(Error::ReadOnlyLegacyExport);
    }
    if legacy && flags.is_subbyte_type_padded() {
        return Err(Error::PaddedLegacyExport {
            dtype: view.dtype(),
        });
    }
    let descriptor = Descriptor {
        data: view.data_ptr(),
        dtype: view.dtype(),
        device: view.device(),
        flags,
        legacy,
    };
    // The same descriptor with explicit strides: the view's validation holds for it.
    let checked = Checked {
        elements: view.num_elements(),
        strides_missing: false,
        offsets: view.element_offset_range(),
    };
    // SAFETY: the new tensor describes exactly the memory of the validated view, with its
    // shape, strides, data type and device, which the owner keeps alive by the contract;
    // read-only stays read-only.
    unsafe {
        export_owner(
            owner,
            view.ndim(),
            descriptor,
            Some(checked),
            |_, shape, strides| {
                shape.copy_from_slice(view.shape());
                strides.copy_from_slice(view.strides());
            },
        )
    }
}

/// The non-dimension fields of an export.
#[derive(Clone, Copy)]
pub(crate) struct Descriptor {
    pub data: *mut c_void,
    pub dtype: DataType,
    pub device: Device,
    pub flags: Flags,
    pub legacy: bool,
}

/// The single heap block of an export: the managed struct first (its address is the tensor's
/// address), then what the deleter needs, then `shape` and `strides` (`2 * ndim` values).
#[repr(C)]
struct Block<M, O> {
    managed: M,
    ndim: usize,
    owner: ManuallyDrop<O>,
}

/// The layout of a block of `ndim` dimensions and the offset of its `shape` array; `None` only
/// for an `ndim` far above [`MAX_NDIM`], which no export reaches.
fn block_layout<M, O>(ndim: usize) -> Option<(Layout, usize)> {
    let dims = Layout::array::<i64>(ndim.checked_mul(2)?).ok()?;
    let (layout, dims_offset) = Layout::new::<Block<M, O>>().extend(dims).ok()?;
    Some((layout.pad_to_align(), dims_offset))
}

/// Moves `owner` into a new export block of `ndim` dimensions, lets `fill` write the shape and
/// strides (reading the owner at its final address), and validates the result, unless the
/// caller passes the validation of a tensor with the same descriptor (`prevalidated`: sharing
/// a validated tensor, whose shape, strides, data type and device are copied as they are).
///
/// # Safety
///
/// `descriptor.data`, with the shape and strides `fill` writes, must describe memory that the
/// owner keeps alive as `descriptor` says (device, dtype, readable, writable unless
/// read-only) for as long as the owner lives.
#[inline(always)]
pub(crate) unsafe fn export_owner<O: Send + 'static>(
    owner: O,
    ndim: usize,
    descriptor: Descriptor,
    prevalidated: Option<Checked>,
    fill: impl FnOnce(&O, &mut [i64], &mut [i64]),
) -> Result<ManagedTensor> {
    if ndim > MAX_NDIM as usize {
        return Err(Error::InvalidNdim { ndim: ndim as i64 });
    }
    let raw = if descriptor.legacy {
        // SAFETY: forwarded.
        let block = unsafe { allocate_block::<DLManagedTensor, O>(owner, ndim, descriptor, fill) };
        crate::RawManagedTensor::Legacy(block.as_ptr())
    } else {
        // SAFETY: forwarded.
        let block =
            unsafe { allocate_block::<DLManagedTensorVersioned, O>(owner, ndim, descriptor, fill) };
        crate::RawManagedTensor::Versioned(block.as_ptr())
    };
    let tensor = match prevalidated {
        // SAFETY: a freshly built tensor that we own, whose descriptor the caller vouches for
        // with the validation of an identical one.
        Some(checked) => Ok(unsafe { ManagedTensor::from_prevalidated(raw, checked) }),
        // SAFETY: a freshly built tensor that we own, with valid shape and strides; the memory
        // contract is the caller's.
        None => unsafe { ManagedTensor::from_raw(raw) },
    };
    if descriptor.legacy && !descriptor.flags.is_read_only() {
        // A legacy export of writable memory (rare): say so, as its flags cannot. (`flags` is
        // READ_ONLY where the memory is of unknown writability too: a legacy source.)
        return tensor.map(|mut tensor| {
            tensor.allow_legacy_writes();
            tensor
        });
    }
    tensor
}

/// A managed struct layout an export block can hold.
trait ManagedStruct: Sized {
    fn new(
        tensor: DLTensor,
        descriptor: &Descriptor,
        ctx: *mut c_void,
        deleter_for: DeleterFor,
    ) -> Self;
}

/// Picks the monomorphised deleter for an owner type.
struct DeleterFor {
    versioned: unsafe extern "C" fn(*mut DLManagedTensorVersioned),
    legacy: unsafe extern "C" fn(*mut DLManagedTensor),
}

impl ManagedStruct for DLManagedTensorVersioned {
    fn new(
        dl_tensor: DLTensor,
        descriptor: &Descriptor,
        ctx: *mut c_void,
        deleter_for: DeleterFor,
    ) -> Self {
        DLManagedTensorVersioned {
            version: Version::CURRENT,
            manager_ctx: ctx,
            deleter: Some(deleter_for.versioned),
            flags: descriptor.flags.bits(),
            dl_tensor,
        }
    }
}

impl ManagedStruct for DLManagedTensor {
    fn new(dl_tensor: DLTensor, _: &Descriptor, ctx: *mut c_void, deleter_for: DeleterFor) -> Self {
        DLManagedTensor {
            dl_tensor,
            manager_ctx: ctx,
            deleter: Some(deleter_for.legacy),
        }
    }
}

/// Allocates and fills a block (one allocation).
///
/// # Safety
///
/// As for [`export_owner`].
unsafe fn allocate_block<M: ManagedStruct, O: Send + 'static>(
    owner: O,
    ndim: usize,
    descriptor: Descriptor,
    fill: impl FnOnce(&O, &mut [i64], &mut [i64]),
) -> NonNull<M> {
    let Some((layout, dims_offset)) = block_layout::<M, O>(ndim) else {
        // `export_owner` bounded ndim by MAX_NDIM, whose block always has a layout.
        unreachable!("a block of {ndim} dimensions has no layout");
    };
    // SAFETY: the layout is never zero-sized: it holds at least the managed struct.
    let Some(block) = NonNull::new(unsafe { alloc(layout) }) else {
        handle_alloc_error(layout)
    };
    let block = block.cast::<Block<M, O>>();
    // SAFETY: `block` is a fresh allocation of `layout`, which holds a `Block<M, O>` at offset 0
    // and `2 * ndim` aligned `i64`s at `dims_offset`. Fields are written before any is read,
    // through raw pointers only.
    unsafe {
        let raw = block.as_ptr();
        std::ptr::addr_of_mut!((*raw).ndim).write(ndim);
        std::ptr::addr_of_mut!((*raw).owner).write(ManuallyDrop::new(owner));
        let dims = raw.cast::<u8>().add(dims_offset).cast::<i64>();
        std::ptr::write_bytes(dims, 0, 2 * ndim);
        let shape = std::slice::from_raw_parts_mut(dims, ndim);
        let strides = std::slice::from_raw_parts_mut(dims.add(ndim), ndim);
        fill(&(*raw).owner, shape, strides);
        let dl_tensor = DLTensor {
            data: descriptor.data,
            device: descriptor.device,
            ndim: ndim as i32,
            dtype: descriptor.dtype,
            shape: dims,
            strides: dims.add(ndim),
            byte_offset: 0,
        };
        let deleter_for = DeleterFor {
            versioned: delete_block::<DLManagedTensorVersioned, O>,
            legacy: delete_block::<DLManagedTensor, O>,
        };
        std::ptr::addr_of_mut!((*raw).managed).write(M::new(
            dl_tensor,
            &descriptor,
            raw.cast(),
            deleter_for,
        ));
    }
    block.cast()
}

/// The deleter of every exported tensor: drops the owner, then frees the block.
///
/// # Safety
///
/// `managed` must be NULL or a tensor made by `allocate_block::<M, O>` whose deleter has not
/// run yet.
unsafe extern "C" fn delete_block<M, O>(managed: *mut M) {
    if managed.is_null() {
        return;
    }
    let block = managed.cast::<Block<M, O>>();
    // SAFETY: made by `allocate_block::<M, O>` and not yet deleted: `ndim` and `owner` are
    // initialised, and the owner is taken exactly once.
    let (ndim, owner) = unsafe { ((*block).ndim, ManuallyDrop::take(&mut (*block).owner)) };
    // A panicking `Drop` must not unwind into C: contain it, free the block regardless.
    let dropped = catch_unwind(AssertUnwindSafe(move || drop(owner)));
    // The layout the block was made with (it had one, or it would not exist).
    if let Some((layout, _)) = block_layout::<M, O>(ndim) {
        // SAFETY: the block was allocated with exactly this layout and is not used after this.
        unsafe { dealloc(block.cast(), layout) };
    }
    if dropped.is_err() {
        // Not `eprintln!`, which panics when stderr is gone: nothing may unwind into C here.
        let _ = writeln!(
            std::io::stderr(),
            "dlbridge: the owner of an exported tensor panicked while being dropped"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn owner_is_dropped_exactly_once_by_the_deleter() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        struct Owner(Vec<f32>);
        impl Drop for Owner {
            fn drop(&mut self) {
                DROPS.fetch_add(1, Ordering::SeqCst);
            }
        }
        let mut owner = Owner(vec![1.0, 2.0]);
        let data = owner.0.as_mut_ptr().cast();
        // SAFETY: the Vec inside the owner holds two f32 for as long as the owner lives.
        let tensor =
            unsafe { Export::from_raw_parts(owner, data, DataType::FLOAT32, Device::CPU, &[2]) }
                .into_versioned()
                .unwrap();
        assert_eq!(tensor.view().as_slice::<f32>().unwrap(), &[1.0, 2.0]);
        assert_eq!(DROPS.load(Ordering::SeqCst), 0);
        drop(tensor);
        assert_eq!(DROPS.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_panicking_owner_does_not_unwind_into_the_deleter_caller() {
        struct Bomb;
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("owner drop panics");
            }
        }
        let data = std::ptr::NonNull::<u8>::dangling().as_ptr().cast();
        // SAFETY: zero elements: no memory is reached.
        let tensor =
            unsafe { Export::from_raw_parts(Bomb, data, DataType::UINT8, Device::CPU, &[0]) }
                .into_versioned()
                .unwrap();
        let raw = tensor.into_raw().versioned().unwrap();
        // SAFETY: our own tensor, deleted once.
        unsafe { (*raw).deleter.unwrap()(raw) };
    }
}
