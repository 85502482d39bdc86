//! The reader of a safetensors file's header: every rule of the format checked before any
//! tensor is exported, so that no tensor can reach outside the file's data.
//!
//! A file is the header's length (8 bytes, little-endian), the header (a JSON object, UTF-8,
//! at most [`MAX_HEADER_BYTES`]), then the data. The object maps each tensor's name to its
//! `dtype`, `shape` and `data_offsets` (begin and end, in bytes from the start of the data);
//! `__metadata__`, if present, maps strings to strings. The rules, as the format's reference
//! implementation (the `safetensors` crate) enforces them, stricter where said:
//!
//! - every tensor's bytes are exactly what its type and shape take, in whole bytes;
//! - the tensors cover the data exactly: no gap, no overlap, nothing past the end;
//! - a name appears once (the JSON parsers of the reference implementations keep the last of
//!   a repeated key; here it is refused, since the entries would disagree about the bytes), and
//!   so does a key of `__metadata__` (refused as the writer refuses it);
//! - at most [`MAX_NDIM`](crate::error::MAX_NDIM) dimensions, each extent at most `i64::MAX`
//!   (this crate's bounds on every tensor: DLPack's shapes are `int64_t`; an empty tensor's
//!   size says nothing of its other extents, so they are checked on their own).
//!
//! Fields the format does not define are ignored, as the reference implementation does.

use std::collections::HashMap;
use std::fmt;

use serde::de::value::SeqAccessDeserializer;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::dtypes::dlpack_dtype;
use super::error::{MAX_HEADER_BYTES, SafetensorsError};
use crate::dtype::DataType;

/// The key of the header that holds the file's metadata rather than a tensor.
pub(super) const METADATA_KEY: &str = "__metadata__";

/// One tensor of a safetensors file, as its header describes it (checked against the format's
/// rules and the file's length).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    name: String,
    dtype_name: &'static str,
    dtype: DataType,
    shape: Vec<usize>,
    data_offsets: [u64; 2],
}

impl TensorInfo {
    /// The tensor's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its data type, as DLPack names it.
    pub fn dtype(&self) -> DataType {
        self.dtype
    }

    /// Its data type as the file names it: `"F32"`, `"BF16"`, `"F8_E4M3"`...
    pub fn dtype_name(&self) -> &'static str {
        self.dtype_name
    }

    /// Its shape (row-major: the format stores every tensor compact, in C order).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Where its bytes begin and end, counted from the start of the file's data.
    pub fn data_offsets(&self) -> [u64; 2] {
        self.data_offsets
    }

    /// Its size in bytes.
    pub fn byte_len(&self) -> u64 {
        self.data_offsets[1] - self.data_offsets[0]
    }
}

/// A file's header, checked: its metadata, and its tensors in the order of their bytes.
#[derive(Debug)]
pub(super) struct Header {
    /// Where the data begins in the file: 8 plus the header's length.
    pub(super) data_start: u64,
    /// `__metadata__`'s entries, in the file's order.
    pub(super) metadata: Vec<(String, String)>,
    /// The tensors, ordered by their data offsets.
    pub(super) tensors: Vec<TensorInfo>,
    /// Each tensor's index in `tensors`, by name.
    pub(super) index: HashMap<String, usize>,
}

/// The header's entries as the JSON lists them: every key is kept, so that a repeated name is
/// seen rather than merged.
struct Entries(Vec<(String, EntryValue)>);

/// An entry's value: `__metadata__`'s as [`MetadataValue`], a tensor's as a JSON value.
enum EntryValue {
    Metadata(MetadataValue),
    Tensor(Value),
}

/// `__metadata__`'s value as the JSON has it: an object's entries in the file's order, every
/// key kept (a `serde_json` object would sort them by key, and keep one of a repeated key);
/// any other value as it is.
enum MetadataValue {
    Object(Vec<(String, Value)>),
    Other(Value),
}

