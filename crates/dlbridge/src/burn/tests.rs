//! Tests of the burn conversions: tensors as `TensorData` without copying, writes in place or
//! copy-on-write, clones that share, deleters run once from any thread, burn's data exported
//! without copying (or copied where misaligned), and the refusals both ways.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ::burn_std::{BoolStore, Bytes, DType, TensorData};
use half::{bf16, f16};

use super::BurnTensorExt;
use crate::{DataType, Device, Error, Export, Flags, ManagedTensor};

/// A tensor over `values` whose owner counts its drops in `drops`.
fn counted<T: crate::Element>(
    values: Vec<T>,
    shape: &[usize],
    drops: &'static AtomicUsize,
) -> ManagedTensor {
    struct Owner<T> {
        _values: Vec<T>,
        drops: &'static AtomicUsize,
    }
    impl<T> Drop for Owner<T> {
        fn drop(&mut self) {
            self.drops.fetch_add(1, Ordering::SeqCst);
        }
    }
    let mut values = values;
    let data = values.as_mut_ptr();
    // SAFETY: the owner keeps the `Vec`'s elements in place and alive; the shape describes
    // them (C order); nothing else reaches them.
    unsafe {
        Export::from_raw_parts(
            Owner {
                _values: values,
                drops,
            },
            data.cast(),
            T::DTYPE,
            Device::CPU,
            shape,
        )
    }
    .into_versioned()
    .unwrap()
}

#[test]
fn tensors_become_burn_data_without_copying() {
    let tensor = Export::new(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])
        .into_versioned()
        .unwrap();
    let address = tensor.view().data_ptr() as *const u8;
    let data = tensor.into_burn_data().unwrap();
    assert_eq!(data.dtype(), DType::F32);
    assert_eq!(data.shape().as_slice(), &[2, 3]);
    assert_eq!(data.as_bytes().as_ptr(), address);
    assert_eq!(
        data.as_slice::<f32>().unwrap(),
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
}

#[test]
fn every_data_type_burn_has_crosses_both_ways() {
    fn check<T: crate::Element + burn_std::Element + PartialEq + std::fmt::Debug>(
        values: Vec<T>,
        burn: DType,
    ) {
        let tensor = Export::new(values.clone(), &[values.len()])
            .into_versioned()
            .unwrap();
        let data = tensor.into_burn_data().unwrap();
        assert_eq!(data.dtype(), burn);
        assert_eq!(data.as_slice::<T>().unwrap(), values.as_slice());
        let back = ManagedTensor::from_burn_data(data).unwrap();
        assert_eq!(back.view().dtype(), T::DTYPE);
        assert_eq!(back.view().as_slice::<T>().unwrap(), values.as_slice());
    }
    check(vec![1.0f64, -2.5], DType::F64);
    check(vec![1.0f32, -2.5], DType::F32);
    check(vec![f16::ONE, f16::MAX], DType::F16);
    check(vec![bf16::ONE, bf16::MIN], DType::BF16);
    check(vec![i64::MIN, 7], DType::I64);
    check(vec![i32::MIN, 7], DType::I32);
    check(vec![i16::MIN, 7], DType::I16);
    check(vec![i8::MIN, 7], DType::I8);
    check(vec![u64::MAX, 7], DType::U64);
    check(vec![u32::MAX, 7], DType::U32);
    check(vec![u16::MAX, 7], DType::U16);
    check(vec![u8::MAX, 7], DType::U8);
    check(vec![true, false], DType::Bool(BoolStore::Native));
}

#[test]
fn writes_go_in_place_to_a_writable_exclusive_tensor() {
    let tensor = Export::new(vec![1i32, 2, 3], &[3])
        .into_versioned()
        .unwrap();
    let address = tensor.view().data_ptr() as *const u8;
    let mut data = tensor.into_burn_data().unwrap();
    data.as_mut_slice::<i32>().unwrap()[0] = 10;
    assert_eq!(data.as_bytes().as_ptr(), address);
    // Back out: the same memory, written.
    let back = ManagedTensor::from_burn_data(data).unwrap();
    assert_eq!(back.view().data_ptr() as *const u8, address);
    assert_eq!(back.view().as_slice::<i32>().unwrap(), &[10, 2, 3]);
}

#[test]
fn read_only_and_shared_tensors_are_copied_on_the_first_write() {
    // Read-only: an `Arc` another owner still reads.
    let values: Arc<[f64]> = vec![1.0, 2.0].into();
    let reader = Arc::clone(&values);
    let tensor = Export::new(values, &[2]).into_versioned().unwrap();
    assert!(tensor.view().is_read_only());
    let mut data = tensor.into_burn_data().unwrap();
    assert_eq!(data.as_bytes().as_ptr(), reader.as_ptr().cast());
    data.as_mut_slice::<f64>().unwrap()[1] = 20.0;
    assert_ne!(data.as_bytes().as_ptr(), reader.as_ptr().cast());
    assert_eq!(data.as_slice::<f64>().unwrap(), &[1.0, 20.0]);
    assert_eq!(&reader[..], &[1.0, 2.0]); // never written

    // Shared with another handle of this crate.
    let mut tensor = Export::new(vec![5u8, 6], &[2]).into_versioned().unwrap();
    tensor.mark_shared();
    let address = tensor.view().data_ptr() as *const u8;
    let mut data = tensor.into_burn_data().unwrap();
    data.as_mut_slice::<u8>().unwrap()[0] = 0;
    assert_ne!(data.as_bytes().as_ptr(), address);
}

