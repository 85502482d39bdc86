//! `_framework_table()`: dlbridge-pyo3's table of what each framework's tensors can hold of a
//! result ([`dlbridge_pyo3::framework_table::FRAMEWORK_HOLDINGS`]), for `dlbridge.distributed`, which rebuilds
//! tensors in the receiver's framework by the same rule as `return_like`.

use dlbridge_pyo3::framework_table::FRAMEWORK_HOLDINGS;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The table, as `{name: {"holds_read_only": bool, "layouts": str}}` (`layouts`: `"any"`,
/// `"non-negative"`, `"compact"`, `"row-major compact"`), a new dict on each call.
#[pyfunction]
pub(crate) fn _framework_table(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let table = PyDict::new(py);
    for holding in FRAMEWORK_HOLDINGS {
        let entry = PyDict::new(py);
        entry.set_item("holds_read_only", holding.holds_read_only)?;
        entry.set_item("layouts", holding.layouts.name())?;
        table.set_item(holding.name, entry)?;
    }
    Ok(table)
}
