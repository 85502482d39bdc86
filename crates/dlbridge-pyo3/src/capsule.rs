//! DLPack capsules: their names (a tensor's, and [`DLPACK_EXCHANGE_API`], a type's C exchange
//! table's), wrapping a managed tensor in one ([`into_capsule`]), taking
//! the tensor out of one ([`from_capsule`]), and the destructor of the capsules this crate
//! makes, which frees a tensor that no consumer took.

use std::ffi::{CStr, c_void};

use dlbridge::ffi::{DLManagedTensor, DLManagedTensorVersioned};
use dlbridge::{ManagedTensor, RawManagedTensor};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::claims::claim_import;
use crate::errors::type_name;
use crate::trampoline;
use crate::writability_hook;

/// The bytes of a capsule name this crate makes capsules with, NUL included, aligned to 128
/// bytes. CPython compares a capsule's name with `strcmp` on every `PyCapsule_GetPointer` (a
/// consumer's, and the destructor's), and glibc's vector `strcmp` takes a slower path for a
/// string in the last 128 bytes of a page; at this alignment the name never lies there. (A
/// literal lies wherever the linker puts it: a build whose `dltensor_versioned` landed at page
/// offset 0xff9 ran 51 more instructions per versioned export than the build before, all in
/// `strcmp`.)
#[repr(C, align(128))]
struct CapsuleName<const N: usize>([u8; N]);

static DLTENSOR_NAME: CapsuleName<9> = CapsuleName(*b"dltensor\0");
static DLTENSOR_VERSIONED_NAME: CapsuleName<19> = CapsuleName(*b"dltensor_versioned\0");

