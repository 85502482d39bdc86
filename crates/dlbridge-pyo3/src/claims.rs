//! The aliasing registry: the memory that every live typed argument ([`crate::TensorArg`],
//! [`crate::TensorArgMut`] and their device forms) reaches, and the memory that dlbridge is
//! copying for a consumer (`copy=True`, a copy to the CPU) on either side of the protocol, so
//! that memory written through one argument is never reached through another argument, nor
//! read by a copy, at the same time, on any thread (that would alias a `&mut`, or race with
//! its writes).
//!
//! Below both sides of the protocol in the crate's layers: typed arguments claim what they
//! reach for as long as they live ([`Claim::new`]); [`crate::from_dlpack`] and
//! [`crate::produce::export_capsule`] claim the source of each copy they make for the copy's duration
//! ([`Claim::for_copy`]), a read claim that is refused while a `TensorArgMut` writes the
//! memory; [`compact_copy`] is such a copy for anyone's code (the `dlbridge` package's
//! `Tensor.copy()` and pickling use it). The tensor of a tensor class is read by Rust code
//! under a read claim too ([`crate::ClassTensor::read`], [`Claim::for_read`]), held for as long
//! as a reference to its elements can live. A tensor imported into Rust from a Python object
//! (`from_dlpack`, `from_capsule`, an exchange table's export), unless it is a copy, holds a
//! read claim for its whole life ([`claim_import`], [`Claim::for_import`]): the claim becomes
//! the tensor's [`ReleaseOnDrop`], released when it is dropped or given away.
//!
//! # Rationale
//!
//! A `TensorArgMut` lends the kernel a `&mut` view of the caller's memory. Two arguments of
//! one call may be views of the same tensor, and another thread may be running a kernel on
//! the same memory with the GIL released: each argument claims the bytes its layout reaches
//! for as long as it lives, and a claim is refused (`ValueError`) when it overlaps a live
//! claim and one of the two is written. Reading through several arguments at once is always
//! allowed. The copies dlbridge makes for a consumer read the memory as an argument does, so
//! each holds a read claim while it copies: a copy of memory that a `TensorArgMut` is writing
//! would race with the kernel's writes (and hold bytes of two passes), and is refused instead.
//!
//! - **Exact for strided layouts.** Claims whose byte ranges do not intersect (the common
//!   case: different tensors) are told apart by the ranges alone. A dense claim (a layout
//!   that reaches as many elements as its range holds: compact in any order) covers its whole
//!   range and is kept as that block of bytes; a strided one keeps its layout. Claims whose
//!   ranges intersect go to an exact test of the two layouts ([`dlbridge::overlap`]): two
//!   views that interleave without sharing an element, such as `x[:, ::2]` and `x[:, 1::2]`,
//!   are accepted.
//! - **No fixed capacity.** Claims live in slots allocated in chunks that double in size and
//!   never move or shrink: thousands of threads may hold arguments at once. A slot is
//!   allocated only when every slot is busy, so calls in a steady state allocate nothing (the
//!   borrowed path of typed arguments makes no heap allocation).
//! - **Cheap.** A registration scans the slots in use (with one thread, as many as there are
//!   arguments), comparing ranges only where one of two claims is written; it takes no lock
//!   where the GIL serializes registrations, and the free-threaded build takes one mutex. A
//!   release is one atomic store, from any thread, with or without the GIL (an import's
//!   adds a lock-free push, below). A registration that reads a slot at the moment it is
//!   released may still see it, which can only refuse an overlap that was real an instant
//!   before.
//! - **Imports apart.** Imports' claims (reads that live as long as the imported tensor, so
//!   that a program may hold thousands) live in slots of their own, outside the scanned ones,
//!   indexed by start address (a B-tree, kept by registrations only): a read registration never
//!   looks at them (reads never conflict), a written one finds the imports whose ranges may
//!   meet its own by one range search (the starts within the longest import's length below its
//!   start), and an import takes a free slot from a list. The index is brought up to date by
//!   the written registrations, the only ones that search it: an import's slot waits on a list
//!   until one runs, so an import released before any written registration (import, compute,
//!   return) never touches the B-tree. A released import's slot is marked free by the
//!   releasing thread and pushed on a lock-free list, from which the next written registration
//!   (or an import registration that finds no free slot) takes it off the index or the waiting
//!   list: so a registration costs the same beside 1,000 live imports as beside none (a
//!   written one, a logarithm more per import indexed). The exact test, the messages'
//!   positions of the arguments, and other modules' calls through the table stay off this
//!   path: the typed-argument benchmarks in BENCHMARKS.md are within noise of the fixed
//!   256-slot table this replaced.
//! - **One registry per process.** Every extension module that links dlbridge-pyo3 (any
//!   version from this one on) uses the same registry, so two libraries built on dlbridge
//!   cannot write memory the other is reading. The first module to need it publishes its
//!   registry as a capsule in the module `_dlbridge_pyo3_shared` of `sys.modules`; every
//!   other module finds it there and calls its functions (the module whose registry it is
//!   calls its own code directly, inlined).
//!
//! # Compatibility rule of the shared table
//!
//! The capsule `_dlbridge_pyo3_shared.aliasing_registry`, named
//! `dlbridge_pyo3.aliasing_registry`, points to a [`RegistryApi`] that lives as long as the
//! process. Its `version` only grows. A new version may append members at the end of the
//! table, and never removes, reorders or changes the meaning of a member, nor of the structs a
//! member takes: a change to those is a new member. A module that needs the members of
//! version N refuses (with an error naming both versions) a table of a lower version. This
//! build implements version 2 (which appended [`RegistryApi::claim_as`]: a claim that says what
//! claims, and a conflict that says what the other claim is) and needs version 1: with a
//! table of version 1 it calls `claim`, and a refusal that cannot tell an import (or a copy)
//! from a reading argument names both possibilities. Members past a table's version are never
//! read (a table of version 1 is shorter than [`RegistryApi`]).
//!
//! # Limitations
//!
//! - Over-approximations (claims counted as overlapping although they share no byte), each
//!   only for claims whose byte ranges intersect: the exact test gives up past a work budget
//!   ([`dlbridge::overlap::DEFAULT_MAX_WORK`] search nodes; real layouts need a handful);
//!   strided layouts of more than eight dimensions keep no layout; a broadcast layout
//!   (stride 0) that happens to reach as many elements as its range holds is taken as dense;
//!   sub-byte element types (packed float4) are compared by the range of their elements
//!   taken one byte each.
//! - "Tensor argument N of this call" counts the live argument claims of the thread: a kernel
//!   that calls back into Python, which calls another kernel on the same thread, counts the
//!   outer call's arguments too. (Imports, copies and class reads are not counted, except
//!   through a table of version 1, which does not tell them apart.)
//! - A written argument that meets both an argument (or a copy, a class read) and an import is
//!   refused naming the first: the scanned slots are searched before the imports.
//! - Sub-interpreters each have their own `sys.modules`, and so their own registry.

use std::cell::UnsafeCell;
use std::collections::BTreeMap;
use std::ffi::{CStr, c_int};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI64, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering};

use dlbridge::overlap::{ByteLayout, DEFAULT_MAX_WORK, Overlap, memory_overlap};
use dlbridge::{ManagedTensor, ReleaseOnDrop, TensorView};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyModule};

use crate::errors::to_py_err;
use crate::trampoline;

/// The module of `sys.modules` that holds the state shared by every copy of dlbridge-pyo3.
const SHARED_MODULE: &str = "_dlbridge_pyo3_shared";
/// The attribute of [`SHARED_MODULE`] holding the registry's capsule.
const REGISTRY_ATTRIBUTE: &str = "aliasing_registry";
/// The name of the registry's capsule.
const REGISTRY_CAPSULE: &CStr = c"dlbridge_pyo3.aliasing_registry";
/// The table version this build implements.
const REGISTRY_VERSION: u64 = 2;
/// The table version this build needs (it uses the members of version 2 where the table has
/// them, and says less in its refusals where it has not).
const REQUIRED_VERSION: u64 = 1;

/// [`RegistryApi::claim_as`]'s claimant, and [`ClaimConflictOf::other_claimant`]'s value: a
/// typed argument of a call (what every claim of version 1's [`RegistryApi::claim`] is taken
/// for).
pub const CLAIMANT_ARGUMENT: u8 = 0;
/// A tensor imported into Rust (`from_dlpack`, `from_capsule`, an exchange table's export),
/// which reads the memory for as long as it lives (never written).
pub const CLAIMANT_IMPORT: u8 = 1;
/// A copy that dlbridge makes of the memory (`copy=True`, a copy to the CPU), read while it
/// is made.
pub const CLAIMANT_COPY: u8 = 2;
/// Rust code reading a tensor class's memory (`ClassTensor::read`), while its guard lives.
pub const CLAIMANT_CLASS_READ: u8 = 3;
/// [`ClaimConflictOf::other_claimant`] when the registry cannot say (a table of version 1,
/// whose conflicts carry no claimant).
pub const CLAIMANT_UNKNOWN: u8 = u8::MAX;

/// What a claim asks for: the memory a tensor argument reaches (C layout; see the module's
/// compatibility rule).
#[repr(C)]
pub struct ClaimRequest {
    /// Address of the first element.
    pub first: usize,
    /// Lowest address reached.
    pub start: usize,
    /// One past the highest address reached (`start < end`).
    pub end: usize,
    /// Bytes per element; 0 for a sub-byte type (only the range is compared).
    pub item_size: u64,
    /// Number of dimensions.
    pub ndim: u64,
    /// `ndim` extents.
    pub shape: *const i64,
    /// `ndim` strides, in elements.
    pub strides: *const i64,
    /// 1 when the argument is written (`TensorArgMut`), 0 when it is only read.
    pub written: u8,
    /// 1 when the tensor reaches as many elements as its range holds (a compact layout in
    /// some order), so that it covers its whole range and the range alone decides overlaps.
    pub dense: u8,
}

/// Why a claim was refused (C layout).
#[repr(C)]
#[derive(Default)]
pub struct ClaimConflict {
    /// 1 when the other claim belongs to this thread and to this call (an earlier argument),
    /// 2 when it belongs to this thread and to a call in progress that this one runs inside
    /// (made from a producer's `__dlpack__` during that call's argument extraction, or from
    /// Python code that call's kernel called), 0 for a call in progress on another thread.
    /// The value 2 came after version 1 of the table without a new version: a reader that
    /// tests the field against 0 reads it as it did.
    pub same_thread: u8,
    /// 1 when the other claim is written.
    pub other_written: u8,
    /// The other claim's position among its call's live claims (1 = first).
    pub other_ordinal: u32,
    /// The refused claim's position among this call's live claims.
    pub ordinal: u32,
}

/// Why a claim was refused, with what the other claim is (C layout; filled by
/// [`RegistryApi::claim_as`], version 2).
#[repr(C)]
#[derive(Default)]
pub struct ClaimConflictOf {
    /// As [`RegistryApi::claim`] fills it; the ordinals count typed arguments only, and
    /// `other_ordinal` is 0 when the other claim is not an argument.
    pub conflict: ClaimConflict,
    /// What the other claim is: [`CLAIMANT_ARGUMENT`], [`CLAIMANT_IMPORT`], [`CLAIMANT_COPY`]
    /// or [`CLAIMANT_CLASS_READ`] (later versions may add values: a reader takes one it does
    /// not know for an argument's).
    pub other_claimant: u8,
}

