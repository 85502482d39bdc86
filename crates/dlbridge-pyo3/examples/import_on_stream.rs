//! A CUDA tensor imported from PyTorch on a stream of one's own (needs a GPU, and PyTorch with
//! CUDA in the embedded interpreter).
use dlbridge_pyo3::{
    ImportOptions,
    streams::{ConsumerStream, StreamHandle},
};
use pyo3::prelude::*;

fn main() -> PyResult<()> {
    Python::initialize();
    Python::attach(|py| {
        let torch = py.import("torch")?;
        let x = torch.call_method1("arange", (6.0,))?.call_method0("cuda")?;
        let own = torch.getattr("cuda")?.call_method0("Stream")?; // the caller's stream
        let raw: usize = own.getattr("cuda_stream")?.extract()?;

        // `raw`: the `CUstream` of a stream of the tensor's device, alive until `tensor` is dropped.
        // SAFETY: the stream is of the tensor's device and outlives the tensor and its shares.
        let stream = unsafe { StreamHandle::new(raw) };
        let options = ImportOptions::default().with_stream(ConsumerStream::Handle(stream));
        let tensor = dlbridge_pyo3::from_dlpack(&x, &options)?;
        // The producer made the data ready on that stream, which work on it is ordered after.
        assert_eq!(tensor.ready_stream(), Some(raw));
        drop(tensor);
        drop(own);
        Ok(())
    })
}
