//! The [`Export`] builder: Rust memory ([`HostBuffer`]) or memory any owner keeps alive
//! ([`Export::from_raw_parts`]), shaped and flagged, then made a managed tensor in one
//! allocation (`block`).

use std::ffi::c_void;

use super::block::{Descriptor, export_owner};
use super::host_buffer::HostBuffer;
use crate::device::Device;
use crate::dtype::DataType;
use crate::element::Element;
use crate::error::{Error, MAX_NDIM, Result};
use crate::flags::Flags;
use crate::layout;
use crate::managed::ManagedTensor;
use crate::validate::check_legacy_export;

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
    strides: Option<&'s [i64]>,
    /// Elements reachable from `data`, for a bounds check; `None` when the caller vouched.
    buffer_len: Option<usize>,
    /// Whether other owners share the memory (an `Arc<[T]>` with other clones): such memory
    /// cannot be flagged IS_COPIED.
    shared_with_others: bool,
    flags: Flags,
    /// The device stream the data is ready on ([`ManagedTensor::ready_stream`]).
    ready_stream: Option<usize>,
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
            shared_with_others: !writable,
            flags: Flags::NONE.with(Flags::READ_ONLY, !writable),
            ready_stream: None,
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
    /// read-only. While the tensor (or a reference its views hand out) lives, nothing else may
    /// write that memory, nor read it where the tensor lends it out mutably; if the export is
    /// flagged IS_COPIED ([`Export::is_copied`]), nothing else may use it at all.
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
            shared_with_others: false,
            flags: Flags::NONE,
            ready_stream: None,
        }
    }

    /// Bounds the layout by a buffer of `len` elements (what [`Export::new`] does), for owners
    /// whose length is known.
    #[cfg_attr(
        not(any(
            feature = "cudarc",
            feature = "candle",
            feature = "arrow",
            feature = "burn",
            feature = "safetensors"
        )),
        allow(dead_code)
    )]
    pub(crate) fn with_buffer_len(mut self, len: usize) -> Self {
        self.buffer_len = Some(len);
        self
    }

    /// Sets the strides, in elements (negative steps allowed), one per dimension: `i64`, the
    /// type DLPack stores them in and [`TensorView::strides`](crate::TensorView::strides)
    /// gives them in, so that a view's strides can be handed back as they are.
    #[must_use]
    pub fn strides(mut self, strides: &'s [i64]) -> Self {
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

    /// Flags the tensor IS_COPIED: a private copy that the consumer owns alone. Checked when
    /// the export is finished: memory that other owners still share (an `Arc<[T]>` with other
    /// clones) is refused ([`Error::CopiedFlagOnSharedMemory`]); for
    /// [`Export::from_raw_parts`] the flag is part of that constructor's contract.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dlbridge::{Error, Export};
    /// let copy = Export::new(vec![1u8, 2], &[2]).is_copied(true).into_versioned()?;
    /// assert!(copy.view().flags().is_copied()); // a Vec nobody else holds
    /// let shared: Arc<[u8]> = vec![1, 2].into();
    /// let other_owner = Arc::clone(&shared);
    /// let refused = Export::new(shared, &[2]).is_copied(true).into_versioned();
    /// assert_eq!(refused.unwrap_err(), Error::CopiedFlagOnSharedMemory);
    /// # drop(other_owner);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[must_use]
    pub fn is_copied(mut self, copied: bool) -> Self {
        self.flags = self.flags.with(Flags::IS_COPIED, copied);
        self
    }

    /// Flags the tensor IS_SUBBYTE_TYPE_PADDED: its sub-byte elements take one byte each
    /// instead of being packed (the compact copies of such tensors, memory rebuilt from a
    /// padded tensor's bytes). Only for sub-byte data types: the export of any other is
    /// refused.
    ///
    /// ```
    /// use dlbridge::{DataType, Device, Export};
    /// let int4 = DataType::int(4);
    /// let bytes = vec![1u8, 2, 3];
    /// let data = bytes.as_ptr().cast_mut().cast();
    /// // SAFETY: `bytes`, moved into the tensor, holds one byte for each of the 3 elements.
    /// let tensor = unsafe { Export::from_raw_parts(bytes, data, int4, Device::CPU, &[3]) }
    ///     .subbyte_padded(true)
    ///     .into_versioned()?;
    /// assert!(tensor.view().flags().is_subbyte_type_padded());
    /// assert_eq!(tensor.view().compact_byte_size(), 3);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[must_use]
    pub fn subbyte_padded(mut self, padded: bool) -> Self {
        self.flags = self.flags.with(Flags::IS_SUBBYTE_TYPE_PADDED, padded);
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
        check_legacy_export(self.dtype, self.flags)?;
        self.finish(true)
    }

    /// The device stream on which the data will be ready (a `cudaStream_t` as an integer), so
    /// that a re-export to a consumer on another stream makes that stream wait for this one
    /// ([`ManagedTensor::ready_stream`]). `cuda::export_slice` (feature `cudarc`) sets the
    /// slice's stream.
    ///
    /// # Safety
    ///
    /// As for [`ManagedTensor::set_ready_stream`]: the stream must stay alive as long as the
    /// tensor made (or a share of it) can be exported.
    pub unsafe fn ready_stream(mut self, stream: Option<usize>) -> Self {
        self.ready_stream = stream;
        self
    }

    fn finish(self, legacy: bool) -> Result<ManagedTensor> {
        if self.flags.is_copied() && self.shared_with_others {
            return Err(Error::CopiedFlagOnSharedMemory);
        }
        // Checked without allocating: the block below is the export's only allocation.
        check_layout(self.shape, self.strides, self.buffer_len)?;
        let ndim = self.shape.len();
        let shape = self.shape.iter().map(|&extent| extent as i64);
        let descriptor = Descriptor {
            data: self.data,
            dtype: self.dtype,
            device: self.device,
            flags: self.flags,
            legacy,
        };
        let strides = self.strides;
        let ready_stream = self.ready_stream;
        // SAFETY: the buffer's pointer (or the caller of `from_raw_parts`) guarantees the
        // memory for the layout, which was bounds-checked above where the length is known.
        let mut tensor = unsafe {
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
                                *out = stride;
                            }
                        }
                        None => layout::fill_row_major_strides(shape_out, strides_out),
                    }
                },
            )
        }?;
        // SAFETY: the contract of `Export::ready_stream`, the only place it is set.
        unsafe { tensor.set_ready_stream(ready_stream) };
        Ok(tensor)
    }
}

