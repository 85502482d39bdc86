//! The C exchange API of DLPack 1.3 (`__dlpack_c_exchange_api__`), consumer side: importing or
//! describing a tensor through a type's function table ([`ExchangeApi`], over the table found
//! once per type, [`exchange_api`]), without calling `__dlpack__`. The producer side, a table
//! of one's own class: [`crate::produce::publish_exchange_api`].

use std::ptr::NonNull;
use std::sync::OnceLock;

use dlbridge::ffi::{DLManagedTensorVersioned, DLPackExchangeAPI, DLTensor};
use dlbridge::{ManagedTensor, TensorView};
use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::capsule::mark_imported;
use crate::claims::claim_import;
use crate::dispatch::{TypeInfo, type_info};
use crate::errors::{to_py_err, type_name};
use crate::framework::FrameworkRules;

/// The environment variable that turns the fast path off (`DLBRIDGE_NO_EXCHANGE_API=1`), read
/// once per process.
///
/// Usually set in the shell (`DLBRIDGE_NO_EXCHANGE_API=1 python ...`), to compare the fast
/// path with `__dlpack__`; a process can set it too, before the first import:
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::exchange::{exchange_api_enabled, NO_EXCHANGE_API_ENV};
/// use dlbridge_pyo3::produce::exchange_api_exports;
/// use pyo3::prelude::*;
/// # #[pyclass(frozen)]
/// # struct Image {
/// #     pixels: ClassTensor,
/// # }
/// # impl TensorClass for Image {
/// #     fn tensor(&self) -> &ClassTensor {
/// #         &self.pixels
/// #     }
/// #     fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
/// #         Py::new(py, Image { pixels: ClassTensor::new(tensor) })
/// #     }
/// # }
/// # fn image<'py>(
/// #     py: Python<'py>, pixels: Vec<u8>, shape: &[usize],
/// # ) -> PyResult<Bound<'py, Image>> {
/// #     let tensor = Export::new(pixels, shape).into_versioned().map_err(to_py_err)?;
/// #     Ok(Image::new_instance(py, tensor)?.into_bound(py))
/// # }
/// // SAFETY: (Rust 2024 makes setting the environment unsafe) no other thread runs yet, so
/// // none reads the environment while it changes.
/// unsafe { std::env::set_var(NO_EXCHANGE_API_ENV, "1") };
/// assert!(!exchange_api_enabled());
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     publish_dlpack::<Image>(py)?;
///     let image = image(py, vec![1, 2, 3], &[3])?;
///     // Imported through `__dlpack__`, not through the type's table.
///     let read = from_dlpack(&image, &ImportOptions::default())?;
///     assert_eq!(read.view().shape(), &[3]);
///     assert_eq!(exchange_api_exports(), 0);
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub const NO_EXCHANGE_API_ENV: &str = "DLBRIDGE_NO_EXCHANGE_API";

/// A producer's function table, valid for the life of the process (the standard requires it).
///
/// Found per type with [`exchange_api`]; here on `Image`, the class of
/// [`TensorClass`](crate::TensorClass)'s example:
///
/// ```
/// use dlbridge_pyo3::exchange::exchange_api;
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
/// # #[pyclass(frozen)]
/// # struct Image {
/// #     pixels: ClassTensor,
/// # }
/// # impl TensorClass for Image {
/// #     fn tensor(&self) -> &ClassTensor {
/// #         &self.pixels
/// #     }
/// #     fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
/// #         Py::new(py, Image { pixels: ClassTensor::new(tensor) })
/// #     }
/// # }
/// # fn image<'py>(
/// #     py: Python<'py>, pixels: Vec<u8>, shape: &[usize],
/// # ) -> PyResult<Bound<'py, Image>> {
/// #     let tensor = Export::new(pixels, shape).into_versioned().map_err(to_py_err)?;
/// #     Ok(Image::new_instance(py, tensor)?.into_bound(py))
/// # }
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     publish_dlpack::<Image>(py)?;
///     let image = image(py, vec![1, 2, 3, 4, 5, 6], &[2, 3])?;
///     let api = exchange_api(&image)?.expect("a published class has a table");
///     assert!(api.table().managed_tensor_to_py_object_no_sync.is_some());
///     // Borrowed, without allocating: valid while `image` lives unchanged.
///     let described = api.describe(&image)?.expect("dlbridge's tables describe");
///     assert_eq!(described.ndim, 2);
///     // Owned, and validated.
///     let tensor = api.managed_tensor(&image)?;
///     assert_eq!(tensor.view().as_slice::<u8>().map_err(to_py_err)?, &[1, 2, 3, 4, 5, 6]);
///     // Only PyTorch's lazy conjugated or negated views are not exported faithfully.
///     assert!(api.exports_faithfully(&image)?);
///     assert!(api.is_faithful(&image, Some(&tensor.view()))?);
///     Ok(())
/// })
/// # .unwrap();
/// ```
#[derive(Clone, Copy)]
pub struct ExchangeApi {
    table: &'static DLPackExchangeAPI,
    /// The type the table was found on, the only objects its functions may be handed (they
    /// read `py_object` as an instance of their own type). Kept alive for the process by the
    /// per-type cache ([`crate::dispatch`]), the only place an `ExchangeApi` is made.
    kind: NonNull<ffi::PyTypeObject>,
    /// The rules of the type's framework: PyTorch's table ignores its lazy conjugation and
    /// negation bits, so that such views are exported with the wrong values.
    framework: Option<&'static FrameworkRules>,
}

