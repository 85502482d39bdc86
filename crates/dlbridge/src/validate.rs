//! Validation: the one trust boundary between a producer's descriptor and this crate's safe
//! types.
//!
//! Every tensor descriptor from outside is validated here once, when it enters
//! ([`crate::ManagedTensor::from_raw`] and its siblings, [`crate::TensorView::from_dltensor`],
//! [`crate::ManagedTensor::set_device`] for a new device), and every export of this crate
//! passes the same validation before it is handed out, or copies the descriptor of a tensor
//! that passed it (`export::sharing`). Validation reads the descriptor and the `shape` and
//! `strides` arrays, never the data, and returns a [`Validated`] record that the owner keeps;
//! everything after it (views, typed access, ndarray views, exports that copy a validated
//! descriptor) relies on the guarantees below and says which in its `// SAFETY:` comments.
//!
//! Words: *validate* is this act, once per descriptor. *Check* is what each typed access
//! verifies on top of it, every time (see the `elements` module), and the data type rule
//! [`DataType::check`], which validation applies (V4).
//!
//! # What a validated descriptor guarantees
//!
//! Numbered, so that unsafe code can cite them (`// SAFETY: V2 and V7: ...`). "Offset" is in
//! elements, relative to the first element (`data + byte_offset`).
//!
//! 1. **V1**: `ndim` lies in `0..=MAX_NDIM`. *Why*: `ndim as usize` is the length of the shape
//!    and strides slices; the bound keeps a hostile `ndim` from making validation, a view or an
//!    export block walk or allocate gigabytes.
//! 2. **V2**: when `ndim > 0`, `shape` is non-NULL and, by the `# Safety` contract of the entry
//!    point, points to `ndim` readable `i64` values for as long as the tensor (or the borrowed
//!    descriptor) lives; with `ndim == 0` it is never read. *Why*: views hand the shape out as
//!    `&[i64]`.
//! 3. **V3**: when `ndim > 0`, `strides` is non-NULL, with the same contract as `shape`, or NULL
//!    from a producer allowed to send that (legacy, or a version before 1.2): then
//!    `Validated::strides_missing` is set, the layout is compact row-major, and the owner
//!    supplies those strides (one dimension takes a unit stride). *Why*: views always hand out
//!    a strides slice; a producer of version 1.2 or later that sends NULL breaks the standard.
//! 4. **V4**: the data type follows the header ([`DataType::check`]: non-zero `bits` and
//!    `lanes`, and the width its code's name fixes), and IS_SUBBYTE_TYPE_PADDED is set only on a
//!    sub-byte type. *Why*: element and storage sizes are computed from it, and a zero-sized
//!    element would put every index at one address.
//! 5. **V5**: every extent is non-negative, their product `Validated::elements` fits in `u64`
//!    (0 whenever an extent is 0), and the compact storage of that many elements
//!    ([`DataType::storage_bytes`], packed or padded as flagged) takes at most `isize::MAX`
//!    bytes. *Why*: extents serve as unsigned bounds, `elements as usize` is lossless, and a
//!    compact copy allocates that many bytes.
//! 6. **V6**: a tensor with elements has non-NULL `data`. V7 and V8 speak of tensors with
//!    elements only: an empty tensor's data may be NULL and its strides are not looked at
//!    further, and typed access never offsets its pointer. *Why*: the first element becomes a
//!    `NonNull`.
//! 7. **V7**: for a tensor with elements, `Validated::offsets = (low, high)`, the lowest and
//!    highest offsets the layout reaches, were summed dimension by dimension without
//!    overflowing `i64`, so every partial sum `i_0 * stride_0 + ... + i_k * stride_k` of an
//!    in-bounds index lies in `low..=high`. *Why*: offset arithmetic on indices (element lookup,
//!    iteration, copies, ndarray's lowest address) cannot overflow.
//! 8. **V8**: for a tensor with elements of a byte-sized data type (every [`crate::Element`]
//!    type, of `size` bytes), the bytes from offset `low` to the end of offset `high` span at
//!    most `isize::MAX` bytes, and on a host-readable device (the device the data is taken to
//!    live on: `DLTensor.device`, or the one `set_device` validated) the addresses
//!    `data + byte_offset + low * size` and `data + byte_offset + (high + 1) * size` stay inside
//!    the address space. *Why*: pointer offsets by any reachable offset stay within one
//!    non-wrapping range of at most `isize::MAX` bytes, as `pointer::offset` requires, and with
//!    V6 the first element's address is non-zero.
//! 9. **V9**: a versioned tensor's `version.major` is 1, read before any field after `deleter`.
//!    *Why*: only then does the struct have the layout of `DLManagedTensorVersioned` that this
//!    crate knows; under another major version only the deleter may be called.
//!
//! Validation does not make the memory readable or writable: that is the `# Safety` contract of
//! every entry point. Nor does it check what only a typed access can: a host-readable device,
//! the element type, alignment, the bit patterns of `bool`, and for mutable access the
//! writability and an overlap-free layout; each typed access checks those itself.
//!
//! `MAX_NDIM` is defined in the `error` module, beside the error that names it
//! ([`Error::InvalidNdim`]), whose message quotes it: this module imports the error type, so the
//! bound cannot live here without an import cycle.

