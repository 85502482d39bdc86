//! Compile-time checks of the bounds the crate's soundness relies on (doc tests only: lib.rs
//! declares this module under `#[cfg(doctest)]`).
//!
//! Each `compile_fail` doc test pins one property: the line above it says which, and its error
//! code is the one rustc gives (nightly rustdoc checks the code; stable rustdoc only checks
//! that compilation fails). Beside each, or for a group, a twin that compiles (and runs)
//! shows the same code accepted once the property is respected, so that a `compile_fail` test
//! cannot pass because of a typo or an API that changed. The audit that cites them is
//! SOUNDNESS.md at the repository's root; the run-time guards are `tests/runtime_guards.rs`.
//!
//! Run with `cargo test -p dlbridge --doc --all-features compile_fail_checks`.

/// # Typed slices, views and element accessors borrow the tensor
///
/// A `&[T]` from a view cannot outlive the tensor's scope (E0597):
///
/// ```compile_fail,E0597
/// use dlbridge::Export;
/// let slice;
/// {
///     let tensor = Export::new(vec![1.0f32, 2.0], &[2]).into_versioned().unwrap();
///     slice = tensor.view().as_slice::<f32>().unwrap();
/// }
/// assert_eq!(slice, &[1.0, 2.0]);
/// ```
///
/// nor the tensor itself, moved or dropped (E0505):
///
/// ```compile_fail,E0505
/// use dlbridge::Export;
/// let tensor = Export::new(vec![1.0f32, 2.0], &[2]).into_versioned().unwrap();
/// let slice = tensor.view().as_slice::<f32>().unwrap();
/// drop(tensor);
/// assert_eq!(slice, &[1.0, 2.0]);
/// ```
///
/// A shared slice and a mutable one of the same tensor never live at once (E0502):
///
/// ```compile_fail,E0502
/// use dlbridge::Export;
/// let mut tensor = Export::new(vec![1.0f32, 2.0], &[2]).into_versioned().unwrap();
/// let slice = tensor.view().as_slice::<f32>().unwrap();
/// tensor.as_mut_slice::<f32>().unwrap()[0] = 5.0;
/// assert_eq!(slice, &[1.0, 2.0]);
/// ```
///
/// Twin: the same slices, one after the other; a slice may outlive the (temporary) view it
/// came from, since it borrows the tensor, not the view.
///
/// ```
/// use dlbridge::Export;
/// let mut tensor = Export::new(vec![1.0f32, 2.0], &[2]).into_versioned().unwrap();
/// let slice = tensor.view().as_slice::<f32>().unwrap();
/// assert_eq!(slice, &[1.0, 2.0]);
/// tensor.as_mut_slice::<f32>().unwrap()[0] = 5.0;
/// let slice = tensor.view().as_slice::<f32>().unwrap();
/// assert_eq!(slice, &[5.0, 2.0]);
/// drop(tensor);
/// ```
///
/// Two mutable slices of one tensor never live at once (E0499):
///
/// ```compile_fail,E0499
/// use dlbridge::Export;
/// let mut tensor = Export::new(vec![1.0f32, 2.0], &[2]).into_versioned().unwrap();
/// let a = tensor.as_mut_slice::<f32>().unwrap();
/// let b = tensor.as_mut_slice_memory_order::<f32>().unwrap();
/// a[0] = b[0];
/// ```
///
/// Twin: one after the other.
///
/// ```
/// use dlbridge::Export;
/// let mut tensor = Export::new(vec![1.0f32, 2.0], &[2]).into_versioned().unwrap();
/// let b = tensor.as_mut_slice_memory_order::<f32>().unwrap()[1];
/// let a = tensor.as_mut_slice::<f32>().unwrap();
/// a[0] = b;
/// assert_eq!(tensor.view().as_slice::<f32>().unwrap(), &[2.0, 2.0]);
/// ```
///
/// A `TensorView` cannot outlive its tensor (E0597):
///
/// ```compile_fail,E0597
/// use dlbridge::Export;
/// let view;
/// {
///     let tensor = Export::new(vec![1u8, 2], &[2]).into_versioned().unwrap();
///     view = tensor.view();
/// }
/// assert_eq!(view.shape(), &[2]);
/// ```
///
/// and a live view keeps the device from being relabelled under it (E0502):
///
/// ```compile_fail,E0502
/// use dlbridge::{Device, DeviceType, Export};
/// let mut tensor = Export::new(vec![1u8, 2], &[2]).into_versioned().unwrap();
/// let view = tensor.view();
/// tensor.set_device(Device::new(DeviceType::CUDA_HOST, 0)).unwrap();
/// assert_eq!(view.as_slice::<u8>().unwrap(), &[1, 2]);
/// ```
///
/// Twin: a view inside the tensor's scope, and `set_device` (safe, between host memories)
/// once it is gone.
///
/// ```
/// use dlbridge::{Device, DeviceType, Export};
/// let mut tensor = Export::new(vec![1u8, 2], &[2]).into_versioned().unwrap();
/// let view = tensor.view();
/// assert_eq!(view.shape(), &[2]);
/// assert_eq!(view.as_slice::<u8>().unwrap(), &[1, 2]);
/// tensor.set_device(Device::new(DeviceType::CUDA_HOST, 0)).unwrap();
/// assert_eq!(tensor.view().as_slice::<u8>().unwrap(), &[1, 2]);
/// ```
///
/// `Elements` cannot outlive its tensor (E0505):
///
/// ```compile_fail,E0505
/// use dlbridge::Export;
/// let tensor = Export::new(vec![1i32, 2], &[2]).into_versioned().unwrap();
/// let elements = tensor.view().elements::<i32>().unwrap();
/// drop(tensor);
/// assert_eq!(elements.len(), 2);
/// ```
///
/// and an element it lends keeps the tensor borrowed against mutable access (E0502):
///
/// ```compile_fail,E0502
/// use dlbridge::Export;
/// let mut tensor = Export::new(vec![1i32, 2], &[2]).into_versioned().unwrap();
/// let first = tensor.view().elements::<i32>().unwrap().get(&[0]).unwrap();
/// tensor.as_mut_slice::<i32>().unwrap()[0] = 7;
/// assert_eq!(*first, 1);
/// ```
///
/// Twin: the element read before the write, and the accessors used in the tensor's scope.
///
/// ```
/// use dlbridge::Export;
/// let mut tensor = Export::new(vec![1i32, 2], &[2]).into_versioned().unwrap();
/// let elements = tensor.view().elements::<i32>().unwrap();
/// assert_eq!(elements.len(), 2);
/// let first = tensor.view().elements::<i32>().unwrap().get(&[0]).unwrap();
/// assert_eq!(*first, 1);
/// tensor.as_mut_slice::<i32>().unwrap()[0] = 7;
/// drop(tensor);
/// ```
///
/// `elements_mut` borrows the tensor mutably: two at once are refused (E0499),
///
/// ```compile_fail,E0499
/// use dlbridge::Export;
/// let mut tensor = Export::new(vec![1i32, 2], &[2]).into_versioned().unwrap();
/// let mut a = tensor.elements_mut::<i32>().unwrap();
/// let mut b = tensor.elements_mut::<i32>().unwrap();
/// *a.get_mut(&[0]).unwrap() = 3;
/// *b.get_mut(&[0]).unwrap() = 4;
/// ```
///
/// as is a shared view beside one (E0502):
///
/// ```compile_fail,E0502
/// use dlbridge::Export;
/// let mut tensor = Export::new(vec![1i32, 2], &[2]).into_versioned().unwrap();
/// let slice = tensor.view().as_slice::<i32>().unwrap();
/// let mut elements = tensor.elements_mut::<i32>().unwrap();
/// *elements.get_mut(&[0]).unwrap() = 3;
/// assert_eq!(slice[0], 1);
/// ```
///
/// `ElementsMut` lends each element mutably for a borrow of itself: two `get_mut` at once are
/// refused (E0499),
///
/// ```compile_fail,E0499
/// use dlbridge::Export;
/// let mut tensor = Export::new(vec![1i32, 2], &[2]).into_versioned().unwrap();
/// let mut elements = tensor.elements_mut::<i32>().unwrap();
/// let a = elements.get_mut(&[0]).unwrap();
/// let b = elements.get_mut(&[0]).unwrap();
/// std::mem::swap(a, b);
/// ```
///
/// so are two `iter_mut` at once (E0499),
///
/// ```compile_fail,E0499
/// use dlbridge::Export;
/// let mut tensor = Export::new(vec![1i32, 2], &[2]).into_versioned().unwrap();
/// let mut elements = tensor.elements_mut::<i32>().unwrap();
/// let a = elements.iter_mut().next().unwrap();
/// let b = elements.iter_mut().next().unwrap();
/// std::mem::swap(a, b);
/// ```
///
/// and `get` beside `get_mut` (E0502):
///
/// ```compile_fail,E0502
/// use dlbridge::Export;
/// let mut tensor = Export::new(vec![1i32, 2], &[2]).into_versioned().unwrap();
/// let mut elements = tensor.elements_mut::<i32>().unwrap();
/// let read = elements.get(&[0]).unwrap();
/// *elements.get_mut(&[0]).unwrap() = 3;
/// assert_eq!(*read, 1);
/// ```
///
/// An `ElementsMut` cannot be duplicated (E0599):
///
/// ```compile_fail,E0599
/// use dlbridge::Export;
/// let mut tensor = Export::new(vec![1i32, 2], &[2]).into_versioned().unwrap();
/// let elements = tensor.elements_mut::<i32>().unwrap();
/// let twin = elements.clone();
/// ```
///
/// Twin: one `ElementsMut` at a time; distinct elements at once through one iterator.
///
/// ```
/// use dlbridge::Export;
/// let mut tensor = Export::new(vec![1i32, 2], &[2]).into_versioned().unwrap();
/// let mut a = tensor.elements_mut::<i32>().unwrap();
/// *a.get_mut(&[0]).unwrap() = 3;
/// let read = *a.get(&[0]).unwrap();
/// *a.get_mut(&[0]).unwrap() = read + 1;
/// {
///     let mut items = a.iter_mut();
///     let (first, second) = (items.next().unwrap(), items.next().unwrap());
///     std::mem::swap(first, second);
/// }
/// let mut b = tensor.elements_mut::<i32>().unwrap();
/// assert_eq!(*b.get_mut(&[1]).unwrap(), 4);
/// assert_eq!(tensor.view().as_slice::<i32>().unwrap(), &[2, 4]);
/// ```
pub(crate) struct Borrows;