// SAFETY: the table is immutable, process-lifetime data of C function pointers; the type is a
// process-lifetime Python object, only compared with (never dereferenced but by
// `PyType_IsSubtype`, with the GIL held); the rules are immutable Python objects, only used
// with the GIL held.
unsafe impl Send for ExchangeApi {}
// SAFETY: as above.
unsafe impl Sync for ExchangeApi {}

impl ExchangeApi {
    /// The exchange API of a type looked up in the per-type cache, if it has a table.
    #[inline]
    pub(crate) fn of(info: &TypeInfo) -> Option<ExchangeApi> {
        info.exchange_table.map(|table| ExchangeApi {
            table,
            kind: info.type_ptr(),
            framework: info.framework,
        })
    }

    /// The raw table.
    pub fn table(&self) -> &'static DLPackExchangeAPI {
        self.table
    }

    /// Whether the table can export `object` faithfully: not for a PyTorch view with a lazy
    /// conjugation or negation bit, whose memory holds the unconjugated (unnegated) values.
    /// Asks the object itself (`is_conj()`, `is_neg()`), not the table.
    pub fn exports_faithfully(&self, object: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.is_faithful(object, None)
    }

    /// [`ExchangeApi::exports_faithfully`] for an object whose exported descriptor is known
    /// (`None`: unknown, every bit is asked): the descriptor's data type tells whether the
    /// conjugation bit can be set at all, which spares that call for all but complex tensors
    /// (the `is_conj()` / `is_neg()` methods cost about 85 ns each; the negation bit is asked
    /// of every tensor).
    pub fn is_faithful(
        &self,
        object: &Bound<'_, PyAny>,
        tensor: Option<&TensorView<'_>>,
    ) -> PyResult<bool> {
        match self.framework.and_then(|rules| rules.lazy_bits.as_ref()) {
            Some(lazy_bits) => Ok(lazy_bits.refusal(object, tensor)?.is_none()),
            None => Ok(true),
        }
    }

    /// Refuses (`TypeError`) an object that is not an instance of the type the table was
    /// found on: the table's functions read their `py_object` as one of their own, so that
    /// another object would be read as what it is not.
    fn check_object(&self, object: &Bound<'_, PyAny>) -> PyResult<()> {
        // SAFETY: a live object and a type kept alive by the per-type cache, the GIL held
        // (`object`'s token); the check reads the object's type and the type's MRO only.
        if unsafe { ffi::PyObject_TypeCheck(object.as_ptr(), self.kind.as_ptr()) } != 0 {
            return Ok(());
        }
        // SAFETY: as above; a borrowed reference to the cached, live type.
        let kind = unsafe { Borrowed::from_ptr(object.py(), self.kind.as_ptr().cast()) };
        let kind_name = kind
            .cast::<PyType>()
            .ok()
            .and_then(|kind| kind.name().ok())
            .map_or_else(|| "<unknown>".to_owned(), |name| name.to_string());
        Err(PyTypeError::new_err(format!(
            "the DLPack exchange table of type {kind_name} was asked about an object of type \
             {}: its functions take instances of {kind_name} only",
            type_name(object)
        )))
    }

    /// Describes `object` (an instance of the table's type; another object is a `TypeError`)
    /// with `dltensor_from_py_object_no_sync`: a borrowed descriptor, valid until control
    /// returns to the producer (while `object` lives unchanged), made without allocating.
    /// `None` when the table does not offer the function.
    pub fn describe(&self, object: &Bound<'_, PyAny>) -> PyResult<Option<DLTensor>> {
        let Some(describe) = self.table.dltensor_from_py_object_no_sync else {
            return Ok(None);
        };
        self.check_object(object)?;
        let mut tensor = std::mem::MaybeUninit::<DLTensor>::zeroed();
        // SAFETY: the table's contract: `object` is an instance of the table's type (just
        // checked), the GIL is held, and `tensor` is a DLTensor to fill.
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

    /// Exports `object` (an instance of the table's type; another object is a `TypeError`) as
    /// an owned, validated tensor with `managed_tensor_from_py_object_no_sync`. No stream
    /// synchronization happens, and no check of [`ExchangeApi::exports_faithfully`].
    ///
    /// The tensor reaches the object's memory, which Python code and kernels reach too: it
    /// holds a read claim on it in the aliasing registry of typed arguments for as long as it
    /// lives (released when it is dropped or given away), as every import does
    /// ([`crate::from_dlpack`]); memory that a `TensorArgMut` is writing is refused
    /// (`ValueError`).
    pub fn managed_tensor(&self, object: &Bound<'_, PyAny>) -> PyResult<ManagedTensor> {
        let mut tensor = self.managed_tensor_unclaimed(object)?;
        claim_import(object.py(), &mut tensor, "ExchangeApi::managed_tensor")?;
        Ok(tensor)
    }

    /// [`ExchangeApi::managed_tensor`] without the import's claim: for
    /// [`crate::from_dlpack`], which claims the tensor it returns, and for typed arguments,
    /// which claim what they reach themselves.
    #[inline]
    pub(crate) fn managed_tensor_unclaimed(
        &self,
        object: &Bound<'_, PyAny>,
    ) -> PyResult<ManagedTensor> {
        let Some(export) = self.table.managed_tensor_from_py_object_no_sync else {
            return Err(PyBufferError::new_err(
                "the exchange API has no managed_tensor_from_py_object_no_sync",
            ));
        };
        self.check_object(object)?;
        let mut out: *mut DLManagedTensorVersioned = std::ptr::null_mut();
        // SAFETY: the table's contract: `object` is an instance of the table's type (just
        // checked) and the GIL is held; `out` receives an owned tensor.
        let status = unsafe { export(object.as_ptr().cast(), &mut out) };
        if status != 0 {
            return Err(PyErr::take(object.py()).unwrap_or_else(|| {
                PyBufferError::new_err(format!(
                    "managed_tensor_from_py_object_no_sync failed ({status}) without an error"
                ))
            }));
        }
        // SAFETY: on success the producer handed over an owned tensor (or NULL, rejected).
        let mut imported = unsafe { ManagedTensor::from_raw_versioned(out) }.map_err(to_py_err);
        // The object's memory (marked in place: unwrapping and wrapping the result again would
        // copy the tensor). A table's export is the object's own memory, never a copy, so its
        // flags are not read.
        if let Ok(tensor) = &mut imported {
            mark_imported(tensor);
        }
        imported
    }
}

