//! Arrow's arrays, which own their memory, returned to the caller's framework without copying
//! (feature `arrow`). Into them, a kernel takes its argument's owned tensor
//! ([`TensorArg::to_managed`](crate::TensorArg::to_managed)), which the array then owns
//! (`dlbridge::arrow::ArrowTensorExt::into_arrow_array`).

use arrow_array::{PrimitiveArray, types::ArrowPrimitiveType};
use dlbridge::ManagedTensor;
use dlbridge::arrow::ArrowTensorExt;

use crate::produce::returning::IntoTensor;

impl<T: ArrowPrimitiveType> IntoTensor for PrimitiveArray<T> {
    /// Without copying, read-only (Arrow's buffers are immutable):
    /// `ArrowTensorExt::from_arrow_array`; an array with nulls is refused.
    fn into_tensor(self) -> dlbridge::Result<ManagedTensor> {
        ManagedTensor::from_arrow_array(&self)
    }
}