/// # Ownership: owners cross threads, handles are not duplicated, buffers and element types
/// are vouched for
///
/// `Export::from_raw_parts` needs an owner that is `Send`, since the deleter drops it on
/// whatever thread the consumer calls it: an `Rc` is refused (E0277),
///
/// ```compile_fail,E0277
/// use std::rc::Rc;
/// use dlbridge::{DataType, Device, Export};
/// let owner: Rc<Vec<f32>> = Rc::new(vec![1.0, 2.0]);
/// let data = owner.as_ptr().cast_mut().cast();
/// // SAFETY: (never compiled) the Vec the owner holds has two f32, never written.
/// let export = unsafe { Export::from_raw_parts(owner, data, DataType::FLOAT32, Device::CPU, &[2]) };
/// let tensor = export.read_only(true).into_versioned().unwrap();
/// ```
///
/// and that is `'static`, since the tensor may outlive any scope: a borrowed owner is refused
/// (E0597).
///
/// ```compile_fail,E0597
/// use dlbridge::{DataType, Device, Export};
/// let buffer = vec![1.0f32, 2.0];
/// let owner: &Vec<f32> = &buffer;
/// let data = owner.as_ptr().cast_mut().cast();
/// // SAFETY: (never compiled) `buffer` has two f32, never written.
/// let export = unsafe { Export::from_raw_parts(owner, data, DataType::FLOAT32, Device::CPU, &[2]) };
/// let tensor = export.read_only(true).into_versioned().unwrap();
/// ```
///
/// Twin: an `Arc` owner.
///
/// ```
/// use std::sync::Arc;
/// use dlbridge::{DataType, Device, Export};
/// let owner: Arc<Vec<f32>> = Arc::new(vec![1.0, 2.0]);
/// let data = owner.as_ptr().cast_mut().cast();
/// // SAFETY: the Vec the owner holds has two f32, never written (the export is read-only),
/// // at an address that moving the `Arc` does not change.
/// let export = unsafe { Export::from_raw_parts(owner, data, DataType::FLOAT32, Device::CPU, &[2]) };
/// let tensor = export.read_only(true).into_versioned().unwrap();
/// assert_eq!(tensor.view().as_slice::<f32>().unwrap(), &[1.0, 2.0]);
/// ```
///
/// `ManagedTensor::export_view` has the same bounds on its owner: not an `Rc` (E0277),
///
/// ```compile_fail,E0277
/// use std::rc::Rc;
/// use dlbridge::{Export, ManagedTensor};
/// let source = Rc::new(Export::new(vec![1u8, 2], &[2]).into_versioned().unwrap());
/// // SAFETY: (never compiled) the owner keeps the source alive.
/// let copy = unsafe { ManagedTensor::export_view(&source.view(), Rc::clone(&source), true) };
/// ```
///
/// nor a borrow (E0597).
///
/// ```compile_fail,E0597
/// use dlbridge::{Export, ManagedTensor};
/// let source = Export::new(vec![1u8, 2], &[2]).into_versioned().unwrap();
/// // SAFETY: (never compiled) the owner keeps the source alive.
/// let copy = unsafe { ManagedTensor::export_view(&source.view(), &source, true) };
/// ```
///
/// Twin: an `Arc` of the source as the owner.
///
/// ```
/// use std::sync::Arc;
/// use dlbridge::{Export, ManagedTensor};
/// let source = Arc::new(Export::new(vec![1u8, 2], &[2]).into_versioned().unwrap());
/// // SAFETY: the owner keeps the source, and so its memory, alive; the copy is read-only.
/// let copy = unsafe { ManagedTensor::export_view(&source.view(), Arc::clone(&source), true) };
/// assert_eq!(copy.unwrap().view().as_slice::<u8>().unwrap(), &[1, 2]);
/// ```
///
/// `HostBuffer` is sealed: the safe `Export::new` takes only the buffers this crate knows to
/// be sound (`Vec`, `Box<[T]>`, `Arc<[T]>`), so implementing it for another type is refused
/// (E0277: the private supertrait is not implemented),
///
/// ```compile_fail,E0277
/// struct Pretend(Vec<f32>);
/// impl dlbridge::HostBuffer for Pretend {
///     type Element = f32;
///     type Owner = Vec<f32>;
///     fn into_parts(mut self) -> (Vec<f32>, *mut f32, usize, bool) {
///         let data = self.0.as_mut_ptr();
///         (self.0, data, usize::MAX, true)
///     }
/// }
/// ```
///
/// and so is an `Rc<[T]>`, whose other clones may be on this thread only (E0277).
///
/// ```compile_fail,E0277
/// use std::rc::Rc;
/// let buffer: Rc<[f32]> = vec![1.0, 2.0].into();
/// let tensor = dlbridge::Export::new(buffer, &[2]).into_versioned();
/// ```
///
/// Twin: the buffers it knows.
///
/// ```
/// use std::sync::Arc;
/// let buffer: Arc<[f32]> = vec![1.0, 2.0].into();
/// let tensor = dlbridge::Export::new(buffer, &[2]).into_versioned().unwrap();
/// let boxed: Box<[f32]> = vec![1.0, 2.0].into();
/// let tensor = dlbridge::Export::new(boxed, &[2]).into_versioned().unwrap();
/// // IS_COPIED stays a safe builder flag: it is checked when the export is finished.
/// let copy = dlbridge::Export::new(vec![1.0f32, 2.0], &[2]).is_copied(true).into_versioned();
/// assert!(copy.unwrap().view().flags().is_copied());
/// ```
///
/// `Element` is an `unsafe trait`: claiming that a type lays out a DLPack data type takes
/// `unsafe impl` (E0200),
///
/// ```compile_fail,E0200
/// #[derive(Clone, Copy)]
/// #[repr(transparent)]
/// struct Celsius(f32);
/// impl dlbridge::Element for Celsius {
///     const DTYPE: dlbridge::DataType = dlbridge::DataType::FLOAT32;
/// }
/// ```
///
/// and an element type must be `Send + Sync` (tensors are read from any thread): a raw
/// pointer is refused (E0277).
///
/// ```compile_fail,E0277
/// #[derive(Clone, Copy)]
/// #[repr(transparent)]
/// struct Address(*const u8);
/// // SAFETY: (never compiled) eight bytes, as uint64 on a 64-bit target.
/// unsafe impl dlbridge::Element for Address {
///     const DTYPE: dlbridge::DataType = dlbridge::DataType::UINT64;
/// }
/// ```
///
/// Twin: `unsafe impl` of a transparent `f32`.
///
/// ```
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// #[repr(transparent)]
/// struct Celsius(f32);
/// // SAFETY: `repr(transparent)` over `f32`: four bytes holding one float32, any bits valid.
/// unsafe impl dlbridge::Element for Celsius {
///     const DTYPE: dlbridge::DataType = dlbridge::DataType::FLOAT32;
/// }
/// let tensor = dlbridge::Export::new(vec![Celsius(21.5)], &[1]).into_versioned().unwrap();
/// assert_eq!(tensor.view().as_slice::<Celsius>().unwrap(), &[Celsius(21.5)]);
/// ```
///
/// A `ManagedTensor` cannot be duplicated, so its deleter runs once (E0599):
///
/// ```compile_fail,E0599
/// use dlbridge::Export;
/// let tensor = Export::new(vec![1u8, 2], &[2]).into_versioned().unwrap();
/// let twin = tensor.clone();
/// ```
///
/// and it is shared only from an `Arc`, which the share keeps alive (E0599 for a bare one):
///
/// ```compile_fail,E0599
/// use dlbridge::Export;
/// let tensor = Export::new(vec![1u8, 2], &[2]).into_versioned().unwrap();
/// let share = tensor.share_versioned().unwrap();
/// ```
///
/// Twin: a share of an `Arc`.
///
/// ```
/// use std::sync::Arc;
/// use dlbridge::Export;
/// let tensor = Export::new(vec![1u8, 2], &[2]).into_versioned().unwrap();
/// let share = Arc::new(tensor).share_versioned().unwrap();
/// assert_eq!(share.view().as_slice::<u8>().unwrap(), &[1, 2]);
/// ```
pub(crate) struct Ownership;

