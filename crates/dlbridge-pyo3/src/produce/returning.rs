//! Returning Rust-owned tensors to Python as the caller's framework's own objects.

use std::sync::Arc;

use dlbridge::ndarray::NdarrayTensorExt;
use dlbridge::{DataType, Device, Element, Export, ManagedTensor, RawManagedTensor};
use ndarray::{Array, Dimension};
use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

#[cfg(feature = "arrow")]
use super::pyarrow::pyarrow_result;
use crate::capsule::{from_capsule, wrap_in_capsule};
use crate::dispatch::type_info;
use crate::errors::{to_py_err, tuple, type_name};
use crate::framework_table::{self, BUFFER, LayoutsTaken, NUMPY, fit_for};
use crate::host::numpy;
use crate::writability_hook::{legacy_refusal, lent_read_only, owned_for_python};

/// A one-shot DLPack producer around an owned tensor: what framework `from_dlpack` functions
/// that want an object with `__dlpack__` (NumPy, JAX) are given. It answers `max_version` as
/// the standard says: a legacy capsule when it is None or below 1 (JAX asks that way).
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     // A framework whose `from_dlpack` wants an object with `__dlpack__`, as NumPy's does.
///     let toy = PyModule::from_code(py, c"
/// class Array:
///     pass
/// def from_dlpack(producer):
///     array = Array()
///     array.producer = producer
///     array.capsule = producer.__dlpack__(max_version=(1, 3))
///     return array
/// ", c"toy.py", c"toy")?;
///     let like = toy.getattr("Array")?.call0()?;
///     let result = return_like(py, (vec![1.0f64, 2.0], [2]), &like)?;
///     let producer = result.getattr("producer")?;
///     assert_eq!(producer.get_type().name()?, "TensorProducer");
///     let tensor = dlbridge_pyo3::capsule::from_capsule(&result.getattr("capsule")?)?;
///     assert_eq!(tensor.view().as_slice::<f64>().map_err(to_py_err)?, &[1.0, 2.0]);
///     // One shot: the tensor is exported once.
///     let again = producer.call_method0("__dlpack__").unwrap_err();
///     assert!(again.is_instance_of::<pyo3::exceptions::PyTypeError>(py), "{again}");
///     Ok(())
/// })
/// # .unwrap();
/// ```
#[pyclass(module = "dlbridge_pyo3", name = "TensorProducer")]
pub struct TensorProducer {
    tensor: Option<ManagedTensor>,
    device: (i32, i32),
}

#[pymethods]
impl TensorProducer {
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &mut self,
        py: Python<'py>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<(i64, i64)>,
        dl_device: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = (stream, dl_device, copy);
        let tensor = self
            .tensor
            .take()
            .ok_or_else(|| PyTypeError::new_err("this tensor was already exported"))?;
        let versioned = max_version.is_some_and(|(major, _)| major >= 1);
        // Flagged as it goes to Python: READ_ONLY where other Rust handles read the memory,
        // which a legacy capsule cannot say.
        if !versioned && lent_read_only(&tensor) {
            return Err(legacy_refusal(&tensor));
        }
        let tensor = owned_for_python(tensor)?;
        // In the layout asked for: the tensor itself, or a share of it (no copy) straight to
        // the consumer.
        let raw = match (versioned, tensor.is_versioned()) {
            (true, true) | (false, false) => tensor.into_raw(),
            (true, false) => RawManagedTensor::Versioned(
                Arc::new(tensor)
                    .share_versioned_into_raw()
                    .map_err(to_py_err)?,
            ),
            (false, true) => RawManagedTensor::Legacy(
                Arc::new(tensor)
                    .share_legacy_into_raw()
                    .map_err(to_py_err)?,
            ),
        };
        wrap_in_capsule(py, raw)
    }

    fn __dlpack_device__(&self) -> (i32, i32) {
        self.device
    }
}

