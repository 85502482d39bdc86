//! What each framework's tensors can hold of a result: one table ([`FRAMEWORK_HOLDINGS`],
//! whose documentation gives the rule and how it is read), read by every way a tensor goes
//! back to a framework.

use dlbridge::{ManagedTensor, Writability};
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;

use crate::claims::compact_copy;
use crate::dispatch::{BorrowedWritability, TypeInfo};
use crate::writability_hook::{shared_reason, writable_for_python};

/// The layouts (strides, in elements) a framework's import takes as they are. Extent-1
/// dimensions may carry any stride, and a tensor with a zero extent is taken whatever its
/// strides, in every rule (as DLPack and the frameworks read them).
///
/// ```
/// use dlbridge_pyo3::framework_table::LayoutsTaken;
/// // faer's 3x3 product: column-major with padded columns (column stride 8, not 3).
/// let (shape, padded) = ([3, 3], [1, 8]);
/// assert!(LayoutsTaken::AnyStrides.takes(&shape, &padded));
/// assert!(LayoutsTaken::NonNegativeStrides.takes(&shape, &padded));
/// assert!(!LayoutsTaken::Compact.takes(&shape, &padded));
/// assert!(LayoutsTaken::Compact.takes(&shape, &[1, 3])); // column-major, compact
/// assert!(!LayoutsTaken::RowMajorCompact.takes(&shape, &[1, 3]));
/// assert!(LayoutsTaken::RowMajorCompact.takes(&shape, &[3, 1]));
/// assert!(!LayoutsTaken::NonNegativeStrides.takes(&[4], &[-1]));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayoutsTaken {
    /// Any strides, negative and zero ones included (NumPy, dlbridge, `memoryview`).
    AnyStrides,
    /// Any strides but negative ones (PyTorch, PaddlePaddle).
    NonNegativeStrides,
    /// A compact layout in some dimension order: the strides are those of a row-major layout
    /// of the dimensions in some order (row-major, column-major, any transposition), with no
    /// gaps, padding, overlap or negative strides (JAX).
    Compact,
    /// Row-major compact only (TensorFlow, MXNet).
    RowMajorCompact,
}

impl LayoutsTaken {
    /// Whether a tensor of `shape` and `strides` (in elements, as many as `shape`) is taken as
    /// it is.
    ///
    /// ```
    /// use dlbridge_pyo3::framework_table::LayoutsTaken;
    /// assert!(LayoutsTaken::Compact.takes(&[2, 1, 3], &[1, 99, 2])); // extent 1: any stride
    /// assert!(LayoutsTaken::RowMajorCompact.takes(&[0, 3], &[7, 7])); // empty: always
    /// assert!(!LayoutsTaken::Compact.takes(&[2, 3], &[0, 1])); // a broadcast
    /// ```
    #[inline]
    pub fn takes(self, shape: &[i64], strides: &[i64]) -> bool {
        // Each rule first, the empty tensor (taken by every rule) only where the rule refuses:
        // a return's hot path reads a small shape once.
        let empty = || shape.contains(&0);
        match self {
            LayoutsTaken::AnyStrides => true,
            // No negative stride on an extent above 1.
            LayoutsTaken::NonNegativeStrides => {
                shape
                    .iter()
                    .zip(strides)
                    .all(|(&extent, &stride)| stride >= 0 || extent == 1)
                    || empty()
            }
            LayoutsTaken::RowMajorCompact => dlbridge::layout::is_c_contiguous(shape, strides),
            LayoutsTaken::Compact => {
                if empty() {
                    return true;
                }
                let mut dims: Vec<(i64, i64)> = shape
                    .iter()
                    .zip(strides)
                    .filter(|&(&extent, _)| extent != 1)
                    .map(|(&extent, &stride)| (stride, extent))
                    .collect();
                dims.sort_unstable();
                let mut expected: i64 = 1;
                for (stride, extent) in dims {
                    if stride != expected {
                        return false;
                    }
                    match expected.checked_mul(extent) {
                        Some(next) => expected = next,
                        None => return false,
                    }
                }
                true
            }
        }
    }

    /// The rule's name, as `dlbridge._dlbridge._framework_table()` gives it: `"any"`,
    /// `"non-negative"`, `"compact"`, `"row-major compact"`.
    ///
    /// ```
    /// assert_eq!(dlbridge_pyo3::framework_table::LayoutsTaken::Compact.name(), "compact");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            LayoutsTaken::AnyStrides => "any",
            LayoutsTaken::NonNegativeStrides => "non-negative",
            LayoutsTaken::Compact => "compact",
            LayoutsTaken::RowMajorCompact => "row-major compact",
        }
    }
}

