//! Dispatch by Python type: what dlbridge knows about a type as a tensor producer, looked up
//! once per type and then read without a lock: its DLPack 1.3 C exchange table (found here,
//! when it answers as the type's `__dlpack__` does), whether it is NumPy's `ndarray`, the rules
//! of its framework ([`crate::framework`]), and how the writability of a borrowed descriptor is
//! known. Both sides look types up here: the consume side to choose a path
//! ([`crate::exchange`] wraps the table for imports), the produce side to return a result as a
//! tensor of the caller's framework ([`crate::produce`]).

use std::collections::HashMap;
use std::ptr::{NonNull, null_mut};
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, Ordering};

use dlbridge::ffi::{DLPackExchangeAPI, DLPackExchangeAPIHeader};
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyType};

use crate::capsule::DLPACK_EXCHANGE_API;
use crate::framework::{FrameworkRules, defining_class, rules_for};
use crate::host::numpy;
use crate::writability_hook::{WritabilityHook, writability_hook};

/// What a producer type offers.
pub(crate) struct TypeInfo {
    /// The type's address, the lookup key.
    address: usize,
    /// Keeps the type alive, so that its address is never reused by another type.
    _type: Py<PyType>,
    /// The type's C exchange table (major version 1), if it publishes one that answers as its
    /// `__dlpack__` does: not for a subclass that overrides `__dlpack__` below the class that
    /// published the table (nor, for PyTorch, `__torch_function__`).
    pub(crate) exchange_table: Option<&'static DLPackExchangeAPI>,
    /// The type is exactly `numpy.ndarray`, whose objects are read directly
    /// ([`crate::host::numpy`]).
    pub(crate) numpy_array: bool,
    /// The rules of the type's framework (PyTorch, PaddlePaddle), if dlbridge has any.
    pub(crate) framework: Option<&'static FrameworkRules>,
    /// The top-level module of the type's framework, from its `__module__` (`"torch"`,
    /// `"numpy"`; `"jax"` for jaxlib's arrays, whose `from_dlpack` is JAX's), read once here
    /// for every path that asks which framework an object belongs to (results returned like
    /// it, its work stream); `None` for a type whose `__module__` is not a string.
    pub(crate) module_root: Option<Box<str>>,
    /// How the writability of a descriptor borrowed from the table is known (a `DLTensor`
    /// has no flags).
    pub(crate) borrowed_writability: BorrowedWritability,
}

// SAFETY: every field is immutable once the entry is published. The exchange table is the
// only field that is not `Send + Sync` by itself: immutable, process-lifetime data of C
// function pointers (the standard requires both), which any thread may read; its functions are
// called with the GIL held (or the thread attached, free-threaded).
unsafe impl Send for TypeInfo {}
// SAFETY: as above.
unsafe impl Sync for TypeInfo {}

impl TypeInfo {
    /// The type, kept alive by this entry for the process.
    #[inline]
    pub(crate) fn type_ptr(&self) -> NonNull<ffi::PyTypeObject> {
        // The lookup key is the address of the live type this entry holds.
        NonNull::new(self.address as *mut ffi::PyTypeObject).expect("a live type's address")
    }
}

