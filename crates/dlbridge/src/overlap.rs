//! Exact memory-overlap test for strided tensors.
//!
//! [`memory_overlap`] decides whether two strided tensors share at least one byte of memory.
//! It is exact: two interleaved views of one buffer, such as `x[:, ::2]` and `x[:, 1::2]`,
//! are [`Disjoint`](Overlap::Disjoint) although their byte ranges intersect, while views that
//! really share an element are [`Overlapping`](Overlap::Overlapping).
//!
//! The test never allocates on the heap and never panics, whatever its inputs.
//!
//! ```
//! use dlbridge::overlap::{memory_overlap, ByteLayout, Overlap, DEFAULT_MAX_WORK};
//!
//! // A float32 matrix of shape (3, 5), row-major: byte strides (20, 4).
//! let base = 0x1000;
//! // x[:, ::2] has shape (3, 3) and byte strides (20, 8); x[:, 1::2] has shape (3, 2) and
//! // starts one element later.
//! let even = ByteLayout { start: base, item_size: 4, shape: &[3, 3], byte_strides: &[20, 8] };
//! let odd = ByteLayout { start: base + 4, item_size: 4, shape: &[3, 2], byte_strides: &[20, 8] };
//! assert_eq!(memory_overlap(&even, &odd, DEFAULT_MAX_WORK), Overlap::Disjoint);
//!
//! // x[:, 1] (shape (3,), byte stride 20) lies inside x[:, 1::2].
//! let column = ByteLayout { start: base + 4, item_size: 4, shape: &[3], byte_strides: &[20] };
//! assert_eq!(memory_overlap(&odd, &column, DEFAULT_MAX_WORK), Overlap::Overlapping);
//! ```
//!
//! # How it decides
//!
//! 1. If the byte ranges ([`ByteLayout::byte_range`]) of the two tensors do not intersect,
//!    they are disjoint. This one pass over the dimensions decides the common case of two
//!    different buffers.
//! 2. Otherwise a shared byte is a solution of one bounded linear equation in integers,
//!    `c_1 x_1 + ... + c_n x_n = B` with `c_t > 0` and `0 <= x_t <= u_t`: one unknown per
//!    dimension of each tensor (its index), plus one for the byte inside each element. Negative
//!    coefficients are turned positive by replacing `x` with `u - x`; unknowns with equal
//!    coefficients are merged, since `x_1 + x_2` takes every value of `0..=u_1 + u_2`.
//! 3. A depth-first search over the unknowns, largest coefficient first, decides whether the
//!    equation has a solution. At each step only the values that keep the rest of the
//!    equation reachable are tried: those in the range left by the bounds of the remaining
//!    unknowns, and in the one residue class for which the greatest common divisor of the
//!    remaining coefficients divides what is left of `B`. Every value tried is one unit of
//!    work; past the budget, the answer is [`Overlap::Undecided`].
//!
//! The problem is NP-hard in general (it contains subset sum), so the budget bounds the cost;
//! the views that real programs build (slices, steps, transposes, broadcasts, reversals) are
//! decided in a few units.

use crate::error::MAX_NDIM;

/// The bytes a strided tensor reaches in memory.
///
/// The element of multi-index `i` occupies the bytes
/// `start + Σ i[k] * byte_strides[k]` up to, not including, that plus `item_size`, for every
/// `i` with `0 <= i[k] < shape[k]`. Addresses are plain integers: nothing is ever read through
/// them.
///
/// A well-formed layout has `shape.len() == byte_strides.len()`, `item_size > 0` and no
/// negative extent; [`memory_overlap`] answers [`Overlap::Undecided`] for any other, and
/// [`ByteLayout::byte_range`] answers `None`.
///
/// ```
/// use dlbridge::overlap::ByteLayout;
///
/// // A float64 matrix of shape (2, 3) in column-major order, at address 0x2000.
/// let layout = ByteLayout {
///     start: 0x2000,
///     item_size: 8,
///     shape: &[2, 3],
///     byte_strides: &[8, 16],
/// };
/// assert_eq!(layout.byte_range(), Some((0x2000, 0x2000 + 48)));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ByteLayout<'a> {
    /// Address of the first element (data + byte_offset) as an integer.
    pub start: usize,
    /// Bytes per element (> 0).
    pub item_size: u64,
    /// Extents (each >= 0).
    pub shape: &'a [i64],
    /// Strides in BYTES (any sign, zero allowed), one per extent.
    pub byte_strides: &'a [i64],
}