use std::ptr::NonNull;

use crate::device::Device;
use crate::dtype::DataType;
use crate::error::{Error, MAX_NDIM, Result};
use crate::ffi::{DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use crate::flags::Flags;
use crate::layout;
use crate::version::Version;

/// What validation learned about a descriptor, kept by the owner of the tensor: the record
/// that V3, V5 and V7 speak of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Validated {
    /// Number of elements (V5).
    pub elements: u64,
    /// `strides` is NULL with `ndim > 0` in a producer that may send that (legacy, < 1.2):
    /// the layout is compact row-major (V3).
    pub strides_missing: bool,
    /// The lowest and highest element offsets the layout reaches, relative to the first
    /// element; `(0, -1)` without elements (V7).
    pub offsets: (i64, i64),
}

/// Validates everything about a descriptor that can be checked without reading the data: V1
/// to V8.
///
/// `version` is `None` for a legacy tensor (which may have NULL strides). `device` is where the
/// data is taken to live (normally `tensor.device`): addresses are judged for host devices.
///
/// The descriptors producers send almost always take [`accept_common_descriptor`], which
/// builds no error value; any other goes through [`validate_exactly`], which accepts the same
/// descriptors and names the field and value of what it refuses.
///
/// # Safety
///
/// When `ndim > 0`, a non-NULL `shape` and a non-NULL `strides` must each point to `ndim`
/// readable `i64` values. Nothing else is dereferenced.
#[inline(always)]
pub(crate) unsafe fn validate_descriptor(
    tensor: &DLTensor,
    version: Option<Version>,
    flags: Flags,
    device: Device,
) -> Result<Validated> {
    // SAFETY: forwarded from this function's contract.
    match unsafe { accept_common_descriptor(tensor, flags, device) } {
        Some(validated) => Ok(validated),
        // SAFETY: forwarded from this function's contract.
        None => unsafe { validate_exactly(tensor, version, flags, device) },
    }
}

