//! Writing safetensors files from any host tensors: largest alignment first, then by name, the
//! header padded with spaces to a multiple of 8 bytes, so that every tensor of the file starts
//! aligned for its type. The format's reference writer (the `safetensors` crate) pads the same
//! way and orders by its list of types, widest first, which aligns every tensor too; within a
//! width the two orders differ (it writes U64 before I64), and both files are the same to a
//! reader.

use std::cmp::Reverse;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use super::dtypes::{safetensors_name, write_alignment};
use super::error::{MAX_HEADER_BYTES, SafetensorsError};
use super::header::METADATA_KEY;
use crate::managed::ManagedTensor;
use crate::view::TensorView;

/// One tensor to write: its header entry and its bytes.
struct Entry<'t> {
    name: String,
    dtype_name: &'static str,
    alignment: usize,
    shape: Vec<i64>,
    bytes: Bytes<'t>,
}

/// A tensor's compact bytes: its own memory, or a compact copy of a strided layout.
enum Bytes<'t> {
    Borrowed(&'t [u8]),
    Copied(ManagedTensor),
}

impl Entry<'_> {
    /// The tensor's compact bytes; an error names the tensor.
    fn bytes(&self) -> Result<&[u8], SafetensorsError> {
        match &self.bytes {
            Bytes::Borrowed(bytes) => Ok(bytes),
            Bytes::Copied(tensor) => {
                tensor
                    .view()
                    .as_bytes()
                    .map_err(|source| SafetensorsError::Tensor {
                        name: self.name.clone(),
                        source,
                    })
            }
        }
    }
}

/// Writes a safetensors file of `tensors` (any host tensors, any layout; strided ones are
/// written row-major through a compact copy) and `metadata` to `out`. Returns the bytes
/// written.
///
/// Refused before anything is written, each naming the tensor: a data type the format cannot
/// name (`complex128`, `float8_e3m4`, vectors...), memory not readable on the host, sub-byte
/// elements padded or not row-major, a repeated name or `__metadata__` as a name.
///
/// ```
/// use dlbridge::safetensors::{self, SafetensorsFile};
/// let weight = dlbridge::Export::new(vec![1i64, 2, 3], &[3]).into_versioned()?;
/// let mut bytes = Vec::new();
/// let written = safetensors::write(&mut bytes, [("w", weight.view())], &[])?;
/// assert_eq!(written as usize, bytes.len());
/// let file = SafetensorsFile::from_bytes(&bytes)?;
/// assert_eq!(file.tensor("w")?.view().as_slice::<i64>()?, &[1, 2, 3]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write<'t, N: AsRef<str>>(
    mut out: impl Write,
    tensors: impl IntoIterator<Item = (N, TensorView<'t>)>,
    metadata: &[(String, String)],
) -> Result<u64, SafetensorsError> {
    let mut entries = Vec::new();
    let mut names = HashSet::new();
    for (name, view) in tensors {
        let name = name.as_ref().to_owned();
        if name == METADATA_KEY {
            return Err(SafetensorsError::ReservedName { name });
        }
        if !names.insert(name.clone()) {
            return Err(SafetensorsError::DuplicateName { name });
        }
        entries.push(entry(name, view)?);
    }
    // Largest alignment first, then by name: every tensor starts aligned for its type once
    // the header's length is a multiple of 8.
    entries.sort_by(|left, right| {
        (Reverse(left.alignment), &left.name).cmp(&(Reverse(right.alignment), &right.name))
    });

    let header = header_text(&entries, metadata)?;
    let mut written = 0u64;
    let mut put = |bytes: &[u8]| {
        written += bytes.len() as u64;
        out.write_all(bytes)
            .map_err(SafetensorsError::io("write", Path::new("")))
    };
    put(&(header.len() as u64).to_le_bytes())?;
    put(header.as_bytes())?;
    for entry in &entries {
        put(entry.bytes()?)?;
    }
    out.flush()
        .map_err(SafetensorsError::io("write", Path::new("")))?;
    Ok(written)
}