/// The answer of [`memory_overlap`].
///
/// A caller that must be safe treats [`Undecided`](Overlap::Undecided) like
/// [`Overlapping`](Overlap::Overlapping):
///
/// ```
/// use dlbridge::overlap::{memory_overlap, ByteLayout, Overlap, DEFAULT_MAX_WORK};
///
/// let a = ByteLayout { start: 0, item_size: 4, shape: &[8], byte_strides: &[4] };
/// let b = ByteLayout { start: 16, item_size: 4, shape: &[8], byte_strides: &[4] };
/// let may_alias = memory_overlap(&a, &b, DEFAULT_MAX_WORK) != Overlap::Disjoint;
/// assert!(may_alias);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// No byte is reached by both tensors.
    Disjoint,
    /// At least one byte is reached by both tensors.
    Overlapping,
    /// The search ran past its work budget, or a layout is malformed or too large to search
    /// (see [`memory_overlap`]). The tensors may or may not overlap.
    Undecided,
}

/// Default work budget of [`memory_overlap`]: 4096 units, each one value tried by the search.
///
/// A unit costs a few integer operations, about 15 ns on a current x86-64 CPU, so a search
/// that exhausts the budget takes about 70 µs; a call that needs no search (byte ranges that
/// do not intersect) takes about 10 ns, and the usual interleaved views about 100 ns. The
/// views that programs build decide in a handful of units: two interleaved column slices of
/// a matrix need one, the same column twice two, a matrix against its transpose three. What
/// exhausts the budget is an adversarial layout, many dimensions with unrelated strides built
/// so that the equation behind the test (see the [module documentation](self)) is a hard
/// subset-sum problem: 20 dimensions of extent 2 with byte strides 1001 to 1020 need over
/// 260 000 units to prove that byte 10 500 is not reached.
///
/// ```
/// use dlbridge::overlap::{memory_overlap, ByteLayout, Overlap, DEFAULT_MAX_WORK};
///
/// // x[::2] and x[1::2] of a byte vector of length 100: decided far below the budget.
/// let even = ByteLayout { start: 0, item_size: 1, shape: &[50], byte_strides: &[2] };
/// let odd = ByteLayout { start: 1, item_size: 1, shape: &[50], byte_strides: &[2] };
/// assert_eq!(memory_overlap(&even, &odd, DEFAULT_MAX_WORK), Overlap::Disjoint);
/// ```
pub const DEFAULT_MAX_WORK: u32 = 4096;

