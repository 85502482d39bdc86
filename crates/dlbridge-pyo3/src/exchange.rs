//! The C exchange API of DLPack 1.3 (`__dlpack_c_exchange_api__`), consumer side: importing
//! a tensor through its type's function table, without calling `__dlpack__`.

use std::ffi::CStr;
use std::sync::OnceLock;

use dlbridge::ffi::{
    DLManagedTensorVersioned, DLPackExchangeAPI, DLPackExchangeAPIHeader, DLTensor,
};
use dlbridge::{DataTypeCode, ManagedTensor, TensorView};
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyType};

use crate::to_py_err;
use crate::type_info::type_info;

/// Name of the capsule a tensor type publishes its table in.
pub const DLPACK_EXCHANGE_API: &CStr = c"dlpack_exchange_api";

/// The environment variable that turns the fast path off (`DLBRIDGE_NO_EXCHANGE_API=1`), read
/// once per process.
pub const NO_EXCHANGE_API_ENV: &str = "DLBRIDGE_NO_EXCHANGE_API";

/// A producer's function table, valid for the life of the process (the standard requires it).
#[derive(Clone, Copy)]
pub struct ExchangeApi {
    table: &'static DLPackExchangeAPI,
    /// The type has PyTorch's lazy conjugation and negation bits (`is_conj()`, `is_neg()`),
    /// which its table ignores: such views are exported with the wrong values, so they must
    /// take the `__dlpack__` path (which refuses or resolves them).
    lazy_bits: Option<&'static LazyBits>,
}

/// The type's `is_conj` and `is_neg` attributes, held for the life of the process and called
/// with the object as their one argument (`type(x).is_neg(x)`), which spares the bound method
/// object that `x.is_neg()` makes.
struct LazyBits {
    is_conj: Py<PyAny>,
    is_neg: Py<PyAny>,
}

impl LazyBits {
    /// Calls `method(object)` and reads its truth.
    fn ask(method: &Py<PyAny>, object: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = object.py();
        let args = [object.as_ptr()];
        // SAFETY: a live callable and one live argument, the GIL held (`py`).
        let result = unsafe {
            ffi::PyObject_Vectorcall(method.as_ptr(), args.as_ptr(), 1, std::ptr::null_mut())
        };
        if result.is_null() {
            return Err(PyErr::fetch(py));
        }
        // SAFETY: a new reference, owned here.
        let result = unsafe { Bound::from_owned_ptr(py, result) };
        // The methods return exactly True or False; anything else by its truth value.
        if result.is(&*pyo3::types::PyBool::new(py, true)) {
            Ok(true)
        } else if result.is(&*pyo3::types::PyBool::new(py, false)) {
            Ok(false)
        } else {
            result.is_truthy()
        }
    }
}

// SAFETY: the table is immutable, process-lifetime data of C function pointers.
unsafe impl Send for ExchangeApi {}
// SAFETY: as above.
unsafe impl Sync for ExchangeApi {}

