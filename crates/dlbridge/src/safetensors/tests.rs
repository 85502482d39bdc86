use super::dtypes::SAFETENSORS_DTYPES;
use super::*;
use crate::{DataType, Device, DeviceType, Error, Export, Flags};

/// A file of a header's text and data bytes, as the format lays them out.
fn raw_file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    bytes
}

/// A tensor over `bytes`, which hold the compact elements of `dtype` in `shape` (one byte per
/// sub-byte element where `padded`), on `device`; never read where the device is not the host.
fn tensor_of_bytes(
    bytes: Vec<u8>,
    dtype: DataType,
    device: Device,
    shape: &[usize],
    padded: bool,
) -> crate::ManagedTensor {
    let pointer = bytes.as_ptr().cast_mut().cast();
    // SAFETY: `bytes` holds the elements as the caller says, and moves into the tensor with
    // its heap memory unchanged.
    unsafe { Export::from_raw_parts(bytes, pointer, dtype, device, shape) }
        .subbyte_padded(padded)
        .into_versioned()
        .unwrap()
}

fn refused(header: &str, data: &[u8]) -> SafetensorsError {
    match SafetensorsFile::from_bytes(&raw_file(header, data)) {
        Ok(_) => panic!("accepted: {header}"),
        Err(error) => error,
    }
}

fn written(tensors: &[(&str, &crate::ManagedTensor)], metadata: &[(String, String)]) -> Vec<u8> {
    let mut bytes = Vec::new();
    let count = write(
        &mut bytes,
        tensors.iter().map(|(name, tensor)| (*name, tensor.view())),
        metadata,
    )
    .unwrap();
    assert_eq!(count as usize, bytes.len());
    bytes
}

