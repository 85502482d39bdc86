//! The runtime guards that keep safe code (an extension's Rust, or Python code calling it)
//! from undefined behaviour through dlbridge-pyo3, each driven where it would otherwise be
//! reached: a producer's C functions handed an object of another type, an address taken from
//! a Python int, memory freed under a borrowed argument, a framework's C getter or NumPy's
//! struct layout applied to objects of another type. (SOUNDNESS.md lists every item of the
//! crate and what makes it sound.)

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use dlbridge::ffi::{
    DLManagedTensorVersioned, DLPackExchangeAPI, DLPackExchangeAPIHeader, DLTensor,
};
use dlbridge::{DataType, Device, Export, ManagedTensor, Version};
use dlbridge_pyo3::{
    ClassTensor, ImportOptions, TensorArg, TensorArgMut, TensorClass,
    capsule::{DLPACK_EXCHANGE_API, from_capsule, into_capsule},
    exchange::exchange_api,
    explain::ArgumentPath,
    explain_argument, from_dlpack, inspect_argument, publish_dlpack, return_like,
};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyCapsule, PyDict, PyModule};

/// Runs `f` attached to an embedded interpreter (started once per test process).
fn attach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> R {
    Python::initialize();
    Python::attach(f)
}

/// Runs Python `code` with `globals` (where it finds its inputs and leaves its results).
fn run(py: Python<'_>, code: &std::ffi::CStr, globals: &Bound<'_, PyDict>) {
    py.run(code, Some(globals), None).unwrap();
}

// ---------------------------------------------------------------------------------------------
// A foreign producer's exchange table, whose functions read `py_object` as their own type (as
// the standard lets them): here they count the calls that would have read another object.
// ---------------------------------------------------------------------------------------------

/// A foreign tensor type with an exchange table of its own.
#[pyclass(frozen)]
struct Foreign;

/// `Foreign`'s type object, for the table's functions.
static FOREIGN_TYPE: AtomicPtr<ffi::PyTypeObject> = AtomicPtr::new(std::ptr::null_mut());
thread_local! {
    /// Calls of the table's functions with an object of another type, on this thread.
    static WRONG_OBJECTS: Cell<usize> = const { Cell::new(0) };
    /// Calls of the table's functions, on this thread. Per thread, because the tests run
    /// side by side: another test's calls (made whenever the interpreter hands the GIL over)
    /// must not count as this one's.
    static CALLS: Cell<usize> = const { Cell::new(0) };
}

/// Adds one to a counter of this thread.
fn count(counter: &'static std::thread::LocalKey<Cell<usize>>) {
    counter.with(|calls| calls.set(calls.get() + 1));
}
/// The one element `describe` hands out.
static ELEMENT: [u8; 1] = [7];
static ONE: [i64; 1] = [1];

/// Counts the call; `false` (with a Python error set) for an object that is not a `Foreign`.
///
/// # Safety
///
/// `object` is a live object; the GIL is held.
unsafe fn own_object(object: *mut c_void) -> bool {
    count(&CALLS);
    // SAFETY: a live object; its type is read.
    let kind = unsafe { ffi::Py_TYPE(object.cast()) };
    if kind == FOREIGN_TYPE.load(Ordering::SeqCst) {
        return true;
    }
    count(&WRONG_OBJECTS);
    // SAFETY: the GIL is held; a static message.
    unsafe { ffi::PyErr_SetString(ffi::PyExc_RuntimeError, c"not a Foreign".as_ptr()) };
    false
}

unsafe extern "C" fn foreign_describe(object: *mut c_void, out: *mut DLTensor) -> c_int {
    // SAFETY: the consumer's live object, the GIL held.
    if !unsafe { own_object(object) } {
        return -1;
    }
    let described = DLTensor {
        data: ELEMENT.as_ptr().cast_mut().cast(),
        device: Device::CPU,
        ndim: 1,
        dtype: DataType::UINT8,
        shape: ONE.as_ptr().cast_mut(),
        strides: ONE.as_ptr().cast_mut(),
        byte_offset: 0,
    };
    // SAFETY: the consumer's descriptor to fill.
    unsafe { out.write(described) };
    0
}

unsafe extern "C" fn foreign_export(
    object: *mut c_void,
    out: *mut *mut DLManagedTensorVersioned,
) -> c_int {
    // SAFETY: the consumer's live object, the GIL held.
    if !unsafe { own_object(object) } {
        return -1;
    }
    let tensor = Export::new(vec![7u8], &[1]).into_versioned().unwrap();
    // SAFETY: the consumer's slot for an owned tensor.
    unsafe { out.write(tensor.into_raw().versioned().unwrap()) };
    0
}

