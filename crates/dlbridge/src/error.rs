//! The one error type of the crate: every rejection names the field and the value.
//!
//! [`MAX_NDIM`], the bound validation puts on `ndim` (V1 in the `validate` module), is defined
//! here, beside the error that quotes it, so that validation can import both.

use std::fmt;

use crate::device::Device;
use crate::dtype::DataType;
use crate::flags::Flags;
use crate::version::Version;

/// The largest `ndim` accepted from a producer or for an export.
///
/// NumPy allows 64 dimensions; this limit is far above any real tensor and keeps a hostile
/// `ndim` from making validation walk gigabytes of "shape".
pub const MAX_NDIM: i32 = 1024;

/// Drops the payload of a panic caught at an `extern "C"` boundary (an export's deleter, an XLA
/// handler). The payload's own `Drop` could panic again, there, inside `extern "C"`: contained
/// too; only the payload of such a second panic is forgotten (leaked).
pub(crate) fn drop_panic_payload(payload: Box<dyn std::any::Any + Send>) {
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(payload)));
    if let Err(nested) = dropped {
        std::mem::forget(nested);
    }
}

/// Everything that can go wrong when importing, viewing or exporting a tensor.
///
/// Each message names the offending field and its value, e.g.
/// `DLTensor.shape[1] = -3: extents must not be negative`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A NULL pointer was passed where a managed tensor was expected.
    NullPointer {
        /// The C type that was expected.
        what: &'static str,
    },
    /// `version.major` is not 1: the deleter was called and no other field was read.
    UnsupportedVersion {
        /// The version the producer wrote.
        version: Version,
    },
    /// `ndim` is negative or above [`MAX_NDIM`].
    InvalidNdim {
        /// The value of `DLTensor.ndim`.
        ndim: i64,
    },
    /// `shape` is NULL although `ndim > 0`.
    NullShape {
        /// The value of `DLTensor.ndim`.
        ndim: i32,
    },
    /// An extent is negative.
    NegativeExtent {
        /// The dimension.
        dim: usize,
        /// Its extent.
        extent: i64,
    },
    /// The product of the extents does not fit in 64 bits.
    ElementCountOverflow {
        /// The dimension at which the product overflowed.
        dim: usize,
        /// Its extent.
        extent: i64,
    },
    /// The number of bytes the tensor spans does not fit in `isize`.
    ByteSizeOverflow {
        /// Number of elements.
        elements: u64,
        /// Element type.
        dtype: DataType,
    },
    /// `strides` is NULL with `ndim > 0` in a tensor of version 1.2 or later, which the
    /// standard forbids (before 1.2 NULL meant compact row-major and is accepted).
    NullStrides {
        /// The value of `DLTensor.ndim`.
        ndim: i32,
        /// The version the producer wrote.
        version: Version,
    },
    /// A tensor without strides (a legacy or pre-1.2 producer's NULL `strides`, read as
    /// compact row-major) whose compact strides do not fit in `i64`: possible only for
    /// sub-byte data types, whose byte size fits with more than `i64::MAX` elements.
    CompactStridesOverflow {
        /// The dimension whose extent takes the product of the extents after it past
        /// `i64::MAX`.
        dim: usize,
        /// Its extent.
        extent: i64,
    },
    /// A stride makes the offset of some element overflow.
    StrideOverflow {
        /// The dimension.
        dim: usize,
        /// Its stride.
        stride: i64,
    },
    /// The data type breaks a rule of the header (zero bits or lanes, a width its code does
    /// not allow).
    InvalidDataType {
        /// The data type as sent.
        dtype: DataType,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// `IS_SUBBYTE_TYPE_PADDED` is set on a data type whose lanes are a byte or wider.
    PaddedFlagOnWholeByteType {
        /// The data type as sent.
        dtype: DataType,
    },
    /// `data` is NULL although the tensor has elements.
    NullData {
        /// Number of elements.
        elements: u64,
    },
    /// `data + byte_offset` (or the address of some element) leaves the address space.
    AddressOverflow {
        /// The value of `DLTensor.data`.
        data: usize,
        /// The value of `DLTensor.byte_offset`.
        byte_offset: u64,
    },
    /// Typed access to memory the CPU cannot read.
    NotHostReadable {
        /// The tensor's device.
        device: Device,
    },
    /// The tensor is not on the device an access needs (a cudarc view: CUDA on the stream's
    /// device ordinal).
    NotOnDevice {
        /// The device the access needs.
        expected: Device,
        /// The tensor's device.
        actual: Device,
    },
    /// A device driver call failed (the `cudarc` feature).
    Driver {
        /// The call, as the driver names it.
        call: &'static str,
        /// The driver's status (`CUresult`), `None` where the call panicked in cudarc.
        status: Option<i32>,
    },
    /// The CUDA driver (`libcuda.so.1`) cannot be loaded or reports no device, and an
    /// operation on a device tensor needs it (the `cudarc` feature).
    NoDriver {
        /// What needed the driver.
        operation: &'static str,
    },
    /// Ordering streams, or copying to the host, would touch a stream in a way that breaks the
    /// CUDA graph being captured (the `cudarc` feature): the legacy default stream while any
    /// stream captures, a host synchronisation of a capturing stream, or a wait on work that
    /// was enqueued outside the capture and has not finished.
    StreamCapture {
        /// The stream the data is ready on (`0` and `1`: the legacy default stream).
        ready: usize,
        /// The stream that was to wait for it, `None` for a copy to the host.
        consumer: Option<usize>,
    },
    /// The element type asked for is not the tensor's data type.
    DataTypeMismatch {
        /// The data type of the Rust element type.
        requested: DataType,
        /// The tensor's data type.
        actual: DataType,
    },
    /// The Rust element type's [`crate::Element::DTYPE`] is not a whole-byte data type of
    /// `size_of::<T>()` bytes (an `Element` implemented for a sub-byte type, say): typed access
    /// would not know where each element is.
    ElementSize {
        /// The element type's data type.
        dtype: DataType,
        /// `size_of` of the Rust type.
        size: usize,
    },
    /// A slice was asked for but the tensor is not contiguous in the required order.
    NotContiguous {
        /// `"C"` (row-major) or `"C or F"`.
        order: &'static str,
        /// The tensor's shape.
        shape: Vec<i64>,
        /// The tensor's strides.
        strides: Vec<i64>,
    },
    /// Mutable access to a tensor flagged read-only.
    ReadOnly {
        /// The tensor's flags.
        flags: Flags,
    },
    /// Mutable access to a legacy tensor, whose producer cannot say whether its memory may be
    /// written (see [`crate::Writability::Unknown`]).
    WritabilityUnknown,
    /// Mutable access to a tensor whose memory another handle can still read: a share
    /// ([`crate::ManagedTensor::share_versioned`]) of a tensor in an `Arc`, or a
    /// tensor marked so ([`crate::ManagedTensor::mark_shared`]). Two
    /// `&mut [T]` (or a `&mut [T]` beside a `&[T]`) over one memory would be undefined
    /// behaviour, so such a share only hands out shared access; its DLPack flags are not
    /// changed (foreign consumers share memory as C code does).
    SharedMemory,
    /// A change of the device the data is taken to live on that would let the CPU read
    /// memory it could not read before (or move the tensor between device memories):
    /// [`crate::ManagedTensor::set_device`] only relabels host memory as another host memory.
    DeviceChange {
        /// The device the data is taken to live on now.
        from: Device,
        /// The device asked for.
        to: Device,
    },
    /// IS_COPIED was asked of an export whose memory other owners still share (an `Arc<[T]>`
    /// with other clones): the flag tells a consumer that the memory is its own.
    CopiedFlagOnSharedMemory,
    /// Mutable access to a layout in which two indices reach the same element.
    OverlappingLayout {
        /// The tensor's shape.
        shape: Vec<i64>,
        /// The tensor's strides.
        strides: Vec<i64>,
    },
    /// The first element's address is not aligned for the element type.
    Misaligned {
        /// The address of the first element.
        address: usize,
        /// The alignment the element type needs.
        align: usize,
    },
    /// A `bool` element holds a byte other than 0 or 1.
    InvalidBool {
        /// Memory offset of the element, in elements, from the first one.
        offset: isize,
        /// The byte found.
        value: u8,
    },
    /// A view of a fixed number of dimensions was asked of a tensor with another number.
    DimensionalityMismatch {
        /// The number of dimensions of the view asked for.
        expected: usize,
        /// The tensor's number of dimensions.
        actual: usize,
    },
    /// An export's strides do not have one entry per dimension.
    StridesLength {
        /// Number of dimensions of the shape.
        ndim: usize,
        /// Number of strides given.
        strides: usize,
    },
    /// An export's shape does not describe the buffer's elements exactly.
    ShapeMismatch {
        /// Elements described by the shape.
        elements: u64,
        /// Elements in the buffer.
        buffer_len: usize,
    },
    /// An export's shape and strides reach outside the buffer.
    OutOfBounds {
        /// Lowest element offset reached.
        min_offset: i64,
        /// Highest element offset reached.
        max_offset: i64,
        /// Elements in the buffer.
        buffer_len: usize,
    },
    /// A value does not fit the ABI's integer type (an extent above `i64::MAX`).
    ValueOutOfRange {
        /// The field.
        field: &'static str,
        /// The value.
        value: u128,
    },
    /// A read-only tensor cannot be exported as a legacy `DLManagedTensor`, which has no flags.
    ReadOnlyLegacyExport,
    /// A padded sub-byte tensor cannot be exported as a legacy `DLManagedTensor`, which has no
    /// flags: consumers would read it as packed (the float4 and float6 types: see
    /// [`DataType::legacy_sub_byte_padding`]).
    PaddedLegacyExport {
        /// The tensor's data type.
        dtype: DataType,
    },
    /// A packed sub-byte integer tensor (`uint1`, `int4`...) cannot be exported as a legacy
    /// `DLManagedTensor`: legacy consumers read those types as one byte per element (see
    /// [`DataType::legacy_sub_byte_padding`]), and would read past the packed data.
    PackedLegacyExport {
        /// The tensor's data type.
        dtype: DataType,
    },
    /// A legacy `DLManagedTensor` of a vector of sub-byte integers whose lanes do not fill
    /// whole bytes (`uint1x3`): without flags, neither packed nor padded storage can be told
    /// (see [`DataType::legacy_sub_byte_padding`]). Refused on import and on export.
    AmbiguousLegacySubByte {
        /// The tensor's data type.
        dtype: DataType,
    },
    /// The allocator could not give the bytes of a copy (a valid descriptor may describe
    /// terabytes; asked to copy them, the answer is this error, never an abort).
    OutOfMemory {
        /// The bytes asked for.
        bytes: u64,
    },
    /// A library bridge (the features `nalgebra`, `faer`, `image`, `arrow`) was asked for a
    /// value that the other library cannot express: a layout it has no strides for, a data
    /// type it lacks, an Arrow array with nulls.
    Unrepresentable {
        /// The library, as its crate is named (`"nalgebra"`, `"arrow"`).
        library: &'static str,
        /// What was asked for (`"a nalgebra matrix view"`).
        asked: &'static str,
        /// What was given, and why the library cannot express it.
        given: String,
    },
    /// An argument of a layout operation ([`crate::ManagedTensor::reshape`],
    /// [`crate::ManagedTensor::permute`], [`crate::ManagedTensor::insert_axis`]) that does not
    /// fit the tensor: a shape with more than one `-1`, a negative extent, another element
    /// count; axes that are not a permutation; an axis out of range.
    InvalidArgument {
        /// The operation (`"reshape"`).
        operation: &'static str,
        /// The argument (`"shape"`, `"axes"`, `"axis"`).
        argument: &'static str,
        /// Its value, as given (`"[4, -1, -1]"`).
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A reshape ([`crate::ManagedTensor::reshape`]) that no strides can express over the
    /// tensor's memory: the elements, read in row-major order, are not evenly spaced where the
    /// new shape needs them to be (NumPy copies there). Make the tensor compact first
    /// ([`crate::ManagedTensor::into_compact`]), then reshape it.
    ReshapeNeedsCopy {
        /// The tensor's shape.
        shape: Vec<i64>,
        /// The tensor's strides, in elements.
        strides: Vec<i64>,
        /// The shape asked for (with a `-1` resolved).
        new_shape: Vec<i64>,
    },
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn dims(values: &[i64]) -> String {
    let parts: Vec<String> = values.iter().map(i64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

fn dtype_fields(dtype: &DataType) -> String {
    format!(
        "{dtype} (code={}, bits={}, lanes={})",
        dtype.code.0, dtype.bits, dtype.lanes
    )
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NullPointer { what } => write!(f, "received a NULL {what} pointer"),
            Error::UnsupportedVersion { version } => write!(
                f,
                "DLManagedTensorVersioned.version = {version}: only major version 1 is \
                 supported; the deleter was called and no other field was read"
            ),
            Error::InvalidNdim { ndim } => {
                write!(
                    f,
                    "DLTensor.ndim = {ndim}: must be between 0 and {MAX_NDIM}"
                )
            }
            Error::NullShape { ndim } => {
                write!(f, "DLTensor.shape is NULL but DLTensor.ndim = {ndim}")
            }
            Error::NegativeExtent { dim, extent } => {
                write!(
                    f,
                    "DLTensor.shape[{dim}] = {extent}: extents must not be negative"
                )
            }
            Error::ElementCountOverflow { dim, extent } => write!(
                f,
                "DLTensor.shape[{dim}] = {extent}: the element count overflows 64 bits"
            ),
            Error::ByteSizeOverflow { elements, dtype } => write!(
                f,
                "{elements} elements of DLTensor.dtype = {dtype} span more bytes than fit in \
                 an isize"
            ),
            Error::NullStrides { ndim, version } => write!(
                f,
                "DLTensor.strides is NULL with DLTensor.ndim = {ndim} in a version {version} \
                 tensor; from DLPack 1.2 on strides are required"
            ),
            Error::CompactStridesOverflow { dim, extent } => write!(
                f,
                "DLTensor.strides is NULL and DLTensor.shape[{dim}] = {extent} takes the \
                 compact strides past i64"
            ),
            Error::StrideOverflow { dim, stride } => write!(
                f,
                "DLTensor.strides[{dim}] = {stride}: the offset of the last element overflows"
            ),
            Error::InvalidDataType { dtype, reason } => {
                write!(f, "DLTensor.dtype = {}: {reason}", dtype_fields(dtype))
            }
            Error::PaddedFlagOnWholeByteType { dtype } => write!(
                f,
                "flags has IS_SUBBYTE_TYPE_PADDED but DLTensor.dtype = {} is not a sub-byte \
                 type",
                dtype_fields(dtype)
            ),
            Error::NullData { elements } => write!(
                f,
                "DLTensor.data is NULL but the tensor has {elements} elements"
            ),
            Error::AddressOverflow { data, byte_offset } => write!(
                f,
                "DLTensor.data = {data:#x} with DLTensor.byte_offset = {byte_offset}: the \
                 tensor's addresses overflow"
            ),
            Error::NotHostReadable { device } => write!(
                f,
                "DLTensor.device = {device}: the CPU cannot read this memory; typed access \
                 needs CPU, CUDAHost, ROCMHost or CUDAManaged memory"
            ),
            Error::NotOnDevice { expected, actual } => write!(
                f,
                "DLTensor.device = {actual}: this access needs a tensor on {expected}"
            ),
            Error::Driver {
                call,
                status: Some(status),
            } => write!(
                f,
                "the device driver call {call} failed with CUresult {status}"
            ),
            Error::Driver { call, status: None } => {
                write!(f, "the device driver call {call} failed")
            }
            Error::NoDriver { operation } => write!(
                f,
                "{operation} needs the CUDA driver, which cannot be loaded here (libcuda.so.1 \
                 is missing or reports no device)"
            ),
            Error::StreamCapture {
                ready,
                consumer: Some(consumer),
            } => write!(
                f,
                "stream {consumer:#x} cannot be made to wait for stream {ready:#x}, where the \
                 tensor's data is ready, without breaking the CUDA graph being captured (the \
                 legacy default stream cannot be used during a capture, and work enqueued \
                 outside it cannot be waited on from inside); import the tensor on the \
                 capturing stream, or synchronise before the capture begins"
            ),
            Error::StreamCapture {
                ready,
                consumer: None,
            } => write!(
                f,
                "a host copy of a tensor whose data is ready on stream {ready:#x} needs a host \
                 synchronisation, which would break the CUDA graph being captured"
            ),
            Error::DataTypeMismatch { requested, actual } => write!(
                f,
                "DLTensor.dtype = {actual}, but elements of type {requested} were requested"
            ),
            Error::ElementSize { dtype, size } => write!(
                f,
                "Element::DTYPE = {dtype} of a Rust type of {size} bytes: typed access needs a \
                 whole-byte data type of exactly the Rust type's size"
            ),
            Error::NotContiguous {
                order,
                shape,
                strides,
            } => write!(
                f,
                "DLTensor.strides = {} with shape {} is not {order}-contiguous; use strided \
                 element access instead of a slice",
                dims(strides),
                dims(shape)
            ),
            Error::ReadOnly { flags } => write!(
                f,
                "flags = {flags}: the tensor is read-only and cannot be written"
            ),
            Error::WritabilityUnknown => f.write_str(
                "the tensor came in a legacy DLManagedTensor, which has no flags to say whether \
                 its memory may be written, so it is read-only (ManagedTensor::\
                 assume_legacy_writable vouches for a producer known to allow writes)",
            ),
            Error::SharedMemory => f.write_str(
                "this tensor's memory can still be read through another handle (a share of an \
                 Arc<ManagedTensor>, or a tensor imported from a Python object, whose memory \
                 other objects share), so it hands out shared access only; write into a copy \
                 (TensorView::to_compact_copy), take the tensor back from its Arc \
                 (Arc::try_unwrap) once the shares are gone, or, in a Python extension, take \
                 the argument as a TensorArgMut",
            ),
            Error::DeviceChange { from, to } => write!(
                f,
                "DLTensor.device = {from} cannot be taken to be {to}: only host memories (CPU, \
                 CUDAHost, ROCMHost, CUDAManaged) may be relabelled as one another, since any \
                 other change could let the CPU read memory it cannot \
                 (ManagedTensor::set_device_unchecked is the unsafe way for a caller who knows)"
            ),
            Error::CopiedFlagOnSharedMemory => f.write_str(
                "flags: IS_COPIED was asked for memory that other owners still share (an \
                 Arc<[T]> with other clones), but it tells a consumer that the memory is its \
                 own; export a copy, or leave the flag off",
            ),
            Error::OverlappingLayout { shape, strides } => write!(
                f,
                "DLTensor.strides = {} with shape {} let two indices reach the same element; \
                 mutable access refused",
                dims(strides),
                dims(shape)
            ),
            Error::Misaligned { address, align } => write!(
                f,
                "DLTensor.data + byte_offset = {address:#x} is not aligned to the {align} \
                 bytes its element type needs"
            ),
            Error::InvalidBool { offset, value } => write!(
                f,
                "bool element at offset {offset} holds the byte {value:#04x}, which is \
                 neither 0 nor 1"
            ),
            Error::DimensionalityMismatch { expected, actual } => write!(
                f,
                "ndim: a view of {expected} dimensions was asked of a tensor with {actual}"
            ),
            Error::StridesLength { ndim, strides } => write!(
                f,
                "strides has {strides} entries but the shape has {ndim} dimensions"
            ),
            Error::ShapeMismatch {
                elements,
                buffer_len,
            } => write!(
                f,
                "shape describes {elements} elements but the buffer holds {buffer_len}"
            ),
            Error::OutOfBounds {
                min_offset,
                max_offset,
                buffer_len,
            } => write!(
                f,
                "shape and strides reach element offsets {min_offset} to {max_offset}, outside \
                 a buffer of {buffer_len} elements"
            ),
            Error::ValueOutOfRange { field, value } => {
                write!(f, "{field} = {value} does not fit the DLPack ABI")
            }
            Error::PaddedLegacyExport { dtype } => write!(
                f,
                "a {dtype} tensor with IS_SUBBYTE_TYPE_PADDED cannot be exported as a legacy \
                 DLManagedTensor, which has no flags to say so"
            ),
            Error::PackedLegacyExport { dtype } => write!(
                f,
                "a packed {dtype} tensor cannot be exported as a legacy DLManagedTensor: legacy \
                 consumers read {dtype} as one byte per element; export it as \
                 DLManagedTensorVersioned"
            ),
            Error::AmbiguousLegacySubByte { dtype } => write!(
                f,
                "DLTensor.dtype = {} in a legacy DLManagedTensor: a vector of sub-byte integers \
                 that does not fill whole bytes has no agreed layout without the flags of \
                 DLManagedTensorVersioned (packed or padded)",
                dtype_fields(dtype)
            ),
            Error::Unrepresentable {
                library,
                asked,
                given,
            } => write!(f, "{library} cannot express {asked} of {given}"),
            Error::OutOfMemory { bytes } => write!(
                f,
                "out of memory: {bytes} bytes could not be allocated for a copy of the tensor"
            ),
            Error::ReadOnlyLegacyExport => f.write_str(
                "a read-only tensor cannot be exported as a legacy DLManagedTensor, which has \
                 no flags to say so; export it as DLManagedTensorVersioned",
            ),
            Error::InvalidArgument {
                operation,
                argument,
                value,
                reason,
            } => write!(
                f,
                "ManagedTensor::{operation}: {argument} = {value}: {reason}"
            ),
            Error::ReshapeNeedsCopy {
                shape,
                strides,
                new_shape,
            } => write!(
                f,
                "ManagedTensor::reshape: shape = {}: no strides reach the elements of shape {} \
                 with DLTensor.strides = {} in row-major order, so this reshape needs a copy; \
                 call into_compact() first",
                dims(new_shape),
                dims(shape),
                dims(strides)
            ),
        }
    }
}

impl std::error::Error for Error {}
