//! Shape and stride arithmetic, following what producers really send.
//!
//! Strides are in elements and may be negative. A dimension of extent 1 may carry any stride
//! (producers disagree on its value), and a tensor with a zero extent is contiguous whatever
//! its strides say.

use crate::error::{Error, Result};

/// The number of elements of `shape`, rejecting negative extents and overflow.
///
/// ```
/// assert_eq!(dlbridge::layout::element_count(&[2, 3, 4]), Ok(24));
/// assert_eq!(dlbridge::layout::element_count(&[]), Ok(1));
/// let refused = dlbridge::layout::element_count(&[2, -1]);
/// assert_eq!(refused, Err(dlbridge::Error::NegativeExtent { dim: 1, extent: -1 }));
/// ```
pub fn element_count(shape: &[i64]) -> Result<u64> {
    count_elements(shape.iter().copied())
}

/// [`element_count`] over any sequence of extents (no allocation).
pub(crate) fn count_elements(shape: impl Iterator<Item = i64>) -> Result<u64> {
    let mut count: u64 = 1;
    // The first overflowing dimension, as plain numbers: the error is built only when it is
    // reported, which keeps this loop (run on every import) free of error values.
    let mut overflow: Option<(usize, i64)> = None;
    let mut empty = false;
    for (dim, extent) in shape.enumerate() {
        if extent < 0 {
            return Err(Error::NegativeExtent { dim, extent });
        }
        empty |= extent == 0;
        match count.checked_mul(extent as u64) {
            Some(product) => count = product,
            None => {
                overflow.get_or_insert((dim, extent));
                count = u64::MAX;
            }
        }
    }
    // A zero extent makes the tensor empty even after an overflowing prefix ([2^40, 2^40, 0]).
    match overflow {
        Some(_) if empty => Ok(0),
        Some((dim, extent)) => Err(Error::ElementCountOverflow { dim, extent }),
        None => Ok(count),
    }
}

/// The last element offset of a compact row-major layout of `shape` with `elements` (at least
/// one) elements: `elements - 1`, where the layout's strides fit `i64` (they are made for a
/// tensor without strides); otherwise the dimension whose extent takes the product of the
/// extents after it past `i64::MAX` (possible only for sub-byte data types, whose byte size
/// fits with more elements).
pub(crate) fn compact_last_offset(shape: &[i64], elements: u64) -> Result<i64> {
    if let Ok(count) = i64::try_from(elements) {
        return Ok(count - 1);
    }
    let mut product: i64 = 1;
    for (dim, &extent) in shape.iter().enumerate().rev() {
        product = product
            .checked_mul(extent)
            .ok_or(Error::CompactStridesOverflow { dim, extent })?;
    }
    // Unreachable: the extents multiply to `elements`, which is past `i64::MAX`.
    Err(Error::CompactStridesOverflow {
        dim: 0,
        extent: shape.first().copied().unwrap_or(0),
    })
}

/// The compact row-major (C order) strides of `shape`, written into `strides`.
///
/// Extents must be non-negative and their product must not overflow (see [`element_count`]).
///
/// ```
/// let mut strides = [0; 3];
/// dlbridge::layout::fill_row_major_strides(&[2, 3, 4], &mut strides);
/// assert_eq!(strides, [12, 4, 1]);
/// ```
pub fn fill_row_major_strides(shape: &[i64], strides: &mut [i64]) {
    debug_assert_eq!(shape.len(), strides.len());
    let mut step: i64 = 1;
    for (stride, &extent) in strides.iter_mut().zip(shape).rev() {
        *stride = step;
        step = step.saturating_mul(extent.max(1));
    }
}

/// Whether `shape`/`strides` describe a compact row-major (C order) layout. Extent-1
/// dimensions are skipped; a tensor with a zero extent is contiguous.
///
/// ```
/// use dlbridge::layout::is_c_contiguous;
/// assert!(is_c_contiguous(&[2, 3], &[3, 1]));
/// assert!(is_c_contiguous(&[2, 1, 3], &[3, 99, 1])); // extent 1: any stride
/// assert!(is_c_contiguous(&[0, 3], &[7, 7]));       // empty: always
/// assert!(!is_c_contiguous(&[2, 3], &[1, 2]));
/// ```
pub fn is_c_contiguous(shape: &[i64], strides: &[i64]) -> bool {
    is_compact(shape.iter().zip(strides).rev(), shape)
}

/// Whether `shape`/`strides` describe a compact column-major (Fortran order) layout, with the
/// same tolerances as [`is_c_contiguous`].
///
/// ```
/// assert!(dlbridge::layout::is_f_contiguous(&[2, 3], &[1, 2]));
/// ```
pub fn is_f_contiguous(shape: &[i64], strides: &[i64]) -> bool {
    is_compact(shape.iter().zip(strides), shape)
}

