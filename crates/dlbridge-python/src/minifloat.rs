//! Encoding small non-negative integers in the float8 formats, for `arange`.

use dlbridge::DataType;

/// How a float8 format spends its bits and its special values.
#[derive(Clone, Copy)]
pub struct Format {
    exponent_bits: u32,
    mantissa_bits: u32,
    bias: i32,
    specials: Specials,
}

#[derive(Clone, Copy, PartialEq)]
enum Specials {
    /// IEEE-like: the all-ones exponent holds infinities and NaNs.
    Ieee,
    /// "fn": finite, only all-ones exponent and mantissa is NaN.
    FiniteNan,
    /// "fnuz": finite, unsigned zero, NaN is 0x80: every exponent holds numbers.
    FiniteUnsignedZero,
}

impl Format {
    /// The format of a float8 data type (not e8m0fnu, which has no zero).
    pub fn of(dtype: DataType) -> Option<Self> {
        let (exponent_bits, mantissa_bits, bias, specials) = match dtype {
            DataType::FLOAT8_E3M4 => (3, 4, 3, Specials::Ieee),
            DataType::FLOAT8_E4M3 => (4, 3, 7, Specials::Ieee),
            DataType::FLOAT8_E4M3FN => (4, 3, 7, Specials::FiniteNan),
            DataType::FLOAT8_E4M3FNUZ => (4, 3, 8, Specials::FiniteUnsignedZero),
            DataType::FLOAT8_E4M3B11FNUZ => (4, 3, 11, Specials::FiniteUnsignedZero),
            DataType::FLOAT8_E5M2 => (5, 2, 15, Specials::Ieee),
            DataType::FLOAT8_E5M2FNUZ => (5, 2, 16, Specials::FiniteUnsignedZero),
            _ => return None,
        };
        Some(Format {
            exponent_bits,
            mantissa_bits,
            bias,
            specials,
        })
    }

    /// The bits of `value` rounded to nearest, ties to even; `None` when it overflows to
    /// infinity or NaN.
    pub fn encode_integer(self, value: u64) -> Option<u8> {
        if value == 0 {
            return Some(0);
        }
        let mut exponent = 63 - value.leading_zeros(); // floor(log2(value))
        let fraction = value - (1 << exponent); // value = 2^e * (1 + fraction / 2^e)
        let scaled = u128::from(fraction) << self.mantissa_bits;
        let mut mantissa = (scaled >> exponent) as u64;
        let remainder = scaled & ((1u128 << exponent) - 1);
        let half = if exponent == 0 {
            0
        } else {
            1u128 << (exponent - 1)
        };
        if exponent > 0 && (remainder > half || (remainder == half && mantissa & 1 == 1)) {
            mantissa += 1;
        }
        if mantissa == 1 << self.mantissa_bits {
            mantissa = 0;
            exponent += 1;
        }
        let field = i64::from(exponent) + i64::from(self.bias);
        let all_ones = (1i64 << self.exponent_bits) - 1;
        let top = if self.specials == Specials::Ieee {
            all_ones - 1
        } else {
            all_ones
        };
        let nan_mantissa = (1u64 << self.mantissa_bits) - 1;
        if field > top
            || (self.specials == Specials::FiniteNan
                && field == all_ones
                && mantissa == nan_mantissa)
        {
            return None;
        }
        Some(((field as u64) << self.mantissa_bits | mantissa) as u8)
    }
}
