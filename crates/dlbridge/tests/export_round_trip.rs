//! Export of Rust memory and import back: Rust -> DLPack -> Rust for every data type, both
//! layouts, every buffer kind, and every refusal of the exporter.

use std::sync::Arc;

use dlbridge::ffi::DLManagedTensorVersioned;
use dlbridge::{
    DataType, DataTypeCode, Device, DeviceType, Element, Error, Export, Flags, ManagedTensor,
    Version, Writability,
};
use half::{bf16, f16};
use num_complex::Complex;

/// Exports `values` as a 2 x n/2 tensor through a raw pointer of the given layout and imports
/// it back, checking the descriptor every export promises.
fn round_trip<T: Element + PartialEq + std::fmt::Debug>(values: Vec<T>) {
    let n = values.len();
    let expected = values.clone();
    for legacy in [false, true] {
        let shape = [2, n / 2];
        let export = Export::new(values.clone(), &shape);
        let tensor = if legacy {
            export.into_legacy()
        } else {
            export.into_versioned()
        }
        .unwrap();
        let raw = tensor.into_raw();
        assert_eq!(raw.legacy().is_some(), legacy);
        // SAFETY: our own export, handed back once.
        let imported = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
        let view = imported.view();
        assert_eq!(view.dtype(), T::DTYPE);
        assert_eq!(view.device(), Device::CPU);
        assert_eq!(view.shape(), &[2, n as i64 / 2]);
        assert_eq!(view.strides(), &[n as i64 / 2, 1]);
        assert_eq!(view.byte_offset(), 0);
        assert!(!view.dl_tensor().strides.is_null());
        assert_eq!(view.version(), (!legacy).then_some(Version::CURRENT));
        assert_eq!(
            view.as_slice::<T>().unwrap(),
            expected.as_slice(),
            "{}",
            T::DTYPE
        );
        assert_eq!(view.elements::<T>().unwrap().to_vec(), expected);
    }
    // The other owners.
    let boxed: Box<[T]> = values.clone().into_boxed_slice();
    let tensor = Export::new(boxed, &[n]).into_versioned().unwrap();
    assert_eq!(tensor.view().as_slice::<T>().unwrap(), expected.as_slice());
    let shared: Arc<[T]> = values.into();
    let tensor = Export::new(shared, &[n]).into_versioned().unwrap();
    assert_eq!(tensor.view().as_slice::<T>().unwrap(), expected.as_slice());
}

#[test]
fn every_element_type_round_trips() {
    round_trip(vec![-1i8, 2, -3, 4]);
    round_trip(vec![-1i16, 2, -3, i16::MAX]);
    round_trip(vec![-1i32, 2, -3, i32::MIN]);
    round_trip(vec![-1i64, 2, -3, i64::MAX]);
    round_trip(vec![1u8, 2, 3, 255]);
    round_trip(vec![1u16, 2, 3, u16::MAX]);
    round_trip(vec![1u32, 2, 3, u32::MAX]);
    round_trip(vec![1u64, 2, 3, u64::MAX]);
    round_trip(vec![f16::from_f32(0.5), f16::MAX, f16::MIN, f16::ONE]);
    round_trip(vec![bf16::from_f32(0.5), bf16::MAX, bf16::MIN, bf16::ONE]);
    round_trip(vec![0.5f32, -1.0, f32::MAX, f32::MIN_POSITIVE]);
    round_trip(vec![0.5f64, -1.0, f64::MAX, f64::MIN_POSITIVE]);
    round_trip(vec![Complex::new(1.0f32, -1.0), Complex::new(0.0, 2.5)]);
    round_trip(vec![Complex::new(1.0f64, -1.0), Complex::new(0.0, 2.5)]);
    round_trip(vec![true, false, false, true]);
}

