//! Regression tests for the holes issue 27 found in safe code, each run by Miri (`make miri`,
//! under Stacked and Tree Borrows): before the fixes, the first made two live `&mut [i32]` over
//! one memory (Miri: undefined behaviour), the second dereferenced a device address from the
//! CPU (SIGSEGV), the third flagged shared memory as a private copy.
//!
//! The audit of every safe public function is SOUNDNESS.md at the repository's root.

mod common;

use std::sync::Arc;

use common::ForeignSpec;
use dlbridge::ffi::{DLManagedTensor, DLManagedTensorVersioned};
use dlbridge::{DataType, Device, DeviceType, Error, Export, ManagedTensor, Writability};

fn writable_original() -> Arc<ManagedTensor> {
    Arc::new(
        Export::new(vec![0i32; 4], &[4])
            .into_versioned()
            .expect("a Vec exports"),
    )
}

// 1. Shares of a writable tensor.

#[test]
fn two_shares_of_one_arc_cannot_both_write() {
    let original = writable_original();
    let mut a = Arc::clone(&original).share_versioned().unwrap();
    let mut b = Arc::clone(&original).share_versioned().unwrap();
    assert!(!a.is_exclusive() && !b.is_exclusive());
    // Every mutable access of either share is refused: `original` can still read the memory.
    assert_eq!(a.as_mut_slice::<i32>(), Err(Error::SharedMemory));
    assert_eq!(b.as_mut_slice::<i32>(), Err(Error::SharedMemory));
    assert_eq!(
        a.as_mut_slice_memory_order::<i32>().unwrap_err(),
        Error::SharedMemory
    );
    assert_eq!(b.elements_mut::<i32>().unwrap_err(), Error::SharedMemory);
    // Shared access to all three at once is fine, and sees one memory.
    let (from_a, from_b) = (
        a.view().as_slice::<i32>().unwrap(),
        b.view().as_slice::<i32>().unwrap(),
    );
    let from_original = original.view().as_slice::<i32>().unwrap();
    assert_eq!(from_a.as_ptr(), from_original.as_ptr());
    assert_eq!(from_b, from_original);
    // The DLPack flags are untouched: a foreign consumer of a share may still write.
    assert_eq!(a.view().writability(), Writability::Writable);
    assert!(!a.view().flags().is_read_only());
}

#[cfg(feature = "ndarray")]
#[test]
fn a_share_of_a_shared_arc_has_no_mutable_ndarray_view() {
    use dlbridge::ndarray::{NdarrayTensorExt, NdarrayViewExt};

    let original = writable_original();
    let mut share = Arc::clone(&original).share_versioned().unwrap();
    assert_eq!(
        share.as_array_mut::<i32>().unwrap_err(),
        Error::SharedMemory
    );
    assert_eq!(share.view().as_array::<i32>().unwrap().len(), 4);
}

#[test]
fn a_weak_reference_also_keeps_a_share_from_writing() {
    let original = writable_original();
    let weak = Arc::downgrade(&original);
    let mut share = original.share_versioned().unwrap();
    assert_eq!(share.as_mut_slice::<i32>(), Err(Error::SharedMemory));
    // The weak reference could have been upgraded to read the memory beside the share.
    let upgraded = weak.upgrade().expect("the share keeps the original alive");
    assert_eq!(upgraded.view().as_slice::<i32>().unwrap(), &[0; 4]);
}

#[test]
fn a_share_reads_only_even_of_an_arc_nobody_else_holds() {
    // One rule for every share, with no look at the `Arc`'s counts (which would cost every
    // export an atomic compare-and-swap): to write, take the tensor back instead.
    let mut share = writable_original().share_versioned().unwrap();
    assert!(!share.is_exclusive());
    assert_eq!(share.as_mut_slice::<i32>(), Err(Error::SharedMemory));
    let mut legacy = Arc::new(share).share_legacy().unwrap();
    assert_eq!(legacy.as_mut_slice::<i32>(), Err(Error::SharedMemory));
    // Its DLPack flags still let a consumer write (a writable legacy export says so).
    assert_eq!(legacy.view().writability(), Writability::Writable);
    // The tensor itself, out of its `Arc`, writes.
    let original = writable_original();
    let share = Arc::clone(&original).share_versioned().unwrap();
    drop(share);
    let mut tensor = Arc::try_unwrap(original).expect("the share is gone");
    tensor.as_mut_slice::<i32>().unwrap()[0] = 9;
    assert_eq!(tensor.view().as_slice::<i32>().unwrap(), &[9, 0, 0, 0]);
}

