//! Import of managed tensors from a (simulated) foreign producer: every rejection of the
//! validation, each with the producer's deleter called exactly once, and ownership rules.

mod common;

use std::sync::Arc;

use common::{DeleterLog, ForeignSpec, release_legacy, release_versioned};
use dlbridge::{
    DataType, DataTypeCode, Device, DeviceType, Error, Flags, MAX_NDIM, ManagedTensor, Version,
};

/// Imports the spec as a versioned tensor, expecting a rejection; checks the deleter ran once.
fn reject_versioned(spec: &ForeignSpec) -> Error {
    let (ptr, log) = spec.versioned();
    // SAFETY: a live tensor from the simulated producer, handed over.
    let error = unsafe { ManagedTensor::from_raw_versioned(ptr) }.expect_err("must be rejected");
    assert_eq!(log.calls(), 1, "deleter calls after rejecting with {error}");
    error
}

/// As `reject_versioned`, for the legacy layout.
fn reject_legacy(spec: &ForeignSpec) -> Error {
    let (ptr, log) = spec.legacy();
    // SAFETY: a live tensor from the simulated producer, handed over.
    let error = unsafe { ManagedTensor::from_raw_legacy(ptr) }.expect_err("must be rejected");
    assert_eq!(log.calls(), 1, "deleter calls after rejecting with {error}");
    error
}

fn accept_versioned(spec: &ForeignSpec) -> (ManagedTensor, Arc<DeleterLog>) {
    let (ptr, log) = spec.versioned();
    // SAFETY: a live tensor from the simulated producer, handed over.
    let tensor = unsafe { ManagedTensor::from_raw_versioned(ptr) }.expect("must be accepted");
    assert_eq!(log.calls(), 0);
    (tensor, log)
}

fn accept_legacy(spec: &ForeignSpec) -> (ManagedTensor, Arc<DeleterLog>) {
    let (ptr, log) = spec.legacy();
    // SAFETY: a live tensor from the simulated producer, handed over.
    let tensor = unsafe { ManagedTensor::from_raw_legacy(ptr) }.expect("must be accepted");
    assert_eq!(log.calls(), 0);
    (tensor, log)
}

#[test]
fn null_pointers_are_rejected_without_a_deleter_to_call() {
    // SAFETY: NULL is allowed and rejected.
    let error = unsafe { ManagedTensor::from_raw_versioned(std::ptr::null_mut()) }.unwrap_err();
    assert_eq!(
        error,
        Error::NullPointer {
            what: "DLManagedTensorVersioned"
        }
    );
    assert_eq!(
        error.to_string(),
        "received a NULL DLManagedTensorVersioned pointer"
    );
    // SAFETY: as above.
    let error = unsafe { ManagedTensor::from_raw_legacy(std::ptr::null_mut()) }.unwrap_err();
    assert_eq!(
        error,
        Error::NullPointer {
            what: "DLManagedTensor"
        }
    );
}

#[test]
fn unknown_major_versions_call_the_deleter_and_read_nothing_else() {
    for version in [
        Version::new(2, 0),
        Version::new(0, 8),
        Version::new(u32::MAX, 1),
    ] {
        let mut spec = ForeignSpec::f32(&[2, 2]);
        spec.version = version;
        // Fields past the deleter are garbage in a foreign layout: validation must not look.
        spec.ndim = Some(-77);
        spec.shape = None;
        spec.data = None;
        spec.dtype = DataType::new(DataTypeCode::FLOAT, 0, 0);
        let error = reject_versioned(&spec);
        assert_eq!(error, Error::UnsupportedVersion { version });
        assert!(
            error.to_string().contains(&format!("version = {version}")),
            "{error}"
        );
    }
}

#[test]
fn newer_minor_versions_are_accepted() {
    let mut spec = ForeignSpec::f32(&[3]);
    spec.version = Version::new(1, 99);
    let (tensor, _) = accept_versioned(&spec);
    assert_eq!(tensor.view().version(), Some(Version::new(1, 99)));
}

#[test]
fn ndim_out_of_range_is_rejected() {
    for ndim in [-1, i32::MIN, MAX_NDIM + 1, i32::MAX] {
        let mut spec = ForeignSpec::f32(&[2]);
        spec.ndim = Some(ndim);
        let error = reject_versioned(&spec);
        assert_eq!(error, Error::InvalidNdim { ndim: ndim.into() });
        assert!(
            error
                .to_string()
                .contains(&format!("DLTensor.ndim = {ndim}"))
        );
        assert_eq!(
            reject_legacy(&spec),
            Error::InvalidNdim { ndim: ndim.into() }
        );
    }
}

