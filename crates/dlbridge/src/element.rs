//! Rust element types and the DLPack data types they correspond to.

use half::{bf16, f16};
use num_complex::Complex;

use crate::dtype::DataType;

/// A Rust type whose values are laid out exactly as elements of a DLPack data type.
///
/// Typed access checks the tensor's data type against [`Element::DTYPE`] and refuses a
/// mismatch: no transmute ever happens behind the caller's back.
///
/// # Safety
///
/// `DTYPE` must be a whole-byte data type of exactly `size_of::<Self>()` bytes
/// (`DTYPE.size_in_bytes() == Some(size_of::<Self>())`: never a sub-byte type, whose
/// elements share bytes; typed access refuses such an implementation with
/// [`crate::Error::ElementSize`]), those bytes must hold one element of `DTYPE` in native byte
/// order, `Self` must have no padding bytes (its bytes are read back as `u8`), and every bit
/// pattern of that size must be a valid `Self`, unless [`Element::HAS_INVALID_BIT_PATTERNS`]
/// is `true` and [`Element::is_valid_bit_pattern`] rejects exactly the invalid ones.
///
/// ```
/// use dlbridge::{DataType, Element};
/// assert_eq!(<f32 as Element>::DTYPE, DataType::FLOAT32);
/// assert_eq!(<half::bf16 as Element>::DTYPE.to_string(), "bfloat16");
/// assert_eq!(<num_complex::Complex<f64> as Element>::DTYPE, DataType::COMPLEX128);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a DLPack element type",
    label = "not an element type",
    note = "element types: bool, i8, i16, i32, i64, u8, u16, u32, u64, half::f16, half::bf16, \
            f32, f64, num_complex::Complex<f32>, num_complex::Complex<f64>, \
            num_complex::Complex<half::bf16>"
)]
pub unsafe trait Element: Copy + Send + Sync + 'static {
    /// The DLPack data type of one value.
    const DTYPE: DataType;

    /// Whether some bit patterns are not valid values (`true` only for `bool`): foreign data
    /// is then checked element by element before any reference to it is made.
    const HAS_INVALID_BIT_PATTERNS: bool = false;

    /// Whether the bytes of one element (`size_of::<Self>()` of them) form a valid value.
    /// `true` for every type but `bool`, whose byte must be 0 or 1.
    #[inline]
    fn is_valid_bit_pattern(bytes: &[u8]) -> bool {
        let _ = bytes;
        true
    }
}

macro_rules! elements {
    ($($ty:ty => $dtype:ident,)*) => {
        $(
            // SAFETY: the primitive's size and layout are those of the named DLPack type
            // (two's complement integers, IEEE floats, `half`'s 16-bit formats, and
            // `num_complex::Complex`, which is `#[repr(C)]` {re, im} as DLPack's complex is),
            // and every bit pattern is a valid value.
            unsafe impl Element for $ty {
                const DTYPE: DataType = DataType::$dtype;
            }
        )*
    };
}

elements! {
    i8 => INT8,
    i16 => INT16,
    i32 => INT32,
    i64 => INT64,
    u8 => UINT8,
    u16 => UINT16,
    u32 => UINT32,
    u64 => UINT64,
    f16 => FLOAT16,
    f32 => FLOAT32,
    f64 => FLOAT64,
    bf16 => BFLOAT16,
    Complex<f32> => COMPLEX64,
    Complex<f64> => COMPLEX128,
    Complex<bf16> => BCOMPLEX32,
}

// SAFETY: `bool` is one byte; only 0 and 1 are valid, which `is_valid_bit_pattern` enforces
// before any `&bool` is made from foreign memory.
unsafe impl Element for bool {
    const DTYPE: DataType = DataType::BOOL;
    const HAS_INVALID_BIT_PATTERNS: bool = true;

    #[inline]
    fn is_valid_bit_pattern(bytes: &[u8]) -> bool {
        matches!(bytes, [0 | 1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;

    fn check<T: Element>() {
        assert_eq!(
            T::DTYPE.size_in_bytes(),
            Some(size_of::<T>()),
            "{}",
            T::DTYPE
        );
    }

    #[test]
    fn sizes_match_the_data_types() {
        check::<i8>();
        check::<i16>();
        check::<i32>();
        check::<i64>();
        check::<u8>();
        check::<u16>();
        check::<u32>();
        check::<u64>();
        check::<f16>();
        check::<f32>();
        check::<f64>();
        check::<bf16>();
        check::<Complex<f32>>();
        check::<Complex<f64>>();
        check::<Complex<bf16>>();
        check::<bool>();
    }

    #[test]
    fn only_zero_and_one_are_valid_bools() {
        assert!(bool::is_valid_bit_pattern(&[0]));
        assert!(bool::is_valid_bit_pattern(&[1]));
        assert!(!bool::is_valid_bit_pattern(&[2]));
        assert!(!bool::is_valid_bit_pattern(&[0xff]));
    }
}
