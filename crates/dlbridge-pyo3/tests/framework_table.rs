//! `return_like` consults one table of what each framework's tensors can hold
//! (`FRAMEWORK_HOLDINGS`): a read-only result is copied for a framework that cannot hold
//! read-only memory, a layout the framework refuses is compacted, and everything else goes
//! zero-copy. The frameworks here are stand-ins (Python modules named `jax`, `cupy` and
//! `somelib`, put in `sys.modules`, whose `from_dlpack` keeps the capsule it is handed), so
//! that the test needs no framework; python/tests/interop/test_framework_table.py asks the
//! real ones.

use std::sync::Arc;

use dlbridge::ndarray::NdarrayTensorExt;
use dlbridge::{Export, ManagedTensor, Writability};
use dlbridge_pyo3::{
    capsule::from_capsule,
    framework_table::{FRAMEWORK_HOLDINGS, LayoutsTaken, UNKNOWN_FRAMEWORK, framework_holding},
    return_like,
};
use pyo3::prelude::*;
use pyo3::types::PyModule;

/// Runs `f` attached to an embedded interpreter (started once per test process).
fn attach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> R {
    Python::initialize();
    Python::attach(f)
}

/// A stand-in framework: the module `name` (registered in `sys.modules`, so that
/// `return_like` finds it as the module of its array type), whose `from_dlpack` asks its
/// producer for a capsule as JAX does (legacy: no `max_version`) or as NumPy does
/// (`versioned`), and returns an `Array` holding it. Returns an `Array` to return results like.
fn framework<'py>(py: Python<'py>, name: &str, versioned: bool) -> Bound<'py, PyAny> {
    let ask = if versioned {
        "producer.__dlpack__(max_version=(1, 3))"
    } else {
        "producer.__dlpack__(stream=None)"
    };
    let code = format!(
        "class Array:\n    pass\n\
         def from_dlpack(producer):\n    array = Array()\n    array.capsule = {ask}\n    \
         return array\n"
    );
    let module = PyModule::from_code(
        py,
        &std::ffi::CString::new(code).unwrap(),
        &std::ffi::CString::new(format!("{name}.py")).unwrap(),
        &std::ffi::CString::new(name).unwrap(),
    )
    .unwrap();
    py.import("sys")
        .unwrap()
        .getattr("modules")
        .unwrap()
        .set_item(name, &module)
        .unwrap();
    module.getattr("Array").unwrap().call0().unwrap()
}

/// The tensor the stand-in framework was handed for `result`.
fn handed(result: &Bound<'_, PyAny>) -> ManagedTensor {
    from_capsule(&result.getattr("capsule").unwrap()).unwrap()
}

/// A float32 tensor of `values` with `shape` and `strides`, read-only or not, and the address
/// of its first element.
fn tensor(
    values: Vec<f32>,
    shape: &[usize],
    strides: &[i64],
    read_only: bool,
) -> (ManagedTensor, usize) {
    let tensor = Export::new(values, shape)
        .strides(strides)
        .read_only(read_only)
        .into_versioned()
        .unwrap();
    let address = tensor.view().data_ptr() as usize;
    (tensor, address)
}

/// A float32 vector of `values` laid out backwards (stride -1, as NumPy's `a[::-1]`), and the
/// address of its first element.
fn reversed(values: Vec<f32>) -> (ManagedTensor, usize) {
    let mut array = dlbridge_pyo3::ndarray::Array1::from(values);
    array.invert_axis(dlbridge_pyo3::ndarray::Axis(0));
    let tensor = ManagedTensor::from_array(array).unwrap();
    assert_eq!(tensor.view().strides(), [-1]);
    let address = tensor.view().data_ptr() as usize;
    (tensor, address)
}

/// The elements of a host tensor in row-major order, whatever its layout.
fn elements(tensor: &ManagedTensor) -> Vec<f32> {
    tensor.view().elements::<f32>().unwrap().to_vec()
}

