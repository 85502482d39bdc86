//! The tensor a tensor class holds ([`ClassTensor`]): Python code and kernels reach its memory
//! too (its exports, the buffer protocol, typed arguments over the instance), so Rust code
//! reads its elements only under a read claim in the aliasing registry ([`ClassTensorRead`]),
//! the registry that every typed argument claims its memory in.
//!
//! # Rationale
//!
//! A kernel's [`TensorArgMut`](crate::TensorArgMut) lends a `&mut` view of memory that the
//! registry has checked no other argument reaches. A class's tensor is reached by the class's
//! own Rust code as well, outside any argument: `image.tensor()` from a `PyRef<Image>`, or from
//! `Py::get` of a frozen class on a thread where no kernel runs. Were that a plain
//! `&ManagedTensor`, its `&[T]` could sit beside the argument's `&mut [T]` over the same bytes
//! (`k(img, img)`), which is undefined behaviour reached from safe code. So the class's tensor
//! gives its descriptor freely and its elements through a guard that holds a read claim: the
//! claim is refused while a `TensorArgMut` writes the memory, and while it lives no
//! `TensorArgMut` may be made over the memory. The `Arc` that the exports share with Python
//! stays inside the crate: no Rust handle to the memory is made outside the registry.

use std::ffi::c_void;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use dlbridge::{DataType, Device, Flags, ManagedTensor, Version, Writability};
#[cfg(any(Py_3_11, not(Py_LIMITED_API)))]
use pyo3::ffi;
use pyo3::prelude::*;

use crate::claims::{Claim, compact_copy};

/// The tensor a [`TensorClass`](crate::TensorClass) holds: Python code and kernels reach its
/// memory too, so Rust reads its elements under a read claim ([`ClassTensor::read`]).
///
/// Made from a [`ManagedTensor`] by value ([`ClassTensor::new`]), so that no other Rust handle
/// keeps it. It gives its descriptor without a claim (shape, strides, data type, device,
/// flags, ...) and its elements only through [`ClassTensor::read`], whose guard holds a read
/// claim in the registry of typed arguments: refused (`ValueError`) while a kernel's writable
/// argument ([`TensorArgMut`](crate::TensorArgMut)) writes the memory, on any thread, and
/// keeping one from being made while it lives. Every slice or view read through the guard
/// borrows the guard, so none outlives the claim. The exports that share the tensor with
/// Python (`__dlpack__`, the C exchange table, the buffer protocol, pickling) are dlbridge's
/// own: Python holders of the memory are Python's business (a `TensorArg` does not stop NumPy
/// from writing its memory either).
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// #[pyclass(frozen)]
/// struct Image {
///     pixels: ClassTensor,
/// }
///
/// #[pymethods]
/// impl Image {
///     /// The brightest pixel: reads the elements under a read claim.
///     fn brightest(&self, py: Python<'_>) -> PyResult<u8> {
///         let pixels = self.pixels.read_for(py, "Image.brightest()")?;
///         let values: &[u8] = pixels.view().as_slice().map_err(to_py_err)?;
///         Ok(values.iter().copied().max().unwrap_or(0))
///     }
///
///     /// The shape: the descriptor needs no claim.
///     fn shape(&self) -> Vec<i64> {
///         self.pixels.shape().to_vec()
///     }
/// }
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     let pixels = Export::new(vec![3u8, 9, 4, 1], &[2, 2]).into_versioned().map_err(to_py_err)?;
///     let image = Image { pixels: ClassTensor::new(pixels) };
///     assert_eq!(image.brightest(py)?, 9);
///     assert_eq!(image.shape(), [2, 2]);
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub struct ClassTensor {
    /// Shared with Python by the exports, never with Rust code outside this crate.
    tensor: Arc<ManagedTensor>,
}

/// Read access to a [`ClassTensor`]'s elements, under a read claim in the aliasing registry of
/// typed arguments, released when the guard is dropped. Dereferences to the
/// [`ManagedTensor`]: its views, slices and iterators borrow the guard, so none outlives the
/// claim.
///
/// ```compile_fail,E0597
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
/// fn first(py: Python<'_>, tensor: &ClassTensor) -> PyResult<u8> {
///     let values: &[u8] = {
///         let read = tensor.read(py)?;
///         read.view().as_slice().map_err(to_py_err)? // borrows `read`, dropped here
///     };
///     Ok(values[0])
/// }
/// ```
pub struct ClassTensorRead<'a> {
    tensor: &'a ManagedTensor,
    /// Released on drop, after every borrow of the guard has ended.
    _claim: Claim,
}