/// The name `bytes` holds, as a `CStr` borrowing it (so every use has its address).
const fn capsule_name<const N: usize>(bytes: &'static CapsuleName<N>) -> &'static CStr {
    match CStr::from_bytes_with_nul(&bytes.0) {
        Ok(name) => name,
        Err(_) => panic!("a capsule name ends in its only NUL"),
    }
}

/// Name of a capsule holding a legacy `DLManagedTensor`.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::capsule::{into_capsule, DLTENSOR};
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     // What `__dlpack__()` returns, without `max_version`.
///     let legacy = Export::new(vec![1.5f32, 2.5], &[2]).into_legacy().map_err(to_py_err)?;
///     assert!(into_capsule(py, legacy)?.is_valid_checked(Some(DLTENSOR)));
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub const DLTENSOR: &CStr = capsule_name(&DLTENSOR_NAME);
/// Name of a capsule holding a `DLManagedTensorVersioned`.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::capsule::{into_capsule, DLTENSOR_VERSIONED};
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     // What `__dlpack__(max_version=(1, 3))` returns.
///     let tensor = Export::new(vec![1.5f32, 2.5], &[2]).into_versioned().map_err(to_py_err)?;
///     assert!(into_capsule(py, tensor)?.is_valid_checked(Some(DLTENSOR_VERSIONED)));
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub const DLTENSOR_VERSIONED: &CStr = capsule_name(&DLTENSOR_VERSIONED_NAME);
/// Name a consumer gives a `dltensor` capsule it took the tensor from.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::capsule::{from_capsule, into_capsule, USED_DLTENSOR};
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     let legacy = Export::new(vec![1u8, 2], &[2]).into_legacy().map_err(to_py_err)?;
///     let capsule = into_capsule(py, legacy)?;
///     let _taken = from_capsule(&capsule)?;
///     assert!(capsule.is_valid_checked(Some(USED_DLTENSOR)));
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub const USED_DLTENSOR: &CStr = c"used_dltensor";
/// Name a consumer gives a `dltensor_versioned` capsule it took the tensor from.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::capsule::{from_capsule, into_capsule, USED_DLTENSOR_VERSIONED};
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     let tensor = Export::new(vec![1u8, 2], &[2]).into_versioned().map_err(to_py_err)?;
///     let capsule = into_capsule(py, tensor)?;
///     let _taken = from_capsule(&capsule)?;
///     assert!(capsule.is_valid_checked(Some(USED_DLTENSOR_VERSIONED)));
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub const USED_DLTENSOR_VERSIONED: &CStr = c"used_dltensor_versioned";

/// Name of the capsule a tensor type publishes its table in.
///
/// A consumer reads the table of a type (here `Image`, the class of
/// [`TensorClass`](crate::TensorClass)'s example, published with
/// [`publish_dlpack`](crate::publish_dlpack)) from a capsule of this name:
///
/// ```
/// use dlbridge::ffi::DLPackExchangeAPIHeader;
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::capsule::DLPACK_EXCHANGE_API;
/// use pyo3::prelude::*;
/// use pyo3::types::PyCapsule;
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
///     let capsule = py.get_type::<Image>().getattr("__dlpack_c_exchange_api__")?;
///     let capsule = capsule.cast_into::<PyCapsule>()?;
///     let table = capsule.pointer_checked(Some(DLPACK_EXCHANGE_API))?;
///     let header = table.cast::<DLPackExchangeAPIHeader>();
///     // SAFETY: a capsule of this name holds a table that lives as long as the process.
///     assert_eq!(unsafe { header.as_ref() }.version.major, 1);
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub const DLPACK_EXCHANGE_API: &CStr = c"dlpack_exchange_api";

/// Wraps a managed tensor in a DLPack capsule: `dltensor_versioned` for a versioned tensor,
/// `dltensor` for a legacy one.
///
/// The capsule owns the tensor until a consumer renames it `used_*`; if it dies unconsumed, its
/// destructor calls the tensor's deleter (once), preserving any exception in flight.
///
/// A tensor whose memory other Rust handles read (a share of a tensor Rust still holds, or a
/// tensor whose shares are alive in Rust) goes out flagged READ_ONLY, as by every other way
/// out to Python; as a legacy tensor, which cannot say so, it is refused (`BufferError`).
///
/// ```
/// use std::sync::Arc;
///
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::capsule::into_capsule;
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     let tensor = Arc::new(ManagedTensor::zeros(DataType::FLOAT32, &[2, 2]).map_err(to_py_err)?);
///     let alive = Arc::downgrade(&tensor);
///     // A capsule sharing the tensor (as `__dlpack__` hands it out), which keeps it alive.
///     let capsule = into_capsule(py, tensor.share_versioned().map_err(to_py_err)?)?;
///     assert!(alive.upgrade().is_some());
///     // Dropped unconsumed: its destructor releases the tensor.
///     drop(capsule);
///     assert!(alive.upgrade().is_none());
///     Ok(())
/// })
/// # .unwrap();
/// ```
#[inline]
pub fn into_capsule(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Bound<'_, PyCapsule>> {
    // Every way out to Python takes one rule: memory that other Rust handles read goes out
    // read-only, and a legacy capsule, which cannot say so, is refused.
    if writability_hook::lent_read_only(&tensor) && !tensor.is_versioned() {
        return Err(writability_hook::legacy_refusal(&tensor));
    }
    wrap_in_capsule(py, writability_hook::owned_for_python(tensor)?.into_raw())
}

/// A capsule owning `raw`, a tensor given away to Python, to which the rule of every way out
/// was applied already ([`into_capsule`]'s, `export_capsule`'s and `TensorProducer`'s: the
/// flags say what `writability_hook::writability_for_python` says).
#[inline]
pub(crate) fn wrap_in_capsule(
    py: Python<'_>,
    raw: RawManagedTensor,
) -> PyResult<Bound<'_, PyCapsule>> {
    let (pointer, name): (*mut c_void, &'static CStr) = match raw {
        RawManagedTensor::Versioned(ptr) => (ptr.cast(), DLTENSOR_VERSIONED),
        RawManagedTensor::Legacy(ptr) => (ptr.cast(), DLTENSOR),
    };
    // SAFETY: the pointer is a live, non-NULL tensor that the capsule now owns; the name is a
    // static C string, as capsule names must outlive the capsule.
    let capsule = unsafe { ffi::PyCapsule_New(pointer, name.as_ptr(), Some(destroy_capsule)) };
    if capsule.is_null() {
        // SAFETY: the capsule was not made, so the tensor is still ours to release.
        unsafe { raw.delete() };
        return Err(PyErr::fetch(py));
    }
    // SAFETY: a new reference to a capsule object.
    Ok(unsafe { Bound::from_owned_ptr(py, capsule).cast_into_unchecked() })
}

