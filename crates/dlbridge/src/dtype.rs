//! Element data types: the `DLDataType` triple of code, bits and lanes, with names.
//!
//! Vocabulary, like `version`, `device` and `flags`: it imports nothing of the crate. The
//! header's rule for a valid data type, [`DataType::check`], reports an `Error` and is part of
//! validation (V4), so it is defined in the `validate` module.

use std::fmt;
use std::str::FromStr;

/// The kind of an element type (`DLDataTypeCode` in `dlpack.h`, stored as `uint8_t`).
///
/// A newtype over the integer, never a Rust enum: an unknown code from a producer must not be
/// undefined behaviour. Unknown codes are kept and reported by number.
///
/// ```
/// use dlbridge::DataTypeCode;
/// assert_eq!(DataTypeCode::FLOAT8_E4M3FN.name(), Some("float8_e4m3fn"));
/// assert_eq!(DataTypeCode(99).name(), None);
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DataTypeCode(pub u8);

impl DataTypeCode {
    /// `kDLInt`: signed integer.
    pub const INT: DataTypeCode = DataTypeCode(0);
    /// `kDLUInt`: unsigned integer.
    pub const UINT: DataTypeCode = DataTypeCode(1);
    /// `kDLFloat`: IEEE floating point.
    pub const FLOAT: DataTypeCode = DataTypeCode(2);
    /// `kDLOpaqueHandle`: an opaque handle, reserved for testing.
    pub const OPAQUE_HANDLE: DataTypeCode = DataTypeCode(3);
    /// `kDLBfloat`: brain floating point.
    pub const BFLOAT: DataTypeCode = DataTypeCode(4);
    /// `kDLComplex`: complex number, a compact pair of floats.
    pub const COMPLEX: DataTypeCode = DataTypeCode(5);
    /// `kDLBool`: boolean, one byte per element.
    pub const BOOL: DataTypeCode = DataTypeCode(6);
    /// `kDLFloat8_e3m4`.
    pub const FLOAT8_E3M4: DataTypeCode = DataTypeCode(7);
    /// `kDLFloat8_e4m3`.
    pub const FLOAT8_E4M3: DataTypeCode = DataTypeCode(8);
    /// `kDLFloat8_e4m3b11fnuz`.
    pub const FLOAT8_E4M3B11FNUZ: DataTypeCode = DataTypeCode(9);
    /// `kDLFloat8_e4m3fn`.
    pub const FLOAT8_E4M3FN: DataTypeCode = DataTypeCode(10);
    /// `kDLFloat8_e4m3fnuz`.
    pub const FLOAT8_E4M3FNUZ: DataTypeCode = DataTypeCode(11);
    /// `kDLFloat8_e5m2`.
    pub const FLOAT8_E5M2: DataTypeCode = DataTypeCode(12);
    /// `kDLFloat8_e5m2fnuz`.
    pub const FLOAT8_E5M2FNUZ: DataTypeCode = DataTypeCode(13);
    /// `kDLFloat8_e8m0fnu`.
    pub const FLOAT8_E8M0FNU: DataTypeCode = DataTypeCode(14);
    /// `kDLFloat6_e2m3fn` (6 bits, packed unless the padded flag is set).
    pub const FLOAT6_E2M3FN: DataTypeCode = DataTypeCode(15);
    /// `kDLFloat6_e3m2fn` (6 bits, packed unless the padded flag is set).
    pub const FLOAT6_E3M2FN: DataTypeCode = DataTypeCode(16);
    /// `kDLFloat4_e2m1fn` (4 bits, packed unless the padded flag is set).
    pub const FLOAT4_E2M1FN: DataTypeCode = DataTypeCode(17);
    /// `kDLBcomplex`: complex number of two bfloat16s, 32 bits, laid out as `kDLComplex` (a
    /// compact {real, imaginary} pair per number). Added after the 1.3 tag, on DLPack's main
    /// branch (dmlc/dlpack#187).
    pub const BCOMPLEX: DataTypeCode = DataTypeCode(18);

