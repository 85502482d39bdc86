//! The overlap search's tests: hand-written cases, each rule's edge, and the exact answer
//! against a brute-force search of every byte on random small layouts.

use super::*;

const UNLIMITED: u32 = u32::MAX;

fn layout<'a>(
    start: usize,
    item_size: u64,
    shape: &'a [i64],
    strides: &'a [i64],
) -> ByteLayout<'a> {
    ByteLayout {
        start,
        item_size,
        shape,
        byte_strides: strides,
    }
}

/// Both orders, checking that the answer is symmetric.
fn overlap(a: &ByteLayout<'_>, b: &ByteLayout<'_>, max_work: u32) -> Overlap {
    let forward = memory_overlap(a, b, max_work);
    let backward = memory_overlap(b, a, max_work);
    if max_work == UNLIMITED {
        assert_eq!(forward, backward, "asymmetric answer for {a:?} and {b:?}");
    }
    forward
}

/// Every byte the layout reaches, sorted and deduplicated.
fn bytes(layout: &ByteLayout<'_>) -> Vec<i128> {
    let mut out = Vec::new();
    let ndim = layout.shape.len();
    if layout.shape.contains(&0) {
        return out;
    }
    let mut index = vec![0i64; ndim];
    loop {
        let base = layout.start as i128
            + index
                .iter()
                .zip(layout.byte_strides)
                .map(|(&i, &s)| i128::from(i) * i128::from(s))
                .sum::<i128>();
        out.extend((0..i128::from(layout.item_size)).map(|p| base + p));
        // Odometer increment, last dimension fastest.
        let mut k = ndim;
        loop {
            if k == 0 {
                out.sort_unstable();
                out.dedup();
                return out;
            }
            k -= 1;
            index[k] += 1;
            if index[k] < layout.shape[k] {
                break;
            }
            index[k] = 0;
        }
    }
}

fn brute_force(a: &ByteLayout<'_>, b: &ByteLayout<'_>) -> Overlap {
    let (a, b) = (bytes(a), bytes(b));
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

/// xorshift64: a deterministic, dependency-free pseudo-random generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `low..=high` (the bias of `%` does not matter here).
    fn range(&mut self, low: i64, high: i64) -> i64 {
        low + (self.next() % (high - low + 1) as u64) as i64
    }
}

struct Owned {
    start: usize,
    item_size: u64,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

impl Owned {
    fn random(rng: &mut Rng) -> Owned {
        let ndim = rng.range(0, 3) as usize;
        // Extent 0 one time in 16, so that most pairs reach some bytes.
        let shape = (0..ndim)
            .map(|_| {
                if rng.range(0, 15) == 0 {
                    0
                } else {
                    rng.range(1, 4)
                }
            })
            .collect();
        let strides = (0..ndim).map(|_| rng.range(-12, 12)).collect();
        let item_size = [1, 2, 3, 4, 8][rng.range(0, 4) as usize];
        let start = rng.range(0, 40) as usize;
        Owned {
            start,
            item_size,
            shape,
            strides,
        }
    }

    fn view(&self) -> ByteLayout<'_> {
        layout(self.start, self.item_size, &self.shape, &self.strides)
    }
}