/// The destructor of every capsule this crate makes: releases the tensor unless a consumer
/// renamed the capsule `used_*` (then the consumer owns it). Runs with the GIL held, possibly
/// while an exception is in flight, which is saved and restored around the deleter.
///
/// # Safety
///
/// CPython calls it with the GIL held, on a live capsule that is being destroyed.
unsafe extern "C" fn destroy_capsule(capsule: *mut ffi::PyObject) {
    let body = |_py: Python<'_>| -> PyResult<()> {
        // SAFETY: the capsule being destroyed is live for the call, the GIL held.
        unsafe { release_unconsumed(capsule) };
        Ok(())
    };
    // SAFETY: CPython runs capsule destructors with the thread attached.
    unsafe { trampoline::attached("a DLPack capsule's destructor", body) }
}

/// The body of [`destroy_capsule`].
///
/// # Safety
///
/// `capsule` is a live capsule, and the GIL is held.
unsafe fn release_unconsumed(capsule: *mut ffi::PyObject) {
    // SAFETY: `capsule` is a live capsule; reading its name never fails.
    let name = unsafe { ffi::PyCapsule_GetName(capsule) };
    // SAFETY: a capsule name is NULL or a NUL-terminated string.
    let Some(kind) = (unsafe { capsule_kind(name) }) else {
        // Renamed `used_*` by a consumer, which owns the tensor now: nothing to do.
        return;
    };
    // The deleter cannot clobber an exception in flight: it is put back when this drops.
    let _in_flight = SavedException::fetch();
    // SAFETY: the capsule's name was found to be ours, so its pointer is the tensor it owns.
    unsafe {
        let pointer = ffi::PyCapsule_GetPointer(capsule, name);
        match kind {
            CapsuleKind::Versioned => {
                RawManagedTensor::Versioned(pointer.cast::<DLManagedTensorVersioned>()).delete()
            }
            CapsuleKind::Legacy => {
                RawManagedTensor::Legacy(pointer.cast::<DLManagedTensor>()).delete()
            }
        }
    }
}

/// The exception state of the thread, taken out and put back when dropped. (Raw, rather
/// than PyO3's `PyErr::take`, which would resume a Rust panic that the exception carries.)
/// Also kept around the release of an Arrow capsule's struct (`produce::pyarrow`).
pub(crate) struct SavedException {
    kind: *mut ffi::PyObject,
    value: *mut ffi::PyObject,
    traceback: *mut ffi::PyObject,
}

impl SavedException {
    /// Takes the exception state out (possibly nothing). The GIL must be held, as it is in
    /// a capsule destructor, the only caller.
    pub(crate) fn fetch() -> Self {
        let mut saved = SavedException {
            kind: std::ptr::null_mut(),
            value: std::ptr::null_mut(),
            traceback: std::ptr::null_mut(),
        };
        // SAFETY: the GIL is held (see above); Fetch moves the state into the three slots.
        #[allow(deprecated)]
        unsafe {
            ffi::PyErr_Fetch(&mut saved.kind, &mut saved.value, &mut saved.traceback)
        };
        saved
    }
}

impl Drop for SavedException {
    fn drop(&mut self) {
        // SAFETY: restores exactly what was fetched (possibly nothing), with the GIL still
        // held by the destructor that fetched it.
        #[allow(deprecated)]
        unsafe {
            ffi::PyErr_Restore(self.kind, self.value, self.traceback)
        };
    }
}

/// The unconsumed capsule names this crate gives.
enum CapsuleKind {
    Versioned,
    Legacy,
}

