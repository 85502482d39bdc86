//! The vocabulary of explain: how an import ([`from_dlpack_explained`](crate::from_dlpack_explained))
//! or a typed argument ([`explain_argument`](crate::explain_argument)) reached its tensor, in
//! the words both report it with (`dlbridge.explain` in Python shows the same names).
//!
//! | path name | an import ([`ImportPath`]) | an argument ([`ArgumentPath`]) |
//! |---|---|---|
//! | `"exchange"` | the type's C exchange table, an owned export | a descriptor borrowed from the table |
//! | `"exchange-export"` | | an owned export through the table (writability unknown otherwise) |
//! | `"numpy"` | NumPy's array struct | NumPy's array struct |
//! | `"buffer"` | | the buffer protocol |
//! | `"capsule"` | a raw capsule passed in | |
//! | `"dlpack-versioned"`, `"dlpack-legacy"` | `__dlpack__`, by the capsule it answered with | |
//! | `"dlpack"` | | `__dlpack__`, held for the call |
//!
//! Where the two reach a tensor the same way they say so with the same word (one table of
//! names). An import also reports its negotiation ([`ImportStep`]) and who copied
//! ([`Copier`]); both reports describe the tensor seen the same way (`dtype`, `device`,
//! `shape`, `strides`, `read_only`). The imports and typed arguments fill them in; nothing here
//! reads a tensor.

use dlbridge::{DataType, Device, Version};

/// The name of every path, for both reports.
mod path_name {
    /// A raw capsule passed in ([`super::ImportPath::Capsule`]).
    pub(super) const CAPSULE: &str = "capsule";
    /// NumPy's array struct, read directly.
    pub(super) const NUMPY: &str = "numpy";
    /// The type's C exchange table.
    pub(super) const EXCHANGE: &str = "exchange";
    /// An owned export through the exchange table, for a writable argument.
    pub(super) const EXCHANGE_EXPORT: &str = "exchange-export";
    /// The buffer protocol.
    pub(super) const BUFFER: &str = "buffer";
    /// `__dlpack__`, held for a typed argument's call.
    pub(super) const DLPACK: &str = "dlpack";
    /// `__dlpack__` answered with a versioned capsule.
    pub(super) const DLPACK_VERSIONED: &str = "dlpack-versioned";
    /// `__dlpack__` answered with a legacy capsule.
    pub(super) const DLPACK_LEGACY: &str = "dlpack-legacy";
}

/// The path an import took ([`from_dlpack_explained`](crate::from_dlpack_explained)), in the order they are tried. Only
/// [`ImportPath::ExchangeTable`] and [`ImportPath::NumpyStruct`] never go through a capsule.
///
/// ```
/// use dlbridge_pyo3::explain::ImportPath;
///
/// assert_eq!(ImportPath::DlpackLegacy.name(), "dlpack-legacy");
/// assert_eq!(ImportPath::ExchangeTable.to_string(), "exchange");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ImportPath {
    /// A raw `dltensor` / `dltensor_versioned` capsule passed in directly, no negotiation.
    Capsule,
    /// NumPy's array struct, read directly (exactly `numpy.ndarray`, a plain import).
    NumpyStruct,
    /// The type's DLPack 1.3 C exchange table (`managed_tensor_from_py_object_no_sync`;
    /// PyTorch, PaddlePaddle, dlbridge), a plain import: no `__dlpack__`, no capsule.
    ExchangeTable,
    /// `__dlpack__` answered with a versioned capsule (`dltensor_versioned`), which has flags:
    /// READ_ONLY and IS_COPIED are the producer's word.
    DlpackVersioned,
    /// `__dlpack__` answered with a legacy capsule (`dltensor`): an older producer, or one
    /// that writes only those (JAX, TensorFlow), whatever `max_version` asked. Read-only, since
    /// a legacy tensor cannot say that its memory may be written.
    DlpackLegacy,
}

impl ImportPath {
    /// The path's short name: `"capsule"`, `"numpy"`, `"exchange"`, `"dlpack-versioned"` or
    /// `"dlpack-legacy"`.
    pub fn name(self) -> &'static str {
        match self {
            ImportPath::Capsule => path_name::CAPSULE,
            ImportPath::NumpyStruct => path_name::NUMPY,
            ImportPath::ExchangeTable => path_name::EXCHANGE,
            ImportPath::DlpackVersioned => path_name::DLPACK_VERSIONED,
            ImportPath::DlpackLegacy => path_name::DLPACK_LEGACY,
        }
    }
}

