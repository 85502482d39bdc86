//! Tests of the `nalgebra` conversions: views of every 1-D and 2-D layout nalgebra can express
//! (row- and column-major, sliced, broadcast, extent-1 and empty), the refusals of those it
//! cannot, mutable views, and exports of owned matrices and vectors.

use ::nalgebra::{DMatrix, DVector, RawStorage};
use half::{bf16, f16};
use num_complex::Complex;

use super::{NalgebraTensorExt, NalgebraViewExt};
use crate::{DataType, Error, Export, ManagedTensor};

fn tensor<T: crate::Element>(data: Vec<T>, shape: &[usize], strides: &[i64]) -> ManagedTensor {
    Export::new(data, shape)
        .strides(strides)
        .into_versioned()
        .unwrap()
}

#[test]
fn column_major_tensors_are_matrices_and_row_major_ones_their_transposes() {
    let row_major = tensor(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], &[3, 1]);
    let column_major = tensor(vec![1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0], &[2, 3], &[1, 2]);
    let expected = DMatrix::from_row_slice(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);

    let view = column_major.view();
    let matrix = view.as_nalgebra_matrix::<f64>().unwrap();
    assert_eq!(matrix, expected);
    assert_eq!(matrix.as_ptr(), view.data_ptr() as *const f64);
    assert_eq!(matrix.strides(), (1, 2));

    let view = row_major.view();
    let transposed = view.as_nalgebra_matrix_transposed::<f64>().unwrap();
    assert_eq!(transposed, expected.transpose());
    assert_eq!(transposed.as_ptr(), view.data_ptr() as *const f64);
    assert_eq!(transposed.strides(), (1, 3));

    // nalgebra's products run on both, and agree with the owned matrices'.
    let ones = DVector::from_element(3, 1.0);
    assert_eq!(matrix * &ones, &expected * &ones);
    assert_eq!(transposed.tr_mul(&ones), &expected * &ones);
    assert_eq!(matrix * transposed, &expected * expected.transpose());
}

#[test]
fn row_strides_other_than_one_are_refused_with_the_way_out() {
    let row_major = tensor(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], &[3, 1]);
    let error = row_major.view().as_nalgebra_matrix::<f64>().unwrap_err();
    assert_eq!(
        error.to_string(),
        "nalgebra cannot express a nalgebra matrix view of a tensor of shape [2, 3] and strides \
         [3, 1]: the row stride is 3, and nalgebra 0.35 reads and writes out of bounds on views \
         whose row stride is not 1 (its products and axpy: nalgebra issue #1616); this \
         row-major tensor is the transpose of a column-major matrix: \
         as_nalgebra_matrix_transposed views it"
    );
    let column_major = tensor(vec![1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0], &[2, 3], &[1, 2]);
    let error = column_major
        .view()
        .as_nalgebra_matrix_transposed::<f64>()
        .unwrap_err();
    assert!(
        matches!(
            &error,
            Error::Unrepresentable { library: "nalgebra", asked: "a nalgebra view of the transpose", given }
                if given.contains("the column stride is 2")
        ),
        "{error}"
    );
    // Every other element: stride 2.
    let strided = tensor(vec![1i32, 0, 2, 0, 3, 0], &[3], &[2]);
    let error = strided.view().as_nalgebra_vector::<i32>().unwrap_err();
    assert!(
        error
            .to_string()
            .ends_with("read it with TensorView::elements, or copy it"),
        "{error}"
    );
    // Broadcast rows: stride 0.
    let broadcast = tensor(vec![7u16, 8, 9], &[4, 3], &[0, 1]);
    assert!(matches!(
        broadcast.view().as_nalgebra_matrix::<u16>(),
        Err(Error::Unrepresentable { .. })
    ));
}

