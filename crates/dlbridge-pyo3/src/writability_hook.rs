//! dlbridge's writability hook: how a type published by dlbridge-pyo3 says, without
//! allocating, whether an instance's tensor may be written, which the borrowed `DLTensor` of
//! the exchange table's `dltensor_from_py_object_no_sync` cannot say. Published beside the
//! exchange table ([`crate::publish_exchange_api`]); read by typed arguments, which refuse
//! read-only tensors for writing on the borrowed path, saying why.
//!
//! The contract belongs to the capsule's name: a changed signature or code would get a new
//! name.

use std::ffi::{c_int, c_void, CStr};

use dlbridge::Writability;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyType};

/// The type attribute holding a class's [`WritabilityHook`] capsule.
pub const WRITABILITY_ATTRIBUTE: &str = "__dlbridge_writability__";
/// The name of the capsule holding a [`WritabilityHook`].
pub const WRITABILITY_CAPSULE: &CStr = c"dlbridge_writability_v1";

/// `int hook(PyObject *object, uint32_t *out_writability)`: writes whether `object`'s tensor
/// may be written (0: writable, 1: flagged READ_ONLY, 2: unknown, a legacy import; the codes
/// of [`dlbridge::Writability`]) and returns 0, or returns -1 with a Python exception set.
/// Called with the GIL held; never allocates.
pub type WritabilityHook =
    unsafe extern "C" fn(object: *mut ffi::PyObject, out_writability: *mut u32) -> c_int;

/// The code of a [`Writability`] in a [`WritabilityHook`]'s answer.
pub(crate) fn writability_code(writability: Writability) -> u32 {
    match writability {
        Writability::Writable => 0,
        Writability::ReadOnly => 1,
        Writability::Unknown => 2,
    }
}

/// The [`Writability`] of a [`WritabilityHook`]'s answer (an unknown code: read-only).
fn writability_from_code(code: u32) -> Writability {
    match code {
        0 => Writability::Writable,
        2 => Writability::Unknown,
        _ => Writability::ReadOnly,
    }
}

/// The writability hook a type publishes ([`WRITABILITY_ATTRIBUTE`]), if it has one.
pub(crate) fn writability_hook(kind: &Bound<'_, PyType>) -> PyResult<Option<WritabilityHook>> {
    let Some(capsule) = kind.getattr_opt(WRITABILITY_ATTRIBUTE)? else {
        return Ok(None);
    };
    let Ok(capsule) = capsule.cast_into::<PyCapsule>() else {
        return Ok(None);
    };
    // A capsule of another name is not the hook.
    let Ok(pointer) = capsule.pointer_checked(Some(WRITABILITY_CAPSULE)) else {
        return Ok(None);
    };
    // SAFETY: a capsule of this name holds a `WritabilityHook` (the name's contract, kept by
    // `publish_exchange_api`), valid for the process.
    Ok(Some(unsafe {
        std::mem::transmute::<*mut c_void, WritabilityHook>(pointer.as_ptr())
    }))
}

/// Asks `hook` whether `object`'s tensor may be written.
///
/// # Safety
///
/// `hook` must be the hook published by `object`'s type (or a base of it): the hook reads
/// `object` as an instance of the publishing class.
pub(crate) unsafe fn ask(
    hook: WritabilityHook,
    object: &Bound<'_, PyAny>,
) -> PyResult<Writability> {
    let mut code = 0u32;
    // SAFETY: the hook's contract: a live object of the publishing type (the caller's
    // guarantee), the GIL held (`object`'s token), a slot for the answer.
    if unsafe { hook(object.as_ptr(), &mut code) } != 0 {
        return Err(PyErr::fetch(object.py()));
    }
    Ok(writability_from_code(code))
}
