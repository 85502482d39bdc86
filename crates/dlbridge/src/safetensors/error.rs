//! What can go wrong reading or writing a safetensors file: one variant per rule of the format
//! a file can break, each message naming the tensor, the field and the value.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::device::Device;
use crate::dtype::DataType;

/// The largest header the reader accepts, in bytes: the limit of the format's reference
/// implementation (the `safetensors` crate), which keeps a hostile length from making the
/// reader parse gigabytes of JSON.
pub const MAX_HEADER_BYTES: u64 = 100_000_000;

/// Everything that can go wrong reading or writing a safetensors file.
///
/// A file that breaks a rule of the format is refused as a whole, before any tensor is
/// exported, with the tensor, the field and the value in the message, e.g.
/// `tensor "w": data_offsets [0, 10] hold 10 bytes, but F32 with shape [2, 2] takes 16`.
#[derive(Debug)]
#[non_exhaustive]
pub enum SafetensorsError {
    /// The file could not be opened, read, mapped or written.
    Io {
        /// What was being done: "open", "map", "read", "write"...
        operation: &'static str,
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// The file is shorter than the 8 bytes of its header's length.
    FileTooShort {
        /// The file's length in bytes.
        file_len: u64,
    },
    /// The header's length is above [`MAX_HEADER_BYTES`].
    HeaderTooLarge {
        /// The length the file's first 8 bytes give.
        header_len: u64,
    },
    /// The header's length reaches past the end of the file (a truncated file).
    HeaderPastEnd {
        /// The length the file's first 8 bytes give.
        header_len: u64,
        /// The file's length in bytes.
        file_len: u64,
    },
    /// The header is not UTF-8.
    HeaderNotUtf8 {
        /// Bytes of the header that are valid UTF-8 before the first that is not.
        valid_up_to: usize,
    },
    /// The header does not begin with `{`.
    HeaderNotObject {
        /// The header's first byte, if it has one.
        first_byte: Option<u8>,
    },
    /// The header is not the JSON the format describes: the parser's message, with its line
    /// and column.
    HeaderSyntax {
        /// serde_json's message.
        message: String,
    },
    /// Two entries of the header have the same name.
    DuplicateName {
        /// The name.
        name: String,
    },
    /// An entry of the header lacks a field, or a field has the wrong kind of value.
    InvalidField {
        /// The tensor's name (`__metadata__` for the metadata).
        name: String,
        /// The field: `dtype`, `shape`, `data_offsets`, or a metadata key.
        field: String,
        /// What is wrong, with the value.
        problem: String,
    },
    /// A tensor's `dtype` is not a safetensors type name.
    UnknownDtype {
        /// The tensor.
        name: String,
        /// The value of its `dtype` field.
        dtype: String,
    },
    /// A tensor's shape has more dimensions than [`MAX_NDIM`](crate::error::MAX_NDIM).
    TooManyDimensions {
        /// The tensor.
        name: String,
        /// Its number of dimensions.
        ndim: usize,
    },
    /// A tensor's size in bytes overflows (its shape's product, or that times its width).
    SizeOverflow {
        /// The tensor.
        name: String,
        /// Its shape.
        shape: Vec<u64>,
    },
    /// A tensor of a sub-byte type whose bits do not fill whole bytes (the format stores every
    /// tensor in whole bytes: 3 float4s are refused).
    PartialByte {
        /// The tensor.
        name: String,
        /// Its data type's safetensors name.
        dtype: &'static str,
        /// Its number of elements.
        elements: u64,
    },
    /// A tensor's `data_offsets` end before they begin.
    OffsetsReversed {
        /// The tensor.
        name: String,
        /// Its `data_offsets`.
        data_offsets: [u64; 2],
    },
    /// A tensor's `data_offsets` reach past the end of the file's data.
    DataPastEnd {
        /// The tensor.
        name: String,
        /// Its `data_offsets`.
        data_offsets: [u64; 2],
        /// Bytes of data the file holds after its header.
        data_len: u64,
    },
    /// A tensor's bytes are not what its data type and shape take.
    SizeMismatch {
        /// The tensor.
        name: String,
        /// Its data type's safetensors name.
        dtype: &'static str,
        /// Its shape.
        shape: Vec<u64>,
        /// Its `data_offsets`.
        data_offsets: [u64; 2],
        /// The bytes its data type and shape take.
        expected_bytes: u64,
    },
    /// Two tensors' bytes overlap.
    Overlap {
        /// The tensor whose bytes begin inside another's.
        name: String,
        /// Its `data_offsets`.
        data_offsets: [u64; 2],
        /// The tensor it overlaps.
        other: String,
        /// That tensor's `data_offsets`.
        other_offsets: [u64; 2],
    },
    /// Bytes of the data that no tensor covers (the format allows no gaps).
    Gap {
        /// Where the uncovered bytes begin, in the data.
        begin: u64,
        /// Where they end.
        end: u64,
    },
    /// No tensor of that name in the file.
    NotFound {
        /// The name asked for.
        name: String,
    },
    /// Writable tensors were asked for while read-only tensors of the same bytes are alive.
    StillLent {
        /// How many tensors exported from the file are alive.
        tensors: usize,
    },
    /// A tensor to write has a data type the format cannot name.
    UnsupportedDtype {
        /// The tensor.
        name: String,
        /// Its data type.
        dtype: DataType,
    },
    /// A tensor to write is not in host memory.
    NotOnHost {
        /// The tensor.
        name: String,
        /// Its device.
        device: Device,
    },
    /// A tensor to write stores sub-byte elements padded, or not compactly: the format stores
    /// them packed, in row-major order.
    SubByteLayout {
        /// The tensor.
        name: String,
        /// Its data type.
        dtype: DataType,
    },
    /// A name the format reserves (`__metadata__`) given to a tensor.
    ReservedName {
        /// The name.
        name: String,
    },
    /// The tensor could not be exported or read (this crate's validation).
    Tensor {
        /// The tensor.
        name: String,
        /// Why.
        source: crate::error::Error,
    },
}

impl SafetensorsError {
    /// The error of an I/O `operation` on `path` (empty where the caller wrote to a stream), as
    /// `map_err` takes it.
    pub(super) fn io(operation: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_owned();
        move |source| SafetensorsError::Io {
            operation,
            path,
            source,
        }
    }
}

/// Writes a shape as `[2, 3]`.
struct Shape<'a>(&'a [u64]);

