//! Zero-copy conversion between managed tensors and burn's `TensorData` (feature `burn`).
//!
//! [`BurnTensorExt::into_burn_data`] hands a tensor's memory to burn as `TensorData` without
//! copying: the managed tensor becomes the owner of burn's bytes (a `Bytes` allocation
//! controller of this module), and its deleter runs when burn drops the last of them.
//! [`BurnTensorExt::from_burn_data`] exports burn's data as a tensor, burn's `Bytes` as the
//! owner. A `Tensor` of any backend goes through its data: `tensor.into_data()` and
//! `Tensor::from_data(data, &device)`.
//!
//! # Writes
//!
//! burn's `TensorData` is mutable (`as_mut_slice`, and every in-place operation of a backend
//! that borrowed it). A write goes to the tensor's own memory only when the tensor allows it:
//! writable, not shared with another handle ([`ManagedTensor::is_exclusive`]), and not
//! shared inside burn (a clone of the bytes). Otherwise the first write copies the bytes into
//! a private buffer and writes there: a read-only tensor (a NumPy array with `WRITEABLE`
//! off, a JAX array) is never written.
//!
//! # What each backend does with the data
//!
//! | backend | into burn (`Tensor::from_data(data, &device)`) | out of burn (`into_data`, then [`BurnTensorExt::from_burn_data`]) |
//! |---|---|---|
//! | Flex (CPU; burn 0.22's pure-Rust CPU backend) | zero-copy: the bytes become the tensor's storage; its in-place operations write through them (in the tensor's memory where it allows, else copy-on-write) | zero-copy when the tensor owns its bytes alone and is contiguous; otherwise burn copies |
//! | NdArray (CPU; deprecated in burn 0.22) | zero-copy: burn-ndarray keeps non-native bytes as borrowed storage, and copies on its first write | zero-copy when the tensor's `ArcArray` is unique and contiguous (burn hands its `Vec` over); otherwise burn copies |
//! | device backends (CubeCL: CUDA, ROCm, wgpu, Metal, CPU; LibTorch) | one upload: burn copies the host bytes to the device | one download: burn copies the device memory to host bytes, which are exported without a further copy |
//!
//! A device tensor cannot cross without a copy here: burn has no API that hands out or adopts
//! a device allocation. For CUDA memory, the cudarc and PyTorch routes of this crate are
//! zero-copy.
//!
//! # Data types
//!
//! | DLPack | burn `DType` |
//! |---|---|
//! | float64, float32, float16, bfloat16 | `F64`, `F32`, `F16`, `BF16` (`Flex32` exports as float32: it is stored as `f32`) |
//! | int64, int32, int16, int8 | `I64`, `I32`, `I16`, `I8` |
//! | uint64, uint32, uint16, uint8 | `U64`, `U32`, `U16`, `U8` |
//! | bool | `Bool(BoolStore::Native)` (`Bool(BoolStore::U8)`, stored as 0 and 1 in bytes, exports as bool too) |
//!
//! burn has no complex, float8, sub-byte or vector types: such tensors are refused with
//! [`Error::Unrepresentable`]. burn's quantized data (`QFloat`) and booleans stored as `u32`
//! have no DLPack type and are refused the other way.
//!
//! burn's data is always C-contiguous (row-major): a tensor of another layout (a transpose, a
//! slice with steps) is refused with [`Error::Unrepresentable`] naming its shape and strides;
//! [`ManagedTensor::into_compact`] first makes it compact (a copy only where the layout needs
//! one), as in `tensor.into_compact()?.into_burn_data()?`.
//!
//! The tests are in `tests.rs` beside this file.

use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::Arc;

use ::burn_std::{
    AccessError, AccessPolicy, AllocationController, AllocationProperty, BoolStore, Bytes, DType,
    TensorData, Writer,
};

use crate::device::Device;
use crate::dtype::DataType;
use crate::error::{Error, Result};
use crate::export::{CacheLine, Export, zeroed_storage};
use crate::flags::Writability;
use crate::managed::ManagedTensor;
use crate::view::TensorView;