#[test]
fn clones_share_the_tensor_until_one_writes() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    let tensor = counted(vec![1u16, 2, 3, 4], &[2, 2], &DROPS);
    let address = tensor.view().data_ptr() as *const u8;
    let mut first = tensor.into_burn_data().unwrap();
    let second = first.clone();
    assert_eq!(second.as_bytes().as_ptr(), address);
    // Two clones: neither may write the tensor; the writer copies.
    first.as_mut_slice::<u16>().unwrap()[0] = 100;
    assert_ne!(first.as_bytes().as_ptr(), address);
    assert_eq!(second.as_slice::<u16>().unwrap(), &[1, 2, 3, 4]);
    drop(first);
    assert_eq!(DROPS.load(Ordering::SeqCst), 0);
    // The last clone, dropped on another thread, runs the deleter once.
    std::thread::spawn(move || drop(second)).join().unwrap();
    assert_eq!(DROPS.load(Ordering::SeqCst), 1);
}

#[test]
fn a_round_trip_through_burn_runs_the_first_deleter_once() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    let tensor = counted(vec![1.0f32; 6], &[3, 2], &DROPS);
    let address = tensor.view().data_ptr();
    let back = ManagedTensor::from_burn_data(tensor.into_burn_data().unwrap()).unwrap();
    assert_eq!(back.view().data_ptr(), address);
    assert_eq!(back.view().shape(), &[3, 2]);
    assert_eq!(DROPS.load(Ordering::SeqCst), 0);
    std::thread::spawn(move || drop(back)).join().unwrap();
    assert_eq!(DROPS.load(Ordering::SeqCst), 1);
}

#[test]
fn burn_data_exports_without_copying_and_writable() {
    let data = TensorData::new(vec![1.5f32, 2.5, 3.5, 4.5], [2, 2]);
    let address = data.as_bytes().as_ptr();
    let mut tensor = ManagedTensor::from_burn_data(data).unwrap();
    let view = tensor.view();
    assert_eq!(view.data_ptr() as *const u8, address);
    assert_eq!(view.shape(), &[2, 2]);
    assert_eq!(view.strides(), &[2, 1]);
    assert_eq!(view.flags(), Flags::NONE);
    tensor.as_mut_slice::<f32>().unwrap()[3] = 0.0;
    assert_eq!(
        tensor.view().as_slice::<f32>().unwrap(),
        &[1.5, 2.5, 3.5, 0.0]
    );
    // Flex32 is stored as f32, and bools stored as bytes are bools.
    let flex = TensorData::new(vec![1.0f32], [1]).convert_dtype(DType::Flex32);
    assert_eq!(
        ManagedTensor::from_burn_data(flex).unwrap().view().dtype(),
        DataType::FLOAT32
    );
    let bytes = TensorData::from_bytes_vec(vec![1, 0], [2], DType::Bool(BoolStore::U8));
    let bools = ManagedTensor::from_burn_data(bytes).unwrap();
    assert_eq!(bools.view().as_slice::<bool>().unwrap(), &[true, false]);
    // An empty tensor.
    let empty = ManagedTensor::from_burn_data(TensorData::new(Vec::<i64>::new(), [0, 3])).unwrap();
    assert_eq!(empty.view().shape(), &[0, 3]);
}

#[test]
fn misaligned_burn_bytes_are_copied_and_flagged() {
    // The float32 pair 1.0, 2.0 as bytes, placed one or two bytes into a buffer so that it is
    // misaligned for float32 whatever address the buffer gets (Miri's vary from run to run).
    // (Writable and exclusive, so burn's mutable access does not copy it first.)
    let mut bytes: Vec<u8> = vec![0; 10];
    let offset = if (bytes.as_ptr().addr() + 1) % 4 == 0 {
        2
    } else {
        1
    };
    bytes[offset..offset + 8].copy_from_slice(&[0, 0, 128, 63, 0, 0, 0, 64]);
    let start = bytes.as_mut_ptr().wrapping_add(offset);
    assert_ne!(start.addr() % 4, 0);
    // SAFETY: the `Vec` keeps the ten bytes alive and in place; eight of them from `start`;
    // nothing else reaches them.
    let tensor =
        unsafe { Export::from_raw_parts(bytes, start.cast(), DataType::UINT8, Device::CPU, &[8]) }
            .into_versioned()
            .unwrap();
    let data = tensor.into_burn_data().unwrap();
    let floats = TensorData::try_from_bytes(data.into_bytes(), [2], DType::F32).unwrap();
    let exported = ManagedTensor::from_burn_data(floats).unwrap();
    let view = exported.view();
    assert!(view.flags().is_copied());
    assert_eq!(view.data_ptr() as usize % 64, 0);
    assert_eq!(view.as_slice::<f32>().unwrap(), &[1.0, 2.0]);
}