impl<'de> Deserialize<'de> for MetadataValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MetadataVisitor;
        impl<'de> Visitor<'de> for MetadataVisitor {
            type Value = MetadataValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MetadataValue, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, Value>()? {
                    entries.push(entry);
                }
                Ok(MetadataValue::Object(entries))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<MetadataValue, A::Error> {
                Value::deserialize(SeqAccessDeserializer::new(seq)).map(MetadataValue::Other)
            }
            fn visit_unit<E>(self) -> Result<MetadataValue, E> {
                Ok(MetadataValue::Other(Value::Null))
            }
            fn visit_bool<E>(self, value: bool) -> Result<MetadataValue, E> {
                Ok(MetadataValue::Other(value.into()))
            }
            fn visit_i64<E>(self, value: i64) -> Result<MetadataValue, E> {
                Ok(MetadataValue::Other(value.into()))
            }
            fn visit_u64<E>(self, value: u64) -> Result<MetadataValue, E> {
                Ok(MetadataValue::Other(value.into()))
            }
            fn visit_f64<E>(self, value: f64) -> Result<MetadataValue, E> {
                Ok(MetadataValue::Other(value.into()))
            }
            fn visit_str<E>(self, value: &str) -> Result<MetadataValue, E> {
                Ok(MetadataValue::Other(value.into()))
            }
        }
        deserializer.deserialize_any(MetadataVisitor)
    }
}

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor;
        impl<'de> Visitor<'de> for EntriesVisitor {
            type Value = Entries;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object of tensors")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value = if key == METADATA_KEY {
                        EntryValue::Metadata(map.next_value()?)
                    } else {
                        EntryValue::Tensor(map.next_value()?)
                    };
                    entries.push((key, value));
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(EntriesVisitor)
    }
}

/// Reads and checks the header of a whole file's bytes.
pub(super) fn parse(file: &[u8]) -> Result<Header, SafetensorsError> {
    let file_len = file.len() as u64;
    let Some(length_bytes) = file.first_chunk::<8>() else {
        return Err(SafetensorsError::FileTooShort { file_len });
    };
    let header_len = u64::from_le_bytes(*length_bytes);
    if header_len > MAX_HEADER_BYTES {
        return Err(SafetensorsError::HeaderTooLarge { header_len });
    }
    // At most 8 + 100 MB: no overflow, and the slice below is inside the file.
    let data_start = 8 + header_len;
    if data_start > file_len {
        return Err(SafetensorsError::HeaderPastEnd {
            header_len,
            file_len,
        });
    }
    let header_bytes = &file[8..data_start as usize];
    let text =
        std::str::from_utf8(header_bytes).map_err(|error| SafetensorsError::HeaderNotUtf8 {
            valid_up_to: error.valid_up_to(),
        })?;
    if !text.starts_with('{') {
        return Err(SafetensorsError::HeaderNotObject {
            first_byte: header_bytes.first().copied(),
        });
    }
    let Entries(entries) =
        serde_json::from_str(text).map_err(|error| SafetensorsError::HeaderSyntax {
            message: error.to_string(),
        })?;
    let data_len = file_len - data_start;

    let mut metadata = Vec::new();
    let mut tensors = Vec::with_capacity(entries.len());
    let mut seen_metadata = false;
    for (name, value) in entries {
        match value {
            EntryValue::Metadata(value) => {
                if seen_metadata {
                    return Err(SafetensorsError::DuplicateName { name });
                }
                seen_metadata = true;
                metadata = read_metadata(value)?;
            }
            EntryValue::Tensor(value) => tensors.push(read_tensor(name, value, data_len)?),
        }
    }
    let mut index = HashMap::with_capacity(tensors.len());
    for (position, tensor) in tensors.iter().enumerate() {
        if index.insert(tensor.name.clone(), position).is_some() {
            return Err(SafetensorsError::DuplicateName {
                name: tensor.name.clone(),
            });
        }
    }
    check_coverage(&mut tensors, data_len)?;
    for (position, tensor) in tensors.iter().enumerate() {
        index.insert(tensor.name.clone(), position);
    }
    Ok(Header {
        data_start,
        metadata,
        tensors,
        index,
    })
}

