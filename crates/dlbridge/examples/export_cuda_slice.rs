//! A cudarc device buffer exported as a CUDA tensor (needs a GPU; the feature `cudarc`).
use cudarc::driver::CudaContext;
use dlbridge::cuda::export_slice;
use dlbridge::{Device, DeviceType};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stream = CudaContext::new(0)?.default_stream();
    let slice = stream.clone_htod(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
    let tensor = export_slice(slice, &[2, 3]).into_versioned()?;
    assert_eq!(tensor.view().device(), Device::new(DeviceType::CUDA, 0));
    assert_eq!(tensor.view().shape(), &[2, 3]);
    stream.synchronize()?; // the copy is done before a consumer on any stream reads
    Ok(())
}
