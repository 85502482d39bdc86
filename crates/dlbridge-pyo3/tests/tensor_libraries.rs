//! Rust's tensor libraries in kernels: typed arguments (here Python buffers, so that the test
//! needs no framework; the Python suite runs the same on NumPy, PyTorch and JAX) seen as
//! nalgebra, faer, image and candle values without copying where the library allows, their
//! refusals as `TypeError`s, and each library's values returned with `return_like`.
#![cfg(all(
    feature = "nalgebra",
    feature = "faer",
    feature = "image",
    feature = "burn",
    feature = "candle",
    feature = "arrow"
))]

use dlbridge_pyo3::prelude::*;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Evaluates `code` with `locals`.
fn eval<'py>(py: Python<'py>, code: &str, locals: &Bound<'py, PyDict>) -> Bound<'py, PyAny> {
    py.eval(&std::ffi::CString::new(code).unwrap(), None, Some(locals))
        .unwrap()
}

/// A 2x3 float64 matrix `[[1, 2, 3], [4, 5, 6]]` as a C-contiguous memoryview, and its
/// transpose (a strided view of the same memory, column-major), both over one bytearray.
fn matrices(py: Python<'_>) -> (Bound<'_, PyAny>, Bound<'_, PyAny>, Bound<'_, PyDict>) {
    let locals = PyDict::new(py);
    let row_major = eval(
        py,
        "memoryview(bytearray(__import__('array').array('d', [1, 2, 3, 4, 5, 6]).tobytes()))\
         .cast('B').cast('d', [2, 3])",
        &locals,
    );
    locals.set_item("m", &row_major).unwrap();
    // A column-major 3x2 buffer holding the same matrix's transpose is the 2x3 matrix again.
    let column_major = eval(
        py,
        "memoryview(bytearray(__import__('array').array('d', [1, 4, 2, 5, 3, 6]).tobytes()))\
         .cast('B').cast('d', [3, 2])",
        &locals,
    );
    (row_major, column_major, locals)
}

fn address(argument: &TensorArg<'_, f64>) -> *const f64 {
    argument.view().as_ptr()
}