/// Whether two strided tensors share at least one byte of memory, exactly.
///
/// The answer is [`Overlap::Disjoint`] or [`Overlap::Overlapping`], computed exactly, unless
/// the search needs more than `max_work` units (one unit per value tried; see
/// [`DEFAULT_MAX_WORK`]), where it is [`Overlap::Undecided`]. `max_work == u32::MAX` means no
/// limit: the search then always decides, in time that is exponential in the number of
/// dimensions in the worst case. With `max_work == 0` only the checks that need no search
/// decide (empty tensors, byte ranges that do not intersect, and checks of the equation as a
/// whole, such as divisibility by the gcd of all its coefficients).
///
/// - A tensor with a zero extent reaches no byte: it is disjoint from everything, including
///   itself.
/// - Stride 0 (broadcasting), negative strides and strides that are not multiples of
///   `item_size` are all allowed.
/// - A malformed layout (`shape.len() != byte_strides.len()`, `item_size == 0`, a negative
///   extent) gives [`Overlap::Undecided`].
/// - So do well-formed layouts whose byte ranges intersect but whose search would need more
///   than `2 * MAX_NDIM + 1` unknowns (dimensions with an extent above 1 and a non-zero
///   stride, plus one; see [`MAX_NDIM`]), or whose equation does not fit in 128-bit integers
///   (far beyond any address space).
///
/// The function never allocates on the heap and never panics. When it searches, its stack
/// use is about 1.5 KiB if at most 16 dimensions of the two layouts together have an extent
/// above 1 and a non-zero stride, and about 160 KiB beyond that.
///
/// ```
/// use dlbridge::overlap::{memory_overlap, ByteLayout, Overlap, DEFAULT_MAX_WORK};
///
/// // A float32 matrix of shape (4, 4) at 0x1000, and its transpose: the same bytes.
/// let x = ByteLayout { start: 0x1000, item_size: 4, shape: &[4, 4], byte_strides: &[16, 4] };
/// let xt = ByteLayout { start: 0x1000, item_size: 4, shape: &[4, 4], byte_strides: &[4, 16] };
/// assert_eq!(memory_overlap(&x, &xt, DEFAULT_MAX_WORK), Overlap::Overlapping);
///
/// // Its first row, and its first row reversed.
/// let row = ByteLayout { start: 0x1000, item_size: 4, shape: &[4], byte_strides: &[4] };
/// let reversed = ByteLayout { start: 0x100c, item_size: 4, shape: &[4], byte_strides: &[-4] };
/// assert_eq!(memory_overlap(&row, &reversed, DEFAULT_MAX_WORK), Overlap::Overlapping);
///
/// // Its second row, broadcast to shape (3, 4): no byte of the first row.
/// let second = ByteLayout { start: 0x1010, item_size: 4, shape: &[3, 4], byte_strides: &[0, 4] };
/// assert_eq!(memory_overlap(&row, &second, DEFAULT_MAX_WORK), Overlap::Disjoint);
///
/// // A different buffer.
/// let y = ByteLayout { start: 0x8000, item_size: 4, shape: &[4, 4], byte_strides: &[16, 4] };
/// assert_eq!(memory_overlap(&x, &y, DEFAULT_MAX_WORK), Overlap::Disjoint);
/// ```
pub fn memory_overlap(a: &ByteLayout<'_>, b: &ByteLayout<'_>, max_work: u32) -> Overlap {
    match (a.scan(), b.scan()) {
        (Scan::Malformed, _) | (_, Scan::Malformed) => Overlap::Undecided,
        (Scan::Empty, _) | (_, Scan::Empty) => Overlap::Disjoint,
        (Scan::Range(a_low, a_high), Scan::Range(b_low, b_high)) => {
            if a_high <= b_low || b_high <= a_low {
                Overlap::Disjoint
            } else {
                exact(a, b, max_work)
            }
        }
    }
}