/// The burn data type of a DLPack one, where burn has it.
fn burn_dtype(dtype: DataType) -> Option<DType> {
    Some(match dtype {
        DataType::FLOAT64 => DType::F64,
        DataType::FLOAT32 => DType::F32,
        DataType::FLOAT16 => DType::F16,
        DataType::BFLOAT16 => DType::BF16,
        DataType::INT64 => DType::I64,
        DataType::INT32 => DType::I32,
        DataType::INT16 => DType::I16,
        DataType::INT8 => DType::I8,
        DataType::UINT64 => DType::U64,
        DataType::UINT32 => DType::U32,
        DataType::UINT16 => DType::U16,
        DataType::UINT8 => DType::U8,
        DataType::BOOL => DType::Bool(BoolStore::Native),
        _ => return None,
    })
}

/// The DLPack data type of a burn one, where DLPack has it.
fn dlpack_dtype(dtype: DType) -> Option<DataType> {
    Some(match dtype {
        DType::F64 => DataType::FLOAT64,
        DType::F32 | DType::Flex32 => DataType::FLOAT32,
        DType::F16 => DataType::FLOAT16,
        DType::BF16 => DataType::BFLOAT16,
        DType::I64 => DataType::INT64,
        DType::I32 => DataType::INT32,
        DType::I16 => DataType::INT16,
        DType::I8 => DataType::INT8,
        DType::U64 => DataType::UINT64,
        DType::U32 => DataType::UINT32,
        DType::U16 => DataType::UINT16,
        DType::U8 => DataType::UINT8,
        DType::Bool(BoolStore::Native | BoolStore::U8) => DataType::BOOL,
        _ => return None,
    })
}

/// The alignment an address has: its lowest set bit, capped at a cache line (the alignment
/// of this module's own copies); a cache line for an empty tensor's dangling address.
fn address_alignment(address: usize) -> usize {
    let line = std::mem::align_of::<CacheLine>();
    if address == 0 {
        return line;
    }
    (1usize << address.trailing_zeros()).min(line)
}

/// burn's view of a managed tensor's memory: a `Bytes` allocation controller that owns the
/// tensor (shared between the clones burn makes of the bytes), and the private copy its first
/// write makes where the tensor's memory may not be written.
struct TensorBytes {
    /// The tensor: C-contiguous, host-readable, `len` bytes from its data pointer (checked by
    /// [`BurnTensorExt::into_burn_data`]).
    tensor: Arc<ManagedTensor>,
    /// The bytes of the tensor.
    len: usize,
    /// The copy written instead of the tensor, once a write needed one.
    copy: Option<Vec<CacheLine>>,
}

impl TensorBytes {
    /// The tensor's first byte (dangling for an empty tensor).
    fn tensor_bytes(&self) -> NonNull<u8> {
        let data = self.tensor.view().data_ptr().cast::<u8>();
        match NonNull::new(data) {
            Some(data) if self.len > 0 => data,
            _ => NonNull::dangling(),
        }
    }

    /// Whether burn may write the tensor's own memory: writable, no other handle of it (in
    /// this crate or another clone of the bytes in burn).
    fn tensor_is_writable(&mut self) -> bool {
        match Arc::get_mut(&mut self.tensor) {
            Some(tensor) => tensor.is_exclusive() && tensor.writability() == Writability::Writable,
            None => false,
        }
    }
}

/// The bytes of a copy, as burn's controller interface hands them out.
fn copy_bytes(copy: &[CacheLine], len: usize) -> &[MaybeUninit<u8>] {
    // SAFETY: `copy` holds at least `len` initialised bytes (made so by `memory_mut`), and any
    // initialised byte is a valid `MaybeUninit<u8>`.
    unsafe { std::slice::from_raw_parts(copy.as_ptr().cast(), len) }
}

impl AllocationController for TensorBytes {
    fn alloc_align(&self) -> usize {
        match &self.copy {
            Some(_) => std::mem::align_of::<CacheLine>(),
            None => address_alignment(self.tensor_bytes().as_ptr() as usize),
        }
    }

    fn property(&self) -> AllocationProperty {
        // Not Rust's allocator: burn must not take the memory over as a `Vec`; backends that
        // can borrow foreign bytes (burn-ndarray) keep them where they are.
        AllocationProperty::Other
    }

