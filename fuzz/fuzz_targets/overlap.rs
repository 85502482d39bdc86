//! Two strided byte layouts -> `dlbridge::overlap::memory_overlap`, the exact test the aliasing
//! registry of typed arguments relies on, against a brute-force search of every byte.
//!
//! The input is two layouts (start, item size, extents, byte strides) and a work budget. Most
//! inputs decode to small layouts (at most 6 dimensions, extents up to 7, strides of any sign
//! up to 64 bytes, item sizes up to 16, starts within 128 bytes of each other), which the
//! brute force can enumerate; a few bytes away are huge or malformed ones.
//!
//! The oracle:
//! - the test never panics, whatever the layouts (malformed ones included); an unlimited
//!   search (exponential in the worst case, by its contract) runs only on layouts the brute
//!   force enumerates, where it answers the same both ways round;
//! - on layouts the brute force enumerates, the unlimited search's answer is the brute
//!   force's, exactly; under any budget (the default, the input's, zero) the answer is the
//!   brute force's or `Undecided`: a budget may only give up, never answer `Disjoint` for
//!   layouts that share a byte (the registry would let two writers alias) nor `Overlapping`
//!   for layouts that do not (a false refusal);
//! - a layout with no element is disjoint from everything, and layouts whose byte ranges do
//!   not meet are disjoint, at any size.
//!
//! `DLBRIDGE_FUZZ_DEBUG=1` prints the layouts an input decodes to and the answers.
#![no_main]

use dlbridge::overlap::{memory_overlap, ByteLayout, Overlap, DEFAULT_MAX_WORK};
use libfuzzer_sys::fuzz_target;

mod choices;
use choices::Choices;

/// Dimensions per layout.
const MAX_DIMS: usize = 6;
/// The most bytes the brute force enumerates per layout.
const MAX_ENUMERATED: u64 = 1 << 14;

/// One layout, owned.
struct Layout {
    start: usize,
    item_size: u64,
    shape: Vec<i64>,
    byte_strides: Vec<i64>,
}

impl Layout {
    fn view(&self) -> ByteLayout<'_> {
        ByteLayout {
            start: self.start,
            item_size: self.item_size,
            shape: &self.shape,
            byte_strides: &self.byte_strides,
        }
    }

    /// Decodes a layout: small and well formed for most inputs, an edge case for some.
    fn decode(c: &mut Choices<'_>, base: usize) -> Layout {
        let ndim = usize::from(c.byte()) % (MAX_DIMS + 1);
        let item_size = match c.byte() % 16 {
            0 => 0, // malformed
            15 => c.u64(),
            n => u64::from(n),
        };
        let start = match c.byte() % 32 {
            31 => c.u64() as usize,
            n => base + usize::from(n) * 4 + usize::from(c.byte() % 4),
        };
        let mut shape = Vec::with_capacity(ndim);
        let mut byte_strides = Vec::with_capacity(ndim);
        for _ in 0..ndim {
            shape.push(match c.byte() % 32 {
                30 => c.extent(), // negative, huge or anything
                31 => i64::from(c.byte()),
                n => i64::from(n % 8),
            });
            byte_strides.push(match c.byte() % 32 {
                30 => c.stride(),
                31 => 0,
                n => (i64::from(n) - 16) * i64::from(1 + c.byte() % 4),
            });
        }
        if c.byte() == 255 {
            byte_strides.pop(); // malformed: one stride short
        }
        Layout {
            start,
            item_size,
            shape,
            byte_strides,
        }
    }

    /// Every byte the layout reaches, sorted and deduplicated, when it is small enough to
    /// enumerate (and well formed).
    fn bytes(&self) -> Option<Vec<i128>> {
        if self.item_size == 0 || self.item_size > 64 || self.shape.len() != self.byte_strides.len()
        {
            return None;
        }
        if self.shape.iter().any(|&extent| extent < 0) {
            return None;
        }
        let mut count = self.item_size;
        for &extent in &self.shape {
            count = count.checked_mul(extent as u64)?;
        }
        if count > MAX_ENUMERATED {
            return None;
        }
        let mut out = Vec::with_capacity(count as usize);
        if self.shape.contains(&0) {
            return Some(out);
        }
        let mut index = vec![0i64; self.shape.len()];
        loop {
            let first = self.start as i128
                + index
                    .iter()
                    .zip(&self.byte_strides)
                    .map(|(&i, &s)| i128::from(i) * i128::from(s))
                    .sum::<i128>();
            out.extend((0..i128::from(self.item_size)).map(|byte| first + byte));
            // An odometer, last dimension fastest.
            let mut dim = self.shape.len();
            loop {
                if dim == 0 {
                    out.sort_unstable();
                    out.dedup();
                    return Some(out);
                }
                dim -= 1;
                index[dim] += 1;
                if index[dim] < self.shape[dim] {
                    break;
                }
                index[dim] = 0;
            }
        }
    }
}