/// What one framework's tensors can hold of a result handed to it: one entry of
/// [`FRAMEWORK_HOLDINGS`] (whose documentation gives the rule that reads it).
///
/// ```
/// use dlbridge_pyo3::framework_table::{LayoutsTaken, framework_holding};
/// let torch = framework_holding("torch").unwrap();
/// assert!(!torch.holds_read_only);
/// assert_eq!(torch.layouts, LayoutsTaken::NonNegativeStrides);
/// assert!(framework_holding("numpy").unwrap().holds_read_only);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FrameworkHolding {
    /// The framework, as `dlbridge.distributed` names its kinds (`"numpy"`, `"torch"`,
    /// `"jax"`, `"tensorflow"`, `"paddle"`, `"dlbridge"`), and `"cupy"`, `"mxnet"`,
    /// `"pyarrow"`, `"buffer"` (Python's buffer protocol: the `memoryview` a buffer-protocol
    /// caller gets).
    pub name: &'static str,
    /// Whether a read-only tensor handed to the framework stays read-only there (its objects
    /// refuse writes). Where not, a read-only result is copied first.
    pub holds_read_only: bool,
    /// The layouts its import takes; another is compacted first.
    pub layouts: LayoutsTaken,
}

impl FrameworkHolding {
    /// Whether `tensor` must be copied before it is handed to this framework: its memory is
    /// read-only for Python and the framework cannot hold read-only memory, or its layout is
    /// one the framework refuses.
    ///
    /// ```
    /// use dlbridge_pyo3::prelude::*;
    /// use dlbridge_pyo3::framework_table::framework_holding;
    /// let read_only = Export::new(vec![1.0f32, 2.0], &[2]).read_only(true).into_versioned()?;
    /// assert!(framework_holding("torch").unwrap().needs_copy(&read_only));
    /// assert!(!framework_holding("numpy").unwrap().needs_copy(&read_only));
    /// let padded = Export::new(vec![0.0f64; 19], &[3, 3]).strides(&[1, 8]).into_versioned()?;
    /// assert!(framework_holding("jax").unwrap().needs_copy(&padded));
    /// assert!(!framework_holding("torch").unwrap().needs_copy(&padded));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[inline]
    pub fn needs_copy(&self, tensor: &ManagedTensor) -> bool {
        if !self.holds_read_only && !writable_for_python(tensor) {
            return true;
        }
        if self.layouts == LayoutsTaken::AnyStrides {
            return false;
        }
        let view = tensor.view();
        !self.layouts.takes(view.shape(), view.strides())
    }
}

/// NumPy: holds read-only memory (`writeable=False`), any strides.
///
/// Evidence (NumPy 2.4.6): `numpy.from_dlpack` of a READ_ONLY versioned capsule makes an
/// array with `flags.writeable == False`, and the C API way of `return_like` makes its array
/// without `NPY_ARRAY_WRITEABLE` for such a tensor; `a[::-1]` and padded layouts go through
/// with their strides (NumPy exports them itself).
pub(crate) const NUMPY: FrameworkHolding = FrameworkHolding {
    name: "numpy",
    holds_read_only: true,
    layouts: LayoutsTaken::AnyStrides,
};

/// PyTorch: writes read-only memory; non-negative strides only.
///
/// Evidence (PyTorch 2.15): `torch.from_dlpack` asks for a versioned capsule, takes one
/// flagged READ_ONLY and makes a writable tensor (`t.add_(100)` changes the producer's
/// memory), and so does its exchange table's `managed_tensor_to_py_object_no_sync`; a negative
/// stride raises `RuntimeError: Storage size calculation overflowed with sizes=[5] and
/// strides=[-1]` on both ways. Padded, strided and broadcast (stride 0) layouts are taken.
pub(crate) const TORCH: FrameworkHolding = FrameworkHolding {
    name: "torch",
    holds_read_only: false,
    layouts: LayoutsTaken::NonNegativeStrides,
};

/// JAX: cannot be told read-only; compact layouts only.
///
/// Evidence (jax 0.10.2): `jax.dlpack.from_dlpack` calls `__dlpack__(stream=...)` without
/// `max_version` and refuses a versioned capsule (`INVALID_ARGUMENT: DLPack tensor must be a
/// capsule with name "dltensor", got "dltensor_versioned"`), so it takes only legacy capsules,
/// which cannot say read-only, and its documentation says its DLPack imports cannot be marked
/// immutable. It takes row-major and column-major compact layouts and refuses padded, gapped,
/// negative and broadcast strides (`UNIMPLEMENTED: Only DLPack tensors with trivial (compact)
/// striding are supported`).
pub(crate) const JAX: FrameworkHolding = FrameworkHolding {
    name: "jax",
    holds_read_only: false,
    layouts: LayoutsTaken::Compact,
};

