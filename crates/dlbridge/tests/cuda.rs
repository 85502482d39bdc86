//! The `cudarc` feature: every refusal of a cudarc view, checked on CUDA-typed descriptors whose
//! memory is never touched (no GPU needed), and round trips through a real GPU: the `gpu_`
//! tests, ignored by default ("needs a GPU"). The GPU machine runs them with
//! `--include-ignored` (scripts/gpu-run.sh, from the test binary scripts/gpu-kit.sh builds),
//! and there each fails, saying so, where no CUDA driver or device is found.
#![cfg(feature = "cudarc")]

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream, DevicePtr, sys};
use dlbridge::cuda::{CudaTensorExt, CudaViewExt, export_slice};
use dlbridge::cuda::{
    StreamOrder, copy_to_host, cuda_slice_parts, driver_available, same_stream, wait_for_stream,
};
use dlbridge::{DataType, Device, DeviceType, Error, Export, ManagedTensor};

const CUDA0: Device = Device::new(DeviceType::CUDA, 0);

/// A tensor on `device` whose data is an address nothing dereferences.
fn fake_tensor(
    device: Device,
    dtype: DataType,
    address: usize,
    shape: &[usize],
    strides: Option<&[i64]>,
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
        (&[2usize, 3][..], &[1i64, 2][..]),
        (&[4][..], &[2][..]),
        (&[4][..], &[-1][..]),
    ] {
        let tensor = fake_tensor(CUDA0, DataType::FLOAT32, 0x7000_0000, shape, Some(strides));
        assert_eq!(
            cuda_slice_parts::<f32>(&tensor.view(), 0).unwrap_err(),
            Error::NotContiguous {
                order: "C",
                shape: shape.iter().map(|&e| e as i64).collect(),
                strides: strides.to_vec(),
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

#[test]
fn the_legacy_default_stream_has_two_handles() {
    assert!(same_stream(0, 1) && same_stream(1, 0) && same_stream(0x7000, 0x7000));
    assert!(!same_stream(1, 2) && !same_stream(0, 0x7000));
    // One stream: nothing to wait for, and no driver needed to say so.
    // SAFETY: no stream is touched when the two are one.
    let order = unsafe { wait_for_stream(CUDA0, 0, 1) };
    assert_eq!(order, Ok(StreamOrder::SameStream));
}

#[test]
fn stream_work_on_other_devices_is_refused_before_any_driver_call() {
    let rocm = Device::new(DeviceType::ROCM, 0);
    // SAFETY: refused before any stream is touched.
    let refused = unsafe { wait_for_stream(rocm, 0x5000, 0x6000) }.unwrap_err();
    assert!(matches!(refused, Error::NotOnDevice { actual, .. } if actual == rocm));
    let host = ManagedTensor::zeros(DataType::FLOAT32, &[4]).unwrap();
    // SAFETY: refused before any memory or stream is touched.
    let refused = unsafe { copy_to_host(&host.view(), 1) }.unwrap_err();
    assert!(matches!(refused, Error::NotOnDevice { actual, .. } if actual == Device::CPU));
}

#[test]
fn without_a_driver_stream_work_is_refused_naming_what_needed_it() {
    if driver_available() {
        eprintln!("skipped: a CUDA driver is loaded here (the gpu_ tests cover this)");
        return;
    }
    // SAFETY: no driver: refused before any stream is touched.
    let refused = unsafe { wait_for_stream(CUDA0, 2, 1) }.unwrap_err();
    assert!(matches!(refused, Error::NoDriver { .. }), "{refused}");
    assert!(
        refused.to_string().contains("needs the CUDA driver"),
        "{refused}"
    );
    let tensor = fake_tensor(CUDA0, DataType::FLOAT32, 0x1000, &[4], None);
    // SAFETY: no driver: refused before any memory is touched.
    let refused = unsafe { copy_to_host(&tensor.view(), 1) }.unwrap_err();
    assert!(matches!(refused, Error::NoDriver { .. }), "{refused}");
    // An empty tensor needs no copy, and so no driver.
    let empty = fake_tensor(CUDA0, DataType::FLOAT32, 0x1000, &[0, 3], None);
    // SAFETY: nothing is copied from an empty tensor.
    let copied = unsafe { copy_to_host(&empty.view(), 1) }.unwrap();
    assert_eq!(
        (copied.view().device(), copied.view().shape()),
        (Device::CPU, &[0i64, 3][..])
    );
}

#[test]
fn the_ready_stream_is_carried_by_shares() {
    let mut tensor = fake_tensor(CUDA0, DataType::FLOAT32, 0x1000, &[4], None);
    assert_eq!(tensor.ready_stream(), None);
    // SAFETY: 2 is CUDA's per-thread default stream, which lives as long as the process.
    unsafe { tensor.set_ready_stream(Some(2)) };
    let tensor = Arc::new(tensor);
    let versioned = Arc::clone(&tensor).share_versioned().unwrap();
    let legacy = tensor.share_legacy().unwrap();
    assert_eq!(
        (versioned.ready_stream(), legacy.ready_stream()),
        (Some(2), Some(2))
    );
}

/// A new stream of device 0. Only the `gpu_` tests call it, which are ignored unless asked for
/// (`--include-ignored`, as on the GPU machine): a GPU test that runs without a GPU fails here,
/// naming what is missing, rather than passing without having tested anything (so does one run
/// under Miri, which cannot load the driver: `cargo miri test` leaves them out as ignored).
fn gpu_stream() -> Arc<CudaStream> {
    assert!(
        driver_available(),
        "no CUDA driver or device found: the CUDA driver (libcuda.so.1) cannot be loaded or \
         reports no device, and this GPU test needs one (the gpu_ tests are ignored unless run \
         with --include-ignored, as scripts/gpu-run.sh runs them on the GPU machine)"
    );
    let context = CudaContext::new(0).expect("CUDA context on device 0");
    context.new_stream().expect("a CUDA stream")
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_a_cudarc_buffer_exports_views_and_reads_back() {
    let stream = gpu_stream();
    let values: Vec<f32> = (0..6).map(|i| i as f32 * 1.5).collect();
    let slice = stream.clone_htod(&values).unwrap();
    let tensor = export_slice(slice, &[2, 3]).into_versioned().unwrap();
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
#[ignore = "needs a GPU"]
fn gpu_a_writable_view_writes_through_and_a_read_only_one_refuses() {
    let stream = gpu_stream();
    let slice = stream.clone_htod(&[7i32; 5]).unwrap();
    let mut tensor = export_slice(slice, &[5]).into_versioned().unwrap();
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
    let mut read_only = export_slice(slice, &[3])
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
#[ignore = "needs a GPU"]
fn gpu_a_shape_that_does_not_cover_the_buffer_is_refused() {
    let stream = gpu_stream();
    let slice = stream.alloc_zeros::<f32>(6).unwrap();
    assert_eq!(
        export_slice(slice, &[4]).into_versioned().unwrap_err(),
        Error::ShapeMismatch {
            elements: 4,
            buffer_len: 6
        }
    );
    // The refused export dropped (and freed) the slice without a driver error.
    stream.synchronize().unwrap();
    stream.context().check_err().unwrap();
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_an_exported_buffer_is_ready_on_its_stream_and_waits_order_other_streams() {
    let stream = gpu_stream();
    let values: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    let slice = stream.clone_htod(&values).unwrap();
    let tensor = export_slice(slice, &[1024]).into_versioned().unwrap();
    let ready = stream.cu_stream() as usize;
    assert_eq!(tensor.ready_stream(), Some(ready));
    // SAFETY: the tensor's stream and the legacy default stream are live streams of device 0.
    let order = unsafe { wait_for_stream(CUDA0, ready, ready) };
    assert_eq!(order.unwrap(), StreamOrder::SameStream);
    let consumer = stream.context().new_stream().unwrap();
    // SAFETY: as above.
    let order = unsafe { wait_for_stream(CUDA0, ready, consumer.cu_stream() as usize) }.unwrap();
    assert_eq!(order, StreamOrder::Waited);
    // On the consumer's stream, after the wait: the values the producer's stream wrote.
    let seen = tensor.view().cuda_slice::<f32>(&consumer).unwrap();
    assert_eq!(consumer.clone_dtoh(&seen.as_view()).unwrap(), values);
    drop(seen);
    // SAFETY: as above; 1 is the legacy default stream.
    unsafe { wait_for_stream(CUDA0, ready, 1) }.unwrap();
    stream.synchronize().unwrap();
    stream.context().check_err().unwrap();
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_host_copies_gather_any_layout_on_the_ready_stream() {
    let stream = gpu_stream();
    let values: Vec<i32> = (0..48).collect();
    let slice = stream.clone_htod(&values).unwrap();
    let address = {
        let (address, _read) = slice.device_ptr(&stream);
        address
    };
    // A transposed view of rows 1.. of a 6x8 matrix: neither row- nor column-major, from an
    // offset; the slice outlives the tensor, which owns nothing.
    let view_of = |shape: &[usize], strides: &[i64], offset: usize| {
        fake_tensor(
            CUDA0,
            DataType::INT32,
            address as usize + offset * 4,
            shape,
            Some(strides),
        )
    };
    let transposed = view_of(&[8, 5], &[1, 8], 8);
    let ready = stream.cu_stream() as usize;
    // SAFETY: the view's memory is the live slice on device 0; `ready` is its stream.
    let host = unsafe { copy_to_host(&transposed.view(), ready) }.unwrap();
    let host_view = host.view();
    assert_eq!(host_view.device(), Device::CPU);
    assert!(host_view.flags().is_copied());
    assert_eq!(host_view.strides(), &[5, 1]);
    let copied = host_view.as_slice::<i32>().unwrap().to_vec();
    let expected: Vec<i32> = (0..8)
        .flat_map(|column| (1..6).map(move |row| row * 8 + column))
        .collect();
    assert_eq!(copied, expected);
    // Negative strides: the rows of the same matrix in reverse.
    let reversed = view_of(&[6, 8], &[-8, 1], 40);
    // SAFETY: as above; the legacy default stream orders after the slice's blocking stream.
    let host = unsafe { copy_to_host(&reversed.view(), 1) }.unwrap();
    let expected: Vec<i32> = (0..6)
        .rev()
        .flat_map(|row| (0..8).map(move |c| row * 8 + c))
        .collect();
    assert_eq!(host.view().as_slice::<i32>().unwrap(), &expected[..]);
    drop(slice);
    stream.context().check_err().unwrap();
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_waits_that_would_break_a_capture_are_refused_and_the_capture_goes_on() {
    let stream = gpu_stream();
    let capturing = stream.context().new_stream().unwrap();
    let slice = stream.alloc_zeros::<f32>(256).unwrap();
    stream.synchronize().unwrap();
    let ready = stream.cu_stream() as usize;
    let consumer = capturing.cu_stream() as usize;
    capturing
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
        .unwrap();
    // A non-blocking stream (cudarc's, PyTorch's) capturing leaves the legacy default stream
    // usable; with no work left there, nothing is waited for.
    // SAFETY: live streams of device 0 (1: the legacy default stream).
    let order = unsafe { wait_for_stream(CUDA0, 1, consumer) }.unwrap();
    assert_eq!(order, StreamOrder::AlreadyReady);
    // Finished work outside the capture needs no wait.
    // SAFETY: as above.
    let order = unsafe { wait_for_stream(CUDA0, ready, consumer) }.unwrap();
    assert_eq!(order, StreamOrder::AlreadyReady);
    // A host copy from the capturing stream would need a host synchronisation.
    let tensor = export_slice(slice, &[256]).into_versioned().unwrap();
    // SAFETY: the tensor's memory is live on device 0; the streams are live.
    let refused = unsafe { copy_to_host(&tensor.view(), consumer) }.unwrap_err();
    assert!(
        matches!(refused, Error::StreamCapture { consumer: None, .. }),
        "{refused}"
    );
    // A copy on a stream outside the capture is fine, and does not break the capture.
    // SAFETY: as above.
    let host = unsafe { copy_to_host(&tensor.view(), ready) }.unwrap();
    assert_eq!(host.view().as_slice::<f32>().unwrap(), &[0.0; 256][..]);
    let graph = capturing
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .expect("the capture was not invalidated");
    drop(graph);

    // While a blocking stream captures, the legacy default stream cannot be used at all (it
    // would synchronise with the capture): a wait for it, or on it, is refused, and the capture
    // goes on.
    stream.context().bind_to_thread().unwrap();
    let mut blocking: sys::CUstream = std::ptr::null_mut();
    // SAFETY: an out pointer; flags 0 make a blocking stream, in the context bound above.
    let created = unsafe { sys::cuStreamCreate(&mut blocking, 0) };
    assert_eq!(created, sys::CUresult::CUDA_SUCCESS);
    // SAFETY: `blocking` is the stream just created.
    let began = unsafe {
        sys::cuStreamBeginCapture_v2(
            blocking,
            sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
        )
    };
    assert_eq!(began, sys::CUresult::CUDA_SUCCESS);
    for (ready, consumer) in [(1, blocking as usize), (ready, 1)] {
        // SAFETY: live streams of device 0.
        let refused = unsafe { wait_for_stream(CUDA0, ready, consumer) }.unwrap_err();
        assert!(matches!(refused, Error::StreamCapture { .. }), "{refused}");
    }
    let mut graph: sys::CUgraph = std::ptr::null_mut();
    // SAFETY: `blocking` is capturing; `graph` is an out pointer.
    let ended = unsafe { sys::cuStreamEndCapture(blocking, &mut graph) };
    assert_eq!(
        ended,
        sys::CUresult::CUDA_SUCCESS,
        "asking for the legacy default stream's capture state invalidated the capture"
    );
    assert!(!graph.is_null(), "the capture was invalidated");
    // SAFETY: the graph the capture made, and the stream made above, each destroyed once.
    unsafe {
        assert_eq!(sys::cuGraphDestroy(graph), sys::CUresult::CUDA_SUCCESS);
        assert_eq!(
            sys::cuStreamDestroy_v2(blocking),
            sys::CUresult::CUDA_SUCCESS
        );
    }
    stream.context().check_err().unwrap();
}
