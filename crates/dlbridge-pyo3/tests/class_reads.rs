//! A tensor class's own Rust code reads the class's tensor under a read claim in the aliasing
//! registry of typed arguments (issue 47, hole 1, for classes): `TensorClass::tensor` gives a
//! `ClassTensor`, whose elements come only through `ClassTensor::read`'s guard. Before, it gave
//! the `Arc<ManagedTensor>` itself, and a kernel `k(x: TensorArgMut, image: PyRef<Image>)`
//! called as `k(img, img)` held a `&[u8]` from `image.tensor().view().as_slice()` beside the
//! argument's `&mut [u8]` over the same bytes, from safe code; so did `Py::get` of a frozen
//! class on another thread while a kernel wrote the memory with the GIL released. Each of those
//! reads is now refused (`ValueError`) while the `TensorArgMut` lives, and a `TensorArgMut` is
//! refused while a read lives; reads beside reading arguments, and the class's exports, are as
//! they were.

use std::sync::Barrier;

use dlbridge::{Export, ManagedTensor};
use dlbridge_pyo3::prelude::*;
use dlbridge_pyo3::{exchange::exchange_api, explain::ArgumentPath};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyDict};

/// A frozen tensor class, as a user writes one.
#[pyclass(frozen)]
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

/// An `Image` of `values`, published.
fn image(py: Python<'_>, values: Vec<u8>) -> Bound<'_, Image> {
    publish_dlpack::<Image>(py).unwrap();
    let len = values.len();
    let tensor = Export::new(values, &[len]).into_versioned().unwrap();
    Image::new_instance(py, tensor).unwrap().into_bound(py)
}

/// The kernel of the hole: writes `x[0]` from the image's first pixel, read through the
/// class. Called as `k(img, img)`, the read and the write are of one byte.
#[pyfunction]
fn k(mut x: TensorArgMut<'_, u8, Ix1>, image: PyRef<'_, Image>) -> PyResult<()> {
    let pixels = image.tensor().read_for(image.py(), "Image.pixels")?;
    let read: &[u8] = pixels.view().as_slice().map_err(to_py_err)?;
    let mut written = x.view_mut();
    written[0] = read[0].wrapping_add(1);
    Ok(())
}

/// Reads through an argument and through the class at once: the sum of both.
#[pyfunction]
fn both(x: TensorArg<'_, u8, Ix1>, image: PyRef<'_, Image>) -> PyResult<u64> {
    let pixels = image.tensor().read(image.py())?;
    let through_class: u64 = pixels
        .view()
        .as_slice::<u8>()
        .map_err(to_py_err)?
        .iter()
        .map(|&value| u64::from(value))
        .sum();
    Ok(through_class + x.view().iter().map(|&value| u64::from(value)).sum::<u64>())
}

/// Runs `code` with `k`, `both`, and the `objects` given.
fn run<'py>(
    py: Python<'py>,
    code: &std::ffi::CStr,
    objects: &[(&str, &Bound<'py, PyAny>)],
) -> PyResult<Bound<'py, PyDict>> {
    let globals = PyDict::new(py);
    globals.set_item("k", wrap_pyfunction!(k, py)?)?;
    globals.set_item("both", wrap_pyfunction!(both, py)?)?;
    for (name, object) in objects {
        globals.set_item(name, object)?;
    }
    py.run(code, Some(&globals), None)?;
    Ok(globals)
}

/// Asserts that `refused` is a class read's refusal for `what`, the writer on `whose`.
fn assert_read_refused(py: Python<'_>, refused: &PyErr, what: &str, whose: &str) {
    assert!(refused.is_instance_of::<PyValueError>(py), "{refused}");
    let message = refused.to_string();
    let expected = format!(
        "{what}: the tensor's memory is being written by a writable argument of a running \
         kernel (tensor argument 1 of a call in progress on {whose}, a TensorArgMut), so it \
         cannot be read until that call returns"
    );
    assert!(message.contains(&expected), "{message}");
}

#[test]
fn a_kernel_reading_the_class_it_writes_through_an_argument_is_refused() {
    Python::initialize();
    Python::attach(|py| {
        let img = image(py, vec![5, 6, 7]);
        let other = image(py, vec![40, 0, 0]);
        let refused = run(py, c"k(img, img)", &[("img", img.as_any())]).unwrap_err();
        assert_read_refused(py, &refused, "Image.pixels", "this thread");
        // Nothing was written, and both claims are gone.
        let pixels = img.get().tensor().read(py).unwrap();
        assert_eq!(pixels.view().as_slice::<u8>().unwrap(), &[5, 6, 7]);
        drop(pixels);
        // Different memory: read one, write the other.
        run(
            py,
            c"k(img, other)",
            &[("img", img.as_any()), ("other", other.as_any())],
        )
        .unwrap();
        let pixels = img.get().tensor().read(py).unwrap();
        assert_eq!(pixels.view().as_slice::<u8>().unwrap(), &[41, 6, 7]);
    });
}

#[test]
fn a_class_read_while_a_kernel_on_another_thread_writes_is_refused() {
    Python::initialize();
    let img: Py<Image> = Python::attach(|py| image(py, vec![0; 16]).unbind());
    let written = Barrier::new(2);
    let checked = Barrier::new(2);
    std::thread::scope(|scope| {
        // A kernel writing the instance's memory with the GIL released.
        scope.spawn(|| {
            Python::attach(|py| {
                let mut x: TensorArgMut<'_, u8, Ix1> = img.bind(py).as_any().extract().unwrap();
                assert_eq!(x.path(), ArgumentPath::ExchangeTable);
                py.detach(|| {
                    x.view_mut().fill(1);
                    written.wait();
                    checked.wait();
                });
            })
        });
        // `Py::get` of the frozen class on this thread meanwhile.
        written.wait();
        Python::attach(|py| {
            let refused = img.get().tensor().read_for(py, "Image.pixels").unwrap_err();
            assert_read_refused(py, &refused, "Image.pixels", "another thread");
            let refused = img.get().tensor().read(py).unwrap_err();
            assert_read_refused(
                py,
                &refused,
                "reading a tensor class's tensor",
                "another thread",
            );
        });
        checked.wait();
    });
    Python::attach(|py| {
        let pixels = img.get().tensor().read(py).unwrap();
        assert_eq!(pixels.view().as_slice::<u8>().unwrap(), &[1; 16]);
    });
}

#[test]
fn a_writable_argument_is_refused_while_a_class_read_lives_on_another_thread() {
    Python::initialize();
    let img: Py<Image> = Python::attach(|py| image(py, vec![3; 8]).unbind());
    let reading = Barrier::new(2);
    let checked = Barrier::new(2);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            Python::attach(|py| {
                let pixels = img.get().tensor().read(py).unwrap();
                let read: &[u8] = pixels.view().as_slice().unwrap();
                py.detach(|| {
                    reading.wait();
                    checked.wait();
                });
                assert_eq!(read, &[3; 8]);
            })
        });
        reading.wait();
        Python::attach(|py| {
            let refused = img
                .bind(py)
                .as_any()
                .extract::<TensorArgMut<'_, u8, Ix1>>()
                .unwrap_err();
            assert!(refused.is_instance_of::<PyValueError>(py), "{refused}");
            let message = refused.to_string();
            assert!(message.contains("ClassTensor::read"), "{message}");
            assert!(message.contains("another thread"), "{message}");
        });
        checked.wait();
    });
    Python::attach(|py| {
        let mut x: TensorArgMut<'_, u8, Ix1> = img.bind(py).as_any().extract().unwrap();
        x.view_mut().fill(4);
    });
}

