//! The compiling twin of the compile-fail checks of cudarc views and stream functions: each
//! borrow in turn, and the unsafe calls inside `unsafe` (needs a GPU; the feature `cudarc`).
use cudarc::driver::CudaContext;
use dlbridge::cuda::StreamOrder;
use dlbridge::cuda::{CudaTensorExt, CudaViewExt, export_slice};
use dlbridge::{Device, DeviceType};

fn main() {
    let stream = CudaContext::new(0).unwrap().default_stream();
    let buffer = stream.clone_htod(&[1.0f32, 2.0]).unwrap();
    let mut tensor = export_slice(buffer, &[2]).into_versioned().unwrap();
    let read = tensor.view().cuda_slice::<f32>(&stream).unwrap();
    let host: Vec<f32> = stream.clone_dtoh(&read.as_view()).unwrap();
    assert_eq!(host, [1.0, 2.0]);
    drop(read);
    let mut a = tensor.cuda_slice_mut::<f32>(&stream).unwrap();
    let read = a.as_view();
    let host: Vec<f32> = stream.clone_dtoh(&read).unwrap();
    assert_eq!(host, [1.0, 2.0]);
    stream.memset_zeros(&mut a.as_view_mut().unwrap()).unwrap();
    drop(a);
    let mut b = tensor.cuda_slice_mut::<f32>(&stream).unwrap();
    stream.memset_zeros(&mut b.as_view_mut().unwrap()).unwrap();
    assert_eq!(b.len(), 2);
    drop(b);
    // SAFETY: 1 and 2 are the legacy and per-thread default streams of device 0.
    let order = unsafe { dlbridge::cuda::wait_for_stream(Device::new(DeviceType::CUDA, 0), 1, 2) };
    assert_eq!(order, Ok(StreamOrder::Waited));
    // SAFETY: the tensor's memory lives on CUDA:0; 1 is the legacy default stream.
    let copy = unsafe { dlbridge::cuda::copy_to_host(&tensor.view(), 1) }.unwrap();
    assert_eq!(copy.view().as_slice::<f32>().unwrap(), &[0.0, 0.0]);
}