/// `Foreign`'s table, leaked for the process as the standard requires.
fn foreign_table() -> NonNull<DLPackExchangeAPI> {
    static TABLE: OnceLock<usize> = OnceLock::new();
    let address = *TABLE.get_or_init(|| {
        let table = Box::leak(Box::new(DLPackExchangeAPI {
            header: DLPackExchangeAPIHeader {
                version: Version::CURRENT,
                prev_api: std::ptr::null_mut(),
            },
            managed_tensor_allocator: None,
            managed_tensor_from_py_object_no_sync: Some(foreign_export),
            managed_tensor_to_py_object_no_sync: None,
            dltensor_from_py_object_no_sync: Some(foreign_describe),
            current_work_stream: None,
        }));
        std::ptr::from_mut(table) as usize
    });
    NonNull::new(address as *mut DLPackExchangeAPI).unwrap()
}

/// A `Foreign` object, its type publishing the table.
fn foreign(py: Python<'_>) -> Bound<'_, PyAny> {
    let kind = py.get_type::<Foreign>();
    FOREIGN_TYPE.store(kind.as_type_ptr(), Ordering::SeqCst);
    // SAFETY: the table lives for the process (the capsule has no destructor).
    let capsule =
        unsafe { PyCapsule::new_with_pointer(py, foreign_table().cast(), DLPACK_EXCHANGE_API) }
            .unwrap();
    kind.setattr("__dlpack_c_exchange_api__", capsule).unwrap();
    Py::new(py, Foreign).unwrap().into_bound(py).into_any()
}

#[test]
fn an_exchange_table_is_handed_objects_of_its_own_type_only() {
    attach(|py| {
        let object = foreign(py);
        let api = exchange_api(&object).unwrap().expect("the type's table");
        // Its own objects are described and exported.
        assert_eq!(api.describe(&object).unwrap().unwrap().ndim, 1);
        assert_eq!(api.managed_tensor(&object).unwrap().view().shape(), &[1]);
        // Any other object is refused before the producer's functions see it: they would read
        // a bytearray's struct as a `Foreign`'s (PyTorch's as a tensor's).
        let other = PyByteArray::new(py, b"not a tensor").into_any();
        let before = WRONG_OBJECTS.get();
        let refused = api.describe(&other).unwrap_err();
        assert!(refused.is_instance_of::<PyTypeError>(py), "{refused}");
        assert!(
            refused.to_string().contains(
                "the DLPack exchange table of type Foreign was asked about an object of type \
                 bytearray"
            ),
            "{refused}"
        );
        let refused = api.managed_tensor(&other).unwrap_err();
        assert!(refused.is_instance_of::<PyTypeError>(py), "{refused}");
        assert_eq!(WRONG_OBJECTS.get(), before);
    });
}

#[test]
fn an_address_in_a_python_int_is_never_taken_for_an_exchange_table() {
    attach(|py| {
        // Pure Python code can put any integer in a class attribute; here the address of a
        // real table, so that following it is seen (rather than a crash at a wild address).
        let locals = PyDict::new(py);
        locals
            .set_item("address", foreign_table().as_ptr() as usize)
            .unwrap();
        run(
            py,
            c"forged = type('Forged', (), {'__c_dlpack_exchange_api__': address})()",
            &locals,
        );
        let forged = locals.get_item("forged").unwrap().unwrap();
        assert!(exchange_api(&forged).unwrap().is_none());
        let before = CALLS.get();
        let refused = from_dlpack(&forged, &ImportOptions::default()).unwrap_err();
        assert!(refused.is_instance_of::<PyTypeError>(py), "{refused}");
        let refused = explain_argument(&forged, true).unwrap_err();
        assert!(refused.is_instance_of::<PyTypeError>(py), "{refused}");
        assert_eq!(CALLS.get(), before, "the table was followed");
        // A capsule under the 1.2 draft's name is still read (only C code makes one).
        // SAFETY: the table lives for the process (the capsule has no destructor).
        let capsule =
            unsafe { PyCapsule::new_with_pointer(py, foreign_table().cast(), DLPACK_EXCHANGE_API) }
                .unwrap();
        locals.set_item("capsule", capsule).unwrap();
        run(
            py,
            c"drafted = type('Drafted', (), {'__c_dlpack_exchange_api__': capsule})()",
            &locals,
        );
        let drafted = locals.get_item("drafted").unwrap().unwrap();
        assert!(exchange_api(&drafted).unwrap().is_some());
    });
}

// ---------------------------------------------------------------------------------------------
// dlbridge's own producer: a class that may replace its tensor.
// ---------------------------------------------------------------------------------------------

/// A tensor class that is not frozen: `replace` drops the tensor it held.
#[pyclass]
struct Replaceable {
    pixels: ClassTensor,
}

impl TensorClass for Replaceable {
    fn tensor(&self) -> &ClassTensor {
        &self.pixels
    }

    fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
        Py::new(
            py,
            Replaceable {
                pixels: ClassTensor::new(tensor),
            },
        )
    }
}

