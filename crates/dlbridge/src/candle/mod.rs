//! Conversion between managed tensors and candle tensors (feature `candle`).
//!
//! Out of candle: [`CandleTensorExt::from_candle_tensor`] copies a candle tensor of any layout
//! into a compact tensor (flagged IS_COPIED); [`CandleTensorExt::from_candle_tensor_unchecked`]
//! exports its storage without copying, under a contract (below). Into candle:
//! [`CandleViewExt::to_candle_tensor`] copies a tensor into a new candle CPU tensor.
//!
//! # Why the zero-copy export is an `unsafe fn`
//!
//! A candle `Tensor` is a shared handle: clones and views (`narrow`, `reshape`, `t`, ...)
//! share one storage, and candle writes that storage in place through any of them, from safe
//! code (`slice_set`, `const_set`, `zero_set`, `one_set`, `scatter_set`, `scatter_add`,
//! `Var::set`). candle serialises its own accesses with a lock over the storage, but a DLPack
//! consumer reads the memory without that lock, and this crate hands out `&[T]` over it: a
//! write by candle during such a borrow would be a data race. The lock cannot travel with the
//! export (its guard may not move to the thread that calls the deleter), and candle does not
//! tell whether other handles of the storage exist. So the safe export copies (the copy is
//! made under candle's lock, so it is never torn), and the zero-copy one leaves the "no
//! in-place write while the export lives" part to the caller, who knows their program.
//!
//! # Why the import copies
//!
//! candle's CPU storage is an enum of `Vec`s (`CpuStorage::F32(Vec<f32>)`, ...): it must own
//! its memory as a Rust `Vec`, and a `Vec` cannot be made over memory another allocator owns
//! (its drop would free it with Rust's allocator). There is no storage variant that holds an
//! owner, so a tensor enters candle as a copy (upstream: candle issues #1850 and #973 ask for
//! one). Its CUDA storage is a cudarc `CudaSlice`, which frees its memory when dropped:
//! foreign device memory must never be handed to it as owned, so a CUDA tensor could only
//! enter candle as a device-to-device copy; candle's `cuda` feature needs the CUDA toolkit at
//! build time and is not used by this bridge, which reads and writes candle's CPU tensors.
//!
//! # Data types
//!
//! | DLPack | candle `DType` |
//! |---|---|
//! | uint8, uint32 | `U8`, `U32` |
//! | int16, int32, int64 | `I16`, `I32`, `I64` |
//! | float16, bfloat16, float32, float64 | `F16`, `BF16`, `F32`, `F64` |
//! | float8_e4m3fn | `F8E4M3` (exported only: candle's element type for it comes from the `float8` crate) |
//! | bool | imported as `U8` (0 and 1, the values candle's own comparisons give) |
//!
//! candle has no int8, uint16, uint64, complex or vector types: such tensors are refused with
//! [`Error::Unrepresentable`]. candle's `F6E2M3`, `F6E3M2`, `F4` and `F8E8M0` hold raw bytes
//! in a layout candle does not document, and are refused on export.
//!
//! The tests are in `tests.rs` beside this file.

use ::candle_core::{CpuStorage, Device as CandleDevice, Layout, Storage, Tensor};

use crate::device::Device;
use crate::dtype::DataType;
use crate::error::{Error, Result};
use crate::export::{Export, check_layout};
use crate::ffi::DLTensor;
use crate::managed::ManagedTensor;
use crate::view::TensorView;

/// Where a candle CPU storage's elements are: the first byte of its `Vec`, its length in
/// elements, and the DLPack type of its elements.
struct StorageParts {
    data: *const u8,
    len: usize,
    dtype: DataType,
}

const CANDLE_EXPORT: &str = "a DLPack tensor";