/// A unique path in the system's temporary folder.
#[cfg(not(miri))]
fn temporary_path(label: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    std::env::temp_dir().join(format!(
        "dlbridge-safetensors-{}-{label}-{}.safetensors",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

#[test]
fn every_safetensors_dtype_round_trips_with_its_bytes() {
    // Four elements of each type: 8, 6 and 4-bit types fill whole bytes (4 * 6 = 24 bits).
    let tensors: Vec<(String, crate::ManagedTensor, Vec<u8>)> = SAFETENSORS_DTYPES
        .iter()
        .enumerate()
        .map(|(index, &(name, dtype))| {
            let bytes = dtype.storage_bytes(4, false).unwrap() as usize;
            let data: Vec<u8> = (0..bytes)
                .map(|byte| (index * 31 + byte * 7) as u8)
                .collect();
            // BOOL takes 0 or 1 only; the bytes are written and read as they are either way.
            let data: Vec<u8> = if dtype == DataType::BOOL {
                data.iter().map(|byte| byte & 1).collect()
            } else {
                data
            };
            let storage: Vec<u8> = data.clone();
            let tensor = tensor_of_bytes(storage, dtype, Device::CPU, &[2, 2], false);
            (name.to_owned(), tensor, data)
        })
        .collect();
    let bytes = written(
        &tensors
            .iter()
            .map(|(name, tensor, _)| (name.as_str(), tensor))
            .collect::<Vec<_>>(),
        &[],
    );
    let file = SafetensorsFile::from_bytes(&bytes).unwrap();
    assert_eq!(file.tensors().len(), SAFETENSORS_DTYPES.len());
    for (name, source, data) in &tensors {
        let info = file.info(name).unwrap();
        assert_eq!(info.dtype_name(), name.as_str());
        assert_eq!(info.dtype(), source.view().dtype());
        assert_eq!(info.shape(), &[2, 2]);
        let tensor = file.tensor(name).unwrap();
        assert_eq!(tensor.view().as_bytes().unwrap(), data.as_slice(), "{name}");
        assert_eq!(tensor.view().shape(), &[2, 2]);
        assert_eq!(tensor.view().flags(), Flags::READ_ONLY);
        if let Some(size) = info.dtype().size_in_bytes() {
            // The writer's layout: every tensor aligned for its type.
            assert_eq!(tensor.view().data_ptr() as usize % size.min(8), 0, "{name}");
        }
    }
}

#[test]
fn the_writer_aligns_every_tensor_and_pads_the_header_with_spaces() {
    let small = Export::new(vec![1u8, 2], &[2]).into_versioned().unwrap();
    let large = Export::new(vec![3.0f64], &[1]).into_versioned().unwrap();
    let bytes = written(
        &[("a_small", &small), ("b_large", &large)],
        &[("format".to_owned(), "pt".to_owned())],
    );
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    assert_eq!(header_len % 8, 0);
    let header = std::str::from_utf8(&bytes[8..8 + header_len]).unwrap();
    assert_eq!(
        header.trim_end(),
        r#"{"__metadata__":{"format":"pt"},"b_large":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},"a_small":{"dtype":"U8","shape":[2],"data_offsets":[8,10]}}"#
    );
    assert_eq!(&bytes[8 + header_len..], &[0, 0, 0, 0, 0, 0, 8, 64, 1, 2]);
}

#[test]
fn a_strided_tensor_is_written_row_major() {
    let transposed = Export::new(vec![1i32, 3, 2, 4], &[2, 2])
        .strides(&[1, 2])
        .into_versioned()
        .unwrap();
    let every_other = Export::new(vec![3u16, 0, 2, 0, 1, 0], &[3])
        .strides(&[2])
        .into_versioned()
        .unwrap();
    let bytes = written(&[("t", &transposed), ("r", &every_other)], &[]);
    let file = SafetensorsFile::from_bytes(&bytes).unwrap();
    assert_eq!(
        file.tensor("t").unwrap().view().as_slice::<i32>().unwrap(),
        &[1, 2, 3, 4]
    );
    assert_eq!(
        file.tensor("r").unwrap().view().as_slice::<u16>().unwrap(),
        &[3, 2, 1]
    );
}

#[test]
fn empty_and_scalar_tensors_round_trip() {
    let empty = Export::new(Vec::<f32>::new(), &[0, 3])
        .into_versioned()
        .unwrap();
    let scalar = Export::new(vec![7i8], &[]).into_versioned().unwrap();
    let bytes = written(&[("empty", &empty), ("scalar", &scalar)], &[]);
    let file = SafetensorsFile::from_bytes(&bytes).unwrap();
    let empty = file.tensor("empty").unwrap();
    assert_eq!(empty.view().shape(), &[0, 3]);
    assert_eq!(empty.view().num_elements(), 0);
    let scalar = file.tensor("scalar").unwrap();
    assert_eq!(scalar.view().ndim(), 0);
    assert_eq!(scalar.view().as_slice::<i8>().unwrap(), &[7]);
}

#[test]
fn tensors_keep_the_bytes_alive_after_the_file_is_dropped() {
    let source = Export::new(vec![1.5f32, 2.5], &[2])
        .into_versioned()
        .unwrap();
    let file = SafetensorsFile::from_bytes(&written(&[("x", &source)], &[])).unwrap();
    let tensor = file.tensor("x").unwrap();
    drop(file);
    assert_eq!(tensor.view().as_slice::<f32>().unwrap(), &[1.5, 2.5]);
}

#[test]
fn writable_tensors_are_exported_once_and_only_with_no_reader_alive() {
    let a = Export::new(vec![1u32, 2], &[2]).into_versioned().unwrap();
    let b = Export::new(vec![3u32], &[1]).into_versioned().unwrap();
    let bytes = written(&[("a", &a), ("b", &b)], &[]);

    let file = SafetensorsFile::from_bytes(&bytes).unwrap();
    let reader = file.tensor("a").unwrap();
    let refused = file.into_tensors(true).unwrap_err();
    assert!(matches!(
        refused,
        SafetensorsError::StillLent { tensors: 1 }
    ));
    assert!(
        refused
            .to_string()
            .contains("1 tensors exported from this file are alive")
    );
    drop(reader);

    let file = SafetensorsFile::from_bytes(&bytes).unwrap();
    let mut tensors = file.into_tensors(true).unwrap();
    let names: Vec<&str> = tensors.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    tensors[0].1.as_mut_slice::<u32>().unwrap()[1] = 20;
    tensors[1].1.as_mut_slice::<u32>().unwrap()[0] = 30;
    assert_eq!(tensors[0].1.view().as_slice::<u32>().unwrap(), &[1, 20]);
    assert_eq!(tensors[1].1.view().as_slice::<u32>().unwrap(), &[30]);

    // Read-only ones, any number of times.
    let file = SafetensorsFile::from_bytes(&bytes).unwrap();
    let first = file.tensor("a").unwrap();
    let all = file.into_tensors(false).unwrap();
    assert!(all.iter().all(|(_, tensor)| tensor.view().is_read_only()));
    assert_eq!(first.view().as_slice::<u32>().unwrap(), &[1, 2]);
}

/// Found while writing SOUNDNESS.md's row for `into_tensors`: it read the tensors' count with
/// `Arc::strong_count`, an unordered load, so a reader dropped on another thread had its reads
/// of the bytes ordered before nothing: the writable tensors' writes raced with them (Miri:
/// "Data race detected"). The count is now paired with an acquire fence, as `Arc::get_mut`
/// does (and the ndarray bridge's `from_arc_array`). The reader's thread says it is done with a
/// relaxed store only, so that nothing but the count orders the two threads; while the count
/// still shows the reader, `into_tensors` refuses (`StillLent`), and the test tries again.
#[test]
fn writable_tensors_are_ordered_after_readers_dropped_on_other_threads() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let a = Export::new(vec![1u32, 2], &[2]).into_versioned().unwrap();
    let bytes = written(&[("a", &a)], &[]);
    let mut written_once = false;
    for _ in 0..20 {
        let file = SafetensorsFile::from_bytes(&bytes).unwrap();
        let reader = file.tensor("a").unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let done = Arc::clone(&done);
            move || {
                assert_eq!(reader.view().as_slice::<u32>().unwrap(), &[1, 2]);
                drop(reader);
                done.store(true, Ordering::Relaxed);
            }
        });
        while !done.load(Ordering::Relaxed) {
            std::thread::yield_now();
        }
        match file.into_tensors(true) {
            Ok(mut tensors) => {
                tensors[0].1.as_mut_slice::<u32>().unwrap()[0] = 10;
                assert_eq!(tensors[0].1.view().as_slice::<u32>().unwrap(), &[10, 2]);
                written_once = true;
            }
            Err(SafetensorsError::StillLent { tensors: 1 }) => {}
            Err(error) => panic!("{error}"),
        }
        thread.join().unwrap();
        if written_once {
            break;
        }
    }
    assert!(written_once, "the reader's drop was never seen");
}