/// A Rust result that can be returned to Python as a tensor ([`return_like`]), exported
/// zero-copy (the result's buffer becomes the tensor's memory, in one allocation):
///
/// - a [`ManagedTensor`];
/// - an ndarray `Array` of a DLPack element type;
/// - a `Vec` with a shape, `(values, [rows, cols])` (any `AsRef<[usize]>`: an array, a slice,
///   a `Vec`), row-major; a shape that does not describe exactly the values is the core's
///   `ShapeMismatch` error;
/// - an [`Export`] of any owner's memory, finished as a versioned tensor.
///
/// An `Array` or a `Vec` keeps its own buffer, aligned for its element type only; for
/// consumers that require 64-byte alignment (TVM's `from_dlpack`), write the result into
/// [`ManagedTensor::zeros`], which is aligned so.
///
/// Each returned like an instance of `Image`, the class of
/// [`TensorClass`](crate::TensorClass)'s example (whose exchange table wraps the result):
///
/// ```
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
///     let like = image(py, vec![0; 4], &[2, 2])?.into_any();
///     let from_array = return_like(py, array![[1u8, 2], [3, 4]], &like)?;
///     let from_vec = return_like(py, (vec![1u8, 2, 3, 4, 5, 6], [2, 3]), &like)?;
///     let zeros = ManagedTensor::zeros(DataType::UINT8, &[4]).map_err(to_py_err)?;
///     let from_managed = return_like(py, zeros, &like)?;
///     let shape = |result: &Bound<'_, PyAny>| -> PyResult<Vec<i64>> {
///         Ok(result.cast::<Image>()?.borrow().tensor().shape().to_vec())
///     };
///     assert_eq!(shape(&from_array)?, [2, 2]);
///     assert_eq!(shape(&from_vec)?, [2, 3]);
///     assert_eq!(shape(&from_managed)?, [4]);
///     // A shape that does not describe the values is the core's error.
///     let refused = (vec![1u8, 2, 3], [2, 2]).into_tensor();
///     assert!(matches!(refused, Err(dlbridge::Error::ShapeMismatch { elements: 4, buffer_len: 3 })));
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub trait IntoTensor {
    /// The tensor, or the core's error (a shape the array cannot export, say).
    fn into_tensor(self) -> dlbridge::Result<ManagedTensor>;

    /// Not part of the API (the default is the only behaviour an implementation outside this
    /// crate should have): [`return_like`]'s result for a NumPy caller, a new NumPy array
    /// made with NumPy's C API over the tensor's memory, or the tensor when that path does not
    /// take it. An ndarray `Array` and a `(Vec, shape)` skip the tensor: the array is made
    /// over their buffer directly, the same array in fewer steps.
    #[doc(hidden)]
    fn into_numpy_array(self, py: Python<'_>) -> PyResult<Result<Bound<'_, PyAny>, ManagedTensor>>
    where
        Self: Sized,
    {
        numpy::into_array(py, self.into_tensor().map_err(to_py_err)?)
    }
}

impl IntoTensor for ManagedTensor {
    fn into_tensor(self) -> dlbridge::Result<ManagedTensor> {
        Ok(self)
    }
}

impl<T: Element, D: Dimension> IntoTensor for Array<T, D> {
    fn into_tensor(self) -> dlbridge::Result<ManagedTensor> {
        ManagedTensor::from_array(self)
    }

    fn into_numpy_array(self, py: Python<'_>) -> PyResult<Result<Bound<'_, PyAny>, ManagedTensor>> {
        match numpy::array_from_ndarray(py, self)? {
            Ok(array) => Ok(Ok(array)),
            // Not taken there: its tensor would not be taken either (the same conditions).
            Err(array) => Ok(Err(ManagedTensor::from_array(array).map_err(to_py_err)?)),
        }
    }
}

impl<T: Element, S: AsRef<[usize]>> IntoTensor for (Vec<T>, S) {
    fn into_tensor(self) -> dlbridge::Result<ManagedTensor> {
        let (values, shape) = self;
        Export::new(values, shape.as_ref()).into_versioned()
    }

    fn into_numpy_array(self, py: Python<'_>) -> PyResult<Result<Bound<'_, PyAny>, ManagedTensor>> {
        let (values, shape) = self;
        match numpy::array_from_vec(py, values, shape.as_ref())? {
            Ok(array) => Ok(Ok(array)),
            // Not taken there: the core's export says what is wrong with the shape, or makes
            // the tensor the array path would not take either.
            Err(values) => Ok(Err((values, shape).into_tensor().map_err(to_py_err)?)),
        }
    }
}

impl<O: Send + 'static> IntoTensor for Export<'_, O> {
    fn into_tensor(self) -> dlbridge::Result<ManagedTensor> {
        self.into_versioned()
    }
}

/// Returns a Rust result to Python as an object of the same framework as `like` (an input of
/// the call, say), zero-copy where that framework can hold the result as it is (below); a core
/// error on the way is a `BufferError` ([`to_py_err`](crate::to_py_err)):
///
/// - for exactly `numpy.ndarray`, a new array made over the tensor's memory with NumPy's C
///   API (about the cost of rust-numpy's `into_pyarray`), when NumPy has a type number for
///   the data type;
/// - when `like`'s type publishes DLPack 1.3's C exchange API (PyTorch, PaddlePaddle,
///   dlbridge), through its `managed_tensor_to_py_object_no_sync`;
/// - otherwise through the `from_dlpack` of `like`'s top-level module (`numpy.from_dlpack`,
///   `jax.numpy.from_dlpack`, ...), handed a one-shot [`TensorProducer`]; what the framework
///   made is read back, and a result of another data type or shape is a `TypeError` (JAX
///   without 64-bit types makes int32 of int64 and float32 of float64: the message names
///   `jax.config.update("jax_enable_x64", True)` and a narrower result as the fixes);
/// - for a pyarrow array (an instance of `pyarrow.Array`; feature `arrow`), a pyarrow array
///   made by `pyarrow.array` through the Arrow PyCapsule interface (`__arrow_c_array__`, with
///   arrow-rs's C data interface), over the result's memory: a 1-D result of an Arrow
///   primitive type (int8 to int64, uint8 to uint64, float16, float32, float64) as a
///   `pyarrow.Array` of that type, a result of two or more dimensions as a
///   `pyarrow.FixedShapeTensorArray` (the `arrow.fixed_shape_tensor` extension: one tensor per
///   index of the first axis). A 1-D bool result is **copied** into a `BooleanArray` (Arrow
///   stores one bit per boolean). Refused with `TypeError` naming what: other data types
///   (complex, bfloat16, float8...), 0-dimensional results and bool ones of two or more
///   dimensions; with `BufferError`: device memory. The tensor is released when pyarrow
///   releases the array (or a capsule no consumer took is destroyed). Without the feature, a
///   `TypeError` that names it;
/// - for an object with no such module function but with the buffer protocol (`memoryview`,
///   `bytes`, `bytearray`, `array.array`), a `memoryview` over the result, in its shape and
///   format ([`buffer_format`](crate::produce::buffer_format)), which keeps the tensor alive (the full
///   API, or the limited API of Python 3.11 and later);
/// - anything else is a `TypeError`.
///
/// Every way consults one table of what each framework's tensors can hold
/// ([`FRAMEWORK_HOLDINGS`](crate::framework_table::FRAMEWORK_HOLDINGS)):
///
/// - **Read-only results** (flagged read-only, such as an Arrow column or candle's unchecked
///   export; a legacy import of unknown writability; or a share of a tensor Rust still holds,
///   which Rust code may read through that tensor: [`ManagedTensor::is_share`]) go out
///   read-only, zero-copy, to the frameworks that can hold read-only memory: a NumPy array
///   without `WRITEABLE`, a read-only `memoryview`, a dlbridge class's object flagged
///   READ_ONLY, a pyarrow array (immutable). PyTorch, PaddlePaddle, JAX and CuPy tensors (and
///   those of a framework the table does not name) cannot: PyTorch and PaddlePaddle write
///   memory flagged READ_ONLY, JAX takes only legacy capsules, which cannot say it. They get a
///   **copy** (compact, writable, in Rust memory), so that the caller can never write memory
///   its owner promised no one writes. A read-only result in device memory, which dlbridge
///   cannot copy, is refused there with `BufferError`.
/// - **Layouts** a framework refuses are compacted first (one row-major copy): JAX takes
///   compact layouts only (faer's products pad their columns), PyTorch and PaddlePaddle no
///   negative strides (PaddlePaddle's exchange table would read the wrong memory), pyarrow
///   row-major compact ones only (an Arrow array's values are one run; so is a result whose
///   first element is not aligned for its type).
///
/// Otherwise the result shares the tensor's memory; the tensor's deleter runs when the
/// framework frees its object. Typed arguments have it as a method: `x.return_like(py,
/// result)`.
///
/// ```
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
///
/// /// `2 * x` for a float64 vector, as a new tensor of `x`'s framework.
/// #[pyfunction]
/// fn double<'py>(py: Python<'py>, x: TensorArg<'_, f64, Ix1>) -> PyResult<Bound<'py, PyAny>> {
///     let doubled: Array1<f64> = x.view().mapv(|value| 2.0 * value);
///     x.return_like(py, doubled)
/// }
/// ```
pub fn return_like<'py>(
    py: Python<'py>,
    result: impl IntoTensor,
    like: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let info = type_info(like)?;
    let tensor = if info.numpy_array {
        // NumPy's C API way: NumPy holds read-only memory and any strides (its table entry,
        // checked at compile time below), so the array is made over the result as it is.
        match result.into_numpy_array(py)? {
            Ok(array) => return Ok(array),
            Err(not_taken) => not_taken,
        }
    } else {
        result.into_tensor().map_err(to_py_err)?
    };
    if let Some(table) = info.exchange_table {
        if let Some(wrap) = table.managed_tensor_to_py_object_no_sync {
            // What the framework can hold: a copy of a read-only result for PyTorch and
            // PaddlePaddle, a compact one of a layout they refuse.
            let tensor = fit_for(py, tensor, framework_table::for_exchange_table(info))?;
            // The table takes versioned tensors: a legacy one is shared as one, no copy;
            // flagged READ_ONLY where other Rust handles read the memory.
            let raw = owned_for_python(tensor)?
                .into_raw_versioned()
                .map_err(to_py_err)?;
            let mut out: *mut std::ffi::c_void = std::ptr::null_mut();
            // SAFETY: the table's contract: it steals the owned tensor and returns a new
            // reference (or -1 with a Python error set); the GIL is held.
            let status = unsafe { wrap(raw, &mut out) };
            if status != 0 || out.is_null() {
                return Err(PyErr::fetch(py));
            }
            // SAFETY: a new reference to the framework's object.
            return Ok(unsafe { Bound::from_owned_ptr(py, out.cast()) });
        }
    }
    let Some(root) = info.module_root.as_deref() else {
        return Err(PyTypeError::new_err(format!(
            "cannot return a tensor like an object of type {}: its type has no \
             __module__ that is a string, so its framework is unknown",
            type_name(like)
        )));
    };
    let module = py.import(root)?;
    if root == "pyarrow" && like.is_instance(&module.getattr(intern!(py, "Array"))?)? {
        // pyarrow's module has no `from_dlpack`: the Arrow PyCapsule interface's way, which
        // takes results of two or more dimensions too.
        return pyarrow_result(py, tensor, like);
    }
    let mut from_dlpack = module.getattr_opt(intern!(py, "from_dlpack"))?;
    for namespace in [intern!(py, "numpy"), intern!(py, "dlpack")] {
        if from_dlpack.is_some() {
            break;
        }
        if let Some(namespace) = module.getattr_opt(namespace)? {
            from_dlpack = namespace.getattr_opt(intern!(py, "from_dlpack"))?;
        }
    }
    let Some(from_dlpack) = from_dlpack else {
        if has_buffer_protocol(like) {
            // A memoryview holds read-only memory and any strides: nothing is copied.
            return buffer_result(py, fit_for(py, tensor, &BUFFER)?);
        }
        return Err(PyTypeError::new_err(format!(
            "cannot return a tensor like an object of type {}: module {root} has no \
             from_dlpack, and the object does not have the buffer protocol",
            type_name(like)
        )));
    };
    let mut tensor = fit_for(py, tensor, framework_table::for_module(info, root))?;
    // SAFETY: the tensor goes into the one-shot producer, which only exports it (`into_raw`);
    // no Rust code reaches its elements through it.
    unsafe { crate::claims::release_import_claim(&mut tensor) };
    let sent = Described::of(&tensor);
    let device = sent.device;
    let producer = Py::new(
        py,
        TensorProducer {
            tensor: Some(tensor),
            device: (device.device_type.0, device.device_id),
        },
    )?;
    let result = from_dlpack.call1((producer,))?;
    sent.check_kept(&result, root)?;
    Ok(result)
}

/// A result returned like a pyarrow array, without the feature `arrow`: refused, naming it.
#[cfg(not(feature = "arrow"))]
fn pyarrow_result<'py>(
    py: Python<'py>,
    tensor: ManagedTensor,
    like: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let _ = (py, tensor);
    Err(PyTypeError::new_err(format!(
        "cannot return a tensor like a pyarrow {}: dlbridge-pyo3 hands results to pyarrow \
         through the Arrow PyCapsule interface, with its feature `arrow`, which this build \
         lacks",
        type_name(like)
    )))
}

// The ways that never copy rely on these entries of the table: NumPy's C API way makes its
// array over any result, read-only where the result is, and so does the buffer protocol's.
const _: () = assert!(NUMPY.holds_read_only && matches!(NUMPY.layouts, LayoutsTaken::AnyStrides));
const _: () = assert!(BUFFER.holds_read_only && matches!(BUFFER.layouts, LayoutsTaken::AnyStrides));

/// What a result was, before a framework's `from_dlpack` made its object of it.
struct Described {
    dtype: DataType,
    shape: Vec<i64>,
    device: Device,
}

impl Described {
    fn of(tensor: &ManagedTensor) -> Self {
        let view = tensor.view();
        Described {
            dtype: view.dtype(),
            shape: view.shape().to_vec(),
            device: view.device(),
        }
    }

    /// Refuses (`TypeError`) a framework's object that does not hold what the tensor
    /// described: another data type (JAX without 64-bit types narrows int64 to int32, whose
    /// values wrap, and float64 to float32) or another shape. Read back through the object's
    /// `__dlpack__`, so that any framework is checked alike; a framework that copied holds the
    /// values it was handed where the data type and shape are kept.
    fn check_kept(&self, result: &Bound<'_, PyAny>, root: &str) -> PyResult<()> {
        // The framework's own export of what it made, taken from its capsule and released at
        // once (the produce side reads no producer the consume side's way).
        let exported = result
            .call_method0(intern!(result.py(), "__dlpack__"))
            .and_then(|capsule| from_capsule(&capsule));
        let held = match exported {
            Ok(held) => held,
            // Not readable back (a framework that exports no DLPack): nothing to compare.
            Err(_) => return Ok(()),
        };
        let view = held.view();
        if view.dtype() == self.dtype && view.shape() == self.shape.as_slice() {
            return Ok(());
        }
        let fixes = if root == "jax" && self.dtype.bits == 64 {
            format!(
                "call jax.config.update(\"jax_enable_x64\", True) first (JAX keeps 64-bit \
                 types only then), or return a narrower data type than {}",
                self.dtype
            )
        } else {
            format!("return a data type that {root} keeps")
        };
        Err(PyTypeError::new_err(format!(
            "{root}.from_dlpack changed the result: the kernel returned {} of shape {}, and \
             {root} made {} of shape {} of it; dlbridge does not hand out values converted \
             behind the kernel's back: {fixes}",
            self.dtype,
            tuple(&self.shape),
            view.dtype(),
            tuple(view.shape()),
        )))
    }
}

/// Whether `object` has the buffer protocol.
fn has_buffer_protocol(object: &Bound<'_, PyAny>) -> bool {
    #[cfg(any(Py_3_11, not(Py_LIMITED_API)))]
    {
        // SAFETY: a live object, the GIL held; reads its type's slots only.
        unsafe { pyo3::ffi::PyObject_CheckBuffer(object.as_ptr()) != 0 }
    }
    #[cfg(not(any(Py_3_11, not(Py_LIMITED_API))))]
    {
        let _ = object;
        false
    }
}

/// A result returned like a buffer-protocol input (`memoryview`, `bytes`, `bytearray`,
/// `array.array`, ...): a `memoryview` over the tensor's memory, zero-copy, in its shape and
/// format ([`buffer_format`](crate::produce::buffer_format)), writable unless the tensor is read-only
/// or other Rust handles read it ([`get_buffer`](crate::produce::get_buffer)'s rule).
fn buffer_result<'py>(py: Python<'py>, tensor: ManagedTensor) -> PyResult<Bound<'py, PyAny>> {
    #[cfg(any(Py_3_11, not(Py_LIMITED_API)))]
    {
        let mut tensor = tensor;
        // SAFETY: the tensor goes into the memoryview's owner, which only describes its memory
        // to Python (`get_buffer`); no Rust code reaches its elements through it.
        unsafe { crate::claims::release_import_claim(&mut tensor) };
        let owner = Bound::new(py, TensorBuffer { tensor })?;
        // SAFETY: a live object with the buffer protocol, the GIL held; a new reference or
        // NULL with an exception set.
        unsafe {
            Bound::from_owned_ptr_or_err(py, pyo3::ffi::PyMemoryView_FromObject(owner.as_ptr()))
        }
    }
    #[cfg(not(any(Py_3_11, not(Py_LIMITED_API))))]
    {
        let _ = (py, tensor);
        Err(PyTypeError::new_err(
            "returning a tensor like a buffer-protocol object needs the buffer protocol of \
             the stable ABI, which Python 3.11 has first",
        ))
    }
}

/// The owner of a memoryview that [`return_like`] hands back for a buffer-protocol input:
/// serves the tensor's memory ([`get_buffer`](crate::produce::get_buffer)) and frees it with the last
/// view.
#[cfg(any(Py_3_11, not(Py_LIMITED_API)))]
#[pyclass(module = "dlbridge_pyo3", name = "TensorBuffer", frozen)]
struct TensorBuffer {
    tensor: ManagedTensor,
}

#[cfg(any(Py_3_11, not(Py_LIMITED_API)))]
#[pymethods]
impl TensorBuffer {
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::ffi::c_int,
    ) -> PyResult<()> {
        // SAFETY: CPython's contract for getbuffer (a Py_buffer to fill, or NULL); `slf` owns
        // the tensor, whose memory the buffer describes.
        unsafe { super::buffer::get_buffer(&slf.get().tensor, slf.as_any(), view, flags) }
    }

    unsafe fn __releasebuffer__(&self, view: *mut pyo3::ffi::Py_buffer) {
        // SAFETY: CPython releases each buffer that `__getbuffer__` filled once, here.
        unsafe { super::buffer::release_buffer(view) }
    }
}
