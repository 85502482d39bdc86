//! Typed arguments borrowed through a producer's C exchange API make no heap allocation: a
//! counting global allocator sees none while arguments are extracted, read, written and
//! dropped (after a first call, which fills the per-type cache).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use dlbridge::{Export, ManagedTensor};
use dlbridge_pyo3::{
    ClassTensor, TensorArg, TensorArgMut, TensorClass, produce::publish_exchange_api,
};
use ndarray::{Ix2, IxDyn};
use pyo3::prelude::*;

/// Counts the allocations made on the current thread while armed.
struct CountingAllocator;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn note_allocation() {
    // `try_with`: thread-local storage may be gone while a thread exits.
    let _ = ARMED.try_with(|armed| {
        if armed.get() {
            let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
        }
    });
}

// SAFETY: forwards every call to the system allocator unchanged.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Allocations made by `f` on this thread.
fn allocations_in(f: impl FnOnce()) -> usize {
    ALLOCATIONS.with(|count| count.set(0));
    ARMED.with(|armed| armed.set(true));
    f();
    ARMED.with(|armed| armed.set(false));
    ALLOCATIONS.with(Cell::get)
}

/// A tensor class of this test, publishing the exchange API as any user's class would.
#[pyclass(frozen)]
struct Held {
    inner: ClassTensor,
}

impl TensorClass for Held {
    fn tensor(&self) -> &ClassTensor {
        &self.inner
    }

    fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
        Py::new(
            py,
            Held {
                inner: ClassTensor::new(tensor),
            },
        )
    }
}

fn held<'py>(py: Python<'py>, values: Vec<f32>, shape: &[usize]) -> Bound<'py, PyAny> {
    let tensor = Export::new(values, shape).into_versioned().unwrap();
    Held::new_instance(py, tensor)
        .unwrap()
        .into_bound(py)
        .into_any()
}

/// What a kernel does with its arguments: read one, write the other.
fn kernel(x: &Bound<'_, PyAny>, out: &Bound<'_, PyAny>) -> f32 {
    let x: TensorArg<'_, f32, Ix2> = x.extract().unwrap();
    let mut out: TensorArgMut<'_, f32, Ix2> = out.extract().unwrap();
    out.view_mut().zip_mut_with(&x.view(), |o, &v| *o = 2.0 * v);
    out.view().sum()
}

#[test]
fn borrowed_arguments_make_no_heap_allocation() {
    Python::initialize();
    Python::attach(|py| {
        publish_exchange_api::<Held>(py).unwrap();
        let x = held(py, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        let out = held(py, vec![0.0; 6], &[2, 3]);
        assert_eq!(kernel(&x, &out), 42.0); // fills the per-type cache
        let mut total = 0.0;
        let count = allocations_in(|| {
            for _ in 0..100 {
                total += kernel(&x, &out);
            }
        });
        assert_eq!(total, 4200.0);
        assert_eq!(count, 0, "typed arguments allocated on the borrowed path");
        // A dynamic number of dimensions up to 4 stays inline in ndarray's IxDyn.
        let dynamic = allocations_in(|| {
            let arg: TensorArg<'_, f32, IxDyn> = x.extract().unwrap();
            assert_eq!(arg.view().len(), 6);
        });
        assert_eq!(dynamic, 0);
    });
}
