//! A host copy of a CUDA tensor, on the stream its data is ready on (needs a GPU; the
//! feature `cudarc`).
use cudarc::driver::CudaContext;
use dlbridge::cuda::{copy_to_host, export_slice};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The legacy default stream: 1 as DLPack says it.
    let stream = CudaContext::new(0)?.default_stream();
    let buffer = stream.clone_htod(&[1i32, 2, 3, 4, 5, 6])?;
    let tensor = export_slice(buffer, &[2, 3]).into_versioned()?;

    // SAFETY: the tensor's memory lives on its CUDA device, ready on the legacy stream (1).
    let host = unsafe { copy_to_host(&tensor.view(), 1) }?;
    assert!(host.view().flags().is_copied());
    assert_eq!(host.view().as_slice::<i32>()?, &[1, 2, 3, 4, 5, 6]);
    Ok(())
}
