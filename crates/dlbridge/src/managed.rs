//! The owning handle for a managed tensor from any producer: [`ManagedTensor`], and the raw
//! pointer of either layout it is made from and given back as, [`RawManagedTensor`].
//!
//! A managed tensor is validated when it enters (the `validate` module) and its deleter runs
//! exactly once, when it is dropped. What the handle offers on top is elsewhere: typed element
//! access in `elements`, export and re-export in `export`.

use std::fmt;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::device::Device;
use crate::error::{Error, Result};
use crate::ffi::{DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use crate::flags::{Flags, Writability};
use crate::layout;
use crate::validate::{
    Validated, legacy_flags, validate_descriptor, validate_legacy, validate_versioned,
};
use crate::version::Version;
use crate::view::TensorView;

/// A raw managed tensor pointer of either layout, as handed to or taken from C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawManagedTensor {
    /// A `DLManagedTensorVersioned*` (capsule name `dltensor_versioned`).
    Versioned(*mut DLManagedTensorVersioned),
    /// A legacy `DLManagedTensor*` (capsule name `dltensor`).
    Legacy(*mut DLManagedTensor),
}

impl RawManagedTensor {
    /// The versioned pointer, if this is one.
    pub fn versioned(self) -> Option<*mut DLManagedTensorVersioned> {
        match self {
            RawManagedTensor::Versioned(ptr) => Some(ptr),
            RawManagedTensor::Legacy(_) => None,
        }
    }

    /// The legacy pointer, if this is one.
    pub fn legacy(self) -> Option<*mut DLManagedTensor> {
        match self {
            RawManagedTensor::Legacy(ptr) => Some(ptr),
            RawManagedTensor::Versioned(_) => None,
        }
    }

    /// Whether the pointer is NULL.
    pub fn is_null(self) -> bool {
        match self {
            RawManagedTensor::Versioned(ptr) => ptr.is_null(),
            RawManagedTensor::Legacy(ptr) => ptr.is_null(),
        }
    }

