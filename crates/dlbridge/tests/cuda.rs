//! The `cudarc` feature: every refusal of a cudarc view, checked on CUDA-typed descriptors whose
//! memory is never touched (no GPU needed), and round trips through a real GPU, which return
//! early with "skipped: no CUDA driver" where `libcuda` cannot be loaded.
#![cfg(feature = "cudarc")]

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};
use dlbridge::cuda::{cuda_slice_parts, driver_available};
use dlbridge::{DataType, Device, DeviceType, Error, Export, ManagedTensor};

const CUDA0: Device = Device::new(DeviceType::CUDA, 0);

/// A tensor on `device` whose data is an address nothing dereferences.
fn fake_tensor(
    device: Device,
    dtype: DataType,
    address: usize,
    shape: &[usize],
    strides: Option<&[isize]>,
) -> ManagedTensor {
    // SAFETY: the memory is never read or written: only the descriptor is checked.
    let export = unsafe {
        // A device address, never dereferenced here: an address without provenance.
        Export::from_raw_parts(
            (),
            std::ptr::without_provenance_mut::<c_void>(address),
            dtype,
            device,
            shape,
        )
    };
    match strides {
        Some(strides) => export.strides(strides).into_versioned(),
        None => export.into_versioned(),
    }
    .unwrap()
}

#[test]
fn a_compact_cuda_tensor_gives_its_address_and_length() {
    let tensor = fake_tensor(CUDA0, DataType::FLOAT32, 0x7000_0000, &[2, 3], None);
    assert_eq!(
        cuda_slice_parts::<f32>(&tensor.view(), 0).unwrap(),
        (0x7000_0000, 6)
    );
    // Extent-1 dimensions may carry any stride and are still compact.
    let tensor = fake_tensor(
        CUDA0,
        DataType::FLOAT32,
        0x7000_0000,
        &[1, 4],
        Some(&[99, 1]),
    );
    assert_eq!(
        cuda_slice_parts::<f32>(&tensor.view(), 0).unwrap(),
        (0x7000_0000, 4)
    );
    // An empty tensor needs no address.
    let tensor = fake_tensor(CUDA0, DataType::FLOAT32, 0, &[0, 3], None);
    assert_eq!(cuda_slice_parts::<f32>(&tensor.view(), 0).unwrap(), (0, 0));
}

#[test]
fn a_tensor_on_another_device_type_is_refused() {
    for device in [
        Device::CPU,
        Device::new(DeviceType::CUDA_HOST, 0),
        Device::new(DeviceType::CUDA_MANAGED, 0),
        Device::new(DeviceType::ROCM, 0),
    ] {
        let tensor = fake_tensor(device, DataType::FLOAT32, 0x7000_0000, &[4], None);
        let error = cuda_slice_parts::<f32>(&tensor.view(), 0).unwrap_err();
        assert_eq!(
            error,
            Error::NotOnDevice {
                expected: CUDA0,
                actual: device
            }
        );
        assert!(
            error.to_string().contains("needs a tensor on CUDA:0"),
            "{error}"
        );
    }
}

#[test]
fn a_tensor_on_another_ordinal_is_refused() {
    let cuda1 = Device::new(DeviceType::CUDA, 1);
    let tensor = fake_tensor(cuda1, DataType::FLOAT32, 0x7000_0000, &[4], None);
    let error = cuda_slice_parts::<f32>(&tensor.view(), 0).unwrap_err();
    assert_eq!(
        error,
        Error::NotOnDevice {
            expected: CUDA0,
            actual: cuda1
        }
    );
    assert_eq!(
        error.to_string(),
        "DLTensor.device = CUDA:1: this access needs a tensor on CUDA:0"
    );
    assert_eq!(
        cuda_slice_parts::<f32>(&tensor.view(), 1).unwrap(),
        (0x7000_0000, 4)
    );
}

#[test]
fn another_data_type_is_refused() {
    let tensor = fake_tensor(CUDA0, DataType::FLOAT64, 0x7000_0000, &[4], None);
    assert_eq!(
        cuda_slice_parts::<f32>(&tensor.view(), 0).unwrap_err(),
        Error::DataTypeMismatch {
            requested: DataType::FLOAT32,
            actual: DataType::FLOAT64
        }
    );
    assert!(cuda_slice_parts::<f64>(&tensor.view(), 0).is_ok());
}

#[test]
fn a_non_compact_layout_is_refused() {
    // Transposed (column-major), a step of 2, reversed: none is one contiguous run.
    for (shape, strides) in [
        (&[2usize, 3][..], &[1isize, 2][..]),
        (&[4][..], &[2][..]),
        (&[4][..], &[-1][..]),
    ] {
        let tensor = fake_tensor(CUDA0, DataType::FLOAT32, 0x7000_0000, shape, Some(strides));
        assert_eq!(
            cuda_slice_parts::<f32>(&tensor.view(), 0).unwrap_err(),
            Error::NotContiguous {
                order: "C",
                shape: shape.iter().map(|&e| e as i64).collect(),
                strides: strides.iter().map(|&s| s as i64).collect(),
            }
        );
    }
}

