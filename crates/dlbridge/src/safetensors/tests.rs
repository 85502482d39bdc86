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
            let pointer = storage.as_ptr().cast_mut().cast();
            // SAFETY: `storage` holds the compact bytes of four elements of `dtype` and moves
            // into the tensor unchanged.
            let tensor =
                unsafe { Export::from_raw_parts(storage, pointer, dtype, Device::CPU, &[2, 2]) }
                    .into_versioned()
                    .unwrap();
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
fn the_writer_lays_out_as_the_reference_writer_does() {
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
    let pointer = storage.as_ptr().cast_mut().cast();
    // SAFETY: two bytes, one float4 each, padded as the flag says; `storage` moves into the
    // tensor unchanged.
    let padded = unsafe {
        Export::from_raw_parts(storage, pointer, DataType::FLOAT4_E2M1FN, Device::CPU, &[2])
    }
    .subbyte_padded(true)
    .into_versioned()
    .unwrap();
    let error = write(Vec::new(), [("f4", padded.view())], &[]).unwrap_err();
    assert!(matches!(error, SafetensorsError::SubByteLayout { .. }));

    let storage = vec![0u8; 4];
    let pointer = storage.as_ptr().cast_mut().cast();
    let gpu = Device::new(DeviceType::CUDA, 0);
    // SAFETY: the tensor is never read: the writer refuses it for its device first.
    let on_gpu = unsafe { Export::from_raw_parts(storage, pointer, DataType::FLOAT32, gpu, &[1]) }
        .into_versioned()
        .unwrap();
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