#[test]
fn the_writer_refuses_what_the_format_cannot_hold_by_name() {
    let complex = Export::new(vec![num_complex::Complex::new(1.0f64, 2.0)], &[1])
        .into_versioned()
        .unwrap();
    let error = write(Vec::new(), [("z", complex.view())], &[]).unwrap_err();
    assert!(
        matches!(error, SafetensorsError::UnsupportedDtype { ref name, dtype }
        if name == "z" && dtype == DataType::COMPLEX128)
    );
    assert_eq!(
        error.to_string(),
        "tensor \"z\": dtype complex128 has no safetensors name"
    );

    let plain = Export::new(vec![1u8], &[1]).into_versioned().unwrap();
    let error = write(Vec::new(), [("__metadata__", plain.view())], &[]).unwrap_err();
    assert!(matches!(error, SafetensorsError::ReservedName { .. }));
    let error = write(Vec::new(), [("x", plain.view()), ("x", plain.view())], &[]).unwrap_err();
    assert!(matches!(error, SafetensorsError::DuplicateName { ref name } if name == "x"));
    let twice = [
        ("k".to_owned(), "1".to_owned()),
        ("k".to_owned(), "2".to_owned()),
    ];
    let error = write(Vec::new(), [("x", plain.view())], &twice).unwrap_err();
    assert!(matches!(error, SafetensorsError::InvalidField { ref field, .. } if field == "k"));

    let padded = Export::new(vec![1u8, 2], &[2]).into_versioned().unwrap();
    let storage = padded.view().as_bytes().unwrap().to_vec();
    let padded = tensor_of_bytes(storage, DataType::FLOAT4_E2M1FN, Device::CPU, &[2], true);
    let error = write(Vec::new(), [("f4", padded.view())], &[]).unwrap_err();
    assert!(matches!(error, SafetensorsError::SubByteLayout { .. }));

    let gpu = Device::new(DeviceType::CUDA, 0);
    let on_gpu = tensor_of_bytes(vec![0u8; 4], DataType::FLOAT32, gpu, &[1], false);
    let error = write(Vec::new(), [("g", on_gpu.view())], &[]).unwrap_err();
    assert!(matches!(error, SafetensorsError::NotOnHost { device, .. } if device == gpu));
}