#[test]
fn column_slices_and_broadcast_columns_are_kept() {
    // Columns 1..3 of a 4x4 column-major matrix: data starts one column in, column stride 4.
    let data: Vec<i32> = (0..16).collect();
    let source = tensor(data, &[4, 4], &[1, 4]);
    let view = source.view();
    let whole = view.as_nalgebra_matrix::<i32>().unwrap();
    let inner = whole.columns(1, 2);
    assert_eq!(
        inner,
        DMatrix::from_fn(4, 2, |r, c| (4 * (c + 1) + r) as i32)
    );
    assert_eq!(inner.sum(), (4..12).sum::<i32>());
    // One column repeated three times: column stride 0.
    let broadcast = tensor(vec![7u16, 8, 9], &[3, 4], &[1, 0]);
    let matrix = broadcast.view().as_nalgebra_matrix::<u16>().unwrap();
    assert_eq!(
        matrix.into_owned(),
        DMatrix::from_fn(3, 4, |r, _| [7u16, 8, 9][r])
    );
    assert_eq!(matrix.iter().count(), 12);
}

#[test]
fn extent_one_axes_get_compact_strides_whatever_dlpack_says() {
    // A column of three with a huge stride on its single column, and a row with a negative
    // one on its single row: neither stride is ever stepped along.
    let column = tensor(vec![1.0f32, 2.0, 3.0], &[3, 1], &[1, i64::MAX]);
    let view = column.view();
    let matrix = view.as_nalgebra_matrix::<f32>().unwrap();
    assert_eq!(matrix.strides(), (1, 3));
    assert!(matrix.data.is_contiguous());
    assert_eq!(matrix.iter().copied().collect::<Vec<_>>(), [1.0, 2.0, 3.0]);
    let row = tensor(vec![1.0f32, 2.0, 3.0], &[1, 3], &[-5, 1]);
    let matrix = row.view().as_nalgebra_matrix::<f32>().unwrap().into_owned();
    assert_eq!(matrix, DMatrix::from_row_slice(1, 3, &[1.0, 2.0, 3.0]));
    // A single element, any strides.
    let single = tensor(vec![5i64], &[1, 1], &[i64::MIN, 9]);
    assert_eq!(
        single.view().as_nalgebra_matrix::<i64>().unwrap()[(0, 0)],
        5
    );
    assert_eq!(
        single
            .view()
            .as_nalgebra_matrix_transposed::<i64>()
            .unwrap()[(0, 0)],
        5
    );
}

#[test]
fn empty_tensors_are_empty_matrices_even_with_null_data() {
    for shape in [[0usize, 3], [3, 0], [0, 0]] {
        let empty = tensor(Vec::<f64>::new(), &shape, &[-1, -1]);
        let matrix = empty.view().as_nalgebra_matrix::<f64>().unwrap();
        assert_eq!(matrix.shape(), (shape[0], shape[1]));
        assert_eq!(matrix.iter().count(), 0);
        assert_eq!(
            matrix.into_owned(),
            DMatrix::<f64>::zeros(shape[0], shape[1])
        );
    }
    let empty = tensor(Vec::<u8>::new(), &[0], &[3]);
    assert_eq!(empty.view().as_nalgebra_vector::<u8>().unwrap().len(), 0);
}

#[test]
fn negative_strides_are_refused_with_the_layout() {
    // The columns in reverse order: the first logical element is the third in memory.
    let data = vec![1.0f64, 2.0, 3.0, 4.0];
    let reversed = {
        let owner = std::sync::Arc::<[f64]>::from(data);
        let first = owner.as_ptr().cast_mut().wrapping_add(2);
        // SAFETY: the Arc keeps the four elements alive; columns at offsets 0 and -2 from the
        // third element lie inside them; exported read-only.
        unsafe {
            Export::from_raw_parts(
                owner,
                first.cast(),
                DataType::FLOAT64,
                crate::Device::CPU,
                &[2, 2],
            )
        }
        .strides(&[1, -2])
        .read_only(true)
        .into_versioned()
        .unwrap()
    };
    assert_eq!(
        reversed
            .view()
            .elements::<f64>()
            .unwrap()
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        [3.0, 1.0, 4.0, 2.0]
    );
    let error = reversed.view().as_nalgebra_matrix::<f64>().unwrap_err();
    assert_eq!(
        error.to_string(),
        "nalgebra cannot express a nalgebra matrix view of a tensor of shape [2, 2] and strides \
         [1, -2]: nalgebra's strides are unsigned, and axis 1 steps backwards"
    );
}