impl ExchangeApi {
    /// The raw table.
    pub fn table(&self) -> &'static DLPackExchangeAPI {
        self.table
    }

    /// Whether the table can export `object` faithfully: not for a PyTorch view with a lazy
    /// conjugation or negation bit, whose memory holds the unconjugated (unnegated) values.
    pub fn exports_faithfully(&self, object: &Bound<'_, PyAny>) -> PyResult<bool> {
        if self.lazy_bits.is_none() {
            return Ok(true);
        }
        match self.describe(object)? {
            Some(tensor) => {
                // SAFETY: filled by the producer for `object`, which lives unchanged while the
                // view is used here.
                let view = unsafe { TensorView::from_dltensor(&tensor) }.map_err(to_py_err)?;
                self.is_faithful(object, Some(&view))
            }
            None => self.is_faithful(object, None),
        }
    }

    /// [`ExchangeApi::exports_faithfully`] for an object whose exported descriptor is known
    /// (`None`: unknown, every bit is asked). The type's `is_conj()` / `is_neg()` cost about
    /// 85 ns each (PyTorch releases the GIL in them), so they are asked only where the bit can
    /// be set:
    ///
    /// - the conjugation bit only on complex tensors;
    /// - the negation bit on complex and floating-point tensors; on floating-point ones only
    ///   when the layout is not C-contiguous or has at most one element. PyTorch's public
    ///   views give a real tensor the negation bit only as the imaginary part of a conjugated
    ///   complex tensor (`x.conj().imag`), which steps by two through the complex storage and
    ///   so is never C-contiguous with two or more elements, whatever view is taken of it
    ///   next; copies (`contiguous()`, `clone()`) resolve the bit. Only `as_strided` on such a
    ///   view and the private `torch._neg_view` escape this, and are not checked.
    ///
    /// Integer and boolean tensors need no check at all.
    pub fn is_faithful(
        &self,
        object: &Bound<'_, PyAny>,
        tensor: Option<&TensorView<'_>>,
    ) -> PyResult<bool> {
        let Some(lazy_bits) = self.lazy_bits else {
            return Ok(true);
        };
        let code = tensor.map(|tensor| tensor.dtype().code);
        let complex = code.is_none_or(|code| code == DataTypeCode::COMPLEX);
        let float = code.is_some_and(|code| {
            matches!(code, DataTypeCode::FLOAT | DataTypeCode::BFLOAT) || (7..=17).contains(&code.0)
        });
        let may_be_negated_view = complex
            || (float
                && tensor
                    .is_some_and(|tensor| tensor.num_elements() <= 1 || !tensor.is_c_contiguous()));
        if complex && LazyBits::ask(&lazy_bits.is_conj, object)? {
            return Ok(false);
        }
        if may_be_negated_view && LazyBits::ask(&lazy_bits.is_neg, object)? {
            return Ok(false);
        }
        Ok(true)
    }

    /// Describes `object` (of the table's type) with `dltensor_from_py_object_no_sync`: a
    /// borrowed descriptor, valid while `object` lives unchanged, made without allocating.
    /// `None` when the table does not offer the function.
    pub fn describe(&self, object: &Bound<'_, PyAny>) -> PyResult<Option<DLTensor>> {
        let Some(describe) = self.table.dltensor_from_py_object_no_sync else {
            return Ok(None);
        };
        let mut tensor = std::mem::MaybeUninit::<DLTensor>::zeroed();
        // SAFETY: the table's contract: `object` is of the table's type, the GIL is held, and
        // `tensor` is a DLTensor to fill.
        let status = unsafe { describe(object.as_ptr().cast(), tensor.as_mut_ptr()) };
        if status != 0 {
            return Err(PyErr::take(object.py()).unwrap_or_else(|| {
                PyBufferError::new_err(format!(
                    "dltensor_from_py_object_no_sync failed ({status}) without an error"
                ))
            }));
        }
        // SAFETY: filled on success (and zeroed before, a valid DLTensor bit pattern).
        Ok(Some(unsafe { tensor.assume_init() }))
    }

    /// Exports `object` (of the table's type) as an owned, validated tensor with
    /// `managed_tensor_from_py_object_no_sync`. No stream synchronization happens, and no check
    /// of [`ExchangeApi::exports_faithfully`].
    pub fn managed_tensor(&self, object: &Bound<'_, PyAny>) -> PyResult<ManagedTensor> {
        let Some(export) = self.table.managed_tensor_from_py_object_no_sync else {
            return Err(PyBufferError::new_err(
                "the exchange API has no managed_tensor_from_py_object_no_sync",
            ));
        };
        let mut out: *mut DLManagedTensorVersioned = std::ptr::null_mut();
        // SAFETY: the table's contract: `object` is of the table's type (checked by the caller
        // through the per-type lookup) and the GIL is held; `out` receives an owned tensor.
        let status = unsafe { export(object.as_ptr().cast(), &mut out) };
        if status != 0 {
            return Err(PyErr::take(object.py()).unwrap_or_else(|| {
                PyBufferError::new_err(format!(
                    "managed_tensor_from_py_object_no_sync failed ({status}) without an error"
                ))
            }));
        }
        // SAFETY: on success the producer handed over an owned tensor (or NULL, rejected).
        unsafe { ManagedTensor::from_raw_versioned(out) }.map_err(to_py_err)
    }
}