#[test]
fn hostile_headers_get_typed_errors_naming_the_field_and_the_value() {
    use SafetensorsError::*;
    let tensor = |entry: &str| format!("{{\"w\":{entry}}}");
    assert!(matches!(
        SafetensorsFile::from_bytes(&[1, 2, 3]),
        Err(FileTooShort { file_len: 3 })
    ));
    let mut huge = (MAX_HEADER_BYTES + 1).to_le_bytes().to_vec();
    huge.extend_from_slice(b"{}");
    assert!(matches!(
        SafetensorsFile::from_bytes(&huge),
        Err(HeaderTooLarge { .. })
    ));
    let mut truncated = 100u64.to_le_bytes().to_vec();
    truncated.extend_from_slice(b"{}");
    let error = SafetensorsFile::from_bytes(&truncated).err().unwrap();
    assert!(matches!(
        error,
        HeaderPastEnd {
            header_len: 100,
            file_len: 10
        }
    ));
    assert!(error.to_string().contains("truncated"));
    assert!(matches!(
        SafetensorsFile::from_bytes(&raw_file("{\u{0}\u{ff}", &[])[..])
            .err()
            .unwrap(),
        HeaderSyntax { .. }
    ));
    let mut not_utf8 = 2u64.to_le_bytes().to_vec();
    not_utf8.extend_from_slice(&[b'{', 0xff]);
    assert!(matches!(
        SafetensorsFile::from_bytes(&not_utf8),
        Err(HeaderNotUtf8 { valid_up_to: 1 })
    ));
    assert!(matches!(
        refused("[]", &[]),
        HeaderNotObject {
            first_byte: Some(b'[')
        }
    ));
    assert!(matches!(refused("{\"w\":", &[]), HeaderSyntax { .. }));

    let good = r#"{"dtype":"F32","shape":[2],"data_offsets":[0,8]}"#;
    let error = refused(&format!("{{\"w\":{good},\"w\":{good}}}"), &[0; 8]);
    assert!(matches!(error, DuplicateName { ref name } if name == "w"));
    let error = refused(&tensor(r#"{"shape":[2],"data_offsets":[0,8]}"#), &[0; 8]);
    assert_eq!(error.to_string(), "tensor \"w\": dtype: missing");
    let error = refused(
        &tensor(r#"{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}"#),
        &[0; 8],
    );
    assert_eq!(
        error.to_string(),
        "tensor \"w\": shape: shape[0] = -2: not a non-negative integer"
    );
    let error = refused(
        &tensor(r#"{"dtype":"F32","shape":[2],"data_offsets":[0,8,9]}"#),
        &[0; 8],
    );
    assert!(matches!(error, InvalidField { ref field, .. } if field == "data_offsets"));
    let error = refused(
        &tensor(r#"{"dtype":"C128","shape":[2],"data_offsets":[0,32]}"#),
        &[0; 32],
    );
    assert_eq!(
        error.to_string(),
        "tensor \"w\": dtype \"C128\" is not a safetensors data type"
    );
    let many = format!("[{}]", vec!["1"; 1025].join(","));
    let error = refused(
        &tensor(&format!(
            r#"{{"dtype":"U8","shape":{many},"data_offsets":[0,1]}}"#
        )),
        &[0],
    );
    assert!(matches!(error, TooManyDimensions { ndim: 1025, .. }));
    let error = refused(
        &tensor(r#"{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}"#),
        &[0; 8],
    );
    assert!(matches!(error, SizeOverflow { .. }));
    let error = refused(
        &tensor(r#"{"dtype":"F4","shape":[3],"data_offsets":[0,2]}"#),
        &[0; 2],
    );
    assert!(matches!(
        error,
        PartialByte {
            dtype: "F4",
            elements: 3,
            ..
        }
    ));
    let error = refused(
        &tensor(r#"{"dtype":"U8","shape":[0],"data_offsets":[4,2]}"#),
        &[0; 4],
    );
    assert!(matches!(
        error,
        OffsetsReversed {
            data_offsets: [4, 2],
            ..
        }
    ));
    let error = refused(
        &tensor(r#"{"dtype":"F32","shape":[4],"data_offsets":[0,16]}"#),
        &[0; 8],
    );
    assert!(matches!(error, DataPastEnd { data_len: 8, .. }));
    assert!(
        error
            .to_string()
            .contains("[0, 16] reach past the file's 8 bytes")
    );
    let error = refused(
        &tensor(r#"{"dtype":"F32","shape":[2,2],"data_offsets":[0,10]}"#),
        &[0; 10],
    );
    assert_eq!(
        error.to_string(),
        "tensor \"w\": data_offsets [0, 10] hold 10 bytes, but F32 with shape [2, 2] takes 16"
    );
    let overlapping = r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}"#;
    let error = refused(overlapping, &[0; 6]);
    assert!(matches!(error, Overlap { ref name, ref other, .. } if name == "b" && other == "a"));
    let aliased = r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}}"#;
    assert!(matches!(refused(aliased, &[0; 4]), Overlap { .. }));
    let gap = r#"{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}}"#;
    assert!(matches!(refused(gap, &[0; 6]), Gap { begin: 2, end: 4 }));
    assert!(matches!(
        refused(
            &tensor(r#"{"dtype":"U8","shape":[2],"data_offsets":[0,2]}"#),
            &[0; 5]
        ),
        Gap { begin: 2, end: 5 }
    ));
    let error = refused(r#"{"__metadata__":{"k":1}}"#, &[]);
    assert_eq!(
        error.to_string(),
        "tensor \"__metadata__\": k: 1 is not a string"
    );
    let error = refused(&tensor("[1,2]"), &[]);
    assert!(matches!(error, InvalidField { ref field, .. } if field == "entry"));

    // The format's own allowances: padding spaces, fields it does not define, no tensors,
    // `__metadata__` null, an empty tensor at the end.
    let file = SafetensorsFile::from_bytes(&raw_file(
        r#"{"__metadata__":null,"w":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"extra":1}}    "#,
        &[],
    ))
    .unwrap();
    assert_eq!(file.tensor("w").unwrap().view().num_elements(), 0);
    assert!(
        SafetensorsFile::from_bytes(&raw_file("{}", &[]))
            .unwrap()
            .tensors()
            .is_empty()
    );
    let error = SafetensorsFile::from_bytes(&raw_file("{}", &[]))
        .unwrap()
        .tensor("absent")
        .unwrap_err();
    assert_eq!(error.to_string(), "no tensor named \"absent\" in the file");
}

/// Found by `fuzz/fuzz_targets/safetensors.rs` (its seed `empty-tensor-extent-past-i64`): an
/// empty tensor's size (0) says nothing of its other extents, and the reader accepted
/// `[0, 2^63]`, which no DLPack shape (`int64_t`) holds: the file was accepted, and its tensor
/// then failed to export (`tensor`, `into_tensors`).
#[test]
fn an_extent_dlpack_cannot_hold_is_refused_even_in_an_empty_tensor() {
    let header =
        |shape: &str| format!(r#"{{"e":{{"dtype":"F32","shape":{shape},"data_offsets":[0,0]}}}}"#);
    for (shape, value) in [
        ("[0,9223372036854775808]", "shape[1] = 9223372036854775808"),
        (
            "[18446744073709551615,0]",
            "shape[0] = 18446744073709551615",
        ),
    ] {
        let error = refused(&header(shape), &[]);
        assert!(
            matches!(error, SafetensorsError::InvalidField { ref name, ref field, .. }
                if name == "e" && field == "shape"),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "tensor \"e\": shape: {value}: above 9223372036854775807, the largest extent \
                 DLPack holds"
            )
        );
    }
    // A tensor with elements too: refused for the extent, before its size is compared.
    let error = refused(
        r#"{"w":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,1]}}"#,
        &[0],
    );
    assert!(matches!(error, SafetensorsError::InvalidField { ref field, .. } if field == "shape"));

    // i64::MAX itself is an extent DLPack holds: the empty tensor exports, read-only and
    // writable, where it fits the address space's usize.
    let bytes = raw_file(&header("[0,9223372036854775807]"), &[]);
    #[cfg(target_pointer_width = "64")]
    {
        let file = SafetensorsFile::from_bytes(&bytes).unwrap();
        let tensor = file.tensor("e").unwrap();
        assert_eq!(tensor.view().shape(), &[0, i64::MAX]);
        assert_eq!(tensor.view().as_bytes().unwrap(), &[] as &[u8]);
        drop(tensor);
        let writable = file.into_tensors(true).unwrap();
        assert_eq!(writable[0].1.view().num_elements(), 0);
    }
    #[cfg(not(target_pointer_width = "64"))]
    assert!(matches!(
        SafetensorsFile::from_bytes(&bytes),
        Err(SafetensorsError::SizeOverflow { .. })
    ));
}

/// Found while writing `fuzz/fuzz_targets/safetensors.rs`'s oracle: `metadata()` promised the
/// file's order, but `__metadata__` was read as a `serde_json` object, which sorts its keys
/// (and keeps one of a repeated key): `{"b":"1","a":"2"}` came back as `a`, then `b`.
#[test]
fn metadata_keeps_the_files_order_and_refuses_a_key_given_twice() {
    let file = SafetensorsFile::from_bytes(&raw_file(
        r#"{"__metadata__":{"format":"pt","b":"1","a":"\u00e9"}}"#,
        &[],
    ))
    .unwrap();
    let expected = [("format", "pt"), ("b", "1"), ("a", "\u{e9}")]
        .map(|(key, value)| (key.to_owned(), value.to_owned()));
    assert_eq!(file.metadata(), &expected);
    // Written and read back, in the same order.
    let mut bytes = Vec::new();
    write(
        &mut bytes,
        std::iter::empty::<(&str, crate::TensorView<'_>)>(),
        file.metadata(),
    )
    .unwrap();
    assert_eq!(
        SafetensorsFile::from_bytes(&bytes).unwrap().metadata(),
        &expected
    );

    let error = refused(r#"{"__metadata__":{"k":"1","k":"2"}}"#, &[]);
    assert_eq!(error.to_string(), "tensor \"__metadata__\": k: given twice");
    // Values of other kinds, in an object or as the whole value, as before.
    assert_eq!(
        refused(r#"{"__metadata__":{"k":[1,{"x":null}]}}"#, &[]).to_string(),
        "tensor \"__metadata__\": k: [1,{\"x\":null}] is not a string"
    );
    for (value, shown) in [
        ("[1,2]", "[1,2]"),
        ("true", "true"),
        ("-3", "-3"),
        ("1.5", "1.5"),
        ("\"pt\"", "\"pt\""),
    ] {
        assert_eq!(
            refused(&format!(r#"{{"__metadata__":{value}}}"#), &[]).to_string(),
            format!("tensor \"__metadata__\": __metadata__: {shown} is not an object of strings")
        );
    }
}

/// `TensorView::as_bytes`, the writer's way to a tensor's bytes (public, over `unsafe`): the
/// compact bytes of a C-contiguous host tensor, packed or padded as its flag says, and a
/// refusal for what is not one range of host memory, before anything is read.
#[test]
fn as_bytes_gives_a_compact_host_tensors_bytes_and_refuses_the_rest() {
    // Six float4s packed in three bytes; the same six padded, one byte each.
    let packed: Vec<u8> = vec![0x21, 0x43, 0x65];
    let f4 = tensor_of_bytes(packed, DataType::FLOAT4_E2M1FN, Device::CPU, &[2, 3], false);
    assert_eq!(f4.view().as_bytes().unwrap(), &[0x21, 0x43, 0x65]);
    let padded: Vec<u8> = vec![1, 2, 3, 4, 5, 6];
    let f4 = tensor_of_bytes(padded, DataType::FLOAT4_E2M1FN, Device::CPU, &[6], true);
    assert_eq!(f4.view().as_bytes().unwrap(), &[1, 2, 3, 4, 5, 6]);
    // Extent-1 dimensions may carry any stride: still one compact range.
    let row = Export::new(vec![1u16, 2], &[1, 2])
        .strides(&[7, 1])
        .into_versioned()
        .unwrap();
    assert_eq!(row.view().as_bytes().unwrap(), &[1, 0, 2, 0]);
    // No elements, however large the other extent: no bytes.
    let empty = Export::new(Vec::<u64>::new(), &[0, isize::MAX as usize])
        .into_versioned()
        .unwrap();
    assert_eq!(empty.view().as_bytes().unwrap(), &[] as &[u8]);

    // Strided layouts are not one range of the tensor's bytes: refused.
    let transposed = Export::new(vec![1i32, 3, 2, 4], &[2, 2])
        .strides(&[1, 2])
        .into_versioned()
        .unwrap();
    assert!(matches!(
        transposed.view().as_bytes(),
        Err(Error::NotContiguous { order: "C", .. })
    ));
    let every_other = Export::new(vec![1u8, 0, 2, 0], &[2])
        .strides(&[2])
        .into_versioned()
        .unwrap();
    assert!(matches!(
        every_other.view().as_bytes(),
        Err(Error::NotContiguous { .. })
    ));
    // Device memory is never read by the host.
    let gpu = Device::new(DeviceType::CUDA, 0);
    let on_gpu = tensor_of_bytes(vec![0u8; 4], DataType::FLOAT32, gpu, &[1], false);
    assert!(matches!(
        on_gpu.view().as_bytes(),
        Err(Error::NotHostReadable { device }) if device == gpu
    ));
}

#[test]
fn a_file_whose_header_is_not_padded_gives_unaligned_tensors_that_typed_access_refuses() {
    let header = r#"{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#;
    assert_ne!(header.len() % 4, 0);
    let file = SafetensorsFile::from_bytes(&raw_file(header, &1.0f32.to_le_bytes())).unwrap();
    let tensor = file.tensor("x").unwrap();
    assert_eq!(tensor.view().as_bytes().unwrap(), 1.0f32.to_le_bytes());
    assert!(matches!(
        tensor.view().as_slice::<f32>(),
        Err(Error::Misaligned { align: 4, .. })
    ));
}

#[test]
#[cfg(not(miri))] // Miri has no memory maps, and its isolation has no files.
fn open_maps_the_file_and_save_replaces_it_under_the_mapping() {
    let path = temporary_path("open");
    let first = Export::new(vec![1.0f32, 2.0, 3.0], &[3])
        .into_versioned()
        .unwrap();
    save(&path, [("x", first.view())], &[]).unwrap();
    // SAFETY: nothing else writes the test's own file; `save` below replaces it.
    let file = unsafe { SafetensorsFile::open(&path) }.unwrap();
    assert!(file.is_mapped());
    let mapped = file.tensor("x").unwrap();
    // SAFETY: as above.
    let mut writable = unsafe { SafetensorsFile::open(&path) }
        .unwrap()
        .into_tensors(true)
        .unwrap();
    // A write into the private mapping stays in this process.
    writable[0].1.as_mut_slice::<f32>().unwrap()[0] = 9.0;
    assert_eq!(mapped.view().as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0]);

    let second = Export::new(vec![4.0f32, 5.0, 6.0, 7.0], &[4])
        .into_versioned()
        .unwrap();
    save(&path, [("x", second.view())], &[]).unwrap();
    // The old mapping still reads the old file's bytes; the new file has the new ones.
    assert_eq!(mapped.view().as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0]);
    let read = SafetensorsFile::read(&path).unwrap();
    assert!(!read.is_mapped());
    assert_eq!(
        read.tensor("x").unwrap().view().as_slice::<f32>().unwrap(),
        &[4.0, 5.0, 6.0, 7.0]
    );
    let leftovers = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .filter_map(|entry| entry.ok())
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.starts_with(&format!(".{}", path.file_name().unwrap().to_string_lossy()))
        })
        .count();
    assert_eq!(
        leftovers, 0,
        "the temporary file is renamed, not left behind"
    );
    std::fs::remove_file(&path).unwrap();

    let missing = SafetensorsFile::read(&path).err().unwrap();
    assert!(matches!(
        missing,
        SafetensorsError::Io {
            operation: "open",
            ..
        }
    ));
    assert!(
        missing
            .to_string()
            .starts_with(&format!("open {}", path.display()))
    );
    std::fs::write(&path, [1, 2]).unwrap();
    // SAFETY: the test's own file.
    let short = unsafe { SafetensorsFile::open(&path) }.err().unwrap();
    assert!(matches!(
        short,
        SafetensorsError::FileTooShort { file_len: 2 }
    ));
    std::fs::remove_file(&path).unwrap();
}
