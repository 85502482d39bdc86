//! Criterion benchmarks of the core: import + validate + drop of a foreign tensor, export of a
//! Vec + drop, and typed access. Run with `cargo bench -p dlbridge-benches`; results and the
//! reference command are in BENCHMARKS.md.

use std::ffi::c_void;
use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use dlbridge::ffi::{DLManagedTensorVersioned, DLTensor};
use dlbridge::ndarray::NdarrayViewExt;
use dlbridge::{DataType, Device, Export, ManagedTensor, TensorView, Version};

/// A foreign producer's deleter that owns nothing (the tensor is reused across iterations),
/// so the benchmark measures dlbridge, not a C allocator.
unsafe extern "C" fn keep(_: *mut DLManagedTensorVersioned) {}

/// A 4-d float32 CPU tensor (2x3x4x5, row-major strides) as a C producer lays it out.
struct ForeignTensor {
    _shape: Box<[i64; 4]>,
    _strides: Box<[i64; 4]>,
    _data: Vec<f32>,
    managed: Box<DLManagedTensorVersioned>,
}

impl ForeignTensor {
    fn new() -> Self {
        let mut shape = Box::new([2i64, 3, 4, 5]);
        let mut strides = Box::new([60i64, 20, 5, 1]);
        let mut data = vec![0f32; 120];
        let managed = Box::new(DLManagedTensorVersioned {
            version: Version::CURRENT,
            manager_ctx: std::ptr::null_mut::<c_void>(),
            deleter: Some(keep),
            flags: 0,
            dl_tensor: DLTensor {
                data: data.as_mut_ptr().cast(),
                device: Device::CPU,
                ndim: 4,
                dtype: DataType::FLOAT32,
                shape: shape.as_mut_ptr(),
                strides: strides.as_mut_ptr(),
                byte_offset: 0,
            },
        });
        ForeignTensor {
            _shape: shape,
            _strides: strides,
            _data: data,
            managed,
        }
    }
}

fn import(c: &mut Criterion) {
    let mut foreign = ForeignTensor::new();
    let ptr: *mut DLManagedTensorVersioned = &mut *foreign.managed;
    c.bench_function("import_validate_drop_4d_versioned", |b| {
        b.iter(|| {
            // SAFETY: a live tensor whose deleter does nothing, so it can be imported again.
            let tensor = unsafe { ManagedTensor::from_raw_versioned(black_box(ptr)) };
            drop(black_box(tensor));
        })
    });
    c.bench_function("import_validate_as_slice_drop_4d_versioned", |b| {
        b.iter(|| {
            // SAFETY: as above.
            let tensor = unsafe { ManagedTensor::from_raw_versioned(black_box(ptr)) }.unwrap();
            black_box(tensor.view().as_slice::<f32>().unwrap().len());
        })
    });
}

fn export(c: &mut Criterion) {
    c.bench_function("export_vec_drop_4d_versioned", |b| {
        b.iter_batched(
            || vec![0f32; 120],
            |data| {
                let tensor = Export::new(data, black_box(&[2, 3, 4, 5]))
                    .into_versioned()
                    .unwrap();
                drop(black_box(tensor));
            },
            BatchSize::SmallInput,
        )
    });
    c.bench_function("export_vec_into_raw_4d_versioned", |b| {
        b.iter_batched(
            || vec![0f32; 120],
            |data| {
                let raw = Export::new(data, black_box(&[2, 3, 4, 5]))
                    .into_versioned()
                    .unwrap()
                    .into_raw();
                // SAFETY: our own export, deleted once, as a consumer would.
                unsafe { black_box(raw).delete() };
            },
            BatchSize::SmallInput,
        )
    });
}

fn borrowed_view(c: &mut Criterion) {
    let foreign = ForeignTensor::new();
    let descriptor: &DLTensor = &foreign.managed.dl_tensor;
    c.bench_function("borrow_validate_array_view_4d", |b| {
        b.iter(|| {
            // SAFETY: the descriptor and its data outlive the view.
            let view = unsafe { TensorView::from_dltensor(black_box(descriptor)) }.unwrap();
            let array = view.as_array_dim::<f32, ndarray::Ix4>().unwrap();
            black_box(array.as_ptr());
        })
    });
    c.bench_function("borrow_validate_array_view_4d_dyn", |b| {
        b.iter(|| {
            // SAFETY: as above.
            let view = unsafe { TensorView::from_dltensor(black_box(descriptor)) }.unwrap();
            let array = view.as_array::<f32>().unwrap();
            black_box(array.as_ptr());
        })
    });
}

criterion_group!(benches, import, export, borrowed_view);
criterion_main!(benches);
