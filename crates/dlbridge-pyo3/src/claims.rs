//! The aliasing registry of typed tensor arguments: the memory that every live
//! [`crate::TensorArg`] and [`crate::TensorArgMut`] reaches, so that memory written through
//! one argument is never reached through another at the same time, on any thread (that
//! would alias a `&mut`).
//!
//! It costs no lock and no atomic read-modify-write: claims are registered while extracting
//! arguments, which holds the GIL, so registrations never run concurrently (free-threaded
//! Python takes a lock instead); a claim is released by one atomic store, from any thread,
//! with or without the GIL. A registration that reads a slot at the moment its claim is
//! released may still see it, which can only refuse an overlap that was real an instant
//! before.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use dlbridge::TensorView;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Claims that can be alive at once (arguments of calls in progress on every thread).
const SLOTS: usize = 256;

const FREE: u8 = 0;
const READ: u8 = 1;
const WRITTEN: u8 = 2;

/// One claim: the bytes `[start, end)` and how they are used.
struct Slot {
    state: AtomicU8,
    start: AtomicUsize,
    end: AtomicUsize,
}

static SLOT_TABLE: [Slot; SLOTS] = [const {
    Slot {
        state: AtomicU8::new(FREE),
        start: AtomicUsize::new(0),
        end: AtomicUsize::new(0),
    }
}; SLOTS];

/// Slots ever used: registrations scan only these.
static HIGH_WATER: AtomicUsize = AtomicUsize::new(0);

/// Serializes registrations where the GIL does not.
#[cfg(Py_GIL_DISABLED)]
static REGISTRATION: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// An argument's claim on the memory it reaches, released on drop.
pub(crate) struct Claim {
    slot: Option<&'static Slot>,
}

impl Claim {
    /// Registers the bytes `view` reaches, read or `written`; refuses (`ValueError`) an
    /// overlap with a written claim, or for a written one with any claim. A tensor without
    /// elements claims nothing.
    pub(crate) fn new(_py: Python<'_>, view: &TensorView<'_>, written: bool) -> PyResult<Self> {
        if view.num_elements() == 0 {
            return Ok(Claim { slot: None });
        }
        let size = view.dtype().size_in_bytes().unwrap_or(1) as i128;
        let (low, high) = view.element_offset_range();
        let base = view.data_ptr() as usize as i128;
        let start = (base + i128::from(low) * size) as usize;
        let end = (base + (i128::from(high) + 1) * size) as usize;

        #[cfg(Py_GIL_DISABLED)]
        let _registration = REGISTRATION
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // From here on no other registration runs (the GIL is held: `_py`), so the slots'
        // ranges change only here; releases only ever set a state to FREE.
        let used = HIGH_WATER.load(Ordering::Relaxed);
        let mut free = None;
        for (index, slot) in SLOT_TABLE[..used].iter().enumerate() {
            let state = slot.state.load(Ordering::Acquire);
            if state == FREE {
                free.get_or_insert(index);
                continue;
            }
            let overlaps = start < slot.end.load(Ordering::Relaxed)
                && slot.start.load(Ordering::Relaxed) < end;
            if overlaps && (written || state == WRITTEN) {
                return Err(PyValueError::new_err(
                    "this tensor's memory overlaps another tensor argument in use, and one of \
                     them is written (TensorArgMut): pass separate tensors",
                ));
            }
        }
        let index = match free {
            Some(index) => index,
            None if used < SLOTS => {
                HIGH_WATER.store(used + 1, Ordering::Relaxed);
                used
            }
            None => {
                return Err(PyValueError::new_err(format!(
                    "more than {SLOTS} tensor arguments are in use at once"
                )))
            }
        };
        let slot = &SLOT_TABLE[index];
        slot.start.store(start, Ordering::Relaxed);
        slot.end.store(end, Ordering::Relaxed);
        slot.state
            .store(if written { WRITTEN } else { READ }, Ordering::Release);
        Ok(Claim { slot: Some(slot) })
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            slot.state.store(FREE, Ordering::Release);
        }
    }
}