/// # The entry points that trust raw pointers, or a caller's word, are `unsafe`
///
/// Each is refused outside `unsafe` (E0133); the twin below makes every call, inside
/// `unsafe`, with what its contract asks.
///
/// `ManagedTensor::from_raw`:
///
/// ```compile_fail,E0133
/// let raw = dlbridge::Export::new(vec![1u8], &[1]).into_versioned().unwrap().into_raw();
/// let tensor = dlbridge::ManagedTensor::from_raw(raw);
/// ```
///
/// `ManagedTensor::from_raw_versioned`:
///
/// ```compile_fail,E0133
/// let raw = dlbridge::Export::new(vec![1u8], &[1]).into_versioned().unwrap().into_raw();
/// let tensor = dlbridge::ManagedTensor::from_raw_versioned(raw.versioned().unwrap());
/// ```
///
/// `ManagedTensor::from_raw_legacy`:
///
/// ```compile_fail,E0133
/// let raw = dlbridge::Export::new(vec![1u8], &[1]).into_legacy().unwrap().into_raw();
/// let tensor = dlbridge::ManagedTensor::from_raw_legacy(raw.legacy().unwrap());
/// ```
///
/// `ManagedTensor::try_from_raw`:
///
/// ```compile_fail,E0133
/// let raw = dlbridge::Export::new(vec![1u8], &[1]).into_versioned().unwrap().into_raw();
/// let tensor = dlbridge::ManagedTensor::try_from_raw(raw);
/// ```
///
/// `RawManagedTensor::delete`:
///
/// ```compile_fail,E0133
/// let raw = dlbridge::Export::new(vec![1u8], &[1]).into_versioned().unwrap().into_raw();
/// raw.delete();
/// ```
///
/// `TensorView::from_dltensor`:
///
/// ```compile_fail,E0133
/// use dlbridge::{ffi::DLTensor, DataType, Device, TensorView};
/// let mut data = [1u8, 2];
/// let mut shape = [2i64];
/// let mut strides = [1i64];
/// let descriptor = DLTensor {
///     data: data.as_mut_ptr().cast(),
///     device: Device::CPU,
///     ndim: 1,
///     dtype: DataType::UINT8,
///     shape: shape.as_mut_ptr(),
///     strides: strides.as_mut_ptr(),
///     byte_offset: 0,
/// };
/// let view = TensorView::from_dltensor(&descriptor);
/// ```
///
/// `ManagedTensor::set_device_unchecked` (the safe `set_device` relabels host memory as host
/// memory only):
///
/// ```compile_fail,E0133
/// use dlbridge::{DataType, Device, DeviceType, ManagedTensor};
/// let mut tensor = ManagedTensor::zeros(DataType::FLOAT32, &[2]).unwrap();
/// tensor.set_device_unchecked(Device::new(DeviceType::CUDA, 0)).unwrap();
/// ```
///
/// `ManagedTensor::set_ready_stream`:
///
/// ```compile_fail,E0133
/// let mut tensor = dlbridge::ManagedTensor::zeros(dlbridge::DataType::FLOAT32, &[2]).unwrap();
/// tensor.set_ready_stream(Some(1));
/// ```
///
/// `ManagedTensor::assume_legacy_writable`:
///
/// ```compile_fail,E0133
/// let raw = dlbridge::Export::new(vec![1u8], &[1]).into_legacy().unwrap().into_raw();
/// // SAFETY: (never compiled) our own export, taken back once.
/// let mut tensor = unsafe { dlbridge::ManagedTensor::from_raw(raw) }.unwrap();
/// tensor.assume_legacy_writable();
/// ```
///
/// `Export::from_raw_parts`:
///
/// ```compile_fail,E0133
/// use dlbridge::{DataType, Device, Export};
/// let owner = vec![1u8, 2];
/// let data = owner.as_ptr().cast_mut().cast();
/// let export = Export::from_raw_parts(owner, data, DataType::UINT8, Device::CPU, &[2]);
/// ```
///
/// `Export::ready_stream`:
///
/// ```compile_fail,E0133
/// let export = dlbridge::Export::new(vec![1u8], &[1]).ready_stream(Some(1));
/// ```
///
/// `ManagedTensor::export_view`:
///
/// ```compile_fail,E0133
/// use std::sync::Arc;
/// use dlbridge::{Export, ManagedTensor};
/// let source = Arc::new(Export::new(vec![1u8, 2], &[2]).into_versioned().unwrap());
/// let copy = ManagedTensor::export_view(&source.view(), Arc::clone(&source), true);
/// ```
///
/// Twin: every call above inside `unsafe`, each keeping its contract.
///
/// ```
/// use std::sync::Arc;
/// use dlbridge::{ffi::DLTensor, DataType, Device, DeviceType, Export, ManagedTensor};
/// use dlbridge::TensorView;
///
/// let raw = dlbridge::Export::new(vec![1u8], &[1]).into_versioned().unwrap().into_raw();
/// // SAFETY: our own export, handed over once.
/// let tensor = unsafe { dlbridge::ManagedTensor::from_raw(raw) }.unwrap();
/// let raw = tensor.into_raw();
/// // SAFETY: as above.
/// let tensor = unsafe { dlbridge::ManagedTensor::from_raw_versioned(raw.versioned().unwrap()) };
/// let raw = tensor.unwrap().into_raw();
/// // SAFETY: as above.
/// let tensor = unsafe { dlbridge::ManagedTensor::try_from_raw(raw) };
/// let raw = tensor.map_err(|(error, _)| error).unwrap().into_raw();
/// // SAFETY: owned, deleted once, never used again.
/// unsafe { raw.delete() };
///
/// let raw = dlbridge::Export::new(vec![1u8], &[1]).into_legacy().unwrap().into_raw();
/// // SAFETY: as above.
/// let tensor = unsafe { dlbridge::ManagedTensor::from_raw_legacy(raw.legacy().unwrap()) };
/// let raw = tensor.unwrap().into_raw();
/// // SAFETY: as above.
/// let mut tensor = unsafe { dlbridge::ManagedTensor::from_raw(raw) }.unwrap();
/// // SAFETY: a Vec this program exported, which nothing else uses.
/// unsafe { tensor.assume_legacy_writable() };
/// tensor.as_mut_slice::<u8>().unwrap()[0] = 2;
///
/// let mut data = [1u8, 2];
/// let mut shape = [2i64];
/// let mut strides = [1i64];
/// let descriptor = DLTensor {
///     data: data.as_mut_ptr().cast(),
///     device: Device::CPU,
///     ndim: 1,
///     dtype: DataType::UINT8,
///     shape: shape.as_mut_ptr(),
///     strides: strides.as_mut_ptr(),
///     byte_offset: 0,
/// };
/// // SAFETY: every pointer is valid, and nothing writes, while the view lives.
/// let view = unsafe { TensorView::from_dltensor(&descriptor) }.unwrap();
/// assert_eq!(view.as_slice::<u8>().unwrap(), &[1, 2]);
///
/// let mut tensor = ManagedTensor::zeros(DataType::FLOAT32, &[2]).unwrap();
/// // SAFETY: Rust heap memory labelled as another host memory (CUDAManaged): the CPU reads
/// // and writes it wherever the layout reaches.
/// unsafe { tensor.set_device_unchecked(Device::new(DeviceType::CUDA_MANAGED, 0)) }.unwrap();
/// // SAFETY: 1 is CUDA's legacy default stream, which lives as long as the process.
/// unsafe { tensor.set_ready_stream(Some(1)) };
///
/// let owner = vec![1u8, 2];
/// let data = owner.as_ptr().cast_mut().cast();
/// // SAFETY: the Vec moves into the tensor with its heap memory unchanged; read-only.
/// let export = unsafe { Export::from_raw_parts(owner, data, DataType::UINT8, Device::CPU, &[2]) };
/// let exported = export.read_only(true).into_versioned().unwrap();
/// // SAFETY: 1 is CUDA's legacy default stream, which lives as long as the process.
/// let export = unsafe { dlbridge::Export::new(vec![1u8], &[1]).ready_stream(Some(1)) };
/// assert_eq!(export.into_versioned().unwrap().ready_stream(), Some(1));
///
/// let source = Arc::new(exported);
/// // SAFETY: the `Arc` keeps the source, and its memory, alive; the copy is read-only.
/// let copy = unsafe { ManagedTensor::export_view(&source.view(), Arc::clone(&source), true) };
/// assert_eq!(copy.unwrap().view().as_slice::<u8>().unwrap(), &[1, 2]);
/// ```
pub(crate) struct UnsafeEntryPoints;

