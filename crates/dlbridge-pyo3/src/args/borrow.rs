//! How a typed argument reaches the tensor behind a Python object: the one order of sources
//! ([`extract_with`]), each borrowing a descriptor for the call without copying, and the
//! reference path, a full import, that every other path answers as.

use std::sync::Arc;

use dlbridge::{DataType, ManagedTensor, TensorView, Writability};
use pyo3::prelude::*;

use crate::claims::Claim;
use crate::consume::import_for_argument;
use crate::dispatch::{TypeInfo, type_info};
use crate::errors::to_py_err;
use crate::exchange::{ExchangeApi, exchange_api_enabled};
use crate::explain::{ArgumentPath, ArgumentReport};
use crate::framework::Purpose;
use crate::host::buffer::{HeldBuffer, with_buffer_view};
use crate::host::numpy;
use crate::sources::dlpack::ImportOptions;
use crate::sources::table::{self, FromTable};
use crate::streams::consumer::ConsumerStream;

/// Where an argument's descriptor came from: borrowed from the producer through its exchange
/// API table (no allocation), or imported and owned for the call. One pointer wide beside its
/// tag (the owned tensor is in an `Arc` on those paths, which allocate anyway), so that
/// arguments stay small to move on the borrowed paths; the `Arc` lets the argument's owned
/// tensor be shared beyond the call ([`TensorArg::to_managed`](crate::TensorArg::to_managed)).
pub(crate) enum Source {
    /// A descriptor borrowed from the producer's exchange table.
    ExchangeTable,
    /// A descriptor read from NumPy's array struct.
    NumpyStruct,
    /// A buffer-protocol export.
    Buffer(#[allow(dead_code)] HeldBuffer),
    /// An owned export through the exchange table (`managed_tensor_from_py_object_no_sync`).
    ExchangeExport(Arc<ManagedTensor>),
    /// A full import ([`crate::from_dlpack`]'s negotiation), the reference path.
    Dlpack(Arc<ManagedTensor>),
}

impl Source {
    /// The path this source stands for.
    pub(crate) fn path(&self) -> ArgumentPath {
        match self {
            Source::ExchangeTable => ArgumentPath::ExchangeTable,
            Source::NumpyStruct => ArgumentPath::NumpyStruct,
            Source::Buffer(_) => ArgumentPath::BufferProtocol,
            Source::ExchangeExport(_) => ArgumentPath::ExchangeExport,
            Source::Dlpack(_) => ArgumentPath::Dlpack,
        }
    }
}

/// How an argument's memory was reached: whether it may be written, and the path that says
/// so (which names the reason when it may not: NumPy's writeable flag, a read-only buffer,
/// the READ_ONLY flag, a legacy capsule).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Access {
    pub(crate) writability: Writability,
    pub(crate) path: ArgumentPath,
}

impl Access {
    #[inline(always)]
    pub(crate) fn new(writability: Writability, path: ArgumentPath) -> Self {
        Access { writability, path }
    }
}