/// Which unconsumed DLPack name `name` is, if any: by address first (the names this crate
/// gives are its own statics, and consumers rename capsules to theirs), then by content.
///
/// # Safety
///
/// `name` must be NULL or a NUL-terminated string.
unsafe fn capsule_kind(name: *const std::ffi::c_char) -> Option<CapsuleKind> {
    if name == DLTENSOR_VERSIONED.as_ptr() {
        return Some(CapsuleKind::Versioned);
    }
    if name == DLTENSOR.as_ptr() {
        return Some(CapsuleKind::Legacy);
    }
    if name.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string by the contract.
    let name = unsafe { CStr::from_ptr(name) };
    if name == DLTENSOR_VERSIONED {
        Some(CapsuleKind::Versioned)
    } else if name == DLTENSOR {
        Some(CapsuleKind::Legacy)
    } else {
        None
    }
}

/// Takes the tensor out of a DLPack capsule named `dltensor_versioned` or `dltensor`.
///
/// In the order the protocol asks: check the name, get the pointer, validate the tensor
/// (version first), and only when all that succeeded rename the capsule `used_*` (and clear
/// its destructor). On any error the capsule still owns the tensor and its destructor will
/// release it: the producer's deleter runs exactly once either way.
///
/// Raises `TypeError` for a non-capsule, `ValueError` for a capsule of another name or one
/// already consumed, and `BufferError` (naming the field and value) for a tensor that fails
/// validation.
///
/// On free-threaded Python, checking the name, taking the pointer and renaming the capsule
/// are separate calls: two threads consuming one capsule could both succeed and the tensor
/// would be freed twice. The whole consumption holds a critical section on the capsule, so
/// that of two threads the second sees a used capsule (consumers other than dlbridge hold
/// none, which dlbridge cannot change).
///
/// The tensor, unless it is a copy the producer made for it (IS_COPIED), reaches memory that
/// Python code and kernels may reach too: it holds a read claim on that memory in the
/// aliasing registry of typed arguments for as long as it lives (released when it is dropped,
/// or given away: [`into_capsule`], [`ManagedTensor::into_raw`]), so that no kernel writes
/// the memory through a `TensorArgMut` while Rust code can read it through this tensor. A
/// capsule of memory that a `TensorArgMut` is writing is refused (`ValueError`) and keeps its
/// tensor.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::capsule::{from_capsule, into_capsule};
/// use pyo3::exceptions::PyValueError;
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     // A capsule as a producer's `__dlpack__` returns it.
///     let tensor = Export::new(vec![1i32, 2, 3], &[3]).into_versioned().map_err(to_py_err)?;
///     let capsule = into_capsule(py, tensor)?;
///     let taken = from_capsule(&capsule)?;
///     assert_eq!(taken.view().as_slice::<i32>().map_err(to_py_err)?, &[1, 2, 3]);
///     // A capsule is consumed once.
///     assert!(from_capsule(&capsule).unwrap_err().is_instance_of::<PyValueError>(py));
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub fn from_capsule(object: &Bound<'_, PyAny>) -> PyResult<ManagedTensor> {
    take_from_capsule(object, Some("from_capsule"))
}

/// [`from_capsule`], whose tensor holds the import's claim when `claim` names the import
/// (`"from_capsule"`, `"from_dlpack"`: the refusal says it), and none otherwise: typed
/// arguments claim what they reach themselves. The claim is made before the capsule is
/// marked consumed, so that a refused one keeps its tensor.
pub(crate) fn take_from_capsule(
    object: &Bound<'_, PyAny>,
    claim: Option<&str>,
) -> PyResult<ManagedTensor> {
    let capsule = object.cast::<PyCapsule>().map_err(|_| {
        PyTypeError::new_err(format!(
            "expected a DLPack capsule, got an object of type {}",
            type_name(object)
        ))
    })?;
    pyo3::sync::critical_section::with_critical_section(object, || consume(capsule, claim))
}

