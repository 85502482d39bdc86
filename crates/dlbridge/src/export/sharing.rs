//! Re-export of a tensor this crate validated, without copying the data and without validating
//! it again: [`ManagedTensor::share_versioned`], [`ManagedTensor::share_legacy`] and
//! [`ManagedTensor::export_view`]. The new tensor copies the view's shape, strides, data type
//! and device, so the view's validation holds for it; its owner (the shared tensor, or what
//! the caller names) keeps the memory alive.

use std::sync::Arc;

use super::block::{Descriptor, export_owner};
use crate::error::{Error, Result};
use crate::ffi::{DLManagedTensor, DLManagedTensorVersioned};
use crate::flags::{Flags, Writability};
use crate::managed::{ManagedTensor, RawManagedTensor};
use crate::validate::{Validated, check_legacy_export};
use crate::view::TensorView;

impl ManagedTensor {
    /// A new versioned tensor viewing the same memory, which keeps this one alive: how a
    /// consumer re-exports what it imported (NumPy -> dlbridge -> PyTorch) without a copy.
    ///
    /// The new tensor has this one's shape, strides (made explicit), dtype and device, `data`
    /// at the first element with `byte_offset = 0`, and the padded flag, with READ_ONLY when
    /// this one may not be written (flagged so, or a legacy tensor of unknown writability:
    /// [`crate::Writability`]); not
    /// IS_COPIED, since its memory is now shared. One allocation; this tensor's deleter runs
    /// when the last tensor sharing it is dropped, on whatever thread that happens.
    ///
    /// Rust's borrowing rules hold across shares: other clones (or weak references) of the
    /// `Arc` can still read the memory, so the share hands out shared access only (its mutable
    /// accessors return [`Error::SharedMemory`]; see [`ManagedTensor::is_exclusive`]); to
    /// write, take the tensor back from its `Arc` (`Arc::try_unwrap`) once the shares are
    /// gone. Its DLPack flags stay those of this tensor: a foreign consumer it is handed to
    /// (through [`ManagedTensor::into_raw`]) may write, as C code sharing memory may. While
    /// the share is a handle in Rust, this tensor counts it
    /// ([`ManagedTensor::live_shares`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dlbridge::{Export, ManagedTensor};
    /// let original = Arc::new(Export::new(vec![1u8, 2, 3], &[3]).into_versioned()?);
    /// let shared = Arc::clone(&original).share_versioned()?;
    /// assert_eq!(shared.view().data_ptr(), original.view().data_ptr());
    /// assert_eq!(Arc::strong_count(&original), 2);
    /// drop(shared);
    /// assert_eq!(Arc::strong_count(&original), 1);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[inline]
    pub fn share_versioned(self: Arc<Self>) -> Result<ManagedTensor> {
        share(self, false)
    }

    /// As [`ManagedTensor::share_versioned`], as a legacy `DLManagedTensor`; refused for a
    /// tensor flagged READ_ONLY, which the legacy layout cannot mark. A tensor of unknown
    /// writability (itself legacy, from outside) may go out legacy as it came in.
    #[inline]
    pub fn share_legacy(self: Arc<Self>) -> Result<ManagedTensor> {
        share(self, true)
    }

    /// [`ManagedTensor::share_versioned`] handed straight to a consumer: the pointer that
    /// `share_versioned()?.into_raw()` gives, made without the share ever being a handle in
    /// Rust, so it is never counted in [`ManagedTensor::live_shares`] (no atomic operation but
    /// the `Arc`'s). How a producer answers a consumer's request for the tensor (`__dlpack__`,
    /// an exchange table's export). The consumer must call the deleter once; the last of the
    /// `Arc`'s holders to go drops this tensor.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dlbridge::{Export, ManagedTensor};
    /// let original = Arc::new(Export::new(vec![1u8, 2, 3], &[3]).into_versioned()?);
    /// let raw = Arc::clone(&original).share_versioned_into_raw()?; // to a C consumer...
    /// assert_eq!(original.live_shares(), 0);
    /// assert_eq!(Arc::strong_count(&original), 2);
    /// // ...which reads the same memory, and releases it once.
    /// // SAFETY: a live tensor handed over once.
    /// let back = unsafe { ManagedTensor::from_raw_versioned(raw) }?;
    /// assert_eq!(back.view().data_ptr(), original.view().data_ptr());
    /// drop(back);
    /// assert_eq!(Arc::strong_count(&original), 1);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[must_use = "the tensor leaks unless the pointer is passed on or deleted"]
    #[inline]
    pub fn share_versioned_into_raw(self: Arc<Self>) -> Result<*mut DLManagedTensorVersioned> {
        Ok(share_into_raw(self, false)?
            .versioned()
            .expect("a versioned share gives a versioned pointer"))
    }