#[pymethods]
impl Replaceable {
    /// Replaces the tensor (safe code: any class with `&mut self` methods can).
    fn replace(&mut self) {
        let fresh = Export::new(vec![9u8; 3], &[3]).into_versioned().unwrap();
        self.pixels = ClassTensor::new(fresh);
    }
}

/// The same class, frozen: its tensor stays for the instance's life.
#[pyclass(frozen)]
struct Fixed {
    pixels: ClassTensor,
}

impl TensorClass for Fixed {
    fn tensor(&self) -> &ClassTensor {
        &self.pixels
    }

    fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
        Py::new(
            py,
            Fixed {
                pixels: ClassTensor::new(tensor),
            },
        )
    }
}

#[test]
fn a_borrowed_argument_keeps_its_memory_when_the_class_replaces_its_tensor() {
    attach(|py| {
        publish_dlpack::<Replaceable>(py).unwrap();
        // The memory, watched through a weak reference to its buffer.
        let data: Arc<[u8]> = Arc::from(vec![1u8, 2, 3]);
        let original = Arc::downgrade(&data);
        let tensor = Export::new(data, &[3]).into_versioned().unwrap();
        let object = Replaceable::new_instance(py, tensor)
            .unwrap()
            .into_bound(py);
        let argument: TensorArg<'_, u8> = object.as_any().extract().unwrap();
        // Python code (another thread while a kernel runs with the GIL released, or the
        // kernel itself) replaces the instance's tensor: the argument must still hold it.
        object.call_method0("replace").unwrap();
        assert!(
            original.upgrade().is_some(),
            "the argument's memory was freed under it (path {})",
            argument.path()
        );
        assert_eq!(argument.path(), ArgumentPath::ExchangeExport);
        assert_eq!(argument.view().as_slice().unwrap(), &[1, 2, 3]);
        drop(argument);
        assert!(original.upgrade().is_none());

        // A frozen class keeps its tensor: the borrowed descriptor, with no allocation.
        publish_dlpack::<Fixed>(py).unwrap();
        let tensor = Export::new(vec![4u8, 5], &[2]).into_versioned().unwrap();
        let fixed = Fixed::new_instance(py, tensor).unwrap().into_bound(py);
        let argument: TensorArg<'_, u8> = fixed.as_any().extract().unwrap();
        assert_eq!(argument.path(), ArgumentPath::ExchangeTable);
        assert_eq!(argument.view().as_slice().unwrap(), &[4, 5]);
    });
}

// ---------------------------------------------------------------------------------------------
// Framework modules replaced in `sys.modules` by Python code.
// ---------------------------------------------------------------------------------------------

/// The type the getter below belongs to.
#[pyclass(frozen)]
struct GradOwner;

static GRAD_OWNER_TYPE: AtomicPtr<ffi::PyTypeObject> = AtomicPtr::new(std::ptr::null_mut());
/// Calls of the getter with an object that is not a `GradOwner`.
static GETTER_MISUSES: AtomicUsize = AtomicUsize::new(0);

/// A C getter that, like every getset's, reads its object as an instance of its type.
unsafe extern "C" fn owner_getter(
    object: *mut ffi::PyObject,
    _closure: *mut c_void,
) -> *mut ffi::PyObject {
    // SAFETY: a live object and a live type, the GIL held.
    if unsafe { ffi::PyObject_TypeCheck(object, GRAD_OWNER_TYPE.load(Ordering::SeqCst)) } == 0 {
        GETTER_MISUSES.fetch_add(1, Ordering::SeqCst);
    }
    // SAFETY: False is immortal or kept alive by the interpreter; the caller gets a new
    // reference (the limited API of 3.9 has no `Py_NewRef`).
    unsafe {
        let value = ffi::Py_False();
        ffi::Py_IncRef(value);
        value
    }
}

