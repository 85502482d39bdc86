//! [`TensorView`]: a validated, borrowed tensor descriptor, read through accessors.
//!
//! A view is what validation hands on: every accessor reads the descriptor that `validate`
//! accepted, with the strides made explicit (V3) and the writability the producer allowed
//! ([`Writability`]). Typed access to the elements (slices, strided [`crate::Elements`]) is in
//! the `elements` module; copies and re-exports of a view are in `export`.

use std::ffi::c_void;
use std::fmt;

use crate::device::Device;
use crate::dtype::DataType;
use crate::error::Result;
use crate::ffi::DLTensor;
use crate::flags::{Flags, Writability};
use crate::layout;
use crate::validate::{Validated, validate_descriptor};
use crate::version::Version;

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
    /// descriptor and the data it describes must stay valid and unchanged for `'a`, by any
    /// writer, other handles of this crate to the same memory included, except through the
    /// mutable access this view itself hands out under its own contract
    /// (`as_array_mut_unchecked`, feature `ndarray`). For a host-readable device, `data + byte_offset` and every
    /// element the layout reaches must be readable memory; on another device it must be that
    /// device's memory.
    pub unsafe fn from_dltensor(tensor: &'a DLTensor) -> Result<Self> {
        let version = Version::CURRENT;
        // SAFETY: forwarded from this function's contract.
        let validated =
            unsafe { validate_descriptor(tensor, Some(version), Flags::NONE, tensor.device) }?;
        // SAFETY: `validated` is this descriptor's validation (V1 to V8), and the descriptor is
        // valid for `'a` by this function's contract.
        Ok(unsafe {
            Self::from_validated(
                tensor,
                Some(version),
                Flags::NONE,
                tensor.device,
                validated,
                None,
                false,
            )
        })
    }

    /// A view of a descriptor that validation accepted.
    ///
    /// # Safety
    ///
    /// `validated` must be what `validate_descriptor(tensor, version, flags, device)` returned,
    /// the contract of [`TensorView::from_dltensor`] must hold for `'a`, and when
    /// `validated.strides_missing` with `ndim > 1`, `implicit_strides` must hold the compact
    /// row-major strides. `legacy_writes_allowed` says that a legacy tensor (`version` None) is
    /// known to be writable (this crate exported it, or its holder vouched for it).
    #[inline]
    pub(crate) unsafe fn from_validated(
        tensor: &'a DLTensor,
        version: Option<Version>,
        flags: Flags,
        device: Device,
        validated: Validated,
        implicit_strides: Option<&'a [i64]>,
        legacy_writes_allowed: bool,
    ) -> Self {
        let rank = tensor.ndim as usize;
        let shape: &[i64] = if rank == 0 {
            &[]
        } else {
            // SAFETY: V1 and V2: `ndim` is a small non-negative length and `shape` is non-NULL
            // and readable for `ndim` values for `'a`.
            unsafe { std::slice::from_raw_parts(tensor.shape, rank) }
        };
        let strides: &[i64] = if rank == 0 {
            &[]
        } else if !validated.strides_missing {
            // SAFETY: V1 and V3: strides not missing, so non-NULL and readable for `ndim`
            // values for `'a`.
            unsafe { std::slice::from_raw_parts(tensor.strides, rank) }
        } else if let Some(strides) = implicit_strides {
            strides
        } else {
            debug_assert_eq!(rank, 1, "implicit strides must be supplied for ndim > 1");
            &UNIT_STRIDE
        };
        let writability = Writability::of(flags, version.is_some(), legacy_writes_allowed);
        TensorView {
            tensor,
            shape,
            strides,
            version,
            flags,
            writability,
            device,
            elements: validated.elements,
            offsets: validated.offsets,
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

    /// The flags as the producer sent them. A legacy tensor has none: it is read with the
    /// flags its data type implies, IS_SUBBYTE_TYPE_PADDED for a sub-byte integer of one lane
    /// (one byte per element, as legacy producers stored them:
    /// [`DataType::legacy_sub_byte_padding`](crate::DataType::legacy_sub_byte_padding)) and
    /// [`Flags::NONE`] otherwise; its writability is [`TensorView::writability`].
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
