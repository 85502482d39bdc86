//! dlbridge's writability hook: how a type published by dlbridge-pyo3 says, without
//! allocating, whether an instance's tensor may be written, which the borrowed `DLTensor` of
//! the exchange table's `dltensor_from_py_object_no_sync` cannot say. Published beside the
//! exchange table ([`crate::publish_exchange_api`]); read by typed arguments, which refuse
//! read-only tensors for writing on the borrowed path, saying why.
//!
//! The contract belongs to the capsule's name: a changed signature or code would get a new
//! name.

use std::ffi::{CStr, c_int, c_void};

use dlbridge::Writability;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyType};

/// The type attribute holding a class's [`WritabilityHook`] capsule.
///
/// Classes published with [`publish_dlpack`](crate::publish_dlpack) have it (here `Image`,
/// the class of [`TensorClass`](crate::TensorClass)'s example):
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::WRITABILITY_ATTRIBUTE;
/// use pyo3::prelude::*;
/// use pyo3::types::PyByteArray;
/// # use std::sync::Arc;
/// # #[pyclass(frozen)]
/// # struct Image {
/// #     pixels: Arc<ManagedTensor>,
/// # }
/// # impl TensorClass for Image {
/// #     fn tensor(&self) -> &Arc<ManagedTensor> {
/// #         &self.pixels
/// #     }
/// #     fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
/// #         Py::new(py, Image { pixels: Arc::new(tensor) })
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
/// use dlbridge_pyo3::{WRITABILITY_ATTRIBUTE, WRITABILITY_CAPSULE};
/// use pyo3::prelude::*;
/// use pyo3::types::PyCapsule;
/// # use std::sync::Arc;
/// # #[pyclass(frozen)]
/// # struct Image {
/// #     pixels: Arc<ManagedTensor>,
/// # }
/// # impl TensorClass for Image {
/// #     fn tensor(&self) -> &Arc<ManagedTensor> {
/// #         &self.pixels
/// #     }
/// #     fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
/// #         Py::new(py, Image { pixels: Arc::new(tensor) })
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
pub const WRITABILITY_CAPSULE: &CStr = c"dlbridge_writability_v1";

/// `int hook(PyObject *object, uint32_t *out_writability)`: writes whether `object`'s tensor
/// may be written (0: writable, 1: flagged READ_ONLY, 2: unknown, a legacy import; the codes
/// of [`dlbridge::Writability`]) and returns 0, or returns -1 with a Python exception set:
/// for an object that is not an instance of the publishing class too (a capsule may be copied
/// onto another class by Python code, so the hook checks). Called with the GIL held; never
/// allocates.
///
/// Read from a published class (here `Image`, the class of
/// [`TensorClass`](crate::TensorClass)'s example) and asked about one of its instances:
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use dlbridge_pyo3::{WritabilityHook, WRITABILITY_ATTRIBUTE, WRITABILITY_CAPSULE};
/// use pyo3::prelude::*;
/// use pyo3::types::PyCapsule;
/// # use std::sync::Arc;
/// # #[pyclass(frozen)]
/// # struct Image {
/// #     pixels: Arc<ManagedTensor>,
/// # }
/// # impl TensorClass for Image {
/// #     fn tensor(&self) -> &Arc<ManagedTensor> {
/// #         &self.pixels
/// #     }
/// #     fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
/// #         Py::new(py, Image { pixels: Arc::new(tensor) })
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
///     let mut code = u32::MAX;
///     // SAFETY: an instance of the class that published the hook; the GIL is held.
///     assert_eq!(unsafe { hook(frozen.as_ptr(), &mut code) }, 0);
///     assert_eq!(code, 1); // Writability::ReadOnly
///     let writable = image(py, vec![0; 4], &[4])?;
///     // SAFETY: as above.
///     assert_eq!(unsafe { hook(writable.as_ptr(), &mut code) }, 0);
///     assert_eq!(code, 0); // Writability::Writable
///     Ok(())
/// })
/// # .unwrap();
/// ```
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
/// `hook` must be a [`WritabilityHook`] from a capsule named [`WRITABILITY_CAPSULE`] (found on
/// `object`'s type): the name's contract is the signature and that the hook checks its object's
/// type itself (every build of dlbridge-pyo3 publishes `writability_of::<T>`, which refuses an
/// object that is not a `T` with `TypeError`), so any live object may be asked about.
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