/// # `ndarray` views borrow the tensor as slices do (feature `ndarray`)
///
/// An `ArrayView` from `as_array` cannot outlive its tensor (E0505):
///
/// ```compile_fail,E0505
/// use dlbridge::ndarray::NdarrayViewExt;
/// use dlbridge::Export;
/// let tensor = Export::new(vec![1.0f64, 2.0], &[2]).into_versioned().unwrap();
/// let array = tensor.view().as_array::<f64>().unwrap();
/// drop(tensor);
/// assert_eq!(array[0], 1.0);
/// ```
///
/// nor live beside `as_array_mut` (E0502):
///
/// ```compile_fail,E0502
/// use dlbridge::ndarray::{NdarrayTensorExt, NdarrayViewExt};
/// use dlbridge::Export;
/// let mut tensor = Export::new(vec![1.0f64, 2.0], &[2]).into_versioned().unwrap();
/// let array = tensor.view().as_array::<f64>().unwrap();
/// tensor.as_array_mut::<f64>().unwrap()[0] = 3.0;
/// assert_eq!(array[0], 1.0);
/// ```
///
/// Two `as_array_mut` never live at once (E0499):
///
/// ```compile_fail,E0499
/// use dlbridge::ndarray::NdarrayTensorExt;
/// use dlbridge::Export;
/// let mut tensor = Export::new(vec![1.0f64, 2.0], &[2]).into_versioned().unwrap();
/// let mut a = tensor.as_array_mut::<f64>().unwrap();
/// let b = tensor.as_array_mut::<f64>().unwrap();
/// a[0] = b[1];
/// ```
///
/// and a mutable array cannot outlive its tensor either (E0505).
///
/// ```compile_fail,E0505
/// use dlbridge::ndarray::NdarrayTensorExt;
/// use dlbridge::Export;
/// let mut tensor = Export::new(vec![1.0f64, 2.0], &[2]).into_versioned().unwrap();
/// let mut array = tensor.as_array_mut::<f64>().unwrap();
/// drop(tensor);
/// array[0] = 3.0;
/// ```
///
/// `NdarrayViewExt::as_array_mut_unchecked` trusts its caller for exclusive access (E0133),
///
/// ```compile_fail,E0133
/// use dlbridge::ndarray::NdarrayViewExt;
/// use dlbridge::Export;
/// let tensor = Export::new(vec![1.0f64, 2.0], &[2]).into_versioned().unwrap();
/// let mut array = tensor.view().as_array_mut_unchecked::<f64>().unwrap();
/// ```
///
/// `NdarrayTensorExt::from_array_view` its owner for the memory (E0133),
///
/// ```compile_fail,E0133
/// use dlbridge::ndarray::NdarrayTensorExt;
/// use std::sync::Arc;
/// let buffer: Arc<[f32]> = vec![1.0, 2.0].into();
/// // SAFETY: (never compiled) the Arc's two floats, never written.
/// let view = unsafe { ndarray::ArrayView::from_shape_ptr(2, buffer.as_ptr()) };
/// let tensor = dlbridge::ManagedTensor::from_array_view(view, Arc::clone(&buffer));
/// ```
///
/// whose owner must be `Send` as every export's (E0277).
///
/// ```compile_fail,E0277
/// use dlbridge::ndarray::NdarrayTensorExt;
/// use std::rc::Rc;
/// let buffer: Rc<[f32]> = vec![1.0, 2.0].into();
/// // SAFETY: (never compiled) the Rc's two floats, never written.
/// let view = unsafe { ndarray::ArrayView::from_shape_ptr(2, buffer.as_ptr()) };
/// // SAFETY: (never compiled) the owner keeps the memory.
/// let tensor = unsafe { dlbridge::ManagedTensor::from_array_view(view, Rc::clone(&buffer)) };
/// ```
///
/// Twin: each in turn, and the unsafe calls inside `unsafe`.
///
/// ```
/// use dlbridge::ndarray::{NdarrayTensorExt, NdarrayViewExt};
/// use std::sync::Arc;
/// use dlbridge::{Export, ManagedTensor};
/// let mut tensor = Export::new(vec![1.0f64, 2.0], &[2]).into_versioned().unwrap();
/// let array = tensor.view().as_array::<f64>().unwrap();
/// assert_eq!(array[0], 1.0);
/// tensor.as_array_mut::<f64>().unwrap()[0] = 3.0;
/// let b = tensor.as_array_mut::<f64>().unwrap()[1];
/// let mut a = tensor.as_array_mut::<f64>().unwrap();
/// a[0] = b;
/// let view = tensor.view();
/// // SAFETY: nothing else reads or writes the elements while `array` lives, and the Vec
/// // this program exported may be written.
/// let mut array = unsafe { view.as_array_mut_unchecked::<f64>() }.unwrap();
/// array[1] = 4.0;
/// assert_eq!(tensor.view().as_slice::<f64>().unwrap(), &[2.0, 4.0]);
///
/// let buffer: Arc<[f32]> = vec![1.0, 2.0].into();
/// // SAFETY: the Arc's two floats, never written.
/// let view = unsafe { ndarray::ArrayView::from_shape_ptr(2, buffer.as_ptr()) };
/// // SAFETY: the Arc owns the viewed memory; moving it does not move the floats.
/// let tensor = unsafe { ManagedTensor::from_array_view(view, Arc::clone(&buffer)) }.unwrap();
/// assert_eq!(tensor.view().as_slice::<f32>().unwrap(), &[1.0, 2.0]);
/// ```
#[cfg(feature = "ndarray")]
pub(crate) struct NdarrayBorrows;

