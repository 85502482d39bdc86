//! Tests of the `ndarray` conversions: views of every layout DLPack allows (negative, zero and
//! extent-1 strides, empty tensors, more than 64 dimensions), exports of owned, shared and
//! borrowed arrays, and the round trips between them.

use std::ffi::c_void;
use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ::ndarray::{Array2, ArrayD, ShapeBuilder, arr0, array, s};
use half::f16;
use num_complex::Complex;

use super::*;
use crate::ffi::{DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use crate::{DataType, DeviceType, Export};

#[test]
fn an_empty_tensor_with_a_huge_extent_views_mutably() {
    // Found by fuzzing: version 1.0, NULL strides, shape [2^63 - 1, 0], NULL data. Its
    // custom zero strides failed ndarray's (debug-build) overlap test.
    let mut shape = [i64::MAX, 0];
    let mut managed = DLManagedTensorVersioned {
        version: crate::Version::new(1, 0),
        manager_ctx: std::ptr::null_mut(),
        deleter: None,
        flags: 0,
        dl_tensor: DLTensor {
            data: std::ptr::null_mut(),
            device: crate::Device::CPU,
            ndim: 2,
            dtype: DataType::UINT32,
            shape: shape.as_mut_ptr(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        },
    };
    // SAFETY: a live tensor without a deleter; shape holds ndim values, strides are NULL
    // (allowed before 1.2); it outlives the managed tensor.
    let mut tensor = unsafe { ManagedTensor::from_raw_versioned(&mut managed) }.unwrap();
    if usize::try_from(i64::MAX).is_err() {
        // A 32-bit target: the extent is no `usize`, which ndarray's shapes are.
        assert_eq!(
            tensor.as_array_mut::<u32>().unwrap_err(),
            Error::ElementCountOverflow {
                dim: 0,
                extent: i64::MAX
            }
        );
        return;
    }
    let array = tensor.as_array_mut::<u32>().unwrap();
    assert_eq!(array.shape(), &[i64::MAX as usize, 0]);
    assert_eq!(array.len(), 0);
    assert_eq!(tensor.view().as_array::<u32>().unwrap().len(), 0);
}

#[test]
fn negative_strides_beyond_axis_64_are_flipped() {
    // 70 dimensions, extent 2 on axes 1 and 66 (both reversed), 1 elsewhere.
    let mut shape = vec![1i64; 70];
    let mut strides = vec![1i64; 70];
    (shape[1], strides[1]) = (2, -2);
    (shape[66], strides[66]) = (2, -1);
    // The first logical element is the last in memory: offset 3 = 2 + 1.
    let storage = [10i32, 11, 12, 13];
    let described = DLTensor {
        data: storage.as_ptr().cast_mut().cast(),
        device: crate::Device::CPU,
        ndim: 70,
        dtype: DataType::INT32,
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 12,
    };
    // SAFETY: the descriptor and the storage outlive the view; every offset reached
    // (0..=3 elements from the start of `storage`) is in it.
    let view = unsafe { TensorView::from_dltensor(&described) }.unwrap();
    let array = view.as_array::<i32>().unwrap();
    assert_eq!(array.strides()[1], -2);
    assert_eq!(array.strides()[66], -1);
    let mut index = vec![0usize; 70];
    let mut read = |i1: usize, i66: usize| {
        (index[1], index[66]) = (i1, i66);
        array[index.as_slice()]
    };
    assert_eq!(
        [read(0, 0), read(0, 1), read(1, 0), read(1, 1)],
        [13, 12, 11, 10]
    );
}

/// Exports `array`, checks the export is zero-copy and carries ndarray's layout, and views
/// it back, both directly and through the raw pointer a consumer would receive.
fn round_trip<T: Element + PartialEq + Debug>(array: ArrayD<T>) {
    let expected = array.clone();
    let first = array.as_ptr();
    let strides: Vec<i64> = array.strides().iter().map(|&s| s as i64).collect();
    let tensor = ManagedTensor::from_array(array).unwrap();
    let view = tensor.view();
    assert!(tensor.is_versioned());
    assert_eq!(view.flags(), Flags::NONE);
    assert_eq!(view.dtype(), T::DTYPE);
    assert_eq!(view.byte_offset(), 0);
    assert_eq!(view.raw_data() as *const T, first);
    let shape: Vec<i64> = expected.shape().iter().map(|&e| e as i64).collect();
    assert_eq!(view.shape(), shape);
    assert_eq!(view.strides(), strides);
    assert_eq!(view.as_array::<T>().unwrap(), expected);

    let raw = tensor.into_raw();
    // SAFETY: our own tensor, handed back once.
    let imported = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    let back = imported.view().as_array::<T>().unwrap();
    assert_eq!(back, expected);
    if !expected.is_empty() {
        assert_eq!(back.as_ptr(), first);
    }
}

#[test]
fn round_trips_of_several_dtypes() {
    round_trip(array![[1.5f32, -2.0, 3.25], [4.0, 5.0, 6.0]].into_dyn());
    round_trip(array![i64::MIN, -1, 0, 1, i64::MAX].into_dyn());
    round_trip(array![[true, false], [false, true]].into_dyn());
    round_trip(array![f16::from_f32(0.5), f16::from_f32(-1.0), f16::INFINITY].into_dyn());
    round_trip(array![[Complex::new(1.0f64, -1.0)], [Complex::new(0.0, 2.5)]].into_dyn());
    // More dimensions than ndarray stores inline.
    let six = ArrayD::from_shape_fn(IxDyn(&[2, 1, 3, 1, 2, 2]), |i| {
        i.slice().iter().sum::<usize>() as u16
    });
    round_trip(six);
}

#[test]
fn fortran_order_arrays_keep_their_strides() {
    let a = Array2::from_shape_vec((2, 3), vec![1u8, 2, 3, 4, 5, 6]).unwrap();
    let t = a.clone().reversed_axes();
    assert_eq!(t.strides(), &[1, 3]);
    round_trip(t.clone().into_dyn());
    let tensor = ManagedTensor::from_array(t).unwrap();
    assert!(tensor.view().is_f_contiguous());
    assert_eq!(tensor.view().strides(), &[1, 3]);
    assert_eq!(
        tensor.view().as_slice_memory_order::<u8>().unwrap(),
        &[1, 2, 3, 4, 5, 6]
    );

    let f = Array2::from_shape_vec((2, 3).f(), vec![1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0]).unwrap();
    round_trip(f.into_dyn());
}

#[test]
fn negative_strides_export_and_view() {
    let a = Array2::from_shape_vec((2, 3), (0..6).collect::<Vec<i32>>()).unwrap();
    let reversed = a.clone().slice_move(s![.., ..;-1]);
    let first = reversed.as_ptr();
    let tensor = ManagedTensor::from_array(reversed).unwrap();
    let view = tensor.view();
    assert_eq!(view.strides(), &[3, -1]);
    assert_eq!(view.data_ptr() as *const i32, first);
    assert_eq!(view.elements::<i32>().unwrap().to_vec(), [2, 1, 0, 5, 4, 3]);
    let back = view.as_array::<i32>().unwrap();
    assert_eq!(back, array![[2, 1, 0], [5, 4, 3]].into_dyn());
    assert_eq!(back.strides(), &[3, -1]);
    assert_eq!(back.as_ptr(), first);

    round_trip(a.clone().slice_move(s![..;-1, ..;-2]).into_dyn());
    round_trip(
        a.clone()
            .reversed_axes()
            .slice_move(s![..;-1, ..])
            .into_dyn(),
    );
}

#[test]
fn negative_strides_from_another_producer() {
    // A 3x2 tensor whose rows are stored last to first: data points at the last row.
    let mut buffer = vec![5.0f32, 6.0, 3.0, 4.0, 1.0, 2.0];
    let data = buffer.as_mut_ptr().wrapping_add(4).cast::<c_void>();
    // SAFETY: the Vec holds the six floats the layout reaches (offsets -4 to 1 from
    // `data`) for as long as it lives, and a moved Vec keeps its buffer in place.
    let mut tensor =
        unsafe { Export::from_raw_parts(buffer, data, DataType::FLOAT32, Device::CPU, &[3, 2]) }
            .strides(&[-2, 1])
            .into_versioned()
            .unwrap();
    let expected = array![[1.0f32, 2.0], [3.0, 4.0], [5.0, 6.0]].into_dyn();
    assert_eq!(tensor.view().as_array::<f32>().unwrap(), expected);
    assert_eq!(tensor.view().as_array::<f32>().unwrap().strides(), &[-2, 1]);

    let mut array = tensor.as_array_mut::<f32>().unwrap();
    assert_eq!(array.strides(), &[-2, 1]);
    array[[0, 1]] = 20.0;
    array.index_axis_mut(Axis(0), 2).fill(0.0);
    assert_eq!(
        tensor.view().elements::<f32>().unwrap().to_vec(),
        [1.0, 20.0, 3.0, 4.0, 0.0, 0.0]
    );
}

#[test]
fn byte_offset_and_borrowed_descriptors() {
    let mut buffer = [0i32, 1, 2, 3, 4, 5];
    let mut shape = [2i64];
    let mut strides = [2i64];
    let tensor = DLTensor {
        data: buffer.as_mut_ptr().cast(),
        device: Device::CPU,
        ndim: 1,
        dtype: DataType::INT32,
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 8,
    };
    // SAFETY: shape and strides hold one value each; elements 2 and 4 of the buffer are
    // readable and unchanged while the view lives.
    let view = unsafe { TensorView::from_dltensor(&tensor) }.unwrap();
    let array = view.as_array::<i32>().unwrap();
    assert_eq!(array, array![2, 4].into_dyn());
    assert_eq!(array.as_ptr(), buffer[2..].as_ptr());
}

#[test]
fn zero_size_arrays() {
    round_trip(ArrayD::<f32>::zeros(IxDyn(&[0, 3])));
    round_trip(ArrayD::<i64>::zeros(IxDyn(&[4, 0, 2])));
    round_trip(
        Array2::<u8>::zeros((3, 4))
            .slice_move(s![2..2, ..;-1])
            .into_dyn(),
    );
}

#[test]
fn zero_size_tensors_with_null_data_and_any_strides() {
    // SAFETY: no element is reached.
    let mut tensor = unsafe {
        Export::from_raw_parts(
            (),
            std::ptr::null_mut(),
            DataType::FLOAT64,
            Device::CPU,
            &[0, 3],
        )
    }
    .strides(&[7, -9])
    .into_versioned()
    .unwrap();
    let array = tensor.view().as_array::<f64>().unwrap();
    assert_eq!(array.shape(), &[0, 3]);
    assert_eq!(array.strides(), &[0, 0]);
    assert!(array.is_empty());
    assert_eq!(array.iter().count(), 0);
    assert_eq!(array.slice(s![.., 1..]).shape(), &[0, 2]);
    let mut array = tensor.as_array_mut::<f64>().unwrap();
    array.fill(1.0);
    assert_eq!(array.shape(), &[0, 3]);
}

#[test]
fn empty_tensors_ndarray_cannot_represent_are_refused() {
    // SAFETY: no element is reached.
    let tensor = unsafe {
        Export::from_raw_parts(
            (),
            std::ptr::null_mut(),
            DataType::UINT8,
            Device::CPU,
            // 2^62 on 64-bit targets, 2^30 on 32-bit ones: times 4, past `isize::MAX`.
            &[usize::MAX / 4 + 1, 4, 0],
        )
    }
    .into_versioned()
    .unwrap();
    assert_eq!(
        tensor.view().as_array::<u8>().unwrap_err(),
        Error::ElementCountOverflow { dim: 1, extent: 4 }
    );
}

#[test]
fn zero_dimensional_arrays() {
    round_trip(arr0(2.5f64).into_dyn());
    let tensor = ManagedTensor::from_array(arr0(-3i32)).unwrap();
    assert_eq!(tensor.view().ndim(), 0);
    assert_eq!(tensor.view().as_array::<i32>().unwrap()[[]], -3);

    let mut tensor = Export::new(vec![7i16], &[]).into_versioned().unwrap();
    assert_eq!(
        tensor.view().as_array::<i16>().unwrap(),
        arr0(7i16).into_dyn()
    );
    tensor.as_array_mut::<i16>().unwrap()[[]] = 8;
    assert_eq!(tensor.view().as_slice::<i16>().unwrap(), &[8]);
}

#[test]
fn extent_one_dimensions_with_any_stride() {
    for stride in [999, -5, 0, 1, i64::MAX, i64::MIN] {
        let mut tensor = Export::new(vec![1u32, 2, 3], &[1, 3])
            .strides(&[stride, 1])
            .into_versioned()
            .unwrap();
        assert_eq!(tensor.view().strides(), &[stride, 1]);
        let array = tensor.view().as_array::<u32>().unwrap();
        assert_eq!(array, array![[1u32, 2, 3]].into_dyn());
        assert_eq!(array.strides(), &[0, 1]);
        assert!(array.is_standard_layout());
        assert_eq!(array.as_slice(), Some(&[1u32, 2, 3][..]));
        assert_eq!(array.slice(s![1.., ..]).shape(), &[0, 3]);

        let mut array = tensor.as_array_mut::<u32>().unwrap();
        array[[0, 2]] = 30;
        assert_eq!(tensor.view().as_slice::<u32>().unwrap(), &[1, 2, 30]);
    }
    // Extent 1 with a negative stride among reversed dimensions.
    let tensor = Export::new(vec![1u32, 2, 3, 4], &[2, 1, 2])
        .strides(&[2, -7, 1])
        .into_versioned()
        .unwrap();
    assert_eq!(
        tensor.view().as_array::<u32>().unwrap(),
        array![[[1u32, 2]], [[3, 4]]].into_dyn()
    );
}

static LEGACY_DELETES: AtomicUsize = AtomicUsize::new(0);

/// What a hand-made legacy tensor keeps alive.
struct LegacyContext {
    data: Vec<i32>,
    shape: [i64; 2],
}

unsafe extern "C" fn delete_legacy(managed: *mut DLManagedTensor) {
    // SAFETY: made by `legacy_tensor` below from two boxes, deleted once.
    unsafe {
        drop(Box::from_raw(
            (*managed).manager_ctx.cast::<LegacyContext>(),
        ));
        drop(Box::from_raw(managed));
    }
    LEGACY_DELETES.fetch_add(1, Ordering::SeqCst);
}

/// A legacy 2x3 tensor with NULL strides, as pre-1.0 producers send.
fn legacy_tensor() -> *mut DLManagedTensor {
    let context = Box::into_raw(Box::new(LegacyContext {
        data: vec![1, 2, 3, 4, 5, 6],
        shape: [2, 3],
    }));
    // SAFETY: `context` is a live box; raw pointers into it stay valid until the deleter
    // frees it.
    let (data, shape) = unsafe {
        (
            (*context).data.as_mut_ptr().cast::<c_void>(),
            std::ptr::addr_of_mut!((*context).shape).cast::<i64>(),
        )
    };
    Box::into_raw(Box::new(DLManagedTensor {
        dl_tensor: DLTensor {
            data,
            device: Device::CPU,
            ndim: 2,
            dtype: DataType::INT32,
            shape,
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        },
        manager_ctx: context.cast(),
        deleter: Some(delete_legacy),
    }))
}

#[test]
fn legacy_tensors_with_null_strides() {
    let before = LEGACY_DELETES.load(Ordering::SeqCst);
    // SAFETY: a fresh legacy tensor that we own and hand over.
    let mut tensor = unsafe { ManagedTensor::from_raw_legacy(legacy_tensor()) }.unwrap();
    assert!(tensor.view().dl_tensor().strides.is_null());
    let array = tensor.view().as_array::<i32>().unwrap();
    assert_eq!(array, array![[1, 2, 3], [4, 5, 6]].into_dyn());
    assert_eq!(array.strides(), &[3, 1]);
    // A legacy tensor cannot say its memory may be written: read-only until vouched for.
    assert_eq!(
        tensor.as_array_mut::<i32>().unwrap_err(),
        Error::WritabilityUnknown
    );
    // SAFETY: the test's own heap memory, which nothing else uses.
    unsafe { tensor.assume_legacy_writable() };
    tensor
        .as_array_mut::<i32>()
        .unwrap()
        .index_axis_mut(Axis(1), 0)
        .fill(0);
    assert_eq!(
        tensor.view().as_slice::<i32>().unwrap(),
        &[0, 2, 3, 0, 5, 6]
    );
    assert_eq!(LEGACY_DELETES.load(Ordering::SeqCst), before);
    drop(tensor);
    assert_eq!(LEGACY_DELETES.load(Ordering::SeqCst), before + 1);
}

#[test]
fn legacy_export_round_trip() {
    let a = array![[1.0f32, 2.0], [3.0, 4.0]].reversed_axes();
    let tensor = ManagedTensor::from_array_legacy(a.clone()).unwrap();
    assert!(!tensor.is_versioned());
    assert_eq!(tensor.view().strides(), &[1, 2]);
    let raw = tensor.into_raw().legacy().unwrap();
    // SAFETY: our own legacy tensor, handed back once.
    let imported = unsafe { ManagedTensor::from_raw_legacy(raw) }.unwrap();
    assert_eq!(imported.view().as_array::<f32>().unwrap(), a.into_dyn());
}

#[test]
fn mutation_through_as_array_mut_is_visible() {
    let mut tensor = ManagedTensor::from_array(Array2::<i64>::zeros((2, 3))).unwrap();
    {
        let mut array = tensor.as_array_mut::<i64>().unwrap();
        array[[0, 1]] = 5;
        array.index_axis_mut(Axis(0), 1).assign(&array![7, 8, 9]);
    }
    assert_eq!(
        tensor.view().as_slice::<i64>().unwrap(),
        &[0, 5, 0, 7, 8, 9]
    );

    // Transposed: writes land at the transposed places.
    let mut tensor = Export::new(vec![0u8; 6], &[3, 2])
        .strides(&[1, 3])
        .into_versioned()
        .unwrap();
    tensor.as_array_mut::<u8>().unwrap()[[2, 0]] = 1;
    assert_eq!(
        tensor.view().as_slice_memory_order::<u8>().unwrap(),
        &[0, 0, 1, 0, 0, 0]
    );
}

#[test]
fn read_only_tensors_refuse_mutable_views() {
    let mut tensor = Export::new(vec![1.0f32, 2.0], &[2])
        .read_only(true)
        .into_versioned()
        .unwrap();
    assert_eq!(
        tensor.as_array_mut::<f32>().unwrap_err(),
        Error::ReadOnly {
            flags: Flags::READ_ONLY
        }
    );
    assert_eq!(
        tensor.view().as_array::<f32>().unwrap(),
        array![1.0f32, 2.0].into_dyn()
    );
}

#[test]
fn overlapping_layouts_refuse_mutable_views() {
    let mut tensor = Export::new(vec![1u16, 2, 3], &[2, 3])
        .strides(&[0, 1])
        .into_versioned()
        .unwrap();
    assert_eq!(
        tensor.as_array_mut::<u16>().unwrap_err(),
        Error::OverlappingLayout {
            shape: vec![2, 3],
            strides: vec![0, 1]
        }
    );
    // Reading a broadcast layout is fine.
    let array = tensor.view().as_array::<u16>().unwrap();
    assert_eq!(array, array![[1u16, 2, 3], [1, 2, 3]].into_dyn());
    assert_eq!(array.strides(), &[0, 1]);
}

#[test]
fn typed_checks_apply_to_views() {
    let tensor = ManagedTensor::from_array(array![1.0f32, 2.0]).unwrap();
    assert_eq!(
        tensor.view().as_array::<f64>().unwrap_err(),
        Error::DataTypeMismatch {
            requested: DataType::FLOAT64,
            actual: DataType::FLOAT32
        }
    );

    // Bytes 0, 1, 2 claimed to be bools: 2 is not one.
    let mut bytes = vec![0u8, 1, 2];
    let data = bytes.as_mut_ptr().cast();
    // SAFETY: the Vec holds the three bytes for as long as it lives.
    let mut tensor =
        unsafe { Export::from_raw_parts(bytes, data, DataType::BOOL, Device::CPU, &[3]) }
            .into_versioned()
            .unwrap();
    assert_eq!(
        tensor.view().as_array::<bool>().unwrap_err(),
        Error::InvalidBool {
            offset: 2,
            value: 2
        }
    );
    assert_eq!(
        tensor.as_array_mut::<bool>().unwrap_err(),
        Error::InvalidBool {
            offset: 2,
            value: 2
        }
    );

    // A float32 tensor one byte into a buffer is misaligned.
    let mut words = vec![0u32; 3];
    let data = words.as_mut_ptr().cast::<u8>().wrapping_add(1).cast();
    // SAFETY: the two floats from byte 1 lie inside the Vec's 12 bytes.
    let tensor =
        unsafe { Export::from_raw_parts(words, data, DataType::FLOAT32, Device::CPU, &[2]) }
            .into_versioned()
            .unwrap();
    assert!(matches!(
        tensor.view().as_array::<f32>().unwrap_err(),
        Error::Misaligned { align: 4, .. }
    ));

    // Device memory is never dereferenced.
    let cuda = Device::new(DeviceType::CUDA, 0);
    // SAFETY: nothing reads device memory; the address is never dereferenced.
    let tensor = unsafe {
        Export::from_raw_parts(
            (),
            NonNull::<f32>::dangling().as_ptr().cast(),
            DataType::FLOAT32,
            cuda,
            &[4],
        )
    }
    .into_versioned()
    .unwrap();
    assert_eq!(
        tensor.view().as_array::<f32>().unwrap_err(),
        Error::NotHostReadable { device: cuda }
    );
}

#[test]
fn arc_arrays_export_writable_only_when_unique() {
    let unique = ArcArray::from_shape_vec((2, 2), vec![1i32, 2, 3, 4]).unwrap();
    let first = unique.as_ptr();
    let mut tensor = ManagedTensor::from_arc_array(unique).unwrap();
    assert_eq!(tensor.view().flags(), Flags::NONE);
    assert_eq!(tensor.view().data_ptr() as *const i32, first);
    tensor.as_array_mut::<i32>().unwrap()[[1, 1]] = 40;
    assert_eq!(tensor.view().as_slice::<i32>().unwrap(), &[1, 2, 3, 40]);

    let shared = ArcArray::from_shape_vec((2, 2), vec![1i32, 2, 3, 4]).unwrap();
    let mut other = shared.clone();
    let first = shared.as_ptr();
    let mut tensor = ManagedTensor::from_arc_array(shared).unwrap();
    assert_eq!(tensor.view().flags(), Flags::READ_ONLY);
    // Not unshared: the tensor views the very memory of the other clone.
    assert_eq!(tensor.view().data_ptr() as *const i32, first);
    assert_eq!(other.as_ptr(), first);
    assert!(matches!(
        tensor.as_array_mut::<i32>().unwrap_err(),
        Error::ReadOnly { .. }
    ));
    assert_eq!(
        ManagedTensor::from_arc_array(other.clone())
            .unwrap()
            .view()
            .flags(),
        Flags::READ_ONLY
    );
    // The other clone copies before it writes; the tensor is unaffected.
    other[[0, 0]] = 100;
    assert_ne!(other.as_ptr(), first);
    assert_eq!(tensor.view().as_slice::<i32>().unwrap(), &[1, 2, 3, 4]);
    drop(tensor);
    assert!(other.is_unique());
}

#[test]
fn sliced_arc_arrays_keep_their_owner_alive() {
    let base = ArcArray::from_shape_vec((3, 4), (0..12).collect::<Vec<i64>>()).unwrap();
    let keep = base.clone();
    let view = base.slice_move(s![1.., ..;-1]);
    let first = view.as_ptr();
    let tensor = ManagedTensor::from_arc_array(view.clone()).unwrap();
    assert_eq!(tensor.view().flags(), Flags::READ_ONLY);
    assert_eq!(tensor.view().shape(), &[2, 4]);
    assert_eq!(tensor.view().strides(), &[4, -1]);
    assert_eq!(tensor.view().data_ptr() as *const i64, first);
    assert_eq!(
        tensor.view().as_array::<i64>().unwrap(),
        array![[7i64, 6, 5, 4], [11, 10, 9, 8]].into_dyn()
    );
    drop(view);
    drop(keep);
    // The tensor's clone is now the only owner and still reads the same memory.
    assert_eq!(
        tensor.view().elements::<i64>().unwrap().to_vec(),
        [7, 6, 5, 4, 11, 10, 9, 8]
    );
    drop(tensor);

    // Unique, transposed and reversed: writable, writes reach the right elements.
    let base = ArcArray::from_shape_vec((2, 3), (0..6).collect::<Vec<u8>>()).unwrap();
    let keep_count = base.clone();
    drop(keep_count);
    let mut tensor =
        ManagedTensor::from_arc_array(base.reversed_axes().slice_move(s![..;-1, ..])).unwrap();
    assert_eq!(tensor.view().flags(), Flags::NONE);
    assert_eq!(tensor.view().strides(), &[-1, 3]);
    tensor.as_array_mut::<u8>().unwrap()[[0, 1]] = 50;
    assert_eq!(
        tensor.view().as_array::<u8>().unwrap(),
        array![[2u8, 50], [1, 4], [0, 3]].into_dyn()
    );
}

#[test]
fn arc_array_owner_is_released_exactly_once() {
    let shared = ArcArray::from_elem((2, 3), 1.5f64);
    let tensor = ManagedTensor::from_arc_array(shared.clone()).unwrap();
    assert!(!shared.is_unique());
    let raw = tensor.into_raw();
    assert!(!shared.is_unique());
    // SAFETY: our own tensor, handed back once.
    let tensor = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    drop(tensor);
    assert!(shared.is_unique());
}

#[test]
fn views_export_with_their_owner() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    struct Owner {
        _buffer: Arc<[f32]>,
    }
    impl Drop for Owner {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::SeqCst);
        }
    }
    let buffer: Arc<[f32]> = (0..6).map(|i| i as f32).collect();
    let watch = Arc::clone(&buffer);
    // SAFETY: the Arc's six floats, never written, live as long as the Arc.
    let view = unsafe { ArrayView::from_shape_ptr((2, 3), buffer.as_ptr()) };
    let view = view.slice_move(s![..;-1, ..]).reversed_axes();
    let expected = view.to_owned().into_dyn();
    // SAFETY: `Owner` keeps the Arc, and so the viewed memory, alive; nobody writes it.
    let mut tensor =
        unsafe { ManagedTensor::from_array_view(view, Owner { _buffer: buffer }) }.unwrap();
    assert_eq!(tensor.view().flags(), Flags::READ_ONLY);
    assert_eq!(tensor.view().shape(), &[3, 2]);
    assert_eq!(tensor.view().strides(), &[1, -3]);
    assert_eq!(tensor.view().as_array::<f32>().unwrap(), expected);
    assert!(matches!(
        tensor.as_array_mut::<f32>().unwrap_err(),
        Error::ReadOnly { .. }
    ));
    assert_eq!(Arc::strong_count(&watch), 2);
    assert_eq!(DROPS.load(Ordering::SeqCst), 0);
    drop(tensor);
    assert_eq!(DROPS.load(Ordering::SeqCst), 1);
    assert_eq!(Arc::strong_count(&watch), 1);
}

#[test]
fn owned_array_export_is_freed_by_its_deleter() {
    let a = Array2::from_shape_vec((2, 2), vec![1i32, 2, 3, 4]).unwrap();
    let buffer = a.as_ptr().cast::<u8>();
    let tensor = ManagedTensor::from_array(a).unwrap();
    // The export moved the array, buffer and all: it views the same memory.
    assert_eq!(tensor.view().data_ptr().cast_const().cast::<u8>(), buffer);
    let raw = tensor.into_raw().versioned().unwrap();
    let block = raw.cast_const().cast::<u8>();
    // The deleter frees the array's buffer and the export's block, each exactly once.
    let freed = crate::alloc_watch::frees([buffer, block], || {
        // SAFETY: our own tensor; its deleter runs once here and it is not used afterwards.
        unsafe {
            let deleter = (*raw).deleter.unwrap();
            deleter(raw);
        }
    });
    assert_eq!(freed, [1, 1], "frees of [the array's buffer, the block]");
}