    fn capacity(&self) -> usize {
        self.len
    }

    fn memory(&self, _policy: AccessPolicy) -> Result<&[MaybeUninit<u8>], AccessError> {
        if let Some(copy) = &self.copy {
            return Ok(copy_bytes(copy, self.len));
        }
        // SAFETY: the tensor is C-contiguous on a host-readable device (checked when the
        // controller was made), so its `len` bytes from the data pointer are readable memory
        // of one allocation for as long as the tensor lives, which `&self` (holding the `Arc`)
        // outlives; nothing writes them while the returned borrow lives (writes go through
        // `memory_mut`, under `&mut self`, and the tensor's contract keeps other writers
        // away). An empty tensor gets an empty slice at a dangling address.
        Ok(unsafe { std::slice::from_raw_parts(self.tensor_bytes().as_ptr().cast(), self.len) })
    }

    unsafe fn memory_mut(
        &mut self,
        policy: AccessPolicy,
    ) -> Result<&mut [MaybeUninit<u8>], AccessError> {
        if self.copy.is_none() {
            if self.tensor_is_writable() {
                // SAFETY: as in `memory`; in addition the tensor is writable, exclusive, and
                // this controller holds the only `Arc` of it, so `&mut self` is the only way
                // to its bytes while the returned borrow lives. burn writes only initialised
                // bytes (the trait's contract).
                return Ok(unsafe {
                    std::slice::from_raw_parts_mut(self.tensor_bytes().as_ptr().cast(), self.len)
                });
            }
            if !policy.copy_allowed() {
                return Err(AccessError::WouldCopy);
            }
            let mut copy =
                zeroed_storage(self.len).map_err(|error| AccessError::Read(error.to_string()))?;
            // SAFETY: `copy` has room for `len` bytes (`zeroed_storage` rounds up); the
            // source is the tensor's readable bytes (as in `memory`); the two do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.tensor_bytes().as_ptr(),
                    copy.as_mut_ptr().cast::<u8>(),
                    self.len,
                );
            }
            self.copy = Some(copy);
        }
        let len = self.len;
        let copy = self
            .copy
            .as_mut()
            .map_or(&mut [][..], |copy| copy.as_mut_slice());
        // SAFETY: as in `copy_bytes`, mutably: the copy is this controller's own memory.
        Ok(unsafe { std::slice::from_raw_parts_mut(copy.as_mut_ptr().cast(), len) })
    }

    fn duplicate(&self) -> Option<Box<dyn AllocationController>> {
        // A clone of burn's bytes shares the tensor (no copy), and so makes it read-only for
        // both clones: the first to write copies. A clone of a written copy is copied by burn.
        match self.copy {
            Some(_) => None,
            None => Some(Box::new(TensorBytes {
                tensor: Arc::clone(&self.tensor),
                len: self.len,
                copy: None,
            })),
        }
    }
}

const BURN_DATA: &str = "burn tensor data";

/// burn's `TensorData` from a [`ManagedTensor`] and back: `use dlbridge::burn::BurnTensorExt;`,
/// then `tensor.into_burn_data()` and `BurnTensorExt::from_burn_data(data)`.
///
/// The bridge's entry points for the feature `burn`; the trait is sealed (implemented for this
/// crate's types only), so methods can be added to it without breaking anyone.
pub trait BurnTensorExt: crate::sealed::Sealed {
    /// The tensor as burn `TensorData`, without copying (feature `burn`): the tensor becomes
    /// the owner of burn's bytes, and its deleter runs when burn drops them.
    ///
    /// Needs a C-contiguous tensor on a host-readable device, with a data type burn has
    /// ([the module's table](crate::burn)) and an aligned first element; `bool` elements must
    /// be 0 or 1.
    /// burn writes the tensor's memory in place only where the tensor is writable and
    /// exclusive; otherwise its first write copies (see the module docs).
    ///
    /// ```
    /// use dlbridge::burn::BurnTensorExt;
    /// use dlbridge::{Export, ManagedTensor};
    ///
    /// let tensor = Export::new(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).into_versioned()?;
    /// let address = tensor.view().data_ptr() as *const u8;
    /// let data = tensor.into_burn_data()?;
    /// assert_eq!(data.shape().as_slice(), &[2, 3]);
    /// assert_eq!(data.as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    /// assert_eq!(data.as_bytes().as_ptr(), address); // no copy
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn into_burn_data(self) -> Result<TensorData>;

