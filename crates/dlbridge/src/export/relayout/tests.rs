//! Tests of the relayouts: NumPy's answers, the errors, and what the new handle keeps of the
//! old one (memory, flags, exclusivity, its count as a share, its release, its owner, dropped
//! once). Every test runs under Miri (`cargo +nightly miri test -p dlbridge --lib relayout`).

use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::reshape_strides;
use crate::{
    DataType, Device, DeviceType, Error, Export, ManagedTensor, RawManagedTensor, ReleaseOnDrop,
    Writability,
};

/// Drops of each test's [`Owner`] (tests run side by side: one slot each), and runs of its
/// release.
static DROPS: [AtomicUsize; 8] = [const { AtomicUsize::new(0) }; 8];
static RELEASES: [AtomicUsize; 8] = [const { AtomicUsize::new(0) }; 8];

/// The owner of a test tensor's `i32`s, counting its drops in `DROPS[token]`.
struct Owner {
    token: usize,
    _values: Vec<i32>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        DROPS[self.token].fetch_add(1, Ordering::SeqCst);
    }
}

fn drops(token: usize) -> usize {
    DROPS[token].load(Ordering::SeqCst)
}

fn release(token: usize) {
    RELEASES[token].fetch_add(1, Ordering::SeqCst);
}

fn releases(token: usize) -> usize {
    RELEASES[token].load(Ordering::SeqCst)
}

/// `0..count` as `i32`s in memory an [`Owner`] of test `token` keeps, to be shaped (its first
/// element is the tensor's) and finished by the caller.
fn counted(token: usize, count: i32, shape: &[usize]) -> Export<'_, Owner> {
    let mut values: Vec<i32> = (0..count).collect();
    let data = values.as_mut_ptr().cast();
    let owner = Owner {
        token,
        _values: values,
    };
    // SAFETY: `count` writable `i32`s that the owner keeps alive (a `Vec`'s heap memory does
    // not move with it) and nothing else uses; every caller's layout stays inside them.
    unsafe { Export::from_raw_parts(owner, data, DataType::INT32, Device::CPU, shape) }
}

fn iota(count: i32) -> Vec<i32> {
    (0..count).collect()
}

fn shape_and_strides(tensor: &ManagedTensor) -> (Vec<i64>, Vec<i64>) {
    let view = tensor.view();
    (view.shape().to_vec(), view.strides().to_vec())
}

fn values(tensor: &ManagedTensor) -> Vec<i32> {
    tensor.view().elements::<i32>().expect("i32s").to_vec()
}

#[test]
fn relayout_reshape_merges_and_splits_compact_tensors() {
    let tensor = Export::new(iota(24), &[2, 3, 4]).into_versioned().unwrap();
    let first = tensor.view().data_ptr();
    let steps: [(&[i64], &[i64]); 5] = [
        (&[6, 4], &[4, 1]),
        (&[4, 3, 2], &[6, 2, 1]),
        (&[24], &[1]),
        (&[1, 24, 1], &[24, 1, 1]),
        (&[2, 1, 3, 1, 4], &[12, 12, 4, 4, 1]),
    ];
    let mut tensor = tensor;
    for (shape, strides) in steps {
        tensor = tensor.reshape(shape).unwrap();
        assert_eq!(
            shape_and_strides(&tensor),
            (shape.to_vec(), strides.to_vec())
        );
        assert_eq!(tensor.view().data_ptr(), first, "no copy");
        assert_eq!(tensor.view().as_slice::<i32>().unwrap(), &iota(24)[..]);
        assert!(tensor.is_versioned() && tensor.is_exclusive());
    }
    // One element: no axes at all, and back.
    let scalar = Export::new(vec![7u8], &[1, 1]).into_versioned().unwrap();
    let scalar = scalar.reshape(&[]).unwrap();
    assert_eq!(shape_and_strides(&scalar), (vec![], vec![]));
    let scalar = scalar.reshape(&[1, -1, 1]).unwrap();
    assert_eq!(shape_and_strides(&scalar), (vec![1, 1, 1], vec![1, 1, 1]));
    assert_eq!(scalar.view().as_slice::<u8>().unwrap(), &[7]);
    // The same shape: the same tensor.
    let raw = tensor.as_raw();
    let same = tensor.reshape(&[2, 1, 3, 1, 4]).unwrap();
    assert_eq!(same.as_raw(), raw);
}

