//! DLPack between C and Rust, both ways: tensors made by a C producer read zero-copy in Rust,
//! and Rust tensors handed to a C consumer that writes them and calls their deleter. The C is
//! `c/producer.c` and `c/consumer.c`, built by `build.rs` against the real `dlpack.h`.
//!
//! Run with `cargo run -p dlbridge-c-interop` (or `make example-c`).
#[cfg(not(no_dlpack_header))]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    walkthrough::run()
}

/// Without `dlpack.h` the C side was not compiled: say how to provide it.
#[cfg(no_dlpack_header)]
fn main() -> std::process::ExitCode {
    let message = dlbridge_c_interop::missing_header().unwrap_or_default();
    eprintln!("dlbridge-c-interop: {message}");
    std::process::ExitCode::FAILURE
}

#[cfg(not(no_dlpack_header))]
mod walkthrough {
    use std::error::Error;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use dlbridge::ndarray::{NdarrayTensorExt, NdarrayViewExt};
    use dlbridge::{Export, ManagedTensor, Writability};
    use dlbridge_c_interop::c;

    pub fn run() -> Result<(), Box<dyn Error>> {
        println!(
            "dlbridge C interop: DLPack {}\n",
            dlbridge::Version::CURRENT
        );
        import_from_c()?;
        export_to_c()?;
        println!("\nevery tensor was released exactly once, by its own deleter");
        Ok(())
    }

