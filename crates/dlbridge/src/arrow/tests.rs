//! Tests of the Arrow bridge: zero copy (pointers equal both ways), the deleter run exactly
//! once whichever reference goes last and on whichever thread, value round trips for every
//! supported type, every refusal with its error, sliced arrays, empty tensors, and the
//! permutation of `arrow.fixed_shape_tensor` both ways.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ::arrow_array::types::{
    Date32Type, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use ::arrow_array::{
    Array, Date32Array, Decimal128Array, Float32Array, Int32Array, StringArray,
    TimestampSecondArray, UInt8Array,
};
use ::arrow_buffer::NullBuffer;
use ::arrow_schema::extension::{EXTENSION_TYPE_METADATA_KEY, EXTENSION_TYPE_NAME_KEY};
use half::{bf16, f16};
use num_complex::Complex;

use super::*;
use crate::element::Element;
use crate::ffi::DLManagedTensorVersioned;
use crate::ffi::DLTensor;
use crate::{DeviceType, Flags};

/// An owner that counts its drops: the deleter of an export ran once it is 1.
struct Counted<T> {
    _values: Vec<T>,
    drops: Arc<AtomicUsize>,
}

impl<T> Drop for Counted<T> {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// Exports `values` (as `dtype` on `device`, with `shape` and `strides`, row-major without)
/// with an owner that counts its drops; returns the tensor, the counter and the first value.
fn counted_as<T: Element>(
    values: Vec<T>,
    dtype: DataType,
    device: Device,
    shape: &[usize],
    strides: Option<&[i64]>,
) -> (ManagedTensor, Arc<AtomicUsize>, *const T) {
    let drops = Arc::new(AtomicUsize::new(0));
    let data = values.as_ptr();
    let owner = Counted {
        _values: values,
        drops: Arc::clone(&drops),
    };
    // SAFETY: the Vec, moved into the owner (which does not move its heap memory), holds
    // initialised values that every layout used here stays within; nothing else writes them.
    let export =
        unsafe { Export::from_raw_parts(owner, data.cast_mut().cast(), dtype, device, shape) };
    let export = match strides {
        Some(strides) => export.strides(strides),
        None => export,
    };
    (export.into_versioned().unwrap(), drops, data)
}

/// [`counted_as`] with `T`'s own data type, on the CPU.
fn counted<T: Element>(
    values: Vec<T>,
    shape: &[usize],
    strides: Option<&[i64]>,
) -> (ManagedTensor, Arc<AtomicUsize>, *const T) {
    counted_as(values, T::DTYPE, Device::CPU, shape, strides)
}

fn drops(counter: &AtomicUsize) -> usize {
    counter.load(Ordering::SeqCst)
}

/// The `given` of an [`Error::Unrepresentable`] from this bridge, or a panic.
fn given(error: Error) -> String {
    match error {
        Error::Unrepresentable {
            library: "arrow",
            given,
            ..
        } => given,
        other => panic!("expected an Unrepresentable error of arrow, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Buffers
// ---------------------------------------------------------------------------------------

#[test]
fn buffer_is_the_tensor_memory_and_owns_it() {
    let (tensor, counter, data) = counted(vec![1u32, 2, 3, 4, 5, 6], &[2, 3], None);
    let buffer = tensor.into_arrow_buffer().unwrap();
    assert_eq!(buffer.as_ptr(), data.cast::<u8>());
    assert_eq!(buffer.len(), 24);
    assert_eq!(buffer.typed_data::<u32>(), &[1, 2, 3, 4, 5, 6]);

    let slice = buffer.slice_with_length(4, 8);
    let clone = buffer.clone();
    drop(buffer);
    assert_eq!(drops(&counter), 0);
    drop(clone);
    assert_eq!(drops(&counter), 0);
    assert_eq!(slice.typed_data::<u32>(), &[2, 3]);
    drop(slice);
    assert_eq!(drops(&counter), 1);
}

#[test]
fn buffer_dropped_on_another_thread_releases_the_tensor_once() {
    let (tensor, counter, _) = counted(vec![1.0f64; 16], &[4, 4], None);
    let buffer = tensor.into_arrow_buffer().unwrap();
    let kept = buffer.clone();
    std::thread::spawn(move || drop(buffer)).join().unwrap();
    assert_eq!(drops(&counter), 0);
    std::thread::spawn(move || {
        assert_eq!(kept.len(), 128);
        drop(kept);
    })
    .join()
    .unwrap();
    assert_eq!(drops(&counter), 1);
}

#[test]
fn empty_tensor_gives_an_empty_buffer_that_owns_it() {
    let (tensor, counter, _) = counted(Vec::<i64>::new(), &[3, 0], None);
    let buffer = tensor.into_arrow_buffer().unwrap();
    assert!(buffer.is_empty());
    assert_eq!(buffer.as_slice(), &[] as &[u8]);
    assert_eq!(drops(&counter), 0);
    drop(buffer);
    assert_eq!(drops(&counter), 1);
}

#[test]
fn buffer_takes_any_whole_byte_type() {
    let flags = Export::new(vec![true, false, true], &[3])
        .into_versioned()
        .unwrap();
    assert_eq!(flags.into_arrow_buffer().unwrap().as_slice(), &[1, 0, 1]);
    let complex = Export::new(vec![Complex::new(1.0f32, 2.0)], &[1])
        .into_versioned()
        .unwrap();
    assert_eq!(
        complex.into_arrow_buffer().unwrap().typed_data::<f32>(),
        &[1.0, 2.0]
    );
    let (vectors, _, data) = counted_as(
        vec![1u8, 2, 3, 4, 5, 6, 7, 8],
        DataType::UINT8.with_lanes(4),
        Device::CPU,
        &[2],
        None,
    );
    let buffer = vectors.into_arrow_buffer().unwrap();
    assert_eq!((buffer.as_ptr(), buffer.len()), (data, 8));
}

#[test]
fn buffer_refuses_what_it_cannot_hold() {
    // Transposed: not C-contiguous.
    let (tensor, counter, _) = counted(vec![0u8; 6], &[2, 3], Some(&[1, 2]));
    assert_eq!(
        tensor.into_arrow_buffer().unwrap_err(),
        Error::NotContiguous {
            order: "C",
            shape: vec![2, 3],
            strides: vec![1, 2],
        }
    );
    assert_eq!(drops(&counter), 1, "a refused tensor is dropped once");

    let cuda = Device::new(DeviceType::CUDA, 0);
    let (tensor, counter, _) = counted_as(vec![0f32; 4], DataType::FLOAT32, cuda, &[4], None);
    assert_eq!(
        tensor.into_arrow_buffer().unwrap_err(),
        Error::NotHostReadable { device: cuda }
    );
    assert_eq!(drops(&counter), 1);

    let (tensor, _, _) = counted_as(
        vec![0u8; 2],
        DataType::FLOAT4_E2M1FN,
        Device::CPU,
        &[4],
        None,
    );
    let error = tensor.into_arrow_buffer().unwrap_err();
    assert_eq!(
        error.to_string(),
        "arrow cannot express an Arrow buffer of float4_e2m1fn elements: sub-byte elements \
         share bytes"
    );
}

/// The descriptor of a float32 tensor whose first element is one byte into `storage` (no
/// deleter): the caller keeps it in place and imports it with [`import_misaligned`].
fn misaligned_descriptor(
    storage: &mut [u32; 4],
    shape: &mut [i64],
    strides: &mut [i64],
) -> DLManagedTensorVersioned {
    DLManagedTensorVersioned {
        version: crate::Version::CURRENT,
        manager_ctx: std::ptr::null_mut(),
        deleter: None,
        flags: 0,
        dl_tensor: DLTensor {
            data: storage.as_mut_ptr().cast(),
            device: Device::CPU,
            ndim: shape.len() as i32,
            dtype: DataType::FLOAT32,
            shape: shape.as_mut_ptr(),
            strides: strides.as_mut_ptr(),
            byte_offset: 1,
        },
    }
}

/// Imports a descriptor of [`misaligned_descriptor`].
fn import_misaligned(managed: &mut DLManagedTensorVersioned) -> ManagedTensor {
    // SAFETY: a live tensor without a deleter; shape and strides hold ndim values; the
    // storage (16 bytes) holds every byte the layout reaches from byte 1 (at most 8 bytes),
    // and it, the descriptor and the arrays stay in place and outlive the tensor in every
    // test.
    unsafe { ManagedTensor::from_raw_versioned(managed) }.unwrap()
}

#[test]
fn buffer_of_a_misaligned_tensor_starts_at_its_byte_offset() {
    let mut storage = [0u32; 4];
    let (mut shape, mut strides) = ([2i64], [1i64]);
    let address = storage.as_ptr().addr() + 1;
    let mut managed = misaligned_descriptor(&mut storage, &mut shape, &mut strides);
    let buffer = import_misaligned(&mut managed).into_arrow_buffer().unwrap();
    assert_eq!((buffer.as_ptr().addr(), buffer.len()), (address, 8));
    drop(buffer);
}

// ---------------------------------------------------------------------------------------
// Primitive arrays
// ---------------------------------------------------------------------------------------

/// Tensor -> array -> tensor, checking zero copy both ways and the values.
fn round_trip_array<T>(values: Vec<T::Native>)
where
    T: ArrowPrimitiveType,
    T::Native: Element + PartialEq + Debug,
{
    let expected = values.clone();
    let len = values.len();
    let (tensor, counter, data) = counted(values, &[len], None);
    let array = tensor.into_arrow_array::<T>().unwrap();
    assert_eq!(array.values().as_ptr(), data, "{}", T::DATA_TYPE);
    assert_eq!(array.values().as_ref(), expected.as_slice());
    assert_eq!((array.len(), array.null_count()), (len, 0));

    let back = ManagedTensor::from_arrow_array(&array).unwrap();
    let view = back.view();
    assert!(back.is_versioned());
    assert_eq!(view.flags(), Flags::READ_ONLY);
    assert_eq!(view.dtype(), <T::Native as Element>::DTYPE);
    assert_eq!(view.data_ptr().cast::<T::Native>().cast_const(), data);
    assert_eq!(view.as_slice::<T::Native>().unwrap(), expected.as_slice());
    drop(array);
    assert_eq!(
        drops(&counter),
        0,
        "the tensor from the array keeps it alive"
    );
    drop(back);
    assert_eq!(drops(&counter), 1);
}

#[test]
fn arrays_round_trip_every_supported_type() {
    round_trip_array::<Int8Type>(vec![i8::MIN, -1, 0, i8::MAX]);
    round_trip_array::<Int16Type>(vec![i16::MIN, 0, i16::MAX]);
    round_trip_array::<Int32Type>(vec![i32::MIN, 7, i32::MAX]);
    round_trip_array::<Int64Type>(vec![i64::MIN, -7, i64::MAX]);
    round_trip_array::<UInt8Type>(vec![0, 1, u8::MAX]);
    round_trip_array::<UInt16Type>(vec![0, u16::MAX]);
    round_trip_array::<UInt32Type>(vec![0, 3, u32::MAX]);
    round_trip_array::<UInt64Type>(vec![0, u64::MAX]);
    round_trip_array::<Float16Type>(vec![f16::from_f32(0.5), f16::NEG_INFINITY, f16::MAX]);
    round_trip_array::<Float32Type>(vec![1.5, -0.0, f32::MIN_POSITIVE]);
    round_trip_array::<Float64Type>(vec![std::f64::consts::PI, f64::MAX]);
    round_trip_array::<Float32Type>(vec![]);
}

#[test]
fn array_releases_the_tensor_once_with_its_last_reference() {
    let (tensor, counter, _) = counted(vec![1i64, 2, 3, 4], &[4], None);
    let array = tensor.into_arrow_array::<Int64Type>().unwrap();
    let sliced = array.slice(1, 2);
    drop(array);
    assert_eq!(drops(&counter), 0);
    assert_eq!(sliced.values().as_ref(), &[2, 3]);
    std::thread::spawn(move || drop(sliced)).join().unwrap();
    assert_eq!(drops(&counter), 1);
}

#[test]
fn empty_tensor_gives_an_empty_array() {
    let (tensor, counter, _) = counted(Vec::<u16>::new(), &[0], None);
    let array = tensor.into_arrow_array::<UInt16Type>().unwrap();
    assert!(array.is_empty());
    let back = ManagedTensor::from_arrow_array(&array).unwrap();
    assert_eq!(back.view().shape(), &[0]);
    assert_eq!(back.view().as_slice::<u16>().unwrap(), &[] as &[u16]);
    drop((array, back));
    assert_eq!(drops(&counter), 1);
}

#[test]
fn arrays_refuse_types_arrow_lacks() {
    let refused =
        |tensor: ManagedTensor| given(tensor.into_arrow_array::<UInt8Type>().unwrap_err());
    let bools = Export::new(vec![true, false], &[2])
        .into_versioned()
        .unwrap();
    assert_eq!(
        refused(bools),
        "bool elements: Arrow's Boolean arrays store one bit per value where DLPack's bool \
         takes a byte"
    );
    let bf = Export::new(vec![bf16::ONE], &[1]).into_versioned().unwrap();
    assert_eq!(refused(bf), "bfloat16 elements: Arrow has no bfloat16 type");
    let complex = Export::new(vec![Complex::new(1.0f64, 0.0)], &[1])
        .into_versioned()
        .unwrap();
    assert_eq!(
        refused(complex),
        "complex128 elements: Arrow has no complex type"
    );
    let (float8, _, _) = counted_as(
        vec![0u8; 2],
        DataType::FLOAT8_E4M3FN,
        Device::CPU,
        &[2],
        None,
    );
    assert_eq!(
        refused(float8),
        "float8_e4m3fn elements: Arrow has no 8-bit float types"
    );
    let (int4, _, _) = counted_as(vec![0u8; 1], DataType::int(4), Device::CPU, &[2], None);
    assert_eq!(refused(int4), "int4 elements: Arrow has no sub-byte types");
    let (lanes, _, _) = counted_as(
        vec![0u8; 8],
        DataType::UINT8.with_lanes(4),
        Device::CPU,
        &[2],
        None,
    );
    assert_eq!(
        refused(lanes),
        "uint8x4 elements: Arrow has no vector types (lanes > 1)"
    );

    // An Arrow type without a DLPack type.
    let ints = Export::new(vec![1i32], &[1]).into_versioned().unwrap();
    let error = ints.into_arrow_array::<Date32Type>().unwrap_err();
    assert!(given(error).starts_with("Date32 values: DLPack has no such type"));
}

#[test]
fn arrays_refuse_other_layouts_devices_and_types() {
    let ints = Export::new(vec![1i32, 2], &[2]).into_versioned().unwrap();
    assert_eq!(
        ints.into_arrow_array::<Int64Type>().unwrap_err(),
        Error::DataTypeMismatch {
            requested: DataType::INT64,
            actual: DataType::INT32,
        }
    );
    let matrix = Export::new(vec![1i32, 2], &[1, 2])
        .into_versioned()
        .unwrap();
    assert_eq!(
        matrix.into_arrow_array::<Int32Type>().unwrap_err(),
        Error::DimensionalityMismatch {
            expected: 1,
            actual: 2,
        }
    );
    let (strided, counter, _) = counted(vec![1i32, 2, 3, 4], &[2], Some(&[2]));
    assert_eq!(
        strided.into_arrow_array::<Int32Type>().unwrap_err(),
        Error::NotContiguous {
            order: "C",
            shape: vec![2],
            strides: vec![2],
        }
    );
    assert_eq!(drops(&counter), 1);
    let cuda = Device::new(DeviceType::CUDA, 1);
    let (device, _, _) = counted_as(vec![0i32; 2], DataType::INT32, cuda, &[2], None);
    assert_eq!(
        device.into_arrow_array::<Int32Type>().unwrap_err(),
        Error::NotHostReadable { device: cuda }
    );
}

#[test]
fn arrays_refuse_a_misaligned_byte_offset() {
    let mut storage = [0u32; 4];
    let (mut shape, mut strides) = ([2i64], [1i64]);
    let address = storage.as_ptr().addr() + 1;
    let mut managed = misaligned_descriptor(&mut storage, &mut shape, &mut strides);
    assert_eq!(
        import_misaligned(&mut managed)
            .into_arrow_array::<Float32Type>()
            .unwrap_err(),
        Error::Misaligned { address, align: 4 }
    );

    let mut storage = [0u32; 4];
    let (mut shape, mut strides) = ([1i64, 2], [2i64, 1]);
    let mut managed = misaligned_descriptor(&mut storage, &mut shape, &mut strides);
    assert!(matches!(
        import_misaligned(&mut managed)
            .into_fixed_shape_tensor()
            .unwrap_err(),
        Error::Misaligned { align: 4, .. }
    ));
}

#[test]
fn tensor_from_a_sliced_array_starts_at_its_offset() {
    let array = Float32Array::from(vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let base = array.values().as_ptr();
    let sliced = array.slice(2, 3);
    let tensor = ManagedTensor::from_arrow_array(&sliced).unwrap();
    let view = tensor.view();
    assert_eq!(
        view.data_ptr().cast::<f32>().cast_const(),
        base.wrapping_add(2)
    );
    assert_eq!((view.shape(), view.strides()), (&[3i64][..], &[1i64][..]));
    assert_eq!(view.as_slice::<f32>().unwrap(), &[2.0, 3.0, 4.0]);
}

#[test]
fn exports_of_arrow_values_are_bounded_by_the_values() {
    // Issue 47: every layout exported over Arrow values is bounded by the values' length
    // (`with_buffer_len`), a sliced array's included, whatever the buffer behind them holds.
    let array = Int32Array::from(vec![0, 1, 2, 3, 4, 5]);
    let sliced = array.slice(2, 3);
    for (shape, strides, min_offset, max_offset) in [
        (&[4usize][..], &[1i64][..], 0, 3),
        (&[2, 2], &[2, 1], 0, 3),
        (&[2], &[-1], -1, 0),
        (&[1usize << 40], &[1], 0, (1 << 40) - 1),
    ] {
        let parts = ArrayParts::of(&sliced).unwrap();
        assert_eq!(
            export_parts(parts, shape, strides).unwrap_err(),
            Error::OutOfBounds {
                min_offset,
                max_offset,
                buffer_len: 3,
            }
        );
    }
    let parts = ArrayParts::of(&sliced).unwrap();
    let fits = export_parts(parts, &[3], &[1]).unwrap();
    assert_eq!(fits.view().as_slice::<i32>().unwrap(), &[2, 3, 4]);
}

#[test]
fn tensor_from_an_array_holds_one_reference_to_its_buffer() {
    let array = Int32Array::from(vec![1, 2, 3]);
    let before = array.values().inner().strong_count();
    let tensor = ManagedTensor::from_arrow_array(&array).unwrap();
    assert_eq!(array.values().inner().strong_count(), before + 1);
    // The tensor may travel and be dropped anywhere.
    std::thread::spawn(move || {
        assert_eq!(tensor.view().as_slice::<i32>().unwrap(), &[1, 2, 3]);
    })
    .join()
    .unwrap();
    assert_eq!(array.values().inner().strong_count(), before);
    // Writing through the tensor is refused: Arrow buffers are shared.
    let mut tensor = ManagedTensor::from_arrow_array(&array).unwrap();
    assert!(matches!(
        tensor.as_mut_slice::<i32>().unwrap_err(),
        Error::ReadOnly { .. }
    ));
}

#[test]
fn arrays_with_nulls_are_refused() {
    let with_nulls = Int32Array::from(vec![Some(1), None, Some(3)]);
    assert_eq!(
        given(ManagedTensor::from_arrow_array(&with_nulls).unwrap_err()),
        "Int32 values with 1 nulls: DLPack has no validity bitmap (fill them first)"
    );
    // A slice without the null, and a validity bitmap without nulls, are fine.
    let tensor = ManagedTensor::from_arrow_array(&with_nulls.slice(2, 1)).unwrap();
    assert_eq!(tensor.view().as_slice::<i32>().unwrap(), &[3]);
    let all_valid = UInt8Array::new(vec![1, 2].into(), Some(NullBuffer::new_valid(2)));
    let tensor = ManagedTensor::from_arrow_array(&all_valid).unwrap();
    assert_eq!(tensor.view().as_slice::<u8>().unwrap(), &[1, 2]);
}

#[test]
fn arrow_types_without_a_dlpack_type_are_refused() {
    let dates = Date32Array::from(vec![1, 2]);
    let error = given(ManagedTensor::from_arrow_array(&dates).unwrap_err());
    assert!(error.contains("reinterpret_cast"), "{error}");
    // ...which gives the integers.
    let days = ManagedTensor::from_arrow_array(&dates.reinterpret_cast::<Int32Type>()).unwrap();
    assert_eq!(days.view().as_slice::<i32>().unwrap(), &[1, 2]);

    let seconds = TimestampSecondArray::from(vec![1, 2]);
    let error = given(ManagedTensor::from_arrow_array(&seconds).unwrap_err());
    assert!(error.contains("Timestamp"), "{error}");
    let decimals = Decimal128Array::from(vec![1i128, 2]);
    assert_eq!(
        given(ManagedTensor::from_arrow_array(&decimals).unwrap_err()),
        "Decimal128(38, 10) values: DLPack has no such type"
    );
}

// ---------------------------------------------------------------------------------------
// arrow.fixed_shape_tensor
// ---------------------------------------------------------------------------------------

/// The extension type of a column this bridge made, read as the bridge reads it (arrow-rs's
/// `try_extension_type` knows no key `"permutation"`: see the module docs).
fn extension_of(field: &Field) -> FixedShapeTensor {
    let metadata = fixed_shape_metadata(field).unwrap();
    let ArrowType::FixedSizeList(item, _) = field.data_type() else {
        panic!("not a list field: {field:?}");
    };
    FixedShapeTensor::try_new(
        item.data_type().clone(),
        metadata.shape().to_vec(),
        metadata.dimension_names().map(<[String]>::to_vec),
        metadata.permutations().map(<[usize]>::to_vec),
    )
    .unwrap()
}

/// The first value of a column's values, as `T`.
fn values_ptr<T: ArrowPrimitiveType>(array: &FixedSizeListArray) -> *const T::Native {
    array.values().as_primitive::<T>().values().as_ptr()
}

#[test]
fn c_contiguous_tensor_is_a_column_without_permutation() {
    let values: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let (tensor, counter, data) = counted(values, &[2, 3, 4], None);
    let (field, array) = tensor.into_fixed_shape_tensor().unwrap();
    assert_eq!(field.name(), "tensor");
    assert!(!field.is_nullable());
    assert_eq!(
        field.extension_type_name(),
        Some("arrow.fixed_shape_tensor")
    );
    assert_eq!(field.extension_type_metadata(), Some(r#"{"shape":[3,4]}"#));
    // Without a permutation, arrow-rs reads the column itself too.
    let arrow_rs = field.try_extension_type::<FixedShapeTensor>().unwrap();
    assert_eq!(arrow_rs, extension_of(&field));
    let extension = extension_of(&field);
    assert_eq!(extension.shape(), &[3, 4]);
    assert_eq!(extension.permutations(), None);
    assert_eq!(extension.logical_shape(), [3, 4]);
    assert_eq!(extension.value_type(), &ArrowType::Float32);
    assert_eq!((array.len(), array.value_length()), (2, 12));
    assert_eq!(array.null_count(), 0);
    assert_eq!(values_ptr::<Float32Type>(&array), data);
    assert_eq!(
        array.value(1).as_primitive::<Float32Type>().values()[0],
        12.0
    );

    let back = ManagedTensor::from_fixed_shape_tensor(&field, &array).unwrap();
    let view = back.view();
    assert_eq!(view.data_ptr().cast::<f32>().cast_const(), data);
    assert_eq!(
        (view.shape(), view.strides()),
        (&[2i64, 3, 4][..], &[12i64, 4, 1][..])
    );
    assert_eq!(view.flags(), Flags::READ_ONLY);
    assert!(back.is_versioned());
    drop((field, array));
    assert_eq!(drops(&counter), 0);
    std::thread::spawn(move || drop(back)).join().unwrap();
    assert_eq!(drops(&counter), 1);
}

#[test]
fn column_major_rows_export_a_permutation() {
    // Two 2x3 matrices, each column-major: element [b, i, j] at b * 6 + i + 2 * j.
    let values: Vec<i32> = (0..12).collect();
    let (tensor, _, data) = counted(values, &[2, 2, 3], Some(&[6, 1, 2]));
    let expected = tensor.view().elements::<i32>().unwrap().to_vec();
    let (field, array) = tensor.into_fixed_shape_tensor().unwrap();
    assert_eq!(
        field.extension_type_metadata(),
        Some(r#"{"shape":[3,2],"permutation":[1,0]}"#)
    );
    let extension = extension_of(&field);
    assert_eq!(extension.shape(), &[3, 2]);
    assert_eq!(extension.permutations(), Some(&[1, 0][..]));
    assert_eq!(extension.logical_shape(), [2, 3]);
    assert_eq!(values_ptr::<Int32Type>(&array), data);

    let back = ManagedTensor::from_fixed_shape_tensor(&field, &array).unwrap();
    let view = back.view();
    assert_eq!(
        (view.shape(), view.strides()),
        (&[2i64, 2, 3][..], &[6i64, 1, 2][..])
    );
    assert_eq!(view.elements::<i32>().unwrap().to_vec(), expected);
}

/// The specification's example: physical shape [2, 3, 4] (here), permutation [2, 0, 1],
/// logical shape [4, 2, 3]; logical index (i, j, k) is physical index (j, k, i).
#[test]
fn permutation_metadata_becomes_strides_and_back() {
    let extension =
        FixedShapeTensor::try_new(ArrowType::Int32, [2, 3, 4], None, Some(vec![2, 0, 1])).unwrap();
    assert_eq!(extension.logical_shape(), [4, 2, 3]);
    let values = Int32Array::from((0..48).collect::<Vec<i32>>());
    let base = values.values().as_ptr();
    let item = Arc::new(Field::new("item", ArrowType::Int32, false));
    let array = FixedSizeListArray::try_new(item, 24, Arc::new(values), None).unwrap();
    let field = Field::new("t", array.data_type().clone(), false).with_extension_type(extension);

    let tensor = ManagedTensor::from_fixed_shape_tensor(&field, &array).unwrap();
    let view = tensor.view();
    assert_eq!(view.shape(), &[2, 4, 2, 3]);
    assert_eq!(view.strides(), &[24, 1, 12, 4]);
    assert_eq!(view.data_ptr().cast::<i32>().cast_const(), base);
    let elements = view.elements::<i32>().unwrap();
    for (b, i, j, k) in (0..2).flat_map(|b| {
        (0..4).flat_map(move |i| (0..2).flat_map(move |j| (0..3).map(move |k| (b, i, j, k))))
    }) {
        let physical = (b * 24 + j * 12 + k * 4 + i) as i32;
        assert_eq!(elements.get(&[b, i, j, k]), Some(&physical));
    }

    // Exported again, the same physical shape and permutation.
    let (field, again) = tensor.into_fixed_shape_tensor().unwrap();
    let extension = extension_of(&field);
    assert_eq!(extension.shape(), &[2, 3, 4]);
    assert_eq!(extension.permutations(), Some(&[2, 0, 1][..]));
    assert_eq!(extension.logical_shape(), [4, 2, 3]);
    assert_eq!(values_ptr::<Int32Type>(&again), base);
}

#[test]
fn extent_one_axes_in_permuted_rows() {
    // [batch 2, 3, 1, 4] with column-major rows: the axis of extent 1 may carry any stride.
    let values: Vec<u16> = (0..24).collect();
    let (tensor, _, _) = counted(values, &[2, 3, 1, 4], Some(&[12, 1, 99, 3]));
    let expected = tensor.view().elements::<u16>().unwrap().to_vec();
    let (field, array) = tensor.into_fixed_shape_tensor().unwrap();
    let extension = extension_of(&field);
    assert_eq!(extension.logical_shape(), [3, 1, 4]);
    assert_eq!(extension.list_size(), 12);
    let back = ManagedTensor::from_fixed_shape_tensor(&field, &array).unwrap();
    assert_eq!(back.view().shape(), &[2, 3, 1, 4]);
    assert_eq!(back.view().elements::<u16>().unwrap().to_vec(), expected);

    // One row: its batch stride means nothing either.
    let (tensor, _, _) = counted(vec![0u8; 6], &[1, 2, 3], Some(&[1000, 1, 2]));
    let (field, _) = tensor.into_fixed_shape_tensor().unwrap();
    assert_eq!(extension_of(&field).permutations(), Some(&[1, 0][..]));
}

#[test]
fn sliced_columns_start_at_their_first_list() {
    let values: Vec<f64> = (0..30).map(f64::from).collect();
    let (tensor, _, data) = counted(values, &[5, 2, 3], None);
    let (field, array) = tensor.into_fixed_shape_tensor().unwrap();
    let sliced = array.slice(3, 2);
    let back = ManagedTensor::from_fixed_shape_tensor(&field, &sliced).unwrap();
    let view = back.view();
    assert_eq!(view.shape(), &[2, 2, 3]);
    assert_eq!(
        view.data_ptr().cast::<f64>().cast_const(),
        data.wrapping_add(18)
    );
    assert_eq!(view.as_slice::<f64>().unwrap()[0], 18.0);
}

#[test]
fn empty_columns() {
    // No rows.
    let (tensor, counter, _) = counted(Vec::<i8>::new(), &[0, 2, 2], None);
    let (field, array) = tensor.into_fixed_shape_tensor().unwrap();
    assert_eq!((array.len(), array.value_length()), (0, 4));
    let back = ManagedTensor::from_fixed_shape_tensor(&field, &array).unwrap();
    assert_eq!(back.view().shape(), &[0, 2, 2]);
    drop((field, array, back));
    assert_eq!(drops(&counter), 1);

    // Rows of no elements (a degenerate list size of 0).
    let (tensor, _, _) = counted(Vec::<i8>::new(), &[3, 0, 2], None);
    let (field, array) = tensor.into_fixed_shape_tensor().unwrap();
    assert_eq!((array.len(), array.value_length()), (3, 0));
    let back = ManagedTensor::from_fixed_shape_tensor(&field, &array).unwrap();
    assert_eq!(back.view().shape(), &[3, 0, 2]);
}

#[test]
fn columns_refuse_what_arrow_cannot_say() {
    let refused = |tensor: ManagedTensor| given(tensor.into_fixed_shape_tensor().unwrap_err());
    let vector = Export::new(vec![1i32, 2], &[2]).into_versioned().unwrap();
    assert_eq!(
        refused(vector),
        "a tensor of 1 dimensions: the column needs a batch axis and at least one axis per \
         tensor"
    );
    let bools = Export::new(vec![true; 4], &[2, 2])
        .into_versioned()
        .unwrap();
    assert!(refused(bools).starts_with("bool elements"));

    // The batch axis innermost.
    let (batch_inner, counter, _) = counted(vec![0i32; 6], &[2, 3], Some(&[1, 2]));
    assert_eq!(
        refused(batch_inner),
        "a tensor of shape [2, 3] and strides [1, 2]: the elements of a row are not compact \
         in any axis order (padded, broadcast or reversed axes)"
    );
    assert_eq!(drops(&counter), 1);
    // Rows apart.
    let (padded, _, _) = counted(vec![0i32; 8], &[2, 3], Some(&[4, 1]));
    assert_eq!(
        refused(padded),
        "a tensor of shape [2, 3] and strides [4, 1]: the rows (axis 0) do not follow one \
         another in memory; Arrow lists must"
    );
    // Broadcast, reversed and padded rows.
    let (broadcast, _, _) = counted(vec![0i32; 2], &[2, 3], Some(&[1, 0]));
    assert!(refused(broadcast).contains("not compact in any axis order"));
    let (reversed, _, _) = counted(vec![0i32; 6], &[2, 3], Some(&[-3, 1]));
    assert!(refused(reversed).contains("do not follow one another"));
    let (reversed_row, _, _) = counted(vec![0i32; 6], &[2, 3], Some(&[3, -1]));
    assert!(refused(reversed_row).contains("not compact in any axis order"));
    let (gapped, _, _) = counted(vec![0i32; 12], &[2, 3], Some(&[6, 2]));
    assert!(refused(gapped).contains("not compact in any axis order"));

    let cuda = Device::new(DeviceType::CUDA, 0);
    let (device, _, _) = counted_as(vec![0f32; 4], DataType::FLOAT32, cuda, &[2, 2], None);
    assert_eq!(
        device.into_fixed_shape_tensor().unwrap_err(),
        Error::NotHostReadable { device: cuda }
    );
}

/// A field of `array`'s type with the given extension name and metadata.
fn field_with(array: &FixedSizeListArray, name: &str, metadata: &str) -> Field {
    Field::new("t", array.data_type().clone(), false).with_metadata(HashMap::from([
        (EXTENSION_TYPE_NAME_KEY.to_owned(), name.to_owned()),
        (EXTENSION_TYPE_METADATA_KEY.to_owned(), metadata.to_owned()),
    ]))
}

/// A column of `rows` lists of `size` int32 values (0, 1, 2...), with a nullable item field
/// (as pyarrow makes them).
fn int32_column(rows: usize, size: i32) -> FixedSizeListArray {
    let values = Int32Array::from((0..rows as i32 * size).collect::<Vec<_>>());
    let item = Arc::new(Field::new("item", ArrowType::Int32, true));
    FixedSizeListArray::try_new(item, size, Arc::new(values), None).unwrap()
}

#[test]
fn metadata_is_read_in_every_spelling() {
    let array = int32_column(2, 24);
    let read = |metadata: &str| {
        let field = field_with(&array, FixedShapeTensor::NAME, metadata);
        let tensor = ManagedTensor::from_fixed_shape_tensor(&field, &array).unwrap();
        let view = tensor.view();
        (view.shape().to_vec(), view.strides().to_vec())
    };
    let permuted = (vec![2, 4, 2, 3], vec![24, 1, 12, 4]);
    // The specification's (and pyarrow's) key, arrow-rs's, and arrow-rs's nulls.
    assert_eq!(
        read(r#"{"shape": [2, 3, 4], "permutation": [2, 0, 1]}"#),
        permuted
    );
    assert_eq!(
        read(r#"{"shape":[2,3,4],"permutations":[2,0,1]}"#),
        permuted
    );
    assert_eq!(
        read(r#"{"shape":[2,3,4],"dim_names":null,"permutations":[2,0,1]}"#),
        permuted
    );
    let plain = (vec![2, 2, 3, 4], vec![24, 12, 4, 1]);
    assert_eq!(
        read(r#"{"shape":[2,3,4],"dim_names":null,"permutations":null}"#),
        plain
    );
    assert_eq!(
        read(r#"{"shape":[2,3,4],"dim_names":["C","H","W"]}"#),
        plain
    );
    // A dimension named "permutation" is a value, not a key.
    assert_eq!(
        read(r#"{"shape":[2,12],"dim_names":["permutation","x"]}"#).0,
        [2, 2, 12]
    );

    // Fields that arrow-rs's own `with_extension_type` made.
    for (dim_names, permutation) in [
        (None, None),
        (
            Some(vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]),
            None,
        ),
        (None, Some(vec![2, 0, 1])),
    ] {
        let expected = if permutation.is_some() {
            &permuted
        } else {
            &plain
        };
        let extension =
            FixedShapeTensor::try_new(ArrowType::Int32, [2, 3, 4], dim_names, permutation).unwrap();
        let item = Arc::new(Field::new("item", ArrowType::Int32, false));
        let values = Arc::new(Int32Array::from((0..48).collect::<Vec<i32>>()));
        let array = FixedSizeListArray::try_new(item, 24, values, None).unwrap();
        let field =
            Field::new("t", array.data_type().clone(), false).with_extension_type(extension);
        let tensor = ManagedTensor::from_fixed_shape_tensor(&field, &array).unwrap();
        assert_eq!(tensor.view().shape(), expected.0);
        assert_eq!(tensor.view().strides(), expected.1);
    }
}

#[test]
fn metadata_keys_are_renamed_only_as_keys() {
    let json = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
    // Values named like the keys are left alone.
    for text in [
        r#"{"shape":[2,12],"dim_names":["permutation","x"]}"#,
        r#"{"dim_names":["a\"permutation\":"],"shape":[1]}"#,
        r#"{"shape":[1],"permutations":[0]}"#,
    ] {
        assert_eq!(json(&arrow_rs_metadata(text)), json(text));
    }
    // What is not a JSON object is passed on unchanged, for the deserialiser to refuse.
    for text in [r#"{"unterminated"#, "", "[1]", r#"{"dim_names":["é\"#] {
        assert_eq!(arrow_rs_metadata(text), text);
    }
    assert_eq!(
        json(&arrow_rs_metadata(
            r#"{"permutation" : [1,0],"shape":[1,1]}"#
        )),
        json(r#"{"permutations":[1,0],"shape":[1,1]}"#)
    );
    assert_eq!(
        json(&arrow_rs_metadata(
            r#"{"shape":[1],"dim_names": null,"permutation":null}"#
        )),
        json(r#"{"shape":[1],"dim_names":[],"permutations":[]}"#)
    );
}

#[test]
fn imports_refuse_fields_that_are_not_fixed_shape_tensors() {
    let array = int32_column(2, 6);
    let plain = Field::new("t", array.data_type().clone(), false);
    assert_eq!(
        given(ManagedTensor::from_fixed_shape_tensor(&plain, &array).unwrap_err()),
        "a field \"t\" without an extension type (arrow.fixed_shape_tensor expected)"
    );
    let other = field_with(&array, "arrow.uuid", "");
    assert_eq!(
        given(ManagedTensor::from_fixed_shape_tensor(&other, &array).unwrap_err()),
        "a field \"t\" of extension type arrow.uuid, not arrow.fixed_shape_tensor"
    );
    let refused = |metadata: &str| {
        let field = field_with(&array, FixedShapeTensor::NAME, metadata);
        given(ManagedTensor::from_fixed_shape_tensor(&field, &array).unwrap_err())
    };
    assert!(refused("not json").contains("deserialization failed"));
    // A shape that does not match the lists, or whose product overflows or passes i32::MAX:
    // arrow-rs itself would panic on the last two.
    assert!(refused(r#"{"shape":[2,2]}"#).contains("over lists of 6 values"));
    assert!(refused(r#"{"shape":[4294967296,4294967296,0]}"#).contains("more than i32::MAX"));
    assert!(refused(r#"{"shape":[65536,65536]}"#).contains("more than i32::MAX"));
    assert!(refused(r#"{"shape":[2,3],"permutations":[0,0]}"#).contains("permutations invalid"));
    assert!(refused(r#"{"shape":[2,3],"permutation":[1]}"#).contains("size mismatch"));
    assert!(refused(r#"{"shape":[2,3],"dim_names":["x"]}"#).contains("size mismatch"));
    assert!(refused(r#"{"shape":[-2,-3]}"#).contains("deserialization failed"));
    // A field whose type is another list size than the array's.
    let other_array = int32_column(3, 4);
    let field = field_with(&other_array, FixedShapeTensor::NAME, r#"{"shape":[4]}"#);
    assert!(
        given(ManagedTensor::from_fixed_shape_tensor(&field, &array).unwrap_err())
            .starts_with("a field of type FixedSizeList(4 x Int32)")
    );
}

#[test]
fn imports_refuse_nulls_and_values_dlpack_lacks() {
    let metadata = r#"{"shape":[2]}"#;
    // A null tensor.
    let values = Int32Array::from(vec![1, 2, 3, 4]);
    let item = Arc::new(Field::new("item", ArrowType::Int32, true));
    let nulls = Some(NullBuffer::from(vec![true, false]));
    let array = FixedSizeListArray::try_new(item.clone(), 2, Arc::new(values), nulls).unwrap();
    let field = field_with(&array, FixedShapeTensor::NAME, metadata);
    assert_eq!(
        given(ManagedTensor::from_fixed_shape_tensor(&field, &array).unwrap_err()),
        "a column with 1 null tensors: DLPack has no validity bitmap"
    );
    // ...but a slice without it is fine.
    let tensor = ManagedTensor::from_fixed_shape_tensor(&field, &array.slice(0, 1)).unwrap();
    assert_eq!(tensor.view().as_slice::<i32>().unwrap(), &[1, 2]);

    // A null value inside a tensor.
    let values = Int32Array::from(vec![Some(1), Some(2), None, Some(4)]);
    let array = FixedSizeListArray::try_new(item, 2, Arc::new(values), None).unwrap();
    let field = field_with(&array, FixedShapeTensor::NAME, metadata);
    assert!(
        given(ManagedTensor::from_fixed_shape_tensor(&field, &array).unwrap_err())
            .contains("with 1 nulls")
    );

    // Values that are not numbers DLPack has.
    let strings = StringArray::from(vec!["a", "b"]);
    let item = Arc::new(Field::new("item", ArrowType::Utf8, false));
    let array = FixedSizeListArray::try_new(item, 2, Arc::new(strings), None).unwrap();
    let field = field_with(&array, FixedShapeTensor::NAME, metadata);
    assert_eq!(
        given(ManagedTensor::from_fixed_shape_tensor(&field, &array).unwrap_err()),
        "Utf8 values: DLPack has no such type"
    );
}

#[test]
fn columns_and_arrays_hold_one_tensor_each() {
    // Many conversions of one buffer; each tensor released once, the buffer last.
    let (tensor, counter, _) = counted(vec![1u64, 2, 3, 4, 5, 6], &[3, 2], None);
    let (field, array) = tensor.into_fixed_shape_tensor().unwrap();
    let tensors: Vec<ManagedTensor> = (0..3)
        .map(|row| ManagedTensor::from_fixed_shape_tensor(&field, &array.slice(row, 1)).unwrap())
        .collect();
    drop((field, array));
    assert_eq!(drops(&counter), 0);
    let rows: Vec<Vec<u64>> = tensors
        .iter()
        .map(|tensor| tensor.view().as_slice::<u64>().unwrap().to_vec())
        .collect();
    assert_eq!(rows, [[1, 2], [3, 4], [5, 6]]);
    let handles: Vec<_> = tensors
        .into_iter()
        .map(|tensor| std::thread::spawn(move || drop(tensor)))
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    assert_eq!(drops(&counter), 1);
}

/// `into_arrow_array_of_its_type` of one supported type: the Arrow type of the table, the
/// tensor's own memory, the values, and the deleter run once, with the array.
fn array_of_its_type_case<T: Element + Copy + Debug + PartialEq>(
    values: &[T],
    expected: ArrowType,
) {
    let (tensor, drops_seen, first) = counted(values.to_vec(), &[values.len()], None);
    assert_eq!(arrow_type(tensor.view().dtype()), Some(expected.clone()));
    let array = tensor.into_arrow_array_of_its_type().unwrap();
    assert_eq!(array.data_type(), &expected);
    assert_eq!(array.len(), values.len());
    let data = array.to_data();
    let values_buffer = data.buffers()[0].as_ptr();
    assert_eq!(values_buffer.cast::<T>(), first, "no copy");
    // SAFETY: the values buffer is the tensor's `values.len()` elements of `T`, kept alive by
    // `data` while this slice is read.
    let read = unsafe { std::slice::from_raw_parts(values_buffer.cast::<T>(), values.len()) };
    assert_eq!(read, values);
    drop(data);
    assert_eq!(drops(&drops_seen), 0);
    drop(array);
    assert_eq!(drops(&drops_seen), 1);
}

#[test]
fn every_type_of_the_table_becomes_an_array_of_its_own_type() {
    array_of_its_type_case(&[-1i8, 2], ArrowType::Int8);
    array_of_its_type_case(&[-1i16, 2], ArrowType::Int16);
    array_of_its_type_case(&[-1i32, 2], ArrowType::Int32);
    array_of_its_type_case(&[-1i64, 2], ArrowType::Int64);
    array_of_its_type_case(&[1u8, 2], ArrowType::UInt8);
    array_of_its_type_case(&[1u16, 2], ArrowType::UInt16);
    array_of_its_type_case(&[1u32, 2], ArrowType::UInt32);
    array_of_its_type_case(&[1u64, 2], ArrowType::UInt64);
    array_of_its_type_case(&[f16::ONE, f16::NEG_ONE], ArrowType::Float16);
    array_of_its_type_case(&[1.5f32, -2.5], ArrowType::Float32);
    array_of_its_type_case(&[1.5f64, -2.5], ArrowType::Float64);
}

#[test]
fn an_array_of_its_type_refuses_what_the_typed_one_refuses() {
    for (tensor, words) in [
        (
            Export::new(vec![true, false], &[2])
                .into_versioned()
                .unwrap(),
            "one bit per value",
        ),
        (
            Export::new(vec![bf16::ONE], &[1]).into_versioned().unwrap(),
            "no bfloat16 type",
        ),
        (
            Export::new(vec![Complex::new(1.0f32, 0.0)], &[1])
                .into_versioned()
                .unwrap(),
            "complex",
        ),
    ] {
        assert_eq!(arrow_type(tensor.view().dtype()), None);
        let refused = given(tensor.into_arrow_array_of_its_type().unwrap_err());
        assert!(refused.contains(words), "{refused}");
    }
    let matrix = Export::new(vec![1.0f32; 4], &[2, 2])
        .into_versioned()
        .unwrap();
    assert!(matches!(
        matrix.into_arrow_array_of_its_type(),
        Err(Error::DimensionalityMismatch {
            expected: 1,
            actual: 2
        })
    ));
    let strided = Export::new(vec![1.0f32; 4], &[2])
        .strides(&[2])
        .into_versioned()
        .unwrap();
    assert!(matches!(
        strided.into_arrow_array_of_its_type(),
        Err(Error::NotContiguous { .. })
    ));
}
