//! The element types host memory names without DLPack, in one table read three ways: the
//! `struct`-module formats of the buffer protocol (into a DLPack data type when importing,
//! out of one when exporting) and NumPy's built-in type numbers.
//!
//! The two vocabularies name the same C types: NumPy's type characters are the `struct`
//! module's (`NPY_LONG` is `l`, `NPY_CFLOAT` is `Zf`), so one row per C type serves both.

use std::ffi::{c_int, c_long};

use dlbridge::DataType;

/// A C element type of host memory.
struct HostType {
    /// Its `struct`-module format in native byte order and size.
    format: &'static str,
    /// Its NumPy type number (`NPY_BOOL` = 0 ... `NPY_HALF` = 23).
    numpy_type: c_int,
    /// Its DLPack data type on this platform.
    dtype: DataType,
}

const fn host_type(format: &'static str, numpy_type: c_int, dtype: DataType) -> HostType {
    HostType {
        format,
        numpy_type,
        dtype,
    }
}

/// The width of C's `int` and `long`, which name different fixed widths per platform.
const INT_BITS: u8 = (std::mem::size_of::<c_int>() * 8) as u8;
const LONG_BITS: u8 = (std::mem::size_of::<c_long>() * 8) as u8;

/// Every host element type with a DLPack data type, in export preference: where two formats
/// name one data type (int64 is `q`, and `l` on LP64 platforms), the first row's is what an
/// export shows.
const HOST_TYPES: [HostType; 16] = [
    host_type("?", 0, DataType::BOOL),
    host_type("b", 1, DataType::INT8),
    host_type("B", 2, DataType::UINT8),
    host_type("h", 3, DataType::INT16),
    host_type("H", 4, DataType::UINT16),
    host_type("i", 5, DataType::int(INT_BITS)),
    host_type("I", 6, DataType::uint(INT_BITS)),
    host_type("q", 9, DataType::INT64),
    host_type("Q", 10, DataType::UINT64),
    host_type("l", 7, DataType::int(LONG_BITS)),
    host_type("L", 8, DataType::uint(LONG_BITS)),
    host_type("e", 23, DataType::FLOAT16),
    host_type("f", 11, DataType::FLOAT32),
    host_type("d", 12, DataType::FLOAT64),
    host_type("Zf", 14, DataType::COMPLEX64),
    host_type("Zd", 15, DataType::COMPLEX128),
];

/// One past the largest NumPy type number in [`HOST_TYPES`].
const NUMPY_TYPES: usize = 24;

/// [`HOST_TYPES`] indexed by NumPy type number, built at compile time: the NumPy path looks a
/// type up on every argument.
const BY_NUMPY_TYPE: [Option<DataType>; NUMPY_TYPES] = {
    let mut table = [None; NUMPY_TYPES];
    let mut row = 0;
    while row < HOST_TYPES.len() {
        table[HOST_TYPES[row].numpy_type as usize] = Some(HOST_TYPES[row].dtype);
        row += 1;
    }
    table
};

/// The DLPack data type of a built-in NumPy type number (`NPY_FLOAT` and so on); `None` for
/// the types DLPack has no code for (objects, strings, dates, `longdouble`, user types).
#[inline(always)]
pub(crate) fn dtype_of_numpy_type(numpy_type: c_int) -> Option<DataType> {
    usize::try_from(numpy_type)
        .ok()
        .and_then(|index| BY_NUMPY_TYPE.get(index).copied().flatten())
}

/// The NumPy type number for elements of `dtype` (one lane), for building a NumPy array:
/// where two C types have the data type (int64 is `long long` and, on LP64 platforms,
/// `long`), the later row's, `long`, which is what NumPy itself gives `int64` there. `None`
/// for the types NumPy has no number for (bfloat16, the float8 family, sub-byte types).
pub(crate) fn numpy_type_of(dtype: DataType) -> Option<c_int> {
    HOST_TYPES
        .iter()
        .rev()
        .find(|row| row.dtype == dtype)
        .map(|row| row.numpy_type)
}

/// The DLPack data type of a buffer-protocol format with items of `itemsize` bytes, for the
/// formats host tensors use, in native byte order only (`@`, `=`, and `<` or `>` where it is
/// the native one). The integers other than `b`, `B`, `h` and `H` take their width from the
/// item size, since `=l` (standard size) and `@l` (native) differ.
pub(crate) fn dtype_of_buffer_format(format: &[u8], itemsize: isize) -> Option<DataType> {
    let format = match format {
        [b'@' | b'=' | b'<', rest @ ..] if cfg!(target_endian = "little") => rest,
        [b'@' | b'=' | b'>', rest @ ..] if cfg!(target_endian = "big") => rest,
        other => other,
    };
    let bits = u8::try_from(itemsize.checked_mul(8)?).ok()?;
    let dtype = match format {
        b"i" | b"l" | b"q" => DataType::int(bits),
        b"I" | b"L" | b"Q" => DataType::uint(bits),
        _ => {
            HOST_TYPES
                .iter()
                .find(|row| row.format.as_bytes() == format)?
                .dtype
        }
    };
    (dtype.size_in_bytes() == Some(itemsize as usize)).then_some(dtype)
}