/// The shared registry's function table (see the module's compatibility rule).
#[repr(C)]
pub struct RegistryApi {
    /// The table's version: members of every version up to it are present.
    pub version: u64,
    /// Registers a claim: 0 and `*out_handle` set on success, 1 and `*out_conflict` filled
    /// when it is refused. Called with the GIL held (or, free-threaded, attached).
    pub claim: unsafe extern "C" fn(
        request: *const ClaimRequest,
        out_handle: *mut usize,
        out_conflict: *mut ClaimConflict,
    ) -> c_int,
    /// Releases a claim by its handle, from any thread, with or without the GIL.
    pub release: unsafe extern "C" fn(handle: usize),
    /// Version 2: registers a claim as [`RegistryApi::claim`] does, saying what claims
    /// (`claimant`: [`CLAIMANT_ARGUMENT`], [`CLAIMANT_IMPORT`], [`CLAIMANT_COPY`],
    /// [`CLAIMANT_CLASS_READ`]; a value the registry does not know is taken for an argument),
    /// and told what the refusing claim is (`*out_conflict`). Whether a claim is refused does
    /// not depend on the claimants: only the messages, and which claims count as a call's
    /// arguments in the ordinals, do.
    pub claim_as: unsafe extern "C" fn(
        request: *const ClaimRequest,
        claimant: u8,
        out_handle: *mut usize,
        out_conflict: *mut ClaimConflictOf,
    ) -> c_int,
}

/// This build's registry, published if it is the first in the process.
static OWN_REGISTRY: RegistryApi = RegistryApi {
    version: REGISTRY_VERSION,
    claim: claim_in_own_registry,
    release: release_in_own_registry,
    claim_as: claim_as_in_own_registry,
};

/// The process's registry, found (or published) on first use: a table of version 1 or later,
/// which may be shorter than [`RegistryApi`] (its members past its version are absent).
static REGISTRY: AtomicPtr<RegistryApi> = AtomicPtr::new(std::ptr::null_mut());

/// The process's registry table: a pointer to a process-lifetime table of version 1 or later,
/// whose members are read one at a time, those of version 2 only where the table has them (a
/// table of version 1 is shorter than [`RegistryApi`], so no reference to the whole struct is
/// made).
#[derive(Clone, Copy)]
struct Registry(NonNull<RegistryApi>);

impl Registry {
    /// Whether it is this build's own table (called directly, inlined).
    #[inline(always)]
    fn is_own(self) -> bool {
        std::ptr::eq(self.0.as_ptr(), &OWN_REGISTRY)
    }

    fn version(self) -> u64 {
        // SAFETY: a live table (see the type); `version` is the first member of every version.
        unsafe { (*self.0.as_ptr()).version }
    }

    fn claim(
        self,
    ) -> unsafe extern "C" fn(*const ClaimRequest, *mut usize, *mut ClaimConflict) -> c_int {
        // SAFETY: a live table of version 1 or later, which has this member.
        unsafe { (*self.0.as_ptr()).claim }
    }

    fn release(self) -> unsafe extern "C" fn(usize) {
        // SAFETY: as above.
        unsafe { (*self.0.as_ptr()).release }
    }

    /// Version 2's [`RegistryApi::claim_as`], where the table has it.
    fn claim_as(
        self,
    ) -> Option<
        unsafe extern "C" fn(*const ClaimRequest, u8, *mut usize, *mut ClaimConflictOf) -> c_int,
    > {
        // SAFETY: a table of version 2 or later has the member (the compatibility rule).
        (self.version() >= 2).then(|| unsafe { (*self.0.as_ptr()).claim_as })
    }
}

/// The registry every copy of dlbridge-pyo3 in the process uses.
#[inline]
fn registry(py: Python<'_>) -> PyResult<Registry> {
    match NonNull::new(REGISTRY.load(Ordering::Acquire)) {
        // Only process-lifetime tables are stored (see `find_registry`).
        Some(found) => Ok(Registry(found)),
        None => find_registry(py),
    }
}

/// Finds the process's registry in `sys.modules`, publishing this build's when there is none.
#[cold]
fn find_registry(py: Python<'_>) -> PyResult<Registry> {
    let modules = py
        .import(intern!(py, "sys"))?
        .getattr(intern!(py, "modules"))?;
    // `dict.setdefault` is atomic, with or without the GIL: the first module wins.
    let fresh = PyModule::new(py, SHARED_MODULE)?;
    fresh.setattr(
        intern!(py, "__doc__"),
        "State shared by every extension module built with dlbridge-pyo3 (the aliasing \
         registry of typed tensor arguments).",
    )?;
    let shared = modules.call_method1(intern!(py, "setdefault"), (SHARED_MODULE, fresh))?;
    let own = NonNull::from(&OWN_REGISTRY).cast();
    // SAFETY: the table is a static of this build, alive for the process (the capsule has no
    // destructor).
    let capsule = unsafe { PyCapsule::new_with_pointer(py, own, REGISTRY_CAPSULE) }?;
    let capsule = shared
        .getattr(intern!(py, "__dict__"))?
        .call_method1(intern!(py, "setdefault"), (REGISTRY_ATTRIBUTE, capsule))?;
    // SAFETY: a live object; `PyCapsule_GetPointer` checks that it is a capsule of the name.
    let pointer = unsafe { ffi::PyCapsule_GetPointer(capsule.as_ptr(), REGISTRY_CAPSULE.as_ptr()) };
    // A capsule of this name holds a process-lifetime table of some version (the
    // compatibility rule).
    let Some(table) = NonNull::new(pointer.cast::<RegistryApi>()).map(Registry) else {
        return Err(PyErr::fetch(py));
    };
    if table.version() < REQUIRED_VERSION {
        return Err(PyRuntimeError::new_err(format!(
            "the dlbridge-pyo3 aliasing registry of this process has version {}, older than \
             the version {REQUIRED_VERSION} this module needs: an extension module built with \
             an older dlbridge-pyo3 was imported first",
            table.version()
        )));
    }
    REGISTRY.store(table.0.as_ptr(), Ordering::Release);
    Ok(table)
}

/// A claim on the memory a view reaches (an argument's, for as long as it lives; a copy's,
/// while it copies), released on drop.
pub(crate) struct Claim {
    /// 0 for a tensor without elements, which claims nothing; the address of the claim's
    /// slot (aligned, so its low bit is clear) in this build's registry; or, with the low bit
    /// set, `handle << 1 | 1` for a handle of another build's registry (`REGISTRY`).
    handle: usize,
}

