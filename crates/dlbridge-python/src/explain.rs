//! `dlbridge.explain`: how dlbridge's typed arguments read an object, for a user who wants
//! to know why a tensor was accepted, refused, or read-only, and that nothing was copied.

use dlbridge_pyo3::{explain_argument, ArgumentReport};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// How a Rust kernel's typed arguments (dlbridge-pyo3's `TensorArg`, and `TensorArgMut` for
/// writing) read `x`: a dict with the object's `type`, and for `argument` and
/// `writable_argument` either what the argument sees (`path`: `"exchange"`,
/// `"exchange-export"`, `"numpy"`, `"buffer"` or `"dlpack"`; `dtype`, `shape`, `strides` in
/// elements, `device`, `read_only`; `copied`: always False, arguments are views of the
/// caller's memory) or why it refuses (`refused`: the exception it would raise). Nothing is
/// claimed or copied.
#[pyfunction]
#[pyo3(signature = (x, /))]
pub(crate) fn explain<'py>(x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let py = x.py();
    let kind = x.get_type();
    let explained = PyDict::new(py);
    explained.set_item("type", format!("{}.{}", kind.module()?, kind.qualname()?))?;
    explained.set_item("argument", described(py, explain_argument(x, false))?)?;
    explained.set_item(
        "writable_argument",
        described(py, explain_argument(x, true))?,
    )?;
    Ok(explained)
}

/// One argument's report as a dict, or its refusal.
fn described<'py>(
    py: Python<'py>,
    report: PyResult<ArgumentReport>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    match report {
        Ok(report) => {
            dict.set_item("path", report.path.name())?;
            dict.set_item("dtype", report.dtype.to_string())?;
            dict.set_item("shape", PyTuple::new(py, &report.shape)?)?;
            dict.set_item("strides", PyTuple::new(py, &report.strides)?)?;
            dict.set_item(
                "device",
                (report.device.device_type.0, report.device.device_id),
            )?;
            dict.set_item("read_only", report.read_only)?;
            dict.set_item("copied", false)?;
        }
        Err(error) => {
            let name = error.get_type(py).qualname()?;
            dict.set_item("refused", format!("{name}: {}", error.value(py)))?;
        }
    }
    Ok(dict)
}
