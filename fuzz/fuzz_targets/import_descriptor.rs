//! Arbitrary bytes -> a versioned or legacy managed tensor (version, flags, ndim, shape and
//! strides arrays, dtype, device, byte_offset, a data buffer of some size, a deleter or none)
//! -> import, validation, every view and the ndarray conversion.
//!
//! The oracle:
//! - import either fails with an error or succeeds;
//! - the deleter runs exactly once, either way (never when it is NULL);
//! - element access happens only when the harness's own arithmetic puts every element the
//!   descriptor reaches inside the buffer (the producer's side of the contract). Under
//!   AddressSanitizer any read outside it is a finding;
//! - the offsets dlbridge computes agree with the harness's.
#![no_main]

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use dlbridge::ffi::{DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use dlbridge::ndarray::{NdarrayTensorExt, NdarrayViewExt};
use dlbridge::{DataType, DataTypeCode, Device, DeviceType, Element, ManagedTensor, Version};
use half::{bf16, f16};
use libfuzzer_sys::fuzz_target;
use num_complex::Complex;

mod choices;
use choices::Choices;

static DELETES: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn delete_versioned(_: *mut DLManagedTensorVersioned) {
    DELETES.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn delete_legacy(_: *mut DLManagedTensor) {
    DELETES.fetch_add(1, Ordering::SeqCst);
}

/// The element offsets reached, by the harness's own (wide) arithmetic: (low, high) or None
/// when there are no elements.
fn reached(shape: &[i64], strides: Option<&[i64]>) -> Option<(i128, i128)> {
    if shape.iter().any(|&e| e <= 0) {
        return None;
    }
    let strides: Vec<i128> = match strides {
        Some(strides) => strides.iter().map(|&s| i128::from(s)).collect(),
        None => {
            let mut row_major = vec![0i128; shape.len()];
            let mut step = 1i128;
            for (stride, &extent) in row_major.iter_mut().zip(shape).rev() {
                *stride = step;
                step = step.saturating_mul(i128::from(extent));
            }
            row_major
        }
    };
    let (mut low, mut high) = (0i128, 0i128);
    for (&extent, &stride) in shape.iter().zip(&strides) {
        let reach = (i128::from(extent) - 1).checked_mul(stride)?;
        if reach < 0 {
            low = low.checked_add(reach)?;
        } else {
            high = high.checked_add(reach)?;
        }
    }
    Some((low, high))
}

/// Every typed access of `T`, when the tensor is of that type (the results are ignored:
/// refusals are fine, reads must stay in bounds).
fn touch<T: Element>(tensor: &mut ManagedTensor) {
    if tensor.view().dtype() != T::DTYPE {
        return;
    }
    let view = tensor.view();
    if let Ok(slice) = view.as_slice::<T>() {
        slice.iter().for_each(|v| {
            std::hint::black_box(*v);
        });
    }
    if let Ok(slice) = view.as_slice_memory_order::<T>() {
        std::hint::black_box(slice.len());
    }
    if let Ok(elements) = view.elements::<T>() {
        elements.iter().for_each(|v| {
            std::hint::black_box(*v);
        });
        let first = vec![0usize; elements.shape().len()];
        std::hint::black_box(elements.get(&first));
        std::hint::black_box(elements.to_vec().len());
    }
    if let Ok(array) = view.as_array::<T>() {
        array.iter().for_each(|v| {
            std::hint::black_box(*v);
        });
    }
    if let Ok(mut elements) = tensor.elements_mut::<T>() {
        for value in elements.iter_mut() {
            *value = std::hint::black_box(*value);
        }
    }
    if let Ok(mut array) = tensor.as_array_mut::<T>() {
        array.map_inplace(|value| *value = std::hint::black_box(*value));
    }
}

fn run(bytes: &[u8]) {
    let mut c = Choices(bytes);
    let versioned = c.byte() % 4 != 0;
    let version = if c.byte() % 8 != 0 {
        Version::new(1, u32::from(c.byte() % 5))
    } else {
        Version::new(u32::from(c.byte() % 4), u32::from(c.byte()))
    };
    let ndim: i32 = match c.byte() % 16 {
        0..=12 => i32::from(c.byte() % 5),
        13 => -i32::from(c.byte()) - 1,
        14 => 1024 + i32::from(c.byte() % 3),
        _ => c.u64() as i32,
    };
    // The arrays hold `ndim` values (the producer's side of the contract), up to 2048; a
    // larger ndim must be refused before they are read.
    let len = usize::try_from(ndim).unwrap_or(0).min(2048);
    let given = len.min(8);
    let mut shape: Vec<i64> = (0..given).map(|_| c.extent()).collect();
    shape.resize(len, 1);
    let null_shape = c.byte() % 32 == 0;
    let null_strides = c.byte() % 4 == 0;
    let mut strides: Vec<i64> = (0..given).map(|_| c.stride()).collect();
    strides.resize(len, 0);
    let code = match c.byte() % 4 {
        0 => c.byte() % 20,
        1 => 2,
        2 => 0,
        _ => 1,
    };
    let bits = match c.byte() % 8 {
        0 => 8,
        1 => 16,
        2 => 32,
        3 => 64,
        4 => 128,
        5 => 4,
        6 => 6,
        _ => c.byte(),
    };
    let lanes = if c.byte() % 8 == 0 {
        u16::from(c.byte() % 5)
    } else {
        1
    };
    let dtype = DataType::new(DataTypeCode(code), bits, lanes);
    let device_type = match c.byte() % 8 {
        0 => i32::from(c.byte()),
        1 => 2,
        2 => 13,
        _ => 1,
    };
    let byte_offset = match c.byte() % 8 {
        0..=4 => 0,
        5 => u64::from(c.byte() % 16) * 4,
        6 => u64::from(c.byte()),
        _ => c.u64(),
    };
    let flags = if c.byte() % 4 == 0 {
        c.u64()
    } else {
        u64::from(c.byte() % 8)
    };
    let with_deleter = c.byte() % 16 != 0;
    let buffer_bytes = usize::from(c.byte()) * 2;
    let null_data = c.byte() % 8 == 0;
    // 16-byte aligned storage (complex128 needs it), filled with the remaining bytes.
    let mut buffer = vec![0u128; buffer_bytes.div_ceil(16)];
    for (i, byte) in bytemuck_bytes(&mut buffer).iter_mut().enumerate() {
        *byte = bytes.get(i).copied().unwrap_or(0);
    }
    let data: *mut c_void = if null_data {
        std::ptr::null_mut()
    } else {
        buffer.as_mut_ptr().cast()
    };

    let descriptor = DLTensor {
        data,
        device: Device::new(DeviceType(device_type), c.byte() as i32),
        ndim,
        dtype,
        shape: if null_shape {
            std::ptr::null_mut()
        } else {
            shape.as_mut_ptr()
        },
        strides: if null_strides {
            std::ptr::null_mut()
        } else {
            strides.as_mut_ptr()
        },
        byte_offset,
    };

    // Whether every element the descriptor reaches lies in the buffer (by the harness).
    let size = dtype.size_in_bytes().map(|s| s as i128);
    let in_bounds = !null_data
        && !null_shape
        && ndim >= 0
        && len == ndim as usize
        && match (
            size,
            reached(&shape, (!null_strides).then_some(&strides[..])),
        ) {
            (Some(size), Some((low, high))) => {
                let first = i128::from(byte_offset);
                let start = low.checked_mul(size).and_then(|l| first.checked_add(l));
                // Checked throughout: 1024 dimensions of i64 extents and strides reach past
                // i128 (the harness's own overflow, found by the campaign of issue 33).
                let end = high
                    .checked_add(1)
                    .and_then(|h| h.checked_mul(size))
                    .and_then(|h| first.checked_add(h));
                matches!((start, end), (Some(start), Some(end))
                    if start >= 0 && end <= buffer_bytes as i128)
            }
            _ => false,
        };
    let harness_range = reached(&shape, (!null_strides).then_some(&strides[..]));
    // A tensor without elements reaches no memory at all: every access is allowed (and must
    // read nothing, NULL data included).
    let no_elements = !null_shape
        && ndim >= 0
        && len == ndim as usize
        && shape.iter().all(|&e| e >= 0)
        && shape.contains(&0);
    let in_bounds = in_bounds || no_elements;

    if std::env::var_os("DLBRIDGE_FUZZ_DEBUG").is_some() {
        eprintln!(
            "versioned={versioned} version={version} ndim={ndim} shape={:?} strides={:?} \
             dtype={dtype} device={} byte_offset={byte_offset} flags={flags:#x} \
             deleter={with_deleter} buffer={buffer_bytes} null_data={null_data} \
             in_bounds={in_bounds}",
            &shape[..given],
            (!null_strides).then_some(&strides[..given]),
            descriptor.device,
        );
    }
    DELETES.store(0, Ordering::SeqCst);
    if versioned {
        let mut managed = Box::new(DLManagedTensorVersioned {
            version,
            manager_ctx: std::ptr::null_mut(),
            deleter: with_deleter.then_some(delete_versioned as _),
            flags,
            dl_tensor: descriptor,
        });
        // SAFETY: a live tensor whose shape and strides hold `ndim` values (up to 2048),
        // handed over once; the box outlives the managed tensor (dropped below).
        let result = unsafe { ManagedTensor::from_raw_versioned(&mut *managed) };
        finish(result, in_bounds, harness_range);
        drop(managed);
    } else {
        let mut managed = Box::new(DLManagedTensor {
            dl_tensor: descriptor,
            manager_ctx: std::ptr::null_mut(),
            deleter: with_deleter.then_some(delete_legacy as _),
        });
        // SAFETY: as above.
        let result = unsafe { ManagedTensor::from_raw_legacy(&mut *managed) };
        finish(result, in_bounds, harness_range);
        drop(managed);
    }
    let expected = usize::from(with_deleter);
    assert_eq!(DELETES.load(Ordering::SeqCst), expected, "deleter calls");
    drop(buffer);
}

fn finish(
    result: dlbridge::Result<ManagedTensor>,
    in_bounds: bool,
    harness_range: Option<(i128, i128)>,
) {
    let Ok(mut tensor) = result else {
        return; // refused: the deleter has run; checked by the caller
    };
    let view = tensor.view();
    std::hint::black_box((view.shape(), view.strides(), view.flags(), view.version()));
    std::hint::black_box((view.is_c_contiguous(), view.is_f_contiguous()));
    std::hint::black_box((view.num_elements(), view.compact_byte_size()));
    if let Some((low, high)) = harness_range {
        let (their_low, their_high) = view.element_offset_range();
        if view.num_elements() > 0 && view.dtype().size_in_bytes().is_some() {
            assert_eq!((i128::from(their_low), i128::from(their_high)), (low, high));
        }
    }
    // Broadcast (zero-stride) layouts can describe 2^60 elements in a few bytes, and a walk
    // steps through every dimension per element (up to 1024 of extent 1): valid, but walking
    // them is no test of safety, only of patience (65536 elements of 1000 dimensions took 9 s
    // under the sanitizer, against the smoke run's 10 s timeout). The work is capped instead.
    let walk = view
        .num_elements()
        .saturating_mul(view.ndim().max(1) as u64);
    if in_bounds && view.device().is_host_readable() && walk <= 1 << 18 {
        touch::<u8>(&mut tensor);
        touch::<i8>(&mut tensor);
        touch::<i16>(&mut tensor);
        touch::<u16>(&mut tensor);
        touch::<i32>(&mut tensor);
        touch::<u32>(&mut tensor);
        touch::<i64>(&mut tensor);
        touch::<u64>(&mut tensor);
        touch::<f16>(&mut tensor);
        touch::<bf16>(&mut tensor);
        touch::<f32>(&mut tensor);
        touch::<f64>(&mut tensor);
        touch::<bool>(&mut tensor);
        touch::<Complex<f32>>(&mut tensor);
        touch::<Complex<f64>>(&mut tensor);
    }
    drop(tensor);
}

/// The bytes of a `u128` buffer.
fn bytemuck_bytes(buffer: &mut [u128]) -> &mut [u8] {
    // SAFETY: any byte pattern is a valid u8 and a valid u128; the length is exact.
    unsafe { std::slice::from_raw_parts_mut(buffer.as_mut_ptr().cast(), buffer.len() * 16) }
}

fuzz_target!(|bytes: &[u8]| run(bytes));
