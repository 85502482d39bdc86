//! The one way the library bridges of typed arguments reach the core's: the argument's view as
//! a core `TensorView`, validated.

use dlbridge::ffi::DLTensor;
use dlbridge::{Device, Element, TensorView};
use ndarray::{ArrayView, Dimension};
use pyo3::PyResult;

use crate::errors::argument_error;

/// Runs `bridge` on a core view of an argument's elements, and turns its refusal into the
/// argument's `TypeError`.
///
/// The descriptor lives on this function's stack: `bridge` must not let the view escape, and
/// a result that borrows the elements is re-made by the caller with the argument's lifetime.
pub(super) fn with_core_view<T: Element, D: Dimension, R>(
    view: &ArrayView<'_, T, D>,
    bridge: impl FnOnce(TensorView<'_>) -> dlbridge::Result<R>,
) -> PyResult<R> {
    let mut shape: Vec<i64> = view.shape().iter().map(|&extent| extent as i64).collect();
    let mut strides: Vec<i64> = view.strides().iter().map(|&stride| stride as i64).collect();
    let dl_tensor = DLTensor {
        data: view.as_ptr().cast_mut().cast(),
        device: Device::CPU,
        ndim: shape.len() as i32,
        dtype: T::DTYPE,
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    // SAFETY: `shape` and `strides` hold `ndim` values and outlive the view, which `bridge`
    // cannot keep (its lifetime is this call's); the data is the argument's memory in host
    // memory (an ndarray view of it, whose pointer is the first logical element and whose
    // strides are in elements, as DLPack's), readable for the argument's lifetime, which
    // outlives this call, and written meanwhile only through the argument itself.
    let core = unsafe { TensorView::from_dltensor(&dl_tensor) }.map_err(argument_error)?;
    bridge(core).map_err(argument_error)
}