/// Writes a safetensors file at `path` as [`write`](fn@write) does, into a new file beside it
/// that then replaces `path` (renamed over it): a file that is mapped
/// ([`SafetensorsFile::open`]) is never truncated under its mapping, and a failed write leaves
/// `path` as it was.
///
/// [`SafetensorsFile::open`]: super::SafetensorsFile::open
pub fn save<'t, N: AsRef<str>>(
    path: impl AsRef<Path>,
    tensors: impl IntoIterator<Item = (N, TensorView<'t>)>,
    metadata: &[(String, String)],
) -> Result<(), SafetensorsError> {
    let path = path.as_ref();
    let (temporary, file) = create_beside(path)?;
    let with_path = |error: SafetensorsError| match error {
        SafetensorsError::Io {
            operation, source, ..
        } => SafetensorsError::Io {
            operation,
            path: path.to_owned(),
            source,
        },
        other => other,
    };
    let result = write(BufWriter::new(&file), tensors, metadata)
        .map_err(with_path)
        .and_then(|_| file.sync_all().map_err(SafetensorsError::io("write", path)))
        .and_then(|()| {
            std::fs::rename(&temporary, path).map_err(SafetensorsError::io("replace", path))
        });
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

/// A new file beside `path`, named after it, this process and a counter.
fn create_beside(path: &Path) -> Result<(PathBuf, File), SafetensorsError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let file_name = path.file_name().unwrap_or_default().to_string_lossy();
    let temporary = path.with_file_name(format!(
        ".{file_name}.{}.{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temporary)
        .map_err(SafetensorsError::io("create", &temporary))?;
    Ok((temporary, file))
}

/// Checks one tensor and finds its compact bytes.
fn entry<'t>(name: String, view: TensorView<'t>) -> Result<Entry<'t>, SafetensorsError> {
    let dtype = view.dtype();
    let Some(dtype_name) = safetensors_name(dtype) else {
        return Err(SafetensorsError::UnsupportedDtype { name, dtype });
    };
    let device = view.device();
    if !device.is_host_readable() {
        return Err(SafetensorsError::NotOnHost { name, device });
    }
    let compact = view.is_c_contiguous();
    if dtype.is_sub_byte() && (view.flags().is_subbyte_type_padded() || !compact) {
        return Err(SafetensorsError::SubByteLayout { name, dtype });
    }
    let tensor_error = |name: &String, source| SafetensorsError::Tensor {
        name: name.clone(),
        source,
    };
    let bytes = if compact {
        Bytes::Borrowed(
            view.as_bytes()
                .map_err(|source| tensor_error(&name, source))?,
        )
    } else {
        Bytes::Copied(
            view.to_compact_copy()
                .map_err(|source| tensor_error(&name, source))?,
        )
    };
    Ok(Entry {
        name,
        dtype_name,
        alignment: write_alignment(dtype),
        shape: view.shape().to_vec(),
        bytes,
    })
}

/// The header's JSON, padded with spaces to a multiple of 8 bytes.
fn header_text(
    entries: &[Entry<'_>],
    metadata: &[(String, String)],
) -> Result<String, SafetensorsError> {
    let quoted = |text: &str| Value::String(text.to_owned()).to_string();
    let mut header = String::from("{");
    if !metadata.is_empty() {
        let mut keys = HashSet::new();
        header.push_str(&quoted(METADATA_KEY));
        header.push_str(":{");
        for (index, (key, value)) in metadata.iter().enumerate() {
            if !keys.insert(key) {
                return Err(SafetensorsError::InvalidField {
                    name: METADATA_KEY.to_owned(),
                    field: key.clone(),
                    problem: "given twice".to_owned(),
                });
            }
            if index > 0 {
                header.push(',');
            }
            header.push_str(&quoted(key));
            header.push(':');
            header.push_str(&quoted(value));
        }
        header.push('}');
    }
    let mut offset = 0u64;
    for entry in entries {
        if header.len() > 1 {
            header.push(',');
        }
        let len = entry.bytes()?.len() as u64;
        let shape: Vec<String> = entry
            .shape
            .iter()
            .map(|extent| extent.to_string())
            .collect();
        header.push_str(&format!(
            "{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
            quoted(&entry.name),
            entry.dtype_name,
            shape.join(","),
            offset,
            offset + len
        ));
        offset += len;
    }
    header.push('}');
    let padded = header.len().next_multiple_of(8);
    header.extend(std::iter::repeat_n(' ', padded - header.len()));
    if header.len() as u64 > MAX_HEADER_BYTES {
        return Err(SafetensorsError::HeaderTooLarge {
            header_len: header.len() as u64,
        });
    }
    Ok(header)
}
