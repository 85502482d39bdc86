//! Arbitrary bytes -> `dlbridge::safetensors`: the header reader, the tensors exported over a
//! file's bytes, and the writer.
//!
//! The first byte chooses how the rest is read. Below 64 the rest is the file itself (the JSON
//! parser and the header's framing at work); otherwise the rest is a stream of choices
//! (`choices.rs`) that builds a file: the header's length (true, or a lie: short, long, past
//! the file, above the format's limit), `__metadata__` (an object of strings, `null`, a key
//! given twice, or a value of the wrong kind; first or last, sometimes both), then up to
//! seven entries, each a name (`t0`, `t1`... or a repeated one, one spelled with a JSON
//! escape, `__metadata__`, Unicode, empty), a `dtype` (any of the format's 22 names mostly,
//! else an unknown name or a value of the wrong kind), a `shape` (mostly small extents, else
//! huge, past `i64::MAX`, negative, fractional or strings; up to 1025 dimensions) and
//! `data_offsets` (true ones, laid end to end, or a lie: one byte long or short, shifted,
//! reversed, restarting at 0, huge, three values, negative), fields in any order, unknown ones
//! too; the data (the input's bytes, as long as the offsets say, or longer, or shorter). So
//! most inputs reach the checks of sizes, offsets and coverage, not only the JSON parser.
//!
//! The oracle:
//! - `from_bytes` returns a file or an error; an error's message is not empty (its `Display`,
//!   `Debug` and sources never panic);
//! - a file built without a lie is accepted, with exactly the tensors, data types, shapes,
//!   offsets and metadata (in the file's order) it was built with;
//! - an accepted file's tensors cover its data exactly: sorted by offsets, each beginning
//!   where the one before ends, from 0 to the data's length (the sum of their sizes); each
//!   size is what its data type (the harness's own table of widths) and shape take;
//! - every tensor exports (`tensor(name)`): read-only, on the CPU, the header's data type and
//!   shape, and `view().as_bytes()` is exactly the input's bytes at `8 + header_len + begin`
//!   (compared byte by byte, so that AddressSanitizer sees any read outside the file);
//! - the tensors written back with `write`, with the metadata, read back as the same names,
//!   data types, shapes, bytes and metadata, every tensor aligned for its type; writing that
//!   file again gives the same bytes;
//! - `into_tensors(true)` is refused (`StillLent`, counting the one tensor alive) while a
//!   tensor of the file is alive, and succeeds once none is: each tensor writable, exclusive, over its own bytes
//!   (each filled with its own byte through its pointer, then all read back: no two share a
//!   byte).
//!
//! `DLBRIDGE_FUZZ_DEBUG=1` prints the header an input builds.
#![no_main]

use dlbridge::safetensors::{self, SafetensorsError, SafetensorsFile};
use dlbridge::{Device, ManagedTensor, Writability};
use libfuzzer_sys::fuzz_target;

// `extent` and `stride` are the descriptor targets' choices.
#[allow(dead_code)]
mod choices;
use choices::Choices;

/// The format's data types and their widths in bits (the `safetensors` crate's list).
const DTYPES: [(&str, u64); 22] = [
    ("BOOL", 8),
    ("F4", 4),
    ("F6_E2M3", 6),
    ("F6_E3M2", 6),
    ("U8", 8),
    ("I8", 8),
    ("F8_E5M2", 8),
    ("F8_E4M3", 8),
    ("F8_E8M0", 8),
    ("F8_E4M3FNUZ", 8),
    ("F8_E5M2FNUZ", 8),
    ("I16", 16),
    ("U16", 16),
    ("F16", 16),
    ("BF16", 16),
    ("I32", 32),
    ("U32", 32),
    ("F32", 32),
    ("C64", 64),
    ("F64", 64),
    ("I64", 64),
    ("U64", 64),
];

/// The most data bytes the builder makes.
const MAX_DATA: u64 = 1 << 16;

fn bits_of(dtype_name: &str) -> u64 {
    DTYPES
        .iter()
        .find(|(name, _)| *name == dtype_name)
        .map(|&(_, bits)| bits)
        .unwrap_or_else(|| panic!("{dtype_name:?} is not one of the format's data types"))
}