#[test]
fn a_read_only_result_reaches_jax_as_a_writable_copy_not_refused() {
    attach(|py| {
        let like = framework(py, "jax", false);
        let (result, address) = tensor(vec![1.0, 2.0, 3.0], &[3], &[1], true);
        // Before the table: BufferError (a legacy capsule cannot say read-only).
        let returned = return_like(py, result, &like).unwrap();
        let copy = handed(&returned);
        assert_ne!(copy.view().data_ptr() as usize, address);
        assert_eq!(elements(&copy), [1.0, 2.0, 3.0]);
        assert!(!copy.is_versioned(), "JAX asked for a legacy capsule");
    });
}

#[test]
fn a_share_of_a_tensor_rust_still_holds_is_copied_for_a_framework_that_writes() {
    attach(|py| {
        let like = framework(py, "cupy", true);
        let (source, address) = tensor(vec![4.0, 5.0], &[2], &[1], false);
        let source = Arc::new(source);
        let share = Arc::clone(&source).share_versioned().unwrap();
        let returned = return_like(py, share, &like).unwrap();
        let copy = handed(&returned);
        // Before the table: the source's memory, flagged READ_ONLY, which CuPy ignores.
        assert_ne!(copy.view().data_ptr() as usize, address);
        assert_eq!(copy.view().writability(), Writability::Writable);
        assert_eq!(elements(&copy), [4.0, 5.0]);
        assert_eq!(elements(&source), [4.0, 5.0]);
    });
}

#[test]
fn a_framework_the_table_does_not_name_gets_read_only_results_copied() {
    attach(|py| {
        let like = framework(py, "somelib", true);
        let (result, address) = tensor(vec![1.0, 2.0], &[2], &[1], true);
        let copy = handed(&return_like(py, result, &like).unwrap());
        assert_ne!(copy.view().data_ptr() as usize, address);
        assert_eq!(copy.view().writability(), Writability::Writable);
        // A writable result goes zero-copy, whatever its strides (the framework's own refusal,
        // if any, is its own).
        let (result, address) = reversed(vec![1.0, 2.0]);
        let kept = handed(&return_like(py, result, &like).unwrap());
        assert_eq!(kept.view().data_ptr() as usize, address);
        assert_eq!(kept.view().strides(), [-1]);
        assert_eq!(elements(&kept), [2.0, 1.0]);
    });
}

#[test]
fn a_padded_result_reaches_jax_compacted_and_a_compact_one_zero_copy() {
    attach(|py| {
        let like = framework(py, "jax", false);
        // faer's 3x3 product: column-major, columns padded to 8 elements.
        let mut values = vec![0.0f32; 19];
        for column in 0..3 {
            for row in 0..3 {
                values[column * 8 + row] = (row * 3 + column) as f32;
            }
        }
        let (result, address) = tensor(values, &[3, 3], &[1, 8], false);
        // Before the table: handed as it is (JAX's UNIMPLEMENTED error).
        let compacted = handed(&return_like(py, result, &like).unwrap());
        assert_ne!(compacted.view().data_ptr() as usize, address);
        assert_eq!(compacted.view().strides(), [3, 1]);
        assert_eq!(
            elements(&compacted),
            (0..9).map(|value| value as f32).collect::<Vec<_>>()
        );
        // Column-major compact is a layout JAX takes: zero-copy.
        let (result, address) = tensor((0..6).map(|v| v as f32).collect(), &[2, 3], &[1, 2], false);
        let kept = handed(&return_like(py, result, &like).unwrap());
        assert_eq!(kept.view().data_ptr() as usize, address);
        assert_eq!(kept.view().strides(), [1, 2]);
        // A negative stride is not.
        let (result, address) = reversed(vec![1.0, 2.0, 3.0]);
        let compacted = handed(&return_like(py, result, &like).unwrap());
        assert_ne!(compacted.view().data_ptr() as usize, address);
        assert_eq!(compacted.view().strides(), [1]);
        assert_eq!(elements(&compacted), [3.0, 2.0, 1.0]);
    });
}