#[test]
fn agrees_with_brute_force() {
    let pairs = if cfg!(miri) { 60 } else { 30_000 };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut interleaved, mut overlapping) = (0, 0);
    for pair in 0..pairs {
        let a = Owned::random(&mut rng);
        let mut b = Owned::random(&mut rng);
        if pair % 2 == 1 {
            // Another view of the same strided grid as `a`: strides shuffled and negated,
            // the start moved a little.
            b.strides.clone_from(&a.strides);
            b.shape.resize(a.strides.len(), 2);
            for k in (1..b.strides.len()).rev() {
                b.strides.swap(k, rng.range(0, k as i64) as usize);
            }
            for stride in &mut b.strides {
                if rng.range(0, 3) == 0 {
                    *stride = -*stride;
                }
            }
            b.start = a.start + rng.range(0, 12) as usize;
            if rng.range(0, 1) == 0 {
                b.item_size = a.item_size;
            }
        }
        let (a, b) = (a.view(), b.view());
        let expected = brute_force(&a, &b);
        assert_eq!(overlap(&a, &b, UNLIMITED), expected, "{a:?} and {b:?}");
        let ranges_meet = matches!((a.byte_range(), b.byte_range()),
            (Some((al, ah)), Some((bl, bh))) if al < bh && bl < ah);
        match expected {
            Overlap::Overlapping => overlapping += 1,
            _ if ranges_meet => interleaved += 1,
            _ => {}
        }
        // Every non-empty layout overlaps itself.
        let itself = if a.byte_range().is_some() {
            Overlap::Overlapping
        } else {
            Overlap::Disjoint
        };
        assert_eq!(memory_overlap(&a, &a, UNLIMITED), itself, "{a:?}");
    }
    // The interesting case (byte ranges that meet, no shared byte) is well covered.
    if !cfg!(miri) {
        assert!(interleaved * 25 > pairs, "{interleaved} of {pairs}");
        assert!(overlapping * 5 > pairs, "{overlapping} of {pairs}");
    }
}

#[test]
fn exhaustive_one_dimension() {
    // Every pair of one-dimensional layouts from a small grid, against brute force.
    let mut all = Vec::new();
    type Grid = (
        &'static [usize],
        &'static [u64],
        &'static [i64],
        &'static [i64],
    );
    let (starts, item_sizes, extents, strides): Grid = if cfg!(miri) {
        (&[0, 3], &[1, 3], &[1, 3], &[-3, 2])
    } else {
        let strides = &[-5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5];
        (&[0, 1, 2, 3, 5], &[1, 2, 3], &[1, 2, 3], strides)
    };
    for &start in starts {
        for &item_size in item_sizes {
            for &extent in extents {
                for &stride in strides {
                    all.push(Owned {
                        start: start + 10,
                        item_size,
                        shape: vec![extent],
                        strides: vec![stride],
                    });
                }
            }
        }
    }
    for a in &all {
        for b in &all {
            let (a, b) = (a.view(), b.view());
            assert_eq!(
                memory_overlap(&a, &b, UNLIMITED),
                brute_force(&a, &b),
                "{a:?} and {b:?}"
            );
        }
    }
}

