//! Sub-byte types in legacy tensors, which have no IS_SUBBYTE_TYPE_PADDED flag: sub-byte
//! integers of one lane are read one byte per element (MXNet's bool is `uint1` over a byte per
//! element), float4/float6 packed (JAX's legacy `float4_e2m1fn`), and every path (byte size,
//! copy, re-export either way) agrees, never truncating and never reading past the data.

mod common;

use std::sync::Arc;

use common::ForeignSpec;
use dlbridge::{DataType, DataTypeCode, Error, Flags, ManagedTensor, TensorView};

/// A one-dimensional CPU tensor of `dtype` over `bytes`.
fn spec(dtype: DataType, elements: i64, bytes: Vec<u8>) -> ForeignSpec {
    let mut spec = ForeignSpec::f32(&[elements]);
    spec.dtype = dtype;
    spec.data = Some(bytes);
    spec
}

fn import_legacy(spec: &ForeignSpec) -> ManagedTensor {
    let (ptr, _log) = spec.legacy();
    // SAFETY: a live tensor from the simulated producer, handed over.
    unsafe { ManagedTensor::from_raw_legacy(ptr) }.expect("must be accepted")
}

fn import_versioned(spec: &ForeignSpec) -> ManagedTensor {
    let (ptr, _log) = spec.versioned();
    // SAFETY: a live tensor from the simulated producer, handed over.
    unsafe { ManagedTensor::from_raw_versioned(ptr) }.expect("must be accepted")
}

/// The compact bytes of a C-contiguous view.
fn bytes_of(view: &TensorView<'_>) -> Vec<u8> {
    assert!(view.is_c_contiguous());
    let length = view.compact_byte_size() as usize;
    // SAFETY: a validated, compact, host tensor holds `compact_byte_size` bytes from its first
    // element (V5), alive while `view` is.
    unsafe { std::slice::from_raw_parts(view.data_ptr().cast::<u8>(), length) }.to_vec()
}

/// Nine booleans as MXNet stores them: one byte each.
const NINE: [u8; 9] = [1, 0, 0, 1, 0, 0, 1, 1, 0];

#[test]
fn legacy_sub_byte_integers_take_one_byte_per_element_on_every_path() {
    for dtype in [
        DataType::uint(1),
        DataType::uint(2),
        DataType::uint(4),
        DataType::int(4),
        DataType::new(DataTypeCode::BOOL, 1, 1),
    ] {
        let tensor = Arc::new(import_legacy(&spec(dtype, 9, NINE.to_vec())));
        let view = tensor.view();
        assert!(view.flags().is_subbyte_type_padded(), "{dtype}");
        assert_eq!(view.compact_byte_size(), 9, "{dtype}");
        assert_eq!(bytes_of(&view), NINE, "{dtype}");

        // A copy keeps all nine bytes and says it is padded.
        let copy = view.to_compact_copy().unwrap();
        assert_eq!(
            copy.view().flags(),
            Flags::IS_COPIED | Flags::IS_SUBBYTE_TYPE_PADDED
        );
        assert_eq!(bytes_of(&copy.view()), NINE, "{dtype}");

        // Re-exported versioned it carries the flag; legacy, it stays a byte per element.
        let versioned = Arc::clone(&tensor).share_versioned().unwrap();
        let raw = versioned.into_raw().versioned().unwrap();
        // SAFETY: the pointer was just handed over by the export.
        let reimported = unsafe { ManagedTensor::from_raw_versioned(raw) }.unwrap();
        assert!(reimported.view().flags().is_subbyte_type_padded());
        assert_eq!(bytes_of(&reimported.view()), NINE);
        let legacy = Arc::clone(&tensor).share_legacy().unwrap();
        let raw = legacy.into_raw().legacy().unwrap();
        // SAFETY: as above.
        let reimported = unsafe { ManagedTensor::from_raw_legacy(raw) }.unwrap();
        assert_eq!(bytes_of(&reimported.view()), NINE);
    }
}