/// Results are returned like a buffer-protocol object where PyO3 serves `__getbuffer__` (the
/// full API, or the limited API of Python 3.11 and later).
#[cfg(any(Py_3_11, not(Py_LIMITED_API)))]
#[test]
fn a_buffer_protocol_caller_gets_read_only_results_zero_copy() {
    attach(|py| {
        let like = py.eval(c"memoryview(b'x')", None, None).unwrap();
        let (result, address) = tensor(vec![1.0, 2.0], &[2], &[1], true);
        let view = return_like(py, result, &like).unwrap();
        assert!(view.getattr("readonly").unwrap().extract::<bool>().unwrap());
        // The view's memory is the result's (read back through the buffer protocol).
        let argument: dlbridge_pyo3::TensorArg<'_, f32> = view.extract().unwrap();
        assert_eq!(argument.view().as_ptr() as usize, address);
    });
}

#[test]
fn the_table_names_each_framework_once_with_its_rules() {
    let names: Vec<&str> = FRAMEWORK_HOLDINGS.iter().map(|entry| entry.name).collect();
    assert_eq!(
        names,
        [
            "numpy",
            "torch",
            "jax",
            "tensorflow",
            "paddle",
            "cupy",
            "mxnet",
            "pyarrow",
            "dlbridge",
            "buffer"
        ]
    );
    let rules = |name| {
        let entry = framework_holding(name).unwrap();
        (entry.holds_read_only, entry.layouts)
    };
    assert_eq!(rules("numpy"), (true, LayoutsTaken::AnyStrides));
    assert_eq!(rules("torch"), (false, LayoutsTaken::NonNegativeStrides));
    assert_eq!(rules("jax"), (false, LayoutsTaken::Compact));
    assert_eq!(rules("tensorflow"), (false, LayoutsTaken::RowMajorCompact));
    assert_eq!(rules("paddle"), (false, LayoutsTaken::NonNegativeStrides));
    assert_eq!(rules("cupy"), (false, LayoutsTaken::AnyStrides));
    assert_eq!(rules("mxnet"), (false, LayoutsTaken::RowMajorCompact));
    assert_eq!(rules("pyarrow"), (true, LayoutsTaken::RowMajorCompact));
    assert_eq!(rules("dlbridge"), (true, LayoutsTaken::AnyStrides));
    assert_eq!(rules("buffer"), (true, LayoutsTaken::AnyStrides));
    const { assert!(!UNKNOWN_FRAMEWORK.holds_read_only) };
}

#[test]
fn layout_rules_skip_extent_one_and_empty_tensors_and_refuse_overlap() {
    use LayoutsTaken::*;
    for rule in [AnyStrides, NonNegativeStrides, Compact, RowMajorCompact] {
        assert!(rule.takes(&[2, 3], &[3, 1]), "{rule:?}: row-major compact");
        assert!(rule.takes(&[0, 3], &[-5, 0]), "{rule:?}: empty");
        assert!(rule.takes(&[3, 1], &[1, -7]), "{rule:?}: extent 1");
        assert!(rule.takes(&[], &[]), "{rule:?}: a scalar");
    }
    assert!(Compact.takes(&[2, 3, 4], &[1, 8, 2])); // a transposition of a compact layout
    assert!(!Compact.takes(&[2, 3], &[1, 1])); // two dimensions over one element
    assert!(!Compact.takes(&[2, 3], &[3, 0]));
    assert!(!Compact.takes(&[2, 3], &[4, 1])); // padded rows
    assert!(!Compact.takes(&[2, 3], &[-3, 1]));
    assert!(NonNegativeStrides.takes(&[2, 3], &[0, 1])); // broadcast
    assert!(!NonNegativeStrides.takes(&[2, 3], &[3, -1]));
    assert!(!RowMajorCompact.takes(&[2, 3], &[1, 2]));
    // Overflowing extents are no compact layout.
    assert!(!Compact.takes(&[i64::MAX, 4], &[4, 1]));
}
