//! Tests of the `faer` conversions: views of every 2-D layout DLPack allows (row- and
//! column-major, sliced, reversed, broadcast, extent-1 and empty), mutable views, and exports
//! of owned matrices.

use ::faer::{Mat, mat};
use half::{bf16, f16};
use num_complex::Complex;

use super::{FaerTensorExt, FaerViewExt};
use crate::{DataType, Device, Error, Export, ManagedTensor};

fn tensor<T: crate::Element>(data: Vec<T>, shape: &[usize], strides: &[i64]) -> ManagedTensor {
    Export::new(data, shape)
        .strides(strides)
        .into_versioned()
        .unwrap()
}

/// A read-only tensor over `data` whose first logical element is `data[first]`, for layouts
/// with negative strides.
fn tensor_from<T: crate::Element>(
    data: Vec<T>,
    first: usize,
    shape: &[usize],
    strides: &[i64],
) -> ManagedTensor {
    let owner = std::sync::Arc::<[T]>::from(data);
    let start = owner.as_ptr().cast_mut().wrapping_add(first);
    // SAFETY: the Arc keeps the elements alive and the layouts the tests pass stay inside
    // them (validation checks nothing of this: the tests choose them so); exported read-only.
    unsafe { Export::from_raw_parts(owner, start.cast(), T::DTYPE, Device::CPU, shape) }
        .strides(strides)
        .read_only(true)
        .into_versioned()
        .unwrap()
}