/// Every named data type, including those without a Rust element type (float8, float6,
/// float4, vectors), travels as bytes through `from_raw_parts` and comes back intact.
#[test]
fn every_data_type_round_trips_as_bytes() {
    let mut dtypes: Vec<DataType> = vec![
        DataType::INT8,
        DataType::INT16,
        DataType::INT32,
        DataType::INT64,
        DataType::UINT8,
        DataType::UINT16,
        DataType::UINT32,
        DataType::UINT64,
        DataType::FLOAT16,
        DataType::FLOAT32,
        DataType::FLOAT64,
        DataType::BFLOAT16,
        DataType::COMPLEX64,
        DataType::COMPLEX128,
        DataType::BOOL,
        DataType::FLOAT8_E3M4,
        DataType::FLOAT8_E4M3,
        DataType::FLOAT8_E4M3B11FNUZ,
        DataType::FLOAT8_E4M3FN,
        DataType::FLOAT8_E4M3FNUZ,
        DataType::FLOAT8_E5M2,
        DataType::FLOAT8_E5M2FNUZ,
        DataType::FLOAT8_E8M0FNU,
        DataType::FLOAT6_E2M3FN,
        DataType::FLOAT6_E3M2FN,
        DataType::FLOAT4_E2M1FN,
        DataType::BCOMPLEX32,
    ];
    dtypes.extend([
        DataType::FLOAT32.with_lanes(4),
        DataType::INT8.with_lanes(3),
    ]);
    for code in DataTypeCode::ALL {
        assert!(
            dtypes.iter().any(|d| d.code == code) || code == DataTypeCode::OPAQUE_HANDLE,
            "{code:?} not covered"
        );
    }
    for dtype in dtypes {
        let shape = [3usize, 5];
        let bytes = dtype.storage_bytes(15, false).unwrap() as usize;
        let mut storage: Vec<u8> = (0..bytes).map(|i| (i * 7 % 251) as u8).collect();
        let expected = storage.clone();
        let data = storage.as_mut_ptr().cast();
        // SAFETY: `storage` holds the packed bytes of 15 elements of `dtype` and moves into
        // the tensor with its heap memory unchanged.
        let tensor = unsafe { Export::from_raw_parts(storage, data, dtype, Device::CPU, &shape) }
            .into_versioned()
            .unwrap();
        let raw = tensor.into_raw().versioned().unwrap();
        // SAFETY: our own export, handed back once.
        let imported = unsafe { ManagedTensor::from_raw_versioned(raw) }.unwrap();
        let view = imported.view();
        assert_eq!(view.dtype(), dtype);
        assert_eq!(view.dtype().to_string().parse::<DataType>(), Ok(dtype));
        assert_eq!(view.compact_byte_size() as usize, bytes);
        // SAFETY: the tensor owns `bytes` readable bytes at its first element.
        let round: &[u8] = unsafe { std::slice::from_raw_parts(view.data_ptr().cast(), bytes) };
        assert_eq!(round, expected.as_slice(), "{dtype}");
    }
}

#[test]
fn explicit_strides_are_exported_as_given() {
    // Column-major 2x3.
    let tensor = Export::new(vec![1, 4, 2, 5, 3, 6i64], &[2, 3])
        .strides(&[1, 2])
        .into_versioned()
        .unwrap();
    assert_eq!(tensor.view().strides(), &[1, 2]);
    assert_eq!(
        tensor.view().elements::<i64>().unwrap().to_vec(),
        [1, 2, 3, 4, 5, 6]
    );
    // Negative strides starting in the middle of the buffer are not expressible from a Vec's
    // first element, but a reversed walk from element 0 is out of bounds:
    let error = Export::new(vec![1u8, 2, 3], &[3])
        .strides(&[-1])
        .into_versioned()
        .unwrap_err();
    assert_eq!(
        error,
        Error::OutOfBounds {
            min_offset: -2,
            max_offset: 0,
            buffer_len: 3
        }
    );
}

