//! Proof that an export takes exactly one heap allocation (and frees exactly one): a counting
//! global allocator, armed only on the test's own thread.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use dlbridge::{Export, ManagedTensor};

struct CountingAllocator;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
    static DEALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; the counters are const-initialised thread locals
// without destructors, which never allocate.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if ARMED.with(Cell::get) {
            ALLOCATIONS.with(|c| c.set(c.get() + 1));
        }
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ARMED.with(Cell::get) {
            DEALLOCATIONS.with(|c| c.set(c.get() + 1));
        }
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Runs `f` and returns (allocations, deallocations) made on this thread meanwhile.
fn count<R>(f: impl FnOnce() -> R) -> (R, usize, usize) {
    ALLOCATIONS.with(|c| c.set(0));
    DEALLOCATIONS.with(|c| c.set(0));
    ARMED.with(|a| a.set(true));
    let result = f();
    ARMED.with(|a| a.set(false));
    (
        result,
        ALLOCATIONS.with(Cell::get),
        DEALLOCATIONS.with(Cell::get),
    )
}

#[test]
fn export_is_exactly_one_allocation_and_drop_frees_it_and_the_owner() {
    for shape in [&[][..], &[6][..], &[2, 3][..], &[1, 2, 3, 1][..]] {
        let data = vec![1.0f32; 6];
        let data = if shape.is_empty() { vec![1.0] } else { data };
        let (tensor, allocations, deallocations) =
            count(|| Export::new(data, shape).into_versioned().unwrap());
        assert_eq!((allocations, deallocations), (1, 0), "shape {shape:?}");
        // Drop frees the block and the Vec: two deallocations, nothing allocated.
        let ((), allocations, deallocations) = count(|| drop(tensor));
        assert_eq!((allocations, deallocations), (0, 2), "shape {shape:?}");
    }
}

#[test]
fn strided_and_legacy_exports_are_one_allocation_too() {
    let data = vec![0u8; 12];
    let (tensor, allocations, _) = count(|| {
        Export::new(data, &[3, 4])
            .strides(&[1, 3])
            .into_legacy()
            .unwrap()
    });
    assert_eq!(allocations, 1);
    let (raw, allocations, deallocations) = count(|| tensor.into_raw());
    assert_eq!((allocations, deallocations), (0, 0));
    // Import + validate + drop of a 4-d versioned tensor allocates nothing; the drop frees
    // the export's block and its Vec.
    let four_d = Export::new(vec![0f32; 120], &[2, 3, 4, 5])
        .into_versioned()
        .unwrap();
    let raw4 = four_d.into_raw();
    let ((), allocations, deallocations) = count(|| {
        // SAFETY: our own export, imported once.
        let tensor = unsafe { ManagedTensor::from_raw(raw4) }.unwrap();
        assert_eq!(tensor.view().num_elements(), 120);
    });
    assert_eq!((allocations, deallocations), (0, 2));
    // SAFETY: a live export, deleted once.
    unsafe { raw.delete() };
}
