//! A PyO3 class of a user's own made a complete DLPack producer with `publish_dlpack`:
//! `__dlpack__`, `__dlpack_device__` and the C exchange API, called from Python.

use std::sync::Arc;

use dlbridge::{Export, ManagedTensor};
use dlbridge_pyo3::{
    ClassTensor, ImportOptions, TensorClass, capsule::from_capsule, from_dlpack, publish_dlpack,
};
use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

/// A mutable (not frozen) class, subclassable from Python: the published methods must borrow
/// it and accept subclasses.
#[pyclass(subclass)]
struct Image {
    pixels: ClassTensor,
}

impl TensorClass for Image {
    fn tensor(&self) -> &ClassTensor {
        &self.pixels
    }

    fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
        Py::new(
            py,
            Image {
                pixels: ClassTensor::new(tensor),
            },
        )
    }
}

#[pymethods]
impl Image {
    /// `Image(n)`: `n` pixels of value 7.
    #[new]
    fn create(n: usize) -> Self {
        let tensor = Export::new(vec![7u8; n], &[n]).into_versioned().unwrap();
        Image {
            pixels: ClassTensor::new(tensor),
        }
    }
}

fn image(py: Python<'_>) -> Bound<'_, PyAny> {
    let tensor = Export::new(vec![1u8, 2, 3, 4, 5, 6], &[2, 3])
        .into_versioned()
        .unwrap();
    Image::new_instance(py, tensor)
        .unwrap()
        .into_bound(py)
        .into_any()
}

fn run<'py>(
    py: Python<'py>,
    code: &std::ffi::CStr,
    x: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let locals = PyDict::new(py);
    locals.set_item("x", x)?;
    locals.set_item("Image", py.get_type::<Image>())?;
    py.eval(code, None, Some(&locals))
}