#[test]
fn exports_refuse_what_does_not_fit_the_buffer() {
    assert_eq!(
        Export::new(vec![0f32; 5], &[2, 3])
            .into_versioned()
            .unwrap_err(),
        Error::ShapeMismatch {
            elements: 6,
            buffer_len: 5
        }
    );
    let error = Export::new(vec![0f32; 6], &[2, 3])
        .strides(&[3, 2])
        .into_versioned()
        .unwrap_err();
    assert!(
        matches!(error, Error::OutOfBounds { max_offset: 7, .. }),
        "{error}"
    );
    assert_eq!(
        Export::new(vec![0f32; 6], &[2, 3])
            .strides(&[3])
            .into_versioned()
            .unwrap_err(),
        Error::StridesLength {
            ndim: 2,
            strides: 1
        }
    );
    // An extent beyond int64_t (only a 64-bit usize has one) is refused; with 32-bit pointers
    // the largest extent fits, and this empty tensor exports.
    let beyond_int64 = Export::new(Vec::<u8>::new(), &[usize::MAX, 0]).into_versioned();
    if cfg!(target_pointer_width = "64") {
        let error = beyond_int64.unwrap_err();
        assert!(
            matches!(error, Error::ValueOutOfRange { field: "shape", .. }),
            "{error}"
        );
    } else {
        assert!(beyond_int64.is_ok());
    }
    let many = vec![1usize; dlbridge::MAX_NDIM as usize + 1];
    assert!(matches!(
        Export::new(vec![0u8], &many).into_versioned(),
        Err(Error::InvalidNdim { .. })
    ));
}

#[test]
fn empty_and_zero_dimensional_exports() {
    let empty = Export::new(Vec::<f64>::new(), &[0, 4])
        .into_versioned()
        .unwrap();
    assert_eq!(empty.view().num_elements(), 0);
    assert_eq!(empty.view().as_slice::<f64>().unwrap(), &[] as &[f64]);
    let scalar = Export::new(vec![7i32], &[]).into_versioned().unwrap();
    assert_eq!(scalar.view().ndim(), 0);
    assert_eq!(scalar.view().as_slice::<i32>().unwrap(), &[7]);
    assert!(!scalar.view().dl_tensor().shape.is_null());
}

#[test]
fn read_only_exports() {
    let tensor = Export::new(vec![1u8, 2], &[2])
        .read_only(true)
        .into_versioned()
        .unwrap();
    assert_eq!(tensor.view().flags(), Flags::READ_ONLY);
    assert_eq!(
        Export::new(vec![1u8, 2], &[2])
            .read_only(true)
            .into_legacy()
            .unwrap_err(),
        Error::ReadOnlyLegacyExport
    );
    // A unique Arc is writable, a shared one is not, and cannot go legacy.
    let unique: Arc<[u8]> = vec![1, 2].into();
    let mut tensor = Export::new(unique, &[2]).into_versioned().unwrap();
    tensor.as_mut_slice::<u8>().unwrap()[0] = 9;
    assert_eq!(tensor.view().as_slice::<u8>().unwrap(), &[9, 2]);
    let shared: Arc<[u8]> = vec![1, 2].into();
    let _keep = Arc::clone(&shared);
    assert_eq!(
        Export::new(shared, &[2]).into_legacy().unwrap_err(),
        Error::ReadOnlyLegacyExport
    );
    let weak_shared: Arc<[u8]> = vec![1, 2].into();
    let _weak = Arc::downgrade(&weak_shared);
    let tensor = Export::new(weak_shared, &[2]).into_versioned().unwrap();
    assert!(
        tensor.view().is_read_only(),
        "a Weak can still upgrade and read"
    );
}