#[test]
fn faer_sees_every_layout_and_its_matrices_go_back() {
    Python::initialize();
    Python::attach(|py| {
        let (row_major, _, _) = matrices(py);
        let argument: TensorArg<'_, f64> = row_major.extract().unwrap();
        let matrix = argument.as_faer_mat().unwrap();
        assert_eq!(matrix.as_ptr(), address(&argument));
        assert_eq!(matrix, faer::mat![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
        let product = matrix * matrix.transpose();
        let returned = argument.return_like(py, product).unwrap();
        // A buffer-protocol argument gets a memoryview back: the product, column-major.
        let values: Vec<Vec<f64>> = returned.call_method0("tolist").unwrap().extract().unwrap();
        assert_eq!(values, [[14.0, 32.0], [32.0, 77.0]]);
        // A vector is not a matrix.
        let vector = eval(py, "memoryview(bytearray(16)).cast('d')", &PyDict::new(py));
        let argument: TensorArg<'_, f64> = vector.extract().unwrap();
        let error = argument.as_faer_mat().unwrap_err();
        assert!(error.is_instance_of::<PyTypeError>(py));
        assert!(
            error
                .to_string()
                .contains("expected a tensor with 2 dimensions, got 1")
        );
    });
}

#[test]
fn faer_writes_through_a_mutable_argument() {
    Python::initialize();
    Python::attach(|py| {
        let (row_major, _, locals) = matrices(py);
        {
            let mut argument: TensorArgMut<'_, f64> = row_major.extract().unwrap();
            let mut matrix = argument.as_faer_mat_mut().unwrap();
            matrix.as_mut().row_mut(0).fill(0.0);
        }
        let values: Vec<f64> = eval(py, "m.tolist()[0]", &locals).extract().unwrap();
        assert_eq!(values, [0.0, 0.0, 0.0]);
    });
}

#[test]
fn nalgebra_sees_row_stride_one_and_the_transpose_of_row_major() {
    Python::initialize();
    Python::attach(|py| {
        let (row_major, column_major, _) = matrices(py);
        let argument: TensorArg<'_, f64> = row_major.extract().unwrap();
        let error = argument.as_nalgebra_matrix().unwrap_err();
        assert!(error.is_instance_of::<PyTypeError>(py));
        assert!(
            error
                .to_string()
                .contains("as_nalgebra_matrix_transposed views it"),
            "{error}"
        );
        let transposed = argument.as_nalgebra_matrix_transposed().unwrap();
        assert_eq!(transposed.as_ptr(), address(&argument));
        assert_eq!(transposed.shape(), (3, 2));
        assert_eq!(transposed[(2, 1)], 6.0);
        // Column-major memory of the 3x2 transpose: seen as nalgebra's 3x2 directly.
        let argument: TensorArg<'_, f64> = column_major.extract().unwrap();
        let strided = argument.view();
        assert_eq!(strided.strides(), &[2, 1]);
        let vector_source = eval(
            py,
            "memoryview(bytearray(__import__('array').array('d', [1, 2, 3]).tobytes())).cast('B').cast('d')",
            &PyDict::new(py),
        );
        let vector: TensorArg<'_, f64> = vector_source.extract().unwrap();
        let nalgebra_vector = vector.as_nalgebra_vector().unwrap();
        let product = transposed.tr_mul(&nalgebra_vector);
        assert_eq!(product.as_slice(), &[14.0, 32.0]);
        let returned = vector.return_like(py, product).unwrap();
        let values: Vec<f64> = returned.call_method0("tolist").unwrap().extract().unwrap();
        assert_eq!(values, [14.0, 32.0]);
    });
}

#[test]
fn nalgebra_writes_through_a_mutable_argument() {
    Python::initialize();
    Python::attach(|py| {
        let (row_major, column_major, locals) = matrices(py);
        {
            let mut argument: TensorArgMut<'_, f64> = row_major.extract().unwrap();
            // Row stride 3: refused.
            let refused = argument.as_nalgebra_matrix_mut().unwrap_err();
            assert!(refused.is_instance_of::<PyTypeError>(py), "{refused}");
            assert!(
                refused
                    .to_string()
                    .contains("nalgebra cannot express a nalgebra matrix view"),
                "{refused}"
            );
            // Column 1 of the transpose is row 1 of the tensor.
            argument
                .as_nalgebra_matrix_transposed_mut()
                .unwrap()
                .column_mut(1)
                .fill(0.0);
        }
        let values: Vec<Vec<f64>> = eval(py, "m.tolist()", &locals).extract().unwrap();
        assert_eq!(values, [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]);
        // A 3x2 buffer holding [[1, 4], [2, 5], [3, 6]]: its transpose is the 2x3 matrix
        // [[1, 2, 3], [4, 5, 6]], whose row 0 is the buffer's column 0.
        let mut argument: TensorArgMut<'_, f64> = column_major.extract().unwrap();
        argument
            .as_nalgebra_matrix_transposed_mut()
            .unwrap()
            .row_mut(0)
            .fill(9.0);
        drop(argument);
        locals.set_item("c", &column_major).unwrap();
        let values: Vec<Vec<f64>> = eval(py, "c.tolist()", &locals).extract().unwrap();
        assert_eq!(values, [[9.0, 4.0], [9.0, 5.0], [9.0, 6.0]]);
    });
}

#[test]
fn image_buffers_over_arguments_and_back() {
    Python::initialize();
    Python::attach(|py| {
        let locals = PyDict::new(py);
        let pixels = eval(
            py,
            "memoryview(bytearray(range(12))).cast('B', [2, 2, 3])",
            &locals,
        );
        let argument: TensorArg<'_, u8> = pixels.extract().unwrap();
        let image = argument.as_image_buffer::<image::Rgb<u8>>().unwrap();
        assert_eq!(image.dimensions(), (2, 2));
        assert_eq!(image.get_pixel(1, 1), &image::Rgb([9, 10, 11]));
        assert_eq!(image.as_raw().as_ptr(), argument.view().as_ptr());
        let error = argument.as_image_buffer::<image::Rgba<u8>>().unwrap_err();
        assert!(
            error.to_string().contains("the pixel type has 4"),
            "{error}"
        );
        let gray = image::GrayImage::from_pixel(3, 1, image::Luma([7]));
        let returned = argument.return_like(py, gray).unwrap();
        let shape: Vec<usize> = returned.getattr("shape").unwrap().extract().unwrap();
        assert_eq!(shape, [1, 3, 1]);
        // The read argument is released before the same memory is taken for writing.
        drop(argument);
        let mut writable: TensorArgMut<'_, u8> = pixels.extract().unwrap();
        writable
            .as_image_buffer_mut::<image::Rgb<u8>>()
            .unwrap()
            .put_pixel(0, 0, image::Rgb([255, 255, 255]));
        drop(writable);
        let first: Vec<u8> = eval(py, "list(bytes(memoryview(obj))[:3])", &{
            let locals = PyDict::new(py);
            locals.set_item("obj", &pixels).unwrap();
            locals
        })
        .extract()
        .unwrap();
        assert_eq!(first, [255, 255, 255]);
    });
}

#[test]
fn candle_copies_in_and_out_and_burn_and_arrow_return_their_values() {
    Python::initialize();
    Python::attach(|py| {
        let (row_major, _, _) = matrices(py);
        let argument: TensorArg<'_, f64> = row_major.extract().unwrap();
        let tensor = argument.to_candle_tensor().unwrap();
        assert_eq!(tensor.dims(), &[2, 3]);
        let doubled = (tensor * 2.0).unwrap();
        let returned = argument.return_like(py, doubled).unwrap();
        let values: Vec<Vec<f64>> = returned.call_method0("tolist").unwrap().extract().unwrap();
        assert_eq!(values, [[2.0, 4.0, 6.0], [8.0, 10.0, 12.0]]);

        let data = burn_std::TensorData::new(vec![1i64, 2, 3, 4], [2, 2]);
        let returned = argument.return_like(py, data).unwrap();
        let values: Vec<Vec<i64>> = returned.call_method0("tolist").unwrap().extract().unwrap();
        assert_eq!(values, [[1, 2], [3, 4]]);

        let array = arrow_array::Float32Array::from(vec![1.5f32, 2.5]);
        let returned = argument.return_like(py, array).unwrap();
        let values: Vec<f32> = returned.call_method0("tolist").unwrap().extract().unwrap();
        assert_eq!(values, [1.5, 2.5]);
        // Read-only: Arrow's buffers are immutable.
        assert!(
            returned
                .getattr("readonly")
                .unwrap()
                .extract::<bool>()
                .unwrap()
        );

        // Into burn and Arrow: an imported argument, which their values then own.
        let refused = from_dlpack(&row_major, &ImportOptions::default()).unwrap_err();
        // A memoryview has no __dlpack__: the typed-argument path reads it, an import refuses.
        assert!(refused.is_instance_of::<PyTypeError>(py), "{refused}");
        assert!(
            refused.to_string().contains("is not a DLPack producer"),
            "{refused}"
        );
    });
}