#[test]
fn the_ndim_limit_itself_is_accepted() {
    let shape = vec![1; MAX_NDIM as usize];
    let (tensor, log) = accept_versioned(&ForeignSpec::f32(&shape));
    assert_eq!(tensor.view().ndim(), MAX_NDIM as usize);
    drop(tensor);
    assert_eq!(log.calls(), 1);
}

#[test]
fn null_shape_with_dimensions_is_rejected() {
    let mut spec = ForeignSpec::f32(&[2, 3]);
    spec.shape = None;
    spec.ndim = Some(2);
    let error = reject_versioned(&spec);
    assert_eq!(error, Error::NullShape { ndim: 2 });
    assert_eq!(
        error.to_string(),
        "DLTensor.shape is NULL but DLTensor.ndim = 2"
    );
    assert_eq!(reject_legacy(&spec), Error::NullShape { ndim: 2 });
}

#[test]
fn zero_dimensional_tensors_may_have_null_shape_and_strides() {
    let mut spec = ForeignSpec::f32(&[]);
    spec.shape = None;
    spec.strides = None;
    let (tensor, _) = accept_versioned(&spec);
    assert_eq!(tensor.view().ndim(), 0);
    assert_eq!(tensor.view().num_elements(), 1);
    assert_eq!(tensor.view().as_slice::<f32>().unwrap(), &[0.0]);
}

#[test]
fn negative_extents_are_rejected_naming_the_dimension() {
    let mut spec = ForeignSpec::f32(&[2, 3]);
    spec.shape = Some(vec![2, -3]);
    let error = reject_versioned(&spec);
    assert_eq!(error, Error::NegativeExtent { dim: 1, extent: -3 });
    assert_eq!(
        error.to_string(),
        "DLTensor.shape[1] = -3: extents must not be negative"
    );
}

#[test]
fn element_count_overflow_is_rejected() {
    let mut spec = ForeignSpec::f32(&[1, 1, 1]);
    spec.shape = Some(vec![1 << 32, 1 << 31, 1 << 2]);
    spec.strides = Some(vec![1, 1, 1]);
    let error = reject_versioned(&spec);
    assert_eq!(
        error,
        Error::ElementCountOverflow {
            dim: 2,
            extent: 1 << 2
        }
    );
    assert!(
        error.to_string().contains("DLTensor.shape[2] = 4"),
        "{error}"
    );
}

// 64-bit targets only: elsewhere `isize` bounds the byte size far below this element count
// (2^60 bytes is a `ByteSizeOverflow` on i686, as Miri's 32-bit run shows).
#[cfg(target_pointer_width = "64")]
#[test]
fn compact_strides_past_i64_are_rejected_for_a_tensor_without_strides() {
    // Found by `make fuzz-smoke`: 2^63 one-bit elements fit in 2^60 bytes, but the compact
    // strides made for a pre-1.2 tensor without strides (and its last offset) do not fit i64.
    let mut spec = ForeignSpec::f32(&[1, 1]);
    spec.version = Version::new(1, 1);
    spec.dtype = DataType::int(1);
    spec.shape = Some(vec![1 << 32, 1 << 31]);
    spec.strides = None;
    spec.data = Some(vec![0; 8]);
    let error = reject_versioned(&spec);
    assert_eq!(
        error,
        Error::CompactStridesOverflow {
            dim: 0,
            extent: 1 << 32
        }
    );
    assert_eq!(
        error.to_string(),
        "DLTensor.strides is NULL and DLTensor.shape[0] = 4294967296 takes the compact strides \
         past i64"
    );
    // One element fewer in the last dimension fits: the tensor is taken, compact.
    spec.shape = Some(vec![1 << 32, (1 << 31) - 1]);
    let (tensor, _) = accept_versioned(&spec);
    assert_eq!(tensor.view().strides(), &[(1 << 31) - 1, 1]);
}

#[test]
fn byte_size_overflow_is_rejected() {
    let mut spec = ForeignSpec::f32(&[1, 1]);
    spec.dtype = DataType::FLOAT64;
    spec.shape = Some(vec![1 << 31, 1 << 31]);
    spec.strides = Some(vec![1 << 31, 1]);
    let error = reject_versioned(&spec);
    assert_eq!(
        error,
        Error::ByteSizeOverflow {
            elements: 1 << 62,
            dtype: DataType::FLOAT64
        }
    );
    assert!(error.to_string().contains("float64"), "{error}");
}

