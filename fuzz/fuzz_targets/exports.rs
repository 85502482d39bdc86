//! Arbitrary export requests -> `dlbridge`'s producer side: the kinds of tensor it exports
//! (a `Vec` or an `Arc<[T]>` through `Export::new`, with any shape, strides and flags; memory
//! of any owner and any data type, sub-byte ones included, through `Export::from_raw_parts`;
//! `ManagedTensor::zeros`), each finished as a versioned or a legacy tensor, then passed on
//! through a chain of re-exports: shared versioned or legacy (`share_versioned`,
//! `share_legacy`), copied (`to_compact_copy`), handed to a consumer as a raw pointer and
//! taken back (`into_raw`, `into_raw_versioned`, `into_raw_legacy`, `from_raw`).
//!
//! The oracle:
//! - `Export::new` accepts exactly the layouts the harness's own arithmetic puts inside the
//!   buffer (strides one per dimension, a shape without strides naming every element), and
//!   refuses the rest with an error;
//! - an export or a re-export refused for the legacy layout is one that cannot say what it
//!   must (a read-only tensor, sub-byte storage the legacy layout cannot tell);
//! - every tensor in the chain has the source's shape and data type, and the source's
//!   elements (compared byte for byte against the harness's gather of the source memory);
//!   a share keeps the memory and the read-only flag, a copy is flagged IS_COPIED, is
//!   writable and owns new memory;
//! - every tensor that crosses as a raw pointer passes the consumer's validation on the way
//!   back;
//! - once the chain is dropped, the owner of the memory has been dropped exactly once (a
//!   counted owner for `from_raw_parts`; the `Arc`'s count back to the harness's one clone).
//!
//! `DLBRIDGE_FUZZ_DEBUG=1` prints the request an input decodes to.
#![no_main]

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use dlbridge::{DataType, DataTypeCode, Device, DeviceType, Element, Error, Export, ManagedTensor};
use libfuzzer_sys::fuzz_target;

mod choices;
use choices::Choices;

/// Drops of the counted owner of `from_raw_parts` exports.
static OWNER_DROPS: AtomicUsize = AtomicUsize::new(0);