#[test]
fn wrong_dimensions_and_data_types_are_refused() {
    let matrix = tensor(vec![1i64, 2, 3, 4], &[2, 2], &[2, 1]);
    assert!(matches!(
        matrix.view().as_nalgebra_vector::<i64>(),
        Err(Error::DimensionalityMismatch {
            expected: 1,
            actual: 2
        })
    ));
    assert!(matches!(
        matrix.view().as_nalgebra_matrix::<f64>(),
        Err(Error::DataTypeMismatch { .. })
    ));
    let cube = tensor(vec![0u8; 8], &[2, 2, 2], &[4, 2, 1]);
    assert!(matches!(
        cube.view().as_nalgebra_matrix::<u8>(),
        Err(Error::DimensionalityMismatch {
            expected: 2,
            actual: 3
        })
    ));
}

#[test]
fn vectors_of_stride_one() {
    let source = tensor(vec![1.0f32, 2.0, 3.0], &[3], &[1]);
    let vector = source.view().as_nalgebra_vector::<f32>().unwrap();
    assert_eq!(vector, DVector::from_vec(vec![1.0, 2.0, 3.0]));
    assert_eq!(vector.dot(&DVector::from_vec(vec![1.0, 1.0, 1.0])), 6.0);
    let mut sum = DVector::from_element(3, 1.0f32);
    sum.axpy(2.0, &vector, 1.0);
    assert_eq!(sum, DVector::from_vec(vec![3.0, 5.0, 7.0]));
}

#[test]
fn mutable_views_write_through_and_refuse_what_they_must() {
    let mut source = tensor(vec![0i32; 6], &[2, 3], &[3, 1]);
    source
        .as_nalgebra_matrix_transposed_mut::<i32>()
        .unwrap()
        .column_mut(1)
        .fill(7);
    assert_eq!(
        source.view().as_slice::<i32>().unwrap(),
        &[0, 0, 0, 7, 7, 7]
    );
    let mut source = tensor(vec![0i32; 6], &[2, 3], &[1, 2]);
    source
        .as_nalgebra_matrix_mut::<i32>()
        .unwrap()
        .row_mut(1)
        .fill(7);
    assert_eq!(
        source.view().as_slice_memory_order::<i32>().unwrap(),
        &[0, 7, 0, 7, 0, 7]
    );
    let mut vector = tensor(vec![1.0f64, 2.0], &[2], &[1]);
    vector
        .as_nalgebra_vector_mut::<f64>()
        .unwrap()
        .scale_mut(3.0);
    assert_eq!(vector.view().as_slice::<f64>().unwrap(), &[3.0, 6.0]);

    // Broadcast columns: two indices reach one element.
    let mut broadcast = tensor(vec![1u8, 2], &[2, 3], &[1, 0]);
    assert!(matches!(
        broadcast.as_nalgebra_matrix_mut::<u8>(),
        Err(Error::OverlappingLayout { .. })
    ));
    // Read-only memory: an `Arc` another owner still holds.
    let shared: std::sync::Arc<[f32]> = vec![1.0f32; 4].into();
    let _other_owner = std::sync::Arc::clone(&shared);
    let mut read_only = Export::new(shared, &[2, 2]).into_versioned().unwrap();
    assert!(matches!(
        read_only.as_nalgebra_matrix_transposed_mut::<f32>(),
        Err(Error::ReadOnly { .. })
    ));
    // A share another handle can read.
    let mut shared = tensor(vec![1.0f32; 4], &[2, 2], &[2, 1]);
    shared.mark_shared();
    assert!(matches!(
        shared.as_nalgebra_matrix_transposed_mut::<f32>(),
        Err(Error::SharedMemory)
    ));
    assert!(matches!(
        shared.as_nalgebra_vector_mut::<f32>(),
        Err(Error::SharedMemory)
    ));
}

