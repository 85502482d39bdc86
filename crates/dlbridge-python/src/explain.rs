//! `dlbridge.explain`: how `dlbridge.from_dlpack` imports an object and how dlbridge's typed
//! arguments read it, for a user who wants to know why a tensor was accepted, refused,
//! read-only or copied, and which path it took.

use dlbridge::{DataType, Device, ManagedTensor};
use dlbridge_pyo3::{
    explain::{ArgumentReport, ImportPath, ImportReport},
    explain_argument, from_dlpack_explained,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::creation::{import_options, vouch_legacy_writable};
use crate::pickling::Rebuilt;
use crate::tensor::Tensor;

/// What dlbridge does with `x`: a dict with the object's `type` and three entries, each either
/// what is seen (below) or why it is refused (`refused`: the exception's type and message, as
/// it would be raised).
///
/// - `import`: what `dlbridge.from_dlpack(x, device=device, copy=copy, stream=stream)` does,
///   done for real and released at once (nothing is kept; a raw capsule is consumed, as a
///   capsule can be once, so the argument entries then report it as consumed). `path`:
///   `"capsule"`, `"numpy"` (NumPy's struct), `"exchange"` (the type's C exchange table),
///   `"dlpack-versioned"` or `"dlpack-legacy"` (the capsule `__dlpack__` returned);
///   `negotiation`: the steps beyond the plain path, in order (`"exchange-disabled"`,
///   `"exchange-failed"`, `"exchange-device-with-streams"`, `"numpy-declined"`,
///   `"max-version-refused"`, `"keywords-refused"`, `"copy-refused"`,
///   `"device-from-dlpack-device"`, `"device-as-cpu"`, `"copied-here"`, `"copied-to-host"`);
///   `copied` and `copied_by` (`None`, `"producer"`: the tensor is flagged IS_COPIED, or
///   `"dlbridge"`: made here, for `copy=True` or as a host copy of device memory); `version`:
///   the DLPack version the tensor arrived with (`None` for a legacy one); `dtype`, `shape`,
///   `strides` in elements, `device`, `read_only`, and `ready_stream`: the device stream the
///   data is ready on (None for host memory, or where unknown); `writability`: why the
///   tensor is writable or read-only (the READ_ONLY flag, a legacy capsule, the caller's
///   `legacy_writable=True`, which `explain` takes as `from_dlpack` does).
/// - `argument` and `writable_argument`: how a Rust kernel's typed arguments (dlbridge-pyo3's
///   `TensorArg`, and `TensorArgMut` for writing) read `x`: `path` (`"exchange"`,
///   `"exchange-export"`, `"numpy"`, `"buffer"` or `"dlpack"`), `dtype`, `shape`, `strides`,
///   `device`, `read_only`, and `copied`: always False, arguments are views of the caller's
///   memory. Nothing is claimed or copied. `device` and `copy` do not apply to arguments.
/// - `rebuilt`: for a `dlbridge.Tensor` rebuilt from a pickle or a frame (Ray, Dask), how:
///   `from` (`"pickle"` or `"frame"`), `shared` (a view of the buffer it arrived in, or a
///   copy) and `reason` (why shared or copied, read-only or writable); None otherwise.
#[pyfunction]
#[pyo3(signature = (x, /, *, device=None, copy=None, stream=None, legacy_writable=false))]
pub(crate) fn explain<'py>(
    x: &Bound<'py, PyAny>,
    device: Option<&Bound<'py, PyAny>>,
    copy: Option<bool>,
    stream: Option<i64>,
    legacy_writable: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let py = x.py();
    let options = import_options(device, copy, stream)?;
    let kind = x.get_type();
    let producer = format!("{}.{}", kind.module()?, kind.qualname()?);
    // First: a capsule can be consumed once, and this entry is the one that is about it.
    let imported = from_dlpack_explained(x, &options).map(|(mut tensor, mut report)| {
        let vouched = legacy_writable && !tensor.is_versioned() && tensor.view().is_read_only();
        if vouched {
            vouch_legacy_writable(&mut tensor);
            report.read_only = tensor.view().is_read_only();
        }
        let writability = writability_reason(&tensor, report.path, vouched, &producer);
        drop(tensor);
        (report, writability)
    });
    let explained = PyDict::new(py);
    explained.set_item("type", producer)?;
    explained.set_item("import", import_described(py, imported)?)?;
    explained.set_item("argument", described(py, explain_argument(x, false))?)?;
    explained.set_item(
        "writable_argument",
        described(py, explain_argument(x, true))?,
    )?;
    let rebuilt = match x.cast::<Tensor>() {
        Ok(tensor) => tensor.get().rebuilt_from().cloned(),
        Err(_) => None,
    };
    explained.set_item("rebuilt", rebuilt_described(py, rebuilt.as_ref())?)?;
    Ok(explained)
}

