//! The C functions of `c/c_interop.h`, declared once for the program and the test, with the
//! report the C consumer fills. `c_interop.h` documents each function; what a caller must
//! uphold is repeated here.
//!
//! Every producer function takes a deleter counter: the tensor's deleter increments it
//! (atomically) after freeing everything the producer allocated, so the Rust side can prove
//! that the C deleter ran, and ran once. The counter must outlive the tensor.

use std::sync::atomic::AtomicU32;

use dlbridge::ManagedTensor;
use dlbridge::ffi::{DLManagedTensor, DLManagedTensorVersioned};

/// `C_PRODUCER_SENTINEL`: the value of the padding floats that the transposed tensor's
/// `byte_offset` skips.
pub const PRODUCER_SENTINEL: f32 = -1000.0;
/// `C_PRODUCER_PADDING`: how many padding floats precede the transposed tensor's first
/// element.
pub const PRODUCER_PADDING: u64 = 2;

/// `C_CONSUMER_COPY_CAPACITY`: how many elements the consumer copies into its report.
pub const CONSUMER_COPY_CAPACITY: usize = 16;

/// The consumer's status values (`C_CONSUMER_*`).
pub mod status {
    /// The tensor was read, written unless READ_ONLY, and released.
    pub const OK: i32 = 0;
    /// The tensor pointer was NULL: nothing read or released.
    pub const NULL_TENSOR: i32 = 1;
    /// A major version the consumer does not know: released without reading anything else.
    pub const UNSUPPORTED_VERSION: i32 = 2;
    /// Not CPU memory: released unread.
    pub const NOT_CPU: i32 = 3;
    /// Not float32 with one lane: released unread.
    pub const NOT_FLOAT32: i32 = 4;
    /// Too many dimensions, or a negative extent: released unread.
    pub const BAD_SHAPE: i32 = 5;
}

/// `c_consumer_report`: what the C consumer saw and did. The same fields in the same order
/// as the C struct; the test compares its size with `c_consumer_report_size()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ConsumerReport {
    /// One of [`status`]'s values.
    pub status: i32,
    /// The tensor's major version (0 for a legacy tensor).
    pub version_major: u32,
    /// The tensor's minor version (0 for a legacy tensor).
    pub version_minor: u32,
    /// The tensor's number of dimensions.
    pub ndim: i32,
    /// The tensor's flags (0 for a legacy tensor, which has none).
    pub flags: u64,
    /// 1 when the consumer multiplied the elements in place, 0 when it only read them.
    pub wrote: i32,
    /// How many times the consumer called the tensor's deleter.
    pub deleter_calls: i32,
    /// How many values [`ConsumerReport::elements`] holds.
    pub copied: i32,
    /// The tensor's number of elements.
    pub num_elements: i64,
    /// The sum of the elements as the consumer received them.
    pub sum_before: f64,
    /// The sum after the consumer's write (the same as `sum_before` when it did not write).
    pub sum_after: f64,
    /// The first elements after the write, in row-major order of their indices.
    pub elements: [f32; CONSUMER_COPY_CAPACITY],
}

impl ConsumerReport {
    /// The elements the consumer copied out, after its write.
    pub fn elements(&self) -> &[f32] {
        let copied = usize::try_from(self.copied).unwrap_or(0);
        &self.elements[..copied.min(CONSUMER_COPY_CAPACITY)]
    }

    /// Whether the tensor was flagged READ_ONLY.
    pub fn read_only(&self) -> bool {
        self.flags & dlbridge::Flags::READ_ONLY.bits() != 0
    }
}

unsafe extern "C" {
    /// A `rows` x `cols` float32 matrix, row-major and writable, element (r, c) holding
    /// `r * cols + c + 1`; NULL for a negative extent or when out of memory.
    ///
    /// The caller owns the tensor: it must call its deleter once (or hand it to something that
    /// will, such as `dlbridge::ManagedTensor::from_raw_versioned`), and `deleter_calls` must
    /// be valid until then.
    pub fn c_producer_matrix(
        rows: i64,
        cols: i64,
        deleter_calls: *const AtomicU32,
    ) -> *mut DLManagedTensorVersioned;

    /// The transpose of `c_producer_matrix(rows, cols)` without a copy: `cols` x `rows`,
    /// strides `(1, cols)`, `byte_offset` skipping [`PRODUCER_PADDING`] sentinel floats,
    /// flagged READ_ONLY. Ownership as for [`c_producer_matrix`].
    pub fn c_producer_transposed(
        rows: i64,
        cols: i64,
        deleter_calls: *const AtomicU32,
    ) -> *mut DLManagedTensorVersioned;

    /// A legacy `DLManagedTensor`: a float32 vector of `n` elements, element `i` holding
    /// `i + 0.5`. Ownership as for [`c_producer_matrix`].
    pub fn c_producer_legacy_vector(
        n: i64,
        deleter_calls: *const AtomicU32,
    ) -> *mut DLManagedTensor;

    /// `sizeof(c_consumer_report)`.
    pub fn c_consumer_report_size() -> usize;

    /// Takes ownership of `tensor` (a live tensor nobody else will delete or use, or NULL):
    /// sums its float32 elements, multiplies them by `factor` in place unless it is flagged
    /// READ_ONLY, fills `report` (valid for writes, or NULL) and calls the deleter once.
    /// Returns the status.
    pub fn c_consumer_scale_versioned(
        tensor: *mut DLManagedTensorVersioned,
        factor: f32,
        report: *mut ConsumerReport,
    ) -> i32;

    /// As [`c_consumer_scale_versioned`], for a legacy tensor, which it always writes: a
    /// legacy tensor cannot say that it is read-only.
    pub fn c_consumer_scale_legacy(
        tensor: *mut DLManagedTensor,
        factor: f32,
        report: *mut ConsumerReport,
    ) -> i32;
}

/// Hands `tensor` to the C consumer as a `DLManagedTensorVersioned*`
/// ([`ManagedTensor::into_raw_versioned`]: a legacy tensor is first shared as a versioned one,
/// read-only unless its writability is known); the consumer writes it unless it is flagged
/// READ_ONLY and calls its deleter. Returns the consumer's report.
pub fn scale_in_c(tensor: ManagedTensor, factor: f32) -> dlbridge::Result<ConsumerReport> {
    let raw = tensor.into_raw_versioned()?;
    let mut report = ConsumerReport::default();
    // SAFETY: `raw` is a live tensor whose ownership `into_raw_versioned` gave up, so the
    // consumer is its only user and calls its deleter once; `report` is valid for writes.
    unsafe { c_consumer_scale_versioned(raw, factor, &mut report) };
    Ok(report)
}

/// Hands `tensor` to the C consumer as a legacy `DLManagedTensor*`
/// ([`ManagedTensor::into_raw_legacy`], which refuses a read-only tensor: the legacy consumer
/// writes whatever it gets). Returns the consumer's report.
pub fn scale_in_c_legacy(tensor: ManagedTensor, factor: f32) -> dlbridge::Result<ConsumerReport> {
    let raw = tensor.into_raw_legacy()?;
    let mut report = ConsumerReport::default();
    // SAFETY: `raw` is a live tensor whose ownership `into_raw_legacy` gave up, so the
    // consumer is its only user and calls its deleter once; `report` is valid for writes.
    unsafe { c_consumer_scale_legacy(raw, factor, &mut report) };
    Ok(report)
}