#[test]
fn relayout_reshape_views_strided_tensors_where_numpy_does() {
    // Every other element: `np.arange(12)[::2].reshape(2, 3)`, strides (6, 2).
    let every_other = Export::new(iota(12), &[6]).strides(&[2]).into_versioned();
    let split = every_other.unwrap().reshape(&[2, 3]).unwrap();
    assert_eq!(shape_and_strides(&split), (vec![2, 3], vec![6, 2]));
    assert_eq!(values(&split), [0, 2, 4, 6, 8, 10]);
    let split = split.reshape(&[3, 1, 2]).unwrap();
    assert_eq!(shape_and_strides(&split), (vec![3, 1, 2], vec![4, 4, 2]));
    assert_eq!(values(&split), [0, 2, 4, 6, 8, 10]);

    // The first four columns of a 4x6 matrix: its rows split, not merged.
    let columns = || {
        Export::new(iota(24), &[4, 4])
            .strides(&[6, 1])
            .into_versioned()
    };
    let rows_split = columns().unwrap().reshape(&[2, 2, 4]).unwrap();
    assert_eq!(
        shape_and_strides(&rows_split),
        (vec![2, 2, 4], vec![12, 6, 1])
    );
    let columns_split = columns().unwrap().reshape(&[4, 2, 2]).unwrap();
    assert_eq!(
        shape_and_strides(&columns_split),
        (vec![4, 2, 2], vec![6, 2, 1])
    );
    let expected: Vec<i32> = (0..4).flat_map(|row| row * 6..row * 6 + 4).collect();
    assert_eq!(values(&columns_split), expected);
    assert!(matches!(
        columns().unwrap().reshape(&[16]),
        Err(Error::ReshapeNeedsCopy { .. })
    ));

    // A transposed 2x3 gains axes of extent 1 anywhere.
    let transposed = || {
        Export::new(vec![1, 2, 3, 4, 5, 6], &[3, 2])
            .strides(&[1, 3])
            .into_versioned()
            .unwrap()
    };
    let trailing = transposed().reshape(&[3, 2, 1]).unwrap();
    assert_eq!(shape_and_strides(&trailing), (vec![3, 2, 1], vec![1, 3, 3]));
    let leading = transposed().reshape(&[1, 3, 2]).unwrap();
    assert_eq!(shape_and_strides(&leading), (vec![1, 3, 2], vec![3, 1, 3]));
    assert_eq!(values(&leading), [1, 4, 2, 5, 3, 6]);

    // Reversed: `np.arange(6)[::-1].reshape(2, 3)`, strides (-3, -1).
    let mut backwards = vec![0i32, 1, 2, 3, 4, 5];
    // SAFETY: the last of six `i32`s the `Vec` owner keeps alive; stride -1 reaches all six.
    let last = unsafe { backwards.as_mut_ptr().add(5) }.cast::<c_void>();
    // SAFETY: as above; nothing else uses the `Vec`.
    let reversed =
        unsafe { Export::from_raw_parts(backwards, last, DataType::INT32, Device::CPU, &[6]) }
            .strides(&[-1])
            .into_versioned()
            .unwrap();
    let reversed = reversed.reshape(&[2, 3]).unwrap();
    assert_eq!(shape_and_strides(&reversed), (vec![2, 3], vec![-3, -1]));
    assert_eq!(values(&reversed), [5, 4, 3, 2, 1, 0]);
}