impl ByteLayout<'_> {
    /// The bytes the tensor reaches lie in `[low, high)`: `low` is the lowest byte of an
    /// element and `high` is one past the highest.
    ///
    /// `None` if the tensor reaches no byte (a zero extent) or the layout is malformed
    /// (`shape.len() != byte_strides.len()`, `item_size == 0`, a negative extent). Bounds
    /// beyond the `i128` range, impossible for real memory, saturate, so the range always
    /// contains every byte reached.
    ///
    /// ```
    /// use dlbridge::overlap::ByteLayout;
    ///
    /// // Four int16 elements read backwards from address 100: bytes 94..102.
    /// let reversed = ByteLayout { start: 100, item_size: 2, shape: &[4], byte_strides: &[-2] };
    /// assert_eq!(reversed.byte_range(), Some((94, 102)));
    ///
    /// // A scalar (no dimensions) is one element.
    /// let scalar = ByteLayout { start: 100, item_size: 8, shape: &[], byte_strides: &[] };
    /// assert_eq!(scalar.byte_range(), Some((100, 108)));
    ///
    /// let empty = ByteLayout { start: 100, item_size: 8, shape: &[3, 0], byte_strides: &[8, 8] };
    /// assert_eq!(empty.byte_range(), None);
    /// ```
    pub fn byte_range(&self) -> Option<(i128, i128)> {
        match self.scan() {
            Scan::Range(low, high) => Some((low, high)),
            Scan::Empty | Scan::Malformed => None,
        }
    }

    /// One pass over the dimensions: validity, emptiness and the byte range.
    fn scan(&self) -> Scan {
        if self.item_size == 0 || self.shape.len() != self.byte_strides.len() {
            return Scan::Malformed;
        }
        let mut low = self.start as i128;
        let mut high = low + i128::from(self.item_size);
        let mut empty = false;
        for (&extent, &stride) in self.shape.iter().zip(self.byte_strides) {
            if extent < 0 {
                return Scan::Malformed;
            }
            empty |= extent == 0;
            // |extent - 1| < 2^63 and |stride| <= 2^63: the product fits in an i128.
            let reach = i128::from(extent.saturating_sub(1)) * i128::from(stride);
            if reach < 0 {
                low = low.saturating_add(reach);
            } else {
                high = high.saturating_add(reach);
            }
        }
        if empty {
            Scan::Empty
        } else {
            Scan::Range(low, high)
        }
    }
}

/// What [`ByteLayout::scan`] found.
enum Scan {
    Malformed,
    Empty,
    Range(i128, i128),
}

/// Unknowns held in the small stack frame: 16 dimensions in all, and the byte unknown.
const SMALL_TERMS: usize = 2 * 8 + 1;

/// The most unknowns the search holds: two layouts of [`MAX_NDIM`] dimensions, and the byte.
const MAX_TERMS: usize = 2 * MAX_NDIM as usize + 1;

/// One unknown `x` of the equation `Σ c x = B`, `0 <= x <= u`, with the search's state for it.
#[derive(Clone, Copy)]
struct Term {
    /// Coefficient, > 0.
    c: u64,
    /// Greatest common divisor of this coefficient and all those after it.
    d: u64,
    /// The values of `x` that leave a remainder divisible by the coefficients after this one
    /// form one residue class modulo `m` (0 for the last unknown).
    m: u64,
    /// The inverse of `c / d` modulo `m`.
    inv: u64,
    /// Upper bound, >= 1.
    u: u128,
    /// The value the search is trying.
    x: u128,
    /// The largest value the search may try at the current step.
    hi: u128,
}

const ZERO_TERM: Term = Term {
    c: 0,
    d: 0,
    m: 0,
    inv: 0,
    u: 0,
    x: 0,
    hi: 0,
};

/// Step 2 and 3 of the algorithm for layouts whose byte ranges intersect: picks the stack
/// size from the number of unknowns.
fn exact(a: &ByteLayout<'_>, b: &ByteLayout<'_>, max_work: u32) -> Overlap {
    let terms = unknowns(a, false).count() + unknowns(b, false).count() + 1;
    if terms <= SMALL_TERMS {
        solve::<SMALL_TERMS>(a, b, max_work)
    } else if terms <= MAX_TERMS {
        solve::<MAX_TERMS>(a, b, max_work)
    } else {
        Overlap::Undecided
    }
}