impl std::fmt::Display for ImportPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One step of an import's negotiation beyond the plain path ([`ImportReport::steps`]): a fast
/// path left for `__dlpack__`, a retry for an older producer, a device or a copy seen to here.
///
/// ```
/// use dlbridge_pyo3::explain::ImportStep;
///
/// assert_eq!(ImportStep::MaxVersionRefused.name(), "max-version-refused");
/// assert!(ImportStep::CopiedHere.to_string().contains("copy"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ImportStep {
    /// The type publishes an exchange table, but `DLBRIDGE_NO_EXCHANGE_API` turned the fast
    /// path off.
    ExchangeDisabled,
    /// The exchange table raised (its error was dropped); `__dlpack__` was asked, whose answer
    /// is the producer's own.
    ExchangeFailed,
    /// The exchange table exported a tensor on a device with streams, but has no
    /// `current_work_stream` to say which stream its data is ready on: dropped, and taken
    /// again through `__dlpack__`, which synchronizes.
    ExchangeDeviceWithStreams,
    /// NumPy's struct was not read: a data type or layout that NumPy's `__dlpack__` converts
    /// or refuses, so that its answer is NumPy's.
    NumpyDeclined,
    /// `__dlpack__(max_version=...)` raised `TypeError` (an older producer): asked again
    /// without `max_version`.
    MaxVersionRefused,
    /// That raised `TypeError` too: asked again with no keyword at all (`copy` and `dl_device`
    /// are then done here).
    KeywordsRefused,
    /// `__dlpack_device__` named another device than the tensor's, and won (PyTorch's pinned
    /// memory: CUDAHost there, CPU in the tensor).
    DeviceFromDlpackDevice,
    /// Host-readable memory (pinned, managed) relabelled as the CPU device that was asked for:
    /// a view, no copy.
    DeviceAsCpu,
    /// dlbridge made the copy that `copy=True` asked for: the producer could not take the
    /// keyword, refused to copy, or did not flag its result IS_COPIED (PyTorch 2.15 forgets).
    CopiedHere,
    /// `__dlpack__(copy=True)` raised `BufferError` (the producer cannot copy, as tvm-ffi):
    /// asked again without `copy`, and the copy made here ([`CopiedHere`](Self::CopiedHere)).
    CopyRefused,
    /// The CPU was asked for and the producer gave CUDA memory: dlbridge copied it to the host
    /// on the stream its data is ready on (feature `cuda`).
    CopiedToHost,
}

impl ImportStep {
    /// The step's short name: `"exchange-disabled"`, `"exchange-failed"`,
    /// `"exchange-device-with-streams"`, `"numpy-declined"`, `"max-version-refused"`,
    /// `"keywords-refused"`, `"device-from-dlpack-device"`, `"device-as-cpu"`,
    /// `"copied-here"`, `"copy-refused"` or `"copied-to-host"`.
    pub fn name(self) -> &'static str {
        match self {
            ImportStep::ExchangeDisabled => "exchange-disabled",
            ImportStep::ExchangeFailed => "exchange-failed",
            ImportStep::ExchangeDeviceWithStreams => "exchange-device-with-streams",
            ImportStep::NumpyDeclined => "numpy-declined",
            ImportStep::MaxVersionRefused => "max-version-refused",
            ImportStep::KeywordsRefused => "keywords-refused",
            ImportStep::DeviceFromDlpackDevice => "device-from-dlpack-device",
            ImportStep::DeviceAsCpu => "device-as-cpu",
            ImportStep::CopiedHere => "copied-here",
            ImportStep::CopyRefused => "copy-refused",
            ImportStep::CopiedToHost => "copied-to-host",
        }
    }

    /// What the step means, in a sentence.
    pub fn description(self) -> &'static str {
        match self {
            ImportStep::ExchangeDisabled => {
                "the exchange table was not used: DLBRIDGE_NO_EXCHANGE_API turns it off"
            }
            ImportStep::ExchangeFailed => "the exchange table raised; __dlpack__ was asked",
            ImportStep::ExchangeDeviceWithStreams => {
                "the exchange table gave a tensor on a device with streams and has no \
                 current_work_stream; __dlpack__ was asked, which synchronizes"
            }
            ImportStep::NumpyDeclined => {
                "NumPy's struct was not read (a data type or layout NumPy's __dlpack__ \
                 converts or refuses); __dlpack__ was asked"
            }
            ImportStep::MaxVersionRefused => {
                "__dlpack__(max_version=...) raised TypeError; asked again without max_version"
            }
            ImportStep::KeywordsRefused => {
                "__dlpack__ raised TypeError again; asked again with no keyword"
            }
            ImportStep::DeviceFromDlpackDevice => {
                "the device from __dlpack_device__ replaced the one in the tensor"
            }
            ImportStep::DeviceAsCpu => "host-readable memory seen as the CPU device asked for",
            ImportStep::CopiedHere => "dlbridge made the copy that copy=True asked for",
            ImportStep::CopyRefused => {
                "__dlpack__(copy=True) raised BufferError; asked again without copy, to copy here"
            }
            ImportStep::CopiedToHost => {
                "the producer gave device memory where the CPU was asked for; dlbridge copied \
                 it to the host"
            }
        }
    }
}