    /// [`ManagedTensor::share_legacy`] handed straight to a consumer, as
    /// [`ManagedTensor::share_versioned_into_raw`] hands a versioned share: refused for a
    /// tensor flagged READ_ONLY, which the legacy layout cannot mark.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dlbridge::{Error, Export, ManagedTensor};
    /// let original = Arc::new(Export::new(vec![1u8, 2, 3], &[3]).into_versioned()?);
    /// let raw = Arc::clone(&original).share_legacy_into_raw()?;
    /// // SAFETY: a live tensor handed over once.
    /// drop(unsafe { ManagedTensor::from_raw_legacy(raw) }?);
    /// let frozen = Arc::new(Export::new(vec![1u8], &[1]).read_only(true).into_versioned()?);
    /// assert_eq!(frozen.share_legacy_into_raw(), Err(Error::ReadOnlyLegacyExport));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[must_use = "the tensor leaks unless the pointer is passed on or deleted"]
    #[inline]
    pub fn share_legacy_into_raw(self: Arc<Self>) -> Result<*mut DLManagedTensor> {
        Ok(share_into_raw(self, true)?
            .legacy()
            .expect("a legacy share gives a legacy pointer"))
    }
}

/// A share of `tensor` handed straight to a consumer (`legacy`: as a legacy tensor): never a
/// handle in Rust, so never counted.
#[inline(always)]
fn share_into_raw(tensor: Arc<ManagedTensor>, legacy: bool) -> Result<RawManagedTensor> {
    Ok(export_share(tensor, legacy)?.into_raw())
}

#[inline(always)]
fn share(tensor: Arc<ManagedTensor>, legacy: bool) -> Result<ManagedTensor> {
    let source: *const ManagedTensor = Arc::as_ptr(&tensor);
    let ready_stream = tensor.ready_stream();
    let mut shared = export_share(tensor, legacy)?;
    // SAFETY: the share's owner is the `Arc`, so the source stays alive and in place until
    // the share's deleter runs (counted while the share is a Rust handle:
    // `ManagedTensor::live_shares`).
    unsafe { shared.count_as_share_of(&*source) };
    // SAFETY: the share keeps the source tensor alive, whose ready stream lives as long as it
    // or a share of it can be exported (`set_ready_stream`'s contract).
    unsafe { shared.set_ready_stream(ready_stream) };
    // Rust code may still read the memory through the source: other clones of the `Arc` (or
    // weak references), or whoever holds what the source shares. A share hands out shared
    // access only (to write, take the tensor back: `Arc::try_unwrap`), so no check of the
    // `Arc`'s counts (a compare-and-swap) costs each export.
    shared.mark_shared();
    Ok(shared)
}

/// The new tensor of every share (`legacy`: a legacy one) of `tensor`, which its `Arc` keeps
/// alive: the descriptor of its validated view, its flags (READ_ONLY carries over), no count
/// and no ready stream yet ([`share`] adds them to a share that stays a Rust handle).
#[inline(always)]
fn export_share(tensor: Arc<ManagedTensor>, legacy: bool) -> Result<ManagedTensor> {
    let source: *const ManagedTensor = Arc::as_ptr(&tensor);
    // SAFETY: the `Arc` moves into the export (and lives as long as it), but its target does
    // not move, so a view of the target stays valid through the call, which only reads it.
    let view = unsafe { &*source }.view();
    // SAFETY: the `Arc` keeps the validated tensor, and so the memory its view describes,
    // alive; the view's read-only flag carries over.
    unsafe { export_view(&view, tensor, legacy, false) }
}

