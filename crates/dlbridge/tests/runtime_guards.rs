//! Run-time guards that the soundness audit (SOUNDNESS.md) relies on and that no other test
//! pins, and the reproduction of a hole the audit found in the contract of [`Element`].
//!
//! The compile-time half of the audit (borrows, `unsafe` markers, trait bounds) is the
//! `compile_fail` doc tests of `src/compile_fail_checks.rs`.

use std::sync::Arc;

use dlbridge::{DataType, Device, DeviceType, Element, Error, Export, Flags, ManagedTensor};

/// A builder flag cannot be used to take READ_ONLY back: `read_only(false)` only declines to
/// add it, and the other flag setters leave it alone, so memory that another `Arc` shares stays
/// read-only whatever the builder is told.
#[test]
fn the_builder_cannot_clear_read_only() {
    let shared: Arc<[i32]> = vec![1, 2, 3].into();
    let other_owner = Arc::clone(&shared);
    let mut tensor = Export::new(shared, &[3])
        .read_only(false)
        .subbyte_padded(false)
        .is_copied(false)
        .into_versioned()
        .expect("a shared Arc exports read-only");
    assert_eq!(tensor.view().flags(), Flags::READ_ONLY);
    assert_eq!(
        tensor.as_mut_slice::<i32>().unwrap_err(),
        Error::ReadOnly {
            flags: Flags::READ_ONLY
        }
    );
    assert_eq!(other_owner[0], 1);

    // Explicitly read-only memory of a Vec, likewise.
    let mut tensor = Export::new(vec![0u8; 2], &[2])
        .read_only(true)
        .read_only(false)
        .into_versioned()
        .expect("a Vec exports");
    assert!(tensor.view().is_read_only());
    assert!(matches!(
        tensor.elements_mut::<u8>(),
        Err(Error::ReadOnly { .. })
    ));
}

/// The padded flag cannot relabel a buffer of whole-byte elements as sub-byte storage: every
/// `HostBuffer` element type is whole-byte, and validation refuses the flag on those (V4).
#[test]
fn the_padded_flag_is_refused_on_host_buffers() {
    assert_eq!(
        Export::new(vec![0u8; 2], &[2])
            .subbyte_padded(true)
            .into_versioned()
            .unwrap_err(),
        Error::PaddedFlagOnWholeByteType {
            dtype: DataType::UINT8
        }
    );
}

/// Mutable typed access checks the device as shared access does: a writable tensor whose
/// memory is on a device the CPU cannot read is refused before any pointer is made.
#[test]
fn mutable_access_refuses_device_memory() {
    let cuda = Device::new(DeviceType::CUDA, 0);
    // SAFETY: the tensor is described as CUDA memory at an address nothing here dereferences
    // (every access below is refused first); the owner `()` keeps nothing alive, and needs not.
    let mut tensor = unsafe {
        Export::from_raw_parts(
            (),
            std::ptr::without_provenance_mut(0x1000),
            DataType::FLOAT32,
            cuda,
            &[4],
        )
    }
    .into_versioned()
    .expect("a CUDA descriptor exports");
    assert!(!tensor.view().is_read_only());
    let refused = Error::NotHostReadable { device: cuda };
    assert_eq!(tensor.as_mut_slice::<f32>().unwrap_err(), refused);
    assert_eq!(
        tensor.as_mut_slice_memory_order::<f32>().unwrap_err(),
        refused
    );
    assert_eq!(tensor.elements_mut::<f32>().unwrap_err(), refused);
    assert_eq!(tensor.view().to_compact_copy().unwrap_err(), refused);
}

/// A one-byte element type for the int4 data type: its implementer reads the contract of
/// [`Element`] ("`size_of::<Self>()` bytes must hold exactly one element of `DTYPE`") as
/// allowing int4 values stored one per byte, as IS_SUBBYTE_TYPE_PADDED stores them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
struct PaddedInt4(u8);

// SAFETY: as the contract of `Element` reads today: one byte holds exactly one (padded) int4
// element, and every byte is a valid `PaddedInt4`.
unsafe impl Element for PaddedInt4 {
    const DTYPE: DataType = DataType::int(4);
}

/// The hole (fixed in issue 27): typed access compared the data type only (`T::DTYPE == dtype`), never the size
/// of `T` against what the tensor stores per element, and validation bounds the address
/// range of byte-sized data types only (V8). A sub-byte `Element` type therefore gets a slice
/// of one `T` per element over packed memory that holds two elements per byte: 256 packed
/// int4 take 128 bytes, and the slice covers 256 (Miri: out-of-bounds; natively it reads past
/// the allocation). The fix belongs to typed access (`TensorView::first_element`: refuse a `T`
/// whose `DTYPE.size_in_bytes()` is not `Some(size_of::<T>())`, or a sub-byte `DTYPE`) and to
/// the `# Safety` of `Element` (a whole-byte `DTYPE` of exactly `size_of::<Self>()` bytes).
#[test]
fn typed_access_refuses_element_types_of_sub_byte_data_types() {
    let mut packed = ManagedTensor::zeros(DataType::int(4), &[256]).expect("zeros");
    let view = packed.view();
    assert!(!view.flags().is_subbyte_type_padded());
    assert_eq!(view.compact_byte_size(), 128);
    let refused = Error::ElementSize {
        dtype: DataType::int(4),
        size: 1,
    };
    // Not a slice of 256 one-byte elements over 128 bytes of packed int4.
    assert_eq!(view.as_slice::<PaddedInt4>().unwrap_err(), refused);
    assert_eq!(view.elements::<PaddedInt4>().unwrap_err(), refused);
    assert_eq!(packed.as_mut_slice::<PaddedInt4>().unwrap_err(), refused);
}

/// The same rule for cudarc views, whose length counts one `T` per element.
#[cfg(feature = "cudarc")]
#[test]
fn cudarc_views_refuse_element_types_of_sub_byte_data_types() {
    let cuda = Device::new(DeviceType::CUDA, 0);
    // SAFETY: a CUDA descriptor at an address nothing here dereferences (refused first); the
    // owner `()` keeps nothing alive, and needs not.
    let tensor = unsafe {
        Export::from_raw_parts(
            (),
            std::ptr::without_provenance_mut(0x1000),
            DataType::int(4),
            cuda,
            &[256],
        )
    }
    .into_versioned()
    .expect("a CUDA descriptor exports");
    assert_eq!(
        dlbridge::cuda::cuda_slice_parts::<PaddedInt4>(&tensor.view(), 0).unwrap_err(),
        Error::ElementSize {
            dtype: DataType::int(4),
            size: 1
        }
    );
}