#[test]
fn a_framework_getter_is_called_directly_on_objects_of_its_type_only() {
    attach(|py| {
        let owner = py.get_type::<GradOwner>();
        GRAD_OWNER_TYPE.store(owner.as_type_ptr(), Ordering::SeqCst);
        let definition = Box::leak(Box::new(ffi::PyGetSetDef {
            name: c"requires_grad".as_ptr(),
            get: Some(owner_getter),
            set: None,
            doc: std::ptr::null(),
            closure: std::ptr::null_mut(),
        }));
        // SAFETY: a live type and a definition that lives for the process.
        let descriptor = unsafe { ffi::PyDescr_NewGetSet(owner.as_type_ptr(), definition) };
        // SAFETY: a new reference (checked non-NULL).
        let descriptor = unsafe { Bound::from_owned_ptr_or_err(py, descriptor) }.unwrap();
        let locals = PyDict::new(py);
        locals.set_item("descriptor", descriptor).unwrap();
        // A `torch` module made by Python code, whose `Tensor.requires_grad` is another
        // type's getter.
        run(
            py,
            c"
import sys, types
saved = sys.modules.get('torch')
torch = types.ModuleType('torch')
class Tensor:
    requires_grad = descriptor
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return NotImplemented
    def is_conj(self):
        return False
    def is_neg(self):
        return False
torch.Tensor = Tensor
torch._C = types.SimpleNamespace(
    _increment_version=lambda tensors: None, _disabled_torch_function_impl=lambda *a: None)
torch.is_grad_enabled = lambda: True
sys.modules['torch'] = torch
forged = Tensor()
",
            &locals,
        );
        let forged = locals.get_item("forged").unwrap().unwrap();
        let refused = explain_argument(&forged, true);
        run(
            py,
            c"
if saved is None:
    del sys.modules['torch']
else:
    sys.modules['torch'] = saved
",
            &locals,
        );
        assert_eq!(GETTER_MISUSES.load(Ordering::SeqCst), 0);
        // The descriptor's own check refuses the object instead.
        let refused = refused.unwrap_err();
        assert!(refused.is_instance_of::<PyTypeError>(py), "{refused}");
    });
}

#[test]
fn only_numpys_own_ndarray_is_read_as_numpy_arrays() {
    attach(|py| {
        let locals = PyDict::new(py);
        // Sets are large enough to pass for arrays, and after `pop()` the word where an
        // array's descriptor pointer lies holds a small integer.
        run(
            py,
            c"
import sys, types
saved = sys.modules.get('numpy')
sys.modules['numpy'] = types.SimpleNamespace(ndarray=set)
forged = {1, 2, 3}
forged.pop()
",
            &locals,
        );
        let forged = locals.get_item("forged").unwrap().unwrap();
        let refused = explain_argument(&forged, false);
        let imported = from_dlpack(&forged, &ImportOptions::default());
        run(
            py,
            c"
if saved is None:
    del sys.modules['numpy']
else:
    sys.modules['numpy'] = saved
",
            &locals,
        );
        // Not an array: no buffer, no `__dlpack__`.
        assert!(refused.unwrap_err().is_instance_of::<PyTypeError>(py));
        assert!(imported.unwrap_err().is_instance_of::<PyTypeError>(py));
    });
}

// ---------------------------------------------------------------------------------------------
// Reading memory that a writable argument holds.
// ---------------------------------------------------------------------------------------------

#[test]
fn inspecting_memory_that_a_writable_argument_holds_is_refused() {
    attach(|py| {
        let bytes = PyByteArray::new(py, &[0u8; 4]).into_any();
        let mut written: TensorArgMut<'_, u8> = bytes.extract().unwrap();
        // `inspect_argument` copies the elements: here they may be written meanwhile (by
        // another thread's kernel, with the GIL released), so it claims them for reading.
        let refused = inspect_argument(&bytes, false).unwrap_err();
        assert!(refused.is_instance_of::<PyValueError>(py), "{refused}");
        written.view_mut().fill(1);
        drop(written);
        let inspected = inspect_argument(&bytes, false).unwrap();
        assert_eq!(inspected.bytes.unwrap(), [1; 4]);
    });
}