#[test]
fn device_memory_is_described_but_never_read() {
    // A pretend CUDA allocation: the owner is a handle, the address is never dereferenced.
    struct DeviceBuffer(usize);
    // An address high in the address space of 64-bit and of 32-bit targets.
    let handle = DeviceBuffer(usize::MAX / 2 - 0xfff);
    let data = std::ptr::without_provenance_mut(handle.0);
    // SAFETY: consumers are told the data is on CUDA:0; nothing here dereferences it.
    let tensor = unsafe {
        Export::from_raw_parts(
            handle,
            data,
            DataType::FLOAT16,
            Device::new(DeviceType::CUDA, 0),
            &[8, 8],
        )
    }
    .into_versioned()
    .unwrap();
    assert_eq!(tensor.view().device().device_type, DeviceType::CUDA);
    assert!(matches!(
        tensor.view().as_slice::<f16>(),
        Err(Error::NotHostReadable { .. })
    ));
}

#[test]
fn exported_deleters_run_on_any_thread_and_release_the_owner_once() {
    let shared: Arc<[f32]> = vec![1.0; 16].into();
    let tensors: Vec<*mut DLManagedTensorVersioned> = (0..8)
        .map(|_| {
            Export::new(Arc::clone(&shared), &[4, 4])
                .into_versioned()
                .unwrap()
                .into_raw()
                .versioned()
                .unwrap()
        })
        .collect();
    assert_eq!(Arc::strong_count(&shared), 9);
    /// A tensor pointer handed to another thread, as C code would.
    struct Handoff(*mut DLManagedTensorVersioned);
    // SAFETY: DLPack deleters may run on any thread; each pointer is moved to one thread.
    unsafe impl Send for Handoff {}
    impl Handoff {
        // A method call moves the whole `Handoff` into the closure, not just its pointer.
        fn into_raw(self) -> *mut DLManagedTensorVersioned {
            self.0
        }
    }
    std::thread::scope(|scope| {
        for handoff in tensors.into_iter().map(Handoff) {
            scope.spawn(move || {
                let raw = handoff.into_raw();
                // SAFETY: each pointer is a live export, deleted exactly once, on this thread.
                unsafe { (*raw).deleter.unwrap()(raw) };
            });
        }
    });
    assert_eq!(Arc::strong_count(&shared), 1);
}

#[test]
fn exports_pass_validation_when_reimported_by_a_c_style_consumer() {
    let tensor = Export::new(vec![0u16; 24], &[2, 3, 4])
        .strides(&[12, 4, 1])
        .into_versioned()
        .unwrap();
    let raw = tensor.into_raw().versioned().unwrap();
    // Read it as C would: the raw struct.
    // SAFETY: live export.
    let managed = unsafe { &*raw };
    assert_eq!(managed.version, Version::CURRENT);
    assert_eq!(managed.flags, 0);
    assert_eq!(managed.dl_tensor.ndim, 3);
    assert_eq!(managed.dl_tensor.byte_offset, 0);
    assert!(!managed.manager_ctx.is_null());
    // SAFETY: shape and strides hold ndim values.
    let (shape, strides) = unsafe {
        (
            std::slice::from_raw_parts(managed.dl_tensor.shape, 3),
            std::slice::from_raw_parts(managed.dl_tensor.strides, 3),
        )
    };
    assert_eq!((shape, strides), (&[2i64, 3, 4][..], &[12i64, 4, 1][..]));
    // SAFETY: deleted exactly once.
    unsafe { (managed.deleter.unwrap())(raw) };
}

#[test]
fn sharing_re_exports_imported_memory_without_a_copy() {
    let (data, expected) = (
        vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0],
        [1.0f32, 4.0, 2.0, 5.0],
    );
    let transposed = Export::new(data, &[2, 2])
        .strides(&[1, 3])
        .into_versioned()
        .unwrap();
    let original = Arc::new(transposed);
    let shared = Arc::clone(&original).share_versioned().unwrap();
    let view = shared.view();
    assert_eq!(view.data_ptr(), original.view().data_ptr());
    assert_eq!(
        (view.shape(), view.strides()),
        (&[2i64, 2][..], &[1i64, 3][..])
    );
    assert_eq!(view.elements::<f32>().unwrap().to_vec(), expected);
    let legacy = Arc::clone(&original).share_legacy().unwrap();
    assert!(!legacy.is_versioned());
    assert_eq!(Arc::strong_count(&original), 3);
    drop((shared, legacy));
    assert_eq!(Arc::strong_count(&original), 1);

    // Read-only stays read-only, and cannot go legacy; IS_COPIED is not passed on.
    let read_only = Arc::new(
        Export::new(vec![0u8; 4], &[4])
            .read_only(true)
            .into_versioned()
            .unwrap(),
    );
    let shared = Arc::clone(&read_only).share_versioned().unwrap();
    assert_eq!(shared.view().flags(), Flags::READ_ONLY);
    assert_eq!(
        Arc::clone(&read_only).share_legacy().unwrap_err(),
        Error::ReadOnlyLegacyExport
    );
}

