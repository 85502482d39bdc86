//! Byte strides (NumPy's, the buffer protocol's) as DLPack's strides in elements.

use std::mem::MaybeUninit;

/// The most dimensions the host paths take (NumPy 2's `NPY_MAXDIMS`, CPython's
/// `PyBUF_MAX_NDIM`); more go through DLPack.
pub(crate) const HOST_MAX_NDIM: usize = 64;

/// Room on the stack for the strides in elements of a host tensor, filled by
/// [`ElementStrides::convert`]. Never initialized as a whole: a descriptor is read on every
/// typed argument, and only its `ndim` strides are written.
pub(crate) struct ElementStrides {
    values: [MaybeUninit<i64>; HOST_MAX_NDIM],
}

impl ElementStrides {
    /// Empty room.
    #[inline(always)]
    pub(crate) fn new() -> Self {
        ElementStrides {
            values: [const { MaybeUninit::uninit() }; HOST_MAX_NDIM],
        }
    }

    /// `byte_strides` as strides in elements of `itemsize` bytes (positive), written to the
    /// front of the room; `None` when a stride is not a whole number of elements or there
    /// are more than [`HOST_MAX_NDIM`] of them.
    #[inline(always)]
    pub(crate) fn convert(
        &mut self,
        byte_strides: &[isize],
        itemsize: isize,
    ) -> Option<&mut [i64]> {
        let out = self.values.get_mut(..byte_strides.len())?;
        // Item sizes are powers of two for every data type taken here: strides in whole items
        // are then shifts, which the per-argument hot path prefers to divisions.
        let power_of_two = itemsize & (itemsize - 1) == 0;
        let shift = itemsize.trailing_zeros();
        for (slot, &bytes) in out.iter_mut().zip(byte_strides) {
            let (whole, items) = if power_of_two {
                (bytes & (itemsize - 1) == 0, bytes >> shift)
            } else {
                (bytes % itemsize == 0, bytes / itemsize)
            };
            if !whole {
                return None;
            }
            slot.write(items as i64);
        }
        // SAFETY: every one of the `out.len()` slots was written above, and `MaybeUninit<i64>`
        // has the layout of `i64`.
        Some(unsafe { &mut *(std::ptr::from_mut(out) as *mut [i64]) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn converted(byte_strides: &[isize], itemsize: isize) -> Option<Vec<i64>> {
        ElementStrides::new()
            .convert(byte_strides, itemsize)
            .map(|strides| strides.to_vec())
    }

    #[test]
    fn whole_elements_are_converted() {
        assert_eq!(converted(&[24, 8, -8, 0], 8), Some(vec![3, 1, -1, 0]));
        assert_eq!(converted(&[6, 3], 3), Some(vec![2, 1]));
        assert_eq!(converted(&[], 4), Some(vec![]));
    }

    #[test]
    fn partial_elements_and_too_many_dimensions_are_refused() {
        assert_eq!(converted(&[12, 2], 4), None);
        assert_eq!(converted(&[7], 3), None);
        let many = vec![4isize; HOST_MAX_NDIM];
        assert_eq!(converted(&many, 4).map(|s| s.len()), Some(HOST_MAX_NDIM));
        let too_many = vec![4isize; HOST_MAX_NDIM + 1];
        assert_eq!(converted(&too_many, 4), None);
    }
}
