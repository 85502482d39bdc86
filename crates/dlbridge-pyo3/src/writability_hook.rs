//! dlbridge's writability hook, and the one rule that every way a tensor leaves for Python
//! follows to say whether it may be written (a tensor that other Rust handles read goes
//! read-only).
//!
//! The hook is how a type published by dlbridge-pyo3 describes an instance's tensor in a
//! borrowed `DLTensor` and says, in the same answer and without allocating, whether it may be
//! written, which the exchange table's `dltensor_from_py_object_no_sync` cannot say.
//! Published beside the exchange table of frozen classes ([`crate::produce::publish_exchange_api`]);
//! read by writable typed arguments, which refuse read-only tensors on the borrowed path,
//! saying why. Descriptor and writability come from one call of the class's
//! [`TensorClass::tensor`](crate::TensorClass::tensor): a class is safe Rust, free to answer
//! two calls with two tensors, and the writability of one must never be taken for the other's.
//!
//! The contract belongs to the capsule's name: a changed signature or code gets a new name.
//! `dlbridge_writability_v1` answered the writability alone, apart from the descriptor; it is
//! no longer published nor read (a class of a build that publishes it is written through an
//! owned export, whose flags and memory come from one answer).

use std::ffi::{CStr, c_int, c_void};
use std::sync::Arc;

use dlbridge::ffi::DLTensor;
use dlbridge::{ManagedTensor, RawManagedTensor, Writability};
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyType};

use crate::errors::to_py_err;

/// The type attribute holding a class's [`WritabilityHook`] capsule.
///
/// Frozen classes published with [`publish_dlpack`](crate::publish_dlpack) have it (here
/// `Image`, the class of [`TensorClass`](crate::TensorClass)'s example):
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::writability_hook::WRITABILITY_ATTRIBUTE;
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
///     assert!(py.get_type::<Image>().hasattr(WRITABILITY_ATTRIBUTE)?);
///     assert!(!py.get_type::<PyByteArray>().hasattr(WRITABILITY_ATTRIBUTE)?);
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub const WRITABILITY_ATTRIBUTE: &str = "__dlbridge_writability__";
/// The name of the capsule holding a [`WritabilityHook`].
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::writability_hook::{WRITABILITY_ATTRIBUTE, WRITABILITY_CAPSULE};
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
///     let capsule = py.get_type::<Image>().getattr(WRITABILITY_ATTRIBUTE)?;
///     assert!(capsule.cast::<PyCapsule>()?.is_valid_checked(Some(WRITABILITY_CAPSULE)));
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub const WRITABILITY_CAPSULE: &CStr = c"dlbridge_writability_v2";

