//! Tests of the candle conversions: copies out of candle of every layout, the zero-copy export
//! under its contract (pointers, strides, the storage kept alive), copies into candle, and the
//! refusals.

use ::candle_core::op::BackpropOp;
use ::candle_core::{CpuStorage, DType, Device as CandleDevice, IndexOp, Storage, Tensor};
use half::{bf16, f16};

use super::{CandleTensorExt, CandleViewExt};
use crate::{DataType, Device, Error, Export, ManagedTensor};

fn cpu() -> CandleDevice {
    CandleDevice::Cpu
}

/// The address of a candle CPU tensor's first element.
fn first_address(tensor: &Tensor) -> usize {
    // SAFETY: nothing writes the tensor while this probe lives.
    let exported = unsafe { ManagedTensor::from_candle_tensor_unchecked(tensor) }.unwrap();
    exported.view().data_ptr() as usize
}

#[test]
fn copies_of_every_layout_are_compact_and_flagged() {
    let base = Tensor::arange(0i64, 24, &cpu())
        .unwrap()
        .reshape((2, 3, 4))
        .unwrap();
    let layouts = [
        base.clone(),
        base.transpose(0, 2).unwrap(),
        base.narrow(2, 1, 2).unwrap(),
        base.i((.., 1..3, 2)).unwrap(),
        base.broadcast_left(2).unwrap(),
    ];
    for tensor in &layouts {
        let copy = ManagedTensor::from_candle_tensor(tensor).unwrap();
        let view = copy.view();
        assert!(view.flags().is_copied());
        assert!(view.is_c_contiguous());
        assert_eq!(
            view.shape().iter().map(|&e| e as usize).collect::<Vec<_>>(),
            tensor.dims()
        );
        let expected = tensor.flatten_all().unwrap().to_vec1::<i64>().unwrap();
        assert_eq!(view.as_slice::<i64>().unwrap(), expected.as_slice());
        assert_ne!(view.data_ptr() as usize, first_address(tensor));
    }
}

#[test]
fn the_zero_copy_export_keeps_candle_layout_and_storage() {
    let tensor = Tensor::arange(0f32, 12.0, &cpu())
        .unwrap()
        .reshape((3, 4))
        .unwrap();
    let transposed = tensor.t().unwrap();
    let sliced = tensor.narrow(1, 1, 2).unwrap();
    for (view, strides) in [(&tensor, [4, 1]), (&transposed, [1, 4]), (&sliced, [4, 1])] {
        // SAFETY: no tensor of this test is written in place.
        let exported = unsafe { ManagedTensor::from_candle_tensor_unchecked(view) }.unwrap();
        let dl = exported.view();
        assert_eq!(dl.strides(), &strides);
        assert!(dl.is_read_only());
        assert_eq!(dl.dtype(), DataType::FLOAT32);
        let values: Vec<f32> = dl.elements::<f32>().unwrap().iter().copied().collect();
        assert_eq!(
            values,
            view.flatten_all().unwrap().to_vec1::<f32>().unwrap()
        );
    }
    // The narrowed view starts one element into the same storage.
    assert_eq!(first_address(&sliced), first_address(&tensor) + 4);
    // The export keeps candle's storage alive after every candle handle is gone.
    let exported = {
        let owned = Tensor::new(&[7u32, 8, 9], &cpu()).unwrap();
        // SAFETY: `owned` is dropped below and never written.
        unsafe { ManagedTensor::from_candle_tensor_unchecked(&owned) }.unwrap()
    };
    assert_eq!(exported.view().as_slice::<u32>().unwrap(), &[7, 8, 9]);
    std::thread::spawn(move || drop(exported)).join().unwrap();
}