/// Strides NumPy 2.4 gives (`a.reshape(new).strides` in elements), or `None` where it copies,
/// for layouts of `np.arange` sliced, reversed and transposed (the whole set of 46,155
/// layouts and shapes this table is drawn from agreed with NumPy, strides of extent-1 axes
/// included).
#[test]
fn relayout_reshape_strides_are_numpys() {
    type Case = (
        &'static [i64],
        &'static [i64],
        &'static [i64],
        Option<&'static [i64]>,
    );
    const CASES: [Case; 20] = [
        (
            &[1, 4, 3],
            &[4, -1, 8],
            &[2, 2, 3, 1],
            Some(&[-2, -1, 8, 8]),
        ),
        (
            &[2, 2, 3],
            &[6, 3, -1],
            &[1, 1, 4, 3],
            Some(&[12, 12, 3, -1]),
        ),
        (&[2, 6], &[-6, -1], &[1, 4, 3, 1], Some(&[-12, -3, -1, -1])),
        (
            &[3, 2, 4],
            &[16, 48, 2],
            &[1, 3, 2, 4],
            Some(&[48, 16, 48, 2]),
        ),
        (
            &[3, 4, 2],
            &[4, 1, -12],
            &[12, 1, 2, 1],
            Some(&[1, -24, -12, -12]),
        ),
        (
            &[2, 4, 1],
            &[2, -4, -4],
            &[2, 1, 2, 2],
            Some(&[2, -16, -8, -4]),
        ),
        (
            &[4, 2, 3],
            &[1, -12, -4],
            &[2, 2, 6, 1],
            Some(&[2, 1, -4, -4]),
        ),
        (&[4, 1, 3], &[1, -4, 4], &[2, 2, 3], Some(&[2, 1, 4])),
        (&[3, 4, 2], &[8, 2, 24], &[2, 6, 2], Some(&[12, 2, 24])),
        (
            &[1, 2, 4],
            &[4, 2, -4],
            &[1, 2, 2, 2],
            Some(&[4, 2, -8, -4]),
        ),
        (
            &[3, 2, 2],
            &[-1, 3, -6],
            &[3, 2, 2, 1],
            Some(&[-1, 3, -6, -6]),
        ),
        (
            &[2, 3, 4],
            &[-12, -4, -1],
            &[6, 1, 4, 1],
            Some(&[-4, -4, -1, -1]),
        ),
        (
            &[4, 2, 3],
            &[2, 48, 16],
            &[4, 3, 1, 2],
            Some(&[2, 32, 32, 16]),
        ),
        (&[4, 1, 2], &[-2, 2, -1], &[2, 2, 2], Some(&[-4, -2, -1])),
        (&[3, 1, 4], &[-8, -8, 2], &[2, 3, 1, 2], None),
        (&[2, 4, 3], &[-12, -1, 4], &[4, 1, 1, 6], None),
        (&[4, 3, 2], &[2, 8, -24], &[1, 24], None),
        (&[3, 2, 4], &[-4, 12, 1], &[1, 4, 2, 3], None),
        (&[3, 4, 1], &[16, 1, 8], &[2, 3, 2, 1], None),
        (&[2, 4, 3], &[48, -1, 8], &[1, 4, 2, 3], None),
    ];
    for (shape, strides, new_shape, numpy) in CASES {
        assert_eq!(
            reshape_strides(shape, strides, new_shape).as_deref(),
            numpy,
            "{shape:?} with strides {strides:?} as {new_shape:?}"
        );
    }
}

/// Every element offset of a layout, in row-major index order.
fn offsets(shape: &[i64], strides: &[i64]) -> Vec<i64> {
    let mut offsets = vec![0i64];
    for (&extent, &stride) in shape.iter().zip(strides) {
        offsets = offsets
            .iter()
            .flat_map(|&offset| (0..extent).map(move |index| offset + index * stride))
            .collect();
    }
    offsets
}

/// The shapes of `count` elements of up to `rank` axes, extents of 1 included.
fn shapes_of(count: i64, rank: usize) -> Vec<Vec<i64>> {
    if rank == 0 {
        return if count == 1 { vec![vec![]] } else { vec![] };
    }
    let mut shapes = shapes_of(count, rank - 1);
    for first in (1..=count).filter(|first| count % first == 0) {
        for rest in shapes_of(count / first, rank - 1) {
            let mut shape = vec![first];
            shape.extend(rest);
            if !shapes.contains(&shape) {
                shapes.push(shape);
            }
        }
    }
    shapes
}

