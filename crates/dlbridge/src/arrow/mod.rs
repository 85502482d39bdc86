//! Zero-copy conversion between managed tensors and Arrow buffers, primitive arrays and
//! `arrow.fixed_shape_tensor` columns (feature `arrow`, arrow-rs 60).
//!
//! To Arrow, the tensor is moved into what Arrow makes and kept alive by it: its deleter runs
//! when Arrow drops the last reference (a buffer, an array, or any slice or clone of them),
//! on whatever thread that happens.
//!
//! - [`ArrowTensorExt::into_arrow_buffer`]: the bytes of a C-contiguous tensor as a `Buffer`;
//! - [`ArrowTensorExt::into_arrow_array`]: a 1-D tensor as a `PrimitiveArray<T>`, or
//!   [`ArrowTensorExt::into_arrow_array_of_its_type`] as an `ArrayRef` of its own type
//!   ([`arrow_type`] says which);
//! - [`ArrowTensorExt::into_fixed_shape_tensor`]: a tensor of two or more dimensions as a
//!   `FixedSizeListArray` with a field carrying the canonical `arrow.fixed_shape_tensor`
//!   extension type: one list per index of the first axis (the batch, or rows), each list one
//!   tensor of the remaining axes.
//!
//! From Arrow, the tensor keeps a clone of the array's values `Buffer` (a reference count, not
//! a copy), so it outlives the array if it must: [`ArrowTensorExt::from_arrow_array`] and
//! [`ArrowTensorExt::from_fixed_shape_tensor`]. These tensors are versioned and flagged
//! READ_ONLY: Arrow buffers are immutable and shared (arrow-rs only hands out mutable access
//! to a buffer it owns alone, and the tensor's clone keeps it shared).
//!
//! Arrow's validity bitmaps have no DLPack counterpart: an array with nulls is refused, with
//! [`Error::Unrepresentable`], as is everything else one library cannot say in the other's
//! terms (`library: "arrow"`). Tensors on a device the CPU cannot read are refused with
//! [`Error::NotHostReadable`]: Arrow reads every buffer as host memory.
//!
//! # Data types
//!
//! | DLPack | Arrow | Rust (`T::Native`) |
//! |---|---|---|
//! | `int8`, `int16`, `int32`, `int64` | `Int8`, `Int16`, `Int32`, `Int64` | `i8` ... `i64` |
//! | `uint8`, `uint16`, `uint32`, `uint64` | `UInt8`, `UInt16`, `UInt32`, `UInt64` | `u8` ... `u64` |
//! | `float16` | `Float16` | `half::f16` |
//! | `float32`, `float64` | `Float32`, `Float64` | `f32`, `f64` |
//!
//! Refused, in arrays and columns, with [`Error::Unrepresentable`] naming the type:
//!
//! - `bool`: Arrow's `Boolean` is bit-packed (one bit per value) where DLPack's bool takes a
//!   byte, so no Arrow array can share its memory;
//! - `bfloat16` and `complex64`/`complex128`: Arrow has no such primitive type;
//! - the float8 types (`float8_e4m3fn`...), float6, float4 and every sub-byte integer: no
//!   Arrow type, and sub-byte elements share bytes;
//! - vector types (`lanes > 1`, `float32x4`), the opaque handle and unknown codes.
//!
//! The other way, Arrow's temporal, interval and decimal types (`Date32`, `Timestamp`,
//! `Decimal128`...) have no DLPack type and are refused; `PrimitiveArray::reinterpret_cast`
//! views a temporal array as its integers (`Int32Type`, `Int64Type`) without copying, for
//! whoever wants those.
//!
//! [`ArrowTensorExt::into_arrow_buffer`] takes the bytes of any whole-byte data type (`bool`,
//! `bfloat16`, complex and vector types included: a buffer is only bytes); sub-byte types are
//! refused there too.
//!
//! # The permutation of `arrow.fixed_shape_tensor`
//!
//! The extension stores each tensor row-major in its *physical* shape (`shape` in the
//! metadata); the optional `permutation` says how the *logical* tensor is made from it:
//! logical axis `i` is physical axis `permutation[i]`, so the logical shape is
//! `shape[permutation[i]]` (`FixedShapeTensor::logical_shape`), and the logical stride of
//! axis `i` is the row-major stride of physical axis `permutation[i]`.
//!
//! The DLPack tensor is the logical one, its first axis the batch. A tensor whose per-row
//! tensors are compact in some axis order (column-major cells, NHWC memory seen as NCHW...)
//! with the rows one after another is exported with the permutation that says so: its
//! physical axes are the logical ones sorted by decreasing stride. Any other layout (rows not
//! outermost, padding, broadcast or negative strides) is refused: copy it first
//! ([`crate::TensorView::to_compact_copy`]). On import the permutation becomes the strides.
//!
//! # The metadata, as the specification writes it
//!
//! The extension's metadata is JSON: `{"shape":[3,4]}`, and `{"shape":[3,2],"permutation":[1,0]}`
//! for a permuted layout. arrow-rs 60's `FixedShapeTensor` differs from the specification
//! twice: it names the key `"permutations"`, and it writes `null` for an absent
//! `"dim_names"` or `"permutations"`, which its own reader then refuses ("invalid type: null,
//! expected a sequence"), as do readers that take either key to hold an array. So
//! [`ArrowTensorExt::into_fixed_shape_tensor`] checks the column with arrow-rs's
//! `FixedShapeTensor` (the permutation, the storage type) and then writes the specification's
//! JSON itself: Arrow C++, pyarrow and `Field::try_extension_type::<FixedShapeTensor>` read a
//! column without permutation; a permuted column is read by the specification's readers and
//! by [`ArrowTensorExt::from_fixed_shape_tensor`], not by arrow-rs's `try_extension_type`
//! (which knows no key `"permutation"`). The import reads all three spellings: the
//! specification's, arrow-rs's, and `null` for an absent value.
//!
//! The tests are in `tests.rs` beside this file.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Arc;