    /// Calls the tensor's deleter if it has one.
    ///
    /// # Safety
    ///
    /// The pointer must be a live managed tensor owned by the caller, whose deleter (if
    /// any) has not been called; it must not be used afterwards. Only the fields up to the
    /// deleter are read, which every major version keeps in place.
    pub unsafe fn delete(self) {
        match self {
            RawManagedTensor::Versioned(ptr) => {
                // SAFETY: live and owned by the contract; `deleter` is in the stable prefix.
                if let Some(deleter) = unsafe { (*ptr).deleter } {
                    // SAFETY: the producer's deleter, called once with its own tensor.
                    unsafe { deleter(ptr) }
                }
            }
            RawManagedTensor::Legacy(ptr) => {
                // SAFETY: live and owned by the contract.
                if let Some(deleter) = unsafe { (*ptr).deleter } {
                    // SAFETY: the producer's deleter, called once with its own tensor.
                    unsafe { deleter(ptr) }
                }
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Owned {
    Versioned(NonNull<DLManagedTensorVersioned>),
    /// A legacy tensor, and whether it is known to be writable: this crate exported it, or
    /// its holder vouched for it ([`ManagedTensor::assume_legacy_writable`]). Other legacy
    /// tensors are read-only ([`crate::Writability::Unknown`]).
    Legacy(NonNull<DLManagedTensor>, bool),
}

/// An owned managed tensor from any producer, versioned or legacy, validated on entry.
///
/// Dropping it calls the producer's deleter exactly once (never when the deleter is NULL);
/// [`ManagedTensor::into_raw`] gives the pointer back instead. Construction from a raw pointer
/// validates everything that can be validated without reading the data, and on any failure
/// calls the deleter once and returns an [`Error`] naming the field and the value.
///
/// `ManagedTensor` is `Send` and `Sync`: DLPack lets a consumer call the deleter from any
/// thread, so a tensor may be dropped on a thread other than the one it arrived on, and
/// shared access only ever reads. Producers whose deleter needs a lock (Python's GIL) must
/// take it themselves, as the standard requires.
///
/// ```
/// use dlbridge::{Export, ManagedTensor};
/// let exported = Export::new(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).into_versioned()?;
/// let raw = exported.into_raw(); // hand this pointer to any DLPack consumer...
/// // ...or take it back, validated:
/// let tensor = unsafe { ManagedTensor::from_raw(raw) }?;
/// assert_eq!(tensor.view().shape(), &[2, 2]);
/// assert_eq!(tensor.view().as_slice::<f32>()?, &[1.0, 2.0, 3.0, 4.0]);
/// # Ok::<(), dlbridge::Error>(())
/// ```
pub struct ManagedTensor {
    owned: Owned,
    validated: Validated,
    /// Where the data lives: `DLTensor.device` unless corrected with `set_device`.
    device: Device,
    /// Compact row-major strides, made only when a legacy or pre-1.2 producer sent NULL
    /// strides with `ndim > 1`.
    implicit_strides: Option<Box<[i64]>>,
    /// The device stream the data is ready on, where known ([`ManagedTensor::ready_stream`]).
    ready_stream: Option<usize>,
    /// Whether this handle alone gives Rust code access to the memory, so that `&mut self`
    /// may hand out `&mut [T]`: false for a share of a tensor in an `Arc`
    /// ([`ManagedTensor::is_exclusive`]).
    exclusive: bool,
    /// The shares of this tensor alive as handles in Rust ([`ManagedTensor::live_shares`]).
    live_shares: AtomicUsize,
    /// For a share: the `live_shares` of the tensor it shares, which its owner keeps alive
    /// until this tensor's deleter runs; released (decremented, then forgotten) when this
    /// handle is dropped or given away ([`ManagedTensor::into_raw`]).
    counted_in: Option<NonNull<AtomicUsize>>,
    /// Run once when this handle stops being a Rust handle: dropped, or given away with
    /// [`ManagedTensor::into_raw`] ([`ManagedTensor::set_release_on_drop`]).
    release_on_drop: Option<ReleaseOnDrop>,
    /// Whether this tensor is a new layout of another (`export::relayout`: reshape, permute,
    /// insert_axis): an export block whose owner is the `ManagedTensor` it lays out anew,
    /// which a further relayout takes out of the block instead of nesting a block per call.
    relayout: bool,
}

// SAFETY: DLPack allows the deleter to run on any thread and the data to be used from any
// thread the consumer likes; the handle owns the tensor exclusively. `counted_in` points to an
// atomic counter (of a tensor in an `Arc`, itself `Send + Sync`), which any thread may change.
unsafe impl Send for ManagedTensor {}
// SAFETY: `&ManagedTensor` only reads the descriptor and the data (and `live_shares`, an
// atomic); writes need `&mut`.
unsafe impl Sync for ManagedTensor {}

impl ManagedTensor {
    /// Takes ownership of a versioned managed tensor and validates it.
    ///
    /// Ownership passes in all cases: on error the deleter has been called (once) and the
    /// pointer must not be used again. A `version.major` other than 1 is reported without
    /// reading any field after `deleter`. (To keep ownership when validation fails, as a
    /// capsule consumer must, use [`ManagedTensor::try_from_raw`].)
    ///
    /// # Safety
    ///
    /// `ptr` must be NULL or a live `DLManagedTensorVersioned` that the caller owns (its
    /// deleter not yet called) and does not use afterwards; its deleter, if any, must accept
    /// being called once from any thread. Its `shape` and `strides`, when not NULL, must point
    /// to `ndim` values, and the descriptor (the struct and those arrays) must stay unchanged
    /// for as long as the tensor lives: it is validated once and read again by every view.
    /// For a host-readable device the data must be readable (and writable unless flagged
    /// read-only) wherever the layout reaches, for as long as the tensor lives; on another
    /// device it must be that device's memory (device views hand it to the device's driver).
    /// While a reference the tensor hands out lives (a `&[T]` from a view, a `&mut [T]` from
    /// [`ManagedTensor::as_mut_slice`]), nothing else may write the elements it covers, nor,
    /// for a `&mut [T]`, read them: not foreign code, and not another handle of this crate
    /// either (the tensor that `ptr` was exported from, say a share made by
    /// [`ManagedTensor::share_versioned`] whose `Arc` still lives, or another import of the
    /// same memory). The tensor this returns is exclusive ([`ManagedTensor::is_exclusive`]):
    /// where other handles may reach the memory, call [`ManagedTensor::mark_shared`] on it
    /// before any typed access. These are Rust's aliasing rules, which no consumer can check
    /// for memory a producer shares.
    #[inline]
    pub unsafe fn from_raw_versioned(ptr: *mut DLManagedTensorVersioned) -> Result<Self> {
        // SAFETY: forwarded.
        unsafe { Self::from_raw(RawManagedTensor::Versioned(ptr)) }
    }

    /// Takes ownership of a legacy managed tensor and validates it. As
    /// [`ManagedTensor::from_raw_versioned`], but a legacy tensor has no version and no flags,
    /// and NULL strides mean compact row-major.
    ///
    /// # Safety
    ///
    /// As for [`ManagedTensor::from_raw_versioned`], for a `DLManagedTensor`.
    #[inline]
    pub unsafe fn from_raw_legacy(ptr: *mut DLManagedTensor) -> Result<Self> {
        // SAFETY: forwarded.
        unsafe { Self::from_raw(RawManagedTensor::Legacy(ptr)) }
    }

    /// Takes ownership of a managed tensor of either layout (see
    /// [`ManagedTensor::from_raw_versioned`] and [`ManagedTensor::from_raw_legacy`]); on error
    /// the deleter has been called once.
    ///
    /// # Safety
    ///
    /// As for the constructor of the pointer's layout.
    #[inline]
    pub unsafe fn from_raw(raw: RawManagedTensor) -> Result<Self> {
        // SAFETY: forwarded.
        unsafe { Self::try_from_raw(raw) }.map_err(|(error, raw)| {
            if !raw.is_null() {
                // SAFETY: rejected, so still owned by us, and not yet deleted.
                unsafe { raw.delete() };
            }
            error
        })
    }

    /// Validates a managed tensor of either layout and takes ownership only if it is accepted.
    /// On error the pointer is handed back with the error, still owned by the caller, its
    /// deleter not called: this is what a consumer of a DLPack capsule needs, whose
    /// destructor releases the tensor when the import fails.
    ///
    /// # Safety
    ///
    /// As for [`ManagedTensor::from_raw_versioned`]; on success the caller must not use the
    /// pointer again.
    #[inline]
    pub unsafe fn try_from_raw(
        raw: RawManagedTensor,
    ) -> std::result::Result<Self, (Error, RawManagedTensor)> {
        let owned = match raw {
            RawManagedTensor::Versioned(ptr) => NonNull::new(ptr).map(Owned::Versioned),
            RawManagedTensor::Legacy(ptr) => NonNull::new(ptr).map(|ptr| Owned::Legacy(ptr, false)),
        };
        let Some(owned) = owned else {
            let what = match raw {
                RawManagedTensor::Versioned(_) => "DLManagedTensorVersioned",
                RawManagedTensor::Legacy(_) => "DLManagedTensor",
            };
            return Err((Error::NullPointer { what }, raw));
        };
        let validation = match owned {
            // SAFETY: live by the contract, with shape and strides valid for `ndim` values.
            Owned::Versioned(ptr) => unsafe { validate_versioned(ptr) },
            // SAFETY: as above.
            Owned::Legacy(ptr, _) => unsafe { validate_legacy(ptr) },
        };
        match validation {
            // SAFETY: accepted: ownership is ours, and `validated` is its validation.
            Ok(validated) => Ok(unsafe { Self::wrap(owned, validated) }),
            Err(error) => Err((error, raw)),
        }
    }

    /// Takes ownership of a tensor without validating it again: for exports that copy the
    /// descriptor of a tensor this crate validated.
    ///
    /// # Safety
    ///
    /// `raw` must be non-NULL, owned by the caller, and `validated` the validation of a
    /// descriptor identical to its own (version, data type, device, shape, strides, flags
    /// aside from READ_ONLY).
    #[inline]
    pub(crate) unsafe fn from_prevalidated(raw: RawManagedTensor, validated: Validated) -> Self {
        let owned = match raw {
            RawManagedTensor::Versioned(ptr) => {
                // SAFETY: non-NULL by the contract.
                Owned::Versioned(unsafe { NonNull::new_unchecked(ptr) })
            }
            RawManagedTensor::Legacy(ptr) => {
                // SAFETY: non-NULL by the contract.
                Owned::Legacy(unsafe { NonNull::new_unchecked(ptr) }, false)
            }
        };
        // SAFETY: owned, and `validated` holds for it (the contract).
        unsafe { Self::wrap(owned, validated) }
    }

    /// Wraps a validated tensor, making compact strides when the producer sent none.
    ///
    /// # Safety
    ///
    /// `owned` must be owned by the caller and `validated` the successful validation of it.
    #[inline(always)]
    unsafe fn wrap(owned: Owned, validated: Validated) -> Self {
        // SAFETY: V9: live, and of a layout this crate knows.
        let dl_tensor = unsafe { dl_tensor_of(owned) };
        let implicit_strides = if validated.strides_missing && dl_tensor.ndim > 1 {
            // SAFETY: V1 and V2: strides missing means `ndim > 0`, so `shape` is non-NULL and
            // valid for `ndim` values.
            let shape =
                unsafe { std::slice::from_raw_parts(dl_tensor.shape, dl_tensor.ndim as usize) };
            let mut strides = vec![0; shape.len()].into_boxed_slice();
            layout::fill_row_major_strides(shape, &mut strides);
            Some(strides)
        } else {
            // Strides given, or one dimension, whose view uses the unit stride.
            None
        };
        // Built in one expression, so that the compiler writes it where it is returned.
        ManagedTensor {
            owned,
            validated,
            device: dl_tensor.device,
            implicit_strides,
            ready_stream: None,
            exclusive: true,
            live_shares: AtomicUsize::new(0),
            counted_in: None,
            release_on_drop: None,
            relayout: false,
        }
    }

    /// A validated view of the descriptor, with typed read access to host-readable data.
    #[inline]
    pub fn view(&self) -> TensorView<'_> {
        let (tensor, version, flags) = self.parts();
        // SAFETY: validated on construction (for `self.device`, which `set_device` validates
        // again) and owned by `self`, which outlives the view; implicit strides are supplied
        // when the producer left them out (V3).
        unsafe {
            TensorView::from_validated(
                tensor,
                version,
                flags,
                self.device,
                self.validated,
                self.implicit_strides.as_deref(),
                matches!(self.owned, Owned::Legacy(_, true)),
            )
        }
    }

    /// The flags as the producer sent them, [`TensorView::flags`] without making a view: a
    /// legacy tensor has those its data type implies.
    ///
    /// ```
    /// use dlbridge::{Export, Flags};
    /// let tensor = Export::new(vec![1u8, 2], &[2]).read_only(true).into_versioned()?;
    /// assert_eq!(tensor.flags(), Flags::READ_ONLY);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[inline]
    pub fn flags(&self) -> Flags {
        self.parts().2
    }

    /// Whether the producer allows writes, [`TensorView::writability`] without making a view.
    ///
    /// ```
    /// use dlbridge::{Export, Writability};
    /// let tensor = Export::new(vec![1u8, 2], &[2]).read_only(true).into_versioned()?;
    /// assert_eq!(tensor.writability(), Writability::ReadOnly);
    /// assert_eq!(tensor.writability(), tensor.view().writability());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[inline]
    pub fn writability(&self) -> Writability {
        // What `view()` hands the view, by the same rule.
        let (_, version, flags) = self.parts();
        Writability::of(
            flags,
            version.is_some(),
            matches!(self.owned, Owned::Legacy(_, true)),
        )
    }

    #[inline]
    fn parts(&self) -> (&DLTensor, Option<Version>, Flags) {
        match self.owned {
            // SAFETY: V9: owned and live until drop, of major version 1.
            Owned::Versioned(ptr) => unsafe {
                let managed = ptr.as_ref();
                (
                    &managed.dl_tensor,
                    Some(managed.version),
                    Flags::from_bits(managed.flags),
                )
            },
            Owned::Legacy(ptr, _) => {
                // SAFETY: owned and live until drop.
                let tensor = unsafe { &ptr.as_ref().dl_tensor };
                // Validated, so the type has a legacy layout (`validate_legacy`).
                let flags = legacy_flags(tensor.dtype).unwrap_or(Flags::NONE);
                (tensor, None, flags)
            }
        }
    }

    /// Corrects the device the data is taken to live on, when the producer knows better than
    /// its descriptor: PyTorch reports pinned memory as CUDAHost in `__dlpack_device__` but
    /// writes CPU into the tensor. The layout is validated again for the new device.
    ///
    /// Only host memory may be relabelled, as another host memory (CPU, CUDAHost, ROCMHost,
    /// CUDAManaged: [`Device::is_host_readable`]), or a device as itself: memory the CPU can
    /// read stays memory the CPU can read. Any other change could make typed access read a
    /// device address ([`Error::DeviceChange`]); a caller who knows where the memory is uses
    /// [`ManagedTensor::set_device_unchecked`].
    ///
    /// ```
    /// use dlbridge::{DataType, Device, DeviceType, Error, ManagedTensor};
    /// let mut tensor = ManagedTensor::zeros(DataType::FLOAT32, &[2])?;
    /// let pinned = Device::new(DeviceType::CUDA_HOST, 0);
    /// tensor.set_device(pinned)?; // host memory as host memory
    /// assert_eq!(tensor.view().device(), pinned);
    /// let gpu = Device::new(DeviceType::CUDA, 0);
    /// assert!(matches!(tensor.set_device(gpu), Err(Error::DeviceChange { .. })));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn set_device(&mut self, device: Device) -> Result<()> {
        if device == self.device {
            return Ok(());
        }
        if !(self.device.is_host_readable() && device.is_host_readable()) {
            return Err(Error::DeviceChange {
                from: self.device,
                to: device,
            });
        }
        // SAFETY: both devices are host memory, so the contract of the entry point (memory of
        // a host-readable device is readable, and writable unless read-only, by the CPU) holds
        // for the new one as for the old.
        unsafe { self.set_device_unchecked(device) }
    }

    /// Sets the device the data is taken to live on, whatever it was, and validates the layout
    /// again for it (an address range that wraps is refused for host memory).
    ///
    /// # Safety
    ///
    /// The memory must really be on `device`: when `device` is host-readable
    /// ([`Device::is_host_readable`]), the CPU must be able to read it (and write it, unless
    /// the tensor is read-only) wherever the layout reaches, for as long as the tensor lives,
    /// since typed access dereferences it; on another device it must be that device's memory,
    /// as device views (the `cudarc` feature) hand it to that device's driver.
    pub unsafe fn set_device_unchecked(&mut self, device: Device) -> Result<()> {
        let (tensor, version, flags) = self.parts();
        // SAFETY: V2 and V3: validated on construction, so shape and strides, when not NULL,
        // are valid for `ndim` values.
        unsafe { validate_descriptor(tensor, version, flags, device) }?;
        self.device = device;
        Ok(())
    }

    /// Whether this handle alone gives Rust code access to the tensor's memory, so that `&mut self`
    /// may hand out mutable access (`as_mut_slice`, `elements_mut`, `as_array_mut`). True for every
    /// tensor but a share ([`ManagedTensor::share_versioned`]: the source, and whoever else holds
    /// its `Arc`, can still read the memory) and a tensor marked shared
    /// ([`ManagedTensor::mark_shared`]; `dlbridge-pyo3`'s imports from Python objects): such a
    /// tensor hands out shared access only ([`Error::SharedMemory`]), however long the other
    /// handles live. Its DLPack flags are not changed: a foreign consumer of the share may write,
    /// as C code sharing memory may. Whether the producer allows writes at all is
    /// [`TensorView::writability`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dlbridge::{Error, Export};
    /// let original = Arc::new(Export::new(vec![0i32; 4], &[4]).into_versioned()?);
    /// let mut shared = Arc::clone(&original).share_versioned()?;
    /// assert!(!shared.is_exclusive()); // `original` can still read the memory
    /// assert_eq!(shared.as_mut_slice::<i32>(), Err(Error::SharedMemory));
    /// drop(shared);
    /// // The shares gone, the tensor can be taken back from its `Arc` and written.
    /// let mut only = Arc::try_unwrap(original).expect("no other handle");
    /// assert!(only.is_exclusive());
    /// only.as_mut_slice::<i32>()?[0] = 1;
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[inline]
    pub fn is_exclusive(&self) -> bool {
        self.exclusive
    }

    /// Declares that other handles may read (or write) this tensor's memory, so that this one
    /// hands out shared access only from now on ([`ManagedTensor::is_exclusive`] becomes
    /// false; mutable access is [`Error::SharedMemory`]). Safe: it only takes access away.
    /// `dlbridge-pyo3` marks every tensor imported from a Python object this way (unless it is
    /// a copy), since Python objects share memory freely.
    ///
    /// ```
    /// use dlbridge::{DataType, Error, ManagedTensor};
    /// let mut tensor = ManagedTensor::zeros(DataType::UINT8, &[2])?;
    /// tensor.mark_shared();
    /// assert_eq!(tensor.as_mut_slice::<u8>(), Err(Error::SharedMemory));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn mark_shared(&mut self) {
        self.exclusive = false;
    }

    /// Declares that this handle is, after all, the only way to the tensor's memory, so that
    /// `&mut self` may hand out mutable access again ([`ManagedTensor::is_exclusive`]).
    ///
    /// # Safety
    ///
    /// While a reference that this tensor hands out lives, nothing else may write the memory
    /// it covers, nor read it while the reference is a `&mut [T]`: no other share of the same
    /// `Arc`, no other import of the same Python object, no foreign code.
    pub unsafe fn assume_exclusive(&mut self) {
        self.exclusive = true;
    }

    /// How many shares of this tensor ([`ManagedTensor::share_versioned`],
    /// [`ManagedTensor::share_legacy`]) are alive as handles in Rust right now: made, and
    /// neither dropped nor given away with [`ManagedTensor::into_raw`] (a share handed to a
    /// consumer as a raw pointer, a capsule say, no longer counts; what that consumer makes of
    /// it is a new tensor of its own). Rust code may read the memory through such a handle, so
    /// a producer that lends the memory out for writing (`dlbridge-pyo3` handing a tensor
    /// class's memory to Python) asks that none be alive first. A snapshot: another thread
    /// holding a clone of the `Arc` may make a share just after.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dlbridge::Export;
    /// let original = Arc::new(Export::new(vec![0u8; 4], &[4]).into_versioned()?);
    /// let shared = Arc::clone(&original).share_versioned()?;
    /// assert_eq!(original.live_shares(), 1);
    /// let raw = shared.into_raw(); // handed to a consumer: no longer a Rust handle
    /// assert_eq!(original.live_shares(), 0);
    /// // SAFETY: the consumer's side: a live tensor it owns, released once.
    /// unsafe { raw.delete() };
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[inline]
    pub fn live_shares(&self) -> usize {
        self.live_shares.load(Ordering::Acquire)
    }

    /// Whether this handle is a share made in Rust ([`ManagedTensor::share_versioned`],
    /// [`ManagedTensor::share_legacy`]), counted in its source's
    /// [`ManagedTensor::live_shares`]: the source, and whoever else holds its `Arc`, may read the
    /// memory while this handle lives. (An import of a Python object's memory, or of a capsule,
    /// is not one, though it is not exclusive either.)
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dlbridge::Export;
    /// let original = Arc::new(Export::new(vec![0u8; 4], &[4]).into_versioned()?);
    /// assert!(!original.is_share());
    /// assert!(Arc::clone(&original).share_versioned()?.is_share());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[inline]
    pub fn is_share(&self) -> bool {
        self.counted_in.is_some()
    }

    /// Counts this tensor, a new share, in `source`'s [`ManagedTensor::live_shares`] until
    /// it is dropped or given away.
    ///
    /// # Safety
    ///
    /// `source` must stay alive (and in place) until this tensor's deleter runs: the share's
    /// owner holds it.
    pub(crate) unsafe fn count_as_share_of(&mut self, source: &ManagedTensor) {
        debug_assert!(self.counted_in.is_none(), "a share is counted once");
        source.live_shares.fetch_add(1, Ordering::AcqRel);
        self.counted_in = Some(NonNull::from(&source.live_shares));
    }

    /// What makes this handle more than its descriptor, taken off it for a new handle of the
    /// same memory that keeps this one alive (`export::relayout`): whether it is exclusive,
    /// its count as a share in its source's [`ManagedTensor::live_shares`], its release and
    /// its ready stream. This handle is left marked shared, uncounted and without a release:
    /// it is to become the new tensor's owner, through which nothing is handed out.
    ///
    /// A role dropped without being taken up runs its release, and leaves the count counted
    /// (the source then counts a share too many, never one too few).
    pub(crate) fn take_handle_role(&mut self) -> HandleRole {
        debug_assert_eq!(
            self.live_shares(),
            0,
            "a tensor held by value has no shares alive (they hold its Arc)"
        );
        let role = HandleRole {
            exclusive: self.exclusive,
            counted_in: self.counted_in.take(),
            release_on_drop: self.release_on_drop.take(),
            ready_stream: self.ready_stream,
        };
        self.exclusive = false;
        role
    }

    /// Takes up the role another handle gave up ([`ManagedTensor::take_handle_role`]): its
    /// exclusivity, its count as a share, its release and its ready stream replace this
    /// handle's.
    ///
    /// # Safety
    ///
    /// `role` must come from a tensor that this one's owner keeps alive until this tensor's
    /// deleter runs, and this tensor must reach no memory but what that tensor reached: it is
    /// then the only handle in Rust to that memory (exclusive) if that tensor was, and the
    /// source counted for it stays alive as long as the count is held.
    pub(crate) unsafe fn take_up_handle_role(&mut self, role: HandleRole) {
        // The fresh handle's own values are those of a new export: exclusive, uncounted.
        debug_assert!(self.counted_in.is_none() && self.release_on_drop.is_none());
        self.exclusive = role.exclusive;
        self.counted_in = role.counted_in;
        self.release_on_drop = role.release_on_drop;
        self.ready_stream = role.ready_stream;
    }

    /// Whether this tensor is a relayout: an export block whose owner is a `ManagedTensor`
    /// ([`ManagedTensor::mark_relayout`]).
    #[inline]
    pub(crate) fn is_relayout(&self) -> bool {
        self.relayout
    }

    /// Records that this tensor is an export block (`export::block`, of its own layout,
    /// versioned or legacy) whose owner is a `ManagedTensor`, so that a further relayout may
    /// take the owner out of the block ([`ManagedTensor::is_relayout`]).
    ///
    /// # Safety
    ///
    /// This tensor must have been made by `export::block::export_owner` with a
    /// `ManagedTensor` as its owner.
    #[inline]
    pub(crate) unsafe fn mark_relayout(&mut self) {
        self.relayout = true;
    }

    /// Takes this handle out of its source's [`ManagedTensor::live_shares`] (nothing for a
    /// tensor that is not a counted share); called once the handle stops being one.
    #[inline]
    fn release_share_count(&mut self) {
        if let Some(counter) = self.counted_in.take() {
            // SAFETY: the source tensor is kept alive by this share's owner until the deleter
            // runs, which has not happened yet (`count_as_share_of`'s contract).
            unsafe { counter.as_ref() }.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Sets what runs once when this handle stops being a Rust handle: when it is dropped
    /// (before the producer's deleter), or when it is given away with
    /// [`ManagedTensor::into_raw`], [`ManagedTensor::into_raw_versioned`] or
    /// [`ManagedTensor::into_raw_legacy`] (before the pointer leaves). A share of the tensor
    /// in an `Arc` ([`ManagedTensor::share_versioned`]) keeps the tensor, and so its release,
    /// until the share is gone. No allocation.
    ///
    /// One release at a time: where one is set already, it stays, and `release` is handed
    /// back (`Err`), not run. Safe: a release only adds to what happens when the handle goes.
    /// `dlbridge-pyo3` sets one on every import of a Python object's memory: the read claim
    /// that keeps writable kernel arguments (`TensorArgMut`) off the memory while the import
    /// lives.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use dlbridge::{DataType, ManagedTensor, ReleaseOnDrop};
    ///
    /// static RELEASED: AtomicUsize = AtomicUsize::new(0);
    /// fn release(token: usize) {
    ///     RELEASED.fetch_add(token, Ordering::Relaxed);
    /// }
    /// let mut tensor = ManagedTensor::zeros(DataType::FLOAT32, &[2])?;
    /// assert!(tensor.set_release_on_drop(ReleaseOnDrop::new(release, 5)).is_ok());
    /// // One at a time: the second is handed back (and runs when that is dropped).
    /// assert!(tensor.set_release_on_drop(ReleaseOnDrop::new(release, 1)).is_err());
    /// assert_eq!(RELEASED.load(Ordering::Relaxed), 1);
    /// drop(tensor);
    /// assert_eq!(RELEASED.load(Ordering::Relaxed), 6);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn set_release_on_drop(
        &mut self,
        release: ReleaseOnDrop,
    ) -> std::result::Result<(), ReleaseOnDrop> {
        if self.release_on_drop.is_some() {
            return Err(release);
        }
        self.release_on_drop = Some(release);
        Ok(())
    }

    /// Whether a release is set ([`ManagedTensor::set_release_on_drop`]): for
    /// `dlbridge-pyo3`'s imports, whether the import still holds its claim.
    ///
    /// ```
    /// use dlbridge::{DataType, ManagedTensor, ReleaseOnDrop};
    /// let mut tensor = ManagedTensor::zeros(DataType::UINT8, &[1])?;
    /// assert!(!tensor.has_release_on_drop());
    /// assert!(tensor.set_release_on_drop(ReleaseOnDrop::new(|_| {}, 0)).is_ok());
    /// assert!(tensor.has_release_on_drop());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[inline]
    pub fn has_release_on_drop(&self) -> bool {
        self.release_on_drop.is_some()
    }

    /// Takes the release set with [`ManagedTensor::set_release_on_drop`] off this handle,
    /// which will not run it: it runs when the returned value is dropped (or
    /// [`ReleaseOnDrop::run`]), or never if that is forgotten.
    ///
    /// # Safety
    ///
    /// A release may be what keeps the references this handle hands out sound: whoever set it
    /// says what it guards, and the caller takes that over for as long as the tensor (or a
    /// share of it) lives. For `dlbridge-pyo3`'s imports of a Python object's memory, it is
    /// the read claim in the aliasing registry of typed arguments: once it is released, no
    /// writable kernel argument (`TensorArgMut`), on any thread, may write the memory while a
    /// reference this tensor hands out (a `&[T]` from a view) lives; the caller makes sure of
    /// that some other way (a claim of its own around each read, say), or reads nothing.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use dlbridge::{DataType, ManagedTensor, ReleaseOnDrop};
    ///
    /// static RELEASED: AtomicUsize = AtomicUsize::new(0);
    /// let mut tensor = ManagedTensor::zeros(DataType::FLOAT32, &[2])?;
    /// let release = ReleaseOnDrop::new(|_| { RELEASED.fetch_add(1, Ordering::Relaxed); }, 0);
    /// assert!(tensor.set_release_on_drop(release).is_ok());
    /// // SAFETY: this release guards nothing (it counts).
    /// let taken = unsafe { tensor.take_release_on_drop() }.expect("set above");
    /// drop(tensor); // runs nothing
    /// assert_eq!(RELEASED.load(Ordering::Relaxed), 0);
    /// taken.run();
    /// assert_eq!(RELEASED.load(Ordering::Relaxed), 1);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[inline]
    pub unsafe fn take_release_on_drop(&mut self) -> Option<ReleaseOnDrop> {
        self.release_on_drop.take()
    }

    /// The view for a mutable typed access: refused unless this handle is exclusive
    /// ([`Error::SharedMemory`]), the producer allows writes, and no two indices reach the
    /// same element. The caller holds `&mut self`, so nothing else borrows the tensor.
    pub(crate) fn view_for_writing(&mut self) -> Result<TensorView<'_>> {
        self.check_exclusive()?;
        let view = self.view();
        view.check_writable()?;
        Ok(view)
    }

    /// The part of [`ManagedTensor::view_for_writing`] that only the handle knows: refused
    /// unless this handle is exclusive ([`Error::SharedMemory`]). For accesses whose view
    /// checks writability itself (`NdarrayViewExt::as_array_mut_unchecked`).
    pub(crate) fn check_exclusive(&self) -> Result<()> {
        if self.exclusive {
            Ok(())
        } else {
            Err(Error::SharedMemory)
        }
    }

    /// The device stream (a `cudaStream_t` / `hipStream_t` as an integer; CUDA's legacy
    /// default stream is `0` or `1`, its per-thread default `2`) on which the tensor's data is
    /// ready, where the importer or exporter knows it: the stream an import asked the producer
    /// for (`__dlpack__(stream=...)`), or the stream of an exported cudarc buffer. Work on
    /// another stream must wait for this one first (an event recorded here, waited on there:
    /// `dlbridge-pyo3`'s `__dlpack__` does so for its consumers). `None` for host memory and
    /// where nobody knows (a capsule taken as it is, an import with `stream=-1`, which leaves
    /// the ordering to the caller).
    ///
    /// ```
    /// use dlbridge::{DataType, ManagedTensor};
    /// let mut tensor = ManagedTensor::zeros(DataType::FLOAT32, &[4])?;
    /// assert_eq!(tensor.ready_stream(), None);
    /// // SAFETY: 1 is CUDA's legacy default stream, which lives as long as the process.
    /// unsafe { tensor.set_ready_stream(Some(1)) };
    /// assert_eq!(tensor.ready_stream(), Some(1));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[inline]
    pub fn ready_stream(&self) -> Option<usize> {
        self.ready_stream
    }

    /// Records the device stream the data is ready on ([`ManagedTensor::ready_stream`]).
    /// Only bookkeeping: nothing is enqueued or synchronised here.
    ///
    /// # Safety
    ///
    /// `stream` must be `None`, or a stream of the tensor's device (or one of the handles `0`,
    /// `1`, `2`) that stays alive as long as this tensor or a share of it
    /// ([`ManagedTensor::share_versioned`]) can be exported: a re-export records an event on
    /// it. A framework's default and pooled streams live as long as the process; a stream the
    /// caller created must be kept alive by the caller.
    #[inline]
    pub unsafe fn set_ready_stream(&mut self, stream: Option<usize>) {
        self.ready_stream = stream;
    }

    /// Declares that the producer of this legacy tensor allows its consumers to write the
    /// memory, which a legacy `DLManagedTensor` cannot say itself (it has no flags): the tensor
    /// becomes [`Writability::Writable`](crate::Writability::Writable) instead of
    /// [`Writability::Unknown`](crate::Writability::Unknown). Versioned tensors say it with
    /// their flags and are not changed: one flagged READ_ONLY stays read-only.
    ///
    /// ```
    /// use dlbridge::{Export, ManagedTensor};
    /// let raw = Export::new(vec![0u8; 4], &[4]).into_legacy()?.into_raw();
    /// let mut tensor = unsafe { ManagedTensor::from_raw(raw) }?;
    /// // A legacy tensor from outside: whether its memory may be written is unknown.
    /// assert!(matches!(tensor.as_mut_slice::<u8>(), Err(dlbridge::Error::WritabilityUnknown)));
    /// // SAFETY: the memory is a Vec this program exported, which nothing else uses.
    /// unsafe { tensor.assume_legacy_writable() };
    /// tensor.as_mut_slice::<u8>()?[0] = 7;
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    ///
    /// # Safety
    ///
    /// The producer must allow writes to the memory the tensor describes (its documentation
    /// says so, or the caller owns that memory), for as long as the tensor lives.
    pub unsafe fn assume_legacy_writable(&mut self) {
        self.allow_legacy_writes();
    }

    /// Marks a legacy tensor as known to be writable (one this crate exported, whose memory
    /// the exporter vouched for); nothing for a versioned one.
    pub(crate) fn allow_legacy_writes(&mut self) {
        if let Owned::Legacy(_, writes_allowed) = &mut self.owned {
            *writes_allowed = true;
        }
    }

    /// Whether this is a versioned (`DLManagedTensorVersioned`) tensor.
    pub fn is_versioned(&self) -> bool {
        matches!(self.owned, Owned::Versioned(_))
    }

    /// The raw pointer, still owned by `self`.
    pub fn as_raw(&self) -> RawManagedTensor {
        raw_of(self.owned)
    }

    /// Gives up ownership: returns the pointer without calling the deleter. The caller (or the
    /// consumer it hands the pointer to) must make sure the deleter is called once.
    #[must_use = "the tensor leaks unless the pointer is passed on or deleted"]
    pub fn into_raw(mut self) -> RawManagedTensor {
        // Given away: no longer a Rust handle of a share, nor one that reads the memory.
        self.release_share_count();
        drop(self.release_on_drop.take());
        let this = ManuallyDrop::new(self);
        // The implicit strides are ours, not the producer's: free them.
        // SAFETY: read once from a value that is never used or dropped again.
        drop(unsafe { std::ptr::read(&this.implicit_strides) });
        raw_of(this.owned)
    }

    /// Gives up ownership as a `DLManagedTensorVersioned*`, the layout DLPack 1.x consumers
    /// take: the tensor's own pointer when it is versioned; a legacy tensor is first shared as
    /// a versioned one ([`ManagedTensor::share_versioned`]: one small allocation, no copy of
    /// the data, read-only when its writability is unknown). The consumer must call the
    /// deleter once.
    ///
    /// ```
    /// use dlbridge::{Export, ManagedTensor};
    /// let tensor = Export::new(vec![1.0f32, 2.0], &[2]).into_versioned()?;
    /// let raw = tensor.into_raw_versioned()?; // a DLManagedTensorVersioned* for C
    /// // ...a C consumer takes it; here it comes back and is released once on drop:
    /// // SAFETY: `raw` is a live tensor handed over once.
    /// let back = unsafe { ManagedTensor::from_raw_versioned(raw) }?;
    /// assert_eq!(back.view().as_slice::<f32>()?, &[1.0, 2.0]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[must_use = "the tensor leaks unless the pointer is passed on or deleted"]
    pub fn into_raw_versioned(mut self) -> Result<*mut DLManagedTensorVersioned> {
        // Before the pointer leaves, also when a share of this tensor leaves instead.
        drop(self.release_on_drop.take());
        let tensor = if self.is_versioned() {
            self
        } else {
            std::sync::Arc::new(self).share_versioned()?
        };
        Ok(tensor
            .into_raw()
            .versioned()
            .expect("a versioned tensor gives a versioned pointer"))
    }

    /// Gives up ownership as a legacy `DLManagedTensor*`, for consumers that predate DLPack
    /// 1.0: the tensor's own pointer when it is legacy; a versioned one is first shared as a
    /// legacy one ([`ManagedTensor::share_legacy`]: one small allocation, no copy), which is
    /// refused for a tensor flagged READ_ONLY ([`Error::ReadOnlyLegacyExport`]: a legacy
    /// tensor cannot say so) and for packed sub-byte data a legacy consumer would misread.
    /// On error the tensor is released.
    ///
    /// ```
    /// use dlbridge::{Export, ManagedTensor};
    /// let raw = Export::new(vec![1u8, 2], &[2]).into_versioned()?.into_raw_legacy()?;
    /// // SAFETY: `raw` is a live tensor handed over once.
    /// let back = unsafe { ManagedTensor::from_raw_legacy(raw) }?;
    /// assert_eq!(back.view().shape(), &[2]);
    /// // Read-only memory cannot go out legacy:
    /// let read_only = Export::new(vec![0u8; 2], &[2]).read_only(true).into_versioned()?;
    /// assert!(matches!(read_only.into_raw_legacy(), Err(dlbridge::Error::ReadOnlyLegacyExport)));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    #[must_use = "the tensor leaks unless the pointer is passed on or deleted"]
    pub fn into_raw_legacy(mut self) -> Result<*mut DLManagedTensor> {
        // Before the pointer leaves (or, refused, the tensor is released), also when a share
        // of this tensor leaves instead.
        drop(self.release_on_drop.take());
        let tensor = if self.is_versioned() {
            std::sync::Arc::new(self).share_legacy()?
        } else {
            self
        };
        Ok(tensor
            .into_raw()
            .legacy()
            .expect("a legacy tensor gives a legacy pointer"))
    }
}

/// The descriptor of a live tensor whose version is supported.
///
/// # Safety
///
/// `owned` must be live and validated, and stay so for `'a`.
unsafe fn dl_tensor_of<'a>(owned: Owned) -> &'a DLTensor {
    match owned {
        // SAFETY: V9: live and of major version 1, by the contract.
        Owned::Versioned(ptr) => unsafe { &(*ptr.as_ptr()).dl_tensor },
        // SAFETY: live, by the contract.
        Owned::Legacy(ptr, _) => unsafe { &(*ptr.as_ptr()).dl_tensor },
    }
}

fn raw_of(owned: Owned) -> RawManagedTensor {
    match owned {
        Owned::Versioned(ptr) => RawManagedTensor::Versioned(ptr.as_ptr()),
        Owned::Legacy(ptr, _) => RawManagedTensor::Legacy(ptr.as_ptr()),
    }
}

/// What makes a [`ManagedTensor`] handle more than its descriptor, moved from a tensor to a new
/// handle of its memory that keeps it alive ([`ManagedTensor::take_handle_role`]).
pub(crate) struct HandleRole {
    exclusive: bool,
    counted_in: Option<NonNull<AtomicUsize>>,
    release_on_drop: Option<ReleaseOnDrop>,
    ready_stream: Option<usize>,
}

/// What runs once when a [`ManagedTensor`] stops being a Rust handle
/// ([`ManagedTensor::set_release_on_drop`]): a function called with a word, `release(token)`.
/// No allocation: the word says what to release (an index, an address, a handle of some
/// table), and the function knows where. It runs exactly once: when this value is dropped,
/// or [`ReleaseOnDrop::run`]; it cannot be copied, so it never runs twice. Calling a safe
/// function with a word is safe, so anyone may make one; a library that gives one a meaning
/// (an unsafe one, say a claim that keeps other code off the memory) keeps its function
/// private, so that only its own values call it.
///
/// The function should not panic: it runs in the tensor's `Drop`, before the producer's
/// deleter, which a panic there would skip (the memory would leak), and may run on any thread
/// the tensor is dropped on.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use dlbridge::ReleaseOnDrop;
///
/// static LAST: AtomicUsize = AtomicUsize::new(0);
/// let release = ReleaseOnDrop::new(|token| LAST.store(token, Ordering::Relaxed), 42);
/// assert_eq!(LAST.load(Ordering::Relaxed), 0);
/// drop(release);
/// assert_eq!(LAST.load(Ordering::Relaxed), 42);
/// ```
pub struct ReleaseOnDrop {
    release: fn(usize),
    token: usize,
}

impl ReleaseOnDrop {
    /// A release that calls `release(token)` once, when it is dropped.
    #[inline]
    pub const fn new(release: fn(usize), token: usize) -> Self {
        ReleaseOnDrop { release, token }
    }