#[test]
fn strides_that_overflow_offsets_are_rejected() {
    let mut spec = ForeignSpec::f32(&[3, 2]);
    spec.strides = Some(vec![i64::MAX / 2 + 1, 1]);
    let error = reject_versioned(&spec);
    assert_eq!(
        error,
        Error::StrideOverflow {
            dim: 0,
            stride: i64::MAX / 2 + 1
        }
    );
    assert!(
        error
            .to_string()
            .contains("DLTensor.strides[0] = 4611686018427387904")
    );
    // A huge but non-overflowing span still cannot be addressed.
    spec.strides = Some(vec![i64::MAX / 4, 1]);
    assert!(matches!(
        reject_versioned(&spec),
        Error::ByteSizeOverflow { .. }
    ));
}

#[test]
fn null_strides_follow_the_version_rules() {
    let mut spec = ForeignSpec::f32(&[2, 3]);
    spec.strides = None;
    // Legacy: compact row-major.
    let (legacy, _) = accept_legacy(&spec);
    assert_eq!(legacy.view().strides(), &[3, 1]);
    assert_eq!(
        legacy.view().elements::<f32>().unwrap().get(&[1, 0]),
        Some(&3.0)
    );
    // Versioned before 1.2: compact row-major.
    for minor in [0, 1] {
        spec.version = Version::new(1, minor);
        let (tensor, _) = accept_versioned(&spec);
        assert_eq!(tensor.view().strides(), &[3, 1]);
        assert!(tensor.view().is_c_contiguous());
    }
    // From 1.2 on: an error.
    for minor in [2, 3, 7] {
        spec.version = Version::new(1, minor);
        let error = reject_versioned(&spec);
        assert_eq!(
            error,
            Error::NullStrides {
                ndim: 2,
                version: Version::new(1, minor)
            }
        );
        assert!(
            error.to_string().contains("DLTensor.strides is NULL"),
            "{error}"
        );
    }
    // One dimension, legacy: the unit stride.
    let mut spec = ForeignSpec::f32(&[4]);
    spec.strides = None;
    let (tensor, _) = accept_legacy(&spec);
    assert_eq!(tensor.view().strides(), &[1]);
}

