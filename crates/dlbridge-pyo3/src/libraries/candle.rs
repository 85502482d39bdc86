//! candle tensors from typed arguments and back (feature `candle`): copies both ways, as the
//! core's candle bridge explains.

use candle_core::Tensor;
use dlbridge::candle::{CandleTensorExt, CandleViewExt};
use dlbridge::{Element, ManagedTensor};
use pyo3::PyResult;

use super::core_view::with_core_view;
use super::sealed::Sealed;
use crate::args::constraints::{Constraints, Dimensionality};
use crate::args::tensor_arg::TensorArg;
use crate::produce::returning::IntoTensor;

/// The candle tensors copied from a typed argument ([`TensorArg`](crate::TensorArg)), with the
/// core's checks and refusals as `TypeError`s (feature `candle`). In scope with
/// `dlbridge_pyo3::prelude::*`, or `use dlbridge_pyo3::candle::CandleArgExt;`; sealed: implemented
/// for the typed arguments only.
pub trait CandleArgExt<T: Element>: Sealed {
    /// A copy of the argument as a new candle CPU tensor (feature `candle`; `dlbridge`'s
    /// `CandleViewExt::to_candle_tensor`: candle's storage must own a `Vec`, so this copies);
    /// types candle lacks (int8, uint16, uint64, complex) are a `TypeError`.
    fn to_candle_tensor(&self) -> PyResult<Tensor>;
}

impl<T: Element, D: Dimensionality, C: Constraints> CandleArgExt<T> for TensorArg<'_, T, D, C> {
    fn to_candle_tensor(&self) -> PyResult<Tensor> {
        with_core_view(&self.view(), |view| view.to_candle_tensor())
    }
}

impl IntoTensor for Tensor {
    /// A copy (`CandleTensorExt::from_candle_tensor`): candle may write a tensor's storage in
    /// place through any handle that shares it, so a zero-copy export needs the caller's
    /// promise (`CandleTensorExt::from_candle_tensor_unchecked`, which returns a `ManagedTensor`
    /// that `return_like` takes as well).
    fn into_tensor(self) -> dlbridge::Result<ManagedTensor> {
        ManagedTensor::from_candle_tensor(&self)
    }
}