/// Checks a layout, without allocating, before it is exported: at most [`MAX_NDIM`]
/// dimensions, every extent within `i64::MAX`, one stride per dimension (`strides`: `None`
/// for compact row-major), an element count that fits `u64`; and, where `buffer_len` is
/// known, that the layout lies in a buffer of that many elements whose first is the layout's
/// element at index zero: without strides the shape must describe exactly the buffer's
/// elements ([`Error::ShapeMismatch`]), with them every element offset reached must lie in
/// `0..buffer_len` ([`Error::OutOfBounds`]).
///
/// The one bound of every export over memory of a known length ([`Export::new`],
/// `with_buffer_len`), and of the bridges that read a foreign library's layout over its
/// storage before anything is exported (candle's copy).
pub(crate) fn check_layout(
    shape: &[usize],
    strides: Option<&[i64]>,
    buffer_len: Option<usize>,
) -> Result<()> {
    let ndim = shape.len();
    if ndim > MAX_NDIM as usize {
        return Err(Error::InvalidNdim { ndim: ndim as i64 });
    }
    if let Some(&extent) = shape.iter().find(|&&e| e > i64::MAX as usize) {
        return Err(Error::ValueOutOfRange {
            field: "shape",
            value: extent as u128,
        });
    }
    let extents = shape.iter().map(|&extent| extent as i64);
    if let Some(strides) = strides {
        if strides.len() != ndim {
            return Err(Error::StridesLength {
                ndim,
                strides: strides.len(),
            });
        }
    }
    let elements = layout::count_elements(extents.clone())?;
    if let Some(buffer_len) = buffer_len {
        match strides {
            None if elements != buffer_len as u64 => {
                return Err(Error::ShapeMismatch {
                    elements,
                    buffer_len,
                });
            }
            Some(strides) if elements > 0 => {
                let dims = extents.zip(strides.iter().copied());
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
    Ok(())
}
