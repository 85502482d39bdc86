//! How errors become Python exceptions: every mapping of a core [`dlbridge::Error`] to an
//! exception, and the descriptions of objects that messages quote.
//!
//! The protocol decides the class: a tensor that cannot be imported or exported as asked is a
//! `BufferError` ([`to_py_err`]); a typed argument that cannot be read is the argument's
//! `TypeError` ([`argument_error`]), as every other mismatch of a typed argument is.

use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::prelude::*;

/// The Python exception for a core error: `BufferError`, the protocol's error for data that
/// DLPack (or the request) cannot express, with the core's message (which names the field
/// and the value).
///
/// ```
/// use dlbridge::{DataType, ManagedTensor};
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| {
///     let error = ManagedTensor::zeros(DataType::FLOAT32, &[usize::MAX, 2]).unwrap_err();
///     let exception = dlbridge_pyo3::to_py_err(error);
///     assert!(exception.is_instance_of::<pyo3::exceptions::PyBufferError>(py));
/// });
/// ```
pub fn to_py_err(error: dlbridge::Error) -> PyErr {
    PyBufferError::new_err(error.to_string())
}

/// The exception for a core error met while reading a typed tensor argument (a descriptor
/// that fails validation, a view that cannot be made): `TypeError`, as for an argument of the
/// wrong data type or layout.
pub(crate) fn argument_error(error: dlbridge::Error) -> PyErr {
    PyTypeError::new_err(error.to_string())
}

/// `repr(object)` for an error message ("?" when repr itself fails).
pub(crate) fn repr_of(object: &Bound<'_, PyAny>) -> String {
    object
        .repr()
        .map_or_else(|_| "?".to_owned(), |r| r.to_string())
}

/// The name of `object`'s type for an error message (`<unknown>` when it cannot be read).
pub(crate) fn type_name(object: &Bound<'_, PyAny>) -> String {
    object
        .get_type()
        .name()
        .map(|name| name.to_string())
        .unwrap_or_else(|_| "<unknown>".to_owned())
}
