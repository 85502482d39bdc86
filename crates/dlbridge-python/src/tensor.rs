//! The `dlbridge.Tensor` class: a `ManagedTensor` shared with Python (a `ClassTensor`, whose
//! elements Rust reads only under a read claim), its read-only properties, `copy`, the
//! buffer-protocol slots (whose layout is dlbridge-pyo3's `get_buffer`) and pickling
//! (`pickling.rs`).
//! `publish_dlpack` (dlbridge-pyo3) gives it `__dlpack__` and the C exchange API.

use std::ffi::c_int;

use dlbridge::ManagedTensor;
use dlbridge_pyo3::{ClassTensor, TensorClass, produce::exchange_api_exports};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::pickling::{self, Rebuilt};

/// A tensor held by dlbridge: imported from any DLPack producer (zero-copy, keeping the
/// producer's memory alive) or created in Rust memory. Exported again with `__dlpack__`, or
/// through the buffer protocol for host memory.
#[pyclass(module = "dlbridge", name = "Tensor", frozen)]
pub struct Tensor {
    inner: ClassTensor,
    /// How it was rebuilt from a pickle or a frame; None for every other tensor.
    rebuilt: Option<Rebuilt>,
}

impl Tensor {
    pub(crate) fn new(tensor: ManagedTensor) -> Self {
        // An import (`dlbridge.from_dlpack`) gives up its lifetime read claim in
        // `ClassTensor::new`: kernels may write the class's memory, and Rust reads claim per read.
        Tensor {
            inner: ClassTensor::new(tensor),
            rebuilt: None,
        }
    }

    /// A tensor rebuilt from a pickle or a frame, and how.
    pub(crate) fn rebuilt(tensor: ManagedTensor, rebuilt: Rebuilt) -> Self {
        Tensor {
            inner: ClassTensor::new(tensor),
            rebuilt: Some(rebuilt),
        }
    }

    /// How it was rebuilt from a pickle or a frame, if it was.
    pub(crate) fn rebuilt_from(&self) -> Option<&Rebuilt> {
        self.rebuilt.as_ref()
    }
}

impl TensorClass for Tensor {
    fn tensor(&self) -> &ClassTensor {
        &self.inner
    }

    fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
        Py::new(py, Tensor::new(tensor))
    }
}

/// Tensors exported through `Tensor.__dlpack_c_exchange_api__` so far (diagnostics: shows
/// that a consumer took the fast path).
#[pyfunction]
pub(crate) fn _exchange_api_exports() -> u64 {
    exchange_api_exports()
}

#[pymethods]
impl Tensor {
    /// The extents.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.shape())
    }

    /// The strides, in elements.
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.strides())
    }

    /// The element type's name ("float32", "bfloat16", "float8_e4m3fn", "bool", ...).
    #[getter]
    fn dtype(&self) -> String {
        self.inner.dtype().to_string()
    }

    /// `(device_type, device_id)`.
    #[getter]
    fn device(&self) -> (i32, i32) {
        let device = self.inner.device();
        (device.device_type.0, device.device_id)
    }

    /// Whether the tensor must not be written: flagged READ_ONLY by its producer, or imported
    /// from a legacy capsule (`dltensor`, as JAX and TensorFlow export), which cannot say that
    /// its memory may be written.
    #[getter]
    fn readonly(&self) -> bool {
        self.inner.is_read_only()
    }

    /// The address of the first element (`data + byte_offset`).
    #[getter]
    fn data_ptr(&self) -> usize {
        self.inner.data_ptr() as usize
    }

    /// Bytes the elements take (packed for sub-byte types).
    #[getter]
    fn nbytes(&self) -> u64 {
        self.inner.compact_byte_size()
    }

    /// Number of dimensions.
    #[getter]
    fn ndim(&self) -> usize {
        self.inner.ndim()
    }

    /// Number of elements.
    #[getter]
    fn size(&self) -> u64 {
        self.inner.num_elements()
    }

    /// The DLPack version the producer wrote, or None for a legacy tensor.
    #[getter]
    fn version(&self) -> Option<(u32, u32)> {
        self.inner.version().map(|v| (v.major, v.minor))
    }

    /// The DLPack flag bits (READ_ONLY = 1, IS_COPIED = 2, IS_SUBBYTE_TYPE_PADDED = 4).
    #[getter]
    fn flags(&self) -> u64 {
        self.inner.flags().bits()
    }

    fn __repr__(&self) -> String {
        let tensor = &self.inner;
        let shape: Vec<String> = tensor.shape().iter().map(i64::to_string).collect();
        let shape = match shape.len() {
            1 => format!("({},)", shape[0]),
            _ => format!("({})", shape.join(", ")),
        };
        format!(
            "dlbridge.Tensor(shape={shape}, dtype={}, device={}, flags={})",
            tensor.dtype(),
            tensor.device(),
            tensor.flags()
        )
    }

    /// A compact (C-contiguous) copy in Rust-owned memory. Made under a read claim in the
    /// aliasing registry of typed arguments: refused (`ValueError`) while a kernel's writable
    /// argument (`TensorArgMut`) writes the memory.
    fn copy(&self, py: Python<'_>) -> PyResult<Tensor> {
        let copy = self.inner.compact_copy(py, "Tensor.copy()")?;
        Ok(Tensor::new(copy))
    }

    /// Pickling (see the module `pickling`): the bytes out-of-band as a `pickle.PickleBuffer`
    /// from protocol 5 on (no copy of a C-contiguous tensor), a copy in-band before; dtype,
    /// shape, read-only-ness and sub-byte padding travel; a tensor the host cannot read is
    /// refused with a `TypeError`.
    fn __reduce_ex__<'py>(slf: &Bound<'py, Self>, protocol: i64) -> PyResult<Bound<'py, PyTuple>> {
        pickling::reduce(slf, protocol)
    }

    /// `copy.copy`: as [`Tensor::copy`], an independent, writable, C-contiguous copy (as NumPy's
    /// arrays copy).
    fn __copy__(&self, py: Python<'_>) -> PyResult<Tensor> {
        let copy = self.inner.compact_copy(py, "copy.copy()")?;
        Ok(Tensor::new(copy))
    }

    /// `copy.deepcopy`: as `copy.copy` (a tensor holds no Python objects to copy deeply).
    fn __deepcopy__(&self, memo: &Bound<'_, PyAny>) -> PyResult<Tensor> {
        let copy = self.inner.compact_copy(memo.py(), "copy.deepcopy()")?;
        Ok(Tensor::new(copy))
    }

    /// The buffer protocol, for host-readable tensors whose dtype has a `struct` format.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        // SAFETY: `view` is NULL or a valid Py_buffer to fill (CPython's contract for
        // getbuffer), and `slf`, the Tensor that holds `inner`, keeps its memory alive.
        unsafe { slf.get().inner.get_buffer(slf.as_any(), view, flags) }
    }

    unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
        // SAFETY: CPython releases each buffer that `__getbuffer__` filled once, here.
        unsafe { dlbridge_pyo3::produce::release_buffer(view) }
    }
}
