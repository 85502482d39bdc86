//! A simulated foreign producer: builds managed tensors the way a C library would, with a
//! deleter that counts its calls, so tests can assert that every tensor is released exactly
//! once.
#![allow(dead_code)]

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use dlbridge::ffi::{DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use dlbridge::{DataType, Device, Flags, Version};

/// What the producer's deleter records.
#[derive(Default)]
pub struct DeleterLog {
    pub calls: AtomicUsize,
    pub threads: Mutex<Vec<ThreadId>>,
}

impl DeleterLog {
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

/// Everything the producer allocates for one tensor; freed by the deleter.
struct Context {
    _shape: Vec<i64>,
    _strides: Vec<i64>,
    _data: Vec<u64>,
    log: Arc<DeleterLog>,
}

/// How the foreign tensor is to be made. Every field is sent as is, however wrong.
#[derive(Clone, Debug)]
pub struct ForeignSpec {
    pub version: Version,
    pub flags: Flags,
    pub dtype: DataType,
    pub device: Device,
    /// `None`: send `ndim = shape.len()`; `Some(n)`: send `n` whatever the shape.
    pub ndim: Option<i32>,
    pub shape: Option<Vec<i64>>,
    /// `None` sends NULL strides.
    pub strides: Option<Vec<i64>>,
    /// Bytes of data; `None` sends NULL data.
    pub data: Option<Vec<u8>>,
    /// Sent as `data` instead of the buffer's address, when set.
    pub data_address: Option<usize>,
    pub byte_offset: u64,
    pub with_deleter: bool,
}

impl ForeignSpec {
    /// A compact row-major float32 CPU tensor of `shape` holding 0, 1, 2, ...
    pub fn f32(shape: &[i64]) -> Self {
        let count: i64 = shape.iter().product();
        let data: Vec<u8> = (0..count.max(0))
            .flat_map(|i| (i as f32).to_ne_bytes())
            .collect();
        let mut strides = vec![0; shape.len()];
        dlbridge::layout::fill_row_major_strides(shape, &mut strides);
        ForeignSpec {
            version: Version::CURRENT,
            flags: Flags::NONE,
            dtype: DataType::FLOAT32,
            device: Device::CPU,
            ndim: None,
            shape: Some(shape.to_vec()),
            strides: Some(strides),
            data: Some(data),
            data_address: None,
            byte_offset: 0,
            with_deleter: true,
        }
    }

    /// Allocates the descriptor pieces; returns the DLTensor and the context that owns them.
    fn parts(&self, log: &Arc<DeleterLog>) -> (DLTensor, Box<Context>) {
        let shape = self.shape.clone().unwrap_or_default();
        let strides = self.strides.clone().unwrap_or_default();
        let bytes = self.data.clone().unwrap_or_default();
        let mut data = vec![0u64; bytes.len().div_ceil(8).max(1)];
        // SAFETY: `data` holds at least `bytes.len()` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), data.as_mut_ptr().cast(), bytes.len())
        };
        let mut context = Box::new(Context {
            _shape: shape,
            _strides: strides,
            _data: data,
            log: Arc::clone(log),
        });
        let data_ptr: *mut c_void = match (self.data_address, &self.data) {
            (Some(address), _) => std::ptr::without_provenance_mut(address),
            (None, Some(_)) => context._data.as_mut_ptr().cast(),
            (None, None) => std::ptr::null_mut(),
        };
        let tensor = DLTensor {
            data: data_ptr,
            device: self.device,
            ndim: self
                .ndim
                .unwrap_or(self.shape.as_ref().map_or(0, |s| s.len() as i32)),
            dtype: self.dtype,
            shape: if self.shape.is_some() {
                context._shape.as_mut_ptr()
            } else {
                std::ptr::null_mut()
            },
            strides: if self.strides.is_some() {
                context._strides.as_mut_ptr()
            } else {
                std::ptr::null_mut()
            },
            byte_offset: self.byte_offset,
        };
        (tensor, context)
    }

    /// A `DLManagedTensorVersioned*` as a C producer would hand it over.
    pub fn versioned(&self) -> (*mut DLManagedTensorVersioned, Arc<DeleterLog>) {
        let log = Arc::new(DeleterLog::default());
        let (dl_tensor, context) = self.parts(&log);
        let managed = Box::new(DLManagedTensorVersioned {
            version: self.version,
            manager_ctx: Box::into_raw(context).cast(),
            deleter: self.with_deleter.then_some(delete_versioned as _),
            flags: self.flags.bits(),
            dl_tensor,
        });
        (Box::into_raw(managed), log)
    }

    /// A legacy `DLManagedTensor*` (flags and version are not sent).
    pub fn legacy(&self) -> (*mut DLManagedTensor, Arc<DeleterLog>) {
        let log = Arc::new(DeleterLog::default());
        let (dl_tensor, context) = self.parts(&log);
        let managed = Box::new(DLManagedTensor {
            dl_tensor,
            manager_ctx: Box::into_raw(context).cast(),
            deleter: self.with_deleter.then_some(delete_legacy as _),
        });
        (Box::into_raw(managed), log)
    }
}

fn record(ctx: *mut c_void) {
    // SAFETY: made by `Box::into_raw` in `ForeignSpec`, freed once here.
    let context = unsafe { Box::from_raw(ctx.cast::<Context>()) };
    context.log.calls.fetch_add(1, Ordering::SeqCst);
    context
        .log
        .threads
        .lock()
        .unwrap()
        .push(std::thread::current().id());
}

unsafe extern "C" fn delete_versioned(managed: *mut DLManagedTensorVersioned) {
    // SAFETY: made by `ForeignSpec::versioned`; only the stable prefix is read.
    let managed = unsafe { Box::from_raw(managed) };
    record(managed.manager_ctx);
}

unsafe extern "C" fn delete_legacy(managed: *mut DLManagedTensor) {
    // SAFETY: made by `ForeignSpec::legacy`.
    let managed = unsafe { Box::from_raw(managed) };
    record(managed.manager_ctx);
}

/// Frees a versioned tensor made with `with_deleter: false`, as its producer eventually would
/// by other means (this counts as a deleter call in its log).
///
/// # Safety
///
/// `managed` must come from `ForeignSpec::versioned` and not be freed yet.
pub unsafe fn release_versioned(managed: *mut DLManagedTensorVersioned) {
    // SAFETY: forwarded.
    unsafe { delete_versioned(managed) }
}

/// As [`release_versioned`], for a legacy tensor.
///
/// # Safety
///
/// `managed` must come from `ForeignSpec::legacy` and not be freed yet.
pub unsafe fn release_legacy(managed: *mut DLManagedTensor) {
    // SAFETY: forwarded.
    unsafe { delete_legacy(managed) }
}