/// The parts of a candle storage, or the refusal for one this bridge cannot read.
fn storage_parts(storage: &Storage) -> Result<StorageParts> {
    fn parts<T>(values: &[T], dtype: DataType) -> Result<StorageParts> {
        Ok(StorageParts {
            data: values.as_ptr().cast(),
            len: values.len(),
            dtype,
        })
    }
    let cpu = match storage {
        Storage::Cpu(cpu) => cpu,
        other => {
            return Err(Error::Unrepresentable {
                library: "candle",
                asked: CANDLE_EXPORT,
                given: format!(
                    "a candle tensor on {:?}: this bridge reads candle's CPU storage (candle's \
                     device storage needs its cuda or metal feature)",
                    other.device()
                ),
            });
        }
    };
    match cpu {
        CpuStorage::U8(values) => parts(values, DataType::UINT8),
        CpuStorage::U32(values) => parts(values, DataType::UINT32),
        CpuStorage::I16(values) => parts(values, DataType::INT16),
        CpuStorage::I32(values) => parts(values, DataType::INT32),
        CpuStorage::I64(values) => parts(values, DataType::INT64),
        CpuStorage::BF16(values) => parts(values, DataType::BFLOAT16),
        CpuStorage::F16(values) => parts(values, DataType::FLOAT16),
        CpuStorage::F32(values) => parts(values, DataType::FLOAT32),
        CpuStorage::F64(values) => parts(values, DataType::FLOAT64),
        CpuStorage::F8E4M3(values) => parts(values, DataType::FLOAT8_E4M3FN),
        _ => Err(Error::Unrepresentable {
            library: "candle",
            asked: CANDLE_EXPORT,
            given: format!(
                "a candle tensor of type {:?}: candle stores it as raw bytes in a layout it does \
                 not document",
                storage.dtype()
            ),
        }),
    }
}

/// A candle tensor's layout over its CPU storage, bounded by the storage: `first` is the
/// layout's element at index zero (`start_offset` elements into the storage's `Vec`), and
/// every element offset that `shape` and `strides` reach from it lies in the `available`
/// elements of the `Vec` from there on.
struct BoundedLayout {
    first: *const u8,
    dtype: DataType,
    shape: Vec<usize>,
    strides: Vec<i64>,
    available: usize,
}

/// candle's layout over its storage, checked to lie inside the storage's `Vec` (the bound of
/// [`Export::new`], `check_layout`), or [`Error::OutOfBounds`] naming the element offsets
/// reached, counted from the start of the storage, and the storage's length.
///
/// candle does not keep the two compatible: its safe `Tensor::from_storage` takes any shape
/// over any storage (its docs ask the caller to keep them so), so a 1-element storage may
/// carry the layout of 8 elements, or of 2^40. An empty layout reaches no element: its
/// `first` is clamped into the storage (candle's `narrow` can start an empty view past it).
fn bounded_layout(storage: &Storage, layout: &Layout) -> Result<BoundedLayout> {
    let parts = storage_parts(storage)?;
    let shape = layout.dims().to_vec();
    // A stride beyond `i64::MAX` stays too large (`i64::MAX`), for the check to refuse where
    // the layout steps along it.
    let strides: Vec<i64> = layout
        .stride()
        .iter()
        .map(|&stride| i64::try_from(stride).unwrap_or(i64::MAX))
        .collect();
    let empty = shape.contains(&0);
    let start = if empty {
        layout.start_offset().min(parts.len)
    } else {
        layout.start_offset()
    };
    let Some(available) = parts.len.checked_sub(start) else {
        // The element at index zero itself lies past the storage.
        let start = i64::try_from(start).unwrap_or(i64::MAX);
        return Err(Error::OutOfBounds {
            min_offset: start,
            max_offset: start,
            buffer_len: parts.len,
        });
    };
    // The offsets reached, counted from the start of the storage, for the error.
    let from_storage_start =
        |offset: i64| offset.saturating_add(i64::try_from(start).unwrap_or(i64::MAX));
    check_layout(&shape, Some(&strides), Some(available)).map_err(|error| match error {
        Error::OutOfBounds {
            min_offset,
            max_offset,
            ..
        } => Error::OutOfBounds {
            min_offset: from_storage_start(min_offset),
            max_offset: from_storage_start(max_offset),
            buffer_len: parts.len,
        },
        other => other,
    })?;
    // Every candle type this bridge reads is whole bytes; `start` is at most the `Vec`'s
    // length, so the address is inside its allocation or one past it (an empty layout).
    let size = parts.dtype.size_in_bytes().unwrap_or(1);
    Ok(BoundedLayout {
        first: parts.data.wrapping_add(start * size),
        dtype: parts.dtype,
        shape,
        strides,
        available,
    })
}