    /// Every code named in `dlpack.h` 1.3 and on DLPack's main branch after it
    /// ([`DataTypeCode::BCOMPLEX`]), in value order.
    pub const ALL: [DataTypeCode; 19] = [
        Self::INT,
        Self::UINT,
        Self::FLOAT,
        Self::OPAQUE_HANDLE,
        Self::BFLOAT,
        Self::COMPLEX,
        Self::BOOL,
        Self::FLOAT8_E3M4,
        Self::FLOAT8_E4M3,
        Self::FLOAT8_E4M3B11FNUZ,
        Self::FLOAT8_E4M3FN,
        Self::FLOAT8_E4M3FNUZ,
        Self::FLOAT8_E5M2,
        Self::FLOAT8_E5M2FNUZ,
        Self::FLOAT8_E8M0FNU,
        Self::FLOAT6_E2M3FN,
        Self::FLOAT6_E3M2FN,
        Self::FLOAT4_E2M1FN,
        Self::BCOMPLEX,
    ];

    /// The code's name: the prefix of a bit width for the width-generic codes (`"int"`,
    /// `"uint"`, `"float"`, `"bfloat"`, `"complex"`, `"bcomplex"`), the full type name otherwise (`"bool"`,
    /// `"handle"`, `"float8_e5m2"`); `None` for a value the header does not define.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "int",
            1 => "uint",
            2 => "float",
            3 => "handle",
            4 => "bfloat",
            5 => "complex",
            6 => "bool",
            7 => "float8_e3m4",
            8 => "float8_e4m3",
            9 => "float8_e4m3b11fnuz",
            10 => "float8_e4m3fn",
            11 => "float8_e4m3fnuz",
            12 => "float8_e5m2",
            13 => "float8_e5m2fnuz",
            14 => "float8_e8m0fnu",
            15 => "float6_e2m3fn",
            16 => "float6_e3m2fn",
            17 => "float4_e2m1fn",
            18 => "bcomplex",
            _ => return None,
        })
    }

    /// Whether the header defines this code.
    pub const fn is_known(self) -> bool {
        self.name().is_some()
    }

    /// The only bit width this code can have, for the codes whose name fixes it: 16 for
    /// bfloat, 8 for the float8 family, 6 for float6, 4 for float4, 32 for bcomplex (two
    /// bfloat16s). `None` for the others.
    pub const fn required_bits(self) -> Option<u8> {
        match self.0 {
            4 => Some(16),
            7..=14 => Some(8),
            15 | 16 => Some(6),
            17 => Some(4),
            18 => Some(32),
            _ => None,
        }
    }

    /// Whether the name is a prefix to which the bit width is appended (`int32`, `float16`).
    const fn is_width_generic(self) -> bool {
        matches!(self.0, 0 | 1 | 2 | 4 | 5 | 18)
    }
}

impl fmt::Debug for DataTypeCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "DataTypeCode({name})"),
            None => write!(f, "DataTypeCode({})", self.0),
        }
    }
}

/// An element type (`DLDataType` in `dlpack.h`): a code, the bits of one lane, and the number
/// of lanes (vector width, 1 for scalars).
///
/// Printed and parsed as the usual names: `"float32"`, `"bfloat16"`, `"float8_e4m3fn"`,
/// `"complex64"`, `"bool"`, and a lane suffix for vectors, `"float32x4"`. A combination without
/// a usual name prints as `"dtype(code=C,bits=B)"`, which parses back too.
///
/// ```
/// use dlbridge::DataType;
/// let dt: DataType = "float32x4".parse().unwrap();
/// assert_eq!(dt, DataType::FLOAT32.with_lanes(4));
/// assert_eq!(DataType::FLOAT8_E4M3FN.to_string(), "float8_e4m3fn");
/// assert_eq!(DataType::COMPLEX64.size_in_bytes(), Some(8));
/// assert_eq!(DataType::FLOAT4_E2M1FN.size_in_bytes(), None); // packed: two per byte
/// ```
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct DataType {
    /// The kind of number.
    pub code: DataTypeCode,
    /// Bits of one lane.
    pub bits: u8,
    /// Number of lanes; 1 for scalars.
    pub lanes: u16,
}

macro_rules! dtype_consts {
    ($($name:ident = $code:ident, $bits:expr;)*) => {
        impl DataType {
            $(
                #[doc = concat!("`", stringify!($code), "` with ", stringify!($bits), " bits, one lane.")]
                pub const $name: DataType = DataType::new(DataTypeCode::$code, $bits, 1);
            )*
        }
    };
}

