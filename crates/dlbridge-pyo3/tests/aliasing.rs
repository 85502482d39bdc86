//! The aliasing registry of typed arguments, from Rust: claims without a fixed capacity,
//! exact overlap decisions for strided views, releases, and the one registry of the process
//! published in `sys.modules` (the Python suite's `test_aliasing.py` covers threads and
//! other extension modules).

use dlbridge_pyo3::{TensorArg, TensorArgMut};
use ndarray::IxDyn;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyByteArray;

/// `memoryview(buffer)[index]`: a strided view of a bytearray, taken through the buffer
/// protocol by typed arguments.
fn view<'py>(buffer: &Bound<'py, PyAny>, index: &str) -> Bound<'py, PyAny> {
    let py = buffer.py();
    let locals = pyo3::types::PyDict::new(py);
    locals.set_item("buffer", buffer).unwrap();
    py.eval(
        &std::ffi::CString::new(format!("memoryview(buffer)[{index}]")).unwrap(),
        None,
        Some(&locals),
    )
    .unwrap()
}

#[test]
fn a_thousand_arguments_may_be_alive_at_once() {
    Python::initialize();
    Python::attach(|py| {
        let buffers: Vec<Bound<'_, PyAny>> = (0..1_000)
            .map(|i| PyByteArray::new(py, &[i as u8; 8]).into_any())
            .collect();
        // More than the first chunks of slots (64, 128, 256, 512) hold.
        let arguments: Vec<TensorArg<'_, u8, IxDyn>> = buffers
            .iter()
            .map(|buffer| buffer.extract().unwrap())
            .collect();
        let total: u64 = arguments
            .iter()
            .map(|argument| argument.view().iter().map(|&v| u64::from(v)).sum::<u64>())
            .sum();
        assert_eq!(total, (0..1_000u64).map(|i| 8 * (i % 256)).sum::<u64>());
        // Reading what is read elsewhere is allowed; writing it is not.
        let again: TensorArg<'_, u8, IxDyn> = buffers[999].extract().unwrap();
        let refused = buffers[999]
            .extract::<TensorArgMut<'_, u8, IxDyn>>()
            .unwrap_err();
        assert!(refused.is_instance_of::<PyValueError>(py), "{refused}");
        assert!(
            refused
                .to_string()
                .contains("a TensorArgMut may not share memory with another argument"),
            "{refused}"
        );
        drop((again, arguments));
        // Every claim was released.
        for buffer in &buffers {
            let mut written: TensorArgMut<'_, u8, IxDyn> = buffer.extract().unwrap();
            written.view_mut().fill(1);
        }
    });
}

#[test]
fn interleaved_views_are_told_apart_from_overlapping_ones() {
    Python::initialize();
    Python::attach(|py| {
        let buffer = PyByteArray::new(py, &[0u8; 15]).into_any();
        let even = view(&buffer, "0::2");
        let odd = view(&buffer, "1::2");
        let read: TensorArg<'_, u8, IxDyn> = even.extract().unwrap();
        let mut written: TensorArgMut<'_, u8, IxDyn> = odd.extract().unwrap();
        written.view_mut().fill(7);
        assert_eq!(read.view().len(), 8);
        // The arguments say how they were read: the buffer protocol, for a memoryview.
        assert_eq!(
            read.path(),
            dlbridge_pyo3::explain::ArgumentPath::BufferProtocol
        );
        assert_eq!(
            format!("{read:?}"),
            "TensorArg { dtype: uint8, shape: [8], strides: [2], path: buffer }"
        );
        // Every third byte meets both the even and the odd bytes.
        let thirds = view(&buffer, "0::3");
        let error = thirds
            .extract::<TensorArgMut<'_, u8, IxDyn>>()
            .expect_err("overlaps both");
        let message = error.to_string();
        assert!(
            message.contains("ValueError: tensor argument 3 of this call (written) overlaps"),
            "{message}"
        );
        drop((read, written));
        let bytes: Vec<u8> = buffer.extract().unwrap();
        assert_eq!(
            bytes,
            [0, 7, 0, 7, 0, 7, 0, 7, 0, 7, 0, 7, 0, 7, 0],
            "the odd bytes were written"
        );
    });
}

#[test]
fn the_registry_is_published_once_for_the_process() {
    Python::initialize();
    Python::attach(|py| {
        let buffer = PyByteArray::new(py, &[1u8; 4]).into_any();
        let argument: TensorArg<'_, u8, IxDyn> = buffer.extract().unwrap();
        let shared = py
            .import("sys")
            .unwrap()
            .getattr("modules")
            .unwrap()
            .get_item("_dlbridge_pyo3_shared")
            .unwrap();
        let capsule = shared.getattr("aliasing_registry").unwrap();
        assert!(capsule.is_instance_of::<pyo3::types::PyCapsule>());
        drop(argument);
    });
}