/// TensorFlow: cannot be told read-only; row-major compact layouts only.
///
/// Evidence (TensorFlow 2.21): `tf.experimental.dlpack.from_dlpack` takes legacy `dltensor`
/// capsules only (`InvalidArgumentError` for `dltensor_versioned`), and refuses every layout
/// but row-major compact (`Invalid strides array from DLPack` for column-major, padded,
/// gapped and negative strides). `return_like` has no TensorFlow way (the `tensorflow` module
/// has no `from_dlpack`): an `EagerTensor` caller gets a `memoryview` ([`BUFFER`]); this entry
/// is `dlbridge.distributed`'s.
pub(crate) const TENSORFLOW: FrameworkHolding = FrameworkHolding {
    name: "tensorflow",
    holds_read_only: false,
    layouts: LayoutsTaken::RowMajorCompact,
};

/// PaddlePaddle: writes read-only memory; non-negative strides only.
///
/// Evidence (PaddlePaddle 3.3.1): `paddle.from_dlpack` asks for a versioned capsule, takes one
/// flagged READ_ONLY and makes a writable tensor (`add_` changes the producer's memory), as its
/// exchange table does. A negative stride makes `from_dlpack` raise `MemoryError` (it sizes the
/// storage from the strides), and the exchange table reads the wrong memory: a row-reversed
/// 3x4 result (strides `[4, -1]`) came back holding other values than the result's.
pub(crate) const PADDLE: FrameworkHolding = FrameworkHolding {
    name: "paddle",
    holds_read_only: false,
    layouts: LayoutsTaken::NonNegativeStrides,
};

/// CuPy: ignores READ_ONLY; any strides.
///
/// Evidence (CuPy's source, `cupy/_core/dlpack.pyx`, `DLPackMemory.__init__`: not installed
/// in the test environment, which has no GPU): a versioned tensor's READ_ONLY flag is not
/// read ("In principle we should raise an error if we got a readonly buffer. But that might
/// be disruptive"), and the array is a writable `cupy.ndarray` made with the DLPack strides as
/// they are (CuPy's arrays take negative strides).
pub(crate) const CUPY: FrameworkHolding = FrameworkHolding {
    name: "cupy",
    holds_read_only: false,
    layouts: LayoutsTaken::AnyStrides,
};

/// MXNet: cannot be told read-only, writes; row-major compact layouts only.
///
/// Evidence (MXNet 1.9.1, in `target/mxnet-venv`): `mx.nd.from_dlpack` takes legacy capsules
/// only (no `__dlpack__` objects, no versioned capsules) and its NDArray writes the producer's
/// memory (`nd += 100` changed the NumPy source); any layout but row-major compact raises
/// `MXNetError: Unsupported DLPack because MXNet only support compact`. `return_like` has no
/// MXNet way (no `from_dlpack` in the `mxnet` module).
pub(crate) const MXNET: FrameworkHolding = FrameworkHolding {
    name: "mxnet",
    holds_read_only: false,
    layouts: LayoutsTaken::RowMajorCompact,
};

/// pyarrow: holds read-only memory (its arrays are immutable); row-major compact layouts only.
///
/// Evidence (pyarrow 26): an array imported through the Arrow PyCapsule interface
/// (`pyarrow.array(obj)` over `__arrow_c_array__`, the way [`crate::return_like`] hands a
/// result to pyarrow, feature `arrow`) has immutable buffers (`buffers()[1].is_mutable` is
/// False), its `to_numpy()` and `to_numpy_ndarray()` views are read-only (a write raises
/// `ValueError`), and its versioned `__dlpack__` flags READ_ONLY. (Its legacy `__dlpack__`
/// cannot say so, and pyarrow hands it out all the same, for every array whatever its memory.)
/// An Arrow primitive array is one run of values (stride 1); an `arrow.fixed_shape_tensor`
/// array is one tensor per index of the first axis, each stored row-major after the one before.
/// The extension's `permutation` could describe rows compact in another axis order, but a
/// permuted column is not read by every Arrow reader (arrow-rs 60 knows the key by another
/// name), so a result goes over row-major or is compacted first.
pub(crate) const PYARROW: FrameworkHolding = FrameworkHolding {
    name: "pyarrow",
    holds_read_only: true,
    layouts: LayoutsTaken::RowMajorCompact,
};

