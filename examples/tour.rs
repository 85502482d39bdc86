//! A tour of dlbridge: export Rust memory as DLPack, hand the raw pointer across as a C
//! consumer would receive it, import it back with validation, and read it zero-copy.
//!
//! Run with `cargo run --example tour`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dlbridge::ffi::{DLManagedTensorVersioned, DLTensor};
use dlbridge::ndarray::NdarrayTensorExt;
use dlbridge::ndarray::NdarrayViewExt;
use dlbridge::{DataType, Device, Error, Export, ManagedTensor, Version};

fn main() -> Result<(), Error> {
    println!("dlbridge tour: DLPack {}\n", dlbridge::Version::CURRENT);

    // 1. Export a Vec as a 2x3 float32 tensor (one heap allocation, no copy of the data).
    let data = vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let data_address = data.as_ptr();
    let exported = Export::new(data, &[2, 3]).into_versioned()?;
    let raw = exported.into_raw();
    let ptr = raw.versioned().expect("a versioned export");
    println!("exported  Vec<f32> as DLManagedTensorVersioned* {ptr:p}");

    // 2. What a consumer receives: the raw C struct.
    // SAFETY: `ptr` is the live export from step 1.
    let managed = unsafe { &*ptr };
    println!(
        "raw       version {}.{}, flags {:#x}, ndim {}, dtype code {} bits {} lanes {}",
        managed.version.major,
        managed.version.minor,
        managed.flags,
        managed.dl_tensor.ndim,
        managed.dl_tensor.dtype.code.0,
        managed.dl_tensor.dtype.bits,
        managed.dl_tensor.dtype.lanes,
    );

    // 3. Import it back: validated, owned, deleted exactly once on drop.
    // SAFETY: the live export, handed over once.
    let tensor = unsafe { ManagedTensor::from_raw_versioned(ptr) }?;
    let view = tensor.view();
    println!("imported  {view:?}");
    let values = view.as_slice::<f32>()?;
    println!(
        "values    {values:?} (zero-copy: {})",
        values.as_ptr() == data_address
    );

    // 4. A transposed (column-major) view, read with strides.
    let transposed = Export::new(vec![1i64, 4, 2, 5, 3, 6], &[2, 3])
        .strides(&[1, 2])
        .into_versioned()?;
    let elements = transposed.view().elements::<i64>()?;
    println!(
        "strided   shape {:?} strides {:?} row-major values {:?}, C-contiguous: {}, F: {}",
        elements.shape(),
        elements.strides(),
        elements.to_vec(),
        transposed.view().is_c_contiguous(),
        transposed.view().is_f_contiguous(),
    );

    // 5. ndarray, both ways.
    let array = ndarray::Array::from_shape_fn((2, 2), |(i, j)| (10 * i + j) as u16);
    let from_array = ManagedTensor::from_array(array)?;
    let as_array = from_array.view().as_array::<u16>()?;
    println!("ndarray   {}", as_array.to_string().replace('\n', ""));

    // 6. Shared memory is exported read-only, and writes are refused with a clear error.
    let shared: Arc<[f64]> = vec![0.5; 4].into();
    let _other_owner = Arc::clone(&shared);
    let mut read_only = Export::new(shared, &[4]).into_versioned()?;
    println!(
        "flags     {} -> write refused: {}",
        read_only.view().flags(),
        read_only.as_mut_slice::<f64>().unwrap_err()
    );

    // 7. Typed access never transmutes.
    println!(
        "dtype     {} read as int32 -> {}",
        DataType::FLOAT32,
        tensor.view().as_slice::<i32>().unwrap_err()
    );

    // 8. A malformed tensor from a "foreign producer" is rejected with the field and value
    //    named, and its deleter is still called exactly once.
    let mut shape = [2i64, -3];
    let mut strides = [3i64, 1];
    let mut storage = [0f32; 6];
    let malformed = Box::into_raw(Box::new(DLManagedTensorVersioned {
        version: Version::CURRENT,
        manager_ctx: std::ptr::null_mut(),
        deleter: Some(count_deleter_call),
        flags: 0,
        dl_tensor: DLTensor {
            data: storage.as_mut_ptr().cast(),
            device: Device::CPU,
            ndim: 2,
            dtype: DataType::FLOAT32,
            shape: shape.as_mut_ptr(),
            strides: strides.as_mut_ptr(),
            byte_offset: 0,
        },
    }));
    // SAFETY: a live tensor whose pointers stay valid during the call, handed over once.
    let rejected = unsafe { ManagedTensor::from_raw_versioned(malformed) }.unwrap_err();
    println!(
        "rejected  {rejected} (deleter calls: {})",
        DELETER_CALLS.load(Ordering::SeqCst)
    );
    Ok(())
}

static DELETER_CALLS: AtomicUsize = AtomicUsize::new(0);

/// The malformed producer's deleter: frees its struct and counts the call.
unsafe extern "C" fn count_deleter_call(managed: *mut DLManagedTensorVersioned) {
    DELETER_CALLS.fetch_add(1, Ordering::SeqCst);
    // SAFETY: made by `Box::into_raw` above, freed once here.
    drop(unsafe { Box::from_raw(managed) });
}