/// Who claims memory: it chooses the refusal's message, never whether to refuse (the table
/// hears of neither).
#[derive(Clone, Copy)]
enum Claimant<'a> {
    /// A typed argument of a call.
    Argument,
    /// A copy dlbridge makes of the memory; what asked for it (`"copy=True"`, ...).
    Copy(&'a str),
    /// Rust code reading the memory through a handle that is no argument (a tensor class's
    /// tensor: `ClassTensor::read`); what reads it.
    Read(&'a str),
    /// A tensor imported into Rust, for as long as it lives; what imported it
    /// (`"from_dlpack"`, ...).
    Import(&'a str),
}

impl Claimant<'_> {
    /// The claimant's code in the table ([`RegistryApi::claim_as`]).
    #[inline(always)]
    fn code(self) -> u8 {
        match self {
            Claimant::Argument => CLAIMANT_ARGUMENT,
            Claimant::Copy(_) => CLAIMANT_COPY,
            Claimant::Read(_) => CLAIMANT_CLASS_READ,
            Claimant::Import(_) => CLAIMANT_IMPORT,
        }
    }
}

impl Claim {
    /// A typed argument's claim: registers the bytes `view` reaches, read or `written`;
    /// refuses (`ValueError`) an overlap with a written claim, or for a written one with any
    /// claim. A tensor without elements claims nothing.
    #[inline(always)]
    pub(crate) fn new(py: Python<'_>, view: &TensorView<'_>, written: bool) -> PyResult<Self> {
        Self::register(py, view, written, Claimant::Argument)
    }

    /// A read claim on the bytes `view` reaches, to hold while dlbridge copies them for
    /// `reason` (`"copy=True"`, `"dl_device=(1, 0)"`: what the consumer asked for, which the
    /// refusal names): refused (`ValueError`) while a writable argument (`TensorArgMut`) of a
    /// call in progress, on any thread, writes any of those bytes. Other readers (arguments,
    /// copies) go on beside it.
    pub(crate) fn for_copy(py: Python<'_>, view: &TensorView<'_>, reason: &str) -> PyResult<Self> {
        Self::register(py, view, false, Claimant::Copy(reason))
    }

    /// A read claim on the bytes `view` reaches, for as long as Rust code holds references
    /// to them through a handle that is no typed argument (a tensor class's tensor:
    /// [`crate::ClassTensor::read`]), `what` naming the reader in the refusal: refused
    /// (`ValueError`) while a writable argument (`TensorArgMut`) of a call in progress, on any
    /// thread, writes any of those bytes. Other readers go on beside it.
    pub(crate) fn for_read(py: Python<'_>, view: &TensorView<'_>, what: &str) -> PyResult<Self> {
        Self::register(py, view, false, Claimant::Read(what))
    }

    /// An import's read claim on the bytes `view` reaches, held for as long as the imported
    /// tensor lives ([`claim_import`]), `what` naming the import in the refusal
    /// (`"from_dlpack"`): refused (`ValueError`) while a writable argument (`TensorArgMut`)
    /// of a call in progress, on any thread, writes any of those bytes; while it lives, no
    /// `TensorArgMut` may be made over them. Other readers go on beside it.
    #[inline]
    pub(crate) fn for_import(py: Python<'_>, view: &TensorView<'_>, what: &str) -> PyResult<Self> {
        Self::register(py, view, false, Claimant::Import(what))
    }

    /// The claim as a tensor's release ([`ManagedTensor::set_release_on_drop`]): released when
    /// that runs, from any thread, once. `None` for a claim of nothing (no elements).
    pub(crate) fn into_release_on_drop(self) -> Option<ReleaseOnDrop> {
        let handle = std::mem::ManuallyDrop::new(self).handle;
        // The handle moves into the release, which alone releases it, once (it cannot be
        // copied, and `release_claim` is this module's: nothing else calls it).
        (handle != 0).then(|| ReleaseOnDrop::new(release_claim, handle))
    }

    /// Registers the bytes `view` reaches for `claimant`, read or `written`.
    #[inline(always)]
    fn register(
        py: Python<'_>,
        view: &TensorView<'_>,
        written: bool,
        claimant: Claimant<'_>,
    ) -> PyResult<Self> {
        if view.num_elements() == 0 {
            return Ok(Claim { handle: 0 });
        }
        let size = view.dtype().size_in_bytes();
        // Validation keeps every byte the layout reaches within the address space, so these
        // offsets fit an `isize`.
        let unit = size.unwrap_or(1) as isize;
        let (low, high) = view.element_offset_range();
        let first = view.data_ptr() as usize;
        let wanted = Wanted {
            first,
            start: first.wrapping_add_signed(low as isize * unit),
            end: first.wrapping_add_signed((high as isize + 1) * unit),
            item_size: size.unwrap_or(0) as u64,
            ndim: view.ndim(),
            shape: view.shape().as_ptr(),
            strides: view.strides().as_ptr(),
            written,
            // As many elements as the range holds: every element of the range is reached,
            // unless the layout reaches some twice (a broadcast), when treating the whole
            // range as reached can only over-approximate.
            dense: (high - low) as u64 + 1 == view.num_elements(),
            claimant: claimant.code(),
        };
        let registry = registry(py)?;
        let claimed = if registry.is_own() {
            // This build's registry is the process's (the common case): called directly and
            // inlined.
            // SAFETY: `wanted`'s shape and strides are the view's, `ndim` values; the GIL is
            // held (`py`), which serializes registrations (the registry takes its lock where
            // there is none).
            unsafe { claim(wanted) }
        } else {
            claim_in(registry, wanted)
        };
        match claimed {
            Ok(handle) => Ok(Claim { handle }),
            Err(conflict) => Err(match claimant {
                Claimant::Argument => refusal(&conflict, written),
                Claimant::Copy(reason) => {
                    read_claim_refusal(&conflict.conflict, reason, &COPY_REFUSED)
                }
                Claimant::Read(what) => read_claim_refusal(&conflict.conflict, what, &READ_REFUSED),
                Claimant::Import(what) => {
                    read_claim_refusal(&conflict.conflict, what, &IMPORT_REFUSED)
                }
            }),
        }
    }
}

/// A compact (C-contiguous) host copy of the memory `view` describes, made as dlbridge makes
/// its own copies for `copy=True`: under a read claim in the aliasing registry of typed
/// arguments, so that it never reads memory that a writable argument
/// ([`TensorArgMut`](crate::TensorArgMut)) of a call in progress, on any thread, may be
/// writing. For a copy of memory that Python code can reach (a tensor class's own tensor, an
/// import) in a method of one's own, such as a `copy()`; `what` names the request in the
/// refusal (`"copy=True"`, `"Tensor.copy()"`).
///
/// # Errors
///
/// `ValueError` while a `TensorArgMut` reaches any of the bytes (naming `what` and the
/// argument), and the core's refusals of [`TensorView::to_compact_copy`] (memory the host
/// cannot read: `BufferError`).
///
/// ```
/// use dlbridge_pyo3::compact_copy;
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     let transposed = Export::new(vec![1u8, 3, 2, 4], &[2, 2])
///         .strides(&[1, 2])
///         .into_versioned()
///         .map_err(to_py_err)?;
///     let copy = compact_copy(py, &transposed.view(), "copy()")?;
///     assert_eq!(copy.view().as_slice::<u8>().map_err(to_py_err)?, &[1, 2, 3, 4]);
///     assert!(copy.view().flags().is_copied());
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub fn compact_copy(py: Python<'_>, view: &TensorView<'_>, what: &str) -> PyResult<ManagedTensor> {
    let _reading = Claim::for_copy(py, view, what)?;
    view.to_compact_copy().map_err(to_py_err)
}

/// Releases an import's lifetime read claim (`claim_import`) as the tensor is handed to an
/// owner on Python's side (a NumPy array's base, `return_like`'s producer or memoryview owner,
/// a `ClassTensor`): nothing in Rust reaches its elements through it from there on, or only
/// under a claim of its own. Nothing for a tensor without one.
///
/// # Safety
///
/// From this call on, no reference to the tensor's elements may be made through it (nor
/// through a share of it) except under a claim in this registry: the new owner only describes
/// the memory to Python, or reads it under a claim per read (`ClassTensor::read`).
#[inline]
pub(crate) unsafe fn release_import_claim(tensor: &mut ManagedTensor) {
    // SAFETY: forwarded: the caller takes over what the claim guarded.
    drop(unsafe { tensor.take_release_on_drop() });
}

/// Makes `tensor`, just imported from a Python object (`what`: `"from_dlpack"`, ...), hold a
/// read claim on the memory it reaches for as long as it lives: released when it is dropped,
/// or given away ([`ManagedTensor::into_raw`]: into a capsule, say); a share of it in an
/// `Arc` keeps it. Nothing for a copy nobody else reaches (an exclusive tensor: a copy made
/// here, or by the producer, IS_COPIED): only imports marked shared, whose memory Python code
/// and kernels reach, claim; nothing either for a tensor that holds its claim already (a
/// release is set: a capsule's tensor, claimed as it was taken). Refused (`ValueError`) while
/// a `TensorArgMut` writes the memory.
///
/// So a `TensorArgMut` is never made over memory that a live import can read through a
/// `&[T]`, nor an import made of memory an argument writes through its `&mut [T]`.
#[inline]
pub(crate) fn claim_import(py: Python<'_>, tensor: &mut ManagedTensor, what: &str) -> PyResult<()> {
    if tensor.is_exclusive() || tensor.has_release_on_drop() {
        return Ok(());
    }
    let claim = Claim::for_import(py, &tensor.view(), what)?;
    if let Some(release) = claim.into_release_on_drop() {
        // None is set (checked above), so it is taken: the `Err` arm, which would release the
        // claim handed back, never runs.
        drop(tensor.set_release_on_drop(release));
    }
    Ok(())
}

/// The release of a claim held by a [`ReleaseOnDrop`] ([`Claim::into_release_on_drop`]): the
/// claim's handle, released as the claim's drop does. Called only by the release that
/// `into_release_on_drop` made with that handle, once (this function is private to this
/// module, and a `ReleaseOnDrop` runs once): never with another word.
fn release_claim(handle: usize) {
    drop(Claim { handle });
}

/// [`Claim::new`] through another build's registry: version 2's `claim_as` where the table has
/// it, else version 1's `claim`, whose conflicts cannot say what the other claim is
/// ([`CLAIMANT_UNKNOWN`]).
#[cold]
fn claim_in(registry: Registry, wanted: Wanted) -> Result<usize, ClaimConflictOf> {
    let request = wanted.request();
    let mut handle = 0usize;
    let mut conflict = ClaimConflictOf::default();
    // SAFETY: the table's contract: a request whose shape and strides hold `ndim` values for
    // the call, slots for the results; registrations are serialized by the GIL held by the
    // caller, or by the registry's own lock where there is no GIL.
    let status = unsafe {
        match registry.claim_as() {
            Some(claim_as) => claim_as(&request, wanted.claimant, &mut handle, &mut conflict),
            None => {
                conflict.other_claimant = CLAIMANT_UNKNOWN;
                (registry.claim())(&request, &mut handle, &mut conflict.conflict)
            }
        }
    };
    if status == 0 {
        // Tagged: released through the table (see `Claim::handle`).
        Ok(handle << 1 | 1)
    } else {
        Err(conflict)
    }
}

impl Drop for Claim {
    #[inline(always)]
    fn drop(&mut self) {
        if self.handle & 1 == 0 {
            if self.handle != 0 {
                // SAFETY: a slot address this build's registry handed out, released once.
                unsafe { release(self.handle) };
            }
        } else {
            release_in_table(self.handle >> 1);
        }
    }
}

/// Releases a handle of another build's registry.
#[cold]
fn release_in_table(handle: usize) {
    // A claim was made through it, so the registry was found (and is never unset).
    let Some(registry) = NonNull::new(REGISTRY.load(Ordering::Acquire)).map(Registry) else {
        return;
    };
    // SAFETY: the table is a process-lifetime table (see `find_registry`); the handle is one
    // it handed out, released once.
    unsafe { (registry.release())(handle) };
}

/// The error for a refused claim.
fn refusal(conflict: &ClaimConflictOf, written: bool) -> PyErr {
    let claimant = conflict.other_claimant;
    let conflict = &conflict.conflict;
    let how = |written: bool| if written { "written" } else { "read" };
    let reader = matches!(
        claimant,
        CLAIMANT_IMPORT | CLAIMANT_COPY | CLAIMANT_CLASS_READ | CLAIMANT_UNKNOWN
    );
    if written && conflict.other_written == 0 && reader {
        // A written argument meets a reader that is (or, for a table of version 1, may be)
        // no argument. (A claimant this build does not know is taken for an argument.)
        return reader_refusal(conflict, claimant);
    }
    if conflict.same_thread == 2 {
        PyValueError::new_err(format!(
            "tensor argument {} of this call ({}) overlaps the memory of tensor argument {} \
             ({}) of a call in progress on this thread that this call runs inside (called from \
             a producer's __dlpack__ during that call's argument extraction, or from Python \
             code its kernel called): memory written through a TensorArgMut is reached through \
             no other argument until that call returns",
            conflict.ordinal,
            how(written),
            conflict.other_ordinal,
            how(conflict.other_written != 0),
        ))
    } else if conflict.same_thread != 0 {
        PyValueError::new_err(format!(
            "tensor argument {} of this call ({}) overlaps the memory of tensor argument {} \
             ({}), and a TensorArgMut may not share memory with another argument: pass \
             separate tensors, or a copy",
            conflict.ordinal,
            how(written),
            conflict.other_ordinal,
            how(conflict.other_written != 0),
        ))
    } else if conflict.other_written != 0 {
        PyValueError::new_err(format!(
            "this tensor's memory is being written by a call in progress on another thread \
             (as a TensorArgMut): it cannot be {} here until that call returns",
            how(written)
        ))
    } else {
        PyValueError::new_err(
            "this tensor's memory is being read by a call in progress on another thread: it \
             cannot be written here (TensorArgMut) until that call returns",
        )
    }
}

/// The error for a writable argument's claim refused by a read claim that is not an
/// argument's (`claimant`): an import, a copy, a class's read, or ([`CLAIMANT_UNKNOWN`], from a
/// table of version 1) an argument or any of these.
#[cold]
fn reader_refusal(conflict: &ClaimConflict, claimant: u8) -> PyErr {
    let thread = if conflict.same_thread == 0 {
        "another thread"
    } else {
        "this thread"
    };
    let ordinal = conflict.ordinal;
    PyValueError::new_err(match claimant {
        CLAIMANT_IMPORT => format!(
            "tensor argument {ordinal} of this call (written) overlaps memory that is read by a \
             tensor imported into Rust that is still alive (imported on {thread}: \
             from_dlpack, from_capsule or an exchange table's export, which Rust code holds), \
             and a TensorArgMut may not write memory that Rust code can read through another \
             handle: drop the import first, or pass a copy"
        ),
        CLAIMANT_COPY => format!(
            "tensor argument {ordinal} of this call (written) overlaps memory that dlbridge is \
             copying on {thread} (copy=True, a copy to the CPU, a tensor's copy()): it cannot \
             be written here (TensorArgMut) until the copy is made"
        ),
        CLAIMANT_CLASS_READ => format!(
            "tensor argument {ordinal} of this call (written) overlaps memory that Rust code is \
             reading through a tensor class on {thread} (ClassTensor::read): it cannot be \
             written here (TensorArgMut) until that read ends"
        ),
        _ => {
            let call = match conflict.same_thread {
                1 => "this call",
                2 => "a call in progress on this thread that this call runs inside",
                _ => "a call in progress on another thread",
            };
            format!(
                "tensor argument {ordinal} of this call (written) overlaps memory that another \
                 claim reads, which the process's aliasing registry (published by an extension \
                 module built with an older dlbridge-pyo3, table version 1) does not tell \
                 apart: either tensor argument {} (read) of {call}, or a tensor imported into \
                 Rust that is still alive (from_dlpack, from_capsule or an exchange table's \
                 export, on this or another thread; the argument's number then counts it), or \
                 a copy dlbridge is making. A TensorArgMut may not share its memory with any of \
                 them: pass separate tensors, or a copy, or drop the import first",
                conflict.other_ordinal
            )
        }
    })
}

/// What a refused read claim that is not an argument's was for, in its refusal's words.
struct ReadRefused {
    /// Said after "which this ... runs inside" for a holder on this thread (None: not said).
    inside: Option<&'static str>,
    /// "it cannot be ... until that call returns".
    verb: &'static str,
    /// Why it cannot, after the written holder's message.
    why: &'static str,
}

/// An import's ([`Claim::for_import`]).
const IMPORT_REFUSED: ReadRefused = ReadRefused {
    inside: Some("import"),
    verb: "imported",
    why: "an imported tensor reads the memory for as long as it lives, and its reads would \
          alias the kernel's writes",
};
/// A copy's ([`Claim::for_copy`]).
const COPY_REFUSED: ReadRefused = ReadRefused {
    inside: Some("copy"),
    verb: "copied",
    why: "the copy would race with the kernel's writes",
};
/// Rust code's read ([`Claim::for_read`]).
const READ_REFUSED: ReadRefused = ReadRefused {
    inside: None,
    verb: "read",
    why: "Rust's references to the elements would alias the kernel's writes",
};

/// The error for a refused read claim of an import, a copy or Rust code's read (`refused`
/// says which; `what` names the request): a `TensorArgMut` writes the memory.
#[cold]
fn read_claim_refusal(conflict: &ClaimConflict, what: &str, refused: &ReadRefused) -> PyErr {
    let holder = match (conflict.same_thread, refused.inside) {
        (0, _) => format!(
            "tensor argument {} of a call in progress on another thread",
            conflict.other_ordinal
        ),
        (_, Some(inside)) => format!(
            "tensor argument {} of a call in progress on this thread, which this {inside} runs \
             inside",
            conflict.other_ordinal
        ),
        (_, None) => format!(
            "tensor argument {} of a call in progress on this thread",
            conflict.other_ordinal
        ),
    };
    let verb = refused.verb;
    if conflict.other_written == 0 {
        // A read claim meets written claims only; a registry of another build that says
        // otherwise still refused it.
        return PyValueError::new_err(format!(
            "{what}: the tensor's memory is claimed by {holder}, so it cannot be {verb} until \
             that call returns"
        ));
    }
    PyValueError::new_err(format!(
        "{what}: the tensor's memory is being written by a writable argument of a running \
         kernel ({holder}, a TensorArgMut), so it cannot be {verb} until that call returns: {}",
        refused.why
    ))
}

// ------------------------------------------------------------------------------------------
// This build's registry (used by the whole process when it was published first).
// ------------------------------------------------------------------------------------------

const FREE: u8 = 0;
const READ: u8 = 1;
const WRITTEN: u8 = 2;

/// Dimensions whose layout a slot keeps for the exact test (more: the byte range only).
const KEPT_DIMS: usize = 8;

/// How a slot describes the bytes its claim reaches, for the exact test.
/// A dense claim reaches every byte of its range: the block `[start, end)`.
const DENSE: u8 = 0;
/// The claim's strided layout is kept (`first`, `item_size`, `ndim`, `shape`, `strides`).
const KEPT: u8 = 1;
/// Only the range is known (more than [`KEPT_DIMS`] dimensions, or a sub-byte type): any
/// claim whose range meets it is taken to overlap it.
const RANGE_ONLY: u8 = 2;

/// One claim. The fields other than `state` and `released_next` are written only by
/// registrations (serialized) before the release store of `state`, and read only by
/// registrations: a release sets `state` alone (and, for an import's slot, `released_next`,
/// below). In C order, aligned to a cache line: what a registration reads of every slot it
/// scans (`state`, `start`, `end`), writes for every claim and reads of a conflict, and what
/// an import's release and reuse touch, fill the first line (64 bytes), so that a scan reads
/// one line per slot and a claim that keeps no layout writes one; a kept layout follows.
#[repr(C, align(64))]
struct Slot {
    state: AtomicU8,
    /// [`DENSE`], [`KEPT`] or [`RANGE_ONLY`].
    layout: AtomicU8,
    /// What claims ([`CLAIMANT_ARGUMENT`], ...): for messages, and for the ordinals, which
    /// count arguments only.
    claimant: AtomicU8,
    /// Whether the slot is an import's ([`ImportArea`]), never a scanned one: fixed when the
    /// slot is made, before any thread can see it.
    import: bool,
    start: AtomicUsize,
    end: AtomicUsize,
    /// The registering thread (its Python thread state).
    thread: AtomicUsize,
    /// Where the registration ran on its thread's stack ([`stack_mark`]), which tells the
    /// claims of one call from those of a call it runs inside.
    stack: AtomicUsize,
    /// The registration's number (orders the claims of a thread, for messages).
    sequence: AtomicU64,
    /// An import's slot, released: the next slot of [`RELEASED`] below it, written by the
    /// releasing thread before its push publishes the slot.
    released_next: AtomicPtr<Slot>,
    /// An import's slot: its position in [`ImportArea::unindexed`], or [`INDEXED`] (in the
    /// index, or holding no claim). Touched by registrations only (serialized), so `Relaxed`.
    unindexed_at: AtomicUsize,
    first: AtomicUsize,
    item_size: AtomicU64,
    ndim: AtomicUsize,
    shape: [AtomicI64; KEPT_DIMS],
    /// In elements.
    strides: [AtomicI64; KEPT_DIMS],
}

// The first line holds the fields every registration touches (on 64-bit targets).
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::offset_of!(Slot, first) == 64);

