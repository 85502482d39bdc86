//! The one-allocation block every exported tensor lives in: the crate's only raw `alloc` and
//! `dealloc`, and the deleter of every exported tensor.
//!
//! The managed struct, the shape, the strides and the owner of the memory live in a single
//! block: `[managed struct | ndim | owner | shape[ndim] | strides[ndim]]`. The managed struct
//! comes first, so the tensor's address is the block's. The deleter drops the owner and frees
//! the block; it may run on any thread, and a panic in the owner's `Drop` never crosses into C.
//!
//! [`export_owner`] is the one way in: every export (the builder, sharing, fresh storage,
//! `ndarray` arrays) moves its owner into a block there, and the tensor made is validated like
//! any import, unless it copies the descriptor of a tensor already validated.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::ffi::c_void;
use std::io::Write;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;

use crate::device::Device;
use crate::dtype::DataType;
use crate::error::{Error, MAX_NDIM, Result};
use crate::ffi::{DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use crate::flags::Flags;
use crate::managed::{ManagedTensor, RawManagedTensor};
use crate::validate::Validated;
use crate::version::Version;
use crate::view::TensorView;

/// The non-dimension fields of an export: what the block's `DLTensor` and flags are made of,
/// besides the shape and strides.
#[derive(Clone, Copy)]
pub(crate) struct Descriptor {
    pub data: *mut c_void,
    pub dtype: DataType,
    pub device: Device,
    pub flags: Flags,
    pub legacy: bool,
}

impl Descriptor {
    /// The descriptor of a new export over `view`'s elements as they are (its first element,
    /// data type and device), with `flags`, versioned or `legacy`: a re-export of memory a
    /// tensor already describes (a share, a new layout of it).
    pub(crate) fn of_view(view: &TensorView<'_>, flags: Flags, legacy: bool) -> Self {
        Descriptor {
            data: view.data_ptr(),
            dtype: view.dtype(),
            device: view.device(),
            flags,
            legacy,
        }
    }
}

/// The single heap block of an export: the managed struct first (its address is the tensor's
/// address), then what the deleter needs, then `shape` and `strides` (`2 * ndim` values).
#[repr(C)]
struct Block<M, O> {
    managed: M,
    ndim: usize,
    owner: ManuallyDrop<O>,
}

/// The layout of a block of `ndim` dimensions and the offset of its `shape` array; `None` only
/// for an `ndim` far above [`MAX_NDIM`], which no export reaches.
fn block_layout<M, O>(ndim: usize) -> Option<(Layout, usize)> {
    let dims = Layout::array::<i64>(ndim.checked_mul(2)?).ok()?;
    let (layout, dims_offset) = Layout::new::<Block<M, O>>().extend(dims).ok()?;
    Some((layout.pad_to_align(), dims_offset))
}

/// Moves `owner` into a new export block of `ndim` dimensions, lets `fill` write the shape and
/// strides (reading the owner at its final address), and validates the result, unless the
/// caller passes the validation of a tensor with the same descriptor (`prevalidated`: sharing
/// a validated tensor, whose shape, strides, data type and device are copied as they are).
///
/// # Safety
///
/// `descriptor.data`, with the shape and strides `fill` writes, must describe memory that the
/// owner keeps alive as `descriptor` says (device, dtype, readable, writable unless
/// read-only) for as long as the owner lives.
#[inline(always)]
pub(crate) unsafe fn export_owner<O: Send + 'static>(
    owner: O,
    ndim: usize,
    descriptor: Descriptor,
    prevalidated: Option<Validated>,
    fill: impl FnOnce(&O, &mut [i64], &mut [i64]),
) -> Result<ManagedTensor> {
    if ndim > MAX_NDIM as usize {
        return Err(Error::InvalidNdim { ndim: ndim as i64 });
    }
    let raw = if descriptor.legacy {
        // SAFETY: forwarded.
        let block = unsafe { allocate_block::<DLManagedTensor, O>(owner, ndim, descriptor, fill) };
        RawManagedTensor::Legacy(block.as_ptr())
    } else {
        // SAFETY: forwarded.
        let block =
            unsafe { allocate_block::<DLManagedTensorVersioned, O>(owner, ndim, descriptor, fill) };
        RawManagedTensor::Versioned(block.as_ptr())
    };
    let tensor = match prevalidated {
        // SAFETY: a freshly built tensor that we own, whose descriptor the caller vouches for
        // with the validation of an identical one (V1 to V8 hold for both).
        Some(validated) => Ok(unsafe { ManagedTensor::from_prevalidated(raw, validated) }),
        // SAFETY: a freshly built tensor that we own, with valid shape and strides; the memory
        // contract is the caller's.
        None => unsafe { ManagedTensor::from_raw(raw) },
    };
    if descriptor.legacy && !descriptor.flags.is_read_only() {
        // A legacy export of writable memory (rare): say so, as its flags cannot. (`flags` is
        // READ_ONLY where the memory is of unknown writability too: a legacy source.)
        return tensor.map(|mut tensor| {
            tensor.allow_legacy_writes();
            tensor
        });
    }
    tensor
}