/// Borrows or imports the tensor behind `object`, and runs `make` on its validated view while
/// the descriptor is alive, with whether it is read-only: the typed arguments' order over the
/// sources ([`crate::sources`]):
///
/// 1. the producer's C exchange table, when its type publishes one that answers as its
///    `__dlpack__` does ([`table::borrow`]: a borrowed descriptor, no allocation, or an owned
///    export where a writable argument's writability would not be known otherwise);
/// 2. NumPy's array struct, for exactly `numpy.ndarray`;
/// 3. the buffer protocol (other host-memory exporters, no negotiation);
/// 4. the reference: `__dlpack__`'s negotiation ([`negotiate`](crate::sources::dlpack::negotiate),
///    as [`crate::from_dlpack`] imports) held for the call, of `x.detach()` for a tensor autograd
///    tracks (a read-only argument reads it as `detach()` does).
///
/// Whatever source answers, the framework's rules for the argument's purpose are applied
/// once, on the view it found, before `make` ([`FrameworkRules::admit`](crate::framework::FrameworkRules::admit)):
/// a writable argument is refused where the framework's in-place operations refuse, and every
/// argument refuses a lazy view as `__dlpack__` does (on the reference path, the import
/// refuses it, and the purpose's own rule is asked before). What a fast path declines goes to the
/// reference, so that a refusal is the producer's own (`BufferError` from `__dlpack__`).
#[inline(always)]
pub(crate) fn extract_with<R>(
    object: &Bound<'_, PyAny>,
    info: &TypeInfo,
    writable: bool,
    import_stream: Option<&ImportStream<'_>>,
    make: impl Fn(&TensorView<'_>, Access) -> PyResult<R>,
) -> PyResult<(Source, R)> {
    let purpose = if writable {
        Purpose::Write
    } else {
        Purpose::Read
    };
    // The rules, once, on whatever view a source found.
    let admitted = |view: &TensorView<'_>, access: Access| {
        if let Some(rules) = info.framework {
            rules.admit(object, Some(view), purpose)?;
        }
        make(view, access)
    };
    if let Some(api) = ExchangeApi::of(info) {
        // A type with a table takes no other fast path: its buffer export (if any) may name
        // its data type differently (dlbridge's own shows bfloat16 as uint16 bits); with the
        // table turned off it goes to the reference.
        if exchange_api_enabled() {
            let use_view = |view: &TensorView<'_>, writability, exported: bool| {
                let path = if exported {
                    ArgumentPath::ExchangeExport
                } else {
                    ArgumentPath::ExchangeTable
                };
                admitted(view, Access::new(writability, path))
            };
            match table::borrow(api, info, object, writable, &use_view)? {
                Some(FromTable::Borrowed(made)) => return Ok((Source::ExchangeTable, made)),
                Some(FromTable::Exported(tensor, made)) => {
                    return Ok((Source::ExchangeExport(Arc::new(tensor)), made));
                }
                None => {}
            }
        }
    } else if info.numpy_array {
        let make = |view: &TensorView<'_>, writability| {
            admitted(view, Access::new(writability, ArgumentPath::NumpyStruct))
        };
        // SAFETY: the type is exactly `numpy.ndarray`; the caller holds the array for the
        // call, and the view is used only inside `make`.
        if let Some(made) = unsafe { numpy::with_array_view(object, make) }? {
            return Ok((Source::NumpyStruct, made));
        }
    } else if let Some((buffer, made)) = with_buffer_view(object, |view, writability| {
        admitted(view, Access::new(writability, ArgumentPath::BufferProtocol))
    })? {
        return Ok((Source::Buffer(buffer), made));
    }
    // The reference import applies the lazy view's rule to what it imports (`x.detach()` keeps
    // `x`'s bits): only the purpose's own rule is asked of `object`, before it, not twice.
    let source = match info.framework {
        Some(rules) => {
            rules.admit_purpose(object, None, purpose)?;
            rules.untracked(object)?
        }
        None => object.clone(),
    };
    let stream = match import_stream {
        Some(stream_for) => stream_for(&source)?,
        None => ConsumerStream::default(),
    };
    let tensor = import_for_argument(&source, &ImportOptions::default().with_stream(stream))?;
    let made = {
        let view = tensor.view();
        make(&view, Access::new(view.writability(), ArgumentPath::Dlpack))?
    };
    Ok((Source::Dlpack(Arc::new(tensor)), made))
}

/// The stream a full import asks the producer's `__dlpack__` for, found for the object
/// imported (device arguments: their work stream); without one, the producer's current
/// stream ([`ConsumerStream::ProducerCurrent`]).
pub(crate) type ImportStream<'s> =
    dyn for<'py> Fn(&Bound<'py, PyAny>) -> PyResult<ConsumerStream> + 's;