#[test]
fn a_share_of_a_share_stays_non_exclusive() {
    let original = writable_original();
    let first = Arc::clone(&original).share_versioned().unwrap();
    let mut second = Arc::new(first).share_versioned().unwrap();
    assert_eq!(second.as_mut_slice::<i32>(), Err(Error::SharedMemory));
    // A legacy share of it as well.
    let mut back = Arc::new(second).share_legacy().unwrap();
    assert_eq!(back.as_mut_slice::<i32>(), Err(Error::SharedMemory));
}

#[test]
fn shares_sent_to_other_threads_only_read() {
    let original = writable_original();
    let shares: Vec<ManagedTensor> = (0..2)
        .map(|_| Arc::clone(&original).share_versioned().unwrap())
        .collect();
    std::thread::scope(|scope| {
        for mut share in shares {
            scope.spawn(move || {
                assert_eq!(share.as_mut_slice::<i32>(), Err(Error::SharedMemory));
                assert_eq!(share.view().as_slice::<i32>().unwrap(), &[0; 4]);
            });
        }
        assert_eq!(original.view().as_slice::<i32>().unwrap(), &[0; 4]);
    });
    // The last share gone, the original is the only handle again.
    let mut original = Arc::try_unwrap(original).expect("no share is left");
    original.as_mut_slice::<i32>().unwrap()[0] = 5;
}

/// A share handed straight to a consumer as a pointer (`share_*_into_raw`) is never a Rust
/// handle: never counted, it keeps the source alive until the consumer releases it, once, on
/// any thread, and the source stays readable meanwhile; read-only memory does not leave as a
/// legacy tensor, which cannot say so.
#[test]
fn shares_handed_straight_to_a_consumer_are_uncounted_and_keep_the_source_alive() {
    let original = writable_original();
    let versioned = Arc::clone(&original).share_versioned_into_raw().unwrap();
    let legacy = Arc::clone(&original).share_legacy_into_raw().unwrap();
    assert_eq!(original.live_shares(), 0);
    assert_eq!(Arc::strong_count(&original), 3);
    /// The two pointers, on their way to the consumer's thread.
    struct Handed(*mut DLManagedTensorVersioned, *mut DLManagedTensor);
    // SAFETY: owned tensors, given to the consumer's thread whole; DLPack lets their deleters
    // run on any thread.
    unsafe impl Send for Handed {}
    let handed = Handed(versioned, legacy);
    std::thread::scope(|scope| {
        // The consumer's side, on another thread.
        scope.spawn(move || {
            let handed = handed;
            // SAFETY: live tensors this test owns, each released once; nothing writes the
            // memory while they live.
            let (versioned, legacy) = unsafe {
                (
                    ManagedTensor::from_raw_versioned(handed.0).unwrap(),
                    ManagedTensor::from_raw_legacy(handed.1).unwrap(),
                )
            };
            assert_eq!(versioned.view().as_slice::<i32>().unwrap(), &[0; 4]);
            assert_eq!(legacy.view().as_slice::<i32>().unwrap(), &[0; 4]);
        });
        assert_eq!(original.view().as_slice::<i32>().unwrap(), &[0; 4]);
    });
    // Both released: the original is the only handle again.
    let mut original = Arc::try_unwrap(original).expect("no share is left");
    original.as_mut_slice::<i32>().unwrap()[0] = 5;
    let frozen = Arc::new(
        Export::new(vec![0u8; 2], &[2])
            .read_only(true)
            .into_versioned()
            .unwrap(),
    );
    assert_eq!(
        Arc::clone(&frozen).share_legacy_into_raw(),
        Err(Error::ReadOnlyLegacyExport)
    );
    let raw = frozen.share_versioned_into_raw().unwrap();
    // SAFETY: a live tensor this test owns, released once.
    let back = unsafe { ManagedTensor::from_raw_versioned(raw) }.unwrap();
    assert_eq!(back.writability(), Writability::ReadOnly);
}

// 2. Setters that change what the views may dereference.