/// One tensor as the builder wrote it, when it wrote it truthfully.
#[derive(Debug, PartialEq)]
struct Built {
    name: String,
    dtype_name: &'static str,
    shape: Vec<usize>,
    data_offsets: [u64; 2],
}

/// A file built from choices, and what it holds when nothing in it lies (`honest`).
struct Building {
    file: Vec<u8>,
    honest: bool,
    tensors: Vec<Built>,
    metadata: Vec<(String, String)>,
}

/// `__metadata__`'s value: its JSON, and the entries it holds when it holds them truthfully.
fn metadata_value(c: &mut Choices) -> (String, Option<Vec<(String, String)>>) {
    let pairs = |list: &[(&str, &str)]| {
        list.iter()
            .map(|&(k, v)| (k.to_owned(), v.to_owned()))
            .collect::<Vec<_>>()
    };
    match c.byte() % 10 {
        0..=2 => (
            r#"{"format":"pt"}"#.to_owned(),
            Some(pairs(&[("format", "pt")])),
        ),
        3 => (
            r#"{"b":"2","a":"\u00e9\"","":""}"#.to_owned(),
            Some(pairs(&[("b", "2"), ("a", "\u{e9}\""), ("", "")])),
        ),
        4 => ("{}".to_owned(), Some(Vec::new())),
        5 => ("null".to_owned(), Some(Vec::new())),
        // A repeated key (JSON parsers keep the last; dlbridge refuses it, as its writer does).
        6 => (r#"{"k":"1","k":"2"}"#.to_owned(), None),
        7 => (r#"{"k":1}"#.to_owned(), None),
        8 => ("[]".to_owned(), None),
        _ => (r#""pt""#.to_owned(), None),
    }
}

/// An extent: small mostly, else huge (refused unless another extent is 0; past `i64::MAX`,
/// refused always) or not an unsigned integer at all (refused).
fn extent(c: &mut Choices, honest: &mut bool) -> (String, Option<u64>) {
    match c.byte() % 24 {
        0..=17 => {
            let e = u64::from(c.byte() % 6);
            (e.to_string(), Some(e))
        }
        18 => {
            let e = 1u64 << (c.byte() % 64);
            (e.to_string(), Some(e))
        }
        19 => {
            let e = u64::MAX - u64::from(c.byte() % 2);
            (e.to_string(), Some(e))
        }
        20 => {
            let e = i64::MAX as u64 + u64::from(c.byte() % 2);
            (e.to_string(), Some(e))
        }
        21 => {
            *honest = false;
            let text = ["-1", "1.5", "\"2\"", "null", "18446744073709551616", "1e3"]
                [usize::from(c.byte() % 6)];
            (text.to_owned(), None)
        }
        _ => {
            let e = c.u64();
            (e.to_string(), Some(e))
        }
    }
}

/// Builds a file from the input's choices.
fn build(c: &mut Choices) -> Building {
    let mut honest = true;
    let mut tensors = Vec::new();
    let mut metadata = Vec::new();
    let mut fields: Vec<String> = Vec::new();

    let metadata_where = c.byte() % 4; // 0: none, 1: first, 2: last, 3: first and last
    let metadata_json = if metadata_where > 0 {
        let (json, entries) = metadata_value(c);
        match entries {
            Some(entries) => metadata = entries,
            None => honest = false,
        }
        if metadata_where == 3 {
            honest = false;
        }
        Some(json)
    } else {
        None
    };
    if metadata_where % 2 == 1 {
        fields.push(format!(
            "\"__metadata__\":{}",
            metadata_json.clone().unwrap()
        ));
    }

    let count = c.byte() % 8;
    let mut cursor = 0u64;
    for index in 0..count {
        // The name.
        let (name_json, name) = match c.byte() % 16 {
            0..=11 => (format!("\"t{index}\""), format!("t{index}")),
            12 if index > 0 => {
                honest = false;
                ("\"t0\"".to_owned(), "t0".to_owned())
            }
            // "t\u0030" is "t0": a repeated name the text does not show.
            13 if index > 0 => {
                honest = false;
                ("\"t\\u0030\"".to_owned(), "t0".to_owned())
            }
            14 => {
                honest = false;
                ("\"__metadata__\"".to_owned(), "__metadata__".to_owned())
            }
            _ => match c.byte() % 3 {
                0 => (format!("\"\\u00e9{index}\""), format!("\u{e9}{index}")),
                1 if index == 0 => ("\"\"".to_owned(), String::new()),
                _ => {
                    let long = "n".repeat(usize::from(c.byte()));
                    (format!("\"{long}{index}\""), format!("{long}{index}"))
                }
            },
        };

        // The data type.
        let dtype_choice = c.byte();
        let (dtype_json, dtype_name): (String, Option<&'static str>) = match dtype_choice % 32 {
            0..=27 => {
                let (name, _) = DTYPES[usize::from(c.byte()) % DTYPES.len()];
                (format!("\"{name}\""), Some(name))
            }
            28 => ("\"C128\"".to_owned(), None),
            29 => ("\"f32\"".to_owned(), None),
            30 => ("32".to_owned(), None),
            _ => (String::new(), None),
        };
        if dtype_name.is_none() {
            honest = false;
        }

        // The shape.
        let ndim = match c.byte() % 32 {
            0..=29 => usize::from(c.byte() % 5),
            30 => 1024 + usize::from(c.byte() % 2),
            _ => usize::from(c.byte() % 17),
        };
        if ndim > 1024 {
            honest = false;
        }
        let mut extents_json = Vec::with_capacity(ndim);
        let mut extents = Some(Vec::with_capacity(ndim));
        for _ in 0..ndim {
            // Past the first few dimensions, extents are 1 (a 1024-dimensional shape).
            let (text, value) = if extents_json.len() < 8 {
                extent(c, &mut honest)
            } else {
                ("1".to_owned(), Some(1))
            };
            extents_json.push(text);
            match (value, extents.as_mut()) {
                (Some(value), Some(list)) => list.push(value),
                _ => extents = None,
            }
        }
        let shape_json = match c.byte() % 32 {
            0..=30 => format!("[{}]", extents_json.join(",")),
            _ => {
                honest = false;
                "{}".to_owned()
            }
        };

        // The size its data type and shape take, in bits, where the harness can say.
        let bits = match (dtype_name, &extents) {
            (Some(dtype), Some(extents)) => extents
                .iter()
                .try_fold(1u64, |n, &e| n.checked_mul(e))
                .and_then(|n| n.checked_mul(bits_of(dtype))),
            _ => None,
        };
        // Extents DLPack cannot hold (above i64::MAX), or a size that overflows or does not
        // fill whole bytes, or more data than the builder makes: a file that must be refused,
        // or one the harness does not model.
        let size = match bits {
            Some(bits) if bits % 8 == 0 && bits / 8 <= MAX_DATA => Some(bits / 8),
            _ => {
                honest = false;
                None
            }
        };
        if extents
            .as_ref()
            .is_some_and(|extents| extents.iter().any(|&e| e > i64::MAX as u64))
        {
            honest = false;
        }
        let size = size.unwrap_or(u64::from(c.byte() % 16));

        // The offsets: laid end to end, or a lie.
        let (begin, end) = (cursor, cursor + size);
        let offsets_json = match c.byte() % 32 {
            0..=21 => {
                cursor = end;
                format!("[{begin},{end}]")
            }
            choice => {
                honest = false;
                match choice {
                    22 => {
                        cursor = end + 1;
                        format!("[{begin},{}]", end + 1)
                    }
                    23 => {
                        cursor = end.saturating_sub(1);
                        format!("[{begin},{}]", end.saturating_sub(1))
                    }
                    24 => {
                        cursor = end + 1;
                        format!("[{},{}]", begin + 1, end + 1)
                    }
                    25 => {
                        cursor = end.saturating_sub(1).max(begin.saturating_sub(1));
                        format!("[{},{}]", begin.saturating_sub(1), end.saturating_sub(1))
                    }
                    26 => {
                        cursor = end;
                        format!("[{end},{begin}]")
                    }
                    27 => {
                        cursor = cursor.max(size);
                        format!("[0,{size}]")
                    }
                    28 => format!("[{begin},{}]", u64::MAX - u64::from(c.byte() % 2)),
                    29 => {
                        cursor = end;
                        format!("[{begin},{end},{end}]")
                    }
                    30 => format!("[-1,{end}]"),
                    _ => format!("[{begin}]"),
                }
            }
        };

        // The fields, in any order, sometimes with one the format does not define.
        let mut entry = vec![
            (!dtype_json.is_empty()).then(|| format!("\"dtype\":{dtype_json}")),
            Some(format!("\"shape\":{shape_json}")),
            Some(format!("\"data_offsets\":{offsets_json}")),
        ];
        let order = c.byte();
        entry.rotate_left(usize::from(order % 3));
        if order & 0x80 != 0 {
            entry.swap(0, 1);
        }
        if order & 0x40 != 0 {
            entry.push(Some("\"extra\":[1,{\"x\":null}]".to_owned()));
        }
        let entry: Vec<String> = entry.into_iter().flatten().collect();
        fields.push(format!("{name_json}:{{{}}}", entry.join(",")));

        if let (Some(dtype_name), Some(extents)) = (dtype_name, extents) {
            tensors.push(Built {
                name,
                dtype_name,
                shape: extents.iter().map(|&e| e as usize).collect(),
                data_offsets: [begin, end],
            });
        }
    }
    if metadata_where >= 2 {
        fields.push(format!("\"__metadata__\":{}", metadata_json.unwrap()));
    }
    // The entries in any order: the reader orders the tensors by their bytes.
    let rotate = usize::from(c.byte());
    if !fields.is_empty() {
        let len = fields.len();
        fields.rotate_left(rotate % len);
    }

    let mut header = format!("{{{}}}", fields.join(",")).into_bytes();
    match c.byte() % 32 {
        0..=25 => {}
        26 => {
            honest = false;
            header.insert(0, b' ');
        }
        27 => {
            honest = false;
            let at = usize::from(c.byte()) % header.len();
            header.insert(at, 0xff);
        }
        28 => {
            honest = false;
            let at = usize::from(c.byte()) % header.len();
            header.truncate(at);
        }
        29 => {
            honest = false;
            header.extend_from_slice(b"x");
        }
        _ => header.extend_from_slice(b"\t\n\r"),
    }
    // Padded with spaces, as writers pad it to 8 bytes.
    header.extend(std::iter::repeat_n(b' ', usize::from(c.byte() % 8)));

    let mut data_len = cursor.min(MAX_DATA);
    match c.byte() % 32 {
        0..=27 => {}
        28 => data_len += u64::from(c.byte() % 4) + 1,
        29 => data_len = data_len.saturating_sub(u64::from(c.byte() % 4) + 1),
        30 => data_len = 0,
        _ => data_len = u64::from(c.byte()),
    }
    if data_len != cursor {
        honest = false;
    }

    let header_len = header.len() as u64;
    let length_field = match c.byte() % 32 {
        0..=27 => header_len,
        choice => {
            honest = false;
            match choice {
                28 => header_len + u64::from(c.byte() % 8) + 1,
                29 => header_len.saturating_sub(u64::from(c.byte() % 8) + 1),
                30 => safetensors::MAX_HEADER_BYTES + 1,
                _ => c.u64(),
            }
        }
    };

    let mut file = length_field.to_le_bytes().to_vec();
    file.extend_from_slice(&header);
    let rest = c.0;
    file.extend((0..data_len as usize).map(|i| {
        if rest.is_empty() {
            i as u8
        } else {
            rest[i % rest.len()]
        }
    }));
    Building {
        file,
        honest,
        tensors,
        metadata,
    }
}

/// An error's message and sources, formatted (which must not panic) and not empty.
fn check_error(error: &SafetensorsError) {
    let message = error.to_string();
    assert!(!message.is_empty(), "an empty message for {error:?}");
    let _ = format!("{error:?}");
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        assert!(!inner.to_string().is_empty());
        source = inner.source();
    }
}

/// The bytes of `tensor`, read through `as_bytes`, which must be `expected`.
fn check_bytes(tensor: &ManagedTensor, expected: &[u8], name: &str) {
    let bytes = tensor
        .view()
        .as_bytes()
        .unwrap_or_else(|error| panic!("tensor {name:?}: as_bytes: {error}"));
    assert_eq!(bytes.len(), expected.len(), "tensor {name:?}: byte length");
    // Every byte read, so that a read outside the file's bytes is AddressSanitizer's.
    assert!(
        bytes == expected,
        "tensor {name:?}: other bytes than the file's"
    );
}

fn run(bytes: &[u8]) {
    let debug = std::env::var_os("DLBRIDGE_FUZZ_DEBUG").is_some();
    let Some((&mode, rest)) = bytes.split_first() else {
        return;
    };
    let building = if mode < 64 {
        None
    } else {
        Some(build(&mut Choices(rest)))
    };
    let file_bytes: &[u8] = building.as_ref().map_or(rest, |b| b.file.as_slice());
    if debug {
        match file_bytes.first_chunk::<8>() {
            Some(length) => eprintln!(
                "header length field {}, file of {} bytes, header: {}",
                u64::from_le_bytes(*length),
                file_bytes.len(),
                String::from_utf8_lossy(&file_bytes[8..]),
            ),
            None => eprintln!("a file of {} bytes", file_bytes.len()),
        }
    }

    let file = match SafetensorsFile::from_bytes(file_bytes) {
        Ok(file) => file,
        Err(error) => {
            if debug {
                eprintln!("refused: {error}");
            }
            check_error(&error);
            if let Some(building) = &building {
                assert!(
                    !building.honest,
                    "a file built without a lie was refused: {error}"
                );
            }
            return;
        }
    };
    check_file(file, file_bytes, building.as_ref());
}

fn check_file(file: SafetensorsFile, file_bytes: &[u8], building: Option<&Building>) {
    let header_len = u64::from_le_bytes(*file_bytes.first_chunk::<8>().unwrap());
    let data_start = 8 + header_len as usize;
    let data = &file_bytes[data_start..];
    assert!(!file.is_mapped());

    // The tensors cover the data exactly, in the order of their bytes, each as large as its
    // data type and shape say.
    let mut covered = 0u64;
    let mut names = std::collections::HashSet::new();
    for info in file.tensors() {
        let [begin, end] = info.data_offsets();
        assert_eq!(
            begin, covered,
            "{info:?}: not where the previous tensor ends"
        );
        assert!(end >= begin);
        assert_eq!(info.byte_len(), end - begin);
        covered = end;
        let bits = bits_of(info.dtype_name());
        assert_eq!(
            u64::from(info.dtype().bits) * u64::from(info.dtype().lanes),
            bits,
            "{info:?}: the DLPack type's width"
        );
        // An empty tensor's other extents may be anything; a tensor with elements has a
        // count that fits 64 bits.
        let elements = if info.shape().contains(&0) {
            0
        } else {
            info.shape()
                .iter()
                .try_fold(1u128, |n, &e| n.checked_mul(e as u128))
                .unwrap_or_else(|| panic!("{info:?}: the element count overflows"))
        };
        assert_eq!(elements * u128::from(bits), u128::from(info.byte_len()) * 8);
        assert!(names.insert(info.name().to_owned()), "{info:?} twice");
        assert_eq!(file.info(info.name()), Some(info));
    }
    assert_eq!(
        covered,
        data.len() as u64,
        "the tensors do not cover the data"
    );
    assert!(file.info("no such tensor \u{0}").is_none());
    check_error(&file.tensor("no such tensor \u{0}").err().unwrap());

    if let Some(building) = building.filter(|b| b.honest) {
        let mut built: Vec<&Built> = building.tensors.iter().collect();
        built.sort_by_key(|b| (b.data_offsets, b.name.clone()));
        let mut read: Vec<&dlbridge::safetensors::TensorInfo> = file.tensors().iter().collect();
        read.sort_by_key(|info| (info.data_offsets(), info.name().to_owned()));
        assert_eq!(built.len(), read.len());
        for (built, info) in built.iter().zip(&read) {
            assert_eq!(built.name, info.name());
            assert_eq!(built.dtype_name, info.dtype_name());
            assert_eq!(built.shape, info.shape());
            assert_eq!(built.data_offsets, info.data_offsets());
        }
        assert_eq!(
            building.metadata,
            file.metadata(),
            "the metadata, in the file's order"
        );
    }

    // Every tensor exports, read-only, over the file's bytes.
    let mut readers = Vec::with_capacity(file.tensors().len());
    for info in file.tensors() {
        let tensor = file
            .tensor(info.name())
            .unwrap_or_else(|error| panic!("{info:?} was accepted but does not export: {error}"));
        let view = tensor.view();
        assert_eq!(view.dtype(), info.dtype());
        assert_eq!(view.device(), Device::CPU);
        assert!(view.is_read_only());
        assert!(view.is_c_contiguous());
        assert!(view
            .shape()
            .iter()
            .map(|&e| e as usize)
            .eq(info.shape().iter().copied()));
        assert_eq!(view.compact_byte_size(), info.byte_len());
        let [begin, end] = info.data_offsets();
        check_bytes(&tensor, &data[begin as usize..end as usize], info.name());
        readers.push((info.name().to_owned(), tensor));
    }

    // Written back and read again: the same tensors and metadata.
    let mut written = Vec::new();
    let count = safetensors::write(
        &mut written,
        readers
            .iter()
            .map(|(name, tensor)| (name.as_str(), tensor.view())),
        file.metadata(),
    )
    .unwrap_or_else(|error| panic!("the file's own tensors could not be written: {error}"));
    assert_eq!(count, written.len() as u64);
    let again = SafetensorsFile::from_bytes(&written)
        .unwrap_or_else(|error| panic!("a written file was refused: {error}"));
    assert_eq!(again.metadata(), file.metadata());
    assert_eq!(again.tensors().len(), file.tensors().len());
    let mut rewritten_readers = Vec::with_capacity(again.tensors().len());
    for (name, source) in &readers {
        let info = again
            .info(name)
            .unwrap_or_else(|| panic!("{name:?} not written"));
        let original = file.info(name).unwrap();
        assert_eq!(info.dtype_name(), original.dtype_name());
        assert_eq!(info.dtype(), original.dtype());
        assert_eq!(info.shape(), original.shape());
        let tensor = again.tensor(name).unwrap();
        check_bytes(&tensor, source.view().as_bytes().unwrap(), name);
        if let Some(size) = info.dtype().size_in_bytes() {
            assert_eq!(
                tensor.view().data_ptr() as usize % size.min(8),
                0,
                "{name:?}: written unaligned"
            );
        }
        rewritten_readers.push((name.clone(), tensor));
    }
    let mut rewritten = Vec::new();
    safetensors::write(
        &mut rewritten,
        rewritten_readers
            .iter()
            .map(|(name, tensor)| (name.as_str(), tensor.view())),
        again.metadata(),
    )
    .unwrap();
    assert!(rewritten == written, "writing a written file changed it");
    drop(rewritten_readers);
    drop(again);

    // Writable tensors only once no reader is alive: refused now...
    let alive = readers.len();
    if alive > 0 {
        let second = SafetensorsFile::from_bytes(file_bytes).expect("accepted once, refused now");
        let reader = second.tensor(readers[0].0.as_str()).unwrap();
        match second.into_tensors(true) {
            Err(error @ SafetensorsError::StillLent { tensors: 1 }) => check_error(&error),
            Err(error) => panic!("into_tensors(true) beside a reader: {error}"),
            Ok(_) => panic!("writable tensors beside a reader"),
        }
        drop(reader);
    }
    drop(readers);

    // ...and given once they are gone: each over its own bytes.
    let mut writable = file
        .into_tensors(true)
        .unwrap_or_else(|error| panic!("into_tensors(true) with no reader alive: {error}"));
    assert_eq!(writable.len(), alive);
    let mut offset = 0usize;
    for (index, (name, tensor)) in writable.iter_mut().enumerate() {
        let view = tensor.view();
        assert!(!view.is_read_only(), "{name:?}");
        assert_eq!(view.writability(), Writability::Writable);
        assert!(tensor.is_exclusive(), "{name:?}");
        let len = tensor.view().compact_byte_size() as usize;
        check_bytes(tensor, &data[offset..offset + len], name);
        offset += len;
        if len > 0 {
            let first = tensor.view().data_ptr().cast::<u8>();
            // SAFETY: a writable, exclusive tensor's `len` compact bytes from its first
            // element: `into_tensors(true)` hands each tensor's bytes to it alone.
            unsafe { std::ptr::write_bytes(first, index as u8, len) };
        }
    }
    for (index, (name, tensor)) in writable.iter().enumerate() {
        let bytes = tensor.view().as_bytes().unwrap();
        assert!(
            bytes.iter().all(|&b| b == index as u8),
            "tensor {name:?}: its bytes were written through another tensor"
        );
    }
}

fuzz_target!(|bytes: &[u8]| run(bytes));
