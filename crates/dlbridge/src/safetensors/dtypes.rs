//! The data types of the safetensors format, by their names in a file's header, and the DLPack
//! data type each one is.
//!
//! Every safetensors type has a DLPack code (the list of the `safetensors` crate 0.8, its
//! reference implementation): the integers, floats, `BOOL` and `C64` as their DLPack
//! namesakes, the FP8 types as DLPack 1.1's float8 codes, `F6_E2M3`/`F6_E3M2`/`F4` as its
//! packed float6/float4 codes. Both formats store sub-byte elements packed, a file's `F4`
//! bytes are handed over as they are (DLPack reads element `i` from bits `4i..4i+4`, little
//! bit-endian, which is how PyTorch's `float4_e2m1fn_x2` and the OCP MX formats pack them).
//! The other direction has DLPack types the format cannot name (`complex128`,
//! `float8_e3m4`, `bcomplex32`, vectors...): a writer refuses them by name.

use crate::dtype::DataType;

/// Each safetensors type's name and its DLPack data type, in the order of the format's list.
pub(super) const SAFETENSORS_DTYPES: [(&str, DataType); 22] = [
    ("BOOL", DataType::BOOL),
    ("F4", DataType::FLOAT4_E2M1FN),
    ("F6_E2M3", DataType::FLOAT6_E2M3FN),
    ("F6_E3M2", DataType::FLOAT6_E3M2FN),
    ("U8", DataType::UINT8),
    ("I8", DataType::INT8),
    ("F8_E5M2", DataType::FLOAT8_E5M2),
    ("F8_E4M3", DataType::FLOAT8_E4M3FN),
    ("F8_E8M0", DataType::FLOAT8_E8M0FNU),
    ("F8_E4M3FNUZ", DataType::FLOAT8_E4M3FNUZ),
    ("F8_E5M2FNUZ", DataType::FLOAT8_E5M2FNUZ),
    ("I16", DataType::INT16),
    ("U16", DataType::UINT16),
    ("F16", DataType::FLOAT16),
    ("BF16", DataType::BFLOAT16),
    ("I32", DataType::INT32),
    ("U32", DataType::UINT32),
    ("F32", DataType::FLOAT32),
    ("C64", DataType::COMPLEX64),
    ("F64", DataType::FLOAT64),
    ("I64", DataType::INT64),
    ("U64", DataType::UINT64),
];

/// A safetensors type name (as `'static`) and its DLPack data type, `None` for a name the
/// format does not have.
pub(super) fn dlpack_dtype(name: &str) -> Option<(&'static str, DataType)> {
    SAFETENSORS_DTYPES
        .iter()
        .find(|(known, _)| *known == name)
        .copied()
}

/// The safetensors name of a DLPack data type, `None` for a type the format cannot name.
pub(super) fn safetensors_name(dtype: DataType) -> Option<&'static str> {
    SAFETENSORS_DTYPES
        .iter()
        .find(|&&(_, known)| known == dtype)
        .map(|&(name, _)| name)
}

/// The alignment a writer gives the data of a type: its element size, capped at 8 (the header
/// is padded to a multiple of 8 bytes, so tensors written largest-alignment first all start
/// aligned). Sub-byte types need none.
pub(super) fn write_alignment(dtype: DataType) -> usize {
    dtype.size_in_bytes().map_or(1, |size| size.min(8))
}
