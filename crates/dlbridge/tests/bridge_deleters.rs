//! The library bridges' exports free the library's memory exactly once, on whatever thread
//! drops the tensor: an allocator that counts the frees of one watched address sees the
//! buffer of a nalgebra `DMatrix`, a faer `Mat` and an image buffer freed once, by the
//! tensor's deleter, after the tensor crossed to another thread, and not before.
#![cfg(all(feature = "nalgebra", feature = "faer", feature = "image"))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use dlbridge::ManagedTensor;
use dlbridge::faer::FaerTensorExt;
use dlbridge::image::ImageTensorExt;
use dlbridge::nalgebra::NalgebraTensorExt;

/// The system allocator, counting the frees of the address in `WATCHED`.
struct CountingAllocator;

static WATCHED: AtomicUsize = AtomicUsize::new(0);
static FREES: AtomicUsize = AtomicUsize::new(0);
/// One watched address at a time: the tests take turns.
static TURN: Mutex<()> = Mutex::new(());

// SAFETY: every call is forwarded to the system allocator unchanged; the counting reads and
// writes atomics only, and allocates nothing.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ptr as usize == WATCHED.load(Ordering::SeqCst) {
            FREES.fetch_add(1, Ordering::SeqCst);
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Exports a library value whose buffer is at `address`, checks the export shares it, drops
/// the tensor on another thread and counts the frees of the buffer.
fn freed_once_from_another_thread(address: usize, export: impl FnOnce() -> ManagedTensor) {
    let _turn = TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    FREES.store(0, Ordering::SeqCst);
    WATCHED.store(address, Ordering::SeqCst);
    let tensor = export();
    assert_eq!(tensor.view().data_ptr() as usize, address, "not zero-copy");
    assert_eq!(FREES.load(Ordering::SeqCst), 0, "freed while exported");
    std::thread::spawn(move || drop(tensor)).join().unwrap();
    assert_eq!(FREES.load(Ordering::SeqCst), 1, "not freed exactly once");
    WATCHED.store(0, Ordering::SeqCst);
}

#[test]
fn a_nalgebra_matrix_is_freed_once_by_the_deleter() {
    let matrix = nalgebra::DMatrix::from_element(3, 4, 1.5f64);
    let address = matrix.as_ptr() as usize;
    freed_once_from_another_thread(address, || {
        ManagedTensor::from_nalgebra_matrix(matrix).unwrap()
    });
    let vector = nalgebra::DVector::from_element(5, 7i32);
    let address = vector.as_ptr() as usize;
    freed_once_from_another_thread(address, || {
        ManagedTensor::from_nalgebra_vector(vector).unwrap()
    });
}

#[test]
fn a_faer_matrix_is_freed_once_by_the_deleter() {
    let matrix = faer::Mat::<f32>::from_fn(7, 3, |i, j| (i + j) as f32);
    let address = matrix.as_ptr() as usize;
    freed_once_from_another_thread(address, || ManagedTensor::from_faer_mat(matrix).unwrap());
}

#[test]
fn an_image_buffer_is_freed_once_by_the_deleter() {
    let image = image::RgbImage::from_pixel(4, 3, image::Rgb([1, 2, 3]));
    let address = image.as_raw().as_ptr() as usize;
    freed_once_from_another_thread(address, || ManagedTensor::from_image_buffer(image).unwrap());
}