    /// Exports burn `TensorData` as a versioned, writable managed tensor, without copying
    /// where burn hands over its bytes (feature `burn`); burn's `Bytes` become the tensor's
    /// owner, dropped by its deleter on whatever thread the consumer calls it.
    ///
    /// burn's bytes are read in place when they are resident and aligned for the data type
    /// (burn's own allocations always are); bytes that are shared inside burn are copied by
    /// burn itself on this mutable access (its copy-on-write), file- or device-backed bytes
    /// are read into host memory by burn, and misaligned ones are copied here, flagged
    /// IS_COPIED.
    ///
    /// ```
    /// use dlbridge::burn::BurnTensorExt;
    /// use burn_std::TensorData;
    /// use dlbridge::ManagedTensor;
    ///
    /// let data = TensorData::new(vec![1i64, 2, 3, 4], [2, 2]);
    /// let address = data.as_bytes().as_ptr();
    /// let tensor = ManagedTensor::from_burn_data(data)?;
    /// assert_eq!(tensor.view().shape(), &[2, 2]);
    /// assert_eq!(tensor.view().as_slice::<i64>()?, &[1, 2, 3, 4]);
    /// assert_eq!(tensor.view().data_ptr() as *const u8, address); // no copy
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn from_burn_data(data: TensorData) -> Result<ManagedTensor>;
}

impl BurnTensorExt for ManagedTensor {
    fn into_burn_data(self) -> Result<TensorData> {
        let view = self.view();
        let dtype = view.dtype();
        let burn = burn_dtype(dtype).ok_or_else(|| Error::Unrepresentable {
            library: "burn",
            asked: BURN_DATA,
            given: format!("a tensor of data type {dtype}: burn has no such type"),
        })?;
        check_typed_contiguous(&view, dtype).map_err(|error| match error {
            Error::NotContiguous { shape, strides, .. } => Error::Unrepresentable {
                library: "burn",
                asked: BURN_DATA,
                given: format!(
                    "a tensor of shape {shape:?} and strides {strides:?}: burn's data is \
                     row-major compact; call ManagedTensor::into_compact() first (it copies \
                     only a tensor that is not)"
                ),
            },
            other => other,
        })?;
        let shape = usize_shape(&view)?;
        // V5: the byte size of a tensor with elements fits `isize`; an empty one has none.
        let len = usize::try_from(view.compact_byte_size()).unwrap_or(0);
        let controller = TensorBytes {
            tensor: Arc::new(self),
            len,
            copy: None,
        };
        // SAFETY: the controller's memory holds `len` initialised bytes: the tensor's elements
        // (C-contiguous, so exactly `len` bytes from its data pointer).
        let bytes = unsafe { Bytes::from_controller(Box::new(controller), len) };
        TensorData::try_from_bytes(bytes, shape, burn).map_err(|error| Error::Unrepresentable {
            library: "burn",
            asked: BURN_DATA,
            given: format!("a tensor burn refused: {error}"),
        })
    }

    fn from_burn_data(data: TensorData) -> Result<ManagedTensor> {
        let burn = data.dtype();
        let dtype = dlpack_dtype(burn).ok_or_else(|| Error::Unrepresentable {
            library: "burn",
            asked: "a DLPack tensor",
            given: format!("burn data of type {burn:?}: DLPack has no such type"),
        })?;
        let shape: Vec<usize> = data.shape().as_slice().to_vec();
        export_bytes(data.into_bytes(), &shape, dtype)
    }
}