fn is_compact<'a>(dims: impl Iterator<Item = (&'a i64, &'a i64)>, shape: &[i64]) -> bool {
    let mut expected: i64 = 1;
    for (&extent, &stride) in dims {
        if extent == 0 {
            return true;
        }
        if extent == 1 {
            continue;
        }
        // A mismatch still leaves an empty tensor compact.
        if stride != expected {
            return shape.contains(&0);
        }
        match expected.checked_mul(extent) {
            Some(next) => expected = next,
            None => return shape.contains(&0),
        }
    }
    true
}

/// The lowest and highest element offsets (relative to the first element, in elements) that
/// the layout reaches. Only meaningful for a non-empty tensor.
///
/// ```
/// assert_eq!(dlbridge::layout::offset_range(&[3, 2], &[-2, 1]), Ok((-4, 1)));
/// ```
pub fn offset_range(shape: &[i64], strides: &[i64]) -> Result<(i64, i64)> {
    offsets_reached(shape.iter().copied().zip(strides.iter().copied()))
}

/// [`offset_range`] over any sequence of (extent, stride) pairs (no allocation).
pub(crate) fn offsets_reached(dims: impl Iterator<Item = (i64, i64)>) -> Result<(i64, i64)> {
    let (mut low, mut high) = (0i64, 0i64);
    for (dim, (extent, stride)) in dims.enumerate() {
        let overflow = || Error::StrideOverflow { dim, stride };
        let reach = (extent - 1).checked_mul(stride).ok_or_else(overflow)?;
        let sum = if reach < 0 {
            low.checked_add(reach).map(|l| (l, high))
        } else {
            high.checked_add(reach).map(|h| (low, h))
        };
        (low, high) = sum.ok_or_else(overflow)?;
    }
    Ok((low, high))
}

/// The element count and the offsets reached ([`element_count`] and [`offset_range`]) in one
/// pass, for the layouts producers send almost always (every extent positive), in saturating
/// arithmetic: where nothing overflows, the exact values; where something does, the count
/// saturates at `u64::MAX`, or the low offset at `i64::MIN`, or the high one at `i64::MAX`,
/// and stays there (later terms only move it further the same way). No byte size fits
/// `isize::MAX` from such values, so the caller that bounds the byte sizes (validation's common
/// path) refuses them and leaves the exact answer, or the error naming the dimension, to those
/// two functions. `None` for an empty tensor, a negative extent or mismatched lengths.
#[inline(always)]
pub(crate) fn count_and_reach(shape: &[i64], strides: &[i64]) -> Option<(u64, (i64, i64))> {
    if shape.len() != strides.len() {
        return None;
    }
    let mut count: u64 = 1;
    let (mut low, mut high) = (0i64, 0i64);
    let mut negative = false;
    for (&extent, &stride) in shape.iter().zip(strides) {
        negative |= extent < 0;
        count = count.saturating_mul(extent as u64);
        let reach = extent.wrapping_sub(1).saturating_mul(stride);
        low = low.saturating_add(reach.min(0));
        high = high.saturating_add(reach.max(0));
    }
    // A zero extent leaves the count at 0 for good.
    (count > 0 && !negative).then_some((count, (low, high)))
}