/// An import is one more Rust handle to memory that its producer, and any other handle (the
/// exporting `Arc`, an earlier import, a tensor class's own tensor), still reach: it is
/// marked shared unless the producer copied it, so that it gives no `&mut [T]` beside their
/// `&[T]` (writes go through `TensorArgMut`, whose registry sees every argument).
#[test]
fn an_import_of_memory_other_handles_reach_gives_no_mutable_slice() {
    attach(|py| {
        // Through a capsule.
        let original = Arc::new(Export::new(vec![0i32; 4], &[4]).into_versioned().unwrap());
        let shared = Arc::clone(&original).share_versioned().unwrap();
        let capsule = into_capsule(py, shared).unwrap();
        let mut taken = from_capsule(capsule.as_any()).unwrap();
        let read: &[i32] = original.view().as_slice().unwrap();
        assert_eq!(
            taken.as_mut_slice::<i32>().unwrap_err(),
            dlbridge::Error::SharedMemory
        );
        assert_eq!(read, &[0; 4]);

        // Through an exchange table (the fast path of `from_dlpack`), from a class whose
        // instance keeps its own handle.
        publish_dlpack::<Fixed>(py).unwrap();
        let tensor = Export::new(vec![1u8, 2], &[2]).into_versioned().unwrap();
        let fixed = Fixed::new_instance(py, tensor).unwrap().into_bound(py);
        let mut imported = from_dlpack(fixed.as_any(), &ImportOptions::default()).unwrap();
        let instance = fixed.borrow();
        let reading = instance.tensor().read(py).unwrap();
        let read: &[u8] = reading.view().as_slice().unwrap();
        assert_eq!(
            imported.as_mut_slice::<u8>().unwrap_err(),
            dlbridge::Error::SharedMemory
        );
        let api = exchange_api(fixed.as_any()).unwrap().unwrap();
        assert!(!api.managed_tensor(fixed.as_any()).unwrap().is_exclusive());
        assert_eq!(read, &[1, 2]);

        // A copy the producer made is the importer's alone.
        let copy = dlbridge_pyo3::produce::export_capsule(
            py,
            &original,
            &dlbridge_pyo3::produce::ExportRequest::default()
                .with_max_version(Some((1, 3)))
                .with_copy(Some(true)),
        )
        .unwrap();
        let mut copy = from_capsule(copy.as_any()).unwrap();
        assert!(copy.as_mut_slice::<i32>().is_ok());
    });
}

#[test]
fn arguments_dropped_on_another_thread_without_the_gil_release_what_they_hold() {
    attach(|py| {
        let bytes = PyByteArray::new(py, &[0u8; 4]).into_any();
        let written: TensorArgMut<'_, u8> = bytes.extract().unwrap();
        // Held: the buffer export (the bytearray cannot be resized) and the written claim.
        let resize = bytes.call_method1("extend", (b"more",)).unwrap_err();
        assert!(resize.is_instance_of::<PyBufferError>(py), "{resize}");
        let read = bytes.extract::<TensorArg<'_, u8>>().unwrap_err();
        assert!(read.is_instance_of::<PyValueError>(py), "{read}");
        assert!(
            read.to_string()
                .contains("overlaps the memory of tensor argument"),
            "{read}"
        );
        // Moved to a thread that never held the GIL, and dropped there while this thread
        // has released it: the export is released with the GIL taken there, the claim with
        // one atomic store.
        py.detach(|| {
            std::thread::scope(|scope| {
                scope.spawn(move || drop(written));
            })
        });
        bytes.call_method1("extend", (b"more",)).unwrap();
        assert_eq!(bytes.len().unwrap(), 8);
        let again: TensorArgMut<'_, u8> = bytes.extract().unwrap();
        assert_eq!(again.view().len(), 8);
    });
}

// ---------------------------------------------------------------------------------------------
// A class that answers two calls of `tensor()` with two tensors (issue 47, hole 4).
// ---------------------------------------------------------------------------------------------

/// A frozen class whose `tensor()` answers each call with the other of its two tensors (safe
/// code: `TensorClass` is a safe trait, and nothing asks it to answer the same twice).
#[pyclass(frozen)]
struct Alternating {
    tensors: [ClassTensor; 2],
    calls: AtomicUsize,
}

impl Alternating {
    /// An instance answering with `tensors[0]` first, then `tensors[1]`, and so on.
    fn between(py: Python<'_>, tensors: [ClassTensor; 2]) -> Bound<'_, Alternating> {
        Bound::new(
            py,
            Alternating {
                tensors,
                calls: AtomicUsize::new(0),
            },
        )
        .unwrap()
    }
}

impl TensorClass for Alternating {
    fn tensor(&self) -> &ClassTensor {
        &self.tensors[self.calls.fetch_add(1, Ordering::SeqCst) % 2]
    }

    fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
        let copy = tensor
            .view()
            .to_compact_copy()
            .map_err(dlbridge_pyo3::to_py_err)?;
        Py::new(
            py,
            Alternating {
                tensors: [ClassTensor::new(tensor), ClassTensor::new(copy)],
                calls: AtomicUsize::new(0),
            },
        )
    }
}

/// A kernel writing its argument: adds one to every element.
#[pyfunction]
fn add_one(mut x: TensorArgMut<'_, u8>) {
    x.view_mut().iter_mut().for_each(|value| *value += 1);
}

#[test]
fn an_owned_tensor_from_a_class_answering_anew_is_the_arguments_or_refused() {
    // `TensorArg::to_managed` asks the class a second time (its owned export): a class that
    // answers with the other tensor is refused, never taken for the argument's memory.
    attach(|py| {
        publish_dlpack::<Alternating>(py).unwrap();
        let tensors = [
            ClassTensor::new(Export::new(vec![1u8; 4], &[4]).into_versioned().unwrap()),
            ClassTensor::new(Export::new(vec![2u8; 4], &[4]).into_versioned().unwrap()),
        ];
        let object = Alternating::between(py, tensors);
        let x = object.extract::<TensorArg<'_, u8>>().unwrap();
        assert_eq!(x.path(), ArgumentPath::ExchangeTable);
        let refused = x.to_managed(py).unwrap_err();
        assert!(refused.is_instance_of::<PyBufferError>(py), "{refused}");
        assert!(
            refused
                .to_string()
                .contains("answered with another tensor than the argument's"),
            "{refused}"
        );
        // The next call answers with the argument's tensor again: taken, the same memory.
        let owned = x.to_managed(py).unwrap();
        assert_eq!(
            owned.view().data_ptr().cast_const().cast::<u8>(),
            x.view().as_ptr()
        );
        assert_eq!(
            owned.view().as_slice::<u8>().unwrap(),
            x.view().as_slice().unwrap()
        );
        assert!(!owned.is_exclusive(), "the class's memory is shared");
    });
}