/// Builds the equation of a shared byte with at most `N` unknowns, then searches it.
///
/// Kept out of line so that the large stack frame is only reserved when it is used.
#[inline(never)]
fn solve<const N: usize>(a: &ByteLayout<'_>, b: &ByteLayout<'_>, max_work: u32) -> Overlap {
    // A byte shared by element i of `a` (byte p inside it) and element j of `b` (byte q):
    //   a.start + Σ i_k α_k + p = b.start + Σ j_k β_k + q,
    //   Σ i_k α_k - Σ j_k β_k + p + (s_b - 1 - q) = b.start - a.start + (s_b - 1).
    // Every term with a negative coefficient -c becomes c * (u - x), which adds c * u to the
    // right side.
    let mut terms = [ZERO_TERM; N];
    let mut n = 0;
    let mut target = b.start as i128 - a.start as i128 + i128::from(b.item_size - 1);
    let byte_bound = u128::from(a.item_size - 1) + u128::from(b.item_size - 1);
    if byte_bound > 0 {
        terms[0] = Term {
            c: 1,
            u: byte_bound,
            ..ZERO_TERM
        };
        n = 1;
    }
    for (c, negative, extent) in unknowns(a, false).chain(unknowns(b, true)) {
        // `exact` counted these terms: there is room (checked anyway, without panicking).
        let Some(term) = terms.get_mut(n) else {
            return Overlap::Undecided;
        };
        let u = (extent - 1) as u128; // extent > 1
        if negative {
            // c <= 2^63 and u < 2^63: the product fits in an i128.
            match target.checked_add((u128::from(c) * u) as i128) {
                Some(sum) => target = sum,
                None => return Overlap::Undecided,
            }
        }
        *term = Term { c, u, ..ZERO_TERM };
        n += 1;
    }
    let Ok(target) = u128::try_from(target) else {
        return Overlap::Disjoint; // B < 0: below the lowest reachable sum
    };
    let terms = &mut terms[..n];
    // No x can exceed B / c: clamping keeps every c * u <= B, and the sums below small.
    for term in terms.iter_mut() {
        term.u = term.u.min(div(target, term.c));
    }
    // Largest coefficient first; then merge equal coefficients (x1 + x2 covers 0..=u1 + u2)
    // and drop unknowns that must be 0.
    terms.sort_unstable_by_key(|term| std::cmp::Reverse(term.c));
    let mut len = 0;
    for i in 0..terms.len() {
        let term = terms[i];
        if term.u == 0 {
            continue;
        }
        if len > 0 && terms[len - 1].c == term.c {
            let merged = &mut terms[len - 1];
            merged.u = (merged.u + term.u).min(div(target, term.c));
        } else {
            terms[len] = term;
            len += 1;
        }
    }
    let terms = &mut terms[..len];
    // Σ c u: each product is at most B < 2^127; the sum of 2049 of them may not fit.
    let mut total: u128 = 0;
    for term in terms.iter() {
        match total.checked_add(u128::from(term.c) * term.u) {
            Some(sum) => total = sum,
            None => return Overlap::Undecided,
        }
    }
    if target > total {
        return Overlap::Disjoint;
    }
    if terms.is_empty() {
        // Σ c x is 0, and B <= 0 = total.
        return Overlap::Overlapping;
    }
    // Divisibility: g runs over the gcd of the coefficients after each unknown.
    let mut g = 0;
    for term in terms.iter_mut().rev() {
        term.d = gcd(term.c, g);
        term.m = g / term.d;
        term.inv = inverse(term.c / term.d, term.m);
        g = term.d;
    }
    if rem(target, g) != 0 {
        return Overlap::Disjoint;
    }
    search(terms, target, total, max_work)
}

/// The dimensions of `layout` that make an unknown (extent above 1, stride not 0), as
/// (|coefficient|, coefficient negative, extent); the coefficients are the strides, negated
/// when `negate`.
fn unknowns<'a>(
    layout: &ByteLayout<'a>,
    negate: bool,
) -> impl Iterator<Item = (u64, bool, i64)> + 'a + use<'a> {
    layout
        .shape
        .iter()
        .zip(layout.byte_strides)
        .filter(|&(&extent, &stride)| extent > 1 && stride != 0)
        .map(move |(&extent, &stride)| (stride.unsigned_abs(), (stride < 0) != negate, extent))
}

