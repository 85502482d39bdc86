//! What dlbridge knows about a Python type as a tensor producer, looked up once per type and
//! then read without a lock: its DLPack 1.3 C exchange API, whether it is NumPy's `ndarray`.

use std::collections::HashMap;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::exchange::{lookup_exchange_api, ExchangeApi};
use crate::numpy;

/// What a producer type offers.
pub(crate) struct TypeInfo {
    /// The type's address, the lookup key.
    address: usize,
    /// Keeps the type alive, so that its address is never reused by another type.
    _type: Py<PyType>,
    /// The type's C exchange API (major version 1), if it publishes one.
    pub(crate) exchange: Option<ExchangeApi>,
    /// The type is exactly `numpy.ndarray`, whose objects are read directly
    /// ([`crate::numpy`]).
    pub(crate) numpy_array: bool,
}

/// The number of types found without a lock; more go to a locked map.
const SLOTS: usize = 64;

/// Published entries, filled from the front and never removed (the entries are leaked: they
/// live as long as the process, as the types they keep alive do).
static SLOTS_TABLE: [AtomicPtr<TypeInfo>; SLOTS] = [const { AtomicPtr::new(null_mut()) }; SLOTS];

/// Serializes insertions; holds the entries that found no free slot.
static OVERFLOW: Mutex<Option<HashMap<usize, &'static TypeInfo>>> = Mutex::new(None);

/// What dlbridge knows about the type of `object`: found in the lock-free table after the
/// first lookup of a type, which reads the type's attributes.
pub(crate) fn type_info(object: &Bound<'_, PyAny>) -> PyResult<&'static TypeInfo> {
    // SAFETY: a live object; its type pointer is read, not dereferenced.
    let address = unsafe { pyo3::ffi::Py_TYPE(object.as_ptr()) } as usize;
    for slot in &SLOTS_TABLE {
        let entry = slot.load(Ordering::Acquire);
        if entry.is_null() {
            break;
        }
        // SAFETY: published entries are leaked boxes, never freed or changed after the
        // release store that published them.
        let entry = unsafe { &*entry };
        if entry.address == address {
            return Ok(entry);
        }
    }
    insert(object.get_type(), address)
}

/// Looks a type up (running Python code, without any lock held) and publishes the result.
#[cold]
fn insert(kind: Bound<'_, PyType>, address: usize) -> PyResult<&'static TypeInfo> {
    let known = OVERFLOW
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .as_ref()
        .and_then(|map| map.get(&address).copied());
    if let Some(entry) = known {
        return Ok(entry);
    }
    let exchange = lookup_exchange_api(&kind)?;
    let numpy_array = is_numpy_ndarray(&kind)?;
    // Leaked: entries live as long as the process (see `SLOTS_TABLE`).
    let new_entry = || -> &'static TypeInfo {
        Box::leak(Box::new(TypeInfo {
            address,
            _type: kind.clone().unbind(),
            exchange,
            numpy_array,
        }))
    };
    let mut overflow = OVERFLOW
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // Another thread may have published the type meanwhile.
    for slot in &SLOTS_TABLE {
        let entry = slot.load(Ordering::Acquire);
        if entry.is_null() {
            let entry = new_entry();
            // Insertions are serialized by the lock, so this slot is still free.
            slot.store(std::ptr::from_ref(entry).cast_mut(), Ordering::Release);
            return Ok(entry);
        }
        // SAFETY: as in `type_info`.
        let entry = unsafe { &*entry };
        if entry.address == address {
            return Ok(entry);
        }
    }
    let map = overflow.get_or_insert_with(HashMap::new);
    Ok(*map.entry(address).or_insert_with(new_entry))
}

/// Whether `kind` is NumPy's `ndarray` itself (not a subclass, which may override what its
/// data means: masked arrays, matrices), as imported in this process.
fn is_numpy_ndarray(kind: &Bound<'_, PyType>) -> PyResult<bool> {
    let py = kind.py();
    let modules = py
        .import(intern!(py, "sys"))?
        .getattr(intern!(py, "modules"))?;
    let Ok(numpy_module) = modules.get_item(intern!(py, "numpy")) else {
        return Ok(false);
    };
    let Some(ndarray) = numpy_module.getattr_opt(intern!(py, "ndarray"))? else {
        return Ok(false);
    };
    Ok(ndarray.is(kind) && numpy::layout_fits(kind))
}