dtype_consts! {
    INT8 = INT, 8;
    INT16 = INT, 16;
    INT32 = INT, 32;
    INT64 = INT, 64;
    UINT8 = UINT, 8;
    UINT16 = UINT, 16;
    UINT32 = UINT, 32;
    UINT64 = UINT, 64;
    FLOAT16 = FLOAT, 16;
    FLOAT32 = FLOAT, 32;
    FLOAT64 = FLOAT, 64;
    BFLOAT16 = BFLOAT, 16;
    COMPLEX64 = COMPLEX, 64;
    COMPLEX128 = COMPLEX, 128;
    BOOL = BOOL, 8;
    HANDLE = OPAQUE_HANDLE, 64;
    FLOAT8_E3M4 = FLOAT8_E3M4, 8;
    FLOAT8_E4M3 = FLOAT8_E4M3, 8;
    FLOAT8_E4M3B11FNUZ = FLOAT8_E4M3B11FNUZ, 8;
    FLOAT8_E4M3FN = FLOAT8_E4M3FN, 8;
    FLOAT8_E4M3FNUZ = FLOAT8_E4M3FNUZ, 8;
    FLOAT8_E5M2 = FLOAT8_E5M2, 8;
    FLOAT8_E5M2FNUZ = FLOAT8_E5M2FNUZ, 8;
    FLOAT8_E8M0FNU = FLOAT8_E8M0FNU, 8;
    FLOAT6_E2M3FN = FLOAT6_E2M3FN, 6;
    FLOAT6_E3M2FN = FLOAT6_E3M2FN, 6;
    FLOAT4_E2M1FN = FLOAT4_E2M1FN, 4;
    BCOMPLEX32 = BCOMPLEX, 32;
}

impl DataType {
    /// A data type from its three fields, unchecked (see [`DataType::check`]).
    pub const fn new(code: DataTypeCode, bits: u8, lanes: u16) -> Self {
        DataType { code, bits, lanes }
    }

    /// A signed integer of `bits` bits.
    pub const fn int(bits: u8) -> Self {
        Self::new(DataTypeCode::INT, bits, 1)
    }

    /// An unsigned integer of `bits` bits.
    pub const fn uint(bits: u8) -> Self {
        Self::new(DataTypeCode::UINT, bits, 1)
    }

    /// An IEEE float of `bits` bits.
    pub const fn float(bits: u8) -> Self {
        Self::new(DataTypeCode::FLOAT, bits, 1)
    }

    /// A complex number of `bits` bits in all (64 for two `f32`).
    pub const fn complex(bits: u8) -> Self {
        Self::new(DataTypeCode::COMPLEX, bits, 1)
    }

    /// The same type with `lanes` lanes (a vector type when `lanes > 1`).
    pub const fn with_lanes(self, lanes: u16) -> Self {
        Self::new(self.code, self.bits, lanes)
    }

    /// Bits of one element, all lanes together.
    pub const fn bits_per_element(self) -> u32 {
        self.bits as u32 * self.lanes as u32
    }

    /// Whether one lane is smaller than a byte (float4, float6, int4...): such elements are
    /// packed, little bit-endian, unless the tensor carries the padded flag.
    pub const fn is_sub_byte(self) -> bool {
        self.bits < 8
    }