/// [`Slot::unindexed_at`] of an import's slot that is not in [`ImportArea::unindexed`].
const INDEXED: usize = usize::MAX;

impl Slot {
    fn new(import: bool) -> Self {
        Slot {
            state: AtomicU8::new(FREE),
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            thread: AtomicUsize::new(0),
            stack: AtomicUsize::new(0),
            sequence: AtomicU64::new(0),
            layout: AtomicU8::new(RANGE_ONLY),
            claimant: AtomicU8::new(CLAIMANT_ARGUMENT),
            first: AtomicUsize::new(0),
            item_size: AtomicU64::new(0),
            ndim: AtomicUsize::new(0),
            shape: std::array::from_fn(|_| AtomicI64::new(0)),
            strides: std::array::from_fn(|_| AtomicI64::new(0)),
            import,
            released_next: AtomicPtr::new(std::ptr::null_mut()),
            unindexed_at: AtomicUsize::new(INDEXED),
        }
    }
}

/// Slots in the first chunk; chunk `k` holds `FIRST_CHUNK << k`.
const FIRST_CHUNK: usize = 64;
/// Chunks at most: room for `64 * (2^40 - 1)` claims.
const CHUNKS: usize = 40;

/// The chunks, allocated when every slot before them is busy, never freed or moved.
static CHUNK_TABLE: [AtomicPtr<Slot>; CHUNKS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; CHUNKS];

/// Slots ever used, from the front: registrations scan only these.
static USED: AtomicUsize = AtomicUsize::new(0);

/// Registrations so far (numbers the claims).
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Serializes registrations where the GIL does not.
#[cfg(Py_GIL_DISABLED)]
static REGISTRATION: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The imports' claims ([`CLAIMANT_IMPORT`], read), kept apart from the scanned slots: reads
/// never conflict, so only written registrations look for them, through an index by start
/// address. Touched by registrations only, which are serialized (see [`Serialized`]); releases
/// reach it through [`RELEASED`].
///
/// Indexed lazily: an import's slot goes on the [`ImportArea::unindexed`] list (a push), and
/// only the next written registration, the one registration that searches, moves the list into
/// the index ([`ImportArea::index_unindexed`]). An import released before any written
/// registration ran (a kernel that imports, computes and returns, with no `TensorArgMut` in
/// between: the common case) is taken off that list in constant time, once its slot is needed
/// again, and never touches the B-tree; every import is indexed at most once, so a written
/// registration beside live imports pays, over time, what indexing each import as it came
/// would have cost.
struct ImportArea {
    /// The imports' indexed slots whose claims are live, or released but not yet taken off
    /// [`RELEASED`], by `(start, slot address)`, with the claim's `end`: the slot's own
    /// `start` and `end`, which change only when it is reused, after it left the index. Also,
    /// once anything was indexed, the key `(usize::MAX, usize::MAX)`, which no search reaches.
    by_start: BTreeMap<(usize, usize), usize>,
    /// The imports' slots whose claims are live (or released but not yet taken off
    /// [`RELEASED`]) and not yet in `by_start`: each at the position its
    /// [`Slot::unindexed_at`] says.
    unindexed: Vec<&'static Slot>,
    /// How many indexed claims have a length (`end - start`) of each class `k`, the lengths in
    /// `[2^k, 2^(k+1))` (an empty or reversed range counts in class 0).
    length_classes: [u32; usize::BITS as usize],
    /// Bit `k` set when class `k` is not empty.
    nonempty_classes: u64,
    /// Imports' slots that hold no claim and are not indexed: taken by import registrations.
    free: Vec<&'static Slot>,
    /// Imports' slots made so far (a new chunk doubles them).
    made: usize,
}

impl ImportArea {
    /// The length class of `[start, end)`.
    fn class(start: usize, end: usize) -> usize {
        let length = end.saturating_sub(start).max(1);
        (usize::BITS - 1 - length.leading_zeros()) as usize
    }

    /// Takes the slots released since the last call off [`RELEASED`], out of the index (or off
    /// the unindexed list) and onto the free list.
    fn take_released(&mut self) {
        // Nothing released (the common case): one load. A push that this load misses stays
        // on the list for the next registration; meanwhile its slot is FREE, skipped by the
        // search, and not reused.
        if RELEASED.load(Ordering::Relaxed).is_null() {
            return;
        }
        // Acquire: synchronizes with every push of the slots taken (the pushes are
        // read-modify-writes, so each later one continues the release sequence of the earlier
        // ones), which wrote their `released_next` before publishing.
        let mut next = RELEASED.swap(std::ptr::null_mut(), Ordering::Acquire);
        while let Some(slot) = NonNull::new(next) {
            // SAFETY: only slots of leaked import chunks, never freed or moved, are pushed.
            let slot: &'static Slot = unsafe { &*slot.as_ptr() };
            next = slot.released_next.load(Ordering::Relaxed);
            // A load and a store, not a swap (a locked instruction): only registrations touch
            // the field.
            let position = slot.unindexed_at.load(Ordering::Relaxed);
            if position != INDEXED {
                slot.unindexed_at.store(INDEXED, Ordering::Relaxed);
                // Never indexed: off the list, the last slot moved into its place.
                let removed = self.unindexed.swap_remove(position);
                // A slot is listed where it says (an invariant of this area alone): were it
                // not, a live import could leave the list unseen, so the check stays in
                // release builds, and a broken registry stops the process.
                if !std::ptr::eq(removed, slot) {
                    std::process::abort();
                }
                if let Some(moved) = self.unindexed.get(position) {
                    moved.unindexed_at.store(position, Ordering::Relaxed);
                }
            } else {
                // Written by the registration that claimed it (serialized before this one).
                let start = slot.start.load(Ordering::Relaxed);
                let key = (start, std::ptr::from_ref(slot) as usize);
                if let Some(end) = self.by_start.remove(&key) {
                    let class = Self::class(start, end);
                    self.length_classes[class] -= 1;
                    if self.length_classes[class] == 0 {
                        self.nonempty_classes &= !(1 << class);
                    }
                }
            }
            // Its releaser is done with it (it pushed it last); no registration sees it now.
            self.free.push(slot);
        }
    }

    /// A free import slot: from the free list; where it is empty, from the slots released
    /// since they were last taken off [`RELEASED`]; else from a new chunk. (So an import
    /// registration takes the released list once per emptied free list, not once per import:
    /// its swap is a locked instruction.)
    fn take_slot(&mut self) -> &'static Slot {
        if let Some(slot) = self.free.pop() {
            return slot;
        }
        self.take_released();
        if let Some(slot) = self.free.pop() {
            return slot;
        }
        let count = self.made.max(FIRST_CHUNK);
        let slots: Box<[Slot]> = (0..count).map(|_| Slot::new(true)).collect();
        // Leaked: claims may be released from any thread at any time, so slots never move.
        let slots: &'static [Slot] = Box::leak(slots);
        self.made += count;
        self.free.extend(slots.iter().rev());
        self.free.pop().unwrap_or_else(|| std::process::abort())
    }

    /// Whether any import's slot is listed or indexed: live, or released and not yet taken off
    /// [`RELEASED`] (every slot on that list is one of them). Where none is, a written
    /// registration has no import to meet and nothing to take off: it skips the area (the
    /// written arguments of a program without live imports pay one test).
    #[inline(always)]
    fn holds_slots(&self) -> bool {
        !self.unindexed.is_empty() || self.nonempty_classes != 0
    }

    /// Puts an import's slot, just taken for a claim, on the unindexed list.
    fn add_unindexed(&mut self, slot: &'static Slot) {
        slot.unindexed_at
            .store(self.unindexed.len(), Ordering::Relaxed);
        self.unindexed.push(slot);
    }

    /// Moves every slot of the unindexed list into the index, with its claim's range (written
    /// by the registration that took the slot, serialized before this one). A slot released
    /// meanwhile but not yet taken off [`RELEASED`] is indexed too: it is FREE, which the
    /// search skips, and comes off the index when it is taken off that list.
    fn index_unindexed(&mut self) {
        let mut unindexed = std::mem::take(&mut self.unindexed);
        for slot in unindexed.drain(..) {
            slot.unindexed_at.store(INDEXED, Ordering::Relaxed);
            let start = slot.start.load(Ordering::Relaxed);
            let end = slot.end.load(Ordering::Relaxed);
            self.insert(slot, start, end);
        }
        // The list's buffer is kept for the next imports.
        self.unindexed = unindexed;
    }

    /// Indexes an import's slot, whose claim is `[start, end)`.
    fn insert(&mut self, slot: &'static Slot, start: usize, end: usize) {
        if self.by_start.is_empty() {
            // A key past every search ([`ImportArea::meeting`] searches below `(end, 0)`),
            // kept for good: the map never empties, so importing one tensor at a time does
            // not allocate and free its root each time.
            self.by_start.insert((usize::MAX, usize::MAX), 0);
        }
        self.by_start
            .insert((start, std::ptr::from_ref(slot) as usize), end);
        let class = Self::class(start, end);
        self.length_classes[class] += 1;
        self.nonempty_classes |= 1 << class;
    }

    /// The first indexed live import claim (by start) that a written claim `wanted` overlaps,
    /// with its state: the claims whose ranges meet `wanted`'s start below its end and at most
    /// the longest claim's length below its start, found by one range search.
    ///
    /// # Safety
    ///
    /// `wanted`'s shape and strides hold `ndim` values.
    unsafe fn meeting(&self, wanted: Wanted) -> Option<(&'static Slot, u8)> {
        if self.nonempty_classes == 0 {
            return None;
        }
        // Every indexed length is below `2^(top + 1)`.
        let top = u64::BITS - 1 - self.nonempty_classes.leading_zeros();
        let longest = 1usize.checked_shl(top + 1).unwrap_or(usize::MAX);
        let lowest = wanted.start.saturating_sub(longest);
        // (A request of another build with `end <= start` may leave nothing to search.)
        if lowest >= wanted.end {
            return None;
        }
        for (&(start, address), &end) in self.by_start.range((lowest, 0)..(wanted.end, 0)) {
            if end <= wanted.start || start >= wanted.end {
                continue;
            }
            // SAFETY: indexed addresses are slots of leaked import chunks.
            let slot: &'static Slot = unsafe { &*(address as *const Slot) };
            // Acquire, as in the scan: a FREE slot was released (its import's reads happen
            // before this registration); a live one's fields were written by an earlier
            // registration, serialized before this one.
            let state = slot.state.load(Ordering::Acquire);
            // SAFETY: forwarded from this function's contract.
            if state != FREE && unsafe { layouts_overlap(wanted, slot) } {
                return Some((slot, state));
            }
        }
        None
    }
}