/// Whether no two indices of the layout reach the same element (needed before handing out
/// mutable access). Conservative: a layout that interleaves dimensions in an unusual way may
/// be reported as overlapping although it is not; compact, transposed, sliced and reversed
/// layouts are always recognised.
///
/// ```
/// use dlbridge::layout::is_overlap_free;
/// assert!(is_overlap_free(&[2, 3], &[1, 2]));
/// assert!(is_overlap_free(&[4], &[-2]));
/// assert!(!is_overlap_free(&[2, 3], &[0, 1])); // broadcast: stride 0
/// assert!(!is_overlap_free(&[3, 3], &[1, 1]));
/// ```
pub fn is_overlap_free(shape: &[i64], strides: &[i64]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let dims = shape
        .iter()
        .zip(strides)
        .filter(|&(&extent, _)| extent > 1)
        .map(|(&extent, &stride)| (stride.unsigned_abs(), extent as u64));
    // Up to 16 dimensions sort on the stack (no allocation on the hot path); more in a Vec.
    const INLINE: usize = 16;
    let mut inline = [(0u64, 0u64); INLINE];
    let mut heap = Vec::new();
    let mut count = 0;
    for dim in dims {
        if count < INLINE {
            inline[count] = dim;
        } else {
            if heap.is_empty() {
                heap.extend_from_slice(&inline);
            }
            heap.push(dim);
        }
        count += 1;
    }
    let dims = if count <= INLINE {
        &mut inline[..count]
    } else {
        &mut heap[..]
    };
    dims.sort_unstable();
    // Each dimension's step must clear everything the smaller steps can reach.
    let mut reach: u64 = 0;
    for &mut (step, extent) in dims {
        if step <= reach {
            return false;
        }
        match (extent - 1)
            .checked_mul(step)
            .and_then(|r| r.checked_add(reach))
        {
            Some(next) => reach = next,
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_check_beyond_the_inline_dimensions() {
        // 20 dimensions of extent 2: compact strides are overlap-free, a repeated one is not.
        let shape = [2i64; 20];
        let mut strides = [0i64; 20];
        fill_row_major_strides(&shape, &mut strides);
        assert!(is_overlap_free(&shape, &strides));
        strides[3] = strides[4];
        assert!(!is_overlap_free(&shape, &strides));
    }

    #[test]
    fn element_count_rejects_negative_and_overflow_naming_the_dimension() {
        assert_eq!(
            element_count(&[2, -3]),
            Err(Error::NegativeExtent { dim: 1, extent: -3 })
        );
        assert_eq!(
            element_count(&[i64::MAX, 4]),
            Err(Error::ElementCountOverflow { dim: 1, extent: 4 })
        );
        assert_eq!(element_count(&[5, 0, 7]), Ok(0));
        assert_eq!(element_count(&[i64::MAX, i64::MAX, 0]), Ok(0));
    }

    #[test]
    fn row_major_strides_skip_nothing_and_treat_zero_extents_as_one() {
        let mut strides = [0; 4];
        fill_row_major_strides(&[2, 0, 3, 1], &mut strides);
        assert_eq!(strides, [3, 3, 1, 1]);
    }

    #[test]
    fn contiguity_tolerates_what_producers_send() {
        // NumPy/PyTorch style extent-1 quirks.
        assert!(is_c_contiguous(&[1, 4], &[1, 1]));
        assert!(is_c_contiguous(&[1, 4], &[4, 1]));
        assert!(is_c_contiguous(&[4, 1], &[1, 1]));
        assert!(is_f_contiguous(&[4, 1], &[1, 4]));
        assert!(is_c_contiguous(&[], &[]));
        assert!(is_f_contiguous(&[], &[]));
        assert!(!is_c_contiguous(&[4], &[-1]));
        assert!(!is_c_contiguous(&[2, 2], &[1, 2]));
        assert!(is_f_contiguous(&[2, 2], &[1, 2]));
    }

    #[test]
    fn offset_range_reports_overflow_at_the_dimension() {
        assert_eq!(
            offset_range(&[3, 2], &[i64::MAX, 1]),
            Err(Error::StrideOverflow {
                dim: 0,
                stride: i64::MAX
            })
        );
        assert_eq!(offset_range(&[1, 1], &[i64::MAX, i64::MIN]), Ok((0, 0)));
    }

    /// `count_and_reach` gives the exact count and offsets wherever `element_count` and
    /// `offset_range` succeed with elements, and where they fail it gives values no byte size
    /// fits (a saturated count or offset): every shape and strides of up to three dimensions
    /// over extents and strides at the edges (zero, negative, overflowing).
    #[test]
    fn count_and_reach_agrees_with_the_exact_functions() {
        const EXTENTS: [i64; 8] = [-1, 0, 1, 2, 3, 1 << 31, 1 << 62, i64::MAX];
        const STRIDES: [i64; 9] = [0, 1, -1, 5, -5, 1 << 32, -(1 << 32), i64::MAX, i64::MIN];
        let pairs: Vec<(i64, i64)> = EXTENTS
            .iter()
            .flat_map(|&extent| STRIDES.iter().map(move |&stride| (extent, stride)))
            .collect();
        // Under Miri, up to one dimension (73 layouts instead of 378,505).
        let ranks = if cfg!(miri) { 1 } else { 3 };
        let mut checked = 0;
        for rank in 0..=ranks {
            for index in 0..pairs.len().pow(rank) {
                let (mut shape, mut strides) = (Vec::new(), Vec::new());
                let mut rest = index;
                for _ in 0..rank {
                    let (extent, stride) = pairs[rest % pairs.len()];
                    rest /= pairs.len();
                    shape.push(extent);
                    strides.push(stride);
                }
                let quick = count_and_reach(&shape, &strides);
                let agrees = match (element_count(&shape), offset_range(&shape, &strides)) {
                    (Ok(0), _) => quick.is_none(),
                    (Ok(count), Ok(reach)) => quick == Some((count, reach)),
                    (Err(_), _) if shape.iter().any(|&extent| extent < 0) => quick.is_none(),
                    _ => quick.is_some_and(|(count, (low, high))| {
                        count == u64::MAX || low == i64::MIN || high == i64::MAX
                    }),
                };
                assert!(agrees, "shape {shape:?}, strides {strides:?}: {quick:?}");
                checked += 1;
            }
        }
        assert_eq!(
            checked,
            (0..=ranks).map(|rank| 72usize.pow(rank)).sum::<usize>()
        );
        assert_eq!(count_and_reach(&[2, 3], &[3]), None, "mismatched lengths");
    }

    #[test]
    fn overlap_detection() {
        assert!(is_overlap_free(&[2, 1, 3], &[3, 0, 1]));
        assert!(is_overlap_free(&[3, 4], &[-4, -1]));
        assert!(!is_overlap_free(&[2, 2], &[1, 1]));
        assert!(is_overlap_free(&[2, 2], &[1, 3]));
    }
}