#[test]
fn compact_copies_follow_strides_and_own_their_memory() {
    // Reversed, transposed and stepped layouts all copy into row-major order.
    let mut values = vec![1i32, 2, 3, 4];
    // SAFETY: the last of four elements; strides -2, -1 walk back over all four.
    let last = unsafe { values.as_mut_ptr().add(3) }.cast();
    // SAFETY: `values` keeps the four elements alive; the layout stays inside them.
    let reversed =
        unsafe { Export::from_raw_parts(values, last, DataType::INT32, Device::CPU, &[2, 2]) }
            .strides(&[-2, -1])
            .into_versioned()
            .unwrap();
    let copy = reversed.view().to_compact_copy().unwrap();
    assert_eq!(copy.view().as_slice::<i32>().unwrap(), &[4, 3, 2, 1]);
    assert_eq!(copy.view().data_ptr() as usize % 64, 0, "64-byte aligned");

    // Pinned (host-readable, non-CPU) memory copies into CPU memory.
    let mut pinned_values = vec![1.5f32, 2.5];
    let pinned_data = pinned_values.as_mut_ptr().cast();
    // SAFETY: two f32 kept alive by the Vec; host-readable, so reading is fine.
    let pinned = unsafe {
        Export::from_raw_parts(
            pinned_values,
            pinned_data,
            DataType::FLOAT32,
            Device::new(DeviceType::CUDA_HOST, 0),
            &[2],
        )
    }
    .into_versioned()
    .unwrap();
    let copy = pinned.view().to_compact_copy().unwrap();
    assert_eq!(copy.view().device(), Device::CPU);
    assert_eq!(copy.view().as_slice::<f32>().unwrap(), &[1.5, 2.5]);
    assert_ne!(copy.view().data_ptr(), reversed.view().data_ptr());
    assert_eq!(copy.view().flags(), Flags::IS_COPIED);

    let stepped = Export::new(vec![0u8, 1, 2, 3, 4, 5, 6, 7], &[2, 2])
        .strides(&[4, 2])
        .into_versioned()
        .unwrap();
    let copy = stepped.view().to_compact_copy().unwrap();
    assert_eq!(copy.view().as_slice::<u8>().unwrap(), &[0, 2, 4, 6]);
    assert_eq!(copy.view().strides(), &[2, 1]);

    // Read-only sources give writable copies; complex128 stays aligned.
    let source = Export::new(vec![Complex::new(1.0f64, 2.0); 3], &[3])
        .read_only(true)
        .into_versioned()
        .unwrap();
    let mut copy = source.view().to_compact_copy().unwrap();
    assert!(!copy.view().is_read_only());
    copy.as_mut_slice::<Complex<f64>>().unwrap()[0] = Complex::new(0.0, 0.0);
    assert_eq!(
        source.view().as_slice::<Complex<f64>>().unwrap()[0],
        Complex::new(1.0, 2.0)
    );

    // Packed sub-byte data copies as bytes when compact; empty tensors copy to empty.
    let mut packed = vec![0xabu8, 0xcd];
    let data = packed.as_mut_ptr().cast();
    // SAFETY: two bytes hold four packed float4 values.
    let float4 =
        unsafe { Export::from_raw_parts(packed, data, DataType::FLOAT4_E2M1FN, Device::CPU, &[4]) }
            .into_versioned()
            .unwrap();
    let copy = float4.view().to_compact_copy().unwrap();
    // SAFETY: the copy holds the two packed bytes.
    let bytes = unsafe { std::slice::from_raw_parts(copy.view().data_ptr().cast::<u8>(), 2) };
    assert_eq!(bytes, &[0xab, 0xcd]);
    let empty = Export::new(Vec::<f32>::new(), &[0, 3])
        .into_versioned()
        .unwrap();
    assert_eq!(
        empty
            .view()
            .to_compact_copy()
            .unwrap()
            .view()
            .num_elements(),
        0
    );

    // Device memory cannot be copied by the host.
    struct Handle;
    // SAFETY: never dereferenced: the copy is refused first.
    let on_gpu = unsafe {
        Export::from_raw_parts(
            Handle,
            std::ptr::without_provenance_mut(0x1000),
            DataType::FLOAT32,
            Device::new(DeviceType::CUDA, 0),
            &[2],
        )
    }
    .into_versioned()
    .unwrap();
    assert!(matches!(
        on_gpu.view().to_compact_copy(),
        Err(Error::NotHostReadable { .. })
    ));
}