/// The validation of a descriptor of the usual kind, or `None` where [`validate_exactly`] must
/// decide. Usual: a whole-byte data type that passes [`DataType::check`] without the padded
/// flag, `ndim` in `0..=MAX_NDIM`, strides present, every extent positive, data non-NULL, and
/// every count, offset and address within range. For such a descriptor this is exactly what
/// [`validate_exactly`] returns (a test compares the two over descriptors at every edge); for
/// any other it answers `None`, never an acceptance `validate_exactly` would refuse.
///
/// # Safety
///
/// As for [`validate_descriptor`].
#[inline(always)]
unsafe fn accept_common_descriptor(
    tensor: &DLTensor,
    flags: Flags,
    device: Device,
) -> Option<Validated> {
    if !(0..=MAX_NDIM).contains(&tensor.ndim) {
        return None;
    }
    let rank = tensor.ndim as usize;
    let dtype = tensor.dtype;
    // Whole bytes (`size_in_bytes` is `None` for sub-byte types and zero bits or lanes), a
    // data type that passes its check, and no padded flag (which only sub-byte types carry).
    let size = dtype.size_in_bytes()? as u64;
    if dtype.check().is_err() || flags.is_subbyte_type_padded() || tensor.data.is_null() {
        return None;
    }
    let (elements, (low, high)) = if rank == 0 {
        (1, (0, 0))
    } else if tensor.shape.is_null() || tensor.strides.is_null() {
        return None;
    } else {
        // SAFETY: both non-NULL and, by this function's contract, valid for `ndim` values.
        let (shape, strides) = unsafe {
            (
                std::slice::from_raw_parts(tensor.shape, rank),
                std::slice::from_raw_parts(tensor.strides, rank),
            )
        };
        layout::count_and_reach(shape, strides)?
    };
    let limit = isize::MAX as u64;
    // V5: the compact storage; V8: the bytes from offset `low` to the end of offset `high`
    // (`low <= 0 <= high`).
    let compact_bytes = elements.checked_mul(size)?;
    let reached_bytes = high.abs_diff(low).checked_add(1)?.checked_mul(size)?;
    if compact_bytes > limit || reached_bytes > limit {
        return None;
    }
    if device.is_host_readable() {
        // V8: from `data + byte_offset + low * size` to `data + byte_offset + (high + 1) * size`
        // inside the address space.
        let first = (tensor.data as usize as u64).checked_add(tensor.byte_offset)?;
        let below = low.unsigned_abs().checked_mul(size)?;
        let above = (high as u64).checked_add(1)?.checked_mul(size)?;
        if first < below || first.checked_add(above)? > usize::MAX as u64 {
            return None;
        }
    }
    Some(Validated {
        elements,
        strides_missing: false,
        offsets: (low, high),
    })
}