/// `int hook(PyObject *object, DLTensor *out_tensor, uint32_t *out_writability)`: describes
/// `object`'s tensor in `out_tensor` (borrowed, as `dltensor_from_py_object_no_sync` does:
/// valid while `object` lives; no allocation) and writes whether that same tensor may be
/// written to `out_writability`, then returns 0; or returns -1 with a Python exception set,
/// for an object that is not an instance of the publishing class too (a capsule may be copied
/// onto another class by Python code, so the hook checks). The codes: 0 writable, 1 flagged
/// READ_ONLY, 2 unknown (a legacy import), 3 read-only here because other Rust handles read
/// the memory (a share of a tensor Rust still holds, or a tensor whose shares are alive in
/// Rust: [`dlbridge::ManagedTensor::is_share`], [`dlbridge::ManagedTensor::live_shares`]); a
/// reader takes any code but 0 as read-only. Both answers come from one call of the class's
/// [`TensorClass::tensor`](crate::TensorClass::tensor). Called with the GIL held.
///
/// Read from a published class (here `Image`, the class of
/// [`TensorClass`](crate::TensorClass)'s example) and asked about one of its instances:
///
/// ```
/// use dlbridge::ffi::DLTensor;
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::writability_hook::{WritabilityHook, WRITABILITY_ATTRIBUTE, WRITABILITY_CAPSULE};
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
///     let capsule = py.get_type::<Image>().getattr(WRITABILITY_ATTRIBUTE)?;
///     let pointer = capsule.cast::<PyCapsule>()?.pointer_checked(Some(WRITABILITY_CAPSULE))?;
///     // SAFETY: a capsule of this name holds a `WritabilityHook`.
///     let hook = unsafe { std::mem::transmute::<_, WritabilityHook>(pointer.as_ptr()) };
///     let pixels = Export::new(vec![0u8; 4], &[4]).read_only(true);
///     let frozen = Image::new_instance(py, pixels.into_versioned().map_err(to_py_err)?)?;
///     let mut described = std::mem::MaybeUninit::<DLTensor>::zeroed();
///     let mut code = u32::MAX;
///     // SAFETY: an instance of the class that published the hook; the GIL is held.
///     assert_eq!(unsafe { hook(frozen.as_ptr(), described.as_mut_ptr(), &mut code) }, 0);
///     assert_eq!(code, 1); // flagged READ_ONLY
///     // SAFETY: filled on success.
///     assert_eq!(unsafe { described.assume_init() }.ndim, 1);
///     let writable = image(py, vec![0; 4], &[4])?;
///     // SAFETY: as above.
///     assert_eq!(unsafe { hook(writable.as_ptr(), described.as_mut_ptr(), &mut code) }, 0);
///     assert_eq!(code, 0); // writable
///     // An instance over a share of a tensor Rust still reads: read-only.
///     let source = std::sync::Arc::new(Export::new(vec![0u8; 4], &[4]).into_versioned().map_err(to_py_err)?);
///     let share = std::sync::Arc::clone(&source).share_versioned().map_err(to_py_err)?;
///     let lent = Image::new_instance(py, share)?;
///     // SAFETY: as above.
///     assert_eq!(unsafe { hook(lent.as_ptr(), described.as_mut_ptr(), &mut code) }, 0);
///     assert_eq!(code, 3);
///     assert_eq!(source.view().as_slice::<u8>().map_err(to_py_err)?, &[0; 4]);
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub type WritabilityHook = unsafe extern "C" fn(
    object: *mut ffi::PyObject,
    out_tensor: *mut DLTensor,
    out_writability: *mut u32,
) -> c_int;

/// The writability with which `tensor` is handed to Python, by every way out: the buffer
/// protocol's `readonly`, the writability hook, NumPy's `WRITEABLE` flag of an array made over
/// it, the DLPack flags of a capsule or an exchange-table export (a legacy capsule, which
/// cannot say read-only, is refused where this is [`Writability::ReadOnly`] but the producer
/// allows writes). The producer's own ([`dlbridge::TensorView::writability`]), except that a
/// tensor whose memory Rust code may be reading through another handle ([`shared_in_rust`]:
/// a share of a tensor Rust still holds, or a tensor with shares alive in Rust) is read-only.
/// Such a handle reads with `&[T]`, which Python must not write under; Rust gives the share no
/// `&mut [T]` either ([`ManagedTensor::is_exclusive`]).
#[inline]
pub(crate) fn writability_for_python(tensor: &ManagedTensor) -> Writability {
    match tensor.writability() {
        Writability::Writable if shared_in_rust(tensor) => Writability::ReadOnly,
        own => own,
    }
}

/// Whether `tensor` goes to Python read-only although its producer allows writes: other Rust
/// handles read its memory ([`writability_for_python`]), so its own flags do not say it.
#[inline]
pub(crate) fn lent_read_only(tensor: &ManagedTensor) -> bool {
    tensor.writability() == Writability::Writable && shared_in_rust(tensor)
}

/// Whether `tensor` is handed to Python as writable memory ([`writability_for_python`]).
#[inline]
pub(crate) fn writable_for_python(tensor: &ManagedTensor) -> bool {
    writability_for_python(tensor).allows_writes()
}