/// `x[:, ::2]` and `x[:, 1::2]` of a float32 matrix `x` of shape (rows, cols).
fn interleaved_columns(rows: i64, cols: i64) {
    let base = 0x10_0000;
    let row = 4 * cols;
    let even_shape = [rows, (cols + 1) / 2];
    let odd_shape = [rows, cols / 2];
    let strides = [row, 8];
    let even = layout(base, 4, &even_shape, &strides);
    let odd = layout(base + 4, 4, &odd_shape, &strides);
    assert_eq!(overlap(&even, &odd, DEFAULT_MAX_WORK), Overlap::Disjoint);
    assert_eq!(brute_force(&even, &odd), Overlap::Disjoint);
    // Their byte ranges do meet: the fast path alone cannot decide.
    let (even_low, even_high) = even.byte_range().unwrap();
    let (odd_low, odd_high) = odd.byte_range().unwrap();
    assert!(even_low < odd_high && odd_low < even_high);
    // The same column twice overlaps, and so do x[:, 1::2] and x[:, 1].
    let (column_shape, column_strides) = ([rows], [row]);
    let column = layout(base + 4, 4, &column_shape, &column_strides);
    assert_eq!(
        overlap(&column, &column, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
    assert_eq!(
        overlap(&odd, &column, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
    assert_eq!(overlap(&even, &column, DEFAULT_MAX_WORK), Overlap::Disjoint);
    // x[:, 1:] overlaps x[:, ::2] as soon as there are three columns.
    let (tail_shape, tail_strides) = ([rows, cols - 1], [row, 4]);
    let tail = layout(base + 4, 4, &tail_shape, &tail_strides);
    let expected = if cols >= 3 {
        Overlap::Overlapping
    } else {
        Overlap::Disjoint
    };
    assert_eq!(overlap(&even, &tail, DEFAULT_MAX_WORK), expected);
}

#[test]
fn interleaved_columns_odd_width() {
    interleaved_columns(3, 5);
}

#[test]
fn interleaved_columns_even_width() {
    interleaved_columns(3, 4);
}

#[test]
fn interleaved_rows_and_bytes() {
    // x[::2] and x[1::2] of a float32 matrix of shape (6, 5): rows of 20 bytes.
    let even = layout(0, 4, &[3, 5], &[40, 4]);
    let odd = layout(20, 4, &[3, 5], &[40, 4]);
    assert_eq!(overlap(&even, &odd, DEFAULT_MAX_WORK), Overlap::Disjoint);
    // The real and imaginary parts of a complex64 vector, as float32 views.
    let real = layout(0, 4, &[100], &[8]);
    let imag = layout(4, 4, &[100], &[8]);
    assert_eq!(overlap(&real, &imag, DEFAULT_MAX_WORK), Overlap::Disjoint);
    // A float64 view of the same buffer overlaps both.
    let whole = layout(0, 8, &[100], &[8]);
    assert_eq!(
        overlap(&real, &whole, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
    assert_eq!(
        overlap(&imag, &whole, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
    // Bytes 0 and 1 of each int16 of a buffer, read as uint8.
    let low = layout(0, 1, &[7, 9], &[18, 2]);
    let high = layout(1, 1, &[7, 9], &[18, 2]);
    assert_eq!(overlap(&low, &high, DEFAULT_MAX_WORK), Overlap::Disjoint);
    // A stride that is not a multiple of the item size: int32 elements every 6 bytes.
    let packed = layout(0, 4, &[5], &[6]);
    let gaps = layout(4, 2, &[5], &[6]);
    let shifted = layout(3, 2, &[5], &[6]);
    assert_eq!(overlap(&packed, &gaps, DEFAULT_MAX_WORK), Overlap::Disjoint);
    assert_eq!(
        overlap(&packed, &shifted, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
}

#[test]
fn transposed_views() {
    // x: float32 (4, 6) row-major at 0x1000; x.T has shape (6, 4) and strides (4, 24).
    let base = 0x1000;
    let x = layout(base, 4, &[4, 6], &[24, 4]);
    let xt = layout(base, 4, &[6, 4], &[4, 24]);
    assert_eq!(overlap(&x, &xt, DEFAULT_MAX_WORK), Overlap::Overlapping);
    // x.T[:, ::2] (rows 0 and 2 of x) and x[1::2] (rows 1 and 3).
    let xt_even = layout(base, 4, &[6, 2], &[4, 48]);
    let x_odd = layout(base + 24, 4, &[2, 6], &[48, 4]);
    assert_eq!(
        overlap(&xt_even, &x_odd, DEFAULT_MAX_WORK),
        Overlap::Disjoint
    );
    // x.T[1] (column 1 of x) and x[3] (row 3): element x[3, 1].
    let column = layout(base + 4, 4, &[4], &[24]);
    let row = layout(base + 3 * 24, 4, &[6], &[4]);
    assert_eq!(
        overlap(&column, &row, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
    // x.T[1, :3] misses row 3.
    let short = layout(base + 4, 4, &[3], &[24]);
    assert_eq!(overlap(&short, &row, DEFAULT_MAX_WORK), Overlap::Disjoint);
}

#[test]
fn reversed_views() {
    // x: int32 vector of length 8 at 0x4000, and x[::-1].
    let x = layout(0x4000, 4, &[8], &[4]);
    let reversed = layout(0x4000 + 28, 4, &[8], &[-4]);
    assert_eq!(
        overlap(&x, &reversed, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
    // x[::-2] is elements 7, 5, 3, 1: disjoint from x[::2]...
    let even = layout(0x4000, 4, &[4], &[8]);
    let odd_reversed = layout(0x4000 + 28, 4, &[4], &[-8]);
    assert_eq!(
        overlap(&even, &odd_reversed, DEFAULT_MAX_WORK),
        Overlap::Disjoint
    );
    // ...but for length 7 it is elements 6, 4, 2, 0.
    let even_reversed = layout(0x4000 + 24, 4, &[4], &[-8]);
    assert_eq!(
        overlap(&even, &even_reversed, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
    // Both dimensions of a matrix reversed: x[::-1, ::-1] of a (3, 5) float64 matrix.
    let m = layout(0, 8, &[3, 5], &[40, 8]);
    let m_flipped = layout(14 * 8, 8, &[3, 5], &[-40, -8]);
    assert_eq!(
        overlap(&m, &m_flipped, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
    // x[::-1, 1::2] against x[:, ::2].
    let flipped_odd = layout(10 * 8 + 8, 8, &[3, 2], &[-40, 16]);
    let even_columns = layout(0, 8, &[3, 3], &[40, 16]);
    assert_eq!(
        overlap(&flipped_odd, &even_columns, DEFAULT_MAX_WORK),
        Overlap::Disjoint
    );
}

#[test]
fn broadcast_views() {
    // Row 1 of a float32 (3, 4) matrix, broadcast to (5, 4) with stride 0.
    let broadcast = layout(16, 4, &[5, 4], &[0, 4]);
    let row1 = layout(16, 4, &[4], &[4]);
    let row2 = layout(32, 4, &[4], &[4]);
    let column0 = layout(0, 4, &[3], &[16]);
    let column1 = layout(4, 4, &[3], &[16]);
    assert_eq!(
        overlap(&broadcast, &broadcast, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
    assert_eq!(
        overlap(&broadcast, &row1, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
    assert_eq!(
        overlap(&broadcast, &row2, DEFAULT_MAX_WORK),
        Overlap::Disjoint
    );
    assert_eq!(
        overlap(&broadcast, &column1, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
    // A scalar broadcast everywhere, against the rest of its buffer.
    let scalar = layout(8, 4, &[1000, 1000], &[0, 0]);
    let before = layout(0, 4, &[2], &[4]);
    let after = layout(12, 4, &[2], &[4]);
    assert_eq!(
        overlap(&scalar, &before, DEFAULT_MAX_WORK),
        Overlap::Disjoint
    );
    assert_eq!(
        overlap(&scalar, &after, DEFAULT_MAX_WORK),
        Overlap::Disjoint
    );
    assert_eq!(
        overlap(&scalar, &column0, DEFAULT_MAX_WORK),
        Overlap::Disjoint
    );
    assert_eq!(
        overlap(&scalar, &layout(0, 4, &[3], &[8]), DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
}

#[test]
fn itself_and_empty() {
    let x = layout(0x1000, 8, &[3, 7, 2], &[-112, 16, 8]);
    assert_eq!(overlap(&x, &x, DEFAULT_MAX_WORK), Overlap::Overlapping);
    let scalar = layout(0x1000, 2, &[], &[]);
    assert_eq!(
        overlap(&scalar, &scalar, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
    assert_eq!(overlap(&scalar, &x, DEFAULT_MAX_WORK), Overlap::Overlapping);
    // A zero extent reaches nothing, whatever the other extents and strides.
    let empty = layout(0x1000, 8, &[3, 0, 2], &[8, 8, 8]);
    assert_eq!(empty.byte_range(), None);
    assert_eq!(overlap(&empty, &empty, DEFAULT_MAX_WORK), Overlap::Disjoint);
    assert_eq!(overlap(&empty, &x, DEFAULT_MAX_WORK), Overlap::Disjoint);
    assert_eq!(overlap(&empty, &scalar, 0), Overlap::Disjoint);
    let huge_empty = layout(0, 1, &[i64::MAX, 0], &[i64::MAX, i64::MIN]);
    assert_eq!(overlap(&huge_empty, &x, 0), Overlap::Disjoint);
}

#[test]
fn different_buffers_take_the_fast_path() {
    // Two float32 (64, 64) matrices, one after the other: no search at all (budget 0).
    let a = layout(0x10_0000, 4, &[64, 64], &[256, 4]);
    let b = layout(0x10_0000 + 64 * 256, 4, &[64, 64], &[256, 4]);
    assert_eq!(overlap(&a, &b, 0), Overlap::Disjoint);
    assert_eq!(overlap(&a, &b, DEFAULT_MAX_WORK), Overlap::Disjoint);
    // The same with transposes, reversals and broadcasts.
    let at = layout(0x10_0000, 4, &[64, 64], &[4, 256]);
    let b_reversed = layout(0x10_0000 + 128 * 256 - 4, 4, &[64, 64], &[-256, -4]);
    let b_broadcast = layout(0x10_0000 + 64 * 256, 4, &[64, 1000, 64], &[256, 0, 4]);
    assert_eq!(overlap(&at, &b_reversed, 0), Overlap::Disjoint);
    assert_eq!(overlap(&at, &b_broadcast, 0), Overlap::Disjoint);
    // Adjacent by one byte still counts as disjoint; one byte more overlaps.
    let first = layout(100, 4, &[3], &[4]);
    let next = layout(112, 1, &[], &[]);
    let last = layout(111, 1, &[], &[]);
    assert_eq!(overlap(&first, &next, 0), Overlap::Disjoint);
    assert_eq!(
        overlap(&first, &last, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
}

/// A subset-sum layout: `k` dimensions of extent 2 and byte strides `1001, ..., 1000 + k`.
/// Sums of `j` strides lie in `[1000 j + j(j+1)/2, 1000 j + j(2k+1-j)/2]`, so for
/// `j = k/2` the byte `1000 j + 500` (past `j` strides, before `j + 1`) is reached by no
/// subset, which neither the range nor the divisibility pruning can see: the search must
/// enumerate. Returns the layout's shape and strides, the unreachable byte, and a reachable
/// one (the sum of the first `j` strides).
fn subset_sum(k: usize) -> ([i64; 20], [i64; 20], usize, usize) {
    let mut strides = [0; 20];
    for (index, stride) in strides.iter_mut().enumerate() {
        *stride = 1001 + index as i64;
    }
    let j = k / 2;
    let reached = strides[..j].iter().sum::<i64>() as usize;
    ([2; 20], strides, 1000 * j + 500, reached)
}

#[test]
fn deep_search() {
    // 20 dimensions need 260_336 units to prove the gap unreachable, 12 need 1_100 or so.
    let k = if cfg!(miri) { 12 } else { 20 };
    let (shape, strides, gap, reached) = subset_sum(k);
    let a = layout(0, 1, &shape[..k], &strides[..k]);
    let gap = layout(gap, 1, &[], &[]);
    // Small budgets give up; an unlimited one decides, for both orders.
    assert_eq!(memory_overlap(&a, &gap, 0), Overlap::Undecided);
    assert_eq!(memory_overlap(&a, &gap, 10), Overlap::Undecided);
    assert_eq!(memory_overlap(&gap, &a, 10), Overlap::Undecided);
    if k == 20 {
        let answer = memory_overlap(&a, &gap, DEFAULT_MAX_WORK);
        assert_eq!(answer, Overlap::Undecided);
    }
    assert_eq!(overlap(&a, &gap, UNLIMITED), Overlap::Disjoint);
    let hit = layout(reached, 1, &[], &[]);
    assert_eq!(overlap(&a, &hit, UNLIMITED), Overlap::Overlapping);
    assert_eq!(memory_overlap(&a, &hit, 0), Overlap::Undecided);
    // One byte before the smallest sum of j strides is past the largest sum of j - 1.
    let below = layout(reached - 1, 1, &[], &[]);
    assert_eq!(overlap(&a, &below, UNLIMITED), Overlap::Disjoint);
}

#[test]
fn budget() {
    // The interleaved columns need a search: none allowed gives Undecided.
    let even = layout(0, 4, &[3, 3], &[20, 8]);
    let odd = layout(4, 4, &[3, 2], &[20, 8]);
    assert_eq!(memory_overlap(&even, &odd, 0), Overlap::Undecided);
    assert_eq!(memory_overlap(&even, &odd, 2), Overlap::Disjoint);
    assert_eq!(memory_overlap(&even, &odd, UNLIMITED), Overlap::Disjoint);
}

#[test]
fn many_dimensions() {
    // 20 dimensions on each side (the large stack path): byte strides 8, 16, ..., 8 << 19
    // reach only the even float32 slots of a buffer, so the same grid one slot later
    // is disjoint, while the same grid shifted by its last stride overlaps.
    let mut shape = [2i64; 20];
    let mut strides = [0i64; 20];
    for (k, stride) in strides.iter_mut().enumerate() {
        *stride = 8 << k; // multiples of 8: even elements only
    }
    shape[0] = 3;
    let even = layout(0, 4, &shape, &strides);
    let odd = layout(4, 4, &shape, &strides);
    assert_eq!(overlap(&even, &odd, DEFAULT_MAX_WORK), Overlap::Disjoint);
    assert_eq!(
        overlap(&even, &even, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
    let shifted = layout(8 << 19, 4, &shape, &strides);
    assert_eq!(
        overlap(&even, &shifted, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
}

#[test]
fn max_ndim_layouts() {
    // Each search here sorts 2049 unknowns: under Miri, one direction and two searches.
    let check = |a: &ByteLayout<'_>, b: &ByteLayout<'_>, work: u32| {
        if cfg!(miri) {
            memory_overlap(a, b, work)
        } else {
            overlap(a, b, work)
        }
    };
    // MAX_NDIM dimensions each: the largest search.
    let wide_shape = [2i64; MAX_NDIM as usize];
    let wide_strides = [16i64; MAX_NDIM as usize];
    let wide_even = layout(0, 4, &wide_shape, &wide_strides);
    let wide_odd = layout(8, 4, &wide_shape, &wide_strides);
    let wide_same = layout(16, 4, &wide_shape, &wide_strides);
    let answer = check(&wide_even, &wide_odd, DEFAULT_MAX_WORK);
    assert_eq!(answer, Overlap::Disjoint);
    if !cfg!(miri) {
        let answer = check(&wide_even, &wide_same, DEFAULT_MAX_WORK);
        assert_eq!(answer, Overlap::Overlapping);
    }
    // More than that, with intersecting ranges: too large to search.
    let wider_shape = [2i64; MAX_NDIM as usize + 1];
    let wider_strides = [16i64; MAX_NDIM as usize + 1];
    let wider = layout(0, 4, &wider_shape, &wider_strides);
    let answer = memory_overlap(&wider, &wide_odd, UNLIMITED);
    assert_eq!(answer, Overlap::Undecided);
    // Extent-1 and stride-0 dimensions do not count; disjoint ranges need no search.
    let padded_shape = [1i64; 4 * MAX_NDIM as usize];
    let padded_strides = [4i64; 4 * MAX_NDIM as usize];
    let padded = layout(8, 4, &padded_shape, &padded_strides);
    assert_eq!(check(&padded, &wide_odd, UNLIMITED), Overlap::Overlapping);
    if !cfg!(miri) {
        assert_eq!(check(&padded, &wide_even, UNLIMITED), Overlap::Disjoint);
    }
    let far = layout(usize::MAX / 4, 4, &wider_shape, &wider_strides);
    assert_eq!(check(&far, &wider, 0), Overlap::Disjoint);
}

#[test]
fn malformed_layouts() {
    let good = layout(0, 4, &[4], &[4]);
    let mismatched = layout(0, 4, &[4, 4], &[4]);
    let no_size = layout(0, 0, &[4], &[4]);
    let negative = layout(0, 4, &[4, -1], &[4, 4]);
    let negative_and_empty = layout(0, 4, &[0, -1], &[4, 4]);
    for bad in [mismatched, no_size, negative, negative_and_empty] {
        assert_eq!(bad.byte_range(), None);
        assert_eq!(memory_overlap(&bad, &good, UNLIMITED), Overlap::Undecided);
        assert_eq!(memory_overlap(&good, &bad, UNLIMITED), Overlap::Undecided);
        assert_eq!(memory_overlap(&bad, &bad, UNLIMITED), Overlap::Undecided);
    }
}

#[test]
fn extreme_values_do_not_panic() {
    let extents = [0, 1, 2, 3, i64::MAX - 1, i64::MAX];
    let strides = [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX];
    let starts = [0, 1, usize::MAX / 2, usize::MAX - 1, usize::MAX];
    let sizes = [1, 2, u64::MAX / 2, u64::MAX];
    let mut rng = Rng(12345);
    let rounds = if cfg!(miri) { 100 } else { 20_000 };
    let pick = |rng: &mut Rng, n: usize| rng.range(0, n as i64 - 1) as usize;
    for _ in 0..rounds {
        let mut shapes = [[0i64; 3]; 2];
        let mut strides_of = [[0i64; 3]; 2];
        let mut layouts = [layout(0, 1, &[], &[]); 2];
        let ndims = [pick(&mut rng, 4), pick(&mut rng, 4)];
        for side in 0..2 {
            for k in 0..3 {
                shapes[side][k] = extents[pick(&mut rng, extents.len())];
                strides_of[side][k] = strides[pick(&mut rng, strides.len())];
            }
        }
        for side in 0..2 {
            let ndim = ndims[side];
            layouts[side] = layout(
                starts[pick(&mut rng, starts.len())],
                sizes[pick(&mut rng, sizes.len())],
                &shapes[side][..ndim],
                &strides_of[side][..ndim],
            );
        }
        let work = [0, 10, DEFAULT_MAX_WORK][pick(&mut rng, 3)];
        let answer = memory_overlap(&layouts[0], &layouts[1], work);
        if let (Some((low, high)), Some(_)) = (layouts[0].byte_range(), layouts[1].byte_range()) {
            assert!(low < high);
        }
        // Itself: never Disjoint unless empty.
        if layouts[0].byte_range().is_some() {
            assert_ne!(
                memory_overlap(&layouts[0], &layouts[0], work),
                Overlap::Disjoint
            );
        }
        let _ = answer;
    }
    // Saturated ranges still contain every byte.
    let huge = layout(
        usize::MAX,
        u64::MAX,
        &[i64::MAX, i64::MAX, i64::MAX],
        &[i64::MAX, i64::MAX, i64::MAX],
    );
    let (low, high) = huge.byte_range().unwrap();
    assert_eq!(low, usize::MAX as i128);
    assert!(high > low);
}

#[test]
#[cfg(target_pointer_width = "64")] // Addresses of 64-bit targets.
fn huge_but_exact() {
    // Values near the limits that still fit: x[::2] and x[1::2] of a byte vector of
    // 2^62 elements, at the top of the address space.
    let n = 1i64 << 61;
    let start = usize::MAX - (1usize << 62);
    let (shape, third_shape) = ([n], [n / 2]);
    let even = layout(start, 1, &shape, &[2]);
    let odd = layout(start + 1, 1, &shape, &[2]);
    assert_eq!(overlap(&even, &odd, DEFAULT_MAX_WORK), Overlap::Disjoint);
    let every_third = layout(start, 1, &third_shape, &[3]);
    assert_eq!(
        overlap(&odd, &every_third, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
    // Strides of 2^62 and item sizes of 2^62 bytes.
    let big = layout(0, 1 << 62, &[4], &[1 << 62]);
    let inside = layout(3 << 61, 1, &[], &[]);
    assert_eq!(
        overlap(&big, &inside, DEFAULT_MAX_WORK),
        Overlap::Overlapping
    );
}

#[test]
fn inverse_and_gcd() {
    assert_eq!(gcd(12, 18), 6);
    assert_eq!(gcd(7, 0), 7);
    assert_eq!(gcd(0, 7), 7);
    for m in 2..60u64 {
        for x in 1..m {
            if gcd(x, m) == 1 {
                assert_eq!(u128::from(x) * u128::from(inverse(x, m)) % u128::from(m), 1);
            }
        }
    }
    let m = u64::MAX;
    let x = 1u64 << 63;
    assert_eq!(x as u128 * inverse(x, m) as u128 % m as u128, 1);
}