#[test]
fn row_major_column_major_and_reversed_tensors_are_the_same_matrix() {
    let expected = mat![[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let sources = [
        tensor(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], &[3, 1]),
        tensor(vec![1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0], &[2, 3], &[1, 2]),
        // Rows stored bottom-up, columns right to left.
        tensor_from(vec![6.0f64, 5.0, 4.0, 3.0, 2.0, 1.0], 5, &[2, 3], &[-3, -1]),
    ];
    for source in &sources {
        let view = source.view();
        let matrix = view.as_faer_mat::<f64>().unwrap();
        assert_eq!(matrix, expected);
        assert_eq!(matrix.as_ptr(), view.data_ptr() as *const f64);
        assert_eq!(
            [matrix.row_stride(), matrix.col_stride()],
            [view.strides()[0] as isize, view.strides()[1] as isize]
        );
        // faer's own products run on every layout.
        assert_eq!(
            matrix * matrix.transpose(),
            &expected * expected.transpose()
        );
    }
}

#[test]
fn sliced_and_broadcast_layouts_are_kept() {
    // Columns 1..3 of a 3x4 row-major matrix.
    let data: Vec<i32> = (0..12).collect();
    let source = tensor_from(data, 1, &[3, 2], &[4, 1]);
    let matrix = source.view().as_faer_mat::<i32>().unwrap();
    assert_eq!(
        matrix.to_owned(),
        Mat::from_fn(3, 2, |r, c| (4 * r + c + 1) as i32)
    );
    // A broadcast row: stride 0 along the rows.
    let broadcast = tensor(vec![7.0f32, 8.0, 9.0], &[4, 3], &[0, 1]);
    let matrix = broadcast.view().as_faer_mat::<f32>().unwrap();
    assert_eq!(
        matrix.to_owned(),
        Mat::from_fn(4, 3, |_, c| [7.0f32, 8.0, 9.0][c])
    );
    assert_eq!(matrix.sum(), 4.0 * 24.0);
}

#[test]
fn extent_one_axes_and_empty_tensors() {
    let column = tensor(vec![1.0f64, 2.0, 3.0], &[3, 1], &[1, i64::MAX]);
    let matrix = column.view().as_faer_mat::<f64>().unwrap();
    assert_eq!((matrix.row_stride(), matrix.col_stride()), (1, 3));
    assert_eq!(
        matrix.col(0).try_as_col_major().map(|c| c.as_slice().len()),
        Some(3)
    );
    let row = tensor(vec![1.0f64, 2.0, 3.0], &[1, 3], &[i64::MIN, 1]);
    assert_eq!(
        row.view().as_faer_mat::<f64>().unwrap(),
        mat![[1.0, 2.0, 3.0]]
    );
    for shape in [[0usize, 3], [3, 0], [0, 0]] {
        let empty = tensor(Vec::<f64>::new(), &shape, &[-7, 9]);
        let matrix = empty.view().as_faer_mat::<f64>().unwrap();
        assert_eq!((matrix.nrows(), matrix.ncols()), (shape[0], shape[1]));
        assert_eq!(matrix.to_owned(), Mat::<f64>::zeros(shape[0], shape[1]));
    }
}

#[test]
fn what_typed_access_refuses_is_refused() {
    let vector = tensor(vec![1.0f64, 2.0], &[2], &[1]);
    assert!(matches!(
        vector.view().as_faer_mat::<f64>(),
        Err(Error::DimensionalityMismatch {
            expected: 2,
            actual: 1
        })
    ));
    let matrix = tensor(vec![1i64; 4], &[2, 2], &[2, 1]);
    assert!(matches!(
        matrix.view().as_faer_mat::<f64>(),
        Err(Error::DataTypeMismatch { .. })
    ));
    let mut cuda = tensor(vec![1.0f32; 4], &[2, 2], &[2, 1]);
    // SAFETY: the label is never used to reach the memory as device memory.
    unsafe { cuda.set_device_unchecked(Device::new(crate::DeviceType::CUDA, 0)) }.unwrap();
    assert!(matches!(
        cuda.view().as_faer_mat::<f32>(),
        Err(Error::NotHostReadable { .. })
    ));
}

#[test]
fn mutable_views_write_through_and_refuse_what_they_must() {
    let mut source = tensor(vec![0.0f64; 6], &[2, 3], &[3, 1]);
    {
        let mut matrix = source.as_faer_mat_mut::<f64>().unwrap();
        matrix.as_mut().row_mut(1).fill(7.0);
        let copy = matrix.to_owned();
        matrix.copy_from(&copy * 2.0);
    }
    assert_eq!(
        source.view().as_slice::<f64>().unwrap(),
        &[0.0, 0.0, 0.0, 14.0, 14.0, 14.0]
    );
    let mut broadcast = tensor(vec![1.0f32, 2.0], &[3, 2], &[0, 1]);
    assert!(matches!(
        broadcast.as_faer_mat_mut::<f32>(),
        Err(Error::OverlappingLayout { .. })
    ));
    let mut reversed = tensor_from(vec![1.0f32; 4], 3, &[2, 2], &[-2, -1]);
    assert!(matches!(
        reversed.as_faer_mat_mut::<f32>(),
        Err(Error::ReadOnly { .. })
    ));
    let mut shared = tensor(vec![1.0f32; 4], &[2, 2], &[2, 1]);
    shared.mark_shared();
    assert!(matches!(
        shared.as_faer_mat_mut::<f32>(),
        Err(Error::SharedMemory)
    ));
}

#[test]
fn owned_matrices_export_without_copying() {
    for (rows, cols) in [(3, 4), (5, 1), (1, 5), (0, 3), (3, 0), (17, 3)] {
        let matrix = Mat::<f64>::from_fn(rows, cols, |r, c| (100 * r + c) as f64);
        let expected = matrix.clone();
        let data = matrix.as_ptr();
        let col_stride = matrix.col_stride();
        let exported = ManagedTensor::from_faer_mat(matrix).unwrap();
        let view = exported.view();
        if rows * cols > 0 {
            assert_eq!(view.data_ptr() as *const f64, data);
        }
        assert_eq!(view.shape(), &[rows as i64, cols as i64]);
        assert_eq!(view.strides(), &[1, col_stride as i64]);
        assert!(!view.is_read_only());
        assert!(exported.is_exclusive());
        assert_eq!(view.as_faer_mat::<f64>().unwrap(), expected);
    }
}

#[test]
fn resized_matrices_export_inside_their_allocation() {
    // Issue 47: `from_faer_mat` takes faer's extents and column stride (its row capacity)
    // without a length to bound them by: faer keeps them inside its allocation (its `Mat`'s
    // fields are private; only the `unsafe fn set_dims` could break that). Pinned here for
    // matrices whose capacity exceeds their extents, every element read (Miri reports a read
    // outside the allocation).
    let value = |r: usize, c: usize| (100 * r + c) as f32;
    let mut truncated = Mat::<f32>::from_fn(9, 7, value);
    truncated.truncate(4, 3);
    let mut reserved = Mat::<f32>::from_fn(2, 3, value);
    reserved.reserve(33, 9);
    let mut regrown = Mat::<f32>::from_fn(6, 2, value);
    regrown.truncate(1, 1);
    regrown.resize_with(8, 5, value);
    for matrix in [truncated, reserved, regrown] {
        let (rows, cols) = (matrix.nrows(), matrix.ncols());
        let col_stride = matrix.col_stride();
        assert!(col_stride >= rows as isize);
        let exported = ManagedTensor::from_faer_mat(matrix).unwrap();
        let view = exported.view();
        assert_eq!(view.strides(), &[1, col_stride as i64]);
        let values: Vec<f32> = view.elements::<f32>().unwrap().iter().copied().collect();
        let expected: Vec<f32> = (0..rows)
            .flat_map(|r| (0..cols).map(move |c| value(r, c)))
            .collect();
        assert_eq!(values, expected);
    }
}

#[test]
fn every_element_type_views_and_exports() {
    fn check<T: crate::Element + PartialEq + std::fmt::Debug>(values: [T; 4]) {
        let exported =
            ManagedTensor::from_faer_mat(Mat::from_fn(2, 2, |r, c| values[2 * r + c])).unwrap();
        assert_eq!(exported.view().dtype(), T::DTYPE);
        let view = exported.view();
        let matrix = view.as_faer_mat::<T>().unwrap();
        assert_eq!(matrix[(1, 0)], values[2]);
        assert_eq!(matrix[(0, 1)], values[1]);
    }
    check([1i8, 2, 3, 4]);
    check([1u64, 2, 3, 4]);
    check([f16::ONE, f16::ZERO, f16::MAX, f16::MIN]);
    check([bf16::ONE, bf16::ZERO, bf16::MAX, bf16::MIN]);
    check([true, false, false, true]);
    check([
        Complex::new(1.0f32, 2.0),
        Complex::new(0.0, 1.0),
        Complex::ONE,
        Complex::ZERO,
    ]);
    let complex = ManagedTensor::from_faer_mat(Mat::<faer::c64>::identity(2, 2)).unwrap();
    assert_eq!(complex.view().dtype(), DataType::COMPLEX128);
}