/// A well-formed float32 tensor on CUDA:0 at a made-up device address, as a GPU producer sends.
fn cuda_tensor() -> ManagedTensor {
    let mut spec = ForeignSpec::f32(&[4]);
    spec.device = Device::new(DeviceType::CUDA, 0);
    spec.data_address = Some(0x7f00_0000);
    let (raw, _) = spec.versioned();
    // SAFETY: a live tensor from the simulated producer, handed over once; its data is never
    // read on the CPU (the device is not host-readable).
    unsafe { ManagedTensor::from_raw_versioned(raw) }.expect("a valid CUDA tensor")
}

#[test]
fn device_memory_cannot_be_relabelled_as_host_memory() {
    let mut on_gpu = cuda_tensor();
    for host in [
        Device::CPU,
        Device::new(DeviceType::CUDA_HOST, 0),
        Device::new(DeviceType::CUDA_MANAGED, 0),
    ] {
        assert_eq!(
            on_gpu.set_device(host),
            Err(Error::DeviceChange {
                from: Device::new(DeviceType::CUDA, 0),
                to: host
            })
        );
    }
    // Nor as another device (which a device view would hand to that device's driver).
    assert!(matches!(
        on_gpu.set_device(Device::new(DeviceType::CUDA, 1)),
        Err(Error::DeviceChange { .. })
    ));
    assert_eq!(on_gpu.view().device(), Device::new(DeviceType::CUDA, 0));
    assert!(matches!(
        on_gpu.view().as_slice::<f32>(),
        Err(Error::NotHostReadable { .. })
    ));
    assert!(on_gpu.set_device(Device::new(DeviceType::CUDA, 0)).is_ok());
}

#[test]
fn host_memory_cannot_be_relabelled_as_device_memory() {
    let mut tensor = ManagedTensor::zeros(DataType::FLOAT32, &[2]).unwrap();
    assert!(matches!(
        tensor.set_device(Device::new(DeviceType::CUDA, 0)),
        Err(Error::DeviceChange { .. })
    ));
    assert_eq!(tensor.view().device(), Device::CPU);
}

#[test]
fn host_memories_are_relabelled_as_one_another() {
    let mut tensor = ManagedTensor::zeros(DataType::FLOAT32, &[2]).unwrap();
    let pinned = Device::new(DeviceType::CUDA_HOST, 0);
    tensor.set_device(pinned).unwrap();
    assert_eq!(tensor.view().as_slice::<f32>().unwrap(), &[0.0, 0.0]);
    tensor.set_device(Device::CPU).unwrap();
    tensor.as_mut_slice::<f32>().unwrap()[1] = 1.0;
    assert_eq!(tensor.view().as_slice::<f32>().unwrap(), &[0.0, 1.0]);
}

#[test]
fn the_unchecked_relabelling_still_validates_the_layout() {
    // A device address near the top of the address space: fine on CUDA, but as host memory
    // its elements would wrap around.
    let mut spec = ForeignSpec::f32(&[4]);
    spec.device = Device::new(DeviceType::CUDA, 0);
    spec.data_address = Some(usize::MAX - 8);
    let (raw, _) = spec.versioned();
    // SAFETY: as in `cuda_tensor`.
    let mut tensor = unsafe { ManagedTensor::from_raw_versioned(raw) }.unwrap();
    // SAFETY: refused before anything could read the memory as host memory.
    let relabelled = unsafe { tensor.set_device_unchecked(Device::CPU) };
    assert!(matches!(relabelled, Err(Error::AddressOverflow { .. })));
    assert_eq!(tensor.view().device(), Device::new(DeviceType::CUDA, 0));
}

// 3. IS_COPIED on shared memory.

#[test]
fn is_copied_is_refused_for_memory_other_owners_share() {
    let shared: Arc<[f32]> = vec![1.0, 2.0].into();
    let other_owner = Arc::clone(&shared);
    assert_eq!(
        Export::new(shared, &[2])
            .is_copied(true)
            .into_versioned()
            .unwrap_err(),
        Error::CopiedFlagOnSharedMemory
    );
    // The Arc was released by the refused export: `other_owner` is unique again, and so a
    // copy of its own.
    assert_eq!(Arc::strong_count(&other_owner), 1);
    let copy = Export::new(other_owner, &[2])
        .is_copied(true)
        .into_versioned()
        .unwrap();
    assert!(copy.view().flags().is_copied() && !copy.view().is_read_only());
    let from_vec = Export::new(vec![0u8; 3], &[3])
        .is_copied(true)
        .into_versioned()
        .unwrap();
    assert!(from_vec.view().flags().is_copied());
}