/// Exports burn's bytes as a compact row-major tensor of `shape` and `dtype` (the bytes as
/// the owner, or a copy where they are misaligned), bounded by the bytes: the shape must
/// describe exactly the elements they hold ([`Error::ShapeMismatch`] otherwise). burn's
/// `TensorData` keeps its bytes' length equal to its shape's (every constructor checks it;
/// quantized data, whose length it does not check, has no DLPack type); the bound does not
/// rely on it.
fn export_bytes(mut bytes: Bytes, shape: &[usize], dtype: DataType) -> Result<ManagedTensor> {
    // The memory burn lends: its address and length, which bound the layout.
    let (address, len) = match bytes.write(Writer::new()) {
        Ok(memory) => (memory.as_mut_ptr(), memory.len()),
        Err(error) => {
            return Err(Error::Unrepresentable {
                library: "burn",
                asked: "a DLPack tensor",
                given: format!("burn bytes that cannot be read: {error}"),
            });
        }
    };
    // Every data type of the table is whole bytes.
    let elements = len / dtype.size_in_bytes().unwrap_or(1).max(1);
    let align = dtype
        .size_in_bytes()
        .map_or(1, |size| size.next_power_of_two());
    if len > 0 && (address as usize) % align != 0 {
        // Misaligned bytes (burn's shared or file-backed ones may be): a compact copy.
        let mut copy = zeroed_storage(len)?;
        // SAFETY: `address` is readable for `len` bytes (burn's own slice above), `copy`
        // has room for them, and the two do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(address, copy.as_mut_ptr().cast::<u8>(), len);
        }
        let data = copy.as_mut_ptr();
        // SAFETY: the copy holds `len` bytes, `elements` whole `dtype` elements, aligned to a
        // cache line, and the export's bound keeps `shape` (compact row-major) inside them;
        // the `Vec` owns them, and nothing else can reach them once it is moved in.
        return unsafe { Export::from_raw_parts(copy, data.cast(), dtype, Device::CPU, shape) }
            .with_buffer_len(elements)
            .is_copied(true)
            .into_versioned();
    }
    // SAFETY: burn's `Bytes` owns `len` initialised bytes at `address`, `elements` whole
    // `dtype` elements, and the export's bound keeps `shape` (compact row-major) inside them;
    // they stay in place when the `Bytes` is moved (its controller is boxed and its memory a
    // separate allocation); `write` gave mutable access, so nothing else in burn shares them,
    // and once the `Bytes` is moved in nothing else can reach them. The address is aligned
    // for the type (checked above).
    unsafe { Export::from_raw_parts(bytes, address.cast(), dtype, Device::CPU, shape) }
        .with_buffer_len(elements)
        .into_versioned()
}

/// Checks a tensor for burn: host-readable, C-contiguous, aligned, valid bools (the checks of
/// [`TensorView::as_slice`] for its element type).
fn check_typed_contiguous(view: &TensorView<'_>, dtype: DataType) -> Result<()> {
    use half::{bf16, f16};
    match dtype {
        DataType::FLOAT64 => view.as_slice::<f64>().map(drop),
        DataType::FLOAT32 => view.as_slice::<f32>().map(drop),
        DataType::FLOAT16 => view.as_slice::<f16>().map(drop),
        DataType::BFLOAT16 => view.as_slice::<bf16>().map(drop),
        DataType::INT64 => view.as_slice::<i64>().map(drop),
        DataType::INT32 => view.as_slice::<i32>().map(drop),
        DataType::INT16 => view.as_slice::<i16>().map(drop),
        DataType::INT8 => view.as_slice::<i8>().map(drop),
        DataType::UINT64 => view.as_slice::<u64>().map(drop),
        DataType::UINT32 => view.as_slice::<u32>().map(drop),
        DataType::UINT16 => view.as_slice::<u16>().map(drop),
        DataType::UINT8 => view.as_slice::<u8>().map(drop),
        DataType::BOOL => view.as_slice::<bool>().map(drop),
        _ => Err(Error::Unrepresentable {
            library: "burn",
            asked: BURN_DATA,
            given: format!("a tensor of data type {dtype}: burn has no such type"),
        }),
    }
}

/// The extents as `usize`, which every tensor with elements has (V5); an empty tensor's
/// extent may not fit.
fn usize_shape(view: &TensorView<'_>) -> Result<Vec<usize>> {
    view.shape()
        .iter()
        .map(|&extent| {
            usize::try_from(extent).map_err(|_| Error::Unrepresentable {
                library: "burn",
                asked: BURN_DATA,
                given: format!(
                    "a tensor of shape {:?}: an extent exceeds usize",
                    view.shape()
                ),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