/// `explain`'s `rebuilt` entry: None, or a dict of `from`, `shared` and `reason`.
fn rebuilt_described<'py>(
    py: Python<'py>,
    rebuilt: Option<&Rebuilt>,
) -> PyResult<Bound<'py, PyAny>> {
    let Some(rebuilt) = rebuilt else {
        return Ok(py.None().into_bound(py));
    };
    let dict = PyDict::new(py);
    dict.set_item("from", rebuilt.from)?;
    dict.set_item("shared", rebuilt.shared)?;
    dict.set_item("reason", &rebuilt.reason)?;
    Ok(dict.into_any())
}

/// An import's report as a dict, or its refusal.
fn import_described<'py>(
    py: Python<'py>,
    report: PyResult<(ImportReport, String)>,
) -> PyResult<Bound<'py, PyDict>> {
    let (report, writability) = match report {
        Ok(report) => report,
        Err(error) => return refusal(py, error),
    };
    let dict = seen(py, &report, |dict| {
        let steps = report.steps.iter().map(|step| step.name());
        dict.set_item("negotiation", PyTuple::new(py, steps)?)?;
        dict.set_item("copied", report.copied.is_some())?;
        dict.set_item("copied_by", report.copied.map(|copier| copier.name()))?;
        dict.set_item(
            "version",
            report.version.map(|version| (version.major, version.minor)),
        )
    })?;
    dict.set_item("ready_stream", report.ready_stream)?;
    dict.set_item("writability", writability)?;
    Ok(dict)
}

/// Why an imported tensor is writable or read-only, in the words of `explain`'s
/// `writability` entry; `producer` names the object's type.
fn writability_reason(
    tensor: &ManagedTensor,
    path: ImportPath,
    vouched: bool,
    producer: &str,
) -> String {
    let view = tensor.view();
    let numpy = producer == "numpy.ndarray";
    match (tensor.is_versioned(), view.is_read_only(), vouched) {
        (_, true, _) if numpy || path == ImportPath::NumpyStruct => {
            "read-only: the NumPy array is not writeable (its flags.writeable is False)".into()
        }
        (_, false, true) => "writable: vouched for by the caller (legacy_writable=True)".into(),
        (true, false, _) => "writable: a versioned tensor without the READ_ONLY flag".into(),
        (true, true, _) => format!("read-only: {producer} set the READ_ONLY flag"),
        (false, false, _) => "writable: a legacy tensor dlbridge made or was vouched for".into(),
        (false, true, _) => format!(
            "read-only: it came from {producer} in a legacy capsule, which cannot say whether \
             the producer allows writes (pass legacy_writable=True to vouch that it does)"
        ),
    }
}
/// One argument's report as a dict, or its refusal.
fn described<'py>(
    py: Python<'py>,
    report: PyResult<ArgumentReport>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = match report {
        Ok(report) => seen(py, &report, |_| Ok(()))?,
        Err(error) => return refusal(py, error),
    };
    dict.set_item("copied", false)?;
    Ok(dict)
}

/// What an import's report and an argument's both say, in the same words: the path they took
/// (the one vocabulary of `dlbridge_pyo3`'s explain module) and the tensor seen there.
trait SeenTensor {
    /// The path's name (`"exchange"`, `"numpy"`, `"dlpack-versioned"`, ...).
    fn path_name(&self) -> &'static str;
    /// The data type, the shape and strides (in elements), the device, and whether the memory
    /// may not be written.
    fn tensor(&self) -> (DataType, &[i64], &[i64], Device, bool);
}

// Both reports name these fields alike.
macro_rules! seen_tensor {
    ($($report:ty),*) => {$(
        impl SeenTensor for $report {
            fn path_name(&self) -> &'static str {
                self.path.name()
            }
            fn tensor(&self) -> (DataType, &[i64], &[i64], Device, bool) {
                (self.dtype, &self.shape, &self.strides, self.device, self.read_only)
            }
        }
    )*};
}

seen_tensor!(ImportReport, ArgumentReport);

/// The entries an import and an argument share, in the order `explain` shows them: `path`, the
/// report's own entries that follow it (`after_path`), then `dtype`, `shape`, `strides` (in
/// elements), `device` (`(device_type, device_id)`) and `read_only`.
fn seen<'py>(
    py: Python<'py>,
    report: &impl SeenTensor,
    after_path: impl FnOnce(&Bound<'py, PyDict>) -> PyResult<()>,
) -> PyResult<Bound<'py, PyDict>> {
    let (dtype, shape, strides, device, read_only) = report.tensor();
    let dict = PyDict::new(py);
    dict.set_item("path", report.path_name())?;
    after_path(&dict)?;
    dict.set_item("dtype", dtype.to_string())?;
    dict.set_item("shape", PyTuple::new(py, shape)?)?;
    dict.set_item("strides", PyTuple::new(py, strides)?)?;
    dict.set_item("device", (device.device_type.0, device.device_id))?;
    dict.set_item("read_only", read_only)?;
    Ok(dict)
}

/// `{"refused": "ExceptionType: message"}`.
fn refusal<'py>(py: Python<'py>, error: PyErr) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    let name = error.get_type(py).qualname()?;
    dict.set_item("refused", format!("{name}: {}", error.value(py)))?;
    Ok(dict)
}