#[test]
fn a_class_answering_with_two_tensors_never_has_its_read_only_one_written() {
    attach(|py| {
        publish_dlpack::<Alternating>(py).unwrap();
        let kernel = wrap_pyfunction!(add_one, py).unwrap();
        for read_only_first in [true, false] {
            let read_only = ClassTensor::new(
                Export::new(vec![0u8; 4], &[4])
                    .read_only(true)
                    .into_versioned()
                    .unwrap(),
            );
            let writable =
                ClassTensor::new(Export::new(vec![0u8; 4], &[4]).into_versioned().unwrap());
            let (tensors, read_only_at) = if read_only_first {
                ([read_only, writable], 0)
            } else {
                ([writable, read_only], 1)
            };
            let object = Alternating::between(py, tensors);
            let mut written = 0u8;
            for attempt in 0..6 {
                // From Rust and from Python alike, each argument asks the class once.
                let outcome = if attempt % 2 == 0 {
                    kernel.call1((&object,)).map(drop)
                } else {
                    object.extract::<TensorArgMut<'_, u8>>().map(|mut x| {
                        assert_eq!(x.path(), ArgumentPath::ExchangeTable);
                        x.view_mut().iter_mut().for_each(|value| *value += 1);
                    })
                };
                match outcome {
                    Ok(()) => written += 1,
                    Err(refused) => {
                        assert!(refused.is_instance_of::<PyTypeError>(py), "{refused}");
                        assert!(refused.to_string().contains("read-only"), "{refused}");
                    }
                }
                let tensors = &object.get().tensors;
                assert_eq!(
                    tensors[read_only_at]
                        .read(py)
                        .unwrap()
                        .view()
                        .as_slice::<u8>()
                        .unwrap(),
                    &[0; 4],
                    "the READ_ONLY tensor was written (read-only first: {read_only_first}, \
                     attempt {attempt})"
                );
            }
            // Every other argument was the writable tensor, and written.
            assert_eq!(written, 3, "read-only first: {read_only_first}");
            let writable = &object.get().tensors[1 - read_only_at];
            assert_eq!(
                writable.read(py).unwrap().view().as_slice::<u8>().unwrap(),
                &[written; 4]
            );
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Memory that Rust code reads through another handle reaches Python read-only (issue 47, hole
// 5): shares, imports, and a class's tensor while shares of it are alive.
// ---------------------------------------------------------------------------------------------

/// `object.__dlpack__(max_version=(1, 3))` taken back: its flags, as a consumer reads them.
fn versioned_export(object: &Bound<'_, PyAny>) -> ManagedTensor {
    let keywords = PyDict::new(object.py());
    keywords.set_item("max_version", (1, 3)).unwrap();
    let capsule = object
        .call_method("__dlpack__", (), Some(&keywords))
        .unwrap();
    from_capsule(&capsule).unwrap()
}

#[test]
fn a_share_reaches_python_read_only_by_every_way_out() {
    attach(|py| {
        let original = Arc::new(
            Export::new(vec![1u8, 2, 3, 4], &[4])
                .into_versioned()
                .unwrap(),
        );
        // Rust reads the memory through the original while the shares go to Python.
        let read: &[u8] = original.view().as_slice().unwrap();

        // A class holding a share: its exports are flagged READ_ONLY, a legacy capsule (which
        // cannot say so) is refused, and a writable argument refuses it (the hook's answer).
        publish_dlpack::<Fixed>(py).unwrap();
        let share = Arc::clone(&original).share_versioned().unwrap();
        let holder = Fixed::new_instance(py, share).unwrap().into_bound(py);
        assert!(versioned_export(holder.as_any()).view().is_read_only());
        let legacy = holder.call_method0("__dlpack__").unwrap_err();
        assert!(legacy.is_instance_of::<PyBufferError>(py), "{legacy}");
        assert!(legacy.to_string().contains("is_share() = true"), "{legacy}");
        let api = exchange_api(holder.as_any()).unwrap().unwrap();
        assert!(
            api.managed_tensor(holder.as_any())
                .unwrap()
                .view()
                .is_read_only()
        );
        let written = holder
            .as_any()
            .extract::<TensorArgMut<'_, u8>>()
            .unwrap_err();
        assert!(written.is_instance_of::<PyTypeError>(py), "{written}");
        assert!(written.to_string().contains("read-only"), "{written}");

        // Returned like that class (through its table): a read-only instance.
        let share = Arc::clone(&original).share_versioned().unwrap();
        let back = return_like(py, share, holder.as_any()).unwrap();
        let back = back.cast::<Fixed>().unwrap();
        assert!(back.get().tensor().is_read_only());

        // Returned like an object whose module's `from_dlpack` takes a producer (NumPy's and
        // JAX's way), of a framework the table does not name (`FRAMEWORK_HOLDINGS`): whether
        // it honours READ_ONLY is unknown (PyTorch asks for versioned capsules and writes
        // anyway), so it gets a writable copy, never the memory Rust reads; so does a consumer
        // that asks for a legacy capsule, which could not say read-only.
        let toy = PyModule::from_code(
            py,
            c"
class Array:
    pass
def from_dlpack(producer):
    array = Array()
    array.capsule = producer.__dlpack__(max_version=(1, 3))
    return array
",
            c"toy_versioned.py",
            c"toy_versioned",
        )
        .unwrap();
        let like = toy.getattr("Array").unwrap().call0().unwrap();
        let share = Arc::clone(&original).share_versioned().unwrap();
        let result = return_like(py, share, &like).unwrap();
        let capsule = result.getattr("capsule").unwrap();
        let handed = from_capsule(&capsule).unwrap();
        assert_ne!(handed.view().data_ptr(), original.view().data_ptr());
        assert!(!handed.view().is_read_only());
        let toy = PyModule::from_code(
            py,
            c"
class Array:
    pass
def from_dlpack(producer):
    array = Array()
    array.capsule = producer.__dlpack__()
    return array
",
            c"toy_legacy.py",
            c"toy_legacy",
        )
        .unwrap();
        let like = toy.getattr("Array").unwrap().call0().unwrap();
        let share = Arc::clone(&original).share_versioned().unwrap();
        let result = return_like(py, share, &like).unwrap();
        let handed = from_capsule(&result.getattr("capsule").unwrap()).unwrap();
        assert_ne!(handed.view().data_ptr(), original.view().data_ptr());

        // `export_capsule` of a share (the protocol's rules) says the same.
        let share = Arc::new(Arc::clone(&original).share_versioned().unwrap());
        let versioned =
            dlbridge_pyo3::produce::ExportRequest::default().with_max_version(Some((1, 3)));
        let capsule = dlbridge_pyo3::produce::export_capsule(py, &share, &versioned).unwrap();
        assert!(
            from_capsule(capsule.as_any())
                .unwrap()
                .view()
                .is_read_only()
        );
        let legacy = dlbridge_pyo3::produce::export_capsule(
            py,
            &share,
            &dlbridge_pyo3::produce::ExportRequest::default(),
        )
        .unwrap_err();
        assert!(legacy.is_instance_of::<PyBufferError>(py), "{legacy}");

        assert_eq!(read, &[1, 2, 3, 4]);
    });
}

/// The buffer protocol is served where PyO3 has `__getbuffer__` (the full API, or the limited
/// API of Python 3.11 and later).
#[cfg(any(Py_3_11, not(Py_LIMITED_API)))]
#[test]
fn a_share_returned_like_a_buffer_is_a_read_only_memoryview() {
    attach(|py| {
        let original = Arc::new(
            Export::new(vec![1u8, 2, 3, 4], &[4])
                .into_versioned()
                .unwrap(),
        );
        // Rust reads the memory through the original while the share goes to Python.
        let read: &[u8] = original.view().as_slice().unwrap();
        // Returned like a bytearray: a read-only memoryview, which Python cannot write.
        let like = PyByteArray::new(py, b"like").into_any();
        let share = Arc::clone(&original).share_versioned().unwrap();
        let view = return_like(py, share, &like).unwrap();
        let locals = PyDict::new(py);
        locals.set_item("mv", &view).unwrap();
        run(
            py,
            c"
assert mv.readonly
try:
    mv[0] = 99
    refused = None
except TypeError as error:
    refused = str(error)
",
            &locals,
        );
        let refused = locals.get_item("refused").unwrap().unwrap();
        assert!(!refused.is_none(), "the memoryview took a write");
        // Its owner serves every buffer read-only.
        let owner = view.getattr("obj").unwrap();
        let again = py
            .import("builtins")
            .unwrap()
            .getattr("memoryview")
            .unwrap()
            .call1((&owner,))
            .unwrap();
        assert!(
            again
                .getattr("readonly")
                .unwrap()
                .extract::<bool>()
                .unwrap()
        );

        assert_eq!(read, &[1, 2, 3, 4]);
    });
}

#[test]
fn a_class_over_an_exclusive_tensor_is_writable_while_no_rust_share_reads_it() {
    attach(|py| {
        publish_dlpack::<Fixed>(py).unwrap();
        let tensor = Export::new(vec![0u8; 3], &[3]).into_versioned().unwrap();
        let fixed = Fixed::new_instance(py, tensor).unwrap().into_bound(py);
        let write = |value: u8| {
            let mut x = fixed.as_any().extract::<TensorArgMut<'_, u8>>()?;
            assert_eq!(x.path(), ArgumentPath::ExchangeTable);
            x.view_mut().fill(value);
            PyResult::Ok(())
        };
        // Writable by every way out.
        write(1).unwrap();
        assert!(!versioned_export(fixed.as_any()).view().is_read_only());
        assert!(fixed.call_method0("__dlpack__").is_ok());
        let api = exchange_api(fixed.as_any()).unwrap().unwrap();
        assert!(
            !api.managed_tensor(fixed.as_any())
                .unwrap()
                .view()
                .is_read_only()
        );
        // Exports handed to Python do not count: with one alive, it is still writable. (An
        // export imported into Rust is a Rust handle, whose claim keeps writers out while it
        // lives: import_claims.rs.)
        let exported = fixed.call_method0("__dlpack__").unwrap();
        write(2).unwrap();
        drop(exported);

        // No Rust code outside dlbridge-pyo3 makes a share of a class's tensor (its `Arc`
        // stays there): the class's own code reads the memory under a read claim instead,
        // which keeps a writable argument out (the registry's ValueError) while it lives. The
        // exports go to Python, as writable as before.
        let reading = fixed.get().tensor().read(py).unwrap();
        let read: &[u8] = reading.view().as_slice().unwrap();
        let refused = write(3).unwrap_err();
        assert!(refused.is_instance_of::<PyValueError>(py), "{refused}");
        assert!(!versioned_export(fixed.as_any()).view().is_read_only());
        assert_eq!(read, &[2, 2, 2]);
        drop(reading);
        write(4).unwrap();
        assert_eq!(
            fixed
                .get()
                .tensor()
                .read(py)
                .unwrap()
                .view()
                .as_slice::<u8>()
                .unwrap(),
            &[4; 3]
        );
    });
}