/// A value that only registrations touch: registrations are serialized (the GIL, or
/// [`REGISTRATION`] on free-threaded builds), and the value is reached only through
/// [`Serialized::get`], whose contract is that serialization.
struct Serialized<T>(UnsafeCell<T>);

// SAFETY: every access goes through `get`, whose callers are serialized registrations: no two
// threads reach the value at once, and each registration's accesses happen before the next
// one's (the GIL's or the lock's release and acquire).
unsafe impl<T: Send> Sync for Serialized<T> {}

impl<T> Serialized<T> {
    /// The value.
    ///
    /// # Safety
    ///
    /// The caller is a registration (serialized with every other), and holds no other
    /// reference from `get` while it uses this one.
    #[allow(clippy::mut_from_ref)]
    unsafe fn get(&self) -> &mut T {
        // SAFETY: exclusive by the contract.
        unsafe { &mut *self.0.get() }
    }
}

/// The imports' claims (see [`ImportArea`]).
static IMPORTS: Serialized<ImportArea> = Serialized(UnsafeCell::new(ImportArea {
    by_start: BTreeMap::new(),
    unindexed: Vec::new(),
    length_classes: [0; usize::BITS as usize],
    nonempty_classes: 0,
    free: Vec::new(),
    made: 0,
}));

/// Imports' slots released since a registration last took them, linked by `released_next`:
/// pushed by releasing threads (lock-free, any thread, with or without the GIL), taken all at
/// once by a registration ([`ImportArea::take_released`]). Taking the whole list at once
/// leaves no ABA problem: a slot is pushed once per claim, and reused only after it was taken.
static RELEASED: AtomicPtr<Slot> = AtomicPtr::new(std::ptr::null_mut());

/// Whether a claim is an import's, kept in the [`ImportArea`]: an import's read.
#[inline(always)]
fn is_import(wanted: &Wanted) -> bool {
    !wanted.written && wanted.claimant == CLAIMANT_IMPORT
}

/// The import area's part of a written registration: takes the released slots off the index
/// (or the unindexed list), indexes the unindexed ones, then finds the live import the claim
/// overlaps, if any. (An import needs none: reads never conflict.)
///
/// # Safety
///
/// A registration (serialized); `wanted`'s shape and strides hold `ndim` values.
#[inline(never)]
unsafe fn check_imports(wanted: Wanted) -> Option<(&'static Slot, u8)> {
    // SAFETY: a registration, the only reference it takes.
    let imports = unsafe { IMPORTS.get() };
    imports.take_released();
    if !imports.unindexed.is_empty() {
        imports.index_unindexed();
    }
    // SAFETY: forwarded.
    unsafe { imports.meeting(wanted) }
}

/// An import's slot for a claim, on the unindexed list (indexed by the next written
/// registration, by then with the claim's range, which the caller writes).
///
/// # Safety
///
/// A registration (serialized).
#[inline(never)]
unsafe fn import_slot() -> &'static Slot {
    // SAFETY: a registration, the only reference it takes.
    let imports = unsafe { IMPORTS.get() };
    let slot = imports.take_slot();
    // Listed before its fields are written: no other registration runs until this one has
    // written them, and the state is FREE until then.
    imports.add_unindexed(slot);
    slot
}

/// The chunk and the position in it of slot `index`.
fn chunk_of(index: usize) -> (usize, usize) {
    let group = index / FIRST_CHUNK + 1;
    let chunk = (usize::BITS - 1 - group.leading_zeros()) as usize;
    (chunk, index - FIRST_CHUNK * ((1 << chunk) - 1))
}

/// The chunks holding the first `used` slots, as slices (`used` at most `USED`, whose
/// chunks are published).
fn used_chunks(used: usize) -> impl Iterator<Item = &'static [Slot]> {
    let mut remaining = used;
    (0..CHUNKS).map_while(move |chunk| {
        if remaining == 0 {
            return None;
        }
        let length = (FIRST_CHUNK << chunk).min(remaining);
        remaining -= length;
        let base = CHUNK_TABLE[chunk].load(Ordering::Acquire);
        // SAFETY: the slots below `USED` lie in published chunks of `FIRST_CHUNK << chunk`
        // slots each, leaked and never freed or moved.
        Some(unsafe { std::slice::from_raw_parts(base, length) })
    })
}

/// Makes slot `index` (the next after the used ones) available, allocating its chunk when it
/// starts one; `None` past the last chunk.
fn grow(index: usize) -> Option<&'static Slot> {
    let (chunk, position) = chunk_of(index);
    if chunk >= CHUNKS {
        return None;
    }
    if CHUNK_TABLE[chunk].load(Ordering::Acquire).is_null() {
        let slots: Box<[Slot]> = (0..FIRST_CHUNK << chunk)
            .map(|_| Slot::new(false))
            .collect();
        // Leaked: claims may be released from any thread at any time, so slots never move.
        let base = Box::leak(slots).as_mut_ptr();
        CHUNK_TABLE[chunk].store(base, Ordering::Release);
    }
    let base = CHUNK_TABLE[chunk].load(Ordering::Acquire);
    // SAFETY: a published chunk of `FIRST_CHUNK << chunk` slots, `position` below that.
    Some(unsafe { &*base.add(position) })
}

/// An identity of the calling thread, the same for every call on it while it lives and
/// different from every other live thread's: the thread pointer (the register the platform's
/// thread-local storage hangs from), one instruction where it can be read, and the Python
/// thread state elsewhere (registrations are made by threads attached to the interpreter).
#[inline(always)]
fn thread_token() -> usize {
    #[cfg(all(
        target_arch = "x86_64",
        any(target_os = "linux", target_os = "android")
    ))]
    {
        let pointer: usize;
        // SAFETY: reads the thread control block's self-pointer at `fs:0` (the x86-64 System V
        // TLS ABI): no memory is written, no flags or stack are used.
        unsafe {
            std::arch::asm!(
                "mov {}, qword ptr fs:[0]",
                out(reg) pointer,
                options(nostack, readonly, preserves_flags, pure)
            )
        };
        pointer
    }
    #[cfg(all(target_arch = "aarch64", any(target_os = "linux", target_os = "macos")))]
    {
        let pointer: usize;
        // SAFETY: reads the thread-pointer register, which nothing writes here.
        unsafe {
            std::arch::asm!(
                "mrs {}, tpidr_el0",
                out(reg) pointer,
                options(nomem, nostack, preserves_flags, pure)
            )
        };
        pointer
    }
    #[cfg(not(any(
        all(
            target_arch = "x86_64",
            any(target_os = "linux", target_os = "android")
        ),
        all(target_arch = "aarch64", any(target_os = "linux", target_os = "macos"))
    )))]
    {
        // SAFETY: called by a thread attached to the interpreter (the registry's contract).
        unsafe { ffi::PyThreadState_Get() as usize }
    }
}

/// Stack bytes between the registrations of a call and those of a call it runs inside, at
/// least: the arguments of one call are registered at one depth of the stack (a few hundred
/// bytes apart, for a list of arguments), while a call made from inside another runs through
/// the interpreter's evaluation loop, the calling convention and PyO3's trampoline below it
/// (about 5 KiB on CPython 3.11, measured).
const NESTED_CALL_DEPTH: usize = 2048;

/// The address of a local of the registration: where on its thread's stack it runs.
#[inline(always)]
fn stack_mark() -> usize {
    let mark = 0u8;
    std::ptr::from_ref(std::hint::black_box(&mark)) as usize
}

/// Whether two registrations of one thread, at stack marks `a` and `b`, belong to one call.
fn one_call(a: usize, b: usize) -> bool {
    a.abs_diff(b) < NESTED_CALL_DEPTH
}

/// What a claim asks for, by value: [`ClaimRequest`] for this build's registry, kept in
/// registers on the inlined path.
#[derive(Clone, Copy)]
struct Wanted {
    first: usize,
    start: usize,
    end: usize,
    item_size: u64,
    ndim: usize,
    shape: *const i64,
    strides: *const i64,
    written: bool,
    dense: bool,
    /// [`CLAIMANT_ARGUMENT`], ...
    claimant: u8,
}

impl Wanted {
    /// The claim's extents and strides.
    ///
    /// # Safety
    ///
    /// `shape` and `strides` hold `ndim` values (they may be NULL when `ndim` is 0).
    unsafe fn dims(&self) -> (&[i64], &[i64]) {
        if self.ndim == 0 {
            return (&[], &[]);
        }
        // SAFETY: `ndim` values behind non-NULL pointers, by the contract.
        unsafe {
            (
                std::slice::from_raw_parts(self.shape, self.ndim),
                std::slice::from_raw_parts(self.strides, self.ndim),
            )
        }
    }

    /// The C request for another build's registry.
    fn request(&self) -> ClaimRequest {
        ClaimRequest {
            first: self.first,
            start: self.start,
            end: self.end,
            item_size: self.item_size,
            ndim: self.ndim as u64,
            shape: self.shape,
            strides: self.strides,
            written: u8::from(self.written),
            dense: u8::from(self.dense),
        }
    }

    /// The request a foreign caller made, for `claimant`.
    fn of_request(request: &ClaimRequest, claimant: u8) -> Self {
        Wanted {
            first: request.first,
            start: request.start,
            end: request.end,
            item_size: request.item_size,
            ndim: usize::try_from(request.ndim).unwrap_or(usize::MAX),
            shape: request.shape,
            strides: request.strides,
            written: request.written != 0,
            dense: request.dense != 0,
            claimant,
        }
    }
}

/// A layout for the exact test, in bytes.
struct ExactLayout {
    first: usize,
    item_size: u64,
    ndim: usize,
    shape: [i64; KEPT_DIMS],
    byte_strides: [i64; KEPT_DIMS],
}

impl ExactLayout {
    /// The contiguous bytes `[start, end)`: what a dense claim reaches.
    fn block(start: usize, end: usize) -> Self {
        let mut shape = [0; KEPT_DIMS];
        let mut byte_strides = [0; KEPT_DIMS];
        shape[0] = i64::try_from(end.saturating_sub(start)).unwrap_or(i64::MAX);
        byte_strides[0] = 1;
        ExactLayout {
            first: start,
            item_size: 1,
            ndim: 1,
            shape,
            byte_strides,
        }
    }

