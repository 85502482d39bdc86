//! The C exchange API of DLPack 1.3 (`__dlpack_c_exchange_api__`), consumer side: importing
//! a tensor through its type's function table, without calling `__dlpack__`.

use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::{Mutex, OnceLock};

use dlbridge::ffi::{
    DLManagedTensorVersioned, DLPackExchangeAPI, DLPackExchangeAPIHeader, DLTensor,
};
use dlbridge::{DataType, DataTypeCode, ManagedTensor};
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyType};

use crate::to_py_err;

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
    lazy_bits: bool,
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
        if !self.lazy_bits {
            return Ok(true);
        }
        let dtype = self.describe(object)?.map(|tensor| tensor.dtype);
        self.is_faithful(object, dtype)
    }

    /// [`ExchangeApi::exports_faithfully`] for an object whose data type is known: only
    /// complex tensors can carry the conjugation bit, only floating-point and complex ones the
    /// negation bit, so integer and boolean tensors need no check at all.
    pub fn is_faithful(
        &self,
        object: &Bound<'_, PyAny>,
        dtype: Option<DataType>,
    ) -> PyResult<bool> {
        if !self.lazy_bits {
            return Ok(true);
        }
        let code = dtype.map(|dtype| dtype.code);
        let complex = code.is_none_or(|code| code == DataTypeCode::COMPLEX);
        let signed_float = complex
            || code.is_some_and(|code| {
                matches!(code, DataTypeCode::FLOAT | DataTypeCode::BFLOAT)
                    || (7..=17).contains(&code.0)
            });
        let py = object.py();
        if complex && object.call_method0(intern!(py, "is_conj"))?.is_truthy()? {
            return Ok(false);
        }
        if signed_float && object.call_method0(intern!(py, "is_neg"))?.is_truthy()? {
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

/// Per-type cache: the type is kept alive so that its address is never reused by another.
type Cache = Mutex<HashMap<usize, (Py<PyType>, Option<ExchangeApi>)>>;

/// The exchange API of `object`'s type, if it publishes one of major version 1 (walking
/// `prev_api` to find it). Looked up once per type and cached.
pub fn exchange_api(object: &Bound<'_, PyAny>) -> PyResult<Option<ExchangeApi>> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let kind = object.get_type();
    let key = kind.as_ptr() as usize;
    if let Some((_, api)) = cache.lock().map_err(poisoned)?.get(&key) {
        return Ok(*api);
    }
    let api = lookup(&kind)?;
    cache
        .lock()
        .map_err(poisoned)?
        .insert(key, (kind.unbind(), api));
    Ok(api)
}

fn poisoned<T>(_: T) -> PyErr {
    PyBufferError::new_err("the exchange API cache is poisoned")
}

fn lookup(kind: &Bound<'_, PyType>) -> PyResult<Option<ExchangeApi>> {
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
            let lazy_bits =
                kind.hasattr(intern!(py, "is_conj"))? && kind.hasattr(intern!(py, "is_neg"))?;
            return Ok(Some(ExchangeApi { table, lazy_bits }));
        }
        // SAFETY: as above; `prev_api` is in the stable header.
        header = unsafe { (*header).prev_api };
    }
    Ok(None)
}