    /// Whether a legacy `DLManagedTensor` of this type stores its sub-byte elements padded to
    /// one byte each: the flag that says so (IS_SUBBYTE_TYPE_PADDED) exists only on
    /// `DLManagedTensorVersioned`, so the layout of a legacy tensor follows from its type.
    ///
    /// - Integers and booleans (codes `kDLInt`, `kDLUInt`, `kDLBool`) narrower than a byte,
    ///   with one lane: **padded**, one byte per element. This is what legacy producers did:
    ///   MXNet exports its bool as `uint1` over one byte per element (the convention from
    ///   before `kDLBool`), and TVM's runtime before tvm-ffi sized every tensor as
    ///   `elements * ceil(bits * lanes / 8)` bytes.
    /// - Vectors of such integers whose lanes fill whole bytes (`uint4x2`): packed, which is
    ///   the same size as that formula.
    /// - Other vectors of such integers (`uint1x3`): `None`, no agreed layout; a legacy tensor
    ///   of that type is refused ([`Error::AmbiguousLegacySubByte`](crate::Error)).
    /// - Every other type: packed as the header says (`false`). The float4 and float6 codes
    ///   came with DLPack 1.1, whose header defines them packed, and producers send them so on
    ///   the legacy path too (JAX's `float4_e2m1fn`, PyTorch's `float4_e2m1fn_x2`).
    ///
    /// ```
    /// use dlbridge::DataType;
    /// assert_eq!(DataType::uint(1).legacy_sub_byte_padding(), Some(true)); // MXNet's bool
    /// assert_eq!(DataType::FLOAT4_E2M1FN.legacy_sub_byte_padding(), Some(false));
    /// assert_eq!(DataType::uint(4).with_lanes(2).legacy_sub_byte_padding(), Some(false));
    /// assert_eq!(DataType::uint(1).with_lanes(3).legacy_sub_byte_padding(), None);
    /// assert_eq!(DataType::FLOAT32.legacy_sub_byte_padding(), Some(false));
    /// ```
    pub const fn legacy_sub_byte_padding(self) -> Option<bool> {
        let code = self.code.0;
        let integer = code == DataTypeCode::INT.0
            || code == DataTypeCode::UINT.0
            || code == DataTypeCode::BOOL.0;
        if !self.is_sub_byte() || !integer {
            Some(false)
        } else if self.lanes == 1 {
            Some(true)
        } else if self.bits_per_element() % 8 == 0 {
            Some(false)
        } else {
            None
        }
    }

    /// The bytes of one element when elements are byte-addressable: `ceil(bits * lanes / 8)`.
    /// `None` for sub-byte types, which are packed (see [`DataType::storage_bytes`]), and for
    /// invalid types with zero bits or lanes.
    pub const fn size_in_bytes(self) -> Option<usize> {
        if self.bits == 0 || self.lanes == 0 || self.is_sub_byte() {
            None
        } else {
            Some(self.bits_per_element().div_ceil(8) as usize)
        }
    }

    /// Bytes needed to store `count` elements compactly: packed sub-byte types take
    /// `ceil(count * lanes * bits / 8)` bytes, padded ones a byte per lane, every other type
    /// `count * ceil(bits * lanes / 8)`. `None` on overflow.
    pub const fn storage_bytes(self, count: u64, subbyte_padded: bool) -> Option<u64> {
        let lanes = self.lanes as u64;
        let bits = self.bits as u64;
        if self.is_sub_byte() {
            let Some(lane_count) = count.checked_mul(lanes) else {
                return None;
            };
            if subbyte_padded {
                Some(lane_count)
            } else {
                match lane_count.checked_mul(bits) {
                    Some(total_bits) => Some(total_bits.div_ceil(8)),
                    None => None,
                }
            }
        } else {
            count.checked_mul((bits * lanes).div_ceil(8))
        }
    }

    /// Whether this type has a usual name (see the type's documentation).
    fn has_usual_name(self) -> bool {
        match self.code.required_bits() {
            Some(bits) => bits == self.bits,
            // "float8" or "complex16" would be mistaken for real types: keep those generic.
            None if self.code == DataTypeCode::FLOAT => matches!(self.bits, 16 | 32 | 64),
            None if self.code == DataTypeCode::COMPLEX => matches!(self.bits, 32 | 64 | 128),
            // Integers: the power-of-two widths frameworks use, sub-byte ones included.
            None if self.code.is_width_generic() => {
                matches!(self.bits, 1 | 2 | 4 | 8 | 16 | 32 | 64)
            }
            None => {
                (self.code == DataTypeCode::BOOL && self.bits == 8)
                    || (self.code == DataTypeCode::OPAQUE_HANDLE && self.bits == 64)
            }
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code.name() {
            Some(name) if self.has_usual_name() => {
                f.write_str(name)?;
                if self.code.is_width_generic() {
                    write!(f, "{}", self.bits)?;
                }
            }
            _ => write!(f, "dtype(code={},bits={})", self.code.0, self.bits)?,
        }
        if self.lanes != 1 {
            write!(f, "x{}", self.lanes)?;
        }
        Ok(())
    }
}

/// The error of parsing a [`DataType`] from a string that names none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseDataTypeError {
    text: String,
}

impl fmt::Display for ParseDataTypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a DLPack data type name (expected e.g. \"float32\", \"bfloat16\", \
             \"float8_e4m3fn\", \"complex64\", \"bool\", \"float32x4\")",
            self.text
        )
    }
}

