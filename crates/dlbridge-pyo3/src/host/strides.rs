//! Byte strides (NumPy's, the buffer protocol's) as DLPack's strides in elements.

/// The most dimensions the host paths take (NumPy 2's `NPY_MAXDIMS`, CPython's
/// `PyBUF_MAX_NDIM`); more go through DLPack.
pub(crate) const HOST_MAX_NDIM: usize = 64;

/// Runs `use_strides` on `byte_strides` converted into strides in elements of `itemsize`
/// bytes (positive), kept on the stack; `None` when a stride is not a whole number of
/// elements or there are more than [`HOST_MAX_NDIM`] of them.
#[inline(always)]
pub(crate) fn in_elements<R>(
    byte_strides: &[isize],
    itemsize: isize,
    use_strides: impl FnOnce(&mut [i64]) -> R,
) -> Option<R> {
    // Up to 8 dimensions (nearly every tensor) the buffer is small to clear.
    let mut few = [0i64; 8];
    let mut many;
    let strides: &mut [i64] = if byte_strides.len() <= few.len() {
        &mut few[..byte_strides.len()]
    } else if byte_strides.len() <= HOST_MAX_NDIM {
        many = [0i64; HOST_MAX_NDIM];
        &mut many[..byte_strides.len()]
    } else {
        return None;
    };
    element_strides(byte_strides, itemsize, strides).then(|| use_strides(strides))
}

/// Converts byte strides into strides in items, written to the front of `out`; `false` when
/// a stride is not a whole number of items. `itemsize` is positive.
fn element_strides(byte_strides: &[isize], itemsize: isize, out: &mut [i64]) -> bool {
    // Item sizes are powers of two for every data type taken here: strides in whole items are
    // then shifts, which the per-argument hot path prefers to divisions.
    let power_of_two = itemsize & (itemsize - 1) == 0;
    let shift = itemsize.trailing_zeros();
    for (stride, &bytes) in out.iter_mut().zip(byte_strides) {
        let (whole, items) = if power_of_two {
            (bytes & (itemsize - 1) == 0, bytes >> shift)
        } else {
            (bytes % itemsize == 0, bytes / itemsize)
        };
        if !whole {
            return false;
        }
        *stride = items as i64;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_elements_are_converted() {
        let strides = in_elements(&[24, 8, -8, 0], 8, |s| s.to_vec());
        assert_eq!(strides, Some(vec![3, 1, -1, 0]));
        let strides = in_elements(&[6, 3], 3, |s| s.to_vec());
        assert_eq!(strides, Some(vec![2, 1]));
    }

    #[test]
    fn partial_elements_and_too_many_dimensions_are_refused() {
        assert_eq!(in_elements(&[12, 2], 4, |s| s.to_vec()), None);
        assert_eq!(in_elements(&[7], 3, |s| s.to_vec()), None);
        let many = vec![4isize; HOST_MAX_NDIM];
        assert_eq!(in_elements(&many, 4, |s| s.len()), Some(HOST_MAX_NDIM));
        let too_many = vec![4isize; HOST_MAX_NDIM + 1];
        assert_eq!(in_elements(&too_many, 4, |s| s.len()), None);
    }
}
