//! The libraries whose values own their memory, burn's `TensorData` and Arrow's arrays,
//! returned to the caller's framework without copying (features `burn` and `arrow`). Into
//! them, a kernel imports its argument (`from_dlpack`), which the value then owns.

#[cfg(feature = "arrow")]
use arrow_array::{PrimitiveArray, types::ArrowPrimitiveType};
#[cfg(feature = "burn")]
use burn_std::TensorData;
use dlbridge::ManagedTensor;
#[cfg(feature = "arrow")]
use dlbridge::arrow::ArrowTensorExt;
#[cfg(feature = "burn")]
use dlbridge::burn::BurnTensorExt;

use crate::produce::returning::IntoTensor;

#[cfg(feature = "burn")]
impl IntoTensor for TensorData {
    /// Without copying where burn hands its bytes over: `BurnTensorExt::from_burn_data`.
    fn into_tensor(self) -> dlbridge::Result<ManagedTensor> {
        ManagedTensor::from_burn_data(self)
    }
}

#[cfg(feature = "arrow")]
impl<T: ArrowPrimitiveType> IntoTensor for PrimitiveArray<T> {
    /// Without copying, read-only (Arrow's buffers are immutable):
    /// `ArrowTensorExt::from_arrow_array`; an array with nulls is refused.
    fn into_tensor(self) -> dlbridge::Result<ManagedTensor> {
        ManagedTensor::from_arrow_array(&self)
    }
}