    /// A strided layout: the elements at `first` of `item_size` bytes, with the extents and
    /// element strides of `dims` (`ndim` of them); `None` where it is not kept (more than
    /// [`KEPT_DIMS`] dimensions, a sub-byte type, strides past `i64` in bytes).
    fn strided(
        first: usize,
        item_size: u64,
        ndim: usize,
        dims: impl Iterator<Item = (i64, i64)>,
    ) -> Option<Self> {
        if ndim > KEPT_DIMS || item_size == 0 {
            return None;
        }
        let item = i64::try_from(item_size).ok()?;
        let mut layout = ExactLayout {
            first,
            item_size,
            ndim,
            shape: [0; KEPT_DIMS],
            byte_strides: [0; KEPT_DIMS],
        };
        for (dim, (extent, stride)) in dims.take(ndim).enumerate() {
            layout.shape[dim] = extent;
            layout.byte_strides[dim] = stride.checked_mul(item)?;
        }
        Some(layout)
    }

    fn of_slot(slot: &Slot) -> Option<Self> {
        let load = |value: &AtomicI64| value.load(Ordering::Relaxed);
        match slot.layout.load(Ordering::Relaxed) {
            DENSE => Some(Self::block(
                slot.start.load(Ordering::Relaxed),
                slot.end.load(Ordering::Relaxed),
            )),
            KEPT => Self::strided(
                slot.first.load(Ordering::Relaxed),
                slot.item_size.load(Ordering::Relaxed),
                slot.ndim.load(Ordering::Relaxed),
                slot.shape
                    .iter()
                    .map(load)
                    .zip(slot.strides.iter().map(load)),
            ),
            _ => None,
        }
    }

    /// # Safety
    ///
    /// The claim's shape and strides hold `ndim` values.
    unsafe fn of_wanted(request: &Wanted) -> Option<Self> {
        if request.dense {
            return Some(Self::block(request.start, request.end));
        }
        if request.ndim > KEPT_DIMS {
            return None;
        }
        // SAFETY: forwarded; at most `KEPT_DIMS` values.
        let (shape, strides) = unsafe { request.dims() };
        Self::strided(
            request.first,
            request.item_size,
            request.ndim,
            shape.iter().copied().zip(strides.iter().copied()),
        )
    }

    fn byte_layout(&self) -> ByteLayout<'_> {
        ByteLayout {
            start: self.first,
            item_size: self.item_size,
            shape: &self.shape[..self.ndim],
            byte_strides: &self.byte_strides[..self.ndim],
        }
    }
}

/// Whether a claim whose byte range meets `slot`'s shares a byte with it (yes where it is
/// not known): the exact test, off the common path.
///
/// # Safety
///
/// The claim's shape and strides hold `ndim` values.
#[cold]
unsafe fn layouts_overlap(request: Wanted, slot: &Slot) -> bool {
    if request.dense && slot.layout.load(Ordering::Relaxed) == DENSE {
        // Two blocks whose ranges meet.
        return true;
    }
    // SAFETY: forwarded.
    let (Some(request), Some(other)) = (
        unsafe { ExactLayout::of_wanted(&request) },
        ExactLayout::of_slot(slot),
    ) else {
        return true;
    };
    memory_overlap(
        &request.byte_layout(),
        &other.byte_layout(),
        DEFAULT_MAX_WORK,
    ) != Overlap::Disjoint
}

/// Why a claim is refused: which live claim it meets, what that claim is, and the positions
/// of both among their calls' live arguments (0 for the other claim when it is no argument:
/// an import, a copy, a class's read). A claim of this thread registered much higher on the
/// stack (see [`NESTED_CALL_DEPTH`]) belongs to a call that the refused claim's call runs
/// inside.
#[cold]
fn conflict_with(other: &Slot, state: u8, used: usize, stack: usize) -> ClaimConflictOf {
    let thread = thread_token();
    let other_thread = other.thread.load(Ordering::Relaxed);
    let other_sequence = other.sequence.load(Ordering::Relaxed);
    let other_stack = other.stack.load(Ordering::Relaxed);
    let other_claimant = other.claimant.load(Ordering::Relaxed);
    let mut ordinal = 1u32;
    let mut other_ordinal = 1u32;
    for slot in used_chunks(used).flat_map(<[Slot]>::iter) {
        // Arguments only: imports, copies and reads of other handles are no call's arguments.
        if slot.state.load(Ordering::Acquire) == FREE
            || slot.claimant.load(Ordering::Relaxed) != CLAIMANT_ARGUMENT
        {
            continue;
        }
        let owner = slot.thread.load(Ordering::Relaxed);
        let at = slot.stack.load(Ordering::Relaxed);
        if owner == thread && one_call(at, stack) {
            ordinal = ordinal.saturating_add(1);
        }
        if owner == other_thread
            && one_call(at, other_stack)
            && slot.sequence.load(Ordering::Relaxed) < other_sequence
        {
            other_ordinal = other_ordinal.saturating_add(1);
        }
    }
    let same_thread = match other_thread == thread {
        false => 0,
        true if one_call(other_stack, stack) => 1,
        true => 2,
    };
    if other_claimant != CLAIMANT_ARGUMENT {
        other_ordinal = 0;
    }
    ClaimConflictOf {
        conflict: ClaimConflict {
            same_thread,
            other_written: u8::from(state == WRITTEN),
            other_ordinal,
            ordinal,
        },
        other_claimant,
    }
}

/// [`RegistryApi::claim`] of this build's registry. Version 1 of the table has no failure to
/// report, so a panic (a broken invariant) aborts ([`trampoline::infallible`]).
///
/// # Safety
///
/// The table's contract: `request` points to a request whose shape and strides hold `ndim`
/// values for the call, `out_handle` and `out_conflict` to slots for the results; the
/// calling thread is attached (registrations are serialized by the GIL, or by the
/// registry's lock where there is none).
unsafe extern "C" fn claim_in_own_registry(
    request: *const ClaimRequest,
    out_handle: *mut usize,
    out_conflict: *mut ClaimConflict,
) -> c_int {
    trampoline::infallible(|| {
        // A caller of version 1's member claims for an argument (or, of late, a copy it
        // does not tell apart).
        // SAFETY: the table's contract is `claim`'s, for a request valid for the call.
        match unsafe { claim(Wanted::of_request(&*request, CLAIMANT_ARGUMENT)) } {
            Ok(handle) => {
                // SAFETY: the caller's slot for the handle.
                unsafe { out_handle.write(handle) };
                0
            }
            Err(conflict) => {
                // SAFETY: the caller's slot for the conflict, of version 1's layout.
                unsafe { out_conflict.write(conflict.conflict) };
                1
            }
        }
    })
}

/// [`RegistryApi::claim_as`] of this build's registry (version 2), which aborts on a panic as
/// [`claim_in_own_registry`] does.
///
/// # Safety
///
/// As for [`claim_in_own_registry`], with `out_conflict` a slot for a [`ClaimConflictOf`].
unsafe extern "C" fn claim_as_in_own_registry(
    request: *const ClaimRequest,
    claimant: u8,
    out_handle: *mut usize,
    out_conflict: *mut ClaimConflictOf,
) -> c_int {
    trampoline::infallible(|| {
        // SAFETY: the table's contract is `claim`'s, for a request valid for the call.
        match unsafe { claim(Wanted::of_request(&*request, claimant)) } {
            Ok(handle) => {
                // SAFETY: the caller's slot for the handle.
                unsafe { out_handle.write(handle) };
                0
            }
            Err(conflict) => {
                // SAFETY: the caller's slot for the conflict.
                unsafe { out_conflict.write(conflict) };
                1
            }
        }
    })
}

/// [`RegistryApi::release`] of this build's registry.
///
/// # Safety
///
/// `handle` was handed out by this registry's `claim` and is released once.
unsafe extern "C" fn release_in_own_registry(handle: usize) {
    // SAFETY: forwarded.
    trampoline::infallible(|| unsafe { release(handle) })
}

/// Registers a claim in this build's registry ([`RegistryApi::claim`]): its handle, or why
/// it is refused.
///
/// # Safety
///
/// The claim's shape and strides hold `ndim` values; the calling thread is attached to the
/// interpreter, and registrations are serialized (the GIL, or the registry's lock on
/// free-threaded builds, taken here).
#[inline(always)]
unsafe fn claim(wanted: Wanted) -> Result<usize, ClaimConflictOf> {
    #[cfg(Py_GIL_DISABLED)]
    let _registration = REGISTRATION
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // From here on no other registration runs (the GIL, or the lock), so the slots' fields
    // other than `state` change only here; releases only ever set a state to FREE.
    let used = USED.load(Ordering::Relaxed);
    let stack = stack_mark();
    let mut free: Option<&'static Slot> = None;
    // The slots of one chunk: a conflict ends the scan.
    let mut scan = |chunk: &'static [Slot]| -> Option<(&'static Slot, u8)> {
        for slot in chunk {
            let state = slot.state.load(Ordering::Acquire);
            if state == FREE {
                if free.is_none() {
                    free = Some(slot);
                }
                continue;
            }
            // Reading memory that is only read is always allowed.
            if !wanted.written && state != WRITTEN {
                continue;
            }
            let ranges_meet = wanted.start < slot.end.load(Ordering::Relaxed)
                && slot.start.load(Ordering::Relaxed) < wanted.end;
            // SAFETY: the claim's shape and strides (this function's contract).
            if ranges_meet && unsafe { layouts_overlap(wanted, slot) } {
                return Some((slot, state));
            }
        }
        None
    };
    let conflict = if used <= FIRST_CHUNK {
        // The common case (at most 64 arguments alive): the first chunk only.
        if used == 0 {
            None
        } else {
            let base = CHUNK_TABLE[0].load(Ordering::Acquire);
            // SAFETY: as in `used_chunks`: the first `used` slots of the published first chunk.
            scan(unsafe { std::slice::from_raw_parts(base, used) })
        }
    } else {
        used_chunks(used).find_map(&mut scan)
    };
    if let Some((slot, state)) = conflict {
        return Err(conflict_with(slot, state, used, stack));
    }
    // Imports' claims are reads, in their own area: a read never looks there; a written claim
    // searches it (the released ones taken off first), and an import takes its slot there.
    let import = is_import(&wanted);
    // SAFETY: a registration (serialized): the import area's fields are read here only.
    if wanted.written && unsafe { IMPORTS.get() }.holds_slots() {
        // SAFETY: a registration (serialized); the claim's shape and strides (the contract).
        if let Some((slot, state)) = unsafe { check_imports(wanted) } {
            return Err(conflict_with(slot, state, used, stack));
        }
    }
    let slot = match free {
        // SAFETY: a registration.
        _ if import => unsafe { import_slot() },
        Some(slot) => slot,
        None => {
            let Some(slot) = grow(used) else {
                // 64 * (2^40 - 1) claims alive at once: memory ran out long before.
                std::process::abort();
            };
            USED.store(used + 1, Ordering::Relaxed);
            slot
        }
    };
    let sequence = SEQUENCE.load(Ordering::Relaxed);
    SEQUENCE.store(sequence.wrapping_add(1), Ordering::Relaxed);
    slot.start.store(wanted.start, Ordering::Relaxed);
    slot.end.store(wanted.end, Ordering::Relaxed);
    slot.thread.store(thread_token(), Ordering::Relaxed);
    slot.stack.store(stack, Ordering::Relaxed);
    slot.sequence.store(sequence, Ordering::Relaxed);
    slot.claimant.store(wanted.claimant, Ordering::Relaxed);
    if wanted.dense || wanted.ndim == 0 {
        // It covers its range: the block `[start, end)`, no layout to keep.
        slot.layout.store(DENSE, Ordering::Relaxed);
    } else if wanted.item_size == 0 || wanted.ndim > KEPT_DIMS {
        slot.layout.store(RANGE_ONLY, Ordering::Relaxed);
    } else {
        // SAFETY: the claim's shape and strides (this function's contract), `ndim` checked.
        unsafe { keep_layout(slot, &wanted) };
    }
    slot.state.store(
        if wanted.written { WRITTEN } else { READ },
        Ordering::Release,
    );
    Ok(std::ptr::from_ref(slot) as usize)
}