/// The depth-first search of step 3: whether `Σ c x = target` has a solution within the
/// bounds, where `total = Σ c u` and the terms are sorted by decreasing coefficient, with
/// `d`, `m` and `inv` set, and `target` divisible by the first `d`.
fn search(terms: &mut [Term], target: u128, total: u128, max_work: u32) -> Overlap {
    let last = terms.len() - 1;
    let mut work: u64 = 0;
    let mut spend = || {
        if max_work != u32::MAX && work >= u64::from(max_work) {
            return false;
        }
        work += 1;
        true
    };
    // The search is at unknown `t`; `rest` is B minus the values chosen before `t`, and
    // `reach` is the sum of c * u from `t` on. Invariant: the first `d` divides `rest`.
    let mut t = 0;
    let mut rest = target;
    let mut reach = total;
    loop {
        // Choose the first value of unknown `t`.
        let term = &mut terms[t];
        let c = u128::from(term.c);
        let after = reach - c * term.u; // Σ c * u after `t`
        let mut descended = false;
        if t == last {
            if !spend() {
                return Overlap::Undecided;
            }
            if rem(rest, term.c) == 0 && div(rest, term.c) <= term.u {
                return Overlap::Overlapping;
            }
        } else {
            // The rest after `t` must lie in [0, after]; it must be divisible by the gcd of
            // the coefficients after `t`, which holds for x ≡ x0 (mod m).
            let low = if rest > after {
                div(rest - after - 1, term.c) + 1
            } else {
                0
            };
            let high = term.u.min(div(rest, term.c));
            if low <= high {
                let m = u128::from(term.m);
                // rest / d mod m and inv are below m < 2^64: the product fits.
                let x0 = rem(
                    rem(div(rest, term.d), term.m) * u128::from(term.inv),
                    term.m,
                );
                let r = rem(low, term.m);
                let x = if x0 >= r {
                    low + (x0 - r)
                } else {
                    low + (m - r) + x0
                };
                if x <= high {
                    if !spend() {
                        return Overlap::Undecided;
                    }
                    term.x = x;
                    term.hi = high;
                    rest -= c * x;
                    reach = after;
                    t += 1;
                    descended = true;
                }
            }
        }
        if descended {
            continue;
        }
        // No value left at `t`: back up to the nearest unknown with another value to try.
        loop {
            if t == 0 {
                return Overlap::Disjoint;
            }
            t -= 1;
            let term = &mut terms[t];
            let c = u128::from(term.c);
            rest += c * term.x;
            let next = term.x + u128::from(term.m); // x <= B < 2^127, m < 2^64
            if next <= term.hi {
                if !spend() {
                    return Overlap::Undecided;
                }
                term.x = next;
                rest -= c * next;
                t += 1;
                break;
            }
            reach += c * term.u;
        }
    }
}

/// `x / y` for `y > 0`, with a 64-bit division when `x` fits (several times faster than a
/// 128-bit one, and the common case).
fn div(x: u128, y: u64) -> u128 {
    match u64::try_from(x) {
        Ok(x) => u128::from(x / y),
        Err(_) => x / u128::from(y),
    }
}

/// `x % y` for `y > 0`, with a 64-bit division when `x` fits.
fn rem(x: u128, y: u64) -> u128 {
    match u64::try_from(x) {
        Ok(x) => u128::from(x % y),
        Err(_) => x % u128::from(y),
    }
}

/// Greatest common divisor; `gcd(x, 0) == x`.
fn gcd(mut x: u64, mut y: u64) -> u64 {
    while y != 0 {
        (x, y) = (y, x % y);
    }
    x
}

/// The inverse of `x` modulo `m`, for `x` coprime to `m`; 0 when `m` is 0 or 1.
fn inverse(x: u64, m: u64) -> u64 {
    if m <= 1 {
        return 0;
    }
    // Extended Euclid: s * x ≡ r (mod m) throughout; every |s| stays at most m.
    let (mut r0, mut r1) = (x % m, m);
    let (mut s0, mut s1) = (1i128, 0i128);
    while r1 != 0 {
        let q = r0 / r1;
        (r0, r1) = (r1, r0 % r1);
        (s0, s1) = (s1, s0 - i128::from(q) * s1);
    }
    s0.rem_euclid(i128::from(m)) as u64
}

#[cfg(test)]
mod tests;