/// How a descriptor borrowed through `dltensor_from_py_object_no_sync` says whether it may
/// be written, which a `DLTensor` cannot say itself.
#[derive(Clone, Copy)]
pub(crate) enum BorrowedWritability {
    /// The framework has no read-only tensors (PyTorch, PaddlePaddle: their `__dlpack__`
    /// never sets READ_ONLY).
    AlwaysWritable,
    /// The type publishes dlbridge's writability hook (every class published by
    /// dlbridge-pyo3).
    Hook(WritabilityHook),
    /// Unknown: a writable argument is taken with an owned export instead, which has flags.
    Unknown,
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
    let framework = rules_for(&kind)?;
    let exchange_table = match lookup_exchange_table(&kind)? {
        Some(table) if table_answers_for(&kind, framework)? => Some(table),
        _ => None,
    };
    let numpy_array = is_numpy_ndarray(&kind)?;
    let module_root = module_root_of(&kind)?;
    let borrowed_writability = if framework.is_some() {
        BorrowedWritability::AlwaysWritable
    } else if let Some(hook) = writability_hook(&kind)? {
        BorrowedWritability::Hook(hook)
    } else {
        BorrowedWritability::Unknown
    };
    // Leaked: entries live as long as the process (see `SLOTS_TABLE`).
    let new_entry = || -> &'static TypeInfo {
        Box::leak(Box::new(TypeInfo {
            address,
            _type: kind.clone().unbind(),
            exchange_table,
            numpy_array,
            framework,
            module_root,
            borrowed_writability,
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

/// The top-level module of `kind`'s `__module__` ([`TypeInfo::module_root`]).
fn module_root_of(kind: &Bound<'_, PyType>) -> PyResult<Option<Box<str>>> {
    // A class made by `type()` where the caller's globals have no `__name__` has no
    // `__module__` at all: its framework is unknown, as for a `__module__` that is no string.
    let Some(module) = kind.getattr_opt(intern!(kind.py(), "__module__"))? else {
        return Ok(None);
    };
    let Ok(module) = module.extract::<String>() else {
        return Ok(None);
    };
    let root = module.split('.').next().unwrap_or_default();
    Ok(Some(match root {
        // JAX arrays are defined in jaxlib; their `from_dlpack` is JAX's.
        "jaxlib" => "jax".into(),
        other => other.into(),
    }))
}

/// Whether the exchange table found on `kind` answers as `kind`'s `__dlpack__` does: the class
/// that defines `__dlpack__` for `kind` is the one that published the table or one of its
/// bases (a subclass below it may override `__dlpack__` to answer otherwise), and the
/// framework's own rule holds (PyTorch: no `__torch_function__` of the subclass's own).
fn table_answers_for(
    kind: &Bound<'_, PyType>,
    framework: Option<&'static FrameworkRules>,
) -> PyResult<bool> {
    let py = kind.py();
    let dlpack_class = defining_class(kind, &["__dlpack__"])?;
    let table_class = defining_class(
        kind,
        &["__dlpack_c_exchange_api__", "__c_dlpack_exchange_api__"],
    )?;
    let (Some(dlpack_class), Some(table_class)) = (dlpack_class, table_class) else {
        // No `__dlpack__` to answer otherwise (or no table at all).
        return Ok(true);
    };
    let table_mro = table_class.getattr(intern!(py, "__mro__"))?;
    if !table_mro.contains(dlpack_class)? {
        return Ok(false);
    }
    framework.map_or(Ok(true), |rules| rules.table_answers_for(kind))
}

/// Whether `kind` is NumPy's `ndarray` itself (not a subclass, which may override what its
/// data means: masked arrays, matrices), as imported in this process.
///
/// Its objects' structs are then read as NumPy's ([`crate::host::numpy`]), so the class found
/// as `sys.modules["numpy"].ndarray` is believed only when it is a static type (defined in C,
/// not by a class statement) named `numpy.ndarray`, which Python code cannot make: a module
/// put in `sys.modules` by Python code (`types.SimpleNamespace(ndarray=set)`) would otherwise
/// have `set` objects read as arrays.
fn is_numpy_ndarray(kind: &Bound<'_, PyType>) -> PyResult<bool> {
    // SAFETY: a live type object; its flags are read.
    let flags = unsafe { pyo3::ffi::PyType_GetFlags(kind.as_type_ptr()) };
    if flags & pyo3::ffi::Py_TPFLAGS_HEAPTYPE != 0 {
        return Ok(false);
    }
    if kind.fully_qualified_name()?.to_cow()? != "numpy.ndarray" {
        return Ok(false);
    }
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

/// Reads a type's C exchange table (major version 1), for the per-type cache. The table must come in a capsule named
/// [`DLPACK_EXCHANGE_API`], under `__dlpack_c_exchange_api__` or the 1.2 draft's
/// `__c_dlpack_exchange_api__`. An address in a Python int (as the 1.2 draft had it) is never
/// taken: pure Python code can write any int there (`class X: __c_dlpack_exchange_api__ = 8`),
/// and following it would read whatever lies at that address as a table of functions. A
/// capsule of that name can only be made by C code.
fn lookup_exchange_table(kind: &Bound<'_, PyType>) -> PyResult<Option<&'static DLPackExchangeAPI>> {
    let py = kind.py();
    let mut capsule = None;
    for name in [
        intern!(py, "__dlpack_c_exchange_api__"),
        intern!(py, "__c_dlpack_exchange_api__"),
    ] {
        if let Some(found) = kind.getattr_opt(name)? {
            capsule = Some(found);
            break;
        }
    }
    let Some(Ok(capsule)) = capsule.map(|found| found.cast_into::<PyCapsule>()) else {
        return Ok(None);
    };
    // SAFETY: a live capsule; the name is checked by `PyCapsule_GetPointer`.
    let pointer =
        unsafe { ffi::PyCapsule_GetPointer(capsule.as_ptr(), DLPACK_EXCHANGE_API.as_ptr()) };
    if pointer.is_null() {
        drop(PyErr::take(py));
        return Ok(None);
    }
    let mut header: *const DLPackExchangeAPIHeader = pointer.cast();
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
            return Ok(Some(table));
        }
        // SAFETY: as above; `prev_api` is in the stable header.
        header = unsafe { (*header).prev_api };
    }
    Ok(None)
}