/// Keeps a strided claim's layout in its slot, for the exact test.
///
/// # Safety
///
/// The claim's shape and strides hold `ndim` values, `0 < ndim <= KEPT_DIMS`.
unsafe fn keep_layout(slot: &Slot, wanted: &Wanted) {
    slot.layout.store(KEPT, Ordering::Relaxed);
    slot.ndim.store(wanted.ndim, Ordering::Relaxed);
    slot.item_size.store(wanted.item_size, Ordering::Relaxed);
    slot.first.store(wanted.first, Ordering::Relaxed);
    // SAFETY: forwarded from this function's contract.
    let (shape, strides) = unsafe { wanted.dims() };
    for (kept, &extent) in slot.shape.iter().zip(shape) {
        kept.store(extent, Ordering::Relaxed);
    }
    for (kept, &stride) in slot.strides.iter().zip(strides) {
        kept.store(stride, Ordering::Relaxed);
    }
}

/// Releases a claim of this build's registry ([`RegistryApi::release`]).
///
/// # Safety
///
/// `handle` was handed out by [`claim`] and is released once.
#[inline(always)]
unsafe fn release(handle: usize) {
    // SAFETY: a handle is the address of a slot of a leaked chunk, never freed.
    let slot: &'static Slot = unsafe { &*(handle as *const Slot) };
    // Read before the release: `import` never changes, but a scanned slot may be reused as
    // soon as it is FREE.
    let import = slot.import;
    // Release: what the claim's holder did with the memory happens before any registration
    // that sees the slot FREE (its Acquire load) and grants an overlapping claim.
    slot.state.store(FREE, Ordering::Release);
    if import {
        release_import(slot);
    }
}