/// dlbridge's classes (`dlbridge.Tensor`, and every class published by dlbridge-pyo3, which
/// has the writability hook): hold read-only memory, any strides.
///
/// Evidence: the class keeps the tensor with its flags, and every way out of it
/// (`__dlpack__`, the exchange table, the buffer protocol, the writability hook) gives
/// [`writability_for_python`]; `dlbridge.Tensor.readonly` says so, and a writable typed
/// argument refuses it.
pub(crate) const DLBRIDGE: FrameworkHolding = FrameworkHolding {
    name: "dlbridge",
    holds_read_only: true,
    layouts: LayoutsTaken::AnyStrides,
};

/// Python's buffer protocol: the `memoryview` a buffer-protocol caller (`memoryview`,
/// `bytes`, `bytearray`, `array.array`, TensorFlow's `EagerTensor`) gets. Holds read-only
/// memory, any strides.
///
/// Evidence: the view is `readonly` where the tensor is ([`crate::produce::get_buffer`]), and a write
/// into a read-only `memoryview` raises `TypeError`; PEP 3118 strides are any byte strides.
pub(crate) const BUFFER: FrameworkHolding = FrameworkHolding {
    name: "buffer",
    holds_read_only: true,
    layouts: LayoutsTaken::AnyStrides,
};

/// What each framework's tensors can hold of a result: one table ([`FRAMEWORK_HOLDINGS`]),
/// read by every way a tensor goes back to a framework ([`crate::return_like`]'s NumPy C API,
/// exchange-table, `from_dlpack`, Arrow PyCapsule and buffer-protocol ways, and
/// `dlbridge.distributed`'s receiver, which takes the table from the extension module).
///
/// Two questions per framework, each answered by the framework itself (the evidence is beside
/// each entry in the source, and `python/tests/interop/test_framework_table.py` asks each
/// installed framework again, so the table cannot drift from what the frameworks do):
///
/// - **Read-only memory.** Does a read-only tensor handed to the framework stay read-only
///   there? NumPy marks its array `writeable=False` and dlbridge's classes keep READ_ONLY; a
///   read-only `memoryview` refuses writes; pyarrow's arrays are immutable. PyTorch and
///   PaddlePaddle take a READ_ONLY tensor and write it (they have no read-only tensors); JAX,
///   TensorFlow and MXNet take only legacy capsules, which cannot say read-only; CuPy ignores
///   the flag. A framework that cannot hold read-only memory is handed a **copy** (compact,
///   writable, in Rust memory), never the read-only memory itself: zero-copy there would let
///   the caller write memory its owner promised no one writes (Arrow's immutable buffers, a
///   share of a tensor Rust still reads). "Read-only" is what every way out says: flagged
///   READ_ONLY, a legacy import of unknown writability, or memory other Rust handles read
///   ([`ManagedTensor::is_share`], [`ManagedTensor::live_shares`]).
/// - **Layouts.** Which strides does its import take? Anything NumPy can describe for NumPy
///   and dlbridge; non-negative strides for PyTorch and PaddlePaddle (PyTorch raises on a
///   negative one, PaddlePaddle's exchange table reads the wrong memory); a compact layout in
///   some dimension order for JAX; row-major compact for TensorFlow, MXNet and pyarrow. A
///   layout the framework refuses is **compacted** (one copy, row-major) before it is handed
///   over: faer's padded columns reach JAX as a compact copy instead of JAX's `UNIMPLEMENTED`
///   error.
///
/// A framework the table does not name ([`UNKNOWN_FRAMEWORK`]) is taken at its word on layouts
/// (its own error, if any) but handed read-only memory as a copy: no one can know whether it
/// honours READ_ONLY (PyTorch asks for versioned capsules, which carry the flag, and writes
/// anyway).
///
/// ```
/// use dlbridge_pyo3::framework_table::FRAMEWORK_HOLDINGS;
/// let holders: Vec<&str> = FRAMEWORK_HOLDINGS
///     .iter()
///     .filter(|holding| holding.holds_read_only)
///     .map(|holding| holding.name)
///     .collect();
/// assert_eq!(holders, ["numpy", "pyarrow", "dlbridge", "buffer"]);
/// ```
pub const FRAMEWORK_HOLDINGS: &[FrameworkHolding] = &[
    NUMPY, TORCH, JAX, TENSORFLOW, PADDLE, CUPY, MXNET, PYARROW, DLBRIDGE, BUFFER,
];

