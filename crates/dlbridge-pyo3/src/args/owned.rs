//! A typed argument's tensor as an owned [`ManagedTensor`] that outlives the call
//! ([`TensorArg::to_managed`]), for the libraries whose values own their memory (burn's
//! `TensorData`, Arrow's arrays) and for Rust code that keeps a tensor: taken from the source
//! the argument read, in the owned form that source has, so that it accepts exactly what the
//! argument accepted.

use std::sync::Arc;

use dlbridge::ndarray::NdarrayViewExt;
use dlbridge::{Element, ManagedTensor};
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;

use super::borrow::Source;
use super::constraints::{Constraints, Dimensionality};
use super::tensor_arg::TensorArg;
use crate::claims::claim_import;
use crate::dispatch::type_info;
use crate::errors::{to_py_err, type_name};
use crate::exchange::ExchangeApi;
use crate::host::{buffer, numpy};

impl<'py, T: Element, D: Dimensionality, C: Constraints> TensorArg<'py, T, D, C> {
    /// The argument's tensor as an owned [`ManagedTensor`], zero-copy, which may outlive the
    /// call: to keep, or to hand to a library whose values own their memory
    /// (`dlbridge::burn::BurnTensorExt::into_burn_data`, `dlbridge::arrow`), with the core's
    /// layout helpers (`into_compact`, `reshape`, ...) on the way.
    ///
    /// It is taken where the argument took its tensor, in that source's owned form, so that
    /// it accepts what the argument accepted and the memory is the same:
    ///
    /// | the argument's [`path`](Self::path) | the owned tensor |
    /// |---|---|
    /// | `exchange`, `exchange-export` | an export through the type's exchange table (`managed_tensor_from_py_object_no_sync`; for PyTorch, a tensor that autograd tracks too, read as the argument reads it) |
    /// | `numpy` | the array itself, held by the tensor |
    /// | `buffer` | a buffer export, held by the tensor |
    /// | `dlpack` | a share of the tensor the argument imported (`x.detach()`'s, for a tensor autograd tracks) |
    ///
    /// The tensor is what the producer allows: read-only where the argument's memory is
    /// (NumPy's writeable flag, a read-only buffer, a legacy capsule), shared, never
    /// exclusive (the object and its other views reach the memory), so its mutable accessors
    /// refuse. Like every import, it holds a read claim on the memory in the aliasing
    /// registry while it lives ([`from_dlpack`](crate::from_dlpack)), so that no
    /// [`TensorArgMut`](crate::TensorArgMut) writes it meanwhile.
    ///
    /// `BufferError` if the producer answers the second request with another tensor than
    /// the first (a different address, data type or layout: a class free to answer each call
    /// anew), or refuses it (an exchange table's export that fails, say).
    ///
    /// ```
    /// use dlbridge_pyo3::prelude::*;
    /// use pyo3::prelude::*;
    ///
    /// /// Keeps a vector past the call: here, its elements back as a list, read after the
    /// /// argument is gone.
    /// #[pyfunction]
    /// fn kept(py: Python<'_>, x: TensorArg1<'_, i16>) -> PyResult<Vec<i16>> {
    ///     let tensor = x.to_managed(py)?;
    ///     assert_eq!(tensor.view().data_ptr().cast_const().cast::<i16>(), x.view().as_ptr());
    ///     drop(x);
    ///     Ok(tensor.view().as_slice::<i16>().map_err(to_py_err)?.to_vec())
    /// }
    /// # Python::initialize();
    /// # Python::attach(|py| -> PyResult<()> {
    /// #     let array = py.import("array")?.call_method1("array", ("h", vec![3, -1, 4]))?;
    /// #     let values: Vec<i16> = wrap_pyfunction!(kept, py)?.call1((&array,))?.extract()?;
    /// #     assert_eq!(values, [3, -1, 4]);
    /// #     Ok(())
    /// # }).unwrap();
    /// ```
    pub fn to_managed(&self, py: Python<'_>) -> PyResult<ManagedTensor> {
        let object = self.held.object.bind(py);
        let mut tensor = match &self.held.source {
            Source::Dlpack(imported) | Source::ExchangeExport(imported) => {
                Arc::clone(imported).share_versioned().map_err(to_py_err)?
            }
            Source::ExchangeTable => {
                let api = ExchangeApi::of(type_info(object)?).ok_or_else(|| {
                    another_answer(object, "its type no longer has an exchange table")
                })?;
                api.managed_tensor_unclaimed(object)?
            }
            // SAFETY: the argument read `object` as exactly `numpy.ndarray`; its type cannot
            // change (NumPy's arrays refuse `__class__` assignment).
            Source::NumpyStruct => unsafe { numpy::import(object) }?
                .ok_or_else(|| another_answer(object, "its array struct no longer describes it"))?,
            Source::Buffer(_) => buffer::import_buffer(object)?
                .ok_or_else(|| another_answer(object, "it no longer exports a usable buffer"))?,
        };
        self.check_same_tensor(object, &tensor)?;
        claim_import(py, &mut tensor, "TensorArg::to_managed")?;
        Ok(tensor)
    }

    /// Refuses an owned tensor that is not the one the argument views: the same elements of
    /// the same type at the same address in the same layout, compared as the argument's view
    /// was made.
    fn check_same_tensor(&self, object: &Bound<'_, PyAny>, tensor: &ManagedTensor) -> PyResult<()> {
        let view = tensor.view();
        let same = match view.as_array_dim::<T, D>() {
            Ok(owned) => {
                owned.as_ptr() == self.view.as_ptr()
                    && owned.shape() == self.view.shape()
                    && owned.strides() == self.view.strides()
            }
            Err(_) => false,
        };
        if same {
            return Ok(());
        }
        Err(another_answer(
            object,
            &format!(
                "the owned tensor is {} {:?} strides {:?} at {:#x}, the argument {} {:?} strides \
                 {:?} at {:#x}",
                view.dtype(),
                view.shape(),
                view.strides(),
                view.data_ptr() as usize,
                T::DTYPE,
                self.view.shape(),
                self.view.strides(),
                self.view.as_ptr() as usize,
            ),
        ))
    }
}

/// The refusal of an owned tensor that is not the argument's.
#[cold]
fn another_answer(object: &Bound<'_, PyAny>, why: &str) -> PyErr {
    PyBufferError::new_err(format!(
        "TensorArg::to_managed: the {} object answered with another tensor than the argument's \
         ({why})",
        type_name(object)
    ))
}
