//! How errors become Python exceptions: every mapping of a core [`dlbridge::Error`] to an
//! exception, and the descriptions of objects that messages quote.
//!
//! The protocol decides the class: a tensor that cannot be imported or exported as asked is a
//! `BufferError` ([`to_py_err`]); a typed argument that cannot be read is the argument's
//! `TypeError` ([`argument_error`]), as every other mismatch of a typed argument is; a copy
//! whose bytes the allocator cannot give is a `MemoryError` on either path. A
//! kernel returns [`KernelResult`], into whose [`KernelError`] both Python's and the core's
//! errors convert with `?`.

use pyo3::exceptions::{PyBufferError, PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;

/// The error of a `#[pyfunction]` kernel: a Python exception, into which the core's
/// [`dlbridge::Error`] (a `BufferError`, [`to_py_err`]) and ndarray's `ShapeError` (a
/// `ValueError`) convert with `?`, beside PyO3's own `PyErr`. PyO3 raises it as the exception
/// it holds. (The orphan rule forbids `From<dlbridge::Error> for PyErr` outside PyO3 and the
/// core, and the core does not depend on PyO3: this type is where the conversion lives.)
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// /// The row sums of a float32 matrix given as a flat vector and a row length, as a new
/// /// tensor of `flat`'s framework.
/// #[pyfunction]
/// fn row_sums<'py>(
///     py: Python<'py>,
///     flat: TensorArg1<'_, f32, CContiguous>,
///     row_length: usize,
/// ) -> KernelResult<Bound<'py, PyAny>> {
///     // ndarray's ShapeError (a length that is no multiple of `row_length`): a ValueError.
///     let rows = ArrayView2::from_shape((flat.as_slice().len() / row_length.max(1), row_length), flat.as_slice())?;
///     let sums: Vec<f32> = rows.rows().into_iter().map(|row| row.sum()).collect();
///     // The core's errors (a shape that does not fit the values): a BufferError.
///     let tensor = Export::new(sums, &[rows.nrows()]).into_versioned()?;
///     // PyO3's own PyErr.
///     Ok(flat.return_like(py, tensor)?)
/// }
/// ```
#[derive(Debug)]
pub struct KernelError(PyErr);

/// The result of a `#[pyfunction]` kernel: `?` takes Python's, the core's and ndarray's
/// errors ([`KernelError`]).
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// /// A zero-filled float64 tensor's byte size: a core error (`BufferError`) if it overflows.
/// #[pyfunction]
/// fn zeros_nbytes(rows: usize, cols: usize) -> KernelResult<u64> {
///     let tensor = ManagedTensor::zeros(DataType::FLOAT64, &[rows, cols])?;
///     Ok(tensor.view().compact_byte_size())
/// }
/// # Python::initialize();
/// # Python::attach(|py| {
/// #     let f = wrap_pyfunction!(zeros_nbytes, py).unwrap();
/// #     assert_eq!(f.call1((2, 3)).unwrap().extract::<u64>().unwrap(), 48);
/// #     let error = f.call1((usize::MAX, 2)).unwrap_err();
/// #     assert!(error.is_instance_of::<pyo3::exceptions::PyBufferError>(py));
/// # });
/// ```
pub type KernelResult<T> = Result<T, KernelError>;

impl KernelError {
    /// The Python exception this error is raised as.
    ///
    /// ```
    /// use dlbridge_pyo3::KernelError;
    /// use pyo3::prelude::*;
    /// # Python::initialize();
    /// Python::attach(|py| {
    ///     let error = KernelError::from(ndarray::Array2::<f32>::from_shape_vec((2, 2), vec![0.0; 3]).unwrap_err());
    ///     assert!(error.into_py_err().is_instance_of::<pyo3::exceptions::PyValueError>(py));
    /// });
    /// ```
    pub fn into_py_err(self) -> PyErr {
        self.0
    }
}

impl From<PyErr> for KernelError {
    fn from(error: PyErr) -> Self {
        KernelError(error)
    }
}

impl From<dlbridge::Error> for KernelError {
    fn from(error: dlbridge::Error) -> Self {
        KernelError(to_py_err(error))
    }
}

impl From<ndarray::ShapeError> for KernelError {
    fn from(error: ndarray::ShapeError) -> Self {
        KernelError(PyValueError::new_err(error.to_string()))
    }
}

impl From<KernelError> for PyErr {
    fn from(error: KernelError) -> Self {
        error.0
    }
}

impl std::fmt::Display for KernelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for KernelError {}

/// The Python exception for a core error: `BufferError`, the protocol's error for data that
/// DLPack (or the request) cannot express, with the core's message (which names the field
/// and the value); `MemoryError` where a copy's bytes could not be allocated.
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
    match error {
        dlbridge::Error::OutOfMemory { .. } => PyMemoryError::new_err(error.to_string()),
        _ => PyBufferError::new_err(error.to_string()),
    }
}