/// A framework the table does not name: read-only memory copied (whether it honours READ_ONLY
/// is unknown), any strides (it refuses, with its own error, what it cannot take).
///
/// ```
/// use dlbridge_pyo3::framework_table::UNKNOWN_FRAMEWORK;
/// assert!(!UNKNOWN_FRAMEWORK.holds_read_only);
/// ```
pub const UNKNOWN_FRAMEWORK: FrameworkHolding = FrameworkHolding {
    name: "unknown",
    holds_read_only: false,
    layouts: LayoutsTaken::AnyStrides,
};

/// The entry of the framework `name` in [`FRAMEWORK_HOLDINGS`], if it has one.
///
/// ```
/// use dlbridge_pyo3::framework_table::framework_holding;
/// assert_eq!(framework_holding("jax").unwrap().name, "jax");
/// assert!(framework_holding("mlx").is_none());
/// ```
pub fn framework_holding(name: &str) -> Option<&'static FrameworkHolding> {
    FRAMEWORK_HOLDINGS
        .iter()
        .find(|holding| holding.name == name)
}

/// The entry of the framework whose object a result is made through `like`'s exchange table:
/// PyTorch's or PaddlePaddle's (found by their rules: subclasses too), dlbridge's for a class
/// with the writability hook, else unknown.
pub(crate) fn for_exchange_table(info: &TypeInfo) -> &'static FrameworkHolding {
    if let Some(rules) = info.framework {
        return match rules.class_name() {
            "paddle.Tensor" => &PADDLE,
            _ => &TORCH,
        };
    }
    match info.borrowed_writability {
        BorrowedWritability::Hook(_) => &DLBRIDGE,
        _ => &UNKNOWN_FRAMEWORK,
    }
}

/// The entry of the framework whose `from_dlpack` makes the result, by the top-level module
/// of `like`'s type (`root`), or by `like`'s rules or hook where the module is not one the
/// table names (a subclass defined elsewhere).
pub(crate) fn for_module(info: &TypeInfo, root: &str) -> &'static FrameworkHolding {
    match root {
        "jax" => &JAX,
        "cupy" => &CUPY,
        "mxnet" => &MXNET,
        "tensorflow" => &TENSORFLOW,
        _ if info.numpy_array || root == "numpy" => &NUMPY,
        _ => {
            let by_type = for_exchange_table(info);
            if by_type == &UNKNOWN_FRAMEWORK {
                framework_holding(root).unwrap_or(&UNKNOWN_FRAMEWORK)
            } else {
                by_type
            }
        }
    }
}

/// `tensor`, made fit for `holding`'s framework: itself where the framework holds it as it is
/// ([`FrameworkHolding::needs_copy`]), else a compact, writable copy in Rust memory (under a
/// read claim: [`compact_copy`]). Device memory cannot be copied here: a device tensor that
/// needs a copy is refused with `BufferError`, saying why.
#[inline(always)]
pub(crate) fn fit_for(
    py: Python<'_>,
    tensor: ManagedTensor,
    holding: &FrameworkHolding,
) -> PyResult<ManagedTensor> {
    if !holding.needs_copy(&tensor) {
        return Ok(tensor);
    }
    copy_for(py, &tensor, holding)
}

/// [`fit_for`]'s copy, of a tensor `holding`'s framework cannot hold as it is.
#[cold]
#[inline(never)]
fn copy_for(
    py: Python<'_>,
    tensor: &ManagedTensor,
    holding: &FrameworkHolding,
) -> PyResult<ManagedTensor> {
    let view = tensor.view();
    let why = if !holding.holds_read_only && !writable_for_python(tensor) {
        let read_only = match view.writability() {
            Writability::ReadOnly => "flagged read-only".to_owned(),
            Writability::Unknown => {
                "a legacy import, which cannot say that its memory may be written".to_owned()
            }
            Writability::Writable => shared_reason(tensor),
        };
        format!(
            "the result is read-only ({read_only}), and {} tensors cannot hold read-only \
             memory (they would write it)",
            holding.name
        )
    } else {
        format!(
            "{} takes {} layouts only, and the result has shape {:?} strides {:?}",
            holding.name,
            holding.layouts.name(),
            view.shape(),
            view.strides()
        )
    };
    if !view.device().is_host_readable() {
        return Err(PyBufferError::new_err(format!(
            "cannot hand this result to {} without a copy, and dlbridge copies host memory \
             only (the result is on {}): {why}; return a copy made on the device",
            holding.name,
            view.device()
        )));
    }
    compact_copy(
        py,
        &view,
        &format!("the copy of a result for {} ({why})", holding.name),
    )
}