impl ManagedTensor {
    /// Exports the tensor a validated view describes, as a versioned tensor whose deleter
    /// drops `owner`: one allocation, the shape and strides copied, and no second validation
    /// (the view's holds for the copy). READ_ONLY is set when `read_only` is true or the view
    /// is read-only. This is how a consumer that validated a borrowed descriptor (a NumPy
    /// array's, say) keeps it as an owned tensor.
    ///
    /// ```
    /// use dlbridge::{Export, ManagedTensor};
    /// use std::sync::Arc;
    ///
    /// let source = Arc::new(Export::new(vec![1.0f32, 2.0, 3.0], &[3]).into_versioned()?);
    /// // SAFETY: the `Arc` passed as the owner keeps the memory of `source` alive.
    /// let copy = unsafe { ManagedTensor::export_view(&source.view(), Arc::clone(&source), true) }?;
    /// assert_eq!(copy.view().as_slice::<f32>()?, &[1.0, 2.0, 3.0]);
    /// assert!(copy.view().is_read_only());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    ///
    /// # Safety
    ///
    /// `owner` must keep the memory `view` describes alive, readable, and writable unless the
    /// export is read-only, for as long as `owner` lives, wherever it is dropped. The new tensor
    /// lends that memory out as [`ManagedTensor::from_raw_versioned`]'s contract says: unless
    /// it is read-only, nothing else (the viewed tensor included) may read or write the memory
    /// while a `&mut [T]` from the new tensor lives, nor write it while a `&[T]` does. (The
    /// safe [`ManagedTensor::share_versioned`] enforces this itself.)
    pub unsafe fn export_view<O: Send + 'static>(
        view: &TensorView<'_>,
        owner: O,
        read_only: bool,
    ) -> Result<ManagedTensor> {
        // SAFETY: forwarded.
        unsafe { export_view(view, owner, false, read_only) }
    }
}

/// [`ManagedTensor::export_view`], versioned or `legacy`.
///
/// # Safety
///
/// As for [`ManagedTensor::export_view`].
#[inline(always)]
unsafe fn export_view<O: Send + 'static>(
    view: &TensorView<'_>,
    owner: O,
    legacy: bool,
    read_only: bool,
) -> Result<ManagedTensor> {
    let flags = Flags::NONE
        .with(Flags::READ_ONLY, read_only || view.is_read_only())
        .with(
            Flags::IS_SUBBYTE_TYPE_PADDED,
            view.flags().is_subbyte_type_padded(),
        );
    // A legacy tensor cannot say READ_ONLY; memory of unknown writability (a legacy source)
    // may still go out legacy, as it came in, and stays of unknown writability.
    if legacy && (read_only || view.writability() == Writability::ReadOnly) {
        return Err(Error::ReadOnlyLegacyExport);
    }
    if legacy {
        check_legacy_export(view.dtype(), flags)?;
    }
    let descriptor = Descriptor::of_view(view, flags, legacy);
    // The same descriptor with explicit strides: the view's validation (V1 to V8) holds for it,
    // with the strides no longer missing (V3).
    let validated = Validated {
        elements: view.num_elements(),
        strides_missing: false,
        offsets: view.element_offset_range(),
    };
    // SAFETY: the new tensor describes exactly the memory of the validated view, with its
    // shape, strides, data type and device (so V1 to V8 hold for it as for the view), which the
    // owner keeps alive by the contract; read-only stays read-only.
    unsafe {
        export_owner(
            owner,
            view.ndim(),
            descriptor,
            Some(validated),
            |_, shape, strides| {
                shape.copy_from_slice(view.shape());
                strides.copy_from_slice(view.strides());
            },
        )
    }
}