#[test]
fn a_misaligned_address_is_refused() {
    let tensor = fake_tensor(CUDA0, DataType::FLOAT32, 0x7000_0002, &[4], None);
    assert_eq!(
        cuda_slice_parts::<f32>(&tensor.view(), 0).unwrap_err(),
        Error::Misaligned {
            address: 0x7000_0002,
            align: 4
        }
    );
}

/// The stream of device 0, or `None` (printing why) where no CUDA driver can be loaded (and
/// under Miri, which cannot load libraries).
fn gpu_stream() -> Option<Arc<CudaStream>> {
    if cfg!(miri) {
        eprintln!("skipped: Miri cannot load the CUDA driver (no dlopen)");
        return None;
    }
    if !driver_available() {
        eprintln!("skipped: no CUDA driver");
        return None;
    }
    let context = CudaContext::new(0).expect("CUDA context on device 0");
    Some(context.new_stream().expect("a CUDA stream"))
}

#[test]
fn gpu_a_cudarc_buffer_exports_views_and_reads_back() {
    let Some(stream) = gpu_stream() else { return };
    let values: Vec<f32> = (0..6).map(|i| i as f32 * 1.5).collect();
    let slice = stream.clone_htod(&values).unwrap();
    let tensor = Export::from_cuda_slice(slice, &[2, 3])
        .into_versioned()
        .unwrap();
    let view = tensor.view();
    assert_eq!(view.device(), CUDA0);
    assert_eq!(view.dtype(), DataType::FLOAT32);
    assert_eq!(view.shape(), &[2, 3]);
    assert_eq!(view.strides(), &[3, 1]);
    assert!(!view.is_read_only());
    let seen = view.cuda_slice::<f32>(&stream).unwrap();
    assert_eq!(seen.len(), 6);
    assert_eq!(stream.clone_dtoh(&seen.as_view()).unwrap(), values);
    drop(seen);
    // The view freed nothing: the tensor's memory still reads the same.
    let again = tensor.view().cuda_slice::<f32>(&stream).unwrap();
    assert_eq!(stream.clone_dtoh(&again.as_view()).unwrap(), values);
    drop(again);
    // The deleter frees the buffer, here on another thread with no context current.
    std::thread::spawn(move || drop(tensor)).join().unwrap();
    stream.synchronize().unwrap();
    stream.context().check_err().unwrap();
}

#[test]
fn gpu_a_writable_view_writes_through_and_a_read_only_one_refuses() {
    let Some(stream) = gpu_stream() else { return };
    let slice = stream.clone_htod(&[7i32; 5]).unwrap();
    let mut tensor = Export::from_cuda_slice(slice, &[5])
        .into_versioned()
        .unwrap();
    {
        let mut seen = tensor.cuda_slice_mut::<i32>(&stream).unwrap();
        stream
            .memset_zeros(&mut seen.as_view_mut().unwrap())
            .unwrap();
    }
    let seen = tensor.view().cuda_slice::<i32>(&stream).unwrap();
    assert_eq!(stream.clone_dtoh(&seen.as_view()).unwrap(), vec![0; 5]);
    let mut read_only_view = tensor.view().cuda_slice::<i32>(&stream).unwrap();
    assert!(matches!(
        read_only_view.as_view_mut(),
        Err(Error::ReadOnly { .. })
    ));
    drop((seen, read_only_view));

    let slice = stream.clone_htod(&[1i32; 3]).unwrap();
    let mut read_only = Export::from_cuda_slice(slice, &[3])
        .read_only(true)
        .into_versioned()
        .unwrap();
    assert!(matches!(
        read_only.cuda_slice_mut::<i32>(&stream),
        Err(Error::ReadOnly { .. })
    ));
    // Wrong data type through a real stream: refused before any driver call.
    assert!(matches!(
        read_only.view().cuda_slice::<f32>(&stream),
        Err(Error::DataTypeMismatch { .. })
    ));
    stream.context().check_err().unwrap();
}

#[test]
fn gpu_a_shape_that_does_not_cover_the_buffer_is_refused() {
    let Some(stream) = gpu_stream() else { return };
    let slice = stream.alloc_zeros::<f32>(6).unwrap();
    assert_eq!(
        Export::from_cuda_slice(slice, &[4])
            .into_versioned()
            .unwrap_err(),
        Error::ShapeMismatch {
            elements: 4,
            buffer_len: 6
        }
    );
    // The refused export dropped (and freed) the slice without a driver error.
    stream.synchronize().unwrap();
    stream.context().check_err().unwrap();
}
