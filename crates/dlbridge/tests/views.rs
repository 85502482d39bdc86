//! Views of imported tensors: descriptor access, contiguity as producers really send it, and
//! typed element access with every refusal.

mod common;

use common::ForeignSpec;
use dlbridge::{
    DataType, Device, DeviceType, Error, Export, Flags, ManagedTensor, TensorView, Version,
};

fn import(spec: &ForeignSpec) -> ManagedTensor {
    let (ptr, _) = spec.versioned();
    // SAFETY: a live tensor from the simulated producer, handed over.
    unsafe { ManagedTensor::from_raw_versioned(ptr) }.unwrap()
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

#[test]
fn the_descriptor_is_visible_field_by_field() {
    let mut spec = ForeignSpec::f32(&[2, 3]);
    spec.version = Version::new(1, 2);
    spec.flags = Flags::IS_COPIED;
    spec.device = Device::new(DeviceType::CUDA_HOST, 0);
    let tensor = import(&spec);
    let view = tensor.view();
    assert_eq!(view.ndim(), 2);
    assert_eq!(view.shape(), &[2, 3]);
    assert_eq!(view.strides(), &[3, 1]);
    assert_eq!(view.dtype(), DataType::FLOAT32);
    assert_eq!(view.device(), Device::new(DeviceType::CUDA_HOST, 0));
    assert_eq!(view.byte_offset(), 0);
    assert_eq!(view.flags(), Flags::IS_COPIED);
    assert_eq!(view.version(), Some(Version::new(1, 2)));
    assert_eq!(view.num_elements(), 6);
    assert_eq!(view.compact_byte_size(), 24);
    assert!(!view.is_read_only());
    assert_eq!(view.data_ptr(), view.raw_data());
    let debug = format!("{tensor:?}");
    assert!(
        debug.contains("float32") && debug.contains("CUDAHost:0"),
        "{debug}"
    );
    // Pinned host memory is host-readable.
    assert_eq!(
        view.as_slice::<f32>().unwrap(),
        &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    );
}

#[test]
fn legacy_tensors_have_no_version_and_no_flags() {
    let (ptr, _) = ForeignSpec::f32(&[2]).legacy();
    // SAFETY: a live tensor from the simulated producer, handed over.
    let tensor = unsafe { ManagedTensor::from_raw_legacy(ptr) }.unwrap();
    assert!(!tensor.is_versioned());
    assert_eq!(tensor.view().version(), None);
    assert_eq!(tensor.view().flags(), Flags::NONE);
    assert!(format!("{:?}", tensor.view()).contains("legacy"));
}

#[test]
fn byte_offset_is_always_added() {
    let mut spec = ForeignSpec::f32(&[3]);
    spec.data = Some(f32_bytes(&[9.0, 1.0, 2.0, 3.0]));
    spec.byte_offset = 4;
    let tensor = import(&spec);
    let view = tensor.view();
    assert_eq!(view.as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0]);
    assert_eq!(view.elements::<f32>().unwrap().to_vec(), [1.0, 2.0, 3.0]);
    assert_eq!(
        view.data_ptr() as usize,
        view.raw_data() as usize + 4,
        "data_ptr is data + byte_offset"
    );
}

#[test]
fn negative_strides_walk_backwards_from_the_first_element() {
    // NumPy's a[::-1] of [0, 1, 2, 3]: data at the last element, stride -1.
    let mut spec = ForeignSpec::f32(&[4]);
    spec.strides = Some(vec![-1]);
    spec.byte_offset = 12;
    let tensor = import(&spec);
    let view = tensor.view();
    assert!(!view.is_c_contiguous());
    assert!(matches!(
        view.as_slice::<f32>(),
        Err(Error::NotContiguous { order: "C", .. })
    ));
    let elements = view.elements::<f32>().unwrap();
    assert_eq!(elements.to_vec(), [3.0, 2.0, 1.0, 0.0]);
    assert_eq!(elements.get(&[3]), Some(&0.0));
    assert_eq!(elements.get(&[4]), None);
}