#[test]
fn what_burn_cannot_hold_is_refused() {
    let complex = Export::new(vec![num_complex::Complex::new(1.0f32, 0.0)], &[1])
        .into_versioned()
        .unwrap();
    let error = complex.into_burn_data().unwrap_err();
    assert_eq!(
        error.to_string(),
        "burn cannot express burn tensor data of a tensor of data type complex64: burn has no \
         such type"
    );
    let transposed = Export::new(vec![1i32, 2, 3, 4, 5, 6], &[2, 3])
        .strides(&[1, 2])
        .into_versioned()
        .unwrap();
    let compact = transposed.view().to_compact_copy().unwrap();
    assert_eq!(
        transposed.into_burn_data().unwrap_err().to_string(),
        "burn cannot express burn tensor data of a tensor of shape [2, 3] and strides [1, 2]: \
         burn's data is row-major compact; call ManagedTensor::into_compact() first (it copies \
         only a tensor that is not)"
    );
    // The fix the message names: the compact copy's values, in row-major order.
    let data = compact.into_burn_data().unwrap();
    assert_eq!(data.as_slice::<i32>().unwrap(), &[1, 3, 5, 2, 4, 6]);
    let mut device = Export::new(vec![1.0f32], &[1]).into_versioned().unwrap();
    // SAFETY: the label is never used to reach the memory as device memory.
    unsafe { device.set_device_unchecked(Device::new(crate::DeviceType::CUDA, 0)) }.unwrap();
    assert!(matches!(
        device.into_burn_data(),
        Err(Error::NotHostReadable { .. })
    ));
    // A byte other than 0 or 1 in a bool tensor.
    let bytes = Export::new(vec![0u8, 2], &[2]).into_versioned().unwrap();
    let raw = bytes.into_raw_versioned().unwrap();
    // SAFETY: our own live export, relabelled as bool before it is imported again.
    let bools = unsafe {
        (*raw).dl_tensor.dtype = DataType::BOOL;
        ManagedTensor::from_raw_versioned(raw)
    }
    .unwrap();
    assert!(matches!(
        bools.into_burn_data(),
        Err(Error::InvalidBool { value: 2, .. })
    ));
    // burn's booleans stored as u32 have no DLPack type.
    let wide = TensorData::from_bytes_vec(vec![1, 0, 0, 0], [1], DType::Bool(BoolStore::U32));
    assert!(matches!(
        ManagedTensor::from_burn_data(wide),
        Err(Error::Unrepresentable {
            library: "burn",
            ..
        })
    ));
}

#[test]
fn exports_of_burn_bytes_are_bounded_by_the_bytes() {
    // burn's `TensorData` keeps its bytes' length equal to its shape's; the export does not
    // rely on it (issue 47): bytes shorter than the shape are refused, aligned (exported in
    // place) or not (copied), whole elements or not.
    let refused = |bytes: Bytes, shape: &[usize], dtype: DataType, elements: u64, held: usize| {
        assert_eq!(
            super::export_bytes(bytes, shape, dtype).unwrap_err(),
            Error::ShapeMismatch {
                elements,
                buffer_len: held,
            }
        );
    };
    refused(
        Bytes::from_elems(vec![1.0f32]),
        &[8],
        DataType::FLOAT32,
        8,
        1,
    );
    refused(
        Bytes::from_elems(vec![1i64, 2, 3]),
        &[2, 3],
        DataType::INT64,
        6,
        3,
    );
    refused(
        Bytes::from_bytes_vec(vec![0; 6]),
        &[2],
        DataType::FLOAT32,
        2,
        1,
    );
    let huge = 1usize << 40;
    refused(
        Bytes::from_elems(vec![0u8]),
        &[huge],
        DataType::UINT8,
        huge as u64,
        1,
    );
    // Misaligned bytes (copied before export, as in the test above): eight bytes from one
    // or two bytes into a buffer, two float32 elements, four asked for.
    let mut bytes: Vec<u8> = vec![0; 10];
    let offset = if (bytes.as_ptr().addr() + 1) % 4 == 0 {
        2
    } else {
        1
    };
    let start = bytes.as_mut_ptr().wrapping_add(offset);
    assert_ne!(start.addr() % 4, 0);
    // SAFETY: the `Vec` keeps the ten bytes alive and in place; eight of them from `start`;
    // nothing else reaches them.
    let tensor =
        unsafe { Export::from_raw_parts(bytes, start.cast(), DataType::UINT8, Device::CPU, &[8]) }
            .into_versioned()
            .unwrap();
    let misaligned = tensor.into_burn_data().unwrap().into_bytes();
    refused(misaligned, &[4], DataType::FLOAT32, 4, 2);
    // Bytes that hold the shape are exported as before.
    let fits = super::export_bytes(Bytes::from_elems(vec![1u16, 2]), &[2], DataType::UINT16);
    assert_eq!(fits.unwrap().view().as_slice::<u16>().unwrap(), &[1, 2]);
}