/// Whether Rust code may read `tensor`'s memory through another handle, which Python code
/// must then not be handed for writing: `tensor` is a share made in Rust
/// ([`ManagedTensor::is_share`]) that is not exclusive (its source, and every clone of the
/// source's `Arc`, read the memory), or shares of it are alive as Rust handles
/// ([`ManagedTensor::live_shares`]).
///
/// An import of a Python object's memory is not exclusive either (dlbridge-pyo3 marks it
/// shared: no `&mut [T]` beside the object's other views), but the handles it shares with are
/// Python's, which write the memory already; it goes back to Python as its producer flagged
/// it, as every consumer of that producer gets it. (Rust handles reading memory that Python
/// may write are open item 1 of SOUNDNESS.md, whatever this rule says.)
///
/// For a tensor class's tensor the rule is complete: its `Arc` never leaves this crate
/// ([`crate::ClassTensor`] is made from a tensor by value), so no Rust code outside makes a
/// share of it, and the other Rust handles to its memory are the tensor it may be a share of
/// (`is_share`, here) and the class's own reads, each under a read claim that the registry
/// keeps apart from every `TensorArgMut` ([`crate::ClassTensor::read`]).
#[inline]
pub(crate) fn shared_in_rust(tensor: &ManagedTensor) -> bool {
    (tensor.is_share() && !tensor.is_exclusive()) || tensor.live_shares() != 0
}

/// Why a tensor is not handed to Python as writable although its producer allows writes, for
/// messages: what `shared_in_rust` found, with the values.
pub(crate) fn shared_reason(tensor: &ManagedTensor) -> String {
    format!(
        "other Rust handles may read its memory (is_share() = {}, is_exclusive() = {}, \
         live_shares() = {}: a share of a tensor Rust still holds, or a tensor whose shares \
         are alive in Rust), so it is handed to Python read-only",
        tensor.is_share(),
        tensor.is_exclusive(),
        tensor.live_shares()
    )
}

/// A share of `tensor` handed to a consumer (`legacy`: as a legacy `DLManagedTensor`), as the
/// raw pointer the consumer takes over, whose flags say what [`writability_for_python`] says
/// of `tensor`: READ_ONLY where the producer allows writes but other Rust handles read the
/// memory. Legacy is refused there (`BufferError`), as it is for a tensor flagged READ_ONLY
/// (the core's `ReadOnlyLegacyExport`); a legacy tensor of unknown writability goes out
/// legacy as it came in. The share is never a handle in Rust (not counted in `tensor`'s
/// [`ManagedTensor::live_shares`]): it goes to the consumer at once.
pub(crate) fn share_for_python(
    tensor: &Arc<ManagedTensor>,
    legacy: bool,
) -> PyResult<RawManagedTensor> {
    if !lent_read_only(tensor) {
        let shared = if legacy {
            Arc::clone(tensor)
                .share_legacy_into_raw()
                .map(RawManagedTensor::Legacy)
        } else {
            Arc::clone(tensor)
                .share_versioned_into_raw()
                .map(RawManagedTensor::Versioned)
        };
        return shared.map_err(to_py_err);
    }
    if legacy {
        return Err(legacy_refusal(tensor));
    }
    Ok(read_only_share(tensor)?.into_raw())
}

/// A versioned share of `tensor` flagged READ_ONLY, which keeps it alive (no copy): how a
/// tensor that other Rust handles read is handed to Python.
#[cold]
fn read_only_share(tensor: &Arc<ManagedTensor>) -> PyResult<ManagedTensor> {
    let view = tensor.view();
    // SAFETY: the `Arc` passed as the owner keeps the tensor, and so the memory its validated
    // view describes, alive, readable, wherever it is dropped (a `ManagedTensor` is `Send`);
    // the export is read-only, so the new tensor hands out no write access.
    let mut shared = unsafe { ManagedTensor::export_view(&view, Arc::clone(tensor), true) }
        .map_err(to_py_err)?;
    // Other handles read the memory (the tensor it shares, and whoever reads that).
    shared.mark_shared();
    Ok(shared)
}