/// `__metadata__`: an object of strings, in the file's order, each key once (or `null`, read
/// as none).
fn read_metadata(value: MetadataValue) -> Result<Vec<(String, String)>, SafetensorsError> {
    let invalid = |field: String, problem: String| SafetensorsError::InvalidField {
        name: METADATA_KEY.to_owned(),
        field,
        problem,
    };
    let object = match value {
        MetadataValue::Other(Value::Null) => return Ok(Vec::new()),
        MetadataValue::Object(object) => object,
        MetadataValue::Other(other) => {
            return Err(invalid(
                METADATA_KEY.to_owned(),
                format!("{} is not an object of strings", describe(&other)),
            ));
        }
    };
    let mut keys = std::collections::HashSet::with_capacity(object.len());
    let mut metadata = Vec::with_capacity(object.len());
    for (key, value) in object {
        let Value::String(text) = value else {
            return Err(invalid(
                key,
                format!("{} is not a string", describe(&value)),
            ));
        };
        // As the writer refuses a key given twice: the two values would disagree.
        if !keys.insert(key.clone()) {
            return Err(invalid(key, "given twice".to_owned()));
        }
        metadata.push((key, text));
    }
    Ok(metadata)
}

/// One tensor's entry, checked alone: its fields, its size, its offsets inside the data.
fn read_tensor(name: String, value: Value, data_len: u64) -> Result<TensorInfo, SafetensorsError> {
    let invalid = |name: &str, field: &str, problem: String| SafetensorsError::InvalidField {
        name: name.to_owned(),
        field: field.to_owned(),
        problem,
    };
    let Value::Object(mut entry) = value else {
        return Err(invalid(
            &name,
            "entry",
            format!("{} is not an object", describe(&value)),
        ));
    };
    let dtype_name = match entry.remove("dtype") {
        Some(Value::String(text)) => text,
        Some(other) => {
            return Err(invalid(
                &name,
                "dtype",
                format!("{} is not a string", describe(&other)),
            ));
        }
        None => return Err(invalid(&name, "dtype", "missing".to_owned())),
    };
    let Some((dtype_name, dtype)) = dlpack_dtype(&dtype_name) else {
        return Err(SafetensorsError::UnknownDtype {
            name,
            dtype: dtype_name,
        });
    };
    let shape = match entry.remove("shape") {
        Some(Value::Array(extents)) => extents,
        Some(other) => {
            return Err(invalid(
                &name,
                "shape",
                format!("{} is not an array", describe(&other)),
            ));
        }
        None => return Err(invalid(&name, "shape", "missing".to_owned())),
    };
    if shape.len() > crate::error::MAX_NDIM as usize {
        return Err(SafetensorsError::TooManyDimensions {
            name,
            ndim: shape.len(),
        });
    }
    let mut extents = Vec::with_capacity(shape.len());
    for (axis, extent) in shape.iter().enumerate() {
        match extent.as_u64() {
            // DLPack's shapes are `int64_t`: a larger extent could not be exported, even in an
            // empty tensor (whose size, 0, says nothing of its other extents).
            Some(extent) if extent > i64::MAX as u64 => {
                return Err(invalid(
                    &name,
                    "shape",
                    format!(
                        "shape[{axis}] = {extent}: above {}, the largest extent DLPack holds",
                        i64::MAX
                    ),
                ));
            }
            Some(extent) => extents.push(extent),
            None => {
                return Err(invalid(
                    &name,
                    "shape",
                    format!(
                        "shape[{axis}] = {}: not a non-negative integer",
                        describe(extent)
                    ),
                ));
            }
        }
    }
    let offsets = match entry.remove("data_offsets") {
        Some(Value::Array(offsets)) => offsets,
        Some(other) => {
            return Err(invalid(
                &name,
                "data_offsets",
                format!("{} is not an array of two offsets", describe(&other)),
            ));
        }
        None => return Err(invalid(&name, "data_offsets", "missing".to_owned())),
    };
    let data_offsets = match offsets.as_slice() {
        [begin, end] => match (begin.as_u64(), end.as_u64()) {
            (Some(begin), Some(end)) => [begin, end],
            _ => {
                return Err(invalid(
                    &name,
                    "data_offsets",
                    format!(
                        "[{}, {}]: offsets are non-negative integers",
                        describe(begin),
                        describe(end)
                    ),
                ));
            }
        },
        _ => {
            return Err(invalid(
                &name,
                "data_offsets",
                format!("{} values: it takes two, begin and end", offsets.len()),
            ));
        }
    };

    let elements = extents
        .iter()
        .try_fold(1u64, |product, &extent| product.checked_mul(extent));
    let bits = elements.and_then(|count| count.checked_mul(u64::from(dtype.bits)));
    let (Some(elements), Some(bits)) = (elements, bits) else {
        return Err(SafetensorsError::SizeOverflow {
            name,
            shape: extents,
        });
    };
    if bits % 8 != 0 {
        return Err(SafetensorsError::PartialByte {
            name,
            dtype: dtype_name,
            elements,
        });
    }
    let [begin, end] = data_offsets;
    if end < begin {
        return Err(SafetensorsError::OffsetsReversed { name, data_offsets });
    }
    if end > data_len {
        return Err(SafetensorsError::DataPastEnd {
            name,
            data_offsets,
            data_len,
        });
    }
    if end - begin != bits / 8 {
        return Err(SafetensorsError::SizeMismatch {
            name,
            dtype: dtype_name,
            shape: extents,
            data_offsets,
            expected_bytes: bits / 8,
        });
    }
    // Every extent is at most the tensor's byte count (or the tensor is empty), which is at
    // most the file's length: it fits usize. An empty tensor's other extents need not.
    let Ok(shape) = extents
        .iter()
        .map(|&extent| usize::try_from(extent))
        .collect::<Result<Vec<usize>, _>>()
    else {
        return Err(SafetensorsError::SizeOverflow {
            name,
            shape: extents,
        });
    };
    Ok(TensorInfo {
        name,
        dtype_name,
        dtype,
        shape,
        data_offsets,
    })
}