#[test]
fn zero_bits_or_lanes_are_rejected() {
    let mut spec = ForeignSpec::f32(&[2]);
    spec.dtype = DataType::new(DataTypeCode::FLOAT, 0, 1);
    let error = reject_versioned(&spec);
    assert!(
        matches!(
            error,
            Error::InvalidDataType {
                reason: "bits is 0",
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("bits=0"), "{error}");
    spec.dtype = DataType::new(DataTypeCode::FLOAT, 32, 0);
    let error = reject_legacy(&spec);
    assert!(
        matches!(
            error,
            Error::InvalidDataType {
                reason: "lanes is 0",
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn sub_byte_types_and_the_padded_flag() {
    // float4 must have 4 bits.
    let mut spec = ForeignSpec::f32(&[2]);
    spec.dtype = DataType::new(DataTypeCode::FLOAT4_E2M1FN, 8, 1);
    assert!(matches!(
        reject_versioned(&spec),
        Error::InvalidDataType { .. }
    ));
    // The padded flag on a whole-byte type is rejected.
    let mut spec = ForeignSpec::f32(&[2]);
    spec.flags = Flags::IS_SUBBYTE_TYPE_PADDED;
    let error = reject_versioned(&spec);
    assert_eq!(
        error,
        Error::PaddedFlagOnWholeByteType {
            dtype: DataType::FLOAT32
        }
    );
    assert!(
        error.to_string().contains("IS_SUBBYTE_TYPE_PADDED"),
        "{error}"
    );
    // Packed and padded float4 are accepted, with their own byte sizes.
    let mut spec = ForeignSpec::f32(&[5]);
    spec.dtype = DataType::FLOAT4_E2M1FN;
    let (packed, _) = accept_versioned(&spec);
    assert_eq!(packed.view().compact_byte_size(), 3);
    spec.flags = Flags::IS_SUBBYTE_TYPE_PADDED;
    let (padded, _) = accept_versioned(&spec);
    assert_eq!(padded.view().compact_byte_size(), 5);
    assert!(padded.view().flags().is_subbyte_type_padded());
}

#[test]
fn null_data_is_rejected_unless_the_tensor_is_empty() {
    let mut spec = ForeignSpec::f32(&[2, 3]);
    spec.data = None;
    let error = reject_versioned(&spec);
    assert_eq!(error, Error::NullData { elements: 6 });
    assert_eq!(
        error.to_string(),
        "DLTensor.data is NULL but the tensor has 6 elements"
    );
    assert_eq!(reject_legacy(&spec), Error::NullData { elements: 6 });
    // PyTorch sends NULL data for empty tensors, with any strides.
    let mut spec = ForeignSpec::f32(&[0, 3]);
    spec.data = None;
    spec.strides = Some(vec![-12345, 987]);
    let (tensor, _) = accept_versioned(&spec);
    assert_eq!(tensor.view().as_slice::<f32>().unwrap(), &[] as &[f32]);
    assert!(tensor.view().is_c_contiguous() && tensor.view().is_f_contiguous());
}

#[test]
fn addresses_that_wrap_around_are_rejected() {
    let mut spec = ForeignSpec::f32(&[4]);
    spec.data_address = Some(usize::MAX - 8);
    spec.byte_offset = 4;
    let error = reject_versioned(&spec);
    assert_eq!(
        error,
        Error::AddressOverflow {
            data: usize::MAX - 8,
            byte_offset: 4
        }
    );
    // A device address is not dereferenced by the host, so it is not judged.
    spec.device = Device::new(DeviceType::CUDA, 0);
    let (tensor, _) = accept_versioned(&spec);
    assert_eq!(
        tensor.view().as_slice::<f32>().unwrap_err(),
        Error::NotHostReadable {
            device: Device::new(DeviceType::CUDA, 0)
        }
    );
}

#[test]
fn unknown_flag_bits_device_types_and_dtype_codes_are_kept() {
    let mut spec = ForeignSpec::f32(&[2]);
    spec.flags = Flags::from_bits(Flags::READ_ONLY.bits() | 1 << 63);
    spec.device = Device::new(DeviceType(99), 3);
    spec.dtype = DataType::new(DataTypeCode(42), 32, 1);
    let (tensor, _) = accept_versioned(&spec);
    let view = tensor.view();
    assert_eq!(view.flags().unknown_bits(), 1 << 63);
    assert!(view.is_read_only());
    assert_eq!(view.device(), Device::new(DeviceType(99), 3));
    assert_eq!(view.dtype().code, DataTypeCode(42));
}

#[test]
fn dropping_calls_the_deleter_exactly_once() {
    let (tensor, log) = accept_versioned(&ForeignSpec::f32(&[2, 2]));
    drop(tensor);
    assert_eq!(log.calls(), 1);
    let (tensor, log) = accept_legacy(&ForeignSpec::f32(&[2, 2]));
    drop(tensor);
    assert_eq!(log.calls(), 1);
}

#[test]
fn into_raw_gives_ownership_back_without_deleting() {
    let (tensor, log) = accept_versioned(&ForeignSpec::f32(&[2, 2]));
    let raw = tensor.into_raw();
    assert_eq!(log.calls(), 0);
    assert!(raw.versioned().is_some() && raw.legacy().is_none());
    // SAFETY: the pointer is still live and owned by us.
    let again = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    assert_eq!(again.as_raw(), raw);
    drop(again);
    assert_eq!(log.calls(), 1);

    let mut spec = ForeignSpec::f32(&[5, 7]);
    spec.strides = None;
    let (legacy, log) = accept_legacy(&spec);
    let raw = legacy.into_raw();
    assert_eq!(log.calls(), 0);
    // SAFETY: live and owned by us; the deleter is called once.
    unsafe { raw.delete() };
    assert_eq!(log.calls(), 1);
}

#[test]
fn a_null_deleter_is_never_called() {
    let mut spec = ForeignSpec::f32(&[2]);
    spec.with_deleter = false;
    let (ptr, log) = spec.versioned();
    // SAFETY: live tensor, handed over.
    let tensor = unsafe { ManagedTensor::from_raw_versioned(ptr) }.unwrap();
    drop(tensor);
    assert_eq!(log.calls(), 0);
    // SAFETY: nothing freed it; the producer releases it by its own means.
    unsafe { release_versioned(ptr) };

    // A rejection with a NULL deleter does not crash either.
    spec.ndim = Some(-1);
    let (ptr, log) = spec.legacy();
    // SAFETY: live tensor, handed over.
    let refused = unsafe { ManagedTensor::from_raw_legacy(ptr) }.unwrap_err();
    assert_eq!(refused, Error::InvalidNdim { ndim: -1 });
    assert_eq!(log.calls(), 0);
    // SAFETY: as above.
    unsafe { release_legacy(ptr) };
}

#[test]
fn the_deleter_may_run_on_another_thread() {
    let (tensor, log) = accept_versioned(&ForeignSpec::f32(&[8]));
    let here = std::thread::current().id();
    let there = std::thread::spawn(move || {
        assert_eq!(tensor.view().as_slice::<f32>().unwrap()[7], 7.0);
        drop(tensor);
        std::thread::current().id()
    })
    .join()
    .unwrap();
    assert_eq!(log.calls(), 1);
    assert_eq!(*log.threads.lock().unwrap(), [there]);
    assert_ne!(here, there);
}

#[test]
fn managed_tensors_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ManagedTensor>();
}

#[test]
fn try_from_raw_hands_ownership_back_on_rejection() {
    let mut spec = ForeignSpec::f32(&[2, 3]);
    spec.shape = Some(vec![2, -3]);
    let (ptr, log) = spec.versioned();
    let raw = dlbridge::RawManagedTensor::Versioned(ptr);
    // SAFETY: live tensor; on rejection it stays ours.
    let (error, back) = unsafe { ManagedTensor::try_from_raw(raw) }.unwrap_err();
    assert_eq!(error, Error::NegativeExtent { dim: 1, extent: -3 });
    assert_eq!(back, raw);
    assert_eq!(
        log.calls(),
        0,
        "a capsule consumer leaves deletion to the capsule"
    );
    // SAFETY: still ours, deleted once, as the capsule destructor would.
    unsafe { back.delete() };
    assert_eq!(log.calls(), 1);

    // An unknown major version is handed back too, without reading past the deleter.
    let mut spec = ForeignSpec::f32(&[2]);
    spec.version = Version::new(2, 0);
    let (ptr, log) = spec.versioned();
    // SAFETY: as above.
    let (error, back) =
        unsafe { ManagedTensor::try_from_raw(dlbridge::RawManagedTensor::Versioned(ptr)) }
            .unwrap_err();
    assert!(matches!(error, Error::UnsupportedVersion { .. }));
    // SAFETY: as above.
    unsafe { back.delete() };
    assert_eq!(log.calls(), 1);

    // Accepted: ownership passes, the deleter runs on drop.
    let (ptr, log) = ForeignSpec::f32(&[2]).legacy();
    // SAFETY: live tensor, handed over on success.
    let tensor =
        unsafe { ManagedTensor::try_from_raw(dlbridge::RawManagedTensor::Legacy(ptr)) }.unwrap();
    drop(tensor);
    assert_eq!(log.calls(), 1);
    // NULL is an error with nothing to delete.
    let null = dlbridge::RawManagedTensor::Legacy(std::ptr::null_mut());
    // SAFETY: NULL is allowed and rejected.
    let (error, back) = unsafe { ManagedTensor::try_from_raw(null) }.unwrap_err();
    assert!(back.is_null());
    assert_eq!(
        error,
        Error::NullPointer {
            what: "DLManagedTensor"
        }
    );
}

#[test]
fn set_device_corrects_the_device_and_revalidates() {
    // PyTorch's pinned memory: CPU in the tensor, CUDAHost in __dlpack_device__.
    let (mut tensor, _) = accept_versioned(&ForeignSpec::f32(&[2]));
    tensor
        .set_device(Device::new(DeviceType::CUDA_HOST, 0))
        .unwrap();
    assert_eq!(
        tensor.view().device(),
        Device::new(DeviceType::CUDA_HOST, 0)
    );
    assert_eq!(
        tensor.view().dl_tensor().device,
        Device::CPU,
        "descriptor untouched"
    );
    assert!(tensor.view().as_slice::<f32>().is_ok());
    // A device address that wraps is fine on CUDA but not once called host memory.
    let mut spec = ForeignSpec::f32(&[4]);
    spec.device = Device::new(DeviceType::CUDA, 0);
    spec.data_address = Some(usize::MAX - 8);
    let (mut on_gpu, _) = accept_versioned(&spec);
    // SAFETY: refused by validation before any memory could be read as host memory.
    let relabelled = unsafe { on_gpu.set_device_unchecked(Device::CPU) };
    assert!(matches!(relabelled, Err(Error::AddressOverflow { .. })));
    // The safe setter does not relabel device memory at all (tests/soundness.rs).
    assert!(matches!(
        on_gpu.set_device(Device::CPU),
        Err(Error::DeviceChange { .. })
    ));
    assert_eq!(on_gpu.view().device(), Device::new(DeviceType::CUDA, 0));
}