/// `tensor`, owned, made fit to hand to Python: itself where its flags already say what
/// [`writability_for_python`] says, else a read-only versioned share of it (no copy). For
/// results handed to a framework's exchange table or `from_dlpack`, whose objects take
/// writability from the DLPack flags.
#[inline(always)]
pub(crate) fn owned_for_python(tensor: ManagedTensor) -> PyResult<ManagedTensor> {
    if !lent_read_only(&tensor) {
        return Ok(tensor);
    }
    read_only_share(&Arc::new(tensor))
}

/// The refusal of a legacy export of a tensor that goes to Python read-only although its
/// producer allows writes: a legacy capsule cannot say read-only.
pub(crate) fn legacy_refusal(tensor: &ManagedTensor) -> PyErr {
    PyBufferError::new_err(format!(
        "a legacy DLPack capsule (max_version None or below 1) cannot flag a tensor read-only, \
         and this one must be: {}; ask for max_version=(1, 0) or later, or for a copy \
         (copy=True)",
        shared_reason(tensor)
    ))
}

/// The code of a [`WritabilityHook`]'s answer for `tensor` ([`writability_for_python`], with
/// code 3 for writable memory that other Rust handles read).
pub(crate) fn writability_code(tensor: &ManagedTensor) -> u32 {
    match tensor.writability() {
        Writability::Writable if shared_in_rust(tensor) => 3,
        Writability::Writable => 0,
        Writability::ReadOnly => 1,
        Writability::Unknown => 2,
    }
}

/// The [`Writability`] of a [`WritabilityHook`]'s answer (any code but 0 and 2: read-only).
fn writability_from_code(code: u32) -> Writability {
    match code {
        0 => Writability::Writable,
        2 => Writability::Unknown,
        _ => Writability::ReadOnly,
    }
}

/// The writability hook a type publishes ([`WRITABILITY_ATTRIBUTE`]), if it has one of this
/// build's name ([`WRITABILITY_CAPSULE`]).
pub(crate) fn writability_hook(kind: &Bound<'_, PyType>) -> PyResult<Option<WritabilityHook>> {
    let Some(capsule) = kind.getattr_opt(WRITABILITY_ATTRIBUTE)? else {
        return Ok(None);
    };
    let Ok(capsule) = capsule.cast_into::<PyCapsule>() else {
        return Ok(None);
    };
    // A capsule of another name (another version's) is not the hook.
    let Ok(pointer) = capsule.pointer_checked(Some(WRITABILITY_CAPSULE)) else {
        return Ok(None);
    };
    // SAFETY: a capsule of this name holds a `WritabilityHook` (the name's contract, kept by
    // `publish_exchange_api`), valid for the process.
    Ok(Some(unsafe {
        std::mem::transmute::<*mut c_void, WritabilityHook>(pointer.as_ptr())
    }))
}

/// Asks `hook` for `object`'s tensor: a borrowed descriptor and whether that tensor may be
/// written, from one answer of the producer. The descriptor is valid while `object` lives
/// unchanged (as `dltensor_from_py_object_no_sync`'s).
///
/// # Safety
///
/// `hook` must be a [`WritabilityHook`] from a capsule named [`WRITABILITY_CAPSULE`] (found on
/// `object`'s type): the name's contract is the signature and that the hook checks its object's
/// type itself (every build of dlbridge-pyo3 publishes `writability_of::<T>`, which refuses an
/// object that is not a `T` with `TypeError`), so any live object may be asked about.
pub(crate) unsafe fn describe(
    hook: WritabilityHook,
    object: &Bound<'_, PyAny>,
) -> PyResult<(DLTensor, Writability)> {
    let mut tensor = std::mem::MaybeUninit::<DLTensor>::zeroed();
    let mut code = 0u32;
    // SAFETY: the hook's contract: a live object of the publishing type (the caller's
    // guarantee), the GIL held (`object`'s token), a descriptor to fill and a slot for the
    // answer.
    if unsafe { hook(object.as_ptr(), tensor.as_mut_ptr(), &mut code) } != 0 {
        return Err(PyErr::fetch(object.py()));
    }
    // SAFETY: filled on success (and zeroed before, a valid DLTensor bit pattern).
    Ok((unsafe { tensor.assume_init() }, writability_from_code(code)))
}
