//! burn's `TensorData` from typed arguments and back (feature `burn`): into burn through the
//! argument's owned tensor ([`TensorArg::to_managed`](crate::TensorArg::to_managed)), compacted
//! where burn needs it; out of it without a copy where burn hands its bytes over, as the core's
//! burn bridge explains.

use burn_std::TensorData;
use dlbridge::burn::BurnTensorExt;
use dlbridge::{Element, ManagedTensor};
use pyo3::{PyResult, Python};

use super::sealed::Sealed;
use crate::args::constraints::{Constraints, Dimensionality};
use crate::args::tensor_arg::TensorArg;
use crate::errors::argument_error;
use crate::produce::returning::IntoTensor;

/// burn's `TensorData` from a typed argument ([`TensorArg`](crate::TensorArg)), with the core's
/// checks and refusals as `TypeError`s (feature `burn`). In scope with
/// `dlbridge_pyo3::prelude::*`, or `use dlbridge_pyo3::burn::BurnArgExt;`; sealed: implemented
/// for the typed arguments only.
pub trait BurnArgExt: Sealed {
    /// The argument as burn `TensorData`: the argument's owned tensor
    /// ([`TensorArg::to_managed`](crate::TensorArg::to_managed), which accepts what the
    /// argument accepted, a PyTorch tensor that autograd tracks included), made C-contiguous
    /// (`ManagedTensor::into_compact`, a copy only for another layout: a transposed or sliced
    /// input), then handed to burn (`BurnTensorExt::into_burn_data`), without a copy where it
    /// already was. The argument's memory is shared with its object, so burn copies it on its
    /// first write (its copy-on-write) rather than writing the caller's tensor.
    ///
    /// A data type burn lacks (uint16, uint32, uint64, complex: the table of
    /// `dlbridge::burn`) is a `TypeError` naming it.
    ///
    /// ```
    /// use dlbridge_pyo3::prelude::*;
    /// use pyo3::prelude::*;
    ///
    /// /// The sum of a float32 matrix of any layout, by way of burn's `TensorData`.
    /// #[pyfunction]
    /// fn total(py: Python<'_>, x: TensorArg2<'_, f32>) -> PyResult<f32> {
    ///     let data = x.to_burn_data(py)?;
    ///     assert_eq!(data.shape().as_slice(), x.view().shape());
    ///     Ok(data.as_slice::<f32>().map_or(f32::NAN, |values| values.iter().sum()))
    /// }
    /// # Python::initialize();
    /// # Python::attach(|py| -> PyResult<()> {
    /// #     let globals = pyo3::types::PyDict::new(py);
    /// #     globals.set_item("total", wrap_pyfunction!(total, py)?)?;
    /// #     // A 2x3 matrix, from the buffer protocol.
    /// #     py.run(c"
    /// # from array import array
    /// # values = memoryview(array('f', [1, 2, 3, 4, 5, 6])).cast('B').cast('f', (2, 3))
    /// # result = total(values)
    /// # ", Some(&globals), None)?;
    /// #     let sum: f32 = globals.get_item("result")?.unwrap().extract()?;
    /// #     assert_eq!(sum, 21.0);
    /// #     Ok(())
    /// # }).unwrap();
    /// ```
    fn to_burn_data(&self, py: Python<'_>) -> PyResult<TensorData>;
}

impl<T: Element, D: Dimensionality, C: Constraints> BurnArgExt for TensorArg<'_, T, D, C> {
    fn to_burn_data(&self, py: Python<'_>) -> PyResult<TensorData> {
        self.to_managed(py)?
            .into_compact()
            .and_then(BurnTensorExt::into_burn_data)
            .map_err(argument_error)
    }
}

impl IntoTensor for TensorData {
    /// Without copying where burn hands its bytes over: `BurnTensorExt::from_burn_data`.
    fn into_tensor(self) -> dlbridge::Result<ManagedTensor> {
        ManagedTensor::from_burn_data(self)
    }
}