/// Wherever `reshape_strides` answers, its strides reach the same offsets in the same order
/// (the new tensor reads exactly the old one's elements); and for layouts without overlap it
/// answers exactly where some strides do (found by brute force): NumPy's view rule. Layouts:
/// small shapes transposed, sliced, reversed and broadcast (stride 0).
#[test]
#[cfg_attr(
    miri,
    ignore = "pure stride arithmetic that reaches no memory, run natively by `make rust-test`: \
              under Miri it cost two minutes a run, three runs (the relayouts themselves are \
              run under Miri by the other relayout tests)"
)]
fn relayout_reshape_strides_reach_the_same_elements_and_miss_no_view() {
    let bases: &[&[i64]] = &[&[2, 3], &[4, 2], &[2, 2, 2], &[3, 1, 2], &[6], &[2, 3, 2]];
    let mut checked = 0;
    for &base in bases {
        let count: i64 = base.iter().product();
        let rank = base.len();
        // Strides: the compact ones of each axis order, each axis stepped by 1, 2, -1 or 0.
        let mut orders: Vec<Vec<usize>> = vec![(0..rank).collect()];
        if rank > 1 {
            orders.push((0..rank).rev().collect());
        }
        for order in orders {
            for steps in 0..4usize.pow(rank as u32) {
                let mut strides = vec![0i64; rank];
                let mut step = 1;
                for &axis in order.iter().rev() {
                    strides[axis] = step;
                    step *= base[axis] * 2;
                }
                for (axis, stride) in strides.iter_mut().enumerate() {
                    *stride *= [1, 2, -1, 0][steps / 4usize.pow(axis as u32) % 4];
                }
                let old = offsets(base, &strides);
                let overlap_free = crate::layout::is_overlap_free(base, &strides);
                for new_shape in shapes_of(count, 3) {
                    let answer = reshape_strides(base, &strides, &new_shape);
                    if let Some(new_strides) = &answer {
                        assert_eq!(
                            offsets(&new_shape, new_strides),
                            old,
                            "{base:?} with strides {strides:?} as {new_shape:?}"
                        );
                    }
                    if overlap_free {
                        // Brute force: the stride of each axis is the offset one step along it.
                        let mut guess = vec![0i64; new_shape.len()];
                        let mut step = 1;
                        for axis in (0..new_shape.len()).rev() {
                            if new_shape[axis] > 1 {
                                guess[axis] = old[step as usize] - old[0];
                            }
                            step *= new_shape[axis];
                        }
                        let exists = offsets(&new_shape, &guess) == old;
                        assert_eq!(
                            answer.is_some(),
                            exists,
                            "{base:?} with strides {strides:?} as {new_shape:?}"
                        );
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 100, "{checked} layouts and shapes");
}

#[test]
fn relayout_reshape_refuses_what_needs_a_copy_and_into_compact_makes_it() {
    let transposed = Export::new(vec![1, 2, 3, 4, 5, 6], &[3, 2])
        .strides(&[1, 3])
        .into_versioned()
        .unwrap();
    let refused = transposed.reshape(&[-1]).unwrap_err();
    assert_eq!(
        refused,
        Error::ReshapeNeedsCopy {
            shape: vec![3, 2],
            strides: vec![1, 3],
            new_shape: vec![6],
        }
    );
    let message = refused.to_string();
    for part in [
        "reshape: shape = [6]",
        "shape [3, 2]",
        "DLTensor.strides = [1, 3]",
        "needs a copy",
        "into_compact()",
    ] {
        assert!(message.contains(part), "{part:?} in {message:?}");
    }
    // The way out the message names.
    let transposed = Export::new(vec![1, 2, 3, 4, 5, 6], &[3, 2])
        .strides(&[1, 3])
        .into_versioned()
        .unwrap();
    let flat = transposed.into_compact().unwrap().reshape(&[6]).unwrap();
    assert_eq!(flat.view().as_slice::<i32>().unwrap(), &[1, 4, 2, 5, 3, 6]);
}

#[test]
fn relayout_reshape_infers_one_extent_and_names_every_wrong_shape() {
    let tensor = || Export::new(iota(6), &[2, 3]).into_versioned().unwrap();
    for (asked, resolved) in [
        (&[-1, 2][..], &[3, 2][..]),
        (&[2, -1, 1], &[2, 3, 1]),
        (&[-1], &[6]),
    ] {
        let reshaped = tensor().reshape(asked).unwrap();
        assert_eq!(reshaped.view().shape(), resolved);
        assert_eq!(reshaped.view().as_slice::<i32>().unwrap(), &iota(6)[..]);
    }
    let refusals: [(&[i64], &str); 5] = [
        (
            &[-1, -1],
            "ManagedTensor::reshape: shape = [-1, -1]: at most one extent may be -1 \
             (inferred), but shape[0] and shape[1] are",
        ),
        (
            &[2, -3],
            "ManagedTensor::reshape: shape = [2, -3]: shape[1] = -3: extents must not be \
             negative",
        ),
        (
            &[4, 2],
            "ManagedTensor::reshape: shape = [4, 2]: describes 8 elements, but the tensor has \
             6 (shape [2, 3])",
        ),
        (
            &[4, -1],
            "ManagedTensor::reshape: shape = [4, -1]: the other extents multiply to 4, which \
             does not divide the tensor's 6 elements (shape [2, 3])",
        ),
        (
            &[i64::MAX, 4],
            "ManagedTensor::reshape: shape = [9223372036854775807, 4]: the extents multiply \
             past 64 bits",
        ),
    ];
    for (asked, text) in refusals {
        let error = tensor().reshape(asked).unwrap_err();
        assert!(
            matches!(
                error,
                Error::InvalidArgument {
                    operation: "reshape",
                    argument: "shape",
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(error.to_string().starts_with(text), "{error}");
    }
    let too_many = vec![1; crate::MAX_NDIM as usize + 1];
    assert_eq!(
        tensor().reshape(&too_many).unwrap_err(),
        Error::InvalidNdim { ndim: 1025 }
    );

    // An empty tensor: any shape of no elements, compact; -1 is ambiguous there.
    let empty = || {
        Export::new(Vec::<i32>::new(), &[0, 3])
            .into_versioned()
            .unwrap()
    };
    let reshaped = empty().reshape(&[3, 0, 2]).unwrap();
    assert_eq!(shape_and_strides(&reshaped), (vec![3, 0, 2], vec![2, 2, 1]));
    let error = empty().reshape(&[0, -1]).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("shape = [0, -1]: the extent -1 stands for cannot be inferred"),
        "{error}"
    );
}

#[test]
fn relayout_permute_round_trips_and_names_wrong_axes() {
    let tensor = Export::new(iota(24), &[2, 3, 4]).into_versioned().unwrap();
    let first = tensor.view().data_ptr();
    let permuted = tensor.permute(&[2, 0, 1]).unwrap();
    assert_eq!(
        shape_and_strides(&permuted),
        (vec![4, 2, 3], vec![1, 12, 4])
    );
    assert_eq!(permuted.view().data_ptr(), first);
    let elements = permuted.view().elements::<i32>().unwrap();
    // permuted[k, i, j] = original[i, j, k] = 12 i + 4 j + k
    assert_eq!(elements.get(&[3, 1, 2]), Some(&(12 + 8 + 3)));
    let back = permuted.permute(&[1, 2, 0]).unwrap();
    assert_eq!(shape_and_strides(&back), (vec![2, 3, 4], vec![12, 4, 1]));
    assert_eq!(back.view().as_slice::<i32>().unwrap(), &iota(24)[..]);
    // The identity: the same tensor.
    let raw = back.as_raw();
    assert_eq!(back.permute(&[0, 1, 2]).unwrap().as_raw(), raw);

    let tensor = || Export::new(iota(6), &[2, 3]).into_versioned().unwrap();
    for (axes, text) in [
        (
            &[0, 0][..],
            "ManagedTensor::permute: axes = [0, 0]: axis 0 appears twice: axes must be a \
             permutation of 0..2",
        ),
        (
            &[0, 2],
            "ManagedTensor::permute: axes = [0, 2]: axis 2 is out of range for a tensor of 2 \
             dimensions",
        ),
        (
            &[1, 0, 2],
            "ManagedTensor::permute: axes = [1, 0, 2]: has 3 entries, but the tensor has 2 \
             dimensions",
        ),
    ] {
        let error = tensor().permute(axes).unwrap_err();
        assert!(
            matches!(
                error,
                Error::InvalidArgument {
                    operation: "permute",
                    argument: "axes",
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(error.to_string().starts_with(text), "{error}");
    }
}

#[test]
fn relayout_insert_axis_at_both_ends_and_refuses_past_them() {
    let tensor = || Export::new(iota(6), &[2, 3]).into_versioned().unwrap();
    let leading = tensor().insert_axis(0).unwrap();
    assert_eq!(shape_and_strides(&leading), (vec![1, 2, 3], vec![6, 3, 1]));
    let trailing = tensor().insert_axis(2).unwrap();
    assert_eq!(shape_and_strides(&trailing), (vec![2, 3, 1], vec![3, 1, 1]));
    let middle = trailing.insert_axis(1).unwrap();
    assert_eq!(
        shape_and_strides(&middle),
        (vec![2, 1, 3, 1], vec![3, 3, 1, 1])
    );
    assert_eq!(middle.view().as_slice::<i32>().unwrap(), &iota(6)[..]);
    let scalar = Export::new(vec![7u8], &[]).into_versioned().unwrap();
    let one = scalar.insert_axis(0).unwrap();
    assert_eq!(shape_and_strides(&one), (vec![1], vec![1]));
    assert_eq!(one.view().as_slice::<u8>().unwrap(), &[7]);

    let error = tensor().insert_axis(3).unwrap_err();
    assert!(
        matches!(
            error,
            Error::InvalidArgument {
                operation: "insert_axis",
                argument: "axis",
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "ManagedTensor::insert_axis: axis = 3: must be at most ndim = 2 (after the last axis) \
         for a tensor of shape [2, 3]"
    );
    let widest = vec![1usize; crate::MAX_NDIM as usize];
    let widest = Export::new(vec![0u8], &widest).into_versioned().unwrap();
    assert_eq!(
        widest.insert_axis(0).unwrap_err(),
        Error::InvalidNdim { ndim: 1025 }
    );
}

#[test]
fn relayout_into_compact_copies_only_what_is_not_compact() {
    let transposed = Export::new(vec![1, 2, 3, 4, 5, 6], &[3, 2])
        .strides(&[1, 3])
        .into_versioned()
        .unwrap()
        .permute(&[1, 0])
        .unwrap()
        .insert_axis(0)
        .unwrap()
        .permute(&[2, 1, 0])
        .unwrap();
    assert_eq!(transposed.view().shape(), &[3, 2, 1]);
    let source = transposed.view().data_ptr();
    let mut compact = transposed.into_compact().unwrap();
    assert_eq!(shape_and_strides(&compact), (vec![3, 2, 1], vec![2, 1, 1]));
    assert_eq!(
        compact.view().as_slice::<i32>().unwrap(),
        &[1, 4, 2, 5, 3, 6]
    );
    assert_ne!(compact.view().data_ptr(), source);
    assert_eq!(compact.view().data_ptr() as usize % 64, 0);
    assert!(compact.view().flags().is_copied());
    assert!(compact.is_exclusive());
    assert_eq!(compact.writability(), Writability::Writable);
    compact.as_mut_slice::<i32>().unwrap()[0] = 10;
    // Compact already: the same tensor; a relayout of a copy stays flagged IS_COPIED.
    let raw = compact.as_raw();
    let same = compact.into_compact().unwrap();
    assert_eq!(same.as_raw(), raw);
    let still_copied = same.reshape(&[6]).unwrap();
    assert!(still_copied.view().flags().is_copied());
    assert_eq!(
        still_copied.view().as_slice::<i32>().unwrap(),
        &[10, 4, 2, 5, 3, 6]
    );

    // Device memory: compact, the tensor back; strided, the copy's error.
    let device = |strides: bool| {
        let address = std::ptr::without_provenance_mut::<c_void>(0x1000);
        // SAFETY: the CPU never reads device memory: the test only looks at the descriptor.
        let export = unsafe {
            Export::from_raw_parts(
                (),
                address,
                DataType::FLOAT32,
                Device::new(DeviceType::CUDA, 0),
                &[2, 2],
            )
        };
        if strides {
            export.strides(&[1, 2]).into_versioned().unwrap()
        } else {
            export.into_versioned().unwrap()
        }
    };
    let compact = device(false);
    let raw = compact.as_raw();
    assert_eq!(compact.into_compact().unwrap().as_raw(), raw);
    assert!(matches!(
        device(true).into_compact(),
        Err(Error::NotHostReadable { .. })
    ));
}

#[test]
fn relayout_keeps_an_exclusive_tensor_writable_and_exclusive() {
    let tensor = counted(0, 6, &[2, 3]).into_versioned().unwrap();
    let mut reshaped = tensor.reshape(&[3, 2]).unwrap();
    assert!(reshaped.is_exclusive() && !reshaped.is_share());
    reshaped.as_mut_slice::<i32>().unwrap()[1] = 10;
    let mut permuted = reshaped.permute(&[1, 0]).unwrap();
    assert!(permuted.is_exclusive());
    *permuted
        .elements_mut::<i32>()
        .unwrap()
        .get_mut(&[1, 2])
        .unwrap() = 50;
    let mut inserted = permuted.insert_axis(0).unwrap();
    assert!(inserted.is_exclusive());
    assert_eq!(values(&inserted), [0, 2, 4, 10, 3, 50]);
    inserted
        .elements_mut::<i32>()
        .unwrap()
        .iter_mut()
        .for_each(|x| *x += 1);
    assert_eq!(values(&inserted), [1, 3, 5, 11, 4, 51]);
    assert_eq!(drops(0), 0);
    drop(inserted);
    assert_eq!(drops(0), 1, "the owner is dropped once");
}

#[test]
fn relayout_keeps_shared_and_read_only_tensors_so() {
    // A share of a tensor in an `Arc`: not exclusive, counted in its source as a share.
    let source = Arc::new(Export::new(iota(6), &[2, 3]).into_versioned().unwrap());
    let share = Arc::clone(&source).share_versioned().unwrap();
    let mut reshaped = share.reshape(&[6]).unwrap();
    assert!(!reshaped.is_exclusive() && reshaped.is_share());
    assert_eq!(reshaped.as_mut_slice::<i32>(), Err(Error::SharedMemory));
    assert_eq!(source.live_shares(), 1);
    let mut permuted = reshaped.reshape(&[3, 2]).unwrap().permute(&[1, 0]).unwrap();
    assert!(!permuted.is_exclusive() && permuted.is_share());
    assert_eq!(
        permuted.elements_mut::<i32>().unwrap_err(),
        Error::SharedMemory
    );
    assert_eq!(source.live_shares(), 1, "one share, wherever it went");
    assert_eq!(Arc::strong_count(&source), 2);
    // Given away, it no longer counts, and still keeps the source.
    let raw = permuted.into_raw();
    assert_eq!(source.live_shares(), 0);
    assert_eq!(Arc::strong_count(&source), 2);
    // SAFETY: the consumer's side: a live tensor it owns, released once.
    unsafe { raw.delete() };
    assert_eq!(Arc::strong_count(&source), 1);
    let dropped = Arc::clone(&source)
        .share_versioned()
        .unwrap()
        .insert_axis(0)
        .unwrap();
    assert_eq!(source.live_shares(), 1);
    drop(dropped);
    assert_eq!(source.live_shares(), 0);

    // A tensor marked shared (an import of a Python object's memory) stays shared.
    let mut marked = Export::new(iota(4), &[4]).into_versioned().unwrap();
    marked.mark_shared();
    let mut marked = marked.reshape(&[2, 2]).unwrap();
    assert!(!marked.is_exclusive() && !marked.is_share());
    assert_eq!(marked.as_mut_slice::<i32>(), Err(Error::SharedMemory));

    // Read-only memory stays read-only.
    let read_only = Export::new(iota(4), &[4])
        .read_only(true)
        .into_versioned()
        .unwrap();
    let mut read_only = read_only
        .reshape(&[2, 2])
        .unwrap()
        .permute(&[1, 0])
        .unwrap();
    assert!(read_only.view().flags().is_read_only());
    assert_eq!(read_only.writability(), Writability::ReadOnly);
    assert!(matches!(
        read_only.elements_mut::<i32>(),
        Err(Error::ReadOnly { .. })
    ));
    assert!(
        read_only.is_exclusive(),
        "exclusive, and read-only all the same"
    );
}

#[test]
fn relayout_keeps_a_legacy_tensor_legacy_and_its_writability() {
    // Exported legacy by this crate: writable.
    let mut ours = Export::new(iota(6), &[6])
        .into_legacy()
        .unwrap()
        .reshape(&[2, 3])
        .unwrap();
    assert!(!ours.is_versioned());
    assert_eq!(ours.writability(), Writability::Writable);
    ours.as_mut_slice::<i32>().unwrap()[0] = 9;
    // From outside: of unknown writability, read-only.
    let raw = Export::new(iota(6), &[6]).into_legacy().unwrap().into_raw();
    // SAFETY: the tensor just given away, taken back once.
    let foreign = unsafe { ManagedTensor::from_raw(raw) }.unwrap();
    let mut foreign = foreign.reshape(&[3, 2]).unwrap().permute(&[1, 0]).unwrap();
    assert!(!foreign.is_versioned());
    assert_eq!(foreign.writability(), Writability::Unknown);
    assert_eq!(
        foreign.as_mut_slice_memory_order::<i32>(),
        Err(Error::WritabilityUnknown)
    );
    assert_eq!(values(&foreign), [0, 2, 4, 1, 3, 5]);
}

#[test]
fn relayout_keeps_the_flags_device_ready_stream_and_release() {
    // Padded sub-byte elements: one byte each, the flag carried.
    let bytes = vec![1u8, 2, 3, 4, 5, 6];
    let data = bytes.as_ptr().cast_mut().cast();
    // SAFETY: the `Vec`, moved into the tensor, holds one byte for each of the 6 elements.
    let int4 = unsafe { Export::from_raw_parts(bytes, data, DataType::int(4), Device::CPU, &[6]) }
        .subbyte_padded(true)
        .into_versioned()
        .unwrap();
    let int4 = int4.reshape(&[2, 3]).unwrap();
    assert!(int4.flags().is_subbyte_type_padded());
    assert_eq!(int4.view().compact_byte_size(), 6);

    let mut tensor = counted(1, 4, &[4]).into_versioned().unwrap();
    let pinned = Device::new(DeviceType::CUDA_HOST, 0);
    tensor.set_device(pinned).unwrap();
    // SAFETY: 1 is CUDA's legacy default stream, which lives as long as the process.
    unsafe { tensor.set_ready_stream(Some(1)) };
    assert!(
        tensor
            .set_release_on_drop(ReleaseOnDrop::new(release, 1))
            .is_ok()
    );
    let tensor = tensor.reshape(&[2, 2]).unwrap().insert_axis(2).unwrap();
    assert_eq!(tensor.view().device(), pinned);
    assert_eq!(tensor.ready_stream(), Some(1));
    assert!(tensor.has_release_on_drop());
    assert_eq!((releases(1), drops(1)), (0, 0));
    drop(tensor);
    assert_eq!(
        (releases(1), drops(1)),
        (1, 1),
        "released once, owner dropped once"
    );

    // Given away, the release runs as the pointer leaves, the owner when it is deleted.
    let mut tensor = counted(2, 4, &[4]).into_versioned().unwrap();
    assert!(
        tensor
            .set_release_on_drop(ReleaseOnDrop::new(release, 2))
            .is_ok()
    );
    let raw = tensor
        .permute(&[0])
        .unwrap()
        .reshape(&[4, 1])
        .unwrap()
        .into_raw();
    assert_eq!((releases(2), drops(2)), (1, 0));
    // SAFETY: the consumer's side: a live tensor it owns, released once.
    unsafe { raw.delete() };
    assert_eq!((releases(2), drops(2)), (1, 1));
}

#[test]
fn relayout_of_a_relayout_frees_the_block_it_replaces() {
    let first = counted(3, 6, &[6])
        .into_versioned()
        .unwrap()
        .reshape(&[2, 3])
        .unwrap();
    let block = match first.as_raw() {
        RawManagedTensor::Versioned(ptr) => ptr.cast_const().cast::<u8>(),
        RawManagedTensor::Legacy(_) => unreachable!("versioned"),
    };
    let mut second = None;
    let freed = crate::alloc_watch::frees([block], || {
        second = Some(first.permute(&[1, 0]).unwrap());
    });
    assert_eq!(freed, [1], "the first relayout's block, freed once");
    assert_eq!(drops(3), 0, "the tensor under it moved on");
    let second = second.unwrap();
    assert_eq!(values(&second), [0, 3, 1, 4, 2, 5]);

    // A long chain holds one block (dropping it would otherwise recurse once per call).
    let mut tensor = second.permute(&[1, 0]).unwrap();
    for _ in 0..if cfg!(miri) { 20 } else { 25_000 } {
        tensor = tensor.reshape(&[3, 2]).unwrap().reshape(&[-1, 3]).unwrap();
        tensor = tensor.permute(&[1, 0]).unwrap().permute(&[1, 0]).unwrap();
    }
    assert_eq!(shape_and_strides(&tensor), (vec![2, 3], vec![3, 1]));
    assert_eq!(values(&tensor), [0, 1, 2, 3, 4, 5]);
    assert_eq!(drops(3), 0);
    drop(tensor);
    assert_eq!(drops(3), 1, "the owner is dropped once");

    // A refusal releases the tensor, once.
    let tensor = counted(4, 6, &[2, 3])
        .into_versioned()
        .unwrap()
        .permute(&[1, 0])
        .unwrap();
    assert!(tensor.reshape(&[6]).is_err());
    assert_eq!(drops(4), 1);
}