/// The candle tensors exported as [`ManagedTensor`]s: `use dlbridge::candle::CandleTensorExt;`,
/// then `CandleTensorExt::from_candle_tensor(&tensor)`.
///
/// The bridge's entry points for the feature `candle`; the trait is sealed (implemented for this
/// crate's types only), so methods can be added to it without breaking anyone.
pub trait CandleTensorExt: crate::sealed::Sealed {
    /// A copy of a candle CPU tensor of any layout as a compact, row-major, versioned managed
    /// tensor flagged IS_COPIED (feature `candle`). The copy is made while candle's lock on
    /// the storage is held, so no in-place write of candle's can tear it.
    ///
    /// Fails with [`Error::Unrepresentable`] for a tensor that is not on the CPU or whose type
    /// DLPack or this bridge cannot express ([the module's table](crate::candle)), and with
    /// [`Error::OutOfBounds`] for one whose layout reaches past its storage (candle's safe
    /// `Tensor::from_storage` takes any shape over any storage): the element offsets reached,
    /// counted from the start of the storage, and the storage's length in elements.
    ///
    /// ```
    /// use dlbridge::candle::CandleTensorExt;
    /// use candle_core::{Device, Tensor};
    /// use dlbridge::ManagedTensor;
    ///
    /// let tensor = Tensor::arange(0f32, 6.0, &Device::Cpu)?.reshape((2, 3))?.t()?;
    /// let copy = ManagedTensor::from_candle_tensor(&tensor)?;
    /// assert_eq!(copy.view().shape(), &[3, 2]);
    /// assert_eq!(copy.view().as_slice::<f32>()?, &[0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    /// assert!(copy.view().flags().is_copied());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn from_candle_tensor(tensor: &Tensor) -> Result<ManagedTensor>;

    /// A candle CPU tensor's storage exported without copying, as a read-only versioned
    /// managed tensor whose owner is a clone of the candle tensor (feature `candle`): its
    /// strides and offset are candle's layout, any layout that lies inside the storage (the
    /// refusals of [`CandleTensorExt::from_candle_tensor`]).
    ///
    /// ```
    /// use dlbridge::candle::CandleTensorExt;
    /// use candle_core::{Device, Tensor};
    /// use dlbridge::ManagedTensor;
    ///
    /// let tensor = Tensor::new(&[[1i64, 2, 3], [4, 5, 6]], &Device::Cpu)?;
    /// let columns = tensor.narrow(1, 1, 2)?;
    /// // SAFETY: nothing writes `tensor` in place (slice_set, const_set...) while the export lives.
    /// let exported = unsafe { ManagedTensor::from_candle_tensor_unchecked(&columns) }?;
    /// assert_eq!(exported.view().shape(), &[2, 2]);
    /// assert_eq!(exported.view().strides(), &[3, 1]);
    /// assert!(exported.view().is_read_only());
    /// let values: Vec<i64> = exported.view().elements::<i64>()?.iter().copied().collect();
    /// assert_eq!(values, [2, 3, 5, 6]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Safety
    ///
    /// While the managed tensor (or anything it is handed to) lives, candle must not write the
    /// tensor's storage in place: no `slice_set`, `const_set`, `zero_set`, `one_set`,
    /// `scatter_set`, `scatter_add` or `Var::set` on this tensor or on any tensor that shares
    /// its storage (its clones and views). Reading it, and operations that make new tensors,
    /// are fine.
    unsafe fn from_candle_tensor_unchecked(tensor: &Tensor) -> Result<ManagedTensor>;
}

impl CandleTensorExt for ManagedTensor {
    fn from_candle_tensor(tensor: &Tensor) -> Result<ManagedTensor> {
        let (storage, layout) = tensor.storage_and_layout();
        let bounded = bounded_layout(&storage, layout)?;
        // Lossless: `bounded_layout` checked the extents against `i64::MAX` and the number of
        // dimensions against `MAX_NDIM`.
        let mut shape: Vec<i64> = bounded.shape.iter().map(|&extent| extent as i64).collect();
        let mut strides = bounded.strides;
        let dl_tensor = DLTensor {
            data: bounded.first.cast_mut().cast(),
            device: Device::CPU,
            ndim: shape.len() as i32,
            dtype: bounded.dtype,
            shape: shape.as_mut_ptr(),
            strides: strides.as_mut_ptr(),
            byte_offset: 0,
        };
        // SAFETY: `shape` and `strides` hold `ndim` values each and outlive the view; candle's
        // read lock (`storage`) is held until the copy is made, so candle writes nothing
        // meanwhile, and its `Vec` keeps the elements alive; every element the layout reaches
        // lies inside that `Vec` (`bounded_layout`), initialised `dtype` values on the CPU.
        // The descriptor is also validated like any producer's.
        let view = unsafe { TensorView::from_dltensor(&dl_tensor) }?;
        let copy = view.to_compact_copy();
        drop(storage);
        copy
    }