impl ClassTensor {
    /// A class's tensor owning `tensor`.
    ///
    /// An import (`from_dlpack`, `from_capsule`) holds a read claim on its memory for as long as
    /// it lives; here that claim goes (the tensor's [`ManagedTensor::has_release_on_drop`]
    /// release runs), since the class's memory is Python's to lend to kernels and Rust reads
    /// of it claim one by one ([`ClassTensor::read`]).
    ///
    /// ```
    /// use dlbridge_pyo3::prelude::*;
    /// let tensor = Export::new(vec![1.0f32, 2.0], &[2]).into_versioned()?;
    /// let held = ClassTensor::new(tensor);
    /// assert_eq!(held.shape(), &[2]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[inline]
    pub fn new(mut tensor: ManagedTensor) -> Self {
        // SAFETY: the tensor moves into this `ClassTensor` by value, so no reference it handed
        // out lives; from here on its elements are reached only through `read`, under a read
        // claim held as long as any reference to them, and the `Arc` stays crate-private.
        unsafe { crate::claims::release_import_claim(&mut tensor) };
        ClassTensor {
            tensor: Arc::new(tensor),
        }
    }

    /// A class's tensor owning the tensor of `tensor` when no other `Arc` holds it (nor a
    /// share of it, which holds a clone); `tensor` handed back otherwise, as a reference to the
    /// memory that Rust code keeps.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dlbridge_pyo3::prelude::*;
    /// let tensor = Arc::new(Export::new(vec![1u8, 2], &[2]).into_versioned()?);
    /// let kept = Arc::clone(&tensor);
    /// let tensor = ClassTensor::try_from_arc(tensor).unwrap_err(); // `kept` holds it too
    /// drop(kept);
    /// assert!(ClassTensor::try_from_arc(tensor).is_ok());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn try_from_arc(tensor: Arc<ManagedTensor>) -> Result<Self, Arc<ManagedTensor>> {
        Arc::try_unwrap(tensor).map(Self::new)
    }

    /// Read access to the elements, under a read claim in the aliasing registry that typed
    /// arguments claim their memory in; as [`ClassTensor::read_for`], the refusal saying
    /// "reading a tensor class's tensor".
    ///
    /// # Errors
    ///
    /// `ValueError` while a writable argument ([`TensorArgMut`](crate::TensorArgMut)) of a
    /// call in progress, on this thread or another, reaches any byte of the tensor.
    ///
    /// ```
    /// use dlbridge_pyo3::prelude::*;
    /// use pyo3::prelude::*;
    /// # Python::initialize();
    /// Python::attach(|py| -> PyResult<()> {
    ///     let held = ClassTensor::new(Export::new(vec![1u8, 2, 3], &[3]).into_versioned().map_err(to_py_err)?);
    ///     let read = held.read(py)?;
    ///     assert_eq!(read.view().as_slice::<u8>().map_err(to_py_err)?, &[1, 2, 3]);
    ///     // Readers go on side by side.
    ///     assert_eq!(held.read(py)?.view().num_elements(), 3);
    ///     Ok(())
    /// })
    /// # .unwrap();
    /// ```
    #[inline]
    pub fn read(&self, py: Python<'_>) -> PyResult<ClassTensorRead<'_>> {
        self.read_for(py, "reading a tensor class's tensor")
    }

    /// As [`ClassTensor::read`], `what` naming the reader in the refusal (`"Image.mean()"`):
    /// the guard holds a read claim on every byte the tensor reaches until it is dropped.
    ///
    /// # Errors
    ///
    /// `ValueError`, starting with `what`, while a writable argument
    /// ([`TensorArgMut`](crate::TensorArgMut)) of a call in progress, on this thread or
    /// another, reaches any byte of the tensor.
    ///
    /// ```
    /// use dlbridge_pyo3::prelude::*;
    /// use pyo3::prelude::*;
    /// # Python::initialize();
    /// Python::attach(|py| -> PyResult<()> {
    ///     let held = ClassTensor::new(Export::new(vec![2.0f64, 4.0], &[2]).into_versioned().map_err(to_py_err)?);
    ///     let read = held.read_for(py, "Signal.mean()")?;
    ///     let mean = read.view().elements::<f64>().map_err(to_py_err)?.iter().sum::<f64>() / 2.0;
    ///     assert_eq!(mean, 3.0);
    ///     Ok(())
    /// })
    /// # .unwrap();
    /// ```
    #[inline]
    pub fn read_for(&self, py: Python<'_>, what: &str) -> PyResult<ClassTensorRead<'_>> {
        let claim = Claim::for_read(py, &self.tensor.view(), what)?;
        Ok(ClassTensorRead {
            tensor: &self.tensor,
            _claim: claim,
        })
    }

    /// A compact (C-contiguous) host copy, made under a read claim as dlbridge makes its own
    /// copies ([`compact_copy`](crate::compact_copy)); `what` names the request in the refusal
    /// (`"Tensor.copy()"`).
    ///
    /// # Errors
    ///
    /// `ValueError` while a [`TensorArgMut`](crate::TensorArgMut) reaches any of the bytes,
    /// `BufferError` for memory the host cannot read.
    ///
    /// ```
    /// use dlbridge_pyo3::prelude::*;
    /// use pyo3::prelude::*;
    /// # Python::initialize();
    /// Python::attach(|py| -> PyResult<()> {
    ///     let transposed = Export::new(vec![1u8, 3, 2, 4], &[2, 2]).strides(&[1, 2]);
    ///     let held = ClassTensor::new(transposed.into_versioned().map_err(to_py_err)?);
    ///     let copy = held.compact_copy(py, "copy()")?;
    ///     assert_eq!(copy.view().as_slice::<u8>().map_err(to_py_err)?, &[1, 2, 3, 4]);
    ///     Ok(())
    /// })
    /// # .unwrap();
    /// ```
    pub fn compact_copy(&self, py: Python<'_>, what: &str) -> PyResult<ManagedTensor> {
        compact_copy(py, &self.tensor.view(), what)
    }

    /// Serves the tensor through the buffer protocol, as [`get_buffer`](crate::produce::get_buffer)
    /// does (for a class's `__getbuffer__`); the buffer goes to Python, as the class's other
    /// exports do.
    ///
    /// ```
    /// use std::ffi::c_int;
    /// use dlbridge_pyo3::prelude::*;
    /// use dlbridge_pyo3::produce::release_buffer;
    /// use pyo3::ffi;
    /// use pyo3::prelude::*;
    ///
    /// #[pyclass(frozen)]
    /// struct Pixels {
    ///     tensor: ClassTensor,
    /// }
    ///
    /// #[pymethods]
    /// impl Pixels {
    ///     unsafe fn __getbuffer__(
    ///         slf: Bound<'_, Self>,
    ///         view: *mut ffi::Py_buffer,
    ///         flags: c_int,
    ///     ) -> PyResult<()> {
    ///         // SAFETY: CPython hands a Py_buffer to fill; `slf` owns the tensor.
    ///         unsafe { slf.get().tensor.get_buffer(slf.as_any(), view, flags) }
    ///     }
    ///
    ///     unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
    ///         // SAFETY: a buffer `__getbuffer__` filled, released once.
    ///         unsafe { release_buffer(view) }
    ///     }
    /// }
    /// # Python::initialize();
    /// Python::attach(|py| -> PyResult<()> {
    ///     let tensor = Export::new(vec![1u16, 2, 3], &[3]).into_versioned().map_err(to_py_err)?;
    ///     let pixels = Bound::new(py, Pixels { tensor: ClassTensor::new(tensor) })?;
    ///     let view = py.import("builtins")?.getattr("memoryview")?.call1((pixels,))?;
    ///     assert_eq!(view.call_method0("tolist")?.extract::<Vec<u16>>()?, [1, 2, 3]);
    ///     Ok(())
    /// })
    /// # .unwrap();
    /// ```
    ///
    /// # Safety
    ///
    /// As [`get_buffer`](crate::produce::get_buffer): `view` is NULL or a valid `Py_buffer` to fill,
    /// and `owner` keeps this tensor alive (the instance whose `__getbuffer__` this is).
    #[cfg(any(Py_3_11, not(Py_LIMITED_API)))]
    pub unsafe fn get_buffer(
        &self,
        owner: &Bound<'_, PyAny>,
        view: *mut ffi::Py_buffer,
        flags: std::ffi::c_int,
    ) -> PyResult<()> {
        // SAFETY: the caller's contract.
        unsafe { super::buffer::get_buffer(&self.tensor, owner, view, flags) }
    }

    /// Serves the tensor's bytes through the buffer protocol, as
    /// [`get_byte_buffer`](crate::produce::get_byte_buffer) does (what pickling hands to
    /// `pickle.PickleBuffer`); used as [`ClassTensor::get_buffer`] is.
    ///
    /// # Safety
    ///
    /// As [`ClassTensor::get_buffer`].
    #[cfg(any(Py_3_11, not(Py_LIMITED_API)))]
    pub unsafe fn get_byte_buffer(
        &self,
        read_only: bool,
        owner: &Bound<'_, PyAny>,
        view: *mut ffi::Py_buffer,
        flags: std::ffi::c_int,
    ) -> PyResult<()> {
        // SAFETY: the caller's contract.
        unsafe { super::buffer::get_byte_buffer(&self.tensor, read_only, owner, view, flags) }
    }

    /// The tensor the exports share with Python (`__dlpack__`, the exchange table, the
    /// writability hook, the buffer protocol): never handed to Rust code outside this crate.
    #[inline(always)]
    pub(crate) fn shared(&self) -> &Arc<ManagedTensor> {
        &self.tensor
    }

    /// The number of dimensions.
    #[inline]
    pub fn ndim(&self) -> usize {
        self.tensor.view().ndim()
    }

    /// The extents.
    #[inline]
    pub fn shape(&self) -> &[i64] {
        self.tensor.view().shape()
    }

    /// The strides, in elements (the row-major ones where the producer sent none).
    #[inline]
    pub fn strides(&self) -> &[i64] {
        self.tensor.view().strides()
    }

    /// The element type.
    #[inline]
    pub fn dtype(&self) -> DataType {
        self.tensor.view().dtype()
    }

    /// The device of the memory.
    #[inline]
    pub fn device(&self) -> Device {
        self.tensor.view().device()
    }

    /// The address of the first element (`data + byte_offset`); reading through it is
    /// `unsafe`, and is what [`ClassTensor::read`] does safely.
    #[inline]
    pub fn data_ptr(&self) -> *mut c_void {
        self.tensor.view().data_ptr()
    }

    /// The DLPack flags (READ_ONLY, IS_COPIED, IS_SUBBYTE_TYPE_PADDED).
    #[inline]
    pub fn flags(&self) -> Flags {
        self.tensor.view().flags()
    }

    /// The DLPack version the producer wrote, `None` for a legacy tensor.
    #[inline]
    pub fn version(&self) -> Option<Version> {
        self.tensor.view().version()
    }

    /// Whether the memory must not be written (flagged READ_ONLY, or legacy).
    #[inline]
    pub fn is_read_only(&self) -> bool {
        self.tensor.view().is_read_only()
    }

    /// Whether the producer allows writes ([`dlbridge::TensorView::writability`]).
    #[inline]
    pub fn writability(&self) -> Writability {
        self.tensor.writability()
    }

    /// The number of elements.
    #[inline]
    pub fn num_elements(&self) -> u64 {
        self.tensor.view().num_elements()
    }

    /// The bytes the elements take, compact (packed for sub-byte types).
    #[inline]
    pub fn compact_byte_size(&self) -> u64 {
        self.tensor.view().compact_byte_size()
    }

    /// Whether the layout is row-major compact.
    #[inline]
    pub fn is_c_contiguous(&self) -> bool {
        self.tensor.view().is_c_contiguous()
    }

    /// Whether the layout is column-major compact.
    #[inline]
    pub fn is_f_contiguous(&self) -> bool {
        self.tensor.view().is_f_contiguous()
    }

    /// Whether the tensor is a versioned `DLManagedTensorVersioned`.
    #[inline]
    pub fn is_versioned(&self) -> bool {
        self.tensor.is_versioned()
    }

    /// Whether the tensor's handle is the only way to its memory
    /// ([`ManagedTensor::is_exclusive`]).
    #[inline]
    pub fn is_exclusive(&self) -> bool {
        self.tensor.is_exclusive()
    }

    /// The stream the data is ready on ([`ManagedTensor::ready_stream`]).
    #[inline]
    pub fn ready_stream(&self) -> Option<usize> {
        self.tensor.ready_stream()
    }
}

impl From<ManagedTensor> for ClassTensor {
    #[inline]
    fn from(tensor: ManagedTensor) -> Self {
        ClassTensor::new(tensor)
    }
}

/// The descriptor, never the elements.
impl fmt::Debug for ClassTensor {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_tuple("ClassTensor")
            .field(&*self.tensor)
            .finish()
    }
}

impl Deref for ClassTensorRead<'_> {
    type Target = ManagedTensor;

    #[inline]
    fn deref(&self) -> &ManagedTensor {
        self.tensor
    }
}

/// The descriptor, never the elements.
impl fmt::Debug for ClassTensorRead<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_tuple("ClassTensorRead")
            .field(self.tensor)
            .finish()
    }
}
