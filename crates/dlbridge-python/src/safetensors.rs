//! The private functions of `dlbridge.safetensors` (python/dlbridge/safetensors.py), over the
//! core's `dlbridge::safetensors` (cargo feature `safetensors`):
//!
//! - `_safetensors_load(path, writable)`: the file mapped privately (copy-on-write), its
//!   header checked, every tensor a `dlbridge.Tensor` over the mapping (no copy), in the order
//!   of their bytes;
//! - `_safetensors_metadata(path)`: the file's `__metadata__`;
//! - `_safetensors_save(path, tensors, metadata)`: any DLPack producers (or capsules), imported
//!   as `dlbridge.from_dlpack` imports them, written to a file beside `path` that then replaces
//!   it.
//!
//! The mapping and the parsing, and the writing, run without the GIL. A file or a tensor that
//! breaks a rule of the format is a `ValueError` with the core's message (naming the tensor,
//! the field and the value); an I/O error is the `OSError` subclass of its `errno`
//! (`FileNotFoundError`, `PermissionError`...) with `filename` set.

use std::io;
use std::path::{Path, PathBuf};

use dlbridge::safetensors::{self, SafetensorsError, SafetensorsFile};
use dlbridge_pyo3::{ImportOptions, from_dlpack};
use pyo3::exceptions::{
    PyBufferError, PyOSError, PyOverflowError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::tensor::Tensor;

/// `_safetensors_load(path, writable)`: `{name: dlbridge.Tensor}` over a private mapping of
/// the file, in the order of the tensors' bytes; read-only tensors unless `writable`, whose
/// writes stay in this process (copy-on-write pages). The caller keeps the file from being
/// truncated or written in place while the tensors live (`dlbridge.safetensors.load`'s
/// documentation says so).
#[pyfunction]
pub(crate) fn _safetensors_load<'py>(
    py: Python<'py>,
    path: PathBuf,
    writable: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let tensors = py
        .detach(|| {
            // SAFETY: `SafetensorsFile::open`'s contract (nothing truncates or writes the file
            // while the mapping or a tensor over it lives) is the documented precondition of
            // `dlbridge.safetensors.load`, the only caller, as it is of `mmap.mmap` and
            // `numpy.memmap`: no library can check it. Writers that replace the file by a
            // rename (dlbridge's `save`, the `safetensors` package's) keep it.
            let file = unsafe { SafetensorsFile::open(&path) }?;
            file.into_tensors(writable)
        })
        .map_err(|error| python_error(py, error))?;
    let loaded = PyDict::new(py);
    for (name, tensor) in tensors {
        loaded.set_item(name, Bound::new(py, Tensor::new(tensor))?)?;
    }
    Ok(loaded)
}

/// `_safetensors_metadata(path)`: the file's `__metadata__` as a dict, in the file's order
/// (empty when it has none). The file is mapped for the call only: its header is read and
/// checked, its data is not touched.
#[pyfunction]
pub(crate) fn _safetensors_metadata<'py>(
    py: Python<'py>,
    path: PathBuf,
) -> PyResult<Bound<'py, PyDict>> {
    let metadata = py
        .detach(|| {
            // SAFETY: as in `_safetensors_load`, for the length of this call: the mapping is
            // dropped before it returns, and nothing over it outlives it.
            let file = unsafe { SafetensorsFile::open(&path) }?;
            Ok(file.metadata().to_vec())
        })
        .map_err(|error| python_error(py, error))?;
    let entries = PyDict::new(py);
    for (key, value) in metadata {
        entries.set_item(key, value)?;
    }
    Ok(entries)
}

/// `_safetensors_save(path, tensors, metadata)`: `tensors` a list of `(name, producer)`, each
/// imported as `dlbridge.from_dlpack` imports it (an error there names the tensor), then
/// written with `metadata` (a list of `(key, value)`) to a new file beside `path` that replaces
/// it. The imports hold their read claims until the file is written: no kernel writes the
/// memory meanwhile.
#[pyfunction]
pub(crate) fn _safetensors_save(
    py: Python<'_>,
    path: PathBuf,
    tensors: Vec<(String, Bound<'_, PyAny>)>,
    metadata: Vec<(String, String)>,
) -> PyResult<()> {
    let options = ImportOptions::default();
    let mut imported = Vec::with_capacity(tensors.len());
    for (name, object) in tensors {
        let tensor = from_dlpack(&object, &options).map_err(|error| naming(py, &name, error))?;
        imported.push((name, tensor));
    }
    let written = py.detach(|| {
        safetensors::save(
            &path,
            imported
                .iter()
                .map(|(name, tensor)| (name.as_str(), tensor.view())),
            &metadata,
        )
    });
    // The imports are released here, with the GIL held (their claims are the registry's).
    drop(imported);
    written.map_err(|error| python_error(py, error))
}

/// The Python exception of a `SafetensorsError`: `ValueError` with its message, but for I/O.
fn python_error(py: Python<'_>, error: SafetensorsError) -> PyErr {
    match error {
        SafetensorsError::Io {
            operation,
            path,
            source,
        } => os_error(py, operation, &path, source),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// An I/O error as Python's own file functions raise it: `OSError(errno, strerror, filename)`,
/// which is the subclass of that `errno` (`FileNotFoundError`, `PermissionError`,
/// `IsADirectoryError`...), its message `[Errno 2] cannot open: No such file or directory:
/// 'path'`. An error without an `errno` is the exception PyO3 gives its kind, with the core's
/// message (`operation path: error`).
fn os_error(py: Python<'_>, operation: &str, path: &Path, source: io::Error) -> PyErr {
    if let Some(errno) = source.raw_os_error() {
        let described = source.to_string();
        let described = described
            .strip_suffix(&format!(" (os error {errno})"))
            .unwrap_or(&described);
        let strerror = format!("cannot {operation}: {described}");
        return match py
            .get_type::<PyOSError>()
            .call1((errno, strerror, path.as_os_str()))
        {
            Ok(instance) => PyErr::from_value(instance),
            Err(error) => error,
        };
    }
    let message = format!("{operation} {}: {source}", path.display());
    let kind = PyErr::from(source).get_type(py);
    PyErr::from_type(kind, message)
}

/// An import's error, its message prefixed with the tensor's name (`tensor "w": ...`) and the
/// original as its cause, for the exceptions whose constructor takes one message; any other
/// is left as it is.
fn naming(py: Python<'_>, name: &str, error: PyErr) -> PyErr {
    let kind = error.get_type(py);
    let plain = [
        py.get_type::<PyBufferError>(),
        py.get_type::<PyTypeError>(),
        py.get_type::<PyValueError>(),
        py.get_type::<PyRuntimeError>(),
        py.get_type::<PyOverflowError>(),
    ];
    if !plain.iter().any(|plain| kind.is(plain)) {
        return error;
    }
    let named = PyErr::from_type(kind, format!("tensor {name:?}: {}", error.value(py)));
    named.set_cause(py, Some(error));
    named
}