/// Orders the tensors by their bytes and checks that they cover the data exactly, with no
/// gap and no overlap.
fn check_coverage(tensors: &mut [TensorInfo], data_len: u64) -> Result<(), SafetensorsError> {
    tensors.sort_by_key(|tensor| tensor.data_offsets);
    let mut covered = 0u64;
    let mut last: Option<&TensorInfo> = None;
    for tensor in tensors.iter() {
        let [begin, end] = tensor.data_offsets;
        if begin < covered {
            // Bytes are covered only once a tensor has covered them: `last` is that tensor.
            let (other, other_offsets) = last.map_or((String::new(), [0, covered]), |other| {
                (other.name.clone(), other.data_offsets)
            });
            return Err(SafetensorsError::Overlap {
                name: tensor.name.clone(),
                data_offsets: tensor.data_offsets,
                other,
                other_offsets,
            });
        }
        if begin > covered {
            return Err(SafetensorsError::Gap {
                begin: covered,
                end: begin,
            });
        }
        covered = end;
        if end > begin || last.is_none() {
            last = Some(tensor);
        }
    }
    if covered < data_len {
        return Err(SafetensorsError::Gap {
            begin: covered,
            end: data_len,
        });
    }
    Ok(())
}

/// A JSON value as a message shows it: short values as they are, long ones cut.
fn describe(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(40) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}