fn capsule_name(capsule: &Bound<'_, PyAny>) -> String {
    let capsule = capsule.cast::<PyCapsule>().unwrap();
    // SAFETY: the capsule is alive, and with it its static name.
    unsafe { capsule.name().unwrap().unwrap().as_cstr() }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn a_users_class_becomes_a_complete_producer() {
    Python::initialize();
    Python::attach(|py| {
        publish_dlpack::<Image>(py).unwrap();
        let x = image(py);

        let versioned = run(py, c"x.__dlpack__(max_version=(1, 3))", &x).unwrap();
        assert_eq!(capsule_name(&versioned), "dltensor_versioned");
        let tensor = from_capsule(&versioned).unwrap();
        assert_eq!(tensor.view().as_slice::<u8>().unwrap(), &[1, 2, 3, 4, 5, 6]);
        assert_eq!(tensor.view().shape(), &[2, 3]);

        let legacy = run(py, c"x.__dlpack__()", &x).unwrap();
        assert_eq!(capsule_name(&legacy), "dltensor");

        let device: (i32, i32) = run(py, c"x.__dlpack_device__()", &x)
            .unwrap()
            .extract()
            .unwrap();
        assert_eq!(device, (1, 0));

        let copied = run(py, c"x.__dlpack__(max_version=(1, 3), copy=True)", &x).unwrap();
        let copied = from_capsule(&copied).unwrap();
        assert!(copied.view().flags().is_copied());

        // The exchange table is published too, and a consumer takes it.
        assert!(
            run(py, c"hasattr(Image, '__dlpack_c_exchange_api__')", &x)
                .unwrap()
                .is_truthy()
                .unwrap()
        );
        let imported = from_dlpack(&x, &ImportOptions::default()).unwrap();
        assert_eq!(imported.view().as_slice::<u8>().unwrap()[5], 6);
    });
}

#[test]
fn bad_arguments_and_borrow_conflicts_raise() {
    Python::initialize();
    Python::attach(|py| {
        publish_dlpack::<Image>(py).unwrap();
        let x = image(py);
        let error = run(py, c"x.__dlpack__((1, 3))", &x).unwrap_err();
        assert!(error.is_instance_of::<PyTypeError>(py), "{error}");
        let error = run(py, c"x.__dlpack__(max_versoin=(1, 3))", &x).unwrap_err();
        assert!(error.to_string().contains("'max_versoin'"), "{error}");
        let error = run(py, c"x.__dlpack__(dl_device=(2, 0))", &x).unwrap_err();
        assert!(error.is_instance_of::<PyBufferError>(py), "{error}");
        let error = run(py, c"x.__dlpack__(stream=7)", &x).unwrap_err();
        assert!(error.is_instance_of::<PyValueError>(py), "{error}");
        let error = run(py, c"x.__dlpack_device__(1)", &x).unwrap_err();
        assert!(error.is_instance_of::<PyTypeError>(py), "{error}");

        // Another object, even one with a `__dlpack__` of its own, is refused by the
        // descriptor's type check.
        let error = run(py, c"Image.__dlpack__(object())", &x).unwrap_err();
        assert!(error.is_instance_of::<PyTypeError>(py), "{error}");

        // While Rust holds the instance mutably, the methods report the conflict.
        let image = x.cast::<Image>().unwrap();
        let held = image.borrow_mut();
        let error = run(py, c"x.__dlpack__(max_version=(1, 3))", &x).unwrap_err();
        assert!(error.is_instance_of::<PyRuntimeError>(py), "{error}");
        drop(held);
        assert!(run(py, c"x.__dlpack__(max_version=(1, 3))", &x).is_ok());
    });
}

#[test]
fn python_subclasses_inherit_the_methods() {
    Python::initialize();
    Python::attach(|py| {
        publish_dlpack::<Image>(py).unwrap();
        let x = image(py);
        let code = c"type('Tagged', (Image,), {})(4).__dlpack__(max_version=(1, 0))";
        let capsule = run(py, code, &x).unwrap();
        assert_eq!(capsule_name(&capsule), "dltensor_versioned");
        let tensor = from_capsule(&capsule).unwrap();
        assert_eq!(tensor.view().as_slice::<u8>().unwrap(), &[7, 7, 7, 7]);
    });
}

/// A class whose user code panics: `tensor()` always, `new_instance` always. No panic may
/// cross into Python or C: each entry point raises instead, and a tensor handed over is
/// still released once.
#[pyclass(frozen)]
struct Faulty;

impl TensorClass for Faulty {
    fn tensor(&self) -> &ClassTensor {
        panic!("Faulty::tensor panics")
    }

    fn new_instance(_py: Python<'_>, _tensor: ManagedTensor) -> PyResult<Py<Self>> {
        panic!("Faulty::new_instance panics")
    }
}

/// Counts the drops of an exported tensor's owner.
struct CountedOwner(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for CountedOwner {
    fn drop(&mut self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn panics_in_a_users_class_become_python_errors() {
    use dlbridge::ffi::{DLManagedTensorVersioned, DLPackExchangeAPI, DLTensor};
    use std::sync::atomic::{AtomicUsize, Ordering};

    Python::initialize();
    Python::attach(|py| {
        publish_dlpack::<Faulty>(py).unwrap();
        let x = Py::new(py, Faulty).unwrap().into_bound(py).into_any();
        let locals = PyDict::new(py);
        locals.set_item("x", &x).unwrap();
        for code in [
            c"x.__dlpack__(max_version=(1, 3))",
            c"x.__dlpack_device__()",
        ] {
            let error = py.eval(code, None, Some(&locals)).unwrap_err();
            assert!(error.is_instance_of::<PyRuntimeError>(py), "{error}");
            // The trampoline keeps the panic's message, and says where it happened.
            assert!(
                error.to_string().contains("a panic in __dlpack")
                    && error.to_string().ends_with("Faulty::tensor panics"),
                "{error}"
            );
        }

        let capsule = py
            .get_type::<Faulty>()
            .getattr("__dlpack_c_exchange_api__")
            .unwrap();
        let capsule = capsule.cast::<PyCapsule>().unwrap();
        let table = capsule
            .pointer_checked(Some(c"dlpack_exchange_api"))
            .unwrap()
            .cast::<DLPackExchangeAPI>();
        // SAFETY: the published table lives for the process.
        let table = unsafe { table.as_ref() };
        let object = x.as_ptr().cast();

        let mut out: *mut DLManagedTensorVersioned = std::ptr::null_mut();
        // SAFETY: a live object of the table's type and a slot for the result.
        let status =
            unsafe { table.managed_tensor_from_py_object_no_sync.unwrap()(object, &mut out) };
        assert_eq!(status, -1);
        assert!(out.is_null());
        let raised = |expected: &str| {
            let error = PyErr::take(py).unwrap();
            assert!(error.is_instance_of::<PyRuntimeError>(py), "{error}");
            assert!(error.to_string().ends_with(expected), "{error}");
        };
        raised("managed_tensor_from_py_object_no_sync: Faulty::tensor panics");

        let mut described = std::mem::MaybeUninit::<DLTensor>::uninit();
        // SAFETY: as above, with a descriptor to fill.
        let status = unsafe {
            table.dltensor_from_py_object_no_sync.unwrap()(object, described.as_mut_ptr())
        };
        assert_eq!(status, -1);
        raised("dltensor_from_py_object_no_sync: Faulty::tensor panics");

        let hook = py
            .get_type::<Faulty>()
            .getattr(dlbridge_pyo3::writability_hook::WRITABILITY_ATTRIBUTE)
            .unwrap();
        let hook = hook
            .cast::<PyCapsule>()
            .unwrap()
            .pointer_checked(Some(dlbridge_pyo3::writability_hook::WRITABILITY_CAPSULE))
            .unwrap();
        // SAFETY: the capsule of this name holds a `WritabilityHook`.
        let hook: dlbridge_pyo3::writability_hook::WritabilityHook =
            unsafe { std::mem::transmute(hook.as_ptr()) };
        let mut code = 0u32;
        // SAFETY: a live object of the publishing type, a descriptor to fill and a slot for
        // the answer.
        let status = unsafe { hook(x.as_ptr(), described.as_mut_ptr(), &mut code) };
        assert_eq!(status, -1);
        raised("the writability hook: Faulty::tensor panics");

        // The tensor handed to a panicking `new_instance` is released once all the same.
        let drops = Arc::new(AtomicUsize::new(0));
        let data = vec![1u8, 2, 3];
        let pointer = data.as_ptr().cast_mut().cast();
        let owner = (CountedOwner(Arc::clone(&drops)), data);
        // SAFETY: `pointer` reaches the three bytes the owner keeps alive.
        let tensor = unsafe {
            Export::from_raw_parts(
                owner,
                pointer,
                dlbridge::DataType::UINT8,
                dlbridge::Device::CPU,
                &[3],
            )
        }
        .into_versioned()
        .unwrap();
        let raw = tensor.into_raw().versioned().unwrap();
        let mut made: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: an owned tensor, handed over, and a slot for the new object.
        let status = unsafe { table.managed_tensor_to_py_object_no_sync.unwrap()(raw, &mut made) };
        assert_eq!(status, -1);
        assert!(made.is_null());
        raised("managed_tensor_to_py_object_no_sync: Faulty::new_instance panics");
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    });
}