impl fmt::Display for Shape<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[")?;
        for (index, extent) in self.0.iter().enumerate() {
            if index > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{extent}")?;
        }
        write!(f, "]")
    }
}

impl fmt::Display for SafetensorsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use SafetensorsError::*;
        match self {
            Io {
                operation,
                path,
                source,
            } if path.as_os_str().is_empty() => write!(f, "{operation}: {source}"),
            Io {
                operation,
                path,
                source,
            } => write!(f, "{operation} {}: {source}", path.display()),
            FileTooShort { file_len } => write!(
                f,
                "the file has {file_len} bytes: a safetensors file begins with the 8 bytes of \
                 its header's length"
            ),
            HeaderTooLarge { header_len } => write!(
                f,
                "header length = {header_len} bytes: above the format's limit of \
                 {MAX_HEADER_BYTES}"
            ),
            HeaderPastEnd {
                header_len,
                file_len,
            } => write!(
                f,
                "header length = {header_len} bytes, but the file has {file_len} bytes: \
                 truncated, or not a safetensors file"
            ),
            HeaderNotUtf8 { valid_up_to } => write!(
                f,
                "the header is not UTF-8 (its byte {valid_up_to} is the first that is not)"
            ),
            HeaderNotObject { first_byte } => match first_byte {
                Some(byte) => write!(
                    f,
                    "the header begins with byte {byte:#04x}, not '{{': not a safetensors file"
                ),
                None => write!(f, "the header is empty: it must be a JSON object"),
            },
            HeaderSyntax { message } => {
                write!(f, "the header is not a safetensors header: {message}")
            }
            DuplicateName { name } => write!(f, "the header names {name:?} twice"),
            InvalidField {
                name,
                field,
                problem,
            } => write!(f, "tensor {name:?}: {field}: {problem}"),
            UnknownDtype { name, dtype } => write!(
                f,
                "tensor {name:?}: dtype {dtype:?} is not a safetensors data type"
            ),
            TooManyDimensions { name, ndim } => write!(
                f,
                "tensor {name:?}: shape has {ndim} dimensions, more than {}",
                crate::error::MAX_NDIM
            ),
            SizeOverflow { name, shape } => write!(
                f,
                "tensor {name:?}: shape {} overflows a size in bytes",
                Shape(shape)
            ),
            PartialByte {
                name,
                dtype,
                elements,
            } => write!(
                f,
                "tensor {name:?}: {elements} elements of {dtype} do not fill whole bytes"
            ),
            OffsetsReversed { name, data_offsets } => write!(
                f,
                "tensor {name:?}: data_offsets [{}, {}] end before they begin",
                data_offsets[0], data_offsets[1]
            ),
            DataPastEnd {
                name,
                data_offsets,
                data_len,
            } => write!(
                f,
                "tensor {name:?}: data_offsets [{}, {}] reach past the file's {data_len} bytes \
                 of data (a truncated file?)",
                data_offsets[0], data_offsets[1]
            ),
            SizeMismatch {
                name,
                dtype,
                shape,
                data_offsets,
                expected_bytes,
            } => write!(
                f,
                "tensor {name:?}: data_offsets [{}, {}] hold {} bytes, but {dtype} with shape {} \
                 takes {expected_bytes}",
                data_offsets[0],
                data_offsets[1],
                data_offsets[1] - data_offsets[0],
                Shape(shape)
            ),
            Overlap {
                name,
                data_offsets,
                other,
                other_offsets,
            } => write!(
                f,
                "tensor {name:?}: data_offsets [{}, {}] overlap those of {other:?}, [{}, {}]",
                data_offsets[0], data_offsets[1], other_offsets[0], other_offsets[1]
            ),
            Gap { begin, end } => write!(
                f,
                "bytes {begin}..{end} of the data belong to no tensor (the format allows no \
                 gaps)"
            ),
            NotFound { name } => write!(f, "no tensor named {name:?} in the file"),
            StillLent { tensors } => write!(
                f,
                "{tensors} tensors exported from this file are alive and read its bytes: \
                 writable tensors of the same bytes need them gone"
            ),
            UnsupportedDtype { name, dtype } => {
                write!(f, "tensor {name:?}: dtype {dtype} has no safetensors name")
            }
            NotOnHost { name, device } => write!(
                f,
                "tensor {name:?}: on {device}, not in host memory: copy it to the host first"
            ),
            SubByteLayout { name, dtype } => write!(
                f,
                "tensor {name:?}: {dtype} elements must be packed and row-major to be written"
            ),
            ReservedName { name } => write!(
                f,
                "tensor name {name:?} is reserved by the format for the file's metadata"
            ),
            Tensor { name, source } => write!(f, "tensor {name:?}: {source}"),
        }
    }
}

impl std::error::Error for SafetensorsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SafetensorsError::Io { source, .. } => Some(source),
            SafetensorsError::Tensor { source, .. } => Some(source),
            _ => None,
        }
    }
}