impl std::error::Error for ParseDataTypeError {}

impl FromStr for DataType {
    type Err = ParseDataTypeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || ParseDataTypeError {
            text: text.to_owned(),
        };
        if let Some(scalar) = parse_scalar(text) {
            return Ok(scalar);
        }
        // "complex64" holds an 'x' too: a lane suffix is only tried once the whole text is no
        // scalar name.
        let (base, lanes) = text.rsplit_once('x').ok_or_else(error)?;
        let lanes: u16 = parse_decimal(lanes).filter(|&l| l != 0).ok_or_else(error)?;
        let scalar = parse_scalar(base).ok_or_else(error)?;
        Ok(scalar.with_lanes(lanes))
    }
}

fn parse_scalar(base: &str) -> Option<DataType> {
    if let Some(generic) = base
        .strip_prefix("dtype(code=")
        .and_then(|rest| rest.strip_suffix(')'))
    {
        let (code, bits) = generic.split_once(",bits=")?;
        let bits: u8 = parse_decimal(bits)?;
        let code = DataTypeCode(parse_decimal(code)?);
        return (bits != 0).then_some(DataType::new(code, bits, 1));
    }
    if let Some(code) = DataTypeCode::ALL
        .into_iter()
        .find(|code| !code.is_width_generic() && code.name() == Some(base))
    {
        let bits = match code {
            DataTypeCode::BOOL => 8,
            DataTypeCode::OPAQUE_HANDLE => 64,
            _ => code.required_bits()?,
        };
        return Some(DataType::new(code, bits, 1));
    }
    // Longest prefixes first, so that "bfloat16" is not read as "float" after a stray "b".
    for code in [
        DataTypeCode::BCOMPLEX,
        DataTypeCode::COMPLEX,
        DataTypeCode::BFLOAT,
        DataTypeCode::FLOAT,
        DataTypeCode::UINT,
        DataTypeCode::INT,
    ] {
        if let Some(bits) = base.strip_prefix(code.name()?) {
            let bits: u8 = parse_decimal(bits)?;
            let dtype = DataType::new(code, bits, 1);
            return dtype.has_usual_name().then_some(dtype);
        }
    }
    None
}