#[test]
fn zeros_are_aligned_compact_cpu_tensors_of_any_dtype() {
    for dtype in [
        DataType::FLOAT32,
        DataType::BOOL,
        DataType::COMPLEX128,
        DataType::FLOAT8_E5M2,
        DataType::FLOAT4_E2M1FN,
        DataType::INT8.with_lanes(4),
    ] {
        let tensor = ManagedTensor::zeros(dtype, &[3, 5]).unwrap();
        let view = tensor.view();
        assert_eq!((view.dtype(), view.device()), (dtype, Device::CPU));
        assert_eq!(view.strides(), &[5, 1]);
        assert_eq!(view.data_ptr() as usize % 64, 0);
        // SAFETY: the tensor owns its compact bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                view.data_ptr().cast::<u8>(),
                view.compact_byte_size() as usize,
            )
        };
        assert!(bytes.iter().all(|&b| b == 0));
    }
    assert!(ManagedTensor::zeros(DataType::FLOAT32, &[0, 7]).is_ok());
    // Extents of half the address space: their product overflows the 64-bit element count at
    // the second dimension with 64-bit pointers, at the third with 32-bit ones.
    let half = usize::MAX / 2 + 1;
    let overflowing_dim = if cfg!(target_pointer_width = "64") {
        1
    } else {
        2
    };
    assert!(matches!(
        ManagedTensor::zeros(DataType::FLOAT64, &[half, half, half]),
        Err(Error::ElementCountOverflow { dim, .. }) if dim == overflowing_dim
    ));
    assert!(matches!(
        ManagedTensor::zeros(DataType::FLOAT64, &[1 << 30, 1 << 30]),
        Err(Error::ByteSizeOverflow { .. })
    ));
    assert!(matches!(
        ManagedTensor::zeros(DataType::new(DataTypeCode::FLOAT, 0, 1), &[1]),
        Err(Error::InvalidDataType {
            reason: "bits is 0",
            ..
        })
    ));
}

/// A copy whose bytes the allocator cannot give (a valid layout may describe petabytes: a
/// broadcast view, or extents no memory holds) is `Error::OutOfMemory`, never an abort of the
/// process (which `vec!` would be). Found by the Python fuzzer of issue 33: a CUDA tensor of
/// 2 TiB asked for on the CPU aborted the interpreter.
#[test]
#[cfg(target_pointer_width = "64")] // a petabyte is no `usize` on 32-bit targets
#[cfg_attr(
    miri,
    ignore = "Miri stops at an allocation of a petabyte instead of failing it"
)]
fn copies_the_allocator_cannot_give_are_an_error() {
    let petabyte = 1u64 << 50;
    assert_eq!(
        ManagedTensor::zeros(DataType::FLOAT32, &[1 << 40, 1 << 8]).unwrap_err(),
        Error::OutOfMemory { bytes: petabyte }
    );
    let broadcast = Export::new(vec![1.0f32], &[1 << 40, 1 << 8])
        .strides(&[0, 0])
        .into_versioned()
        .unwrap();
    let error = broadcast.view().to_compact_copy().unwrap_err();
    assert_eq!(error, Error::OutOfMemory { bytes: petabyte });
    assert_eq!(
        error.to_string(),
        "out of memory: 1125899906842624 bytes could not be allocated for a copy of the tensor"
    );
}