/// The buffer-protocol format (`struct` module syntax) that exposes elements of `dtype`, for
/// a class of one's own implementing `__getbuffer__` over a tensor: the type's own code where
/// the `struct` module has one, and for the other byte-addressable types (bfloat16, the
/// float8 family, unknown codes) the unsigned integer of the same width, so that the raw bits
/// are exposed (NumPy sees uint16 for bfloat16, uint8 for float8). Vectors of `lanes > 1`
/// are prefixed with their count. `None` for sub-byte and odd-width types.
///
/// ```
/// use dlbridge::DataType;
/// use dlbridge_pyo3::produce::buffer_format;
///
/// assert_eq!(buffer_format(DataType::FLOAT32).as_deref(), Some("f"));
/// assert_eq!(buffer_format(DataType::INT64).as_deref(), Some("q"));
/// assert_eq!(buffer_format(DataType::BFLOAT16).as_deref(), Some("H"));
/// assert_eq!(buffer_format(DataType::new(DataType::FLOAT32.code, 32, 4)).as_deref(), Some("4f"));
/// assert_eq!(buffer_format(DataType::new(DataType::INT8.code, 4, 1)), None);
/// ```
pub fn buffer_format(dtype: DataType) -> Option<String> {
    let scalar = DataType::new(dtype.code, dtype.bits, 1);
    let named = HOST_TYPES
        .iter()
        .find(|row| row.dtype == scalar)
        .map(|row| row.format);
    let raw_bits = match scalar.bits {
        8 => Some("B"),
        16 => Some("H"),
        32 => Some("I"),
        64 => Some("Q"),
        _ => None,
    };
    let format = named.or(raw_bits)?;
    Some(if dtype.lanes == 1 {
        format.to_owned()
    } else {
        format!("{}{format}", dtype.lanes)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row reads back to itself in all three directions.
    #[test]
    fn the_table_reads_back_to_itself() {
        for row in &HOST_TYPES {
            let size = row.dtype.size_in_bytes().unwrap() as isize;
            assert_eq!(
                dtype_of_buffer_format(row.format.as_bytes(), size),
                Some(row.dtype),
                "{}",
                row.format
            );
            assert_eq!(dtype_of_numpy_type(row.numpy_type), Some(row.dtype));
            let numpy_type = numpy_type_of(row.dtype).unwrap();
            assert_eq!(dtype_of_numpy_type(numpy_type), Some(row.dtype));
            let exported = buffer_format(row.dtype).unwrap();
            assert_eq!(
                dtype_of_buffer_format(exported.as_bytes(), size),
                Some(row.dtype),
                "{exported}"
            );
        }
    }

    #[test]
    fn numpy_types_are_numpys_own_choice() {
        let long_is_64 = std::mem::size_of::<c_long>() == 8;
        assert_eq!(
            numpy_type_of(DataType::INT64),
            Some(if long_is_64 { 7 } else { 9 })
        );
        assert_eq!(numpy_type_of(DataType::FLOAT32), Some(11));
        assert_eq!(numpy_type_of(DataType::BFLOAT16), None);
        assert_eq!(
            numpy_type_of(DataType::new(DataType::FLOAT32.code, 32, 2)),
            None
        );
    }

    #[test]
    fn numpy_types_without_a_dlpack_code_are_none() {
        // NPY_LONGDOUBLE, NPY_CLONGDOUBLE, NPY_OBJECT, NPY_STRING, NPY_DATETIME, user types.
        for numpy_type in [13, 16, 17, 18, 21, 256, -1] {
            assert_eq!(dtype_of_numpy_type(numpy_type), None, "{numpy_type}");
        }
    }

    #[test]
    fn byte_order_and_sizes_are_checked() {
        assert_eq!(dtype_of_buffer_format(b"=l", 4), Some(DataType::INT32));
        assert_eq!(dtype_of_buffer_format(b"<d", 8), Some(DataType::FLOAT64));
        assert_eq!(dtype_of_buffer_format(b">d", 8), None);
        assert_eq!(dtype_of_buffer_format(b"d", 4), None);
        assert_eq!(dtype_of_buffer_format(b"b", 2), None);
        assert_eq!(dtype_of_buffer_format(b"x", 1), None);
        assert_eq!(dtype_of_buffer_format(b"i", isize::MAX), None);
    }

    #[test]
    fn exports_prefer_fixed_width_codes_and_expose_raw_bits() {
        assert_eq!(buffer_format(DataType::INT64).as_deref(), Some("q"));
        assert_eq!(buffer_format(DataType::UINT32).as_deref(), Some("I"));
        assert_eq!(buffer_format(DataType::FLOAT8_E4M3FN).as_deref(), Some("B"));
        assert_eq!(buffer_format(DataType::COMPLEX64).as_deref(), Some("Zf"));
    }
}
