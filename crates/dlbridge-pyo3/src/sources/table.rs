//! The exchange-table source: a type's DLPack 1.3 C exchange table asked for an object's tensor
//! without calling `__dlpack__`, borrowed for a typed argument's call ([`borrow`]); its owned
//! export is [`ExchangeApi::managed_tensor_unclaimed`]. A table that declines gives `None`, so
//! that the reference path (`__dlpack__`, [`super::dlpack`]) answers with the producer's own
//! words (PyTorch's table raises RuntimeError with a C++ trace where its `__dlpack__` raises
//! BufferError).

use dlbridge::{ManagedTensor, TensorView, Writability};
use pyo3::prelude::*;

use crate::dispatch::{BorrowedWritability, TypeInfo};
use crate::errors::argument_error;
use crate::exchange::ExchangeApi;
use crate::writability_hook;

/// What the table gave a typed argument.
pub(crate) enum FromTable<R> {
    /// A descriptor borrowed for the call (`dltensor_from_py_object_no_sync`, or the hook).
    Borrowed(R),
    /// An owned export (`managed_tensor_from_py_object_no_sync`), held for the call.
    Exported(ManagedTensor, R),
}

/// Borrows `object`'s tensor from its type's table for a typed argument (`writable`: a
/// `TensorArgMut`'s) and runs `use_view` on it with whether it may be written and whether it
/// was exported; `None` where the table declines (the reference path answers).
///
/// Every question asked of the producer is answered once: a read-only argument takes the
/// borrowed descriptor (`dltensor_from_py_object_no_sync`); a writable one takes it only where
/// its writability comes in the same answer (dlbridge's classes: the writability hook, which
/// describes the tensor and says whether it may be written from one call of the class's
/// `tensor()`) or is known of the type (PyTorch and PaddlePaddle have no read-only tensors);
/// else the owned export, whose flags are its own. A class is safe Rust, free to answer two
/// calls with two tensors, so that a writability asked apart from the descriptor could be
/// another tensor's.
#[inline(always)]
pub(crate) fn borrow<R>(
    api: ExchangeApi,
    info: &TypeInfo,
    object: &Bound<'_, PyAny>,
    writable: bool,
    use_view: &impl Fn(&TensorView<'_>, Writability, bool) -> PyResult<R>,
) -> PyResult<Option<FromTable<R>>> {
    let described = match info.borrowed_writability {
        // Reading does not ask.
        _ if !writable => api
            .describe(object)
            .map(|described| described.map(|tensor| (tensor, Writability::Writable))),
        BorrowedWritability::AlwaysWritable => api
            .describe(object)
            .map(|described| described.map(|tensor| (tensor, Writability::Writable))),
        BorrowedWritability::Hook(hook) => {
            // SAFETY: a hook of the writability capsule's name, found on `object`'s type (a
            // capsule Python code copied onto another class is still such a hook, which
            // checks the object's type itself: `describe`'s contract).
            unsafe { writability_hook::describe(hook, object) }.map(Some)
        }
        // The writability of a borrowed descriptor would not be known.
        BorrowedWritability::Unknown => Ok(None),
    };
    let described = match described {
        Ok(described) => described,
        // Declined: the reference path gives the producer's own answer.
        Err(_) => return Ok(None),
    };
    let Some((tensor, writability)) = described else {
        // No borrowed descriptor (the table has no `dltensor_from_py_object_no_sync`, or the
        // writability of one would not be known): an owned export, which has flags.
        let Ok(tensor) = api.managed_tensor_unclaimed(object) else {
            return Ok(None);
        };
        let made = {
            let view = tensor.view();
            use_view(&view, view.writability(), true)?
        };
        return Ok(Some(FromTable::Exported(tensor, made)));
    };
    // SAFETY: the producer filled the descriptor for an object the caller keeps alive and
    // unchanged for the call.
    let view = unsafe { TensorView::from_dltensor(&tensor) }.map_err(argument_error)?;
    Ok(Some(FromTable::Borrowed(use_view(
        &view,
        writability,
        false,
    )?)))
}