    /// Runs the release now (what dropping it does).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use dlbridge::ReleaseOnDrop;
    ///
    /// static RUNS: AtomicUsize = AtomicUsize::new(0);
    /// ReleaseOnDrop::new(|_| { RUNS.fetch_add(1, Ordering::Relaxed); }, 0).run();
    /// assert_eq!(RUNS.load(Ordering::Relaxed), 1);
    /// ```
    #[inline]
    pub fn run(self) {
        drop(self);
    }
}

impl Drop for ReleaseOnDrop {
    #[inline]
    fn drop(&mut self) {
        (self.release)(self.token);
    }
}

impl fmt::Debug for ReleaseOnDrop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The token may be an address: not shown.
        f.debug_struct("ReleaseOnDrop").finish_non_exhaustive()
    }
}

impl Drop for ManagedTensor {
    fn drop(&mut self) {
        // Before the deleter, which may release the source the count lives in.
        self.release_share_count();
        // No reference this handle handed out is alive any more (they borrow it).
        drop(self.release_on_drop.take());
        // SAFETY: owned, validated, deleter not yet called; `self` is gone after this.
        unsafe { raw_of(self.owned).delete() }
    }
}

impl fmt::Debug for ManagedTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ManagedTensor").field(&self.view()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use super::*;
    use crate::{DataType, Export};

    /// One record per test (tests run side by side): how often its release ran, and whether
    /// its tensor's deleter ran (the release must run before it).
    struct Record {
        runs: AtomicUsize,
        deleted: AtomicBool,
    }

    static RECORDS: [Record; 8] = [const {
        Record {
            runs: AtomicUsize::new(0),
            deleted: AtomicBool::new(false),
        }
    }; 8];

    /// The release of test `token`: counts, and checks that the deleter has not run yet.
    fn release(token: usize) {
        assert!(
            !RECORDS[token].deleted.load(Ordering::SeqCst),
            "the release runs before the deleter"
        );
        RECORDS[token].runs.fetch_add(1, Ordering::SeqCst);
    }

    /// A release that only counts (one taken off its tensor runs after the deleter).
    fn count(token: usize) {
        RECORDS[token].runs.fetch_add(1, Ordering::SeqCst);
    }

    fn runs(token: usize) -> usize {
        RECORDS[token].runs.load(Ordering::SeqCst)
    }

    fn deleted(token: usize) -> bool {
        RECORDS[token].deleted.load(Ordering::SeqCst)
    }

    /// The owner of a test tensor's memory: its drop is the deleter's work.
    struct Owner {
        token: usize,
        _bytes: Box<[u8; 4]>,
    }

    impl Drop for Owner {
        fn drop(&mut self) {
            RECORDS[self.token].deleted.store(true, Ordering::SeqCst);
        }
    }

    /// A 4-byte tensor (`legacy` or versioned) owned by an [`Owner`], with test `token`'s
    /// release set.
    fn tensor(token: usize, legacy: bool) -> ManagedTensor {
        let mut bytes = Box::new([1u8, 2, 3, 4]);
        let data = bytes.as_mut_ptr().cast();
        let owner = Owner {
            token,
            _bytes: bytes,
        };
        // SAFETY: four writable bytes owned by `owner`, which the export keeps alive; nothing
        // else uses them.
        let export =
            unsafe { Export::from_raw_parts(owner, data, DataType::UINT8, Device::CPU, &[4]) };
        let mut tensor = if legacy {
            export.into_legacy()
        } else {
            export.into_versioned()
        }
        .expect("a valid export");
        assert!(
            tensor
                .set_release_on_drop(ReleaseOnDrop::new(release, token))
                .is_ok()
        );
        tensor
    }

    #[test]
    fn managed_release_runs_once_on_drop_before_the_deleter() {
        let tensor = tensor(0, false);
        assert!(tensor.has_release_on_drop());
        assert_eq!(runs(0), 0);
        drop(tensor);
        assert_eq!(runs(0), 1);
        assert!(deleted(0));
    }

    #[test]
    fn managed_release_runs_when_given_away_and_not_again() {
        let tensor = tensor(1, false);
        let raw = tensor.into_raw();
        assert_eq!(runs(1), 1, "ran before the pointer left");
        assert!(!deleted(1));
        // SAFETY: the tensor just given away, taken back once.
        let back = unsafe { ManagedTensor::from_raw(raw) }.expect("valid");
        assert!(!back.has_release_on_drop(), "a new handle has no release");
        drop(back);
        assert!(deleted(1));
        assert_eq!(runs(1), 1);
    }

    #[test]
    fn managed_release_runs_once_when_given_away_in_the_other_layout() {
        // A legacy tensor given away as versioned: the share that leaves holds the tensor,
        // whose release ran as it left.
        let raw = tensor(2, true).into_raw_versioned().expect("shared");
        assert_eq!(runs(2), 1);
        // SAFETY: the consumer's side: released once.
        unsafe { RawManagedTensor::Versioned(raw).delete() };
        assert!(deleted(2));
        assert_eq!(runs(2), 1);
        // A versioned one as legacy, and one refused (read-only cannot go out legacy).
        let raw = tensor(3, false).into_raw_legacy().expect("shared");
        assert_eq!(runs(3), 1);
        // SAFETY: as above.
        unsafe { RawManagedTensor::Legacy(raw).delete() };
        assert_eq!(runs(3), 1);
        let mut read_only = Export::new(vec![0u8; 2], &[2])
            .read_only(true)
            .into_versioned()
            .expect("valid");
        assert!(
            read_only
                .set_release_on_drop(ReleaseOnDrop::new(release, 4))
                .is_ok()
        );
        assert!(read_only.into_raw_legacy().is_err());
        assert_eq!(runs(4), 1);
    }

    #[test]
    fn managed_release_waits_for_the_last_share() {
        let source = Arc::new(tensor(5, false));
        let share = Arc::clone(&source).share_versioned().expect("shared");
        assert!(!share.has_release_on_drop());
        drop(source);
        assert_eq!(runs(5), 0, "the share keeps the tensor");
        // A share given away keeps it too, until its consumer releases it.
        let raw = share.into_raw();
        assert_eq!(runs(5), 0);
        // SAFETY: the consumer's side: released once.
        unsafe { raw.delete() };
        assert_eq!(runs(5), 1);
        assert!(deleted(5));
    }

    #[test]
    fn managed_release_is_set_once_and_taken_without_running() {
        let mut tensor = tensor(6, false);
        // SAFETY: the test's release guards nothing; replaced by one that only counts.
        drop(unsafe { tensor.take_release_on_drop() });
        assert_eq!(runs(6), 1);
        assert!(
            tensor
                .set_release_on_drop(ReleaseOnDrop::new(count, 6))
                .is_ok()
        );
        let second = tensor
            .set_release_on_drop(ReleaseOnDrop::new(release, 7))
            .expect_err("one at a time");
        assert_eq!(runs(7), 0, "handed back, not run");
        second.run();
        assert_eq!(runs(7), 1);
        // SAFETY: this release guards nothing (it counts).
        let taken = unsafe { tensor.take_release_on_drop() }.expect("set");
        assert!(!tensor.has_release_on_drop());
        drop(tensor);
        assert_eq!(runs(6), 1, "taken off the handle");
        drop(taken);
        assert_eq!(runs(6), 2);
    }
}