#[test]
fn versioned_sub_byte_integers_follow_their_flag() {
    // Packed without the flag: nine 1-bit elements in two bytes, both copied.
    let packed = import_versioned(&spec(DataType::uint(1), 9, vec![0b1100_1001, 0b0000_0001]));
    assert!(!packed.view().flags().is_subbyte_type_padded());
    assert_eq!(packed.view().compact_byte_size(), 2);
    let copy = packed.view().to_compact_copy().unwrap();
    assert_eq!(bytes_of(&copy.view()), [0b1100_1001, 0b0000_0001]);
    assert!(!copy.view().flags().is_subbyte_type_padded());
    // Packed integers cannot go out legacy, whose readers take a byte per element.
    let error = Arc::new(packed).share_legacy().unwrap_err();
    assert_eq!(
        error,
        Error::PackedLegacyExport {
            dtype: DataType::uint(1)
        }
    );
    assert!(
        error.to_string().contains("one byte per element"),
        "{error}"
    );

    // Padded with the flag: a byte each, and legacy re-export allowed.
    let mut padded = spec(DataType::uint(4), 9, NINE.to_vec());
    padded.flags = Flags::IS_SUBBYTE_TYPE_PADDED;
    let padded = Arc::new(import_versioned(&padded));
    assert_eq!(padded.view().compact_byte_size(), 9);
    let legacy = padded.share_legacy().unwrap();
    assert_eq!(bytes_of(&legacy.view()), NINE);
}

#[test]
fn legacy_float4_stays_packed() {
    // JAX's legacy float4_e2m1fn: nine values packed into five bytes.
    let packed = vec![0x22, 0x22, 0x22, 0x22, 0x02];
    let tensor = Arc::new(import_legacy(&spec(
        DataType::FLOAT4_E2M1FN,
        9,
        packed.clone(),
    )));
    assert_eq!(tensor.view().flags(), Flags::NONE);
    assert_eq!(tensor.view().compact_byte_size(), 5);
    assert_eq!(
        bytes_of(&tensor.view().to_compact_copy().unwrap().view()),
        packed
    );
    assert!(Arc::clone(&tensor).share_legacy().is_ok());
    // PyTorch's float4_e2m1fn_x2: two lanes fill one byte per element.
    let x2 = DataType::FLOAT4_E2M1FN.with_lanes(2);
    let tensor = import_legacy(&spec(x2, 3, vec![0x21, 0x43, 0x65]));
    assert_eq!(tensor.view().compact_byte_size(), 3);
    // A padded float4 cannot go out legacy, whose readers take float4 packed.
    let mut padded = spec(DataType::FLOAT4_E2M1FN, 9, NINE.to_vec());
    padded.flags = Flags::IS_SUBBYTE_TYPE_PADDED;
    let error = Arc::new(import_versioned(&padded))
        .share_legacy()
        .unwrap_err();
    assert_eq!(
        error,
        Error::PaddedLegacyExport {
            dtype: DataType::FLOAT4_E2M1FN
        }
    );
}

#[test]
fn legacy_sub_byte_vectors_without_whole_bytes_are_refused() {
    let dtype = DataType::uint(1).with_lanes(3);
    let (ptr, log) = spec(dtype, 2, vec![0; 6]).legacy();
    // SAFETY: a live tensor from the simulated producer, handed over.
    let error = unsafe { ManagedTensor::from_raw_legacy(ptr) }.unwrap_err();
    assert_eq!(log.calls(), 1, "the deleter is called once on refusal");
    assert_eq!(error, Error::AmbiguousLegacySubByte { dtype });
    assert!(error.to_string().contains("no agreed layout"), "{error}");
    // Whole-byte vectors of sub-byte integers are packed, which is one byte per element.
    let tensor = import_legacy(&spec(DataType::uint(4).with_lanes(2), 3, vec![1, 2, 3]));
    assert_eq!(tensor.view().compact_byte_size(), 3);
    assert!(!tensor.view().flags().is_subbyte_type_padded());
}