/// Pushes a released import's slot on [`RELEASED`], for the next registration to take it off
/// the index (lock-free: a compare-and-swap loop, any thread, with or without the GIL).
#[cold]
fn release_import(slot: &'static Slot) {
    let pointer = std::ptr::from_ref(slot).cast_mut();
    let mut head = RELEASED.load(Ordering::Relaxed);
    loop {
        // The slot is this thread's until the push succeeds: nobody else reads its
        // `released_next` (a registration reuses it only after taking it off the list).
        slot.released_next.store(head, Ordering::Relaxed);
        // Release: publishes `released_next` (and the FREE state) to the registration whose
        // Acquire swap takes the list; Relaxed on failure, as `head` is not dereferenced.
        match RELEASED.compare_exchange_weak(head, pointer, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return,
            Err(current) => head = current,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dense claim of the bytes `[start, end)`, one byte per element (its layout is its
    /// range: the shape and strides are a static's).
    fn dense(start: usize, end: usize, written: bool, claimant: u8) -> Wanted {
        static ONE: [i64; 1] = [1];
        Wanted {
            first: start,
            start,
            end,
            item_size: 1,
            ndim: 1,
            shape: ONE.as_ptr(),
            strides: ONE.as_ptr(),
            written,
            dense: true,
            claimant,
        }
    }

    /// Registrations under the GIL on eight threads, each releasing its claims after dropping
    /// the GIL (as a kernel that detached does), over 64 bytes of overlapping dense blocks and
    /// interleaved strided layouts: a claim is granted only when no live claim conflicts with
    /// it. The test keeps its own count of the readers and the writer of every byte, marked
    /// after a claim is granted and cleared before it is released: a grant that overlaps a
    /// live write (or a write that overlaps a live read) finds the byte taken. Run under
    /// ThreadSanitizer by `make sanitize`, which reports any data race of the protocol.
    #[test]
    fn claims_and_releases_on_many_threads_never_alias_a_write() {
        use std::sync::atomic::AtomicU32;

        const THREADS: u64 = 8;
        const ROUNDS: usize = 3_000;
        const BYTES: usize = 64;
        /// Bit 31: a writer; below: the readers.
        const WRITER: u32 = 1 << 31;
        static HOLDERS: [AtomicU32; BYTES] = [const { AtomicU32::new(0) }; BYTES];
        static GRANTED: AtomicUsize = AtomicUsize::new(0);
        static REFUSED: AtomicUsize = AtomicUsize::new(0);

        Python::initialize();
        // Addresses only: the registry never reads the memory it registers.
        let base = Box::leak(vec![0u8; BYTES].into_boxed_slice()).as_ptr() as usize;
        let threads: Vec<_> = (0..THREADS)
            .map(|thread| {
                std::thread::spawn(move || {
                    let mut seed = 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(thread + 1);
                    let mut next = move || {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        seed
                    };
                    for _ in 0..ROUNDS {
                        let choice = next();
                        let written = choice % 3 == 0;
                        let start = (choice >> 8) as usize % (BYTES - 16);
                        let count = 1 + (choice >> 16) as usize % 8;
                        // Dense: `count` bytes; strided: every other byte, `count` of them,
                        // odd or even, which interleaved layouts tell apart exactly.
                        let step: i64 = if choice >> 24 & 1 == 0 { 1 } else { 2 };
                        let bytes: Vec<usize> =
                            (0..count).map(|i| start + i * step as usize).collect();
                        let shape = [count as i64];
                        let strides = [step];
                        let wanted = Wanted {
                            first: base + start,
                            start: base + start,
                            end: base + bytes[count - 1] + 1,
                            item_size: 1,
                            ndim: 1,
                            shape: shape.as_ptr(),
                            strides: strides.as_ptr(),
                            written,
                            dense: step == 1 || count == 1,
                            claimant: CLAIMANT_ARGUMENT,
                        };
                        // SAFETY: `wanted`'s shape and strides hold one value each and live
                        // through the call; the GIL serializes registrations.
                        let claimed = Python::attach(|_| unsafe { claim(wanted) });
                        let Ok(handle) = claimed else {
                            REFUSED.fetch_add(1, Ordering::Relaxed);
                            continue;
                        };
                        GRANTED.fetch_add(1, Ordering::Relaxed);
                        for &byte in &bytes {
                            let taken = if written {
                                HOLDERS[byte].fetch_or(WRITER, Ordering::Relaxed)
                            } else {
                                HOLDERS[byte].fetch_add(1, Ordering::Relaxed) & WRITER
                            };
                            assert_eq!(taken, 0, "byte {byte} granted while held ({taken:#x})");
                        }
                        std::thread::yield_now();
                        for &byte in &bytes {
                            let mark = if written { WRITER } else { 1 };
                            HOLDERS[byte].fetch_sub(mark, Ordering::Relaxed);
                        }
                        // SAFETY: the handle `claim` gave, released once, without the GIL.
                        unsafe { release(handle) };
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("a thread of the test failed");
        }
        let (granted, refused) = (
            GRANTED.load(Ordering::Relaxed),
            REFUSED.load(Ordering::Relaxed),
        );
        assert_eq!(granted + refused, THREADS as usize * ROUNDS);
        // Contention happened, and did not refuse everything.
        assert!(
            refused > 0 && granted > refused,
            "granted {granted}, refused {refused}"
        );
    }

    /// Imports' claims (held across rounds and released by another thread, without the GIL,
    /// as a tensor dropped elsewhere is), reading and written arguments, on six threads over
    /// 256 bytes of overlapping blocks and interleaved strided layouts, some imports long
    /// enough to widen the import index's search: a claim is granted only when no live claim
    /// conflicts with it, every grant checked against the test's own count of each byte's
    /// readers and writer (marked after the grant, cleared before the release). Run under
    /// ThreadSanitizer by `scripts/sanitize-threads.sh`: the releases' pushes race with the
    /// registrations that take them off the index.
    #[test]
    fn imports_and_written_claims_on_many_threads_never_alias_a_write() {
        use std::sync::Mutex;
        use std::sync::atomic::AtomicU32;

        const THREADS: usize = 6;
        const ROUNDS: usize = 3_000;
        const BYTES: usize = 256;
        /// Bit 31: a writer; below: the readers.
        const WRITER: u32 = 1 << 31;
        static HOLDERS: [AtomicU32; BYTES] = [const { AtomicU32::new(0) }; BYTES];
        static WRITES: [AtomicUsize; 2] = [const { AtomicUsize::new(0) }; 2];
        static IMPORTS_MADE: [AtomicUsize; 2] = [const { AtomicUsize::new(0) }; 2];
        /// An import held on: its handle and bytes.
        type Held = (usize, Vec<usize>);
        /// Imports that a thread hands to the next one, which releases them.
        static MAILBOXES: [Mutex<Vec<Held>>; THREADS] = [const { Mutex::new(Vec::new()) }; THREADS];

        fn clear_and_release(handle: usize, bytes: &[usize]) {
            for &byte in bytes {
                HOLDERS[byte].fetch_sub(1, Ordering::Relaxed);
            }
            // SAFETY: the handle `claim` gave, released once, without the GIL.
            unsafe { release(handle) };
        }

        Python::initialize();
        // Addresses only: the registry never reads the memory it registers.
        let base = Box::leak(vec![0u8; BYTES].into_boxed_slice()).as_ptr() as usize;
        let threads: Vec<_> = (0..THREADS)
            .map(|thread| {
                std::thread::spawn(move || {
                    let mut seed = 0x2545_F491_4F6C_DD1Du64.wrapping_mul(thread as u64 + 1);
                    let mut next = move || {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        seed
                    };
                    for _ in 0..ROUNDS {
                        let choice = next();
                        // 0: a written argument; 1, 2: an import; 3: a reading argument.
                        let kind = choice % 4;
                        let (written, claimant) = match kind {
                            0 => (true, CLAIMANT_ARGUMENT),
                            3 => (false, CLAIMANT_ARGUMENT),
                            _ => (false, CLAIMANT_IMPORT),
                        };
                        // One import in eight is long (up to 96 bytes): the search reaches
                        // that far below a written claim.
                        let long = kind != 0 && choice >> 40 & 7 == 0;
                        let count = 1 + (choice >> 16) as usize % if long { 48 } else { 8 };
                        let step: i64 = if choice >> 24 & 1 == 0 { 1 } else { 2 };
                        let start = (choice >> 8) as usize % (BYTES - 2 * count);
                        let bytes: Vec<usize> =
                            (0..count).map(|i| start + i * step as usize).collect();
                        let shape = [count as i64];
                        let strides = [step];
                        let wanted = Wanted {
                            first: base + start,
                            start: base + start,
                            end: base + bytes[count - 1] + 1,
                            item_size: 1,
                            ndim: 1,
                            shape: shape.as_ptr(),
                            strides: strides.as_ptr(),
                            written,
                            dense: step == 1 || count == 1,
                            claimant,
                        };
                        // SAFETY: `wanted`'s shape and strides hold one value each and live
                        // through the call; the GIL serializes registrations.
                        let claimed = Python::attach(|_| unsafe { claim(wanted) });
                        let counters = match claimant {
                            CLAIMANT_IMPORT => &IMPORTS_MADE,
                            _ => &WRITES,
                        };
                        // (A reading argument is refused only by a written one.)
                        if let Ok(handle) = claimed {
                            counters[0].fetch_add(1, Ordering::Relaxed);
                            for &byte in &bytes {
                                let taken = if written {
                                    HOLDERS[byte].fetch_or(WRITER, Ordering::Relaxed)
                                } else {
                                    HOLDERS[byte].fetch_add(1, Ordering::Relaxed) & WRITER
                                };
                                assert_eq!(taken, 0, "byte {byte} granted while held ({taken:#x})");
                            }
                            if claimant == CLAIMANT_IMPORT {
                                // Held on: the next thread releases it.
                                MAILBOXES[(thread + 1) % THREADS]
                                    .lock()
                                    .unwrap()
                                    .push((handle, bytes));
                            } else {
                                std::thread::yield_now();
                                for &byte in &bytes {
                                    let mark = if written { WRITER } else { 1 };
                                    HOLDERS[byte].fetch_sub(mark, Ordering::Relaxed);
                                }
                                // SAFETY: the handle `claim` gave, released once, without
                                // the GIL.
                                unsafe { release(handle) };
                            }
                        } else if written || claimant == CLAIMANT_IMPORT {
                            counters[1].fetch_add(1, Ordering::Relaxed);
                        }
                        if choice >> 32 & 3 == 0 {
                            let mailbox = std::mem::take(&mut *MAILBOXES[thread].lock().unwrap());
                            for (handle, bytes) in mailbox {
                                clear_and_release(handle, &bytes);
                            }
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("a thread of the test failed");
        }
        for mailbox in &MAILBOXES {
            for (handle, bytes) in std::mem::take(&mut *mailbox.lock().unwrap()) {
                clear_and_release(handle, &bytes);
            }
        }
        assert!(HOLDERS.iter().all(|held| held.load(Ordering::Relaxed) == 0));
        let [granted, refused] = WRITES.each_ref().map(|n| n.load(Ordering::Relaxed));
        let [imported, kept_out] = IMPORTS_MADE.each_ref().map(|n| n.load(Ordering::Relaxed));
        // Contention both ways, and not everything refused.
        assert!(
            granted > 0 && refused > 0 && imported > kept_out && kept_out > 0,
            "writes granted {granted}, refused {refused}; imports {imported}, refused {kept_out}"
        );
    }

    /// The import area's lazy index gives exactly the answers of a model: imports made and
    /// released in any order around written claims (imports that never meet a written claim,
    /// released unindexed from any position of the waiting list; imports indexed by a written
    /// claim and released later; imports released but not yet taken off the released list
    /// when a written claim indexes), and each written claim is refused exactly when it meets
    /// a live import (no grant over a live import, no refusal for one released).
    #[test]
    fn the_lazy_import_index_refuses_exactly_the_writes_that_meet_a_live_import() {
        const BYTES: usize = 128;
        const ROUNDS: usize = 20_000;
        Python::initialize();
        // Addresses only: the registry never reads the memory it registers.
        let base = Box::leak(vec![0u8; BYTES].into_boxed_slice()).as_ptr() as usize;
        // The model: each live import's handle and byte range (offsets into the buffer).
        let mut live: Vec<(usize, usize, usize)> = Vec::new();
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut refused, mut granted) = (0, 0);
        for round in 0..ROUNDS {
            let choice = next();
            let length = 1 + (choice >> 8) as usize % 16;
            let start = (choice >> 16) as usize % (BYTES - length);
            match choice % 8 {
                // An import (fewer than releases: a handful live at a time).
                0..=1 => {
                    // SAFETY: a dense request's shape and strides are a static's; the GIL
                    // serializes registrations.
                    let claimed = Python::attach(|_| unsafe {
                        claim(dense(
                            base + start,
                            base + start + length,
                            false,
                            CLAIMANT_IMPORT,
                        ))
                    });
                    let handle =
                        claimed.unwrap_or_else(|_| panic!("round {round}: import refused"));
                    live.push((handle, start, start + length));
                }
                // A release of a live import, from anywhere in the list.
                2..=4 if !live.is_empty() => {
                    let (handle, ..) = live.swap_remove((choice >> 32) as usize % live.len());
                    // SAFETY: a handle `claim` gave, released once.
                    unsafe { release(handle) };
                }
                // A written claim, refused exactly when it meets a live import.
                _ => {
                    let meets = live
                        .iter()
                        .any(|&(_, low, high)| low < start + length && start < high);
                    // SAFETY: as above.
                    let claimed = Python::attach(|_| unsafe {
                        claim(dense(
                            base + start,
                            base + start + length,
                            true,
                            CLAIMANT_ARGUMENT,
                        ))
                    });
                    match claimed {
                        Ok(handle) => {
                            assert!(!meets, "round {round}: a write over a live import granted");
                            granted += 1;
                            // SAFETY: as above.
                            unsafe { release(handle) };
                        }
                        Err(conflict) => {
                            assert!(meets, "round {round}: a write refused with no live import");
                            assert_eq!(conflict.other_claimant, CLAIMANT_IMPORT);
                            refused += 1;
                        }
                    }
                }
            }
        }
        for (handle, ..) in live {
            // SAFETY: as above.
            unsafe { release(handle) };
        }
        assert!(
            granted > 1_000 && refused > 1_000,
            "granted {granted}, refused {refused}"
        );
    }

    /// A thousand live imports take none of the slots that every registration scans (the
    /// registry before kept them there, so that each registration scanned them all), and
    /// still keep out exactly the written claims that meet them: a read goes on beside them,
    /// a write in a gap between two of them goes on, a write over one of them is refused
    /// naming an import, also at the far end of a long one (whose start lies far below the
    /// write's, at the edge of the index's search). Released, they keep nothing out.
    #[test]
    fn a_thousand_live_imports_take_no_scanned_slot_and_keep_out_the_writes_they_meet() {
        const IMPORTS: usize = 1_000;
        const LONG: usize = 4096;
        // SAFETY: a dense request's shape and strides are a static's (its layout is its range);
        // the GIL serializes registrations.
        let claim_now = |wanted: Wanted| Python::attach(|_| unsafe { claim(wanted) });
        Python::initialize();
        // Addresses only: the registry never reads the memory it registers.
        let base = Box::leak(vec![0u8; IMPORTS * 16 + LONG].into_boxed_slice()).as_ptr() as usize;
        let long_start = base + IMPORTS * 16;
        let mut imports: Vec<usize> = (0..IMPORTS)
            .map(|i| {
                let start = base + 16 * i;
                claim_now(dense(start, start + 8, false, CLAIMANT_IMPORT))
                    .unwrap_or_else(|_| panic!("import {i} refused"))
            })
            .collect();
        imports.push(
            claim_now(dense(long_start, long_start + LONG, false, CLAIMANT_IMPORT))
                .unwrap_or_else(|_| panic!("the long import refused")),
        );
        // The scanned slots hold the other tests' claims only.
        assert!(
            USED.load(Ordering::Relaxed) < IMPORTS,
            "imports in the scanned slots"
        );
        let everything = dense(base, long_start + LONG, false, CLAIMANT_ARGUMENT);
        let read = claim_now(everything).unwrap_or_else(|_| panic!("a read refused"));
        // SAFETY: handles `claim` gave, each released once.
        let release_now = |handle: usize| unsafe { release(handle) };
        release_now(read);
        for i in [0, 1, 499, IMPORTS - 1] {
            let gap = base + 16 * i + 8;
            let write = claim_now(dense(gap, gap + 8, true, CLAIMANT_ARGUMENT))
                .unwrap_or_else(|_| panic!("a write between imports {i} and {} refused", i + 1));
            release_now(write);
            let over = base + 16 * i + 4;
            let Err(conflict) = claim_now(dense(over, over + 8, true, CLAIMANT_ARGUMENT)) else {
                panic!("a write over import {i} granted");
            };
            assert_eq!(conflict.other_claimant, CLAIMANT_IMPORT);
            assert_eq!(conflict.conflict.other_written, 0);
        }
        let last = long_start + LONG - 1;
        let Err(conflict) = claim_now(dense(last, last + 1, true, CLAIMANT_ARGUMENT)) else {
            panic!("a write over the long import's last byte granted");
        };
        assert_eq!(conflict.other_claimant, CLAIMANT_IMPORT);
        let past = long_start + LONG;
        // (The byte past the buffer: only its address is claimed.)
        release_now(
            claim_now(dense(past, past + 1, true, CLAIMANT_ARGUMENT))
                .unwrap_or_else(|_| panic!("a write past the long import refused")),
        );
        for handle in imports {
            release_now(handle);
        }
        let everything = dense(base, long_start + LONG, true, CLAIMANT_ARGUMENT);
        release_now(
            claim_now(everything).unwrap_or_else(|_| panic!("released imports kept a write out")),
        );
    }

    /// ThreadSanitizer's canary: two threads write one location without synchronization (a
    /// data race, undefined behaviour on purpose). `make sanitize` runs it alone under the
    /// sanitizer and requires the race to be reported before it trusts the registry's clean
    /// run: a build the sanitizer did not instrument proves nothing. Never run otherwise.
    #[test]
    #[ignore = "a deliberate data race, for ThreadSanitizer to report (make sanitize)"]
    fn thread_sanitizer_canary() {
        static mut RACED: u64 = 0;
        let address = std::ptr::addr_of_mut!(RACED) as usize;
        let racer = std::thread::spawn(move || {
            // SAFETY: none: an unsynchronized write racing the one below, which the sanitizer
            // must report (the test's purpose); a u64 store cannot fault.
            unsafe { std::ptr::write_volatile(address as *mut u64, 1) };
        });
        // SAFETY: as above.
        unsafe { std::ptr::write_volatile(address as *mut u64, 2) };
        racer.join().expect("the racing thread");
    }

    /// A registry of another build, of version 1 (published first by an extension module
    /// built with an older dlbridge-pyo3): only its members are read (its table is shorter
    /// than this build's), its `claim` is called, and its conflicts, which cannot say what the
    /// other claim is, give a refusal that names both possibilities.
    #[test]
    fn a_table_of_version_1_is_called_as_one_and_its_refusals_name_both_possibilities() {
        /// Version 1's layout, and nothing past it.
        #[repr(C)]
        struct TableV1 {
            version: u64,
            claim:
                unsafe extern "C" fn(*const ClaimRequest, *mut usize, *mut ClaimConflict) -> c_int,
            release: unsafe extern "C" fn(usize),
        }
        /// Refuses every claim: a read claim of this call's first argument (or an import).
        unsafe extern "C" fn refuse(
            _request: *const ClaimRequest,
            _out_handle: *mut usize,
            out_conflict: *mut ClaimConflict,
        ) -> c_int {
            let conflict = ClaimConflict {
                same_thread: 1,
                other_written: 0,
                other_ordinal: 1,
                ordinal: 2,
            };
            // SAFETY: the caller's slot, of version 1's layout.
            unsafe { out_conflict.write(conflict) };
            1
        }
        unsafe extern "C" fn never_released(_handle: usize) {}
        static OLD: TableV1 = TableV1 {
            version: 1,
            claim: refuse,
            release: never_released,
        };
        let registry = Registry(NonNull::from(&OLD).cast());
        assert!(!registry.is_own());
        assert!(registry.claim_as().is_none(), "version 1 has no claim_as");
        let (shape, strides) = ([4i64], [1i64]);
        let wanted = Wanted {
            first: 0x1000,
            start: 0x1000,
            end: 0x1004,
            item_size: 1,
            ndim: 1,
            shape: shape.as_ptr(),
            strides: strides.as_ptr(),
            written: true,
            dense: true,
            claimant: CLAIMANT_ARGUMENT,
        };
        let Err(conflict) = claim_in(registry, wanted) else {
            panic!("the table refuses every claim");
        };
        assert_eq!(conflict.other_claimant, CLAIMANT_UNKNOWN);
        Python::initialize();
        let message = Python::attach(|_| refusal(&conflict, true).to_string());
        assert!(
            message.contains(
                "tensor argument 2 of this call (written) overlaps memory that another claim \
                 reads, which the process's aliasing registry"
            ),
            "{message}"
        );
        assert!(
            message.contains(
                "either tensor argument 1 (read) of this call, or a tensor imported into Rust \
                 that is still alive"
            ),
            "{message}"
        );
        // This build's table answers version 2, saying what the other claim is.
        let own = Registry(NonNull::from(&OWN_REGISTRY));
        assert!(own.is_own() && own.claim_as().is_some());
    }

    #[test]
    fn slot_indices_map_to_chunks() {
        assert_eq!(chunk_of(0), (0, 0));
        assert_eq!(chunk_of(63), (0, 63));
        assert_eq!(chunk_of(64), (1, 0));
        assert_eq!(chunk_of(191), (1, 127));
        assert_eq!(chunk_of(192), (2, 0));
        let mut expected = (0, 0);
        for index in 0..10_000 {
            assert_eq!(chunk_of(index), expected, "slot {index}");
            expected.1 += 1;
            if expected.1 == FIRST_CHUNK << expected.0 {
                expected = (expected.0 + 1, 0);
            }
        }
    }
}