impl std::fmt::Display for ImportStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.description())
    }
}

/// Who made the copy an import returned ([`ImportReport::copied`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Copier {
    /// The producer: its tensor is flagged IS_COPIED (asked with `copy=True`, or a copy to
    /// the device asked for).
    Producer,
    /// dlbridge, for `copy=True` ([`ImportStep::CopiedHere`]) or a host copy of device memory
    /// ([`ImportStep::CopiedToHost`]).
    Dlbridge,
}

impl Copier {
    /// `"producer"` or `"dlbridge"`.
    pub fn name(self) -> &'static str {
        match self {
            Copier::Producer => "producer",
            Copier::Dlbridge => "dlbridge",
        }
    }
}

impl std::fmt::Display for Copier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What an import did ([`from_dlpack_explained`](crate::from_dlpack_explained)): the path, the negotiation, whether the
/// memory is a copy, and the tensor that came out of it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportReport {
    /// How the tensor was reached.
    pub path: ImportPath,
    /// The negotiation's steps beyond the plain path, in order (empty when the first path
    /// tried gave the tensor as it is).
    pub steps: Vec<ImportStep>,
    /// Whether the memory is a private copy, and who made it; `None`: the producer's memory.
    pub copied: Option<Copier>,
    /// The DLPack version the tensor arrived with; `None` for a legacy tensor.
    pub version: Option<Version>,
    /// Whether the memory must not be written: flagged READ_ONLY, or a legacy tensor.
    pub read_only: bool,
    /// The data type.
    pub dtype: DataType,
    /// The device (after [`ImportStep::DeviceFromDlpackDevice`] and
    /// [`ImportStep::DeviceAsCpu`]).
    pub device: Device,
    /// The extents.
    pub shape: Vec<i64>,
    /// The strides, in elements.
    pub strides: Vec<i64>,
    /// The device stream the data is ready on ([`ManagedTensor::ready_stream`](dlbridge::ManagedTensor::ready_stream)): `None` for
    /// host memory and where it is unknown (`stream=-1`, a capsule, a producer that took no
    /// keywords).
    pub ready_stream: Option<usize>,
}

/// How a typed argument reached its tensor; the variants are in the order the sources are tried
/// ([how an argument is read](crate#how-an-argument-is-read-and-what-is-copied)).
/// None of them copies the elements: the argument is a view of the caller's memory.
///
/// ```
/// use dlbridge_pyo3::explain::ArgumentPath;
///
/// assert_eq!(ArgumentPath::NumpyStruct.name(), "numpy");
/// assert_eq!(ArgumentPath::Dlpack.to_string(), "dlpack");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ArgumentPath {
    /// A descriptor borrowed from the producer's DLPack 1.3 exchange table
    /// (`dltensor_from_py_object_no_sync`; PyTorch, PaddlePaddle, dlbridge), no allocation.
    ExchangeTable,
    /// An owned export through the exchange table (`managed_tensor_from_py_object_no_sync`):
    /// for a writable argument whose type cannot say otherwise whether it may be written.
    ExchangeExport,
    /// NumPy's array struct, read directly (exactly `numpy.ndarray`).
    NumpyStruct,
    /// The buffer protocol (other host-memory exporters: `array.array`, `memoryview`, ...).
    BufferProtocol,
    /// A full DLPack import through `__dlpack__`, held for the call: the reference path, for
    /// every other producer (JAX, TensorFlow, CuPy, ...) and whatever a fast path cannot take.
    Dlpack,
}

impl ArgumentPath {
    /// The path's short name: `"exchange"`, `"exchange-export"`, `"numpy"`, `"buffer"` or
    /// `"dlpack"`.
    pub fn name(self) -> &'static str {
        match self {
            ArgumentPath::ExchangeTable => path_name::EXCHANGE,
            ArgumentPath::ExchangeExport => path_name::EXCHANGE_EXPORT,
            ArgumentPath::NumpyStruct => path_name::NUMPY,
            ArgumentPath::BufferProtocol => path_name::BUFFER,
            ArgumentPath::Dlpack => path_name::DLPACK,
        }
    }
}

impl std::fmt::Display for ArgumentPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a typed argument sees of a Python object ([`explain_argument`](crate::explain_argument)): the path it took,
/// and the tensor as described there.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArgumentReport {
    /// How the tensor was reached.
    pub path: ArgumentPath,
    /// The data type.
    pub dtype: DataType,
    /// The device.
    pub device: Device,
    /// The extents.
    pub shape: Vec<i64>,
    /// The strides, in elements.
    pub strides: Vec<i64>,
    /// Whether the memory may not be written through this path (a `TensorArgMut` refuses it).
    pub read_only: bool,
}