#[test]
fn owned_matrices_and_vectors_export_without_copying() {
    let matrix = DMatrix::from_fn(3, 4, |r, c| (10 * r + c) as f64);
    let copy = matrix.clone();
    let data = copy.as_ptr();
    let exported = ManagedTensor::from_nalgebra_matrix(copy).unwrap();
    let view = exported.view();
    assert_eq!(view.data_ptr() as *const f64, data);
    assert_eq!(view.shape(), &[3, 4]);
    assert_eq!(view.strides(), &[1, 3]);
    assert!(view.is_f_contiguous());
    assert!(!view.is_read_only());
    assert!(exported.is_exclusive());
    // Back as a view: the same matrix, still the same memory.
    let back = view.as_nalgebra_matrix::<f64>().unwrap();
    assert_eq!(back, matrix);
    assert_eq!(back.as_ptr(), view.data_ptr() as *const f64);

    let vector = DVector::from_vec(vec![Complex::new(1.0f32, -1.0), Complex::new(2.0, 0.5)]);
    let data = vector.as_ptr();
    let exported = ManagedTensor::from_nalgebra_vector(vector).unwrap();
    assert_eq!(exported.view().data_ptr() as *const Complex<f32>, data);
    assert_eq!(exported.view().dtype(), DataType::COMPLEX64);

    // Empty and single-row matrices export too.
    for (rows, cols) in [(0, 3), (3, 0), (1, 5), (5, 1)] {
        let exported =
            ManagedTensor::from_nalgebra_matrix(DMatrix::<u8>::zeros(rows, cols)).unwrap();
        assert_eq!(exported.view().shape(), &[rows as i64, cols as i64]);
        assert_eq!(
            exported.view().as_nalgebra_matrix::<u8>().unwrap().shape(),
            (rows, cols)
        );
    }
}

#[test]
fn every_element_type_views_and_exports() {
    fn check<T: crate::Element + ::nalgebra::Scalar>(values: [T; 4]) {
        let exported =
            ManagedTensor::from_nalgebra_matrix(DMatrix::from_column_slice(2, 2, &values)).unwrap();
        assert_eq!(exported.view().dtype(), T::DTYPE);
        let view = exported.view();
        let matrix = view.as_nalgebra_matrix::<T>().unwrap();
        assert_eq!(matrix.iter().cloned().collect::<Vec<_>>(), values);
    }
    check([1i8, 2, 3, 4]);
    check([1u64, 2, 3, 4]);
    check([f16::ONE, f16::ZERO, f16::MAX, f16::MIN]);
    check([bf16::ONE, bf16::ZERO, bf16::MAX, bf16::MIN]);
    check([true, false, false, true]);
    check([Complex::new(1.0f64, 2.0); 4]);
}

#[test]
fn invalid_bools_are_refused() {
    let bytes = tensor(vec![0u8, 1, 2, 1], &[2, 2], &[2, 1]);
    let mut raw = bytes.into_raw_versioned().unwrap();
    // SAFETY: our own live export; relabel its uint8 elements as bool before importing.
    let tensor = unsafe {
        (*raw).dl_tensor.dtype = DataType::BOOL;
        ManagedTensor::from_raw_versioned(std::mem::replace(&mut raw, std::ptr::null_mut()))
    }
    .unwrap();
    assert!(matches!(
        tensor.view().as_nalgebra_matrix::<bool>(),
        Err(Error::InvalidBool { value: 2, .. })
    ));
}