/// The exception for a core error met while reading a typed tensor argument (a descriptor
/// that fails validation, a view that cannot be made): `TypeError`, as for an argument of the
/// wrong data type or layout. What a kernel's caller can meet with a tensor of their own is
/// said in their terms (shapes, strides in elements, data type names, "broadcast",
/// "misaligned", the copy that works); a descriptor that fails validation is the producer's
/// bug, and is said in DLPack's terms, which its authors read.
pub(crate) fn argument_error(error: dlbridge::Error) -> PyErr {
    match error {
        // Not the argument's fault: the exception `to_py_err` gives it everywhere.
        dlbridge::Error::OutOfMemory { .. } => to_py_err(error),
        _ => PyTypeError::new_err(argument_message(&error)),
    }
}

/// [`argument_error`]'s message.
pub(crate) fn argument_message(error: &dlbridge::Error) -> String {
    use dlbridge::Error;
    const COPY: &str = "pass a copy (NumPy: x.copy(); PyTorch: x.clone(); JAX arrays are never \
                        written)";
    match error {
        Error::OverlappingLayout { shape, strides } => {
            let broadcast = shape
                .iter()
                .zip(strides)
                .position(|(&extent, &stride)| stride == 0 && extent > 1);
            match broadcast {
                Some(dimension) => format!(
                    "cannot write into a broadcast tensor: dimension {dimension} has stride 0, \
                     so its {} indices are one element in memory (shape {}, strides {} in \
                     elements); {COPY}",
                    shape[dimension],
                    tuple(shape),
                    tuple(strides)
                ),
                None => format!(
                    "cannot write into a tensor whose elements overlap in memory: two indices \
                     reach the same element (shape {}, strides {} in elements); {COPY}",
                    tuple(shape),
                    tuple(strides)
                ),
            }
        }
        Error::Misaligned { address, align } => format!(
            "misaligned: the data address {address:#x} is {} bytes past a {align}-byte \
             boundary, which its element type needs (a view that starts inside an element, \
             such as np.frombuffer(data, offset=1)); pass a copy, which is aligned",
            address % align
        ),
        Error::NotContiguous {
            order,
            shape,
            strides,
        } => format!(
            "the tensor is not {order}-contiguous: shape {}, strides {} in elements; pass a \
             contiguous copy (np.ascontiguousarray(x), x.contiguous())",
            tuple(shape),
            tuple(strides)
        ),
        Error::DataTypeMismatch { requested, actual } => {
            format!("expected {requested} elements, got {actual}")
        }
        Error::DimensionalityMismatch { expected, actual } => {
            format!("expected a tensor with {expected} dimensions, got {actual}")
        }
        Error::InvalidBool { offset, value } => format!(
            "a bool tensor holds the byte {value:#04x} at element {offset}, which is neither \
             False (0) nor True (1)"
        ),
        Error::NotHostReadable { device } => format!(
            "the tensor is in {device} memory, which the CPU cannot read; pass a tensor in host \
             memory (PyTorch: x.cpu(); CuPy: x.get())"
        ),
        // A library bridge's refusal names the library, what was asked and the layout or type.
        Error::Unrepresentable { .. } => error.to_string(),
        _ => format!("the tensor's DLPack descriptor is invalid: {error}"),
    }
}

/// A tuple of ints as Python prints it: `(3,)`, `(2, 3)`, `()`.
pub(crate) fn tuple<T: std::fmt::Display>(values: &[T]) -> String {
    match values {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            values
                .iter()
                .map(T::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
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
