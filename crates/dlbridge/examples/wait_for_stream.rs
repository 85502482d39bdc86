//! A consumer's stream made to wait for a producer's (needs a GPU; the feature `cudarc`).
use cudarc::driver::CudaContext;
use dlbridge::cuda::{StreamOrder, wait_for_stream};
use dlbridge::{Device, DeviceType};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let context = CudaContext::new(0)?;
    let (producer, consumer) = (context.new_stream()?, context.new_stream()?);
    let _data = producer.clone_htod(&[1.0f32; 1024])?; // work enqueued on the producer's stream
    // The streams as DLPack passes them: integers (their `CUstream`).
    let (ready, waiting) = (producer.cu_stream() as usize, consumer.cu_stream() as usize);

    let cuda0 = Device::new(DeviceType::CUDA, 0);
    // SAFETY: both handles are live streams of device 0 (or the legacy default, 1).
    let order = unsafe { wait_for_stream(cuda0, ready, ready) }?;
    assert_eq!(order, StreamOrder::SameStream);
    // SAFETY: as above.
    let order = unsafe { wait_for_stream(cuda0, ready, waiting) }?;
    assert_eq!(order, StreamOrder::Waited);
    Ok(())
}