/// A managed struct layout an export block can hold.
trait ManagedStruct: Sized {
    fn new(
        tensor: DLTensor,
        descriptor: &Descriptor,
        ctx: *mut c_void,
        deleter_for: DeleterFor,
    ) -> Self;
}

/// Picks the monomorphised deleter for an owner type.
struct DeleterFor {
    versioned: unsafe extern "C" fn(*mut DLManagedTensorVersioned),
    legacy: unsafe extern "C" fn(*mut DLManagedTensor),
}

impl ManagedStruct for DLManagedTensorVersioned {
    fn new(
        dl_tensor: DLTensor,
        descriptor: &Descriptor,
        ctx: *mut c_void,
        deleter_for: DeleterFor,
    ) -> Self {
        DLManagedTensorVersioned {
            version: Version::CURRENT,
            manager_ctx: ctx,
            deleter: Some(deleter_for.versioned),
            flags: descriptor.flags.bits(),
            dl_tensor,
        }
    }
}

impl ManagedStruct for DLManagedTensor {
    fn new(dl_tensor: DLTensor, _: &Descriptor, ctx: *mut c_void, deleter_for: DeleterFor) -> Self {
        DLManagedTensor {
            dl_tensor,
            manager_ctx: ctx,
            deleter: Some(deleter_for.legacy),
        }
    }
}

/// Allocates and fills a block (one allocation).
///
/// # Safety
///
/// As for [`export_owner`].
unsafe fn allocate_block<M: ManagedStruct, O: Send + 'static>(
    owner: O,
    ndim: usize,
    descriptor: Descriptor,
    fill: impl FnOnce(&O, &mut [i64], &mut [i64]),
) -> NonNull<M> {
    let Some((layout, dims_offset)) = block_layout::<M, O>(ndim) else {
        // `export_owner` bounded ndim by MAX_NDIM, whose block always has a layout.
        unreachable!("a block of {ndim} dimensions has no layout");
    };
    // SAFETY: the layout is never zero-sized: it holds at least the managed struct.
    let Some(block) = NonNull::new(unsafe { alloc(layout) }) else {
        handle_alloc_error(layout)
    };
    let block = block.cast::<Block<M, O>>();
    // SAFETY: `block` is a fresh allocation of `layout`, which holds a `Block<M, O>` at offset 0
    // and `2 * ndim` aligned `i64`s at `dims_offset`. Fields are written before any is read,
    // through raw pointers only.
    unsafe {
        let raw = block.as_ptr();
        std::ptr::addr_of_mut!((*raw).ndim).write(ndim);
        std::ptr::addr_of_mut!((*raw).owner).write(ManuallyDrop::new(owner));
        let dims = raw.cast::<u8>().add(dims_offset).cast::<i64>();
        std::ptr::write_bytes(dims, 0, 2 * ndim);
        let shape = std::slice::from_raw_parts_mut(dims, ndim);
        let strides = std::slice::from_raw_parts_mut(dims.add(ndim), ndim);
        fill(&(*raw).owner, shape, strides);
        let dl_tensor = DLTensor {
            data: descriptor.data,
            device: descriptor.device,
            ndim: ndim as i32,
            dtype: descriptor.dtype,
            shape: dims,
            strides: dims.add(ndim),
            byte_offset: 0,
        };
        let deleter_for = DeleterFor {
            versioned: delete_block::<DLManagedTensorVersioned, O>,
            legacy: delete_block::<DLManagedTensor, O>,
        };
        std::ptr::addr_of_mut!((*raw).managed).write(M::new(
            dl_tensor,
            &descriptor,
            raw.cast(),
            deleter_for,
        ));
    }
    block.cast()
}