/// Parses plain decimal digits only (no sign, no spaces).
fn parse_decimal<T: FromStr>(digits: &str) -> Option<T> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMED: [(DataType, &str); 28] = [
        (DataType::INT8, "int8"),
        (DataType::INT16, "int16"),
        (DataType::INT32, "int32"),
        (DataType::INT64, "int64"),
        (DataType::UINT8, "uint8"),
        (DataType::UINT16, "uint16"),
        (DataType::UINT32, "uint32"),
        (DataType::UINT64, "uint64"),
        (DataType::FLOAT16, "float16"),
        (DataType::FLOAT32, "float32"),
        (DataType::FLOAT64, "float64"),
        (DataType::BFLOAT16, "bfloat16"),
        (DataType::COMPLEX64, "complex64"),
        (DataType::COMPLEX128, "complex128"),
        (DataType::BOOL, "bool"),
        (DataType::HANDLE, "handle"),
        (DataType::FLOAT8_E3M4, "float8_e3m4"),
        (DataType::FLOAT8_E4M3, "float8_e4m3"),
        (DataType::FLOAT8_E4M3B11FNUZ, "float8_e4m3b11fnuz"),
        (DataType::FLOAT8_E4M3FN, "float8_e4m3fn"),
        (DataType::FLOAT8_E4M3FNUZ, "float8_e4m3fnuz"),
        (DataType::FLOAT8_E5M2, "float8_e5m2"),
        (DataType::FLOAT8_E5M2FNUZ, "float8_e5m2fnuz"),
        (DataType::FLOAT8_E8M0FNU, "float8_e8m0fnu"),
        (DataType::FLOAT6_E2M3FN, "float6_e2m3fn"),
        (DataType::FLOAT6_E3M2FN, "float6_e3m2fn"),
        (DataType::FLOAT4_E2M1FN, "float4_e2m1fn"),
        (DataType::BCOMPLEX32, "bcomplex32"),
    ];

    #[test]
    fn bcomplex_is_two_bfloat16s_in_32_bits() {
        // dmlc/dlpack#187: code 18, a compact {real, imaginary} pair of bfloat16s.
        let dtype: DataType = "bcomplex32".parse().unwrap();
        assert_eq!(dtype, DataType::BCOMPLEX32);
        assert_eq!(dtype.code, DataTypeCode(18));
        assert_eq!(dtype.size_in_bytes(), Some(4));
        assert_eq!(
            <num_complex::Complex<half::bf16> as crate::Element>::DTYPE,
            dtype
        );
        assert_eq!(std::mem::size_of::<num_complex::Complex<half::bf16>>(), 4);
        // Its code fixes the width: another one has no usual name and fails the header's rule.
        let wide = DataType::new(DataTypeCode::BCOMPLEX, 64, 1);
        assert_eq!(wide.to_string(), "dtype(code=18,bits=64)");
        assert!(wide.check().is_err() && dtype.check().is_ok());
        assert!("bcomplex64".parse::<DataType>().is_err());
        assert_eq!("bcomplex32x2".parse::<DataType>(), Ok(dtype.with_lanes(2)));
    }

    #[test]
    fn every_named_type_prints_and_parses_its_name() {
        for (dtype, name) in NAMED {
            assert_eq!(dtype.to_string(), name);
            assert_eq!(name.parse::<DataType>(), Ok(dtype), "{name}");
            assert!(dtype.check().is_ok(), "{name}");
            let vector = dtype.with_lanes(4);
            assert_eq!(vector.to_string(), format!("{name}x4"));
            assert_eq!(vector.to_string().parse::<DataType>(), Ok(vector));
        }
    }

    #[test]
    fn every_header_code_is_covered_by_a_named_type() {
        for code in DataTypeCode::ALL {
            assert!(
                NAMED.iter().any(|(dtype, _)| dtype.code == code),
                "{code:?}"
            );
        }
    }

    #[test]
    fn unusual_combinations_print_generically_and_parse_back() {
        for dtype in [
            DataType::new(DataTypeCode(99), 8, 1),
            DataType::new(DataTypeCode::BOOL, 1, 1),
            DataType::new(DataTypeCode::FLOAT4_E2M1FN, 8, 2),
            DataType::new(DataTypeCode::OPAQUE_HANDLE, 32, 1),
        ] {
            let text = dtype.to_string();
            assert!(text.starts_with("dtype(code="), "{text}");
            assert_eq!(text.parse::<DataType>(), Ok(dtype), "{text}");
        }
        assert_eq!(
            DataType::new(DataTypeCode(200), 16, 3).to_string(),
            "dtype(code=200,bits=16)x3"
        );
    }

    #[test]
    fn malformed_names_are_rejected() {
        for text in [
            "",
            "float",
            "int0",
            "int7",
            "uint12",
            "float32x0",
            "float32x",
            "xfloat32",
            "float8",
            "Float32",
            "int 8",
            "int+8",
            "int256",
            "float4_e2m1",
            "bfloat8",
            "dtype(code=1,bits=0)",
            "float32x65536",
        ] {
            let err = text.parse::<DataType>();
            assert!(err.is_err(), "{text:?} parsed as {err:?}");
        }
        let message = "half".parse::<DataType>().unwrap_err().to_string();
        assert!(message.contains("\"half\""), "{message}");
    }

    #[test]
    fn storage_sizes_follow_the_header() {
        assert_eq!(DataType::FLOAT32.storage_bytes(10, false), Some(40));
        assert_eq!(
            DataType::FLOAT32.with_lanes(4).storage_bytes(2, false),
            Some(32)
        );
        assert_eq!(DataType::BOOL.storage_bytes(3, false), Some(3));
        assert_eq!(DataType::FLOAT4_E2M1FN.storage_bytes(3, false), Some(2));
        assert_eq!(DataType::FLOAT4_E2M1FN.storage_bytes(3, true), Some(3));
        assert_eq!(DataType::FLOAT6_E2M3FN.storage_bytes(4, false), Some(3));
        assert_eq!(
            DataType::new(DataTypeCode::INT, 12, 1).storage_bytes(2, false),
            Some(4)
        );
        assert_eq!(DataType::FLOAT64.storage_bytes(u64::MAX, false), None);
        assert_eq!(DataType::FLOAT64.size_in_bytes(), Some(8));
        assert_eq!(
            DataType::new(DataTypeCode::INT, 12, 1).size_in_bytes(),
            Some(2)
        );
    }
}