    /// C makes tensors, Rust reads them and gives them back to their C deleter.
    fn import_from_c() -> Result<(), Box<dyn Error>> {
        println!("C producer -> Rust");

        // A 2x3 matrix, with its own malloc'ed data, shape, strides and context. The counter
        // is declared first, so it outlives the tensor on every path out of this function.
        let matrix_deletes = AtomicU32::new(0);
        // SAFETY: the counter outlives the tensor (above); the pointer is checked below.
        let raw = unsafe { c::c_producer_matrix(2, 3, &matrix_deletes) };
        if raw.is_null() {
            return Err("the C producer could not allocate the matrix".into());
        }
        // SAFETY: `raw` is a live tensor the C producer just made and hands over once: nothing
        // else uses or deletes it; its shape, strides and data stay valid until its deleter.
        let matrix = unsafe { ManagedTensor::from_raw_versioned(raw) }?;
        let view = matrix.view();
        println!(
            "  matrix      version {}, flags {}, shape {:?}, strides {:?}, {:?}",
            view.version().expect("a versioned tensor"),
            view.flags(),
            view.shape(),
            view.strides(),
            view.writability(),
        );
        let values = view.as_slice::<f32>()?; // zero-copy: the C producer's memory
        assert_eq!(values, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(view.elements::<f32>()?.get(&[1, 2]), Some(&6.0));
        let array = view.as_array::<f32>()?; // an ndarray view of the same memory
        println!(
            "              as_slice {values:?}, [1, 2] = {}, ndarray sum {}",
            array[[1, 2]],
            array.sum()
        );
        assert_eq!(matrix_deletes.load(Ordering::SeqCst), 0);
        drop(matrix);
        let calls = matrix_deletes.load(Ordering::SeqCst);
        println!("              dropped: the C deleter ran {calls} time(s)");
        assert_eq!(calls, 1);

        // Its transpose, without a copy: strides (1, 3), a byte_offset that skips two padding
        // floats, flagged READ_ONLY.
        let transposed_deletes = AtomicU32::new(0);
        // SAFETY: the counter outlives the tensor; the pointer is checked below.
        let raw = unsafe { c::c_producer_transposed(2, 3, &transposed_deletes) };
        if raw.is_null() {
            return Err("the C producer could not allocate the transposed matrix".into());
        }
        // SAFETY: a live tensor from the C producer, handed over once (as above).
        let mut transposed = unsafe { ManagedTensor::from_raw_versioned(raw) }?;
        let view = transposed.view();
        let elements = view.elements::<f32>()?.to_vec(); // strides and byte_offset followed
        println!(
            "  transposed  shape {:?}, strides {:?}, byte_offset {}, {:?}: {elements:?}",
            view.shape(),
            view.strides(),
            view.byte_offset(),
            view.writability(),
        );
        assert_eq!(elements, [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert_eq!(view.as_array::<f32>()?.sum(), 21.0); // the padding is not summed
        println!(
            "              as_slice: {}",
            view.as_slice::<f32>().unwrap_err()
        );
        let refused = transposed.as_mut_slice::<f32>().unwrap_err();
        println!("              as_mut_slice: {refused}");
        drop(transposed);
        assert_eq!(transposed_deletes.load(Ordering::SeqCst), 1);

        // A legacy DLManagedTensor: no flags, so nobody can tell whether it may be written.
        let legacy_deletes = AtomicU32::new(0);
        // SAFETY: the counter outlives the tensor; the pointer is checked below.
        let raw = unsafe { c::c_producer_legacy_vector(4, &legacy_deletes) };
        if raw.is_null() {
            return Err("the C producer could not allocate the legacy vector".into());
        }
        // SAFETY: a live legacy tensor from the C producer, handed over once.
        let legacy = unsafe { ManagedTensor::from_raw_legacy(raw) }?;
        let view = legacy.view();
        println!(
            "  legacy      {:?} ({:?}: read-only for Rust)",
            view.as_slice::<f32>()?,
            view.writability(),
        );
        assert_eq!(view.writability(), Writability::Unknown);
        assert!(view.is_read_only());
        drop(legacy);
        assert_eq!(legacy_deletes.load(Ordering::SeqCst), 1);
        Ok(())
    }

    /// Rust makes tensors, C reads and writes them and calls their deleter.
    fn export_to_c() -> Result<(), Box<dyn Error>> {
        println!("Rust -> C consumer");

        // A Vec as a 2x3 tensor, handed over as a raw DLManagedTensorVersioned*.
        let tensor =
            Export::new(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).into_versioned()?;
        let raw = tensor.into_raw_versioned()?;
        let mut report = c::ConsumerReport::default();
        // SAFETY: `raw` is a live tensor whose ownership `into_raw_versioned` gave up: the C
        // consumer is its only user and calls its deleter once. `report` is valid for writes.
        let status = unsafe { c::c_consumer_scale_versioned(raw, 10.0, &mut report) };
        assert_eq!(status, c::status::OK);
        println!(
            "  Vec         C saw version {}.{}, sum {}, wrote x10: {:?}, called the deleter {}x",
            report.version_major,
            report.version_minor,
            report.sum_before,
            report.elements(),
            report.deleter_calls,
        );
        assert_eq!(report.elements(), [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]);
        assert_eq!(report.deleter_calls, 1);

        // An ndarray array, transposed: C follows the strides (1, 2).
        let array = ndarray::array![[1.0f32, 2.0], [3.0, 4.0], [5.0, 6.0]].reversed_axes();
        let report = c::scale_in_c(ManagedTensor::from_array(array)?, 2.0)?;
        println!(
            "  ndarray     C read the transpose in index order, wrote x2: {:?}",
            report.elements()
        );
        assert_eq!(report.elements(), [2.0, 6.0, 10.0, 4.0, 8.0, 12.0]);

        // Read-only memory: C sees READ_ONLY and leaves it alone. The Arc shows that the
        // deleter C called released Rust's share.
        let weights: Arc<[f32]> = vec![0.5, 1.5, 2.5].into();
        let tensor = Export::new(Arc::clone(&weights), &[3])
            .read_only(true)
            .into_versioned()?;
        let report = c::scale_in_c(tensor, 100.0)?;
        println!(
            "  read-only   C saw flags {:#x}, sum {}, wrote: {}; Arc owners left: {}",
            report.flags,
            report.sum_before,
            report.wrote == 1,
            Arc::strong_count(&weights),
        );
        assert!(report.read_only() && report.wrote == 0);
        assert_eq!(&*weights, [0.5, 1.5, 2.5]);
        assert_eq!(Arc::strong_count(&weights), 1);

        // A legacy consumer cannot be told that memory is read-only, so that is refused.
        let tensor = Export::new(vec![1.0f32; 3], &[3])
            .read_only(true)
            .into_versioned()?;
        let refused = tensor.into_raw_legacy().unwrap_err();
        println!("  legacy      read-only refused: {refused}");
        assert_eq!(refused, dlbridge::Error::ReadOnlyLegacyExport);
        let tensor = Export::new(vec![1.0f32, 2.0, 3.0], &[3]).into_versioned()?;
        let report = c::scale_in_c_legacy(tensor, -1.0)?;
        println!(
            "              writable: C wrote x-1: {:?}",
            report.elements()
        );
        assert_eq!(report.elements(), [-1.0, -2.0, -3.0]);

        // Round trip: C producer -> Rust (which writes) -> C consumer -> the C deleter.
        let deletes = AtomicU32::new(0);
        // SAFETY: the counter outlives the tensor; the pointer is checked below.
        let raw = unsafe { c::c_producer_matrix(2, 2, &deletes) };
        if raw.is_null() {
            return Err("the C producer could not allocate the matrix".into());
        }
        // SAFETY: a live tensor from the C producer, handed over once.
        let mut tensor = unsafe { ManagedTensor::from_raw_versioned(raw) }?;
        tensor.as_mut_slice::<f32>()?[0] = 100.0;
        let report = c::scale_in_c(tensor, 0.5)?;
        println!(
            "  round trip  C producer -> Rust wrote 100 -> C consumer x0.5: {:?}; C deleter: {}",
            report.elements(),
            deletes.load(Ordering::SeqCst),
        );
        assert_eq!(report.elements(), [50.0, 1.0, 1.5, 2.0]);
        assert_eq!(deletes.load(Ordering::SeqCst), 1);
        Ok(())
    }
}