/// The deleter of every exported tensor: drops the owner, then frees the block.
///
/// # Safety
///
/// `managed` must be NULL or a tensor made by `allocate_block::<M, O>` whose deleter has not
/// run yet.
unsafe extern "C" fn delete_block<M, O>(managed: *mut M) {
    if managed.is_null() {
        return;
    }
    let block = managed.cast::<Block<M, O>>();
    // SAFETY: made by `allocate_block::<M, O>` and not yet deleted: `ndim` and `owner` are
    // initialised, and the owner is taken exactly once.
    let (ndim, owner) = unsafe { ((*block).ndim, ManuallyDrop::take(&mut (*block).owner)) };
    // A panicking `Drop` must not unwind into C: contain it, free the block regardless.
    let dropped = catch_unwind(AssertUnwindSafe(move || drop(owner)));
    // The layout the block was made with (it had one, or it would not exist).
    if let Some((layout, _)) = block_layout::<M, O>(ndim) {
        // SAFETY: the block was allocated with exactly this layout and is not used after this.
        unsafe { dealloc(block.cast(), layout) };
    }
    if let Err(payload) = dropped {
        crate::error::drop_panic_payload(payload);
        // Not `eprintln!`, which panics when stderr is gone: nothing may unwind into C here.
        let _ = writeln!(
            std::io::stderr(),
            "dlbridge: the owner of an exported tensor panicked while being dropped"
        );
    }
}

/// Takes the owner out of an export block and frees the block, without dropping the owner:
/// the deleter's work but the drop, for an export whose owner moves on into a new export (a
/// relayout of a relayout: `export::relayout`). The tensor is gone afterwards.
///
/// # Safety
///
/// `managed` must be a tensor made by [`export_owner`] with an owner of type `O`, versioned
/// if `M` is `DLManagedTensorVersioned` and legacy if it is `DLManagedTensor`, owned by the
/// caller and not deleted yet; it must not be used afterwards (its deleter not called).
pub(crate) unsafe fn take_owner<M, O>(managed: NonNull<M>) -> O {
    let block = managed.as_ptr().cast::<Block<M, O>>();
    // SAFETY: made by `allocate_block::<M, O>` and not yet deleted (the contract): `ndim` and
    // `owner` are initialised, and the owner is taken exactly once (the block is freed next,
    // and never deleted).
    let (ndim, owner) = unsafe { ((*block).ndim, ManuallyDrop::take(&mut (*block).owner)) };
    // The layout the block was made with (it had one, or it would not exist).
    if let Some((layout, _)) = block_layout::<M, O>(ndim) {
        // SAFETY: the block was allocated with exactly this layout and is not used after this.
        unsafe { dealloc(block.cast(), layout) };
    }
    owner
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Export;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn owner_is_dropped_exactly_once_by_the_deleter() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        struct Owner(Vec<f32>);
        impl Drop for Owner {
            fn drop(&mut self) {
                DROPS.fetch_add(1, Ordering::SeqCst);
            }
        }
        let mut owner = Owner(vec![1.0, 2.0]);
        let data = owner.0.as_mut_ptr().cast();
        // SAFETY: the Vec inside the owner holds two f32 for as long as the owner lives.
        let tensor =
            unsafe { Export::from_raw_parts(owner, data, DataType::FLOAT32, Device::CPU, &[2]) }
                .into_versioned()
                .unwrap();
        assert_eq!(tensor.view().as_slice::<f32>().unwrap(), &[1.0, 2.0]);
        assert_eq!(DROPS.load(Ordering::SeqCst), 0);
        drop(tensor);
        assert_eq!(DROPS.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_panicking_owner_does_not_unwind_into_the_deleter_caller() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        // Its fields are dropped after its `Drop` panics: `_held` shows the owner released.
        struct Bomb {
            _held: std::sync::Arc<()>,
        }
        impl Drop for Bomb {
            fn drop(&mut self) {
                DROPS.fetch_add(1, Ordering::SeqCst);
                panic!("owner drop panics");
            }
        }
        let held = std::sync::Arc::new(());
        let bomb = Bomb {
            _held: std::sync::Arc::clone(&held),
        };
        let data = std::ptr::NonNull::<u8>::dangling().as_ptr().cast();
        // SAFETY: zero elements: no memory is reached.
        let tensor =
            unsafe { Export::from_raw_parts(bomb, data, DataType::UINT8, Device::CPU, &[0]) }
                .into_versioned()
                .unwrap();
        let raw = tensor.into_raw().versioned().unwrap();
        let block = raw.cast_const().cast::<u8>();
        // The deleter returns (a panic reaching it would abort the test binary), having
        // dropped the owner once and freed the block all the same.
        let freed = crate::alloc_watch::frees([block], || {
            // SAFETY: our own tensor, deleted once.
            unsafe { (*raw).deleter.unwrap()(raw) };
        });
        assert_eq!(freed, [1], "frees of the block");
        assert_eq!(DROPS.load(Ordering::SeqCst), 1);
        assert_eq!(std::sync::Arc::strong_count(&held), 1);
    }
}
