//! Test support (unit tests only): the test binary's global allocator, the system's, which
//! tells a test how many times given heap blocks were freed while it watched them. A leak
//! check that would otherwise rely on Miri or LeakSanitizer to notice a block never freed (or
//! freed twice) asserts it itself.
//!
//! Only the watching thread's frees are seen (tests run side by side), and a watched address
//! handed out again by an allocation stops being watched: it is then another block.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many blocks one thread can watch at once.
const SLOTS: usize = 4;

thread_local! {
    /// The addresses this thread watches (0: a slot not in use).
    static WATCHED: [Cell<usize>; SLOTS] = const { [const { Cell::new(0) }; SLOTS] };
    /// How many times each watched address was freed.
    static FREES: [Cell<usize>; SLOTS] = const { [const { Cell::new(0) }; SLOTS] };
}

/// How many threads are watching: until one is, the allocator only forwards.
static WATCHERS: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, telling [`frees`] what it frees.
struct WatchingAllocator;

/// `address` was freed (or handed out again: `reused`) on this thread.
fn note(address: usize, reused: bool) {
    // `try_with`: a thread's locals may be gone while it exits; nothing is watched then.
    let _ = WATCHED.try_with(|watched| {
        for (slot, watched) in watched.iter().enumerate() {
            if watched.get() == address {
                if reused {
                    watched.set(0);
                } else {
                    let _ = FREES.try_with(|frees| frees[slot].set(frees[slot].get() + 1));
                }
            }
        }
    });
}

// SAFETY: forwards every call to the system allocator unchanged; the bookkeeping uses
// const-initialised thread locals without destructors, which never allocate.
unsafe impl GlobalAlloc for WatchingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let block = unsafe { System.alloc(layout) };
        if WATCHERS.load(Ordering::Relaxed) != 0 {
            note(block.addr(), true);
        }
        block
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let block = unsafe { System.alloc_zeroed(layout) };
        if WATCHERS.load(Ordering::Relaxed) != 0 {
            note(block.addr(), true);
        }
        block
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if WATCHERS.load(Ordering::Relaxed) != 0 {
            note(ptr.addr(), false);
        }
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded contract.
        let block = unsafe { System.realloc(ptr, layout, new_size) };
        if WATCHERS.load(Ordering::Relaxed) != 0 && !block.is_null() && block != ptr {
            note(ptr.addr(), false);
            note(block.addr(), true);
        }
        block
    }
}

#[global_allocator]
static GLOBAL: WatchingAllocator = WatchingAllocator;

/// Runs `f` on this thread and returns how many times each of `blocks` (heap blocks live when
/// it is called, by their first byte) was freed meanwhile: `[1, 1]` after dropping what owns
/// two blocks, `0` for a leak.
pub(crate) fn frees<const N: usize>(blocks: [*const u8; N], f: impl FnOnce()) -> [usize; N] {
    assert!(
        N <= SLOTS,
        "alloc_watch: {N} blocks, at most {SLOTS} at once"
    );
    WATCHED.with(|watched| {
        assert!(
            watched.iter().all(|slot| slot.get() == 0),
            "alloc_watch: `frees` does not nest"
        );
        for (slot, block) in watched.iter().zip(blocks) {
            slot.set(block.addr());
        }
    });
    FREES.with(|frees| frees.iter().for_each(|count| count.set(0)));
    WATCHERS.fetch_add(1, Ordering::Relaxed);
    // Unwatched again even if `f` panics.
    struct Unwatch;
    impl Drop for Unwatch {
        fn drop(&mut self) {
            WATCHERS.fetch_sub(1, Ordering::Relaxed);
            WATCHED.with(|watched| watched.iter().for_each(|slot| slot.set(0)));
        }
    }
    let unwatch = Unwatch;
    f();
    drop(unwatch);
    FREES.with(|frees| std::array::from_fn(|slot| frees[slot].get()))
}

#[cfg(test)]
mod tests {
    use super::frees;

    #[test]
    fn frees_of_watched_blocks_are_counted_on_this_thread_only() {
        let a = Box::new(1u64);
        let b = vec![0u8; 16];
        let kept = Box::new(2u64);
        let (pa, pb, pk) = (
            (&raw const *a).cast::<u8>(),
            b.as_ptr(),
            (&raw const *kept).cast::<u8>(),
        );
        assert_eq!(frees([pa, pb, pk], || drop((a, b))), [1, 1, 0]);
        // Freed on another thread: not seen.
        let c = Box::new(3u64);
        let pc = (&raw const *c).cast::<u8>();
        assert_eq!(
            frees([pc], || std::thread::spawn(move || drop(c)).join().unwrap()),
            [0]
        );
        drop(kept);
    }
}