#[test]
fn every_candle_type_exports() {
    fn check<T: crate::Element + candle_core::WithDType + PartialEq + std::fmt::Debug>(
        values: [T; 2],
    ) {
        let tensor = Tensor::new(&values, &CandleDevice::Cpu).unwrap();
        let copy = ManagedTensor::from_candle_tensor(&tensor).unwrap();
        assert_eq!(copy.view().dtype(), <T as crate::Element>::DTYPE);
        assert_eq!(copy.view().as_slice::<T>().unwrap(), &values);
        let back = copy.view().to_candle_tensor().unwrap();
        assert_eq!(back.dtype(), tensor.dtype());
        assert_eq!(back.to_vec1::<T>().unwrap(), values);
    }
    check([1u8, 255]);
    check([1u32, u32::MAX]);
    check([-1i16, i16::MAX]);
    check([-1i32, i32::MAX]);
    check([-1i64, i64::MAX]);
    check([f16::ONE, f16::MAX]);
    check([bf16::ONE, bf16::MIN]);
    check([1.5f32, -0.0]);
    check([1.5f64, f64::MAX]);
    let float8 = Tensor::new(&[1.0f32, 2.0], &cpu())
        .unwrap()
        .to_dtype(DType::F8E4M3)
        .unwrap();
    let copy = ManagedTensor::from_candle_tensor(&float8).unwrap();
    assert_eq!(copy.view().dtype(), DataType::FLOAT8_E4M3FN);
    // float8_e4m3fn: 1.0 is 0x38, 2.0 is 0x40.
    let bytes = copy.view().to_compact_copy().unwrap();
    let raw = bytes.view().data_ptr() as *const u8;
    // SAFETY: two one-byte elements, compact, alive while `bytes` is.
    assert_eq!(unsafe { std::slice::from_raw_parts(raw, 2) }, &[0x38, 0x40]);
}

#[test]
fn tensors_are_copied_into_candle_in_row_major_order() {
    let column_major = Export::new(vec![1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0], &[2, 3])
        .strides(&[1, 2])
        .into_versioned()
        .unwrap();
    let candle = column_major.view().to_candle_tensor().unwrap();
    assert_eq!(
        candle.to_vec2::<f64>().unwrap(),
        [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    );
    assert!(candle.is_contiguous());
    assert_ne!(
        first_address(&candle),
        column_major.view().data_ptr() as usize
    );
    let bools = Export::new(vec![true, false, true], &[3])
        .into_versioned()
        .unwrap();
    let mask = bools.view().to_candle_tensor().unwrap();
    assert_eq!(mask.dtype(), DType::U8);
    assert_eq!(mask.to_vec1::<u8>().unwrap(), [1, 0, 1]);
    let scalar = Export::new(vec![3i32], &[]).into_versioned().unwrap();
    assert_eq!(
        scalar
            .view()
            .to_candle_tensor()
            .unwrap()
            .to_scalar::<i32>()
            .unwrap(),
        3
    );
    let empty = Export::new(Vec::<f32>::new(), &[0, 4])
        .into_versioned()
        .unwrap();
    assert_eq!(empty.view().to_candle_tensor().unwrap().dims(), &[0, 4]);
}

#[test]
fn what_candle_cannot_hold_is_refused() {
    for (tensor, name) in [
        (
            Export::new(vec![1i8], &[1]).into_versioned().unwrap(),
            "int8",
        ),
        (
            Export::new(vec![1u16], &[1]).into_versioned().unwrap(),
            "uint16",
        ),
        (
            Export::new(vec![num_complex::Complex::new(1.0f64, 0.0)], &[1])
                .into_versioned()
                .unwrap(),
            "complex128",
        ),
    ] {
        let error = tensor.view().to_candle_tensor().unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "candle cannot express a candle tensor of a tensor of data type {name}: candle \
                 has no such type"
            )
        );
    }
    let mut device = Export::new(vec![1.0f32], &[1]).into_versioned().unwrap();
    // SAFETY: the label is never used to reach the memory as device memory.
    unsafe { device.set_device_unchecked(Device::new(crate::DeviceType::CUDA, 0)) }.unwrap();
    assert!(matches!(
        device.view().to_candle_tensor(),
        Err(Error::NotHostReadable { .. })
    ));
    let raw_bytes = Tensor::new(&[1.0f32], &cpu()).unwrap().to_dtype(DType::F4);
    if let Ok(packed) = raw_bytes {
        assert!(matches!(
            ManagedTensor::from_candle_tensor(&packed),
            Err(Error::Unrepresentable {
                library: "candle",
                ..
            })
        ));
    }
}