/// [`validate_descriptor`] field by field, each refusal an error naming the field and the
/// value: the path of every descriptor [`accept_common_descriptor`] leaves (scalars without
/// data, empty tensors, missing strides, sub-byte types, and everything refused).
///
/// # Safety
///
/// As for [`validate_descriptor`].
#[inline(never)]
unsafe fn validate_exactly(
    tensor: &DLTensor,
    version: Option<Version>,
    flags: Flags,
    device: Device,
) -> Result<Validated> {
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
        return Ok(Validated {
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
        (0, layout::compact_last_offset(shape, elements)?)
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
    Ok(Validated {
        elements,
        strides_missing,
        offsets: (low, high),
    })
}

/// Validates a versioned managed tensor: the version first (V9), reading nothing after
/// `deleter` when it is unknown, then the descriptor (V1 to V8).
///
/// # Safety
///
/// `managed` must be live, with `shape` and `strides` valid for `ndim` values when not NULL.
#[inline]
pub(crate) unsafe fn validate_versioned(
    managed: NonNull<DLManagedTensorVersioned>,
) -> Result<Validated> {
    let ptr = managed.as_ptr();
    // SAFETY: live; `version` is in the prefix every major version keeps.
    let version = unsafe { (*ptr).version };
    if !version.is_supported() {
        return Err(Error::UnsupportedVersion { version });
    }
    // SAFETY: V9 (just checked): live, major version 1, so the whole struct has the layout we
    // know.
    let (tensor, flags) = unsafe { (&(*ptr).dl_tensor, Flags::from_bits((*ptr).flags)) };
    // SAFETY: shape and strides are valid for `ndim` values by the contract.
    unsafe { validate_descriptor(tensor, Some(version), flags, tensor.device) }
}

/// The flags a legacy tensor of `dtype` is read with, since it has none of its own:
/// IS_SUBBYTE_TYPE_PADDED for the sub-byte integers that legacy producers stored one byte per
/// element ([`DataType::legacy_sub_byte_padding`]), nothing otherwise; `None` for a type
/// without an agreed legacy layout.
pub(crate) const fn legacy_flags(dtype: DataType) -> Option<Flags> {
    match dtype.legacy_sub_byte_padding() {
        Some(true) => Some(Flags::IS_SUBBYTE_TYPE_PADDED),
        Some(false) => Some(Flags::NONE),
        None => None,
    }
}

/// Checks that a tensor of `dtype` with `flags` (IS_SUBBYTE_TYPE_PADDED or not) can go out as a
/// legacy `DLManagedTensor`, whose consumers read it with [`legacy_flags`].
pub(crate) fn check_legacy_export(dtype: DataType, flags: Flags) -> Result<()> {
    match dtype.legacy_sub_byte_padding() {
        Some(padded) if padded == flags.is_subbyte_type_padded() => Ok(()),
        Some(true) => Err(Error::PackedLegacyExport { dtype }),
        Some(false) => Err(Error::PaddedLegacyExport { dtype }),
        None => Err(Error::AmbiguousLegacySubByte { dtype }),
    }
}

/// Validates a legacy managed tensor's descriptor (V1 to V8; it has no version and no flags:
/// it is read with the flags its data type implies, [`legacy_flags`]).
///
/// # Safety
///
/// As for [`validate_versioned`], for a `DLManagedTensor`.
#[inline]
pub(crate) unsafe fn validate_legacy(managed: NonNull<DLManagedTensor>) -> Result<Validated> {
    // SAFETY: live by the contract.
    let tensor = unsafe { &(*managed.as_ptr()).dl_tensor };
    let Some(flags) = legacy_flags(tensor.dtype) else {
        return Err(Error::AmbiguousLegacySubByte {
            dtype: tensor.dtype,
        });
    };
    // SAFETY: shape and strides are valid for `ndim` values by the contract.
    unsafe { validate_descriptor(tensor, None, flags, tensor.device) }
}

impl DataType {
    /// Checks what the header requires of a data type whatever the tensor: non-zero `bits` and
    /// `lanes`, and the width fixed by the code's name (6 for float6, 4 for float4, 8 for the
    /// float8 family, 16 for bfloat). Unknown codes pass: their width is taken as given.
    #[inline]
    pub fn check(self) -> Result<()> {
        if self.bits == 0 || self.lanes == 0 {
            return Err(Error::InvalidDataType {
                dtype: self,
                reason: if self.bits == 0 {
                    "bits is 0"
                } else {
                    "lanes is 0"
                },
            });
        }
        match self.code.required_bits() {
            Some(bits) if bits != self.bits => Err(Error::InvalidDataType {
                dtype: self,
                reason: "bits does not match the width its code names",
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{accept_common_descriptor, validate_exactly};
    use crate::ffi::DLTensor;
    use crate::{DataType, DataTypeCode, Device, DeviceType, Error, Flags, Version};

    /// Wherever the common path accepts a descriptor, the exact path accepts it with the same
    /// record: every combination of data types (whole-byte, sub-byte, invalid), flags, data
    /// addresses near both ends of the address space, byte offsets, devices and layouts of up
    /// to two dimensions over edge extents and strides, NULL arrays included.
    #[test]
    fn the_common_path_accepts_only_what_the_exact_path_accepts_and_as_it_does() {
        let dtypes = [
            DataType::FLOAT32,
            DataType::new(DataTypeCode::UINT, 8, 1),
            DataType::FLOAT32.with_lanes(4),
            DataType::new(DataTypeCode::INT, 4, 1),
            DataType::new(DataTypeCode::FLOAT4_E2M1FN, 4, 1),
            DataType::new(DataTypeCode::BFLOAT, 32, 1),
            DataType::new(DataTypeCode::FLOAT, 32, 0),
        ];
        let flag_sets = [Flags::NONE, Flags::IS_SUBBYTE_TYPE_PADDED];
        let addresses = [0usize, 0x1000, usize::MAX - 64];
        let byte_offsets = [0u64, 8, u64::MAX];
        let devices = [Device::CPU, Device::new(DeviceType::CUDA, 0)];
        let extents = [-1i64, 0, 1, 3, 1 << 40, i64::MAX];
        let steps = [0i64, 1, -2, 1 << 40, i64::MIN];
        // Under Miri, one address, one device and no two-dimensional layouts (about 3,800
        // descriptors instead of 160,000).
        let miri = cfg!(miri);
        let (addresses, devices) = if miri {
            (&addresses[1..2], &devices[..1])
        } else {
            (&addresses[..], &devices[..])
        };
        let mut layouts: Vec<(i32, Vec<i64>, Vec<i64>)> = vec![(0, vec![], vec![])];
        for &a in &extents {
            for &s in &steps {
                layouts.push((1, vec![a], vec![s]));
                for &b in extents.iter().filter(|_| !miri) {
                    layouts.push((2, vec![a, b], vec![s, 1]));
                }
            }
        }
        // Whether the common path accepted `tensor`, after checking the exact path's answer.
        let agree = |tensor: &DLTensor, flags: Flags, device: Device| {
            // SAFETY: shape and strides, where not NULL, hold `ndim` values; the data is never
            // read.
            let accepted = unsafe { accept_common_descriptor(tensor, flags, device) };
            let Some(accepted) = accepted else {
                return false;
            };
            for version in [Some(Version::CURRENT), None] {
                // SAFETY: as above.
                let exact = unsafe { validate_exactly(tensor, version, flags, device) };
                assert_eq!(exact, Ok(accepted), "{tensor:?}, {flags:?}");
            }
            true
        };
        let (mut common, mut total) = (0, 0);
        for (ndim, mut shape, mut strides) in layouts {
            for arrays in 0..3 {
                for dtype in dtypes {
                    for flags in flag_sets {
                        for &address in addresses {
                            for byte_offset in byte_offsets {
                                for &device in devices {
                                    let tensor = DLTensor {
                                        data: std::ptr::without_provenance_mut(address),
                                        device,
                                        ndim,
                                        dtype,
                                        shape: if arrays == 1 && ndim > 0 {
                                            std::ptr::null_mut()
                                        } else {
                                            shape.as_mut_ptr()
                                        },
                                        strides: if arrays == 2 && ndim > 0 {
                                            std::ptr::null_mut()
                                        } else {
                                            strides.as_mut_ptr()
                                        },
                                        byte_offset,
                                    };
                                    total += 1;
                                    common += usize::from(agree(&tensor, flags, device));
                                }
                            }
                        }
                    }
                }
            }
        }
        let enough = if miri { 10 } else { 1_000 };
        assert!(
            common > enough && common < total,
            "{common} of {total} took the common path"
        );
    }

    /// A compact float32 CPU tensor, the usual import, takes the common path.
    #[test]
    fn a_compact_host_tensor_takes_the_common_path() {
        let (mut shape, mut strides, mut data) = ([2i64, 3], [3i64, 1], [0f32; 6]);
        let tensor = DLTensor {
            data: data.as_mut_ptr().cast(),
            device: Device::CPU,
            ndim: 2,
            dtype: DataType::FLOAT32,
            shape: shape.as_mut_ptr(),
            strides: strides.as_mut_ptr(),
            byte_offset: 0,
        };
        // SAFETY: shape and strides hold two values each.
        let accepted = unsafe { accept_common_descriptor(&tensor, Flags::NONE, Device::CPU) };
        assert_eq!(accepted.map(|v| (v.elements, v.offsets)), Some((6, (0, 5))));
    }

    #[test]
    fn data_type_check_rejects_zero_fields_and_wrong_fixed_widths() {
        for (dtype, reason) in [
            (DataType::new(DataTypeCode::FLOAT, 0, 1), "bits is 0"),
            (DataType::new(DataTypeCode::FLOAT, 32, 0), "lanes is 0"),
            (
                DataType::new(DataTypeCode::FLOAT4_E2M1FN, 8, 1),
                "bits does not match the width its code names",
            ),
            (
                DataType::new(DataTypeCode::FLOAT6_E3M2FN, 8, 1),
                "bits does not match the width its code names",
            ),
            (
                DataType::new(DataTypeCode::BFLOAT, 32, 1),
                "bits does not match the width its code names",
            ),
        ] {
            assert_eq!(
                dtype.check(),
                Err(Error::InvalidDataType { dtype, reason }),
                "{dtype:?}"
            );
        }
        assert!(DataType::new(DataTypeCode(250), 8, 1).check().is_ok());
    }
}