/// # cudarc views borrow the tensor as slices do (feature `cudarc`)
///
/// The twin is `no_run` here, as it needs a GPU; it is also the program
/// examples/cuda_borrows.rs, which `make gpu-kit` builds and scripts/gpu-run.sh runs on a GPU.
///
/// A `CudaTensorSlice` cannot outlive its tensor (E0505):
///
/// ```compile_fail,E0505
/// use dlbridge::cuda::CudaViewExt;
/// use cudarc::driver::CudaContext;
/// use dlbridge::Export;
/// let stream = CudaContext::new(0).unwrap().default_stream();
/// let buffer = stream.clone_htod(&[1.0f32, 2.0]).unwrap();
/// let tensor = dlbridge::cuda::export_slice(buffer, &[2]).into_versioned().unwrap();
/// let slice = tensor.view().cuda_slice::<f32>(&stream).unwrap();
/// drop(tensor);
/// assert_eq!(slice.len(), 2);
/// ```
///
/// A writable one borrows the tensor mutably: two at once are refused (E0499),
///
/// ```compile_fail,E0499
/// use dlbridge::cuda::CudaTensorExt;
/// use cudarc::driver::CudaContext;
/// use dlbridge::Export;
/// let stream = CudaContext::new(0).unwrap().default_stream();
/// let buffer = stream.clone_htod(&[1.0f32, 2.0]).unwrap();
/// let mut tensor = dlbridge::cuda::export_slice(buffer, &[2]).into_versioned().unwrap();
/// let mut a = tensor.cuda_slice_mut::<f32>(&stream).unwrap();
/// let mut b = tensor.cuda_slice_mut::<f32>(&stream).unwrap();
/// stream.memset_zeros(&mut a.as_view_mut().unwrap()).unwrap();
/// stream.memset_zeros(&mut b.as_view_mut().unwrap()).unwrap();
/// ```
///
/// as is a read-only one beside it (E0502),
///
/// ```compile_fail,E0502
/// use dlbridge::cuda::{CudaTensorExt, CudaViewExt};
/// use cudarc::driver::CudaContext;
/// use dlbridge::Export;
/// let stream = CudaContext::new(0).unwrap().default_stream();
/// let buffer = stream.clone_htod(&[1.0f32, 2.0]).unwrap();
/// let mut tensor = dlbridge::cuda::export_slice(buffer, &[2]).into_versioned().unwrap();
/// let read = tensor.view().cuda_slice::<f32>(&stream).unwrap();
/// let mut write = tensor.cuda_slice_mut::<f32>(&stream).unwrap();
/// stream.memset_zeros(&mut write.as_view_mut().unwrap()).unwrap();
/// let host: Vec<f32> = stream.clone_dtoh(&read.as_view()).unwrap();
/// ```
///
/// and its mutable cudarc view borrows it mutably (E0502 beside a shared one).
///
/// ```compile_fail,E0502
/// use dlbridge::cuda::CudaTensorExt;
/// use cudarc::driver::CudaContext;
/// use dlbridge::Export;
/// let stream = CudaContext::new(0).unwrap().default_stream();
/// let buffer = stream.clone_htod(&[1.0f32, 2.0]).unwrap();
/// let mut tensor = dlbridge::cuda::export_slice(buffer, &[2]).into_versioned().unwrap();
/// let mut slice = tensor.cuda_slice_mut::<f32>(&stream).unwrap();
/// let read = slice.as_view();
/// stream.memset_zeros(&mut slice.as_view_mut().unwrap()).unwrap();
/// let host: Vec<f32> = stream.clone_dtoh(&read).unwrap();
/// ```
///
/// The stream functions trust their caller for live streams and memory (E0133):
/// `wait_for_stream`,
///
/// ```compile_fail,E0133
/// use dlbridge::{Device, DeviceType};
/// let order = dlbridge::cuda::wait_for_stream(Device::new(DeviceType::CUDA, 0), 1, 2);
/// ```
///
/// and `copy_to_host`.
///
/// ```compile_fail,E0133
/// let tensor = dlbridge::ManagedTensor::zeros(dlbridge::DataType::FLOAT32, &[2]).unwrap();
/// let copy = dlbridge::cuda::copy_to_host(&tensor.view(), 1);
/// ```
///
/// Twin: each in turn, and the unsafe calls inside `unsafe`.
///
#[doc = concat!("```no_run\n", include_str!("../examples/cuda_borrows.rs"), "```")]
#[cfg(feature = "cudarc")]
pub(crate) struct CudaBorrows;