use ::arrow_array::cast::AsArray;
use ::arrow_array::types::{
    ArrowPrimitiveType, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use ::arrow_array::{Array, ArrayRef, FixedSizeListArray, PrimitiveArray};
use ::arrow_buffer::alloc::Allocation;
use ::arrow_buffer::{Buffer, ScalarBuffer};
use ::arrow_schema::extension::{
    EXTENSION_TYPE_METADATA_KEY, ExtensionType, FixedShapeTensor, FixedShapeTensorMetadata,
};
use ::arrow_schema::{ArrowError, DataType as ArrowType, Field};
use half::f16;

use crate::device::Device;
use crate::dtype::{DataType, DataTypeCode};
use crate::error::{Error, Result};
use crate::export::Export;
use crate::managed::ManagedTensor;
use crate::view::TensorView;

/// The library named in every [`Error::Unrepresentable`] of this module.
const LIBRARY: &str = "arrow";
/// What [`ArrowTensorExt::into_arrow_buffer`] is asked for, in its errors.
const BUFFER: &str = "an Arrow buffer";
/// What [`ArrowTensorExt::into_arrow_array`] is asked for, in its errors.
const ARRAY: &str = "an Arrow primitive array";
/// What [`ArrowTensorExt::into_fixed_shape_tensor`] is asked for, in its errors.
const COLUMN: &str = "an arrow.fixed_shape_tensor column";
/// What the imports from Arrow are asked for, in their errors.
const TENSOR: &str = "a DLPack tensor";
/// The name of the field [`ArrowTensorExt::into_fixed_shape_tensor`] makes.
const FIELD_NAME: &str = "tensor";
/// The name of the list's item field (Arrow's usual one).
const ITEM_NAME: &str = "item";

fn unrepresentable(asked: &'static str, given: String) -> Error {
    Error::Unrepresentable {
        library: LIBRARY,
        asked,
        given,
    }
}

/// An error arrow-rs returned where the checks before it should have made it impossible.
fn arrow_error(asked: &'static str, error: ArrowError) -> Error {
    unrepresentable(asked, format!("what arrow-rs refused: {error}"))
}

/// The zero-sized type whose dangling pointer stands for the data of an empty buffer: aligned
/// for every Arrow native type (and as Arrow aligns its own allocations).
#[repr(align(64))]
struct Align64;

/// Applies `$m` to the table of supported types: DLPack type, Rust element type, arrow-rs
/// primitive type and Arrow data type (one row per line of the module's table).
macro_rules! supported_types {
    ($m:ident) => {
        $m! {
            INT8, i8, Int8Type, Int8;
            INT16, i16, Int16Type, Int16;
            INT32, i32, Int32Type, Int32;
            INT64, i64, Int64Type, Int64;
            UINT8, u8, UInt8Type, UInt8;
            UINT16, u16, UInt16Type, UInt16;
            UINT32, u32, UInt32Type, UInt32;
            UINT64, u64, UInt64Type, UInt64;
            FLOAT16, f16, Float16Type, Float16;
            FLOAT32, f32, Float32Type, Float32;
            FLOAT64, f64, Float64Type, Float64;
        }
    };
}

macro_rules! conversions {
    ($($dlpack:ident, $rust:ty, $primitive:ty, $arrow:ident;)*) => {
        /// The Arrow type of a DLPack type, `None` where the table has none.
        fn arrow_type_of(dtype: DataType) -> Option<ArrowType> {
            $(if dtype == DataType::$dlpack {
                return Some(ArrowType::$arrow);
            })*
            None
        }

        /// [`ArrowTensorExt::into_arrow_array`] of the primitive type of the tensor's own data
        /// type.
        fn array_of_its_type(tensor: ManagedTensor) -> Result<ArrayRef> {
            let dtype = tensor.view().dtype();
            $(if dtype == DataType::$dlpack {
                return Ok(Arc::new(tensor.into_arrow_array::<$primitive>()?));
            })*
            Err(unrepresentable(ARRAY, no_arrow_type(dtype)))
        }

        /// The DLPack type of an Arrow type, `None` where the table has none.
        fn dlpack_type_of(arrow: &ArrowType) -> Option<DataType> {
            match arrow {
                $(ArrowType::$arrow => Some(DataType::$dlpack),)*
                _ => None,
            }
        }

        /// The tensor's first element as bytes, after the checks of every typed access
        /// ([`TensorView::elements`]: host-readable device, the data type, alignment); a
        /// dangling pointer, aligned for the element type, for an empty tensor.
        fn first_element(view: &TensorView<'_>, asked: &'static str) -> Result<NonNull<u8>> {
            let dtype = view.dtype();
            $(if dtype == DataType::$dlpack {
                return Ok(view.elements::<$rust>()?.first().cast());
            })*
            Err(unrepresentable(asked, no_arrow_type(dtype)))
        }

        /// An Arrow array of the `len` elements of a supported Arrow type that `buffer` holds.
        fn values_array(arrow: &ArrowType, buffer: Buffer, len: usize) -> Result<ArrayRef> {
            match arrow {
                $(ArrowType::$arrow => {
                    Ok(Arc::new(primitive_array::<$primitive>(buffer, len, COLUMN)?))
                })*
                other => Err(unrepresentable(COLUMN, no_dlpack_type(other))),
            }
        }

        /// The parts of a primitive array of a supported type, for export.
        fn array_parts(values: &dyn Array) -> Result<ArrayParts> {
            match values.data_type() {
                $(ArrowType::$arrow => {
                    match values.as_primitive_opt::<$primitive>() {
                        Some(array) => ArrayParts::of(array),
                        None => Err(unrepresentable(
                            TENSOR,
                            format!("values of type {} that are not a primitive array",
                                values.data_type()),
                        )),
                    }
                })*
                other => Err(unrepresentable(TENSOR, no_dlpack_type(other))),
            }
        }
    };
}

supported_types!(conversions);

/// The Arrow data type a tensor of `dtype` becomes (the module's table), `None` where Arrow has
/// no primitive type for it (bool, bfloat16, complex, the float8 types, sub-byte types,
/// lanes > 1).
///
/// ```
/// use arrow_schema::DataType as ArrowType;
/// use dlbridge::DataType;
///
/// assert_eq!(dlbridge::arrow::arrow_type(DataType::FLOAT16), Some(ArrowType::Float16));
/// assert_eq!(dlbridge::arrow::arrow_type(DataType::BOOL), None);
/// ```
pub fn arrow_type(dtype: DataType) -> Option<ArrowType> {
    arrow_type_of(dtype)
}

/// Why a DLPack type has no Arrow type.
fn no_arrow_type(dtype: DataType) -> String {
    let why = if dtype.lanes != 1 {
        "Arrow has no vector types (lanes > 1)"
    } else if dtype.code == DataTypeCode::BOOL {
        "Arrow's Boolean arrays store one bit per value where DLPack's bool takes a byte"
    } else if dtype.code == DataTypeCode::BFLOAT {
        "Arrow has no bfloat16 type"
    } else if dtype.code == DataTypeCode::COMPLEX {
        "Arrow has no complex type"
    } else if dtype.is_sub_byte() {
        "Arrow has no sub-byte types"
    } else if (DataTypeCode::FLOAT8_E3M4.0..=DataTypeCode::FLOAT8_E8M0FNU.0).contains(&dtype.code.0)
    {
        "Arrow has no 8-bit float types"
    } else {
        "Arrow has no such type"
    };
    format!("{dtype} elements: {why}")
}

/// Why an Arrow type has no DLPack type.
fn no_dlpack_type(arrow: &ArrowType) -> String {
    // Intervals of days and nanoseconds are structs, not integers: no hint for those.
    let hint = if arrow.is_temporal() && !matches!(arrow, ArrowType::Interval(_)) {
        " (PrimitiveArray::reinterpret_cast views temporal values as their integers)"
    } else {
        ""
    };
    format!("{arrow} values: DLPack has no such type{hint}")
}

/// A primitive array over `len` elements of `buffer`, after the checks that keep
/// `ScalarBuffer::new` from panicking: the element size, the buffer's length and its
/// alignment.
fn primitive_array<T: ArrowPrimitiveType>(
    buffer: Buffer,
    len: usize,
    asked: &'static str,
) -> Result<PrimitiveArray<T>> {
    let size = size_of::<T::Native>();
    let align = align_of::<T::Native>();
    let fits = len
        .checked_mul(size)
        .is_some_and(|bytes| bytes <= buffer.len());
    if dlpack_type_of(&T::DATA_TYPE).and_then(DataType::size_in_bytes) != Some(size) || !fits {
        return Err(unrepresentable(
            asked,
            format!(
                "{len} {} values in a buffer of {} bytes",
                T::DATA_TYPE,
                buffer.len()
            ),
        ));
    }
    let address = buffer.as_ptr().addr();
    if address % align != 0 {
        return Err(Error::Misaligned { address, align });
    }
    let values = ScalarBuffer::<T::Native>::new(buffer, 0, len);
    PrimitiveArray::try_new(values, None).map_err(|error| arrow_error(asked, error))
}

/// What an export of a primitive array's values needs: their DLPack type, the first value,
/// how many there are and the buffer that keeps them alive.
struct ArrayParts {
    dtype: DataType,
    data: *mut c_void,
    len: usize,
    owner: Buffer,
}

impl ArrayParts {
    fn of<T: ArrowPrimitiveType>(array: &PrimitiveArray<T>) -> Result<Self> {
        let arrow = array.data_type();
        let dtype = dlpack_type_of(arrow)
            .filter(|dtype| dtype.size_in_bytes() == Some(size_of::<T::Native>()))
            .ok_or_else(|| unrepresentable(TENSOR, no_dlpack_type(arrow)))?;
        let nulls = array.null_count();
        if nulls > 0 {
            return Err(unrepresentable(
                TENSOR,
                format!(
                    "{arrow} values with {nulls} nulls: DLPack has no validity bitmap (fill them \
                     first)"
                ),
            ));
        }
        // A sliced array's values buffer is sliced too: it starts at the array's first value.
        let values = array.values();
        let owner = values.inner().clone();
        Ok(ArrayParts {
            dtype,
            data: owner.as_ptr().cast_mut().cast(),
            len: values.len(),
            owner,
        })
    }
}

/// Exports `len` consecutive elements of `parts` with `shape` and `strides`, read-only and
/// versioned, the values buffer as the owner.
fn export_parts(parts: ArrayParts, shape: &[usize], strides: &[i64]) -> Result<ManagedTensor> {
    let ArrayParts {
        dtype,
        data,
        len,
        owner,
    } = parts;
    // SAFETY: `data` is the first of `len` values that an arrow-rs `ScalarBuffer` of the
    // Rust type whose DLPack type is `dtype` (the table pairs them) holds: initialised,
    // aligned and inside the buffer's allocation; `with_buffer_len` bounds every offset that
    // `shape` and `strides` reach by those `len` values. A `Buffer` derefs to `&[u8]` of its
    // memory, so that memory is host memory, readable for as long as a clone of the buffer
    // lives; `owner` is such a clone, whose `Arc<Bytes>` keeps the allocation where it is
    // wherever the clone is moved. Arrow buffers are immutable while shared: arrow-rs gives
    // mutable access to a buffer only to its sole owner (`Buffer::into_mutable` and
    // `into_vec` need the only reference, and refuse foreign allocations), and `owner` keeps
    // this one shared for as long as the tensor lives, so nothing writes the values; the
    // tensor is read-only and not IS_COPIED.
    unsafe { Export::from_raw_parts(owner, data, dtype, Device::CPU, shape) }
        .strides(strides)
        .with_buffer_len(len)
        .read_only(true)
        .into_versioned()
}

/// The Arrow buffers, arrays and fixed-shape tensor columns from a [`ManagedTensor`] and back: `use
/// dlbridge::arrow::ArrowTensorExt;`, then `tensor.into_arrow_array::<Float32Type>()` or
/// `ArrowTensorExt::from_arrow_array(&array)`.
///
/// The bridge's entry points for the feature `arrow`; the trait is sealed (implemented for this
/// crate's types only), so methods can be added to it without breaking anyone.
pub trait ArrowTensorExt: crate::sealed::Sealed {
    /// The tensor's bytes as an Arrow [`Buffer`], without copying
    /// (feature `arrow`).
    ///
    /// The tensor moves into the buffer, which keeps it alive: the deleter runs when Arrow
    /// drops the last reference to the buffer (its clones and slices included), on whatever
    /// thread that happens. The buffer starts at the first element (`data + byte_offset`) and
    /// holds `num_elements * size` bytes in row-major order; an empty tensor gives an empty
    /// buffer (which still owns the tensor).
    ///
    /// Any whole-byte data type is accepted, vector types included (a buffer is only bytes).
    /// Fails with [`Error::NotHostReadable`] for a tensor the CPU cannot read,
    /// [`Error::NotContiguous`] unless the layout is C-contiguous, and
    /// [`Error::Unrepresentable`] for a sub-byte data type (`int4`, `float4_e2m1fn`...), whose
    /// elements share bytes. On error the tensor is dropped.
    ///
    /// ```
    /// use dlbridge::arrow::ArrowTensorExt;
    /// use dlbridge::Export;
    ///
    /// let tensor = Export::new(vec![1u16, 2, 3, 4, 5, 6], &[2, 3]).into_versioned()?;
    /// let first = tensor.view().data_ptr() as *const u8;
    /// let buffer = tensor.into_arrow_buffer()?;
    /// assert_eq!(buffer.as_ptr(), first); // no copy
    /// assert_eq!(buffer.len(), 12);
    /// assert_eq!(buffer.typed_data::<u16>(), &[1, 2, 3, 4, 5, 6]);
    /// drop(buffer); // the Vec is freed here
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn into_arrow_buffer(self) -> Result<Buffer>;

    /// A 1-D tensor as an Arrow [`PrimitiveArray<T>`](::arrow_array::PrimitiveArray), without
    /// copying (feature `arrow`).
    ///
    /// `T` is an arrow-rs primitive type (`Float32Type`, `Int64Type`...) whose Arrow type is
    /// the tensor's data type in this table (the `# Data types` of the bridge): `int8` to
    /// `int64` and `uint8` to `uint64` are `Int8Type` to `UInt64Type`, `float16` is
    /// `Float16Type` (`half::f16`), `float32` and `float64` are `Float32Type` and
    /// `Float64Type`. Every other DLPack type is refused with [`Error::Unrepresentable`]
    /// naming it: `bool` (Arrow's `Boolean` is bit-packed), `bfloat16`, complex and float8
    /// types, sub-byte types and vector types (`lanes > 1`); so are the Arrow types that
    /// have no DLPack counterpart (`Date32Type`, `Decimal128Type`...).
    ///
    /// The tensor moves into the array's values buffer, as in
    /// [`ArrowTensorExt::into_arrow_buffer`]: its deleter runs when Arrow drops the last
    /// reference. The array has no nulls.
    ///
    /// Fails with [`Error::DimensionalityMismatch`] unless the tensor has one dimension,
    /// [`Error::DataTypeMismatch`] for a tensor of another supported type than `T`'s,
    /// [`Error::NotHostReadable`], [`Error::NotContiguous`] for a stride other than 1, and
    /// [`Error::Misaligned`] when the first element is not aligned for `T::Native` (which
    /// Arrow requires). On error the tensor is dropped.
    ///
    /// ```
    /// use dlbridge::arrow::ArrowTensorExt;
    /// use arrow_array::types::Float32Type;
    /// use arrow_array::Array;
    /// use dlbridge::{Error, Export, ManagedTensor};
    ///
    /// let tensor = Export::new(vec![1.5f32, 2.5, 3.5], &[3]).into_versioned()?;
    /// let first = tensor.view().data_ptr() as *const f32;
    /// let array = tensor.into_arrow_array::<Float32Type>()?;
    /// assert_eq!(array.values().as_ref(), &[1.5, 2.5, 3.5]);
    /// assert_eq!(array.values().as_ptr(), first); // no copy
    /// assert_eq!(array.null_count(), 0);
    ///
    /// let flags = Export::new(vec![true, false], &[2]).into_versioned()?;
    /// let refused = flags.into_arrow_array::<arrow_array::types::UInt8Type>();
    /// assert!(matches!(refused, Err(Error::Unrepresentable { library: "arrow", .. })));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn into_arrow_array<T: ArrowPrimitiveType>(self) -> Result<PrimitiveArray<T>>;

    /// A 1-D tensor as an Arrow array of its own data type (`ArrayRef`), without copying
    /// (feature `arrow`): [`ArrowTensorExt::into_arrow_array`] with the primitive type read
    /// from the tensor's data type (the module's table), for code that does not know it when
    /// it is compiled (a result handed to pyarrow, say). The same checks and errors; a data
    /// type the table lacks is [`Error::Unrepresentable`] saying why.
    ///
    /// ```
    /// use dlbridge::arrow::ArrowTensorExt;
    /// use arrow_array::Array;
    /// use arrow_schema::DataType as ArrowType;
    /// use dlbridge::{Error, Export};
    ///
    /// let tensor = Export::new(vec![1u16, 2, 3], &[3]).into_versioned()?;
    /// let first = tensor.view().data_ptr() as usize;
    /// let array = tensor.into_arrow_array_of_its_type()?;
    /// assert_eq!(array.data_type(), &ArrowType::UInt16);
    /// assert_eq!(array.to_data().buffers()[0].as_ptr() as usize, first); // no copy
    ///
    /// let halves = Export::new(vec![half::bf16::ONE], &[1]).into_versioned()?;
    /// let refused = halves.into_arrow_array_of_its_type().unwrap_err();
    /// assert!(refused.to_string().contains("Arrow has no bfloat16 type"), "{refused}");
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn into_arrow_array_of_its_type(self) -> Result<ArrayRef>;

    /// A tensor of two or more dimensions as an Arrow `arrow.fixed_shape_tensor` column,
    /// without copying (feature `arrow`): the field, which carries the canonical extension
    /// type (`arrow_schema::extension::FixedShapeTensor`), and the
    /// [`FixedSizeListArray`] of its storage.
    ///
    /// The first axis is the batch: the array has one list per index of it, each list one
    /// tensor of the remaining axes, whose extents make the extension's shape. The field is
    /// named `"tensor"` and not nullable; its list items are a non-nullable field `"item"` of
    /// the Arrow type of the tensor's data type (the table of
    /// [`ArrowTensorExt::into_arrow_array`]).
    ///
    /// A C-contiguous tensor is exported without a permutation. A tensor whose rows follow
    /// one another, each compact in another axis order (the per-row tensors column-major,
    /// say), is exported with the `permutation` that gives that order: logical axis `i` of a
    /// row is physical axis `permutation[i]`, and the extension's shape is the physical one
    /// (`FixedShapeTensor::logical_shape` gives the tensor's own extents back).
    ///
    /// The metadata is the specification's JSON, `{"shape":[3,2],"permutation":[1,0]}`,
    /// which Arrow C++ and pyarrow read; arrow-rs 60's `Field::try_extension_type` reads it
    /// without a permutation only (it knows the key as `"permutations"`, and its own
    /// serialiser writes `null`s its reader refuses): read a permuted column back with
    /// [`ArrowTensorExt::from_fixed_shape_tensor`].
    ///
    /// The tensor moves into the values buffer; its deleter runs when Arrow drops the last
    /// reference. Fails with [`Error::Unrepresentable`] for fewer than two dimensions, a data
    /// type Arrow lacks, any other layout (rows not outermost, padding, broadcast or negative
    /// strides) and rows of more than `i32::MAX` elements (Arrow's list size);
    /// [`Error::NotHostReadable`]; [`Error::Misaligned`]. On error the tensor is dropped.
    ///
    /// ```
    /// use dlbridge::arrow::ArrowTensorExt;
    /// use arrow_array::Array;
    /// use arrow_schema::extension::FixedShapeTensor;
    /// use dlbridge::{Export, ManagedTensor};
    ///
    /// // Four 2x3 matrices, one after the other.
    /// let tensor = Export::new((0..24).collect::<Vec<i32>>(), &[4, 2, 3]).into_versioned()?;
    /// let (field, array) = tensor.into_fixed_shape_tensor()?;
    /// assert_eq!(field.extension_type_metadata(), Some(r#"{"shape":[2,3]}"#));
    /// let extension = field.try_extension_type::<FixedShapeTensor>()?;
    /// assert_eq!(extension.shape(), &[2, 3]);
    /// assert_eq!((array.len(), array.value_length()), (4, 6));
    ///
    /// // Two 2x3 matrices, each stored column-major: physically 3x2 row-major, permuted.
    /// let data = vec![1.0f32, 4.0, 2.0, 5.0, 3.0, 6.0, 7.0, 10.0, 8.0, 11.0, 9.0, 12.0];
    /// let tensor = Export::new(data, &[2, 2, 3]).strides(&[6, 1, 2]).into_versioned()?;
    /// let (field, array) = tensor.into_fixed_shape_tensor()?;
    /// let metadata = r#"{"shape":[3,2],"permutation":[1,0]}"#;
    /// assert_eq!(field.extension_type_metadata(), Some(metadata));
    /// let back = ManagedTensor::from_fixed_shape_tensor(&field, &array)?;
    /// assert_eq!((back.view().shape(), back.view().strides()), (&[2, 2, 3][..], &[6, 1, 2][..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn into_fixed_shape_tensor(self) -> Result<(Field, FixedSizeListArray)>;

    /// A read-only tensor over the values of an Arrow primitive array, without copying
    /// (feature `arrow`).
    ///
    /// The tensor has one dimension of `array.len()` elements, of the DLPack type of the
    /// array's Arrow type (the table of [`ArrowTensorExt::into_arrow_array`]), starts at the
    /// array's first value (a sliced array's offset included) and keeps a clone of the
    /// values buffer (a reference count), so it may outlive the array. It is versioned and
    /// flagged READ_ONLY: Arrow buffers are shared and immutable.
    ///
    /// Fails with [`Error::Unrepresentable`] for an array with nulls (DLPack has no validity
    /// bitmap) and for Arrow types without a DLPack counterpart (`Date32Type`,
    /// `Decimal128Type`...; `PrimitiveArray::reinterpret_cast` views temporal values as their
    /// integers).
    ///
    /// ```
    /// use dlbridge::arrow::ArrowTensorExt;
    /// use arrow_array::Int32Array;
    /// use dlbridge::{DataType, ManagedTensor};
    ///
    /// let array = Int32Array::from(vec![1, 2, 3, 4, 5]);
    /// let tensor = ManagedTensor::from_arrow_array(&array.slice(1, 3))?;
    /// drop(array); // the tensor keeps the values alive
    /// let view = tensor.view();
    /// assert_eq!((view.dtype(), view.shape()), (DataType::INT32, &[3i64][..]));
    /// assert_eq!(view.as_slice::<i32>()?, &[2, 3, 4]);
    /// assert!(view.is_read_only());
    ///
    /// let with_nulls = Int32Array::from(vec![Some(1), None]);
    /// let refused = ManagedTensor::from_arrow_array(&with_nulls); // DLPack has no nulls
    /// assert!(matches!(refused, Err(dlbridge::Error::Unrepresentable { library: "arrow", .. })));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn from_arrow_array<T: ArrowPrimitiveType>(array: &PrimitiveArray<T>) -> Result<ManagedTensor>;

    /// A read-only tensor over an Arrow `arrow.fixed_shape_tensor` column, without copying
    /// (feature `arrow`).
    ///
    /// `field` must carry the extension type (`ARROW:extension:name` =
    /// `arrow.fixed_shape_tensor`, with valid metadata) and describe `array`'s type. The
    /// tensor's shape is `[array.len(), ...]` followed by the extension's logical shape; its
    /// strides come from the physical shape and the `permutation` (logical axis `i` has the
    /// row-major stride of physical axis `permutation[i]`), the rows one after another. A
    /// sliced array starts at its first list. The tensor keeps a clone of the values buffer,
    /// and is versioned and flagged READ_ONLY. Dimension names are not kept.
    ///
    /// The metadata is read as the specification writes it (`"permutation"`), as arrow-rs 60
    /// does (`"permutations"`, and `null` for an absent `"dim_names"` or permutation), and
    /// with a nullable list item, as pyarrow makes it (nulls are refused all the same).
    ///
    /// Fails with [`Error::Unrepresentable`] for a field without the extension or whose
    /// metadata or type does not match the array, for nulls in the list array or in its
    /// values, and for values that are not a primitive array of a type of the table of
    /// [`ArrowTensorExt::into_arrow_array`].
    ///
    /// ```
    /// use dlbridge::arrow::ArrowTensorExt;
    /// use dlbridge::{Export, ManagedTensor};
    ///
    /// let tensor = Export::new((0i16..12).collect::<Vec<_>>(), &[3, 2, 2]).into_versioned()?;
    /// let (field, array) = tensor.into_fixed_shape_tensor()?;
    /// let back = ManagedTensor::from_fixed_shape_tensor(&field, &array.slice(1, 2))?;
    /// assert_eq!(back.view().shape(), &[2, 2, 2]);
    /// assert_eq!(back.view().as_slice::<i16>()?, &[4, 5, 6, 7, 8, 9, 10, 11]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn from_fixed_shape_tensor(field: &Field, array: &FixedSizeListArray) -> Result<ManagedTensor>;
}

impl ArrowTensorExt for ManagedTensor {
    fn into_arrow_buffer(self) -> Result<Buffer> {
        let view = self.view();
        let device = view.device();
        if !device.is_host_readable() {
            return Err(Error::NotHostReadable { device });
        }
        let dtype = view.dtype();
        let Some(size) = dtype.size_in_bytes() else {
            return Err(unrepresentable(
                BUFFER,
                format!("{dtype} elements: sub-byte elements share bytes"),
            ));
        };
        if !view.is_c_contiguous() {
            return Err(Error::NotContiguous {
                order: "C",
                shape: view.shape().to_vec(),
                strides: view.strides().to_vec(),
            });
        }
        let elements = view.num_elements();
        let len = elements
            .checked_mul(size as u64)
            .and_then(|bytes| usize::try_from(bytes).ok())
            .ok_or(Error::ByteSizeOverflow { elements, dtype })?;
        let first = if len == 0 {
            NonNull::<Align64>::dangling().cast()
        } else {
            // Non-NULL by V6 and V8: a tensor with elements has non-NULL data, and on a
            // host-readable device `data + byte_offset` does not wrap.
            NonNull::new(view.data_ptr().cast::<u8>()).ok_or(Error::NullData { elements })?
        };
        // SAFETY: a C-contiguous tensor's elements are the `len` bytes from its first element
        // (V5, V7, V8: one range of at most `isize::MAX` bytes), on a host-readable device
        // (checked above); an empty tensor gives a length of 0.
        Ok(unsafe { self.into_buffer_at(first, len) })
    }

    fn into_arrow_array<T: ArrowPrimitiveType>(self) -> Result<PrimitiveArray<T>> {
        let Some(requested) = dlpack_type_of(&T::DATA_TYPE) else {
            return Err(unrepresentable(ARRAY, no_dlpack_type(&T::DATA_TYPE)));
        };
        let view = self.view();
        let dtype = view.dtype();
        if arrow_type_of(dtype).is_none() {
            return Err(unrepresentable(ARRAY, no_arrow_type(dtype)));
        }
        if dtype != requested {
            return Err(Error::DataTypeMismatch {
                requested,
                actual: dtype,
            });
        }
        if view.ndim() != 1 {
            return Err(Error::DimensionalityMismatch {
                expected: 1,
                actual: view.ndim(),
            });
        }
        // Checks the device, the data type and the alignment.
        let first = first_element(&view, ARRAY)?;
        if !view.is_c_contiguous() {
            return Err(Error::NotContiguous {
                order: "C",
                shape: view.shape().to_vec(),
                strides: view.strides().to_vec(),
            });
        }
        // A supported type is a whole number of bytes; V8 bounds the span by `isize::MAX`.
        let len = usize::try_from(view.num_elements()).unwrap_or(usize::MAX);
        let bytes = len
            .checked_mul(size_of::<T::Native>())
            .ok_or(Error::ByteSizeOverflow {
                elements: view.num_elements(),
                dtype,
            })?;
        // SAFETY: a compact 1-D tensor's elements are the `bytes` bytes from its first
        // element (V5, V7, V8), on a host-readable device (`first_element` checked it); an
        // empty tensor has a dangling `first` and no bytes.
        let buffer = unsafe { self.into_buffer_at(first, bytes) };
        primitive_array::<T>(buffer, len, ARRAY)
    }

    fn into_arrow_array_of_its_type(self) -> Result<ArrayRef> {
        array_of_its_type(self)
    }

    fn into_fixed_shape_tensor(self) -> Result<(Field, FixedSizeListArray)> {
        let view = self.view();
        let (shape, strides) = (view.shape(), view.strides());
        if shape.len() < 2 {
            return Err(unrepresentable(
                COLUMN,
                format!(
                    "a tensor of {} dimensions: the column needs a batch axis and at least one \
                     axis per tensor",
                    shape.len()
                ),
            ));
        }
        let dtype = view.dtype();
        let Some(value_type) = arrow_type_of(dtype) else {
            return Err(unrepresentable(COLUMN, no_arrow_type(dtype)));
        };
        // Checks the device, the data type and the alignment.
        let first = first_element(&view, COLUMN)?;
        let cells = CellLayout::of(shape, strides, view.num_elements() == 0)?;
        let size = i32::try_from(cells.list_size).map_err(|_| {
            unrepresentable(
                COLUMN,
                format!(
                    "a tensor of shape {shape:?}: its rows of {} elements exceed Arrow's list \
                     size (i32::MAX)",
                    cells.list_size
                ),
            )
        })?;
        let overflow = || Error::ByteSizeOverflow {
            elements: view.num_elements(),
            dtype,
        };
        let rows = usize::try_from(shape[0]).map_err(|_| overflow())?;
        // The product is the tensor's element count, which V5 and V8 bound, unless a zero
        // extent elsewhere makes it empty.
        let len = rows.checked_mul(cells.list_size).ok_or_else(overflow)?;
        let bytes = dtype
            .size_in_bytes()
            .and_then(|size| len.checked_mul(size))
            .ok_or_else(overflow)?;
        let extension =
            FixedShapeTensor::try_new(value_type.clone(), cells.physical, None, cells.permutation)
                .map_err(|error| arrow_error(COLUMN, error))?;
        // SAFETY: `CellLayout::of` accepted the layout: rows of `list_size` elements one
        // after another from the first element, each compact, so the elements are the
        // `bytes` bytes from `first` (V7, V8); the device is host-readable (`first_element`
        // checked it). An empty tensor has a dangling `first` and no bytes.
        let buffer = unsafe { self.into_buffer_at(first, bytes) };
        let values = values_array(&value_type, buffer, len)?;
        let item = Arc::new(Field::new(ITEM_NAME, value_type, false));
        let array = FixedSizeListArray::try_new_with_length(item, size, values, None, rows)
            .map_err(|error| arrow_error(COLUMN, error))?;
        let metadata = specification_metadata(extension.shape(), extension.permutations());
        let mut field = Field::new(FIELD_NAME, array.data_type().clone(), false);
        // Sets the name and checks the storage type; the metadata arrow-rs writes is then
        // replaced by the specification's (see the module docs).
        field
            .try_with_extension_type(extension)
            .map_err(|error| arrow_error(COLUMN, error))?;
        field
            .metadata_mut()
            .insert(EXTENSION_TYPE_METADATA_KEY.to_owned(), metadata);
        Ok((field, array))
    }

    fn from_arrow_array<T: ArrowPrimitiveType>(array: &PrimitiveArray<T>) -> Result<ManagedTensor> {
        let parts = ArrayParts::of(array)?;
        let len = parts.len;
        export_parts(parts, &[len], &[1])
    }

    fn from_fixed_shape_tensor(field: &Field, array: &FixedSizeListArray) -> Result<ManagedTensor> {
        let metadata = fixed_shape_metadata(field)?;
        let size = array.value_length();
        match field.data_type() {
            ArrowType::FixedSizeList(item, field_size)
                if *field_size == size && item.data_type() == array.values().data_type() => {}
            other => {
                return Err(unrepresentable(
                    TENSOR,
                    format!(
                        "a field of type {other} over an array of type {}",
                        array.data_type()
                    ),
                ));
            }
        }
        let physical = metadata.shape();
        let list_size = checked_product(physical)
            .filter(|&product| i32::try_from(product) == Ok(size))
            .ok_or_else(|| {
                unrepresentable(
                    TENSOR,
                    format!(
                        "an arrow.fixed_shape_tensor of shape {physical:?} over lists of {size} \
                         values"
                    ),
                )
            })?;
        let nulls = array.null_count();
        if nulls > 0 {
            return Err(unrepresentable(
                TENSOR,
                format!("a column with {nulls} null tensors: DLPack has no validity bitmap"),
            ));
        }
        // A sliced list array's values are sliced too: they start at its first list.
        let parts = array_parts(array.values().as_ref())?;
        let rows = array.len();
        // Physical row-major strides, then the logical axes; every value is at most the list
        // size, which fits an `i32`.
        let mut physical_strides = vec![0i64; physical.len()];
        let mut stride = 1i64;
        for (out, &extent) in physical_strides.iter_mut().zip(physical).rev() {
            *out = stride;
            stride = stride.saturating_mul(i64::try_from(extent).unwrap_or(i64::MAX));
        }
        let mut shape = Vec::with_capacity(physical.len() + 1);
        let mut strides = Vec::with_capacity(physical.len() + 1);
        shape.push(rows);
        strides.push(i64::try_from(list_size).unwrap_or(i64::MAX));
        match metadata.permutations() {
            Some(permutation) => {
                // `FixedShapeTensorMetadata::try_new` checked that it permutes the axes.
                for &axis in permutation {
                    let (Some(&extent), Some(&stride)) =
                        (physical.get(axis), physical_strides.get(axis))
                    else {
                        return Err(unrepresentable(
                            TENSOR,
                            format!("the permutation {permutation:?} of shape {physical:?}"),
                        ));
                    };
                    shape.push(extent);
                    strides.push(stride);
                }
            }
            None => {
                shape.extend_from_slice(physical);
                strides.extend_from_slice(&physical_strides);
            }
        }
        export_parts(parts, &shape, &strides)
    }
}

impl ManagedTensor {
    /// Moves the tensor into an Arrow buffer of the `len` bytes from `first`; the tensor is
    /// dropped (its deleter called) when Arrow drops the last reference to the buffer.
    ///
    /// # Safety
    ///
    /// `first` must be the tensor's first element and `len` the bytes its elements span, one
    /// range on a host-readable device (a compact layout); or `len` must be 0.
    unsafe fn into_buffer_at(self, first: NonNull<u8>, len: usize) -> Buffer {
        let owner: Arc<dyn Allocation> = Arc::new(self);
        // SAFETY: by this function's contract, `first` and `len` cover the tensor's elements:
        // host memory that the producer keeps readable for as long as the tensor lives (the
        // contract of every import, and of every export of this crate), and the tensor lives
        // in `owner`, which Arrow keeps until it drops the last reference to the buffer.
        // Arrow reads it as `&[u8]` meanwhile, a reference the tensor hands out: nothing
        // outside this crate may write the elements while it lives (the same contract), and
        // nothing in it can, since the tensor, now behind an `Arc`, only gives shared access
        // (writes need `&mut ManagedTensor`). Arrow never frees or writes a custom allocation
        // (`Buffer::into_mutable` refuses one). A length of 0 reads nothing.
        unsafe { Buffer::from_custom_allocation(first, len, owner) }
    }
}

/// The product of `extents`, multiplied in order as arrow-rs does (`Iterator::product`), or
/// `None` where an intermediate product overflows (where arrow-rs would panic in a debug
/// build).
fn checked_product(extents: &[usize]) -> Option<usize> {
    extents
        .iter()
        .try_fold(1usize, |product, &extent| product.checked_mul(extent))
}

/// The validated `arrow.fixed_shape_tensor` metadata of a field. arrow-rs's own
/// `Field::try_extension_type` is not used: it requires a non-nullable list item (pyarrow's
/// is nullable; nulls are refused here anyway), reads neither the specification's key
/// `"permutation"` nor the `null`s arrow-rs itself writes, and panics on a shape whose product
/// overflows or exceeds `i32::MAX`.
fn fixed_shape_metadata(field: &Field) -> Result<FixedShapeTensorMetadata> {
    match field.extension_type_name() {
        Some(FixedShapeTensor::NAME) => {}
        Some(other) => {
            return Err(unrepresentable(
                TENSOR,
                format!(
                    "a field {:?} of extension type {other}, not {}",
                    field.name(),
                    FixedShapeTensor::NAME
                ),
            ));
        }
        None => {
            return Err(unrepresentable(
                TENSOR,
                format!(
                    "a field {:?} without an extension type ({} expected)",
                    field.name(),
                    FixedShapeTensor::NAME
                ),
            ));
        }
    }
    let json = field.extension_type_metadata().map(arrow_rs_metadata);
    let parsed = FixedShapeTensor::deserialize_metadata(json.as_deref())
        .map_err(|error| arrow_error(TENSOR, error))?;
    if checked_product(parsed.shape()).is_none_or(|product| i32::try_from(product).is_err()) {
        return Err(unrepresentable(
            TENSOR,
            format!(
                "an arrow.fixed_shape_tensor of shape {:?}: more than i32::MAX elements per \
                 tensor",
                parsed.shape()
            ),
        ));
    }
    // Deserialising checks nothing: `try_new` checks the permutation and the names.
    // `arrow_rs_metadata` made an absent list an empty one: the same thing but for the tensors
    // of no dimensions, where an empty list is the only valid one and means the same.
    FixedShapeTensorMetadata::try_new(
        parsed.shape().to_vec(),
        absent_if_empty(parsed.dimension_names()),
        absent_if_empty(parsed.permutations()),
    )
    .map_err(|error| arrow_error(TENSOR, error))
}

/// A list of the metadata as an owned value, `None` where it is absent or empty.
fn absent_if_empty<T: Clone>(values: Option<&[T]>) -> Option<Vec<T>> {
    values
        .filter(|values| !values.is_empty())
        .map(<[T]>::to_vec)
}

/// The extension metadata JSON of the specification: the shape, and the permutation where
/// there is one.
fn specification_metadata(shape: &[usize], permutation: Option<&[usize]>) -> String {
    let list = |values: &[usize]| {
        let values: Vec<String> = values.iter().map(usize::to_string).collect();
        values.join(",")
    };
    match permutation {
        Some(permutation) => format!(
            r#"{{"shape":[{}],"permutation":[{}]}}"#,
            list(shape),
            list(permutation)
        ),
        None => format!(r#"{{"shape":[{}]}}"#, list(shape)),
    }
}

/// The metadata JSON in the form arrow-rs 60's deserialiser accepts: the specification's key
/// `"permutation"` renamed `"permutations"`, and a `null` value of that key or of
/// `"dim_names"` (as arrow-rs itself writes an absent value) made an empty list. JSON that is
/// not an object is passed on as it is, for the deserialiser to refuse.
fn arrow_rs_metadata(json: &str) -> String {
    use serde_json::Value;
    let Ok(Value::Object(mut object)) = serde_json::from_str::<Value>(json) else {
        return json.to_owned();
    };
    if let Some(permutation) = object.remove("permutation") {
        object.insert("permutations".to_owned(), permutation);
    }
    for key in ["permutations", "dim_names"] {
        if object.get(key).is_some_and(Value::is_null) {
            object.insert(key.to_owned(), Value::Array(Vec::new()));
        }
    }
    Value::Object(object).to_string()
}

/// How the per-row tensors of a batch lie in memory, in the extension's terms.
struct CellLayout {
    /// The extension's (physical) shape: the axes of a row in memory order, outermost first.
    physical: Vec<usize>,
    /// Logical axis `i` of a row is physical axis `permutation[i]`; `None` for the identity.
    permutation: Option<Vec<usize>>,
    /// Elements of one row.
    list_size: usize,
}

impl CellLayout {
    /// The layout of a tensor of two or more dimensions whose first axis is the batch, or a
    /// refusal: rows must follow one another, each compact in some axis order.
    fn of(shape: &[i64], strides: &[i64], empty: bool) -> Result<Self> {
        let refuse = |why: &str| {
            unrepresentable(
                COLUMN,
                format!("a tensor of shape {shape:?} and strides {strides:?}: {why}"),
            )
        };
        let extent = |value: i64| {
            usize::try_from(value).map_err(|_| refuse("an extent does not fit in memory"))
        };
        let (cell_shape, cell_strides) = (&shape[1..], &strides[1..]);
        let cells = cell_shape
            .iter()
            .map(|&value| extent(value))
            .collect::<Result<Vec<usize>>>()?;
        let list_size = checked_product(&cells).ok_or_else(|| refuse("a row is too large"))?;
        if empty || crate::layout::is_c_contiguous(shape, strides) {
            // Compact row-major (an empty tensor counts as compact whatever its strides).
            return Ok(CellLayout {
                physical: cells,
                permutation: None,
                list_size,
            });
        }
        // Physical order: the axes of extent above 1 by decreasing stride (stable, so equal
        // strides, which overlap and are refused below, keep their order), then those of
        // extent 1, whose strides mean nothing.
        let mut order: Vec<usize> = (0..cells.len()).filter(|&i| cells[i] != 1).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(cell_strides[i]));
        order.extend((0..cells.len()).filter(|&i| cells[i] == 1));
        let mut expected: i64 = 1;
        for &axis in order.iter().rev() {
            if cells[axis] == 1 {
                continue;
            }
            if cell_strides[axis] != expected {
                return Err(refuse(
                    "the elements of a row are not compact in any axis order (padded, \
                     broadcast or reversed axes)",
                ));
            }
            expected = expected.saturating_mul(cell_shape[axis]);
        }
        if shape[0] > 1 && strides[0] != expected {
            return Err(refuse(
                "the rows (axis 0) do not follow one another in memory; Arrow lists must",
            ));
        }
        let mut permutation = vec![0; order.len()];
        for (physical_axis, &logical_axis) in order.iter().enumerate() {
            permutation[logical_axis] = physical_axis;
        }
        let identity = permutation.iter().enumerate().all(|(i, &axis)| i == axis);
        Ok(CellLayout {
            physical: order.iter().map(|&axis| cells[axis]).collect(),
            permutation: (!identity).then_some(permutation),
            list_size,
        })
    }
}

#[cfg(test)]
mod tests;