/// Whether the fast path is on (it is, unless `DLBRIDGE_NO_EXCHANGE_API` is set to something
/// other than empty or `0`).
pub fn exchange_api_enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| {
        std::env::var(NO_EXCHANGE_API_ENV).map_or(true, |value| value.is_empty() || value == "0")
    })
}

/// The exchange API of `object`'s type, if it publishes one of major version 1 (walking
/// `prev_api` to find it). Looked up once per type and cached (the type is kept alive).
pub fn exchange_api(object: &Bound<'_, PyAny>) -> PyResult<Option<ExchangeApi>> {
    Ok(type_info(object)?.exchange)
}

/// Reads a type's exchange API, for the per-type cache.
pub(crate) fn lookup_exchange_api(kind: &Bound<'_, PyType>) -> PyResult<Option<ExchangeApi>> {
    let py = kind.py();
    let header: *const DLPackExchangeAPIHeader =
        match kind.getattr_opt(intern!(py, "__dlpack_c_exchange_api__"))? {
            Some(capsule) => match capsule.cast::<PyCapsule>() {
                Ok(capsule) => {
                    // SAFETY: a live capsule; the name is checked by `PyCapsule_GetPointer`.
                    let pointer = unsafe {
                        ffi::PyCapsule_GetPointer(capsule.as_ptr(), DLPACK_EXCHANGE_API.as_ptr())
                    };
                    if pointer.is_null() {
                        drop(PyErr::take(py));
                        return Ok(None);
                    }
                    pointer.cast()
                }
                Err(_) => return Ok(None),
            },
            // The 1.2 draft: `__c_dlpack_exchange_api__` holding the address as an int.
            None => match kind.getattr_opt(intern!(py, "__c_dlpack_exchange_api__"))? {
                Some(address) => match address.extract::<usize>() {
                    Ok(address) if address != 0 => {
                        std::ptr::with_exposed_provenance::<DLPackExchangeAPIHeader>(address)
                    }
                    _ => return Ok(None),
                },
                None => return Ok(None),
            },
        };
    let mut header = header;
    // Walk the chain to a table of major version 1 (bounded, against a cyclic chain).
    for _ in 0..16 {
        if header.is_null() {
            return Ok(None);
        }
        // SAFETY: the producer publishes a process-lifetime table; the header is its stable
        // prefix, readable whatever the version.
        let version = unsafe { (*header).version };
        if version.major == dlbridge::ffi::DLPACK_MAJOR_VERSION {
            // SAFETY: major version 1: the full `DLPackExchangeAPI` layout, process lifetime.
            let table = unsafe { &*header.cast::<DLPackExchangeAPI>() };
            if table.managed_tensor_from_py_object_no_sync.is_none() {
                return Ok(None);
            }
            let lazy_bits = match (
                kind.getattr_opt(intern!(py, "is_conj"))?,
                kind.getattr_opt(intern!(py, "is_neg"))?,
            ) {
                (Some(is_conj), Some(is_neg)) => Some(&*Box::leak(Box::new(LazyBits {
                    is_conj: is_conj.unbind(),
                    is_neg: is_neg.unbind(),
                }))),
                _ => None,
            };
            return Ok(Some(ExchangeApi { table, lazy_bits }));
        }
        // SAFETY: as above; `prev_api` is in the stable header.
        header = unsafe { (*header).prev_api };
    }
    Ok(None)
}