/// Whether the fast path is on (it is, unless `DLBRIDGE_NO_EXCHANGE_API` is set to something
/// other than empty or `0`).
///
/// The variable is read on the first call; setting it later changes nothing:
///
/// ```
/// use dlbridge_pyo3::exchange::{exchange_api_enabled, NO_EXCHANGE_API_ENV};
///
/// // SAFETY: (both calls) the example has one thread, so none reads the environment while it
/// // changes.
/// unsafe { std::env::remove_var(NO_EXCHANGE_API_ENV) };
/// assert!(exchange_api_enabled());
/// unsafe { std::env::set_var(NO_EXCHANGE_API_ENV, "1") };
/// assert!(exchange_api_enabled());
/// ```
pub fn exchange_api_enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| {
        std::env::var(NO_EXCHANGE_API_ENV).map_or(true, |value| value.is_empty() || value == "0")
    })
}

/// The exchange API of `object`'s type, if it publishes one of major version 1 (walking
/// `prev_api` to find it). Looked up once per type and cached (the type is kept alive).
///
/// Here on `Image`, the class of [`TensorClass`](crate::TensorClass)'s example, which has a
/// table once published:
///
/// ```
/// use dlbridge_pyo3::exchange::exchange_api;
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
/// use pyo3::types::PyByteArray;
/// # #[pyclass(frozen)]
/// # struct Image {
/// #     pixels: ClassTensor,
/// # }
/// # impl TensorClass for Image {
/// #     fn tensor(&self) -> &ClassTensor {
/// #         &self.pixels
/// #     }
/// #     fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
/// #         Py::new(py, Image { pixels: ClassTensor::new(tensor) })
/// #     }
/// # }
/// # fn image<'py>(
/// #     py: Python<'py>, pixels: Vec<u8>, shape: &[usize],
/// # ) -> PyResult<Bound<'py, Image>> {
/// #     let tensor = Export::new(pixels, shape).into_versioned().map_err(to_py_err)?;
/// #     Ok(Image::new_instance(py, tensor)?.into_bound(py))
/// # }
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     publish_dlpack::<Image>(py)?;
///     let image = image(py, vec![7; 4], &[2, 2])?;
///     let api = exchange_api(&image)?.expect("a published class has a table");
///     // The fast path: no `__dlpack__` call, no capsule.
///     assert_eq!(api.managed_tensor(&image)?.view().shape(), &[2, 2]);
///     assert!(exchange_api(&PyByteArray::new(py, b"no table"))?.is_none());
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub fn exchange_api(object: &Bound<'_, PyAny>) -> PyResult<Option<ExchangeApi>> {
    Ok(ExchangeApi::of(type_info(object)?))
}