/// Whether two sorted byte lists share a byte.
fn share_a_byte(a: &[i128], b: &[i128]) -> Overlap {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return Overlap::Overlapping,
        }
    }
    Overlap::Disjoint
}

fuzz_target!(|bytes: &[u8]| {
    let mut c = Choices(bytes);
    let base = 0x10_0000;
    let a = Layout::decode(&mut c, base);
    let b = Layout::decode(&mut c, base);
    let budget = match c.byte() % 4 {
        0 => 0,
        1 => u32::from(c.byte()),
        2 => DEFAULT_MAX_WORK,
        _ => u32::MAX,
    };
    let (a_view, b_view) = (a.view(), b.view());

    let enumerated = a.bytes().zip(b.bytes());
    // Unlimited, the search is exponential in the dimensions in the worst case (its contract):
    // only on layouts small enough to enumerate; a budget bounds every other call.
    let unlimited_budget = if enumerated.is_some() {
        u32::MAX
    } else {
        DEFAULT_MAX_WORK
    };
    let budget = if budget == u32::MAX {
        unlimited_budget
    } else {
        budget
    };
    let unlimited = memory_overlap(&a_view, &b_view, unlimited_budget);
    let unlimited_back = memory_overlap(&b_view, &a_view, unlimited_budget);
    let budgeted = memory_overlap(&a_view, &b_view, budget);
    let default = memory_overlap(&a_view, &b_view, DEFAULT_MAX_WORK);
    if std::env::var_os("DLBRIDGE_FUZZ_DEBUG").is_some() {
        eprintln!("{a_view:?}\n{b_view:?}\nbudget {budget}: {budgeted:?}; default: {default:?}; searched without limit where enumerable: {unlimited:?}");
    }

    let well_formed = |l: &Layout| {
        l.item_size > 0
            && l.shape.len() == l.byte_strides.len()
            && l.shape.iter().all(|&extent| extent >= 0)
    };
    if well_formed(&a) && well_formed(&b) {
        // No element: disjoint from everything, at any size and budget.
        if a.shape.contains(&0) || b.shape.contains(&0) {
            for answer in [unlimited, budgeted, default] {
                assert_eq!(
                    answer,
                    Overlap::Disjoint,
                    "an empty layout overlaps: {a_view:?} {b_view:?}"
                );
            }
        }
        // Byte ranges that do not meet: disjoint, at any size and budget.
        if let (Some((a_low, a_high)), Some((b_low, b_high))) =
            (a_view.byte_range(), b_view.byte_range())
        {
            if a_high <= b_low || b_high <= a_low {
                for answer in [unlimited, budgeted, default] {
                    assert_eq!(
                        answer,
                        Overlap::Disjoint,
                        "apart, yet {answer:?}: {a_view:?} {b_view:?}"
                    );
                }
            }
        }
    }

    let Some((a_bytes, b_bytes)) = enumerated else {
        return;
    };
    let truth = share_a_byte(&a_bytes, &b_bytes);
    assert_eq!(
        unlimited, truth,
        "unlimited search wrong for {a_view:?} {b_view:?}"
    );
    assert_eq!(
        unlimited_back, truth,
        "unlimited search wrong the other way round for {a_view:?} {b_view:?}"
    );
    for (name, answer) in [("budgeted", budgeted), ("default budget", default)] {
        assert!(
            answer == truth || answer == Overlap::Undecided,
            "{name} ({budget} units) says {answer:?}, the bytes say {truth:?}: {a_view:?} {b_view:?}"
        );
    }
});
