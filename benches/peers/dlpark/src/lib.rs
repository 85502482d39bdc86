//! `dlbridge_peer_dlpark`: a benchmark peer, not part of dlbridge.
//!
//! A tiny extension module that imports tensors through the `dlpark` crate, so that
//! `benches/python_exchange.py` can time dlpark's import beside dlbridge's. Built by
//! `benches/peers/build-cargo-peer.sh dlpark` into `target/peers/python/`.
//!
//! dlpark has no `FromPyObject` type for a DLPack producer; its Python entry point is the
//! function `dlpark::python::from_dlpack`, which takes any object (a producer with
//! `__dlpack__`, or a capsule) and returns an owning `ImportedDlpack`. The functions below
//! call it directly and do nothing else with the result.

use dlpark::python::{from_dlpack as dlpark_import, ImportedDlpack};
use pyo3::prelude::*;

/// Imports one object with dlpark's default negotiation (no stream, no copy request).
fn import(object: &Bound<'_, PyAny>) -> PyResult<ImportedDlpack> {
    dlpark_import(object.as_borrowed(), None, None)
}

/// Imports three tensors with dlpark and drops them: the cost of taking the arguments.
#[pyfunction]
fn noop3(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, c: &Bound<'_, PyAny>) -> PyResult<()> {
    let _a = import(a)?;
    let _b = import(b)?;
    let _c = import(c)?;
    Ok(())
}

/// Imports one tensor with dlpark and returns `None`: dlpark has no Python tensor type.
#[pyfunction]
fn from_dlpack(x: &Bound<'_, PyAny>) -> PyResult<()> {
    let _tensor = import(x)?;
    Ok(())
}

/// Imports one tensor with dlpark and hands it back as a fresh DLPack capsule, the only
/// Python form dlpark gives an imported tensor (versioned or legacy, as it was imported).
#[pyfunction]
fn from_dlpack_capsule<'py>(x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    match import(x)? {
        ImportedDlpack::Versioned(tensor) => tensor.into_pyobject(x.py()),
        ImportedDlpack::Legacy(tensor) => tensor.into_pyobject(x.py()),
    }
}

/// The `dlbridge_peer_dlpark` extension module.
#[pymodule]
fn dlbridge_peer_dlpark(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(noop3, module)?)?;
    module.add_function(wrap_pyfunction!(from_dlpack, module)?)?;
    module.add_function(wrap_pyfunction!(from_dlpack_capsule, module)?)?;
    Ok(())
}