/// Says how a typed argument would read `object` (`writable`: a `TensorArgMut`, whose
/// refusals of tensors autograd tracks apply), whatever its data type and layout, without
/// claiming the memory or copying anything: the path taken ([`ArgumentPath`]) and the tensor
/// seen there. Errors are those the argument would raise for any data type (a producer's
/// refusal, a tracked tensor while grad mode is on).
///
/// ```
/// use dlbridge_pyo3::{explain_argument, explain::ArgumentPath};
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     let bytes = pyo3::types::PyByteArray::new(py, &[1, 2, 3]);
///     let report = explain_argument(bytes.as_any(), false)?;
///     assert_eq!(report.path, ArgumentPath::BufferProtocol);
///     assert_eq!(report.shape, [3]);
///     assert!(!report.read_only);
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub fn explain_argument(object: &Bound<'_, PyAny>, writable: bool) -> PyResult<ArgumentReport> {
    inspect_with(object, writable, |_| Ok(())).map(|(report, ())| report)
}

/// Extracts `object` as [`explain_argument`] does, and runs `more` on the view while it is
/// alive.
fn inspect_with<E>(
    object: &Bound<'_, PyAny>,
    writable: bool,
    more: impl Fn(&TensorView<'_>) -> PyResult<E>,
) -> PyResult<(ArgumentReport, E)> {
    let info = type_info(object)?;
    let (_source, (report, extra)) = extract_with(object, info, writable, None, |view, access| {
        let report = ArgumentReport {
            path: access.path,
            dtype: view.dtype(),
            device: view.device(),
            shape: view.shape().to_vec(),
            strides: view.strides().to_vec(),
            read_only: !access.writability.allows_writes(),
        };
        Ok((report, more(view)?))
    })?;
    Ok((report, extra))
}

/// What a typed argument would see of an object, whatever its data type: for tests that
/// compare every path of typed arguments with the producer's own `__dlpack__`. Not a stable
/// API.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct ArgumentInspection {
    /// The path taken: `"exchange"` (a descriptor borrowed through the exchange table),
    /// `"exchange-export"` (an owned export through it), `"numpy"` (NumPy's array struct),
    /// `"buffer"` (the buffer protocol) or `"dlpack"` (a full import, the reference).
    pub path: &'static str,
    /// The data type.
    pub dtype: DataType,
    /// The device.
    pub device: dlbridge::Device,
    /// The extents.
    pub shape: Vec<i64>,
    /// The strides, in elements.
    pub strides: Vec<i64>,
    /// Whether the argument would be read-only (a `TensorArgMut` refuses it).
    pub read_only: bool,
    /// The address of the first element.
    pub data: usize,
    /// The elements' bytes in row-major order (host memory, whole-byte types), else `None`.
    pub bytes: Option<Vec<u8>>,
}

/// Runs the extraction of a typed argument (`writable`: a `TensorArgMut`'s, whose refusals
/// of tensors autograd tracks apply) on `object` and reports what it saw, with no check of
/// data type, dimensions or layout. The elements are read (copied) under a read claim in the
/// aliasing registry, so memory that a `TensorArgMut` is writing (on another thread, with the
/// GIL released) is refused with `ValueError` rather than read while it is written. Not a
/// stable API: for tests.
#[doc(hidden)]
pub fn inspect_argument(object: &Bound<'_, PyAny>, writable: bool) -> PyResult<ArgumentInspection> {
    let (report, (data, bytes)) = inspect_with(object, writable, |view| {
        let readable = view.device().is_host_readable() && view.dtype().size_in_bytes().is_some();
        // Held while the elements are copied.
        let _claim = readable
            .then(|| Claim::new(object.py(), view, false))
            .transpose()?;
        let bytes = if readable {
            let copy = view.to_compact_copy().map_err(to_py_err)?;
            let copy_view = copy.view();
            let length = copy_view.compact_byte_size() as usize;
            // SAFETY: a compact copy of `length` readable bytes, alive for this block.
            Some(unsafe {
                std::slice::from_raw_parts(copy_view.data_ptr().cast::<u8>(), length).to_vec()
            })
        } else {
            None
        };
        Ok((view.data_ptr() as usize, bytes))
    })?;
    Ok(ArgumentInspection {
        path: report.path.name(),
        dtype: report.dtype,
        device: report.device,
        shape: report.shape,
        strides: report.strides,
        read_only: report.read_only,
        data,
        bytes,
    })
}