#[test]
fn class_reads_go_on_beside_reading_arguments_and_each_other() {
    Python::initialize();
    Python::attach(|py| {
        let img = image(py, vec![1, 2, 3]);
        // An argument reading the memory, and the class reading it, in one kernel.
        let globals = run(py, c"total = both(img, img)", &[("img", img.as_any())]).unwrap();
        let total: u64 = globals
            .get_item("total")
            .unwrap()
            .unwrap()
            .extract()
            .unwrap();
        assert_eq!(total, 12);
        // Two reads at once, beside a reading argument.
        let argument: TensorArg<'_, u8, Ix1> = img.as_any().extract().unwrap();
        let first = img.get().tensor().read(py).unwrap();
        let second = img.get().tensor().read(py).unwrap();
        assert_eq!(
            first.view().as_slice::<u8>().unwrap(),
            second.view().as_slice::<u8>().unwrap()
        );
        assert_eq!(argument.view().as_slice().unwrap(), &[1, 2, 3]);
        // A copy beside them.
        let copy = img.get().tensor().compact_copy(py, "copy()").unwrap();
        assert_eq!(copy.view().as_slice::<u8>().unwrap(), &[1, 2, 3]);
        // Once every read is dropped, the memory may be written.
        drop((first, second, argument));
        let mut x: TensorArgMut<'_, u8, Ix1> = img.as_any().extract().unwrap();
        x.view_mut()[2] = 9;
        drop(x);
        assert_eq!(
            img.get()
                .tensor()
                .read(py)
                .unwrap()
                .view()
                .as_slice::<u8>()
                .unwrap(),
            &[1, 2, 9]
        );
    });
}