/// # The bridges' extension traits are sealed (feature `faer`; every bridge trait alike)
///
/// No type outside the crate can implement a bridge trait (E0277: the sealed supertrait is
/// not implemented for it), so nothing but the crate's own views and tensors is handed out as
/// a bridge's faer, nalgebra, ndarray... view:
///
/// ```compile_fail,E0277
/// use dlbridge::Result;
/// use dlbridge::faer::FaerViewExt;
/// use dlbridge::Element;
///
/// struct Mine;
/// impl<'a> FaerViewExt<'a> for Mine {
///     fn as_faer_mat<T: Element>(&self) -> Result<faer::MatRef<'a, T>> {
///         unimplemented!()
///     }
///     unsafe fn as_faer_mat_mut_unchecked<T: Element>(&self) -> Result<faer::MatMut<'a, T>> {
///         unimplemented!()
///     }
/// }
/// ```
///
/// Twin: the trait in scope, called on a view.
///
/// ```
/// use dlbridge::Export;
/// use dlbridge::faer::FaerViewExt;
///
/// let tensor = Export::new(vec![1.0f64, 2.0], &[1, 2]).into_versioned().unwrap();
/// assert_eq!(tensor.view().as_faer_mat::<f64>().unwrap()[(0, 1)], 2.0);
/// ```
#[cfg(feature = "faer")]
pub(crate) struct SealedBridgeTraits;

/// # An XLA result buffer is read or written, never both at once
///
/// A `Call`'s result buffer hands out a view only for as long as it is borrowed, so that a
/// slice read from the view and the slice the handler writes never live at once (E0502):
///
/// ```compile_fail,E0502
/// use dlbridge::xla::{Call, HandlerError};
///
/// fn body(call: &mut Call<'_>) -> Result<(), HandlerError> {
///     let result = &mut call.results[0];
///     let read = result.view().as_slice::<f32>()?;
///     result.as_mut_slice::<f32>()?[0] = 1.0;
///     assert_eq!(read[0], 1.0);
///     Ok(())
/// }
/// ```
///
/// Twin: the same reads and writes, one after the other.
///
/// ```
/// use dlbridge::xla::{Call, HandlerError};
///
/// fn body(call: &mut Call<'_>) -> Result<(), HandlerError> {
///     let result = &mut call.results[0];
///     let length = result.view().as_slice::<f32>()?.len();
///     result.as_mut_slice::<f32>()?[0] = length as f32;
///     Ok(())
/// }
/// # let _ = body;
/// ```
pub(crate) struct XlaResultBuffers;
