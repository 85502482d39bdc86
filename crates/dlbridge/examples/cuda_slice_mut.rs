//! A CUDA tensor's memory as a writable cudarc buffer (needs a GPU; the feature `cudarc`).
use cudarc::driver::CudaContext;
use dlbridge::cuda::{CudaTensorExt, CudaViewExt, export_slice};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stream = CudaContext::new(0)?.default_stream();
    let buffer = stream.clone_htod(&[1.0f32; 4])?;
    let mut tensor = export_slice(buffer, &[4]).into_versioned()?;

    let mut slice = tensor.cuda_slice_mut::<f32>(&stream)?;
    stream.memset_zeros(&mut slice.as_view_mut()?)?;
    drop(slice);
    let written = tensor.view().cuda_slice::<f32>(&stream)?;
    assert_eq!(stream.clone_dtoh(&written.as_view())?, [0.0; 4]);
    Ok(())
}
