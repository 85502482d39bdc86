//! Keeping Python objects alive from tensors whose deleter may run on any thread.

use std::mem::ManuallyDrop;

use pyo3::prelude::*;

/// An owner for [`dlbridge::Export`] that keeps a Python object alive, for exporting memory
/// that Python owns (a buffer, an array of another library, a PyO3 class's data).
///
/// DLPack lets a consumer call the deleter from any thread, with or without the GIL. Dropping
/// this owner attaches to the interpreter (taking the GIL) before releasing the reference,
/// and does nothing (leaks the reference) once the interpreter is finalizing or gone, when
/// touching Python objects is no longer allowed.
///
/// ```
/// use dlbridge::{DataType, Device, Export};
/// use dlbridge_pyo3::PyObjectOwner;
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     let bytes = pyo3::types::PyByteArray::new(py, &[1, 2, 3, 4]);
///     let data = bytes.data().cast();
///     let owner = PyObjectOwner::new(bytes.into_any().unbind());
///     // SAFETY: the bytearray holds four bytes and is kept alive, unresized, by `owner`.
///     let tensor = unsafe { Export::from_raw_parts(owner, data, DataType::UINT8, Device::CPU, &[4]) }
///         .into_versioned()
///         .map_err(dlbridge_pyo3::to_py_err)?;
///     assert_eq!(tensor.view().as_slice::<u8>().unwrap(), &[1, 2, 3, 4]);
///     // Dropped on another thread, without the GIL: the owner takes it itself.
///     py.detach(|| std::thread::spawn(move || drop(tensor)).join().unwrap());
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub struct PyObjectOwner {
    object: ManuallyDrop<Py<PyAny>>,
}

impl PyObjectOwner {
    /// Keeps `object` alive until the owner is dropped.
    ///
    /// ```
    /// use dlbridge_pyo3::PyObjectOwner;
    /// use pyo3::prelude::*;
    /// use pyo3::types::PyByteArray;
    /// # Python::initialize();
    /// Python::attach(|py| {
    ///     let bytes = PyByteArray::new(py, b"pixels");
    ///     let references = bytes.get_refcnt();
    ///     let owner = PyObjectOwner::new(bytes.clone().into_any().unbind());
    ///     assert_eq!(bytes.get_refcnt(), references + 1);
    ///     drop(owner);
    ///     assert_eq!(bytes.get_refcnt(), references);
    /// });
    /// ```
    pub fn new(object: Py<PyAny>) -> Self {
        PyObjectOwner {
            object: ManuallyDrop::new(object),
        }
    }

    /// The object kept alive.
    ///
    /// ```
    /// use dlbridge_pyo3::PyObjectOwner;
    /// use pyo3::prelude::*;
    /// use pyo3::types::PyByteArray;
    /// # Python::initialize();
    /// Python::attach(|py| -> PyResult<()> {
    ///     let owner = PyObjectOwner::new(PyByteArray::new(py, b"pixels").into_any().unbind());
    ///     let bytes = owner.object().bind(py).cast::<PyByteArray>()?;
    ///     assert_eq!(bytes.to_vec(), b"pixels");
    ///     Ok(())
    /// })
    /// # .unwrap();
    /// ```
    pub fn object(&self) -> &Py<PyAny> {
        &self.object
    }
}

/// Whether this thread holds the GIL now: the interpreter's current thread state is this
/// thread's own. (`PyGILState_Check` without its shortcut that answers yes whenever
/// sub-interpreters exist.)
#[cfg(not(Py_LIMITED_API))]
fn this_thread_holds_the_gil() -> bool {
    // SAFETY: both calls only read thread states, with or without the GIL.
    let (current, own) = unsafe {
        (
            pyo3::ffi::compat::PyThreadState_GetUnchecked(),
            pyo3::ffi::PyGILState_GetThisThreadState(),
        )
    };
    !current.is_null() && current == own
}

/// Under the limited API (abi3) the current thread state cannot be read without a fatal
/// error when there is none (`PyThreadState_Get`), and `PyGILState_Check` may answer yes for
/// a thread without the GIL (when sub-interpreters exist): the owner always takes the slower,
/// always correct path through [`Python::try_attach`].
#[cfg(Py_LIMITED_API)]
fn this_thread_holds_the_gil() -> bool {
    false
}

impl Drop for PyObjectOwner {
    fn drop(&mut self) {
        // SAFETY: taken exactly once, here; `self.object` is not used afterwards.
        let object = unsafe { ManuallyDrop::take(&mut self.object) };
        if this_thread_holds_the_gil() {
            // The common case (a consumer deleting the tensor from Python code): release the
            // reference directly, without PyO3's attach, which from C would call
            // `PyGILState_Ensure`.
            // SAFETY: this thread holds the GIL; the reference is ours, released once.
            unsafe { pyo3::ffi::Py_DECREF(object.into_ptr()) };
            return;
        }
        let mut object = Some(object);
        let released = Python::try_attach(|_py| drop(object.take()));
        if released.is_none() {
            // The interpreter is finalizing or gone: a reference may no longer be released.
            std::mem::forget(object.take());
        }
    }
}