#[test]
fn the_exports_of_a_class_are_unchanged() {
    Python::initialize();
    Python::attach(|py| {
        let img = image(py, vec![7, 8]);
        let tensor = img.get().tensor();
        // The descriptor, without a claim.
        assert_eq!(tensor.shape(), &[2]);
        assert_eq!(tensor.strides(), &[1]);
        assert_eq!(tensor.dtype(), DataType::UINT8);
        assert_eq!(tensor.device(), Device::CPU);
        assert_eq!(tensor.ndim(), 1);
        assert_eq!(tensor.num_elements(), 2);
        assert!(!tensor.is_read_only());
        assert!(tensor.is_exclusive());
        assert!(tensor.is_c_contiguous());
        // A read guard is alive throughout: exports go to Python, which Rust's claims do not
        // govern, and stay writable.
        let pixels = tensor.read(py).unwrap();
        let globals = run(
            py,
            c"
assert img.__dlpack_device__() == (1, 0)
versioned = img.__dlpack__(max_version=(1, 3))
legacy = img.__dlpack__()
",
            &[("img", img.as_any())],
        )
        .unwrap();
        let versioned = globals.get_item("versioned").unwrap().unwrap();
        let versioned = from_capsule(&versioned).unwrap();
        assert!(!versioned.view().is_read_only());
        assert_eq!(versioned.view().data_ptr(), tensor.data_ptr());
        let legacy = globals.get_item("legacy").unwrap().unwrap();
        assert_eq!(
            from_capsule(&legacy).unwrap().view().data_ptr(),
            tensor.data_ptr()
        );
        let api = exchange_api(img.as_any()).unwrap().unwrap();
        let exported = api.managed_tensor(img.as_any()).unwrap();
        assert!(!exported.view().is_read_only());
        assert_eq!(pixels.view().as_slice::<u8>().unwrap(), &[7, 8]);
        let copied = img
            .call_method(
                "__dlpack__",
                (),
                Some(&[("copy", true)].into_py_dict(py).unwrap()),
            )
            .unwrap();
        assert_eq!(
            from_capsule(&copied)
                .unwrap()
                .view()
                .as_slice::<u8>()
                .unwrap(),
            &[7, 8]
        );
        drop((pixels, versioned, exported));
        // The borrowed path of a writable argument, as before.
        let mut x: TensorArgMut<'_, u8, Ix1> = img.as_any().extract().unwrap();
        assert_eq!(x.path(), ArgumentPath::ExchangeTable);
        x.view_mut()[0] = 1;
    });
}

/// `from_capsule`, as a typed helper of this file.
fn from_capsule(capsule: &Bound<'_, PyAny>) -> PyResult<ManagedTensor> {
    dlbridge_pyo3::capsule::from_capsule(capsule)
}