/// A candle tensor over `storage` with the contiguous layout of `shape`, made with candle's
/// safe `Tensor::from_storage`, which does not check that the storage holds the shape.
fn over_storage<S: Into<candle_core::Shape>>(storage: CpuStorage, shape: S) -> Tensor {
    Tensor::from_storage(Storage::Cpu(storage), shape, BackpropOp::none(), false)
}

/// Both exports of a tensor, both refused with `expected`.
fn both_refused(tensor: &Tensor, expected: &Error) {
    assert_eq!(
        &ManagedTensor::from_candle_tensor(tensor).unwrap_err(),
        expected
    );
    // SAFETY: nothing writes the tensor in place (and the export is refused).
    let unchecked = unsafe { ManagedTensor::from_candle_tensor_unchecked(tensor) };
    assert_eq!(&unchecked.unwrap_err(), expected);
}

#[test]
fn layouts_that_reach_past_the_storage_are_refused() {
    // Issue 47: the copy read past the storage (heap garbage for 8 elements over 1, a crash
    // for 2^40, an out-of-bounds access under Miri); the zero-copy export was bounded.
    let eight_over_one = over_storage(CpuStorage::U8(vec![7]), (8,));
    assert_eq!(eight_over_one.dims(), &[8]);
    let out_of_bounds = |min_offset, max_offset, buffer_len| Error::OutOfBounds {
        min_offset,
        max_offset,
        buffer_len,
    };
    both_refused(&eight_over_one, &out_of_bounds(0, 7, 1));
    let error = ManagedTensor::from_candle_tensor(&eight_over_one).unwrap_err();
    assert_eq!(
        error.to_string(),
        "shape and strides reach element offsets 0 to 7, outside a buffer of 1 elements"
    );
    let huge = over_storage(CpuStorage::F32(vec![1.0]), (1usize << 40,));
    both_refused(&huge, &out_of_bounds(0, (1 << 40) - 1, 1));
    let rows = over_storage(CpuStorage::I64(vec![0; 5]), (2, 3));
    both_refused(&rows, &out_of_bounds(0, 5, 5));
    // A view of such a tensor: offsets are counted from the start of the storage.
    let second_row = over_storage(CpuStorage::F64(vec![0.0; 4]), (2, 4))
        .narrow(0, 1, 1)
        .unwrap();
    both_refused(&second_row, &out_of_bounds(4, 7, 4));
    let past_the_end = over_storage(CpuStorage::U32(vec![1, 2]), (4,))
        .narrow(0, 3, 1)
        .unwrap();
    both_refused(&past_the_end, &out_of_bounds(3, 3, 2));
    // The same layouts over storage that holds them are exported.
    let fits = over_storage(CpuStorage::F64((0..8).map(f64::from).collect()), (2, 4))
        .narrow(0, 1, 1)
        .unwrap();
    let copy = ManagedTensor::from_candle_tensor(&fits).unwrap();
    assert_eq!(
        copy.view().as_slice::<f64>().unwrap(),
        &[4.0, 5.0, 6.0, 7.0]
    );
}

#[test]
fn empty_views_that_start_past_the_storage_are_exported() {
    // candle's `narrow` may start an empty view past the end of its storage: it reaches no
    // element, so both exports take it (the start is clamped into the storage).
    let empty = Tensor::arange(0i32, 12, &cpu())
        .unwrap()
        .reshape((3, 4))
        .unwrap()
        .narrow(0, 3, 0)
        .unwrap()
        .narrow(1, 4, 0)
        .unwrap();
    assert_eq!(empty.layout().start_offset(), 16);
    let copy = ManagedTensor::from_candle_tensor(&empty).unwrap();
    assert_eq!(copy.view().shape(), &[0, 0]);
    // SAFETY: nothing writes the tensor in place.
    let exported = unsafe { ManagedTensor::from_candle_tensor_unchecked(&empty) }.unwrap();
    assert_eq!(exported.view().shape(), &[0, 0]);
    assert_eq!(exported.view().num_elements(), 0);
}
