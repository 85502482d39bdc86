//! XLA's data types named as DLPack's: one table, read both ways.

use super::ffi::XLA_FFI_DataType;
use crate::dtype::{DataType, DataTypeCode};

/// XLA's type and DLPack's, one row per type both can name with the same bits (the table of
/// [`crate::xla`]'s docs).
const DATA_TYPES: [(XLA_FFI_DataType, DataType); 23] = [
    (
        XLA_FFI_DataType::PRED,
        DataType::new(DataTypeCode::BOOL, 8, 1),
    ),
    (XLA_FFI_DataType::S8, DataType::new(DataTypeCode::INT, 8, 1)),
    (
        XLA_FFI_DataType::S16,
        DataType::new(DataTypeCode::INT, 16, 1),
    ),
    (
        XLA_FFI_DataType::S32,
        DataType::new(DataTypeCode::INT, 32, 1),
    ),
    (
        XLA_FFI_DataType::S64,
        DataType::new(DataTypeCode::INT, 64, 1),
    ),
    (
        XLA_FFI_DataType::U8,
        DataType::new(DataTypeCode::UINT, 8, 1),
    ),
    (
        XLA_FFI_DataType::U16,
        DataType::new(DataTypeCode::UINT, 16, 1),
    ),
    (
        XLA_FFI_DataType::U32,
        DataType::new(DataTypeCode::UINT, 32, 1),
    ),
    (
        XLA_FFI_DataType::U64,
        DataType::new(DataTypeCode::UINT, 64, 1),
    ),
    (
        XLA_FFI_DataType::F16,
        DataType::new(DataTypeCode::FLOAT, 16, 1),
    ),
    (
        XLA_FFI_DataType::F32,
        DataType::new(DataTypeCode::FLOAT, 32, 1),
    ),
    (
        XLA_FFI_DataType::F64,
        DataType::new(DataTypeCode::FLOAT, 64, 1),
    ),
    (
        XLA_FFI_DataType::BF16,
        DataType::new(DataTypeCode::BFLOAT, 16, 1),
    ),
    (
        XLA_FFI_DataType::C64,
        DataType::new(DataTypeCode::COMPLEX, 64, 1),
    ),
    (
        XLA_FFI_DataType::C128,
        DataType::new(DataTypeCode::COMPLEX, 128, 1),
    ),
    (
        XLA_FFI_DataType::F8E5M2,
        DataType::new(DataTypeCode::FLOAT8_E5M2, 8, 1),
    ),
    (
        XLA_FFI_DataType::F8E3M4,
        DataType::new(DataTypeCode::FLOAT8_E3M4, 8, 1),
    ),
    (
        XLA_FFI_DataType::F8E4M3,
        DataType::new(DataTypeCode::FLOAT8_E4M3, 8, 1),
    ),
    (
        XLA_FFI_DataType::F8E4M3FN,
        DataType::new(DataTypeCode::FLOAT8_E4M3FN, 8, 1),
    ),
    (
        XLA_FFI_DataType::F8E4M3B11FNUZ,
        DataType::new(DataTypeCode::FLOAT8_E4M3B11FNUZ, 8, 1),
    ),
    (
        XLA_FFI_DataType::F8E5M2FNUZ,
        DataType::new(DataTypeCode::FLOAT8_E5M2FNUZ, 8, 1),
    ),
    (
        XLA_FFI_DataType::F8E4M3FNUZ,
        DataType::new(DataTypeCode::FLOAT8_E4M3FNUZ, 8, 1),
    ),
    (
        XLA_FFI_DataType::F8E8M0FNU,
        DataType::new(DataTypeCode::FLOAT8_E8M0FNU, 8, 1),
    ),
];

/// The DLPack data type of XLA's `xla_type` (the table of [`crate::xla`]'s docs), or `None` where DLPack has
/// no type of the same bits or the storage is not known (sub-byte types, `TOKEN`, a value the
/// header does not name).
pub fn data_type(xla_type: XLA_FFI_DataType) -> Option<DataType> {
    DATA_TYPES
        .iter()
        .find(|(xla, _)| *xla == xla_type)
        .map(|&(_, dtype)| dtype)
}

/// XLA's type for DLPack's `dtype` (the table of [`crate::xla`]'s docs), or `None` where XLA has none (a
/// vector type with lanes, a sub-byte type, float6, an opaque handle...).
pub fn xla_type(dtype: DataType) -> Option<XLA_FFI_DataType> {
    DATA_TYPES
        .iter()
        .find(|(_, dl)| *dl == dtype)
        .map(|&(xla, _)| xla)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_goes_both_ways_and_names_each_type_once() {
        for (xla, dtype) in DATA_TYPES {
            assert_eq!(data_type(xla), Some(dtype), "{:?}", xla.name());
            assert_eq!(xla_type(dtype), Some(xla), "{dtype}");
            // XLA's element sizes (`xla::ShapeUtil::ByteSizeOfPrimitiveType`).
            let xla_bytes = match xla {
                XLA_FFI_DataType::S16 | XLA_FFI_DataType::U16 => 2,
                XLA_FFI_DataType::F16 | XLA_FFI_DataType::BF16 => 2,
                XLA_FFI_DataType::S32 | XLA_FFI_DataType::U32 | XLA_FFI_DataType::F32 => 4,
                XLA_FFI_DataType::S64 | XLA_FFI_DataType::U64 | XLA_FFI_DataType::F64 => 8,
                XLA_FFI_DataType::C64 => 8,
                XLA_FFI_DataType::C128 => 16,
                _ => 1,
            };
            assert_eq!(dtype.size_in_bytes(), Some(xla_bytes), "{dtype}");
        }
        let named: std::collections::HashSet<_> = DATA_TYPES.iter().map(|(x, _)| *x).collect();
        assert_eq!(named.len(), DATA_TYPES.len());
    }

    #[test]
    fn every_type_the_header_names_is_mapped_or_left_out_on_purpose() {
        let left_out = [
            XLA_FFI_DataType::INVALID,
            XLA_FFI_DataType::TOKEN,
            XLA_FFI_DataType::S1,
            XLA_FFI_DataType::S2,
            XLA_FFI_DataType::S4,
            XLA_FFI_DataType::U1,
            XLA_FFI_DataType::U2,
            XLA_FFI_DataType::U4,
            XLA_FFI_DataType::F4E2M1FN,
        ];
        for &xla in XLA_FFI_DataType::ALL {
            assert_eq!(
                data_type(xla).is_none(),
                left_out.contains(&xla),
                "{:?}",
                xla.name()
            );
        }
        assert_eq!(data_type(XLA_FFI_DataType(-1)), None);
        assert_eq!(xla_type(DataType::new(DataTypeCode::FLOAT, 32, 4)), None);
    }

    #[test]
    fn names_are_the_headers() {
        assert_eq!(
            XLA_FFI_DataType::F8E4M3B11FNUZ.name(),
            Some("F8E4M3B11FNUZ")
        );
        assert_eq!(
            super::super::ffi::XLA_FFI_DataType_F32,
            XLA_FFI_DataType(11)
        );
        assert_eq!(XLA_FFI_DataType(99).name(), None);
    }
}