/// The postcondition of every import of a Python object's memory, whatever its source (a
/// capsule, NumPy's struct, a buffer export, an exchange table's export): the tensor is marked
/// shared ([`ManagedTensor::mark_shared`]), since the producer's object, its other views and
/// other imports of it can still reach the memory, so Rust may read it but not take a
/// `&mut [T]` of it (a kernel writes through a `TensorArgMut`, whose aliasing registry sees
/// every argument). A tensor marked shared is one that the public imports claim
/// ([`claim_import`]). Called where each source makes its tensor.
#[inline(always)]
pub(crate) fn mark_imported(tensor: &mut ManagedTensor) {
    tensor.mark_shared();
}

/// [`mark_imported`], unless the tensor is a copy the producer made for this import
/// (IS_COPIED, which only `__dlpack__(copy=True)` asks for): a capsule's tensor.
#[inline(always)]
fn shared_unless_copied(tensor: &mut ManagedTensor) {
    if !tensor.flags().is_copied() {
        mark_imported(tensor);
    }
}

/// [`take_from_capsule`] inside its critical section.
fn consume(capsule: &Bound<'_, PyCapsule>, claim: Option<&str>) -> PyResult<ManagedTensor> {
    let object = capsule.as_any();
    let ptr = capsule.as_ptr();
    // SAFETY: a live capsule; the name pointer stays valid while the capsule lives.
    let name = unsafe { ffi::PyCapsule_GetName(ptr) };
    if name.is_null() {
        // A nameless capsule (or an error reading it).
        return Err(PyErr::take(object.py()).unwrap_or_else(|| {
            PyValueError::new_err("a capsule without a name is not a DLPack capsule")
        }));
    }
    // SAFETY: non-NULL capsule names are NUL-terminated C strings.
    let name = unsafe { CStr::from_ptr(name) };
    let (used_name, versioned): (&'static CStr, bool) = if name == DLTENSOR_VERSIONED {
        (USED_DLTENSOR_VERSIONED, true)
    } else if name == DLTENSOR {
        (USED_DLTENSOR, false)
    } else if name == USED_DLTENSOR || name == USED_DLTENSOR_VERSIONED {
        return Err(PyValueError::new_err(format!(
            "this DLPack capsule was already consumed (its name is {name:?}); a capsule can be \
             consumed once"
        )));
    } else {
        return Err(PyValueError::new_err(format!(
            "a capsule named {name:?} is not a DLPack capsule (expected \"dltensor_versioned\" \
             or \"dltensor\")"
        )));
    };
    // SAFETY: a live capsule with exactly this name.
    let pointer = unsafe { ffi::PyCapsule_GetPointer(ptr, name.as_ptr()) };
    if pointer.is_null() {
        return Err(PyErr::fetch(object.py()));
    }
    let raw = if versioned {
        RawManagedTensor::Versioned(pointer.cast())
    } else {
        RawManagedTensor::Legacy(pointer.cast())
    };
    // SAFETY: the capsule owns a live tensor; on success ownership passes to us and the
    // capsule is renamed below, on failure it stays with the capsule.
    let mut tensor = unsafe { ManagedTensor::try_from_raw(raw) }.map_err(|(error, _)| {
        PyBufferError::new_err(format!(
            "the capsule holds an invalid DLPack tensor (a bug of its producer): {error}"
        ))
    })?;
    shared_unless_copied(&mut tensor);
    if let Some(what) = claim {
        if let Err(refused) = claim_import(object.py(), &mut tensor, what) {
            // Refused: the capsule keeps the tensor (its destructor still frees it).
            let _still_owned_by_the_capsule = tensor.into_raw();
            return Err(refused);
        }
    }
    // SAFETY: a live capsule; the new name is a static C string.
    if unsafe { ffi::PyCapsule_SetName(ptr, used_name.as_ptr()) } != 0 {
        // Not marked consumed: the capsule keeps the tensor (its destructor still frees it).
        let _still_owned_by_the_capsule = tensor.into_raw();
        return Err(PyErr::fetch(object.py()));
    }
    // Best effort: a destructor that ignores the name would now free a tensor we own.
    // SAFETY: a live capsule; clearing its destructor is always allowed.
    if unsafe { ffi::PyCapsule_SetDestructor(ptr, None) } != 0 {
        drop(PyErr::take(object.py()));
    }
    Ok(tensor)
}