/// Memory whose drop is counted.
struct CountedOwner(#[allow(dead_code)] Vec<u64>);

impl Drop for CountedOwner {
    fn drop(&mut self) {
        OWNER_DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

/// The most elements the harness gathers and compares.
const MAX_COMPARED: u64 = 1 << 12;

/// What the source tensor should hold: its shape, its data type, and its elements' bytes in
/// row-major order (None where the harness does not gather them: sub-byte types, device
/// memory, too many elements).
struct Expected {
    shape: Vec<i64>,
    dtype: DataType,
    elements: Option<Vec<u8>>,
    read_only: bool,
}

/// The element offsets of a layout in row-major order, by wide arithmetic; None for a
/// layout with more than MAX_COMPARED elements.
fn offsets(shape: &[usize], strides: &[i128]) -> Option<Vec<i128>> {
    let count = shape
        .iter()
        .try_fold(1u64, |n, &e| n.checked_mul(e as u64))?;
    if count > MAX_COMPARED {
        return None;
    }
    let mut out = Vec::with_capacity(count as usize);
    if count == 0 {
        return Some(out);
    }
    let mut index = vec![0usize; shape.len()];
    loop {
        out.push(
            index
                .iter()
                .zip(strides)
                .map(|(&i, &s)| i as i128 * s)
                .sum(),
        );
        let mut dim = shape.len();
        loop {
            if dim == 0 {
                return Some(out);
            }
            dim -= 1;
            index[dim] += 1;
            if index[dim] < shape[dim] {
                break;
            }
            index[dim] = 0;
        }
    }
}

/// Row-major strides of `shape`, in elements.
fn row_major(shape: &[usize]) -> Vec<i128> {
    let mut strides = vec![0i128; shape.len()];
    let mut step = 1i128;
    for (stride, &extent) in strides.iter_mut().zip(shape).rev() {
        *stride = step;
        step = step.saturating_mul(extent.max(1) as i128);
    }
    strides
}

/// Whether the layout of `size`-byte elements reaches only elements `0..len` (the harness's side of
/// `Export::new`'s bounds check), and the offsets of its elements in row-major order where there
/// are few.
fn layout_in(
    shape: &[usize],
    strides: Option<&[i64]>,
    len: usize,
    size: usize,
) -> (bool, Option<Vec<i128>>) {
    if shape.iter().any(|&e| e > i64::MAX as usize) {
        return (false, None);
    }
    // No elements when an extent is 0, however large the others.
    let count = if shape.contains(&0) {
        Some(0)
    } else {
        shape
            .iter()
            .try_fold(1u128, |n, &e| n.checked_mul(e as u128))
            // The elements' bytes (broadcast or not) must fit an isize, as every consumer
            // computes them.
            .filter(|&n| {
                n.checked_mul(size as u128)
                    .is_some_and(|b| b <= i64::MAX as u128)
            })
    };
    let Some(count) = count else {
        return (false, None);
    };
    let strides: Vec<i128> = match strides {
        None => {
            let fits = count == len as u128;
            return (
                fits,
                fits.then(|| offsets(shape, &row_major(shape))).flatten(),
            );
        }
        Some(strides) if strides.len() != shape.len() => return (false, None),
        Some(strides) => strides.iter().map(|&s| s as i128).collect(),
    };
    if count == 0 {
        return (true, Some(Vec::new()));
    }
    let (mut low, mut high) = (0i128, 0i128);
    for (&extent, &stride) in shape.iter().zip(&strides) {
        let reach = (extent as i128 - 1) * stride;
        if reach < 0 {
            low += reach;
        } else {
            high += reach;
        }
    }
    // The core computes offsets in i64: a reach past it is refused (an overflow), and is
    // out of any buffer anyway.
    let fits = low >= 0 && high < len as i128 && high <= i64::MAX as i128;
    (fits, fits.then(|| offsets(shape, &strides)).flatten())
}

/// The bytes of the elements at `offsets` (in elements of `size` bytes) of `memory`.
fn gather(memory: &[u8], offsets: &[i128], size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(offsets.len() * size);
    for &offset in offsets {
        let start = offset as usize * size;
        out.extend_from_slice(&memory[start..start + size]);
    }
    out
}

/// The tensor's elements' bytes in row-major order, as dlbridge reads them (its compact
/// copy), where the harness compares them.
fn elements_of(tensor: &ManagedTensor) -> Option<Vec<u8>> {
    let view = tensor.view();
    if !view.device().is_host_readable()
        || view.dtype().size_in_bytes().is_none()
        || view.num_elements() > MAX_COMPARED
    {
        return None;
    }
    let copy = view
        .to_compact_copy()
        .expect("a compact copy of a host tensor");
    let bytes = copy.view().compact_byte_size() as usize;
    if bytes == 0 {
        return Some(Vec::new());
    }
    // SAFETY: the copy is compact, host memory of `bytes` bytes, alive for this borrow.
    let slice = unsafe { std::slice::from_raw_parts(copy.view().data_ptr().cast::<u8>(), bytes) };
    Some(slice.to_vec())
}

/// Checks one tensor of the chain against what the source holds.
fn check(tensor: &ManagedTensor, expected: &Expected, what: &str) {
    let view = tensor.view();
    assert_eq!(view.shape(), &expected.shape[..], "{what}: shape");
    assert_eq!(view.dtype(), expected.dtype, "{what}: dtype");
    if let (Some(want), Some(got)) = (&expected.elements, elements_of(tensor)) {
        assert_eq!(&got, want, "{what}: elements");
    }
}

/// Whether a legacy export of `dtype` with these flags is one the legacy layout cannot
/// express (the refusals the oracle allows).
fn legacy_refusal(error: &Error) -> bool {
    matches!(
        error,
        Error::ReadOnlyLegacyExport
            | Error::PaddedLegacyExport { .. }
            | Error::PackedLegacyExport { .. }
            | Error::AmbiguousLegacySubByte { .. }
    )
}

/// A data type for `from_raw_parts`: mostly whole-byte ones, some sub-byte, some vectors.
fn any_dtype(c: &mut Choices<'_>) -> DataType {
    let code = DataTypeCode(c.byte() % 18);
    let bits = match c.byte() % 8 {
        0 => 1,
        1 => 4,
        2 => 6,
        3 => 16,
        4 => 32,
        5 => 64,
        6 => c.byte(),
        _ => 8,
    };
    let lanes = match c.byte() % 8 {
        0 => 2,
        1 => 4,
        2 => 3,
        _ => 1,
    };
    DataType::new(code, bits, lanes)
}

/// Decodes the shape: mostly small, some edge extents.
fn any_shape(c: &mut Choices<'_>) -> Vec<usize> {
    let ndim = usize::from(c.byte() % 5);
    (0..ndim)
        .map(|_| match c.byte() % 16 {
            15 => c.extent() as usize, // negative read as huge, or anything
            n => usize::from(n % 5),
        })
        .collect()
}

fn any_strides(c: &mut Choices<'_>, ndim: usize) -> Option<Vec<i64>> {
    match c.byte() % 4 {
        0 | 1 => None,
        2 => Some((0..ndim).map(|_| c.stride() as i64).collect()),
        _ => {
            let mut strides: Vec<i64> = (0..ndim).map(|_| i64::from(c.byte() % 9) - 4).collect();
            if c.byte().is_multiple_of(8) {
                strides.pop(); // one too few
            }
            Some(strides)
        }
    }
}

/// Finishes an export: strides, flags, layout.
fn finish<O: Send + 'static>(
    export: Export<'_, O>,
    strides: Option<&[i64]>,
    read_only: bool,
    copied: bool,
    legacy: bool,
) -> dlbridge::Result<ManagedTensor> {
    let export = match strides {
        Some(strides) => export.strides(strides),
        None => export,
    }
    .read_only(read_only)
    .is_copied(copied);
    if legacy {
        export.into_legacy()
    } else {
        export.into_versioned()
    }
}

/// `Export::new` over a buffer of `T` elements filled from the input: the export, what it
/// holds, and the harness's verdict on its layout.
fn new_export<T: Element + Copy>(
    c: &mut Choices<'_>,
    legacy: bool,
    keep: &mut Option<Arc<[T]>>,
) -> (dlbridge::Result<ManagedTensor>, Expected, bool) {
    let shape = any_shape(c);
    let strides = any_strides(c, shape.len());
    let len = usize::from(c.byte() % 64);
    let size = std::mem::size_of::<T>();
    let raw: Vec<u8> = (0..len * size).map(|_| c.byte()).collect();
    let values: Vec<T> = raw
        .chunks_exact(size)
        // SAFETY: `chunk` holds `size_of::<T>()` bytes; every T used here (integers, floats)
        // is valid for any bit pattern.
        .map(|chunk| unsafe { std::ptr::read_unaligned(chunk.as_ptr().cast::<T>()) })
        .collect();
    let read_only_asked = c.byte().is_multiple_of(4);
    let copied = c.byte().is_multiple_of(4);
    let (fits, element_offsets) = layout_in(&shape, strides.as_deref(), len, size);
    let shared = c.byte().is_multiple_of(2);
    let result = if shared {
        let buffer: Arc<[T]> = values.into();
        if c.byte().is_multiple_of(2) {
            *keep = Some(Arc::clone(&buffer));
        }
        finish(
            Export::new(buffer, &shape),
            strides.as_deref(),
            read_only_asked,
            copied,
            legacy,
        )
    } else {
        finish(
            Export::new(values, &shape),
            strides.as_deref(),
            read_only_asked,
            copied,
            legacy,
        )
    };
    let read_only = read_only_asked || keep.is_some();
    let expected = Expected {
        shape: shape.iter().map(|&e| e as i64).collect(),
        dtype: T::DTYPE,
        elements: element_offsets.map(|offsets| gather(&raw, &offsets, size)),
        read_only,
    };
    // A copy flag on memory the harness still shares is refused, whatever the layout.
    let accepted = fits && !(copied && keep.is_some());
    (result, expected, accepted)
}

fn run(bytes: &[u8]) {
    let mut c = Choices(bytes);
    OWNER_DROPS.store(0, Ordering::SeqCst);
    let legacy = c.byte().is_multiple_of(3);
    let kind = c.byte() % 6;
    let debug = std::env::var_os("DLBRIDGE_FUZZ_DEBUG").is_some();
    let mut keep_u8: Option<Arc<[u8]>> = None;
    let mut keep_u16: Option<Arc<[u16]>> = None;
    let mut keep_f64: Option<Arc<[f64]>> = None;
    let mut counted = false;
    let (result, expected, accepted) = match kind {
        0 | 1 => new_export::<u8>(&mut c, legacy, &mut keep_u8),
        2 => new_export::<u16>(&mut c, legacy, &mut keep_u16),
        3 => new_export::<f64>(&mut c, legacy, &mut keep_f64),
        4 => {
            // Any owner, any data type, a compact layout (the caller vouches for the
            // memory: the harness allocates all of it), on the CPU or another device.
            let dtype = any_dtype(&mut c);
            let shape: Vec<usize> = (0..usize::from(c.byte() % 4))
                .map(|_| usize::from(c.byte() % 6))
                .collect();
            let padded = c.byte().is_multiple_of(4);
            let elements: u64 = shape.iter().map(|&e| e as u64).product();
            let Some(storage) = dtype.storage_bytes(elements, padded) else {
                return;
            };
            let mut words = vec![0u64; (storage as usize).div_ceil(8).max(1)];
            for word in words.iter_mut() {
                *word = c.u64();
            }
            let raw: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
            let device = match c.byte() % 4 {
                0 => Device::new(DeviceType::CUDA, 0),
                1 => Device::new(DeviceType::CUDA_HOST, 0),
                _ => Device::CPU,
            };
            let read_only = c.byte().is_multiple_of(4);
            let data: *mut c_void = words.as_mut_ptr().cast();
            counted = true;
            // SAFETY: `words` moves into the owner without moving its heap memory, which holds
            // the compact storage of `elements` elements of `dtype` (`storage_bytes`, padded
            // as flagged); nothing else uses it.
            let export =
                unsafe { Export::from_raw_parts(CountedOwner(words), data, dtype, device, &shape) }
                    .subbyte_padded(padded)
                    .read_only(read_only);
            let result = if legacy {
                export.into_legacy()
            } else {
                export.into_versioned()
            };
            let size = dtype.size_in_bytes();
            let compared = device.is_host_readable() && size.is_some() && elements <= MAX_COMPARED;
            let expected = Expected {
                shape: shape.iter().map(|&e| e as i64).collect(),
                dtype,
                elements: compared.then(|| raw[..storage as usize].to_vec()),
                read_only,
            };
            // Refused only where DLPack cannot say it: sub-byte padding on a whole-byte type,
            // an invalid data type (no bits or lanes), or the legacy layout's limits.
            (result, expected, true)
        }
        _ => {
            let dtype = any_dtype(&mut c);
            let shape: Vec<usize> = (0..usize::from(c.byte() % 4))
                .map(|_| usize::from(c.byte() % 6))
                .collect();
            let result = ManagedTensor::zeros(dtype, &shape);
            let size = dtype.size_in_bytes();
            let elements: usize = shape.iter().product();
            let expected = Expected {
                shape: shape.iter().map(|&e| e as i64).collect(),
                dtype,
                elements: size.map(|size| vec![0u8; size * elements]),
                read_only: false,
            };
            (result, expected, true)
        }
    };
    if debug {
        eprintln!(
            "kind={kind} legacy={legacy} shape={:?} dtype={} read_only={} accepted={accepted} \
             result={:?}",
            expected.shape,
            expected.dtype,
            expected.read_only,
            result.as_ref().map(|t| t.view().strides().to_vec()),
        );
    }
    match (&result, kind) {
        (Ok(_), 0..=3) => assert!(accepted, "Export::new accepted a layout outside its buffer"),
        (Err(error), 0..=3) => assert!(
            !accepted || legacy && legacy_refusal(error),
            "Export::new refused a valid layout: {error}"
        ),
        _ => {}
    }
    if let Ok(tensor) = result {
        check(&tensor, &expected, "the export");
        if !legacy {
            assert_eq!(
                tensor.view().is_read_only(),
                expected.read_only,
                "read-only"
            );
        }
        chain(&mut c, tensor, &expected);
    }
    if counted {
        assert_eq!(OWNER_DROPS.load(Ordering::SeqCst), 1, "the owner's drops");
    }
    if let Some(keep) = keep_u8 {
        assert_eq!(
            Arc::strong_count(&keep),
            1,
            "the Arc's owners after the chain"
        );
    }
    if let Some(keep) = keep_u16 {
        assert_eq!(
            Arc::strong_count(&keep),
            1,
            "the Arc's owners after the chain"
        );
    }
    if let Some(keep) = keep_f64 {
        assert_eq!(
            Arc::strong_count(&keep),
            1,
            "the Arc's owners after the chain"
        );
    }
}

/// Up to four re-exports of `tensor`, each checked, the earlier ones kept alive until the
/// end (as a consumer holding shares would).
fn chain(c: &mut Choices<'_>, tensor: ManagedTensor, expected: &Expected) {
    let mut held: Vec<Arc<ManagedTensor>> = Vec::new();
    let mut current = tensor;
    for step in 0..4 {
        let source_read_only = current.view().is_read_only();
        let source_ptr = current.view().data_ptr();
        let next = match c.byte() % 8 {
            0 => break,
            1 => {
                let source = Arc::new(current);
                held.push(Arc::clone(&source));
                let shared = source.share_versioned().expect("a versioned share");
                assert_eq!(
                    shared.view().data_ptr(),
                    source_ptr,
                    "a share keeps the memory"
                );
                assert_eq!(
                    shared.view().is_read_only(),
                    source_read_only,
                    "share: read-only"
                );
                shared
            }
            2 => {
                let source = Arc::new(current);
                held.push(Arc::clone(&source));
                match source.share_legacy() {
                    Ok(shared) => {
                        assert_eq!(shared.view().data_ptr(), source_ptr, "a share keeps memory");
                        shared
                    }
                    Err(error) => {
                        assert!(legacy_refusal(&error), "a legacy share refused: {error}");
                        return;
                    }
                }
            }
            3 => {
                // Copies up to 64 MiB are made; from 1 PiB on, no allocator can give the bytes
                // and the copy must say so (OutOfMemory); between the two, nothing is asked (a
                // copy of gigabytes proves nothing but patience).
                let bytes = current.view().compact_byte_size();
                if bytes > 1 << 26 && bytes < 1 << 50 {
                    break;
                }
                let copied = current.view().to_compact_copy();
                match copied {
                    Ok(copy) => {
                        let view = copy.view();
                        assert!(view.flags().is_copied(), "a copy is flagged IS_COPIED");
                        assert!(!view.is_read_only(), "a copy is writable");
                        assert!(view.is_c_contiguous(), "a copy is compact");
                        assert!(
                            view.num_elements() == 0 || view.data_ptr() != source_ptr,
                            "a copy owns new memory"
                        );
                        held.push(Arc::new(current));
                        copy
                    }
                    Err(Error::NotHostReadable { .. }) => {
                        assert!(!current.view().device().is_host_readable());
                        return;
                    }
                    Err(Error::OutOfMemory { bytes: asked }) => {
                        assert!(asked >= 1 << 50, "a copy of {asked} bytes out of memory");
                        return;
                    }
                    Err(error) => panic!("a copy refused: {error}"),
                }
            }
            4 => {
                // Handed to a consumer as a raw pointer, which validates it.
                let raw = current.into_raw();
                // SAFETY: the pointer of a live tensor this harness owned, handed over once.
                unsafe { ManagedTensor::from_raw(raw) }.expect("the consumer's validation")
            }
            5 => match current.into_raw_versioned() {
                // SAFETY: as above.
                Ok(raw) => unsafe { ManagedTensor::from_raw_versioned(raw) }
                    .expect("the consumer's validation"),
                Err(error) => panic!("into_raw_versioned refused: {error}"),
            },
            _ => match current.into_raw_legacy() {
                // SAFETY: as above.
                Ok(raw) => unsafe { ManagedTensor::from_raw_legacy(raw) }
                    .expect("the consumer's validation"),
                Err(error) => {
                    assert!(legacy_refusal(&error), "into_raw_legacy refused: {error}");
                    return;
                }
            },
        };
        check(&next, expected, &format!("re-export {step}"));
        current = next;
    }
    drop(current);
    drop(held);
}

fuzz_target!(|bytes: &[u8]| run(bytes));