    unsafe fn from_candle_tensor_unchecked(tensor: &Tensor) -> Result<ManagedTensor> {
        let (storage, layout) = tensor.storage_and_layout();
        let bounded = bounded_layout(&storage, layout)?;
        drop(storage);
        // SAFETY: the owner, a clone of the candle tensor, keeps its storage's `Vec` alive and
        // in place (candle never reallocates a storage: in-place writes keep its length); the
        // layout's elements lie in the `Vec` from `first` (`bounded_layout`, and the export
        // checks them again against the `available` elements); read-only; the caller
        // guarantees that candle does not write the storage while the export lives.
        unsafe {
            Export::from_raw_parts(
                tensor.clone(),
                bounded.first.cast_mut().cast(),
                bounded.dtype,
                Device::CPU,
                &bounded.shape,
            )
        }
        .strides(&bounded.strides)
        .with_buffer_len(bounded.available)
        .read_only(true)
        .into_versioned()
    }
}

/// The candle tensors from a [`TensorView`] (a copy): `use dlbridge::candle::CandleViewExt;` and
/// call it on any view.
///
/// The bridge's entry points for the feature `candle`; the trait is sealed (implemented for this
/// crate's types only), so methods can be added to it without breaking anyone.
pub trait CandleViewExt: crate::sealed::Sealed {
    /// A copy of the tensor as a new candle CPU tensor of the same shape, in row-major order
    /// whatever the tensor's layout (feature `candle`; why a copy: the module docs). `bool`
    /// tensors become `U8` ones.
    ///
    /// ```
    /// use dlbridge::candle::CandleViewExt;
    /// use dlbridge::Export;
    ///
    /// let tensor = Export::new(vec![1.0f32, 4.0, 2.0, 5.0, 3.0, 6.0], &[2, 3])
    ///     .strides(&[1, 2])
    ///     .into_versioned()?;
    /// let candle = tensor.view().to_candle_tensor()?;
    /// assert_eq!(candle.dims(), &[2, 3]);
    /// assert_eq!(candle.to_vec2::<f32>()?, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn to_candle_tensor(&self) -> Result<Tensor>;
}

impl CandleViewExt for TensorView<'_> {
    fn to_candle_tensor(&self) -> Result<Tensor> {
        use half::{bf16, f16};
        // Every extent of a tensor with elements fits `usize` (V5); an empty tensor's other
        // extents may not, on a 32-bit target.
        let shape = self
            .shape()
            .iter()
            .map(|&extent| usize::try_from(extent))
            .collect::<std::result::Result<Vec<usize>, _>>()
            .map_err(|_| Error::Unrepresentable {
                library: "candle",
                asked: "a candle tensor",
                given: format!(
                    "a tensor of shape {:?}: an extent exceeds usize",
                    self.shape()
                ),
            })?;
        let compact;
        let source = if self.is_c_contiguous() {
            *self
        } else {
            compact = self.to_compact_copy()?;
            compact.view()
        };
        let candle_error = |error: candle_core::Error| Error::Unrepresentable {
            library: "candle",
            asked: "a candle tensor",
            given: format!(
                "a tensor of shape {:?}: candle refused it: {error}",
                self.shape()
            ),
        };
        macro_rules! copy {
            ($ty:ty) => {
                Tensor::from_slice(source.as_slice::<$ty>()?, shape, &CandleDevice::Cpu)
                    .map_err(candle_error)
            };
        }
        match self.dtype() {
            DataType::UINT8 => copy!(u8),
            DataType::UINT32 => copy!(u32),
            DataType::INT16 => copy!(i16),
            DataType::INT32 => copy!(i32),
            DataType::INT64 => copy!(i64),
            DataType::FLOAT16 => copy!(f16),
            DataType::BFLOAT16 => copy!(bf16),
            DataType::FLOAT32 => copy!(f32),
            DataType::FLOAT64 => copy!(f64),
            DataType::BOOL => {
                // Checked 0 or 1 by the typed access, then read as the bytes they are.
                let bools = source.as_slice::<bool>()?;
                let bytes: Vec<u8> = bools.iter().map(|&value| u8::from(value)).collect();
                Tensor::from_vec(bytes, shape, &CandleDevice::Cpu).map_err(candle_error)
            }
            dtype => Err(Error::Unrepresentable {
                library: "candle",
                asked: "a candle tensor",
                given: format!("a tensor of data type {dtype}: candle has no such type"),
            }),
        }
    }
}

#[cfg(test)]
mod tests;
