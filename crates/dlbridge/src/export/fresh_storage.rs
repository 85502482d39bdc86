//! Exports of fresh storage that this crate allocates and fills: zero-filled tensors
//! ([`ManagedTensor::zeros`]) and compact copies ([`TensorView::to_compact_copy`]), both in
//! 64-byte aligned Rust memory: consumers with alignment demands can share it (TVM's
//! `from_dlpack` refuses data that is not 64-byte aligned; XLA copies it instead).

use super::builder::Export;
use crate::device::Device;
use crate::dtype::DataType;
use crate::elements::Offsets;
use crate::error::{Error, Result};
use crate::managed::ManagedTensor;
use crate::view::TensorView;

/// 64 bytes aligned to 64: the unit of Rust-owned tensor storage, so that consumers with
/// alignment demands (TVM's `from_dlpack` requires 64 bytes; XLA wants them for zero-copy)
/// can share it.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub(crate) struct CacheLine([u8; 64]);

/// Zero-filled, 64-byte aligned storage of at least `bytes` bytes, or
/// [`Error::OutOfMemory`] where the allocator cannot give them: a descriptor may describe
/// terabytes, and a copy of it asked for is an error to return, not a process to abort.
pub(crate) fn zeroed_storage(bytes: usize) -> Result<Vec<CacheLine>> {
    let lines = bytes.div_ceil(64);
    let mut storage = Vec::new();
    storage
        .try_reserve_exact(lines)
        .map_err(|_| Error::OutOfMemory {
            bytes: bytes as u64,
        })?;
    storage.resize(lines, CacheLine([0; 64]));
    Ok(storage)
}

impl ManagedTensor {
    /// A new zero-filled, compact row-major CPU tensor in Rust memory, 64-byte aligned (TVM's
    /// `from_dlpack` requires it, XLA wants it for zero-copy imports). Any data type with
    /// non-zero bits and lanes, sub-byte types packed.
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
        let mut storage = zeroed_storage(bytes as usize)?;
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
    /// bytes). The copy is 64-byte aligned, as TVM's `from_dlpack` requires and XLA wants for
    /// zero-copy imports.
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
        let mut storage = zeroed_storage(bytes)?;
        let target = storage.as_mut_ptr().cast::<u8>();
        let compact = self.is_c_contiguous();
        match self.dtype().size_in_bytes() {
            _ if self.num_elements() == 0 => {}
            Some(size) if !compact => {
                let first = self.data_ptr().cast::<u8>();
                for (index, offset) in
                    Offsets::new(self.shape(), self.strides(), self.num_elements() as usize)
                        .enumerate()
                {
                    // SAFETY: V7 and V8: every offset of the walk is an element of `size` bytes
                    // of the layout, readable (host-readable device, the entry point's
                    // contract); `storage` holds `num_elements * size` bytes (V5).
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
                // SAFETY: V5: a compact layout holds exactly `bytes` bytes from its first element,
                // readable (host-readable device, the entry point's contract); `storage` holds
                // at least that many.
                unsafe {
                    std::ptr::copy_nonoverlapping(self.data_ptr().cast::<u8>(), target, bytes)
                };
            }
            _ => {
                return Err(Error::NotContiguous {
                    order: "C",
                    shape: self.shape().to_vec(),
                    strides: self.strides().to_vec(),
                });
            }
        }
        let shape: Vec<usize> = self.shape().iter().map(|&extent| extent as usize).collect();
        let data = target.cast();
        // SAFETY: `storage` holds the compact bytes of the elements and moves into the tensor
        // with its heap memory unchanged.
        // The copy is in Rust's host memory, whatever device the source was on (pinned,
        // managed): it is CPU memory.
        unsafe { Export::from_raw_parts(storage, data, self.dtype(), Device::CPU, &shape) }
            .is_copied(true)
            .subbyte_padded(padded)
            .into_versioned()
    }
}