/// A legacy tensor from outside cannot say whether its memory may be written, so it is
/// read-only for everything that can express it; memory this crate exported legacy is known
/// to be writable; a legacy re-export of unknown memory stays possible.
#[test]
fn legacy_writability_is_not_claimed() {
    let own = Export::new(vec![1u8, 2, 3, 4], &[4]).into_legacy().unwrap();
    assert_eq!(own.view().writability(), Writability::Writable);
    assert!(!own.view().is_read_only());
    // Through a raw pointer (as from any C producer) it is a legacy tensor like any other.
    // SAFETY: our own export, handed back once.
    let mut foreign = unsafe { ManagedTensor::from_raw(own.into_raw()) }.unwrap();
    let view = foreign.view();
    assert_eq!(view.writability(), Writability::Unknown);
    assert!(view.is_read_only());
    assert_eq!(view.flags(), Flags::NONE, "the flags stay as sent");
    assert_eq!(
        foreign.as_mut_slice::<u8>().unwrap_err(),
        Error::WritabilityUnknown
    );
    assert_eq!(
        foreign.elements_mut::<u8>().unwrap_err(),
        Error::WritabilityUnknown
    );
    let message = Error::WritabilityUnknown.to_string();
    assert!(message.contains("legacy DLManagedTensor"), "{message}");

    // Re-exports: versioned ones carry READ_ONLY, legacy ones stay possible and unknown.
    let foreign = Arc::new(foreign);
    let versioned = Arc::clone(&foreign).share_versioned().unwrap();
    assert_eq!(versioned.view().flags(), Flags::READ_ONLY);
    assert_eq!(versioned.view().writability(), Writability::ReadOnly);
    let legacy = Arc::clone(&foreign).share_legacy().unwrap();
    assert!(!legacy.is_versioned());
    assert_eq!(legacy.view().writability(), Writability::Unknown);
    let copy = foreign.view().to_compact_copy().unwrap();
    assert_eq!(
        copy.view().writability(),
        Writability::Writable,
        "a copy is the caller's"
    );
    drop((versioned, legacy));

    // A holder that knows better vouches for the producer.
    let mut foreign = Arc::try_unwrap(foreign).unwrap();
    // SAFETY: the memory is the test's own exported Vec, which nothing else uses.
    unsafe { foreign.assume_legacy_writable() };
    foreign.as_mut_slice::<u8>().unwrap()[0] = 9;
    assert_eq!(foreign.view().as_slice::<u8>().unwrap(), &[9, 2, 3, 4]);
    let legacy = Arc::new(foreign).share_legacy().unwrap();
    assert_eq!(legacy.view().writability(), Writability::Writable);

    // A versioned READ_ONLY tensor is not changed by vouching, and cannot go legacy.
    let read_only = Export::new(vec![0u8; 2], &[2])
        .read_only(true)
        .into_versioned()
        .unwrap();
    // SAFETY: our own export, handed back once.
    let mut read_only = unsafe { ManagedTensor::from_raw(read_only.into_raw()) }.unwrap();
    // SAFETY: vouching changes nothing for a versioned tensor, which says it with its flags.
    unsafe { read_only.assume_legacy_writable() };
    assert_eq!(read_only.view().writability(), Writability::ReadOnly);
    assert_eq!(
        Arc::new(read_only).share_legacy().unwrap_err(),
        Error::ReadOnlyLegacyExport
    );
}