#[test]
fn transposed_tensors_iterate_in_logical_order() {
    // A 3x2 view of a row-major 2x3 buffer [0..6].
    let mut spec = ForeignSpec::f32(&[2, 3]);
    spec.shape = Some(vec![3, 2]);
    spec.strides = Some(vec![1, 3]);
    let tensor = import(&spec);
    let view = tensor.view();
    assert!(view.is_f_contiguous() && !view.is_c_contiguous());
    assert_eq!(
        view.elements::<f32>().unwrap().to_vec(),
        [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    );
    // Memory order is allowed for F-contiguous data.
    assert_eq!(
        view.as_slice_memory_order::<f32>().unwrap(),
        &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    );
    let error = view.as_slice::<f32>().unwrap_err();
    assert!(error.to_string().contains("[1, 3]"), "{error}");
}

#[test]
fn extent_one_dimensions_may_carry_any_stride() {
    for odd in [0, 1, 99, -7, i64::MAX] {
        let mut spec = ForeignSpec::f32(&[1, 4]);
        spec.strides = Some(vec![odd, 1]);
        let tensor = import(&spec);
        assert!(tensor.view().is_c_contiguous(), "stride {odd}");
        assert_eq!(
            tensor.view().as_slice::<f32>().unwrap(),
            &[0.0, 1.0, 2.0, 3.0]
        );
        let mut spec = ForeignSpec::f32(&[4, 1]);
        spec.strides = Some(vec![1, odd]);
        let tensor = import(&spec);
        assert!(tensor.view().is_c_contiguous() && tensor.view().is_f_contiguous());
    }
}

#[test]
fn strided_subsets_are_read_through_elements() {
    // Every other element of [0..8], as a 2x2: strides [4, 2].
    let mut spec = ForeignSpec::f32(&[8]);
    spec.shape = Some(vec![2, 2]);
    spec.strides = Some(vec![4, 2]);
    let tensor = import(&spec);
    let elements = tensor.view().elements::<f32>().unwrap();
    assert_eq!(elements.len(), 4);
    assert_eq!(elements.to_vec(), [0.0, 2.0, 4.0, 6.0]);
    assert_eq!(elements.get(&[1, 1]), Some(&6.0));
    assert_eq!(elements.get(&[1]), None, "wrong number of indices");
    assert!(matches!(
        tensor.view().as_slice_memory_order::<f32>(),
        Err(Error::NotContiguous {
            order: "C or F",
            ..
        })
    ));
}

#[test]
fn typed_access_checks_dtype_device_and_alignment() {
    let tensor = import(&ForeignSpec::f32(&[2]));
    assert_eq!(
        tensor.view().as_slice::<i32>().unwrap_err(),
        Error::DataTypeMismatch {
            requested: DataType::INT32,
            actual: DataType::FLOAT32
        }
    );
    assert_eq!(
        tensor.view().as_slice::<i32>().unwrap_err().to_string(),
        "DLTensor.dtype = float32, but elements of type int32 were requested"
    );

    let mut spec = ForeignSpec::f32(&[2]);
    spec.device = Device::new(DeviceType::CUDA, 1);
    let on_gpu = import(&spec);
    let error = on_gpu.view().elements::<f32>().unwrap_err();
    assert_eq!(
        error,
        Error::NotHostReadable {
            device: Device::new(DeviceType::CUDA, 1)
        }
    );
    assert!(error.to_string().contains("CUDA:1"), "{error}");

    let mut spec = ForeignSpec::f32(&[2]);
    spec.data = Some(vec![0; 12]);
    spec.byte_offset = 2;
    let misaligned = import(&spec);
    assert!(matches!(
        misaligned.view().as_slice::<f32>(),
        Err(Error::Misaligned { align: 4, .. })
    ));
    // Bytes are always aligned.
    assert_eq!(
        misaligned.view().as_slice::<u8>().unwrap_err(),
        Error::DataTypeMismatch {
            requested: DataType::UINT8,
            actual: DataType::FLOAT32
        },
        "dtype still float32"
    );
}

#[test]
fn foreign_bools_must_hold_zero_or_one() {
    let mut spec = ForeignSpec::f32(&[3]);
    spec.dtype = DataType::BOOL;
    spec.data = Some(vec![1, 0, 1]);
    let tensor = import(&spec);
    assert_eq!(
        tensor.view().as_slice::<bool>().unwrap(),
        &[true, false, true]
    );
    spec.data = Some(vec![1, 2, 1]);
    let tensor = import(&spec);
    let error = tensor.view().as_slice::<bool>().unwrap_err();
    assert_eq!(
        error,
        Error::InvalidBool {
            offset: 1,
            value: 2
        }
    );
    assert!(error.to_string().contains("0x02"), "{error}");
    assert_eq!(
        tensor.view().elements::<bool>().unwrap_err(),
        Error::InvalidBool {
            offset: 1,
            value: 2
        }
    );
}

#[test]
fn mutable_access_writes_through_and_respects_read_only() {
    let mut tensor = import(&ForeignSpec::f32(&[2, 2]));
    tensor.as_mut_slice::<f32>().unwrap()[3] = 42.0;
    assert_eq!(tensor.view().as_slice::<f32>().unwrap()[3], 42.0);
    for value in tensor.elements_mut::<f32>().unwrap().iter_mut() {
        *value += 1.0;
    }
    assert_eq!(
        tensor.view().as_slice::<f32>().unwrap(),
        &[1.0, 2.0, 3.0, 43.0]
    );

    let mut spec = ForeignSpec::f32(&[2]);
    spec.flags = Flags::READ_ONLY;
    let mut read_only = import(&spec);
    assert_eq!(
        read_only.as_mut_slice::<f32>().unwrap_err(),
        Error::ReadOnly {
            flags: Flags::READ_ONLY
        }
    );
    for refused in [
        read_only.elements_mut::<f32>().map(drop),
        read_only.as_mut_slice_memory_order::<f32>().map(drop),
    ] {
        assert_eq!(
            refused,
            Err(Error::ReadOnly {
                flags: Flags::READ_ONLY
            })
        );
    }
    assert!(
        read_only.view().as_slice::<f32>().is_ok(),
        "reading is fine"
    );
}

#[test]
fn mutable_access_refuses_layouts_that_alias() {
    let mut spec = ForeignSpec::f32(&[3]);
    spec.shape = Some(vec![2, 3]);
    spec.strides = Some(vec![0, 1]); // a broadcast row
    let mut tensor = import(&spec);
    assert!(
        tensor.view().elements::<f32>().is_ok(),
        "reading a broadcast is fine"
    );
    assert!(matches!(
        tensor.elements_mut::<f32>(),
        Err(Error::OverlappingLayout { .. })
    ));
}

#[test]
fn strided_mutation_touches_only_the_viewed_elements() {
    let mut spec = ForeignSpec::f32(&[6]);
    spec.shape = Some(vec![3]);
    spec.strides = Some(vec![2]);
    let mut tensor = import(&spec);
    let mut elements = tensor.elements_mut::<f32>().unwrap();
    *elements.get_mut(&[2]).unwrap() = -1.0;
    assert_eq!(elements.get(&[2]), Some(&-1.0));
    assert!(elements.get_mut(&[3]).is_none());
    assert_eq!(
        elements.iter().copied().collect::<Vec<_>>(),
        [0.0, 2.0, -1.0]
    );
    assert_eq!(elements.len(), 3);
}

#[test]
fn borrowed_descriptors_are_validated_too() {
    let mut data = [1.0f32, 2.0, 3.0, 4.0];
    let mut shape = [2i64, 2];
    let mut strides = [1i64, 2];
    let tensor = dlbridge::ffi::DLTensor {
        data: data.as_mut_ptr().cast(),
        device: Device::CPU,
        ndim: 2,
        dtype: DataType::FLOAT32,
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    // SAFETY: every pointer is valid for the view's lifetime.
    let view = unsafe { TensorView::from_dltensor(&tensor) }.unwrap();
    assert_eq!(
        view.elements::<f32>().unwrap().to_vec(),
        [1.0, 3.0, 2.0, 4.0]
    );
    let no_strides = dlbridge::ffi::DLTensor {
        strides: std::ptr::null_mut(),
        ..tensor
    };
    // SAFETY: as above.
    let error = unsafe { TensorView::from_dltensor(&no_strides) }.unwrap_err();
    assert!(
        matches!(error, Error::NullStrides { ndim: 2, .. }),
        "{error}"
    );
}

#[test]
fn views_of_exports_share_memory() {
    let data = vec![1u32, 2, 3];
    let address = data.as_ptr() as usize;
    let tensor = Export::new(data, &[3]).into_versioned().unwrap();
    assert_eq!(tensor.view().data_ptr() as usize, address, "zero-copy");
}
