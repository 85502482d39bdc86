//! A CUDA tensor's memory as a read-only cudarc buffer (needs a GPU; the feature `cudarc`).
use cudarc::driver::CudaContext;
use dlbridge::cuda::{CudaViewExt, export_slice};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stream = CudaContext::new(0)?.default_stream();
    // A CUDA tensor: here a cudarc buffer exported; any tensor on CUDA:0 is seen the same way.
    let values = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let tensor = export_slice(stream.clone_htod(&values)?, &[2, 3]).into_versioned()?;

    let slice = tensor.view().cuda_slice::<f32>(&stream)?;
    let host: Vec<f32> = stream.clone_dtoh(&slice.as_view())?;
    assert_eq!(host, values);
    Ok(())
}
