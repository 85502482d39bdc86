//! The copies dlbridge makes for a consumer read memory that a running kernel may be writing
//! through a `TensorArgMut` with the GIL released: `from_dlpack(x, copy=True)` copies in the
//! consumer when the producer does not (it ignores or refuses `copy=`), and `__dlpack__(copy=True)`
//! of a dlbridge tensor class copies in the producer. Each copy holds a read claim in the
//! aliasing registry of typed arguments while it is made: refused (`ValueError`, naming the
//! request and the argument that writes the memory) while a writable argument reaches the
//! memory, on any thread; made once the argument is released. Without the claim the copy raced
//! with the kernel's writes (ThreadSanitizer reported it) and held bytes of two passes:
//! `copies_made_while_a_kernel_writes_hold_one_pass_each` is run under ThreadSanitizer by
//! `scripts/sanitize-threads.sh`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use dlbridge::{DataType, Device, Export, ManagedTensor};
use dlbridge_pyo3::{
    ClassTensor, ImportOptions, PyObjectOwner, TensorArgMut, TensorClass, explain::Copier,
    from_dlpack, from_dlpack_explained, publish_dlpack,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyByteArray, PyDict};

/// A dlbridge tensor class: its `__dlpack__` exports its tensor, copying it for `copy=True`.
#[pyclass(frozen)]
struct Shared {
    tensor: ClassTensor,
}

impl TensorClass for Shared {
    fn tensor(&self) -> &ClassTensor {
        &self.tensor
    }

    fn new_instance(py: Python<'_>, tensor: ManagedTensor) -> PyResult<Py<Self>> {
        Py::new(
            py,
            Shared {
                tensor: ClassTensor::new(tensor),
            },
        )
    }
}

/// The objects of one test: a bytearray (which a kernel writes through a `TensorArgMut`), a
/// `Shared` instance whose tensor is the bytearray's memory (the producer-side copy), and a
/// producer wrapping it that drops `copy=` from its `__dlpack__` (the consumer-side copy).
struct Objects {
    bytes: Py<PyByteArray>,
    shared: Py<PyAny>,
    ignores_copy: Py<PyAny>,
}

/// [`Objects`] over `len` bytes of `value`.
fn objects(py: Python<'_>, len: usize, value: u8) -> Objects {
    publish_dlpack::<Shared>(py).unwrap();
    let bytes = PyByteArray::new(py, &vec![value; len]);
    let owner = PyObjectOwner::new(bytes.clone().into_any().unbind());
    let shape = [len];
    // SAFETY: the bytearray's `len` bytes, readable and writable CPU memory, kept alive by the
    // owner; the tests never resize it, and write it only through typed arguments.
    let tensor = unsafe {
        Export::from_raw_parts(
            owner,
            bytes.data().cast(),
            DataType::UINT8,
            Device::CPU,
            &shape,
        )
    }
    .into_versioned()
    .unwrap();
    let shared = Shared::new_instance(py, tensor).unwrap().into_any();
    let globals = PyDict::new(py);
    globals.set_item("shared", &shared).unwrap();
    py.run(
        c"
class IgnoresCopy:
    '''A producer that exports the same memory whatever copy= says.'''
    def __init__(self, inner):
        self.inner = inner
    def __dlpack_device__(self):
        return self.inner.__dlpack_device__()
    def __dlpack__(self, **kwargs):
        kwargs.pop('copy', None)
        return self.inner.__dlpack__(**kwargs)
ignores_copy = IgnoresCopy(shared)
",
        Some(&globals),
        None,
    )
    .unwrap();
    let ignores_copy = globals.get_item("ignores_copy").unwrap().unwrap().unbind();
    Objects {
        bytes: bytes.unbind(),
        shared,
        ignores_copy,
    }
}

/// `from_dlpack(object, copy=True)`, with who made the copy.
fn copy_of(object: &Bound<'_, PyAny>) -> PyResult<(ManagedTensor, Option<Copier>)> {
    let options = ImportOptions::default().with_copy(Some(true));
    from_dlpack_explained(object, &options).map(|(tensor, report)| (tensor, report.copied))
}

/// The bytes of a copy.
fn bytes_of(copy: &ManagedTensor) -> Vec<u8> {
    copy.view().as_slice::<u8>().unwrap().to_vec()
}

/// Asserts that `refused` is the copy's `ValueError` for `reason`, naming where the writer is.
fn assert_copy_refused(py: Python<'_>, refused: &PyErr, reason: &str, whose: &str) {
    assert!(refused.is_instance_of::<PyValueError>(py), "{refused}");
    let message = refused.to_string();
    let expected = format!(
        "{reason}: the tensor's memory is being written by a writable argument of a running \
         kernel (tensor argument 1 of a call in progress on {whose}"
    );
    assert!(message.contains(&expected), "{message}");
    assert!(message.contains("a TensorArgMut"), "{message}");
    assert!(
        message.contains("cannot be copied until that call returns"),
        "{message}"
    );
}

#[test]
fn a_copy_of_memory_written_on_another_thread_is_refused_until_the_argument_is_released() {
    Python::initialize();
    Python::attach(|py| {
        let objects = objects(py, 64, 0);
        let bytes = objects.bytes.bind(py).clone().into_any();
        let mut written: TensorArgMut<'_, u8> = bytes.extract().unwrap();
        written.view_mut().fill(1);
        // A kernel writing `written` with the GIL released; another thread copies meanwhile.
        py.detach(|| {
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    Python::attach(|py| {
                        // The producer's copy (`__dlpack__(copy=True)` of a dlbridge class).
                        let refused = copy_of(objects.shared.bind(py)).unwrap_err();
                        assert_copy_refused(py, &refused, "copy=True", "another thread");
                        // dlbridge's own copy, for a producer that ignores `copy=`.
                        let refused = copy_of(objects.ignores_copy.bind(py)).unwrap_err();
                        assert_copy_refused(py, &refused, "copy=True", "another thread");
                    })
                });
            })
        });
        drop(written);
        let (copy, copier) = copy_of(objects.shared.bind(py)).unwrap();
        assert_eq!(copier, Some(Copier::Producer));
        assert_eq!(bytes_of(&copy), [1; 64]);
        let (copy, copier) = copy_of(objects.ignores_copy.bind(py)).unwrap();
        assert_eq!(copier, Some(Copier::Dlbridge));
        assert_eq!(bytes_of(&copy), [1; 64]);
    });
}

#[test]
fn a_copy_of_memory_a_writable_argument_of_this_thread_holds_is_refused() {
    Python::initialize();
    Python::attach(|py| {
        let objects = objects(py, 16, 3);
        let bytes = objects.bytes.bind(py).clone().into_any();
        // A kernel that holds a writable argument and calls Python code that copies the same
        // memory.
        let written: TensorArgMut<'_, u8> = bytes.extract().unwrap();
        let refused = copy_of(objects.shared.bind(py)).unwrap_err();
        assert_copy_refused(py, &refused, "copy=True", "this thread");
        let refused = copy_of(objects.ignores_copy.bind(py)).unwrap_err();
        assert_copy_refused(py, &refused, "copy=True", "this thread");
        // From Python, the producer's refusal is `__dlpack__`'s.
        let refused = objects
            .shared
            .bind(py)
            .call_method(
                "__dlpack__",
                (),
                Some(&[("copy", true)].into_py_dict(py).unwrap()),
            )
            .unwrap_err();
        assert_copy_refused(py, &refused, "copy=True", "this thread");
        // A plain import copies nothing, but reads the memory for as long as it lives: it is
        // refused too, as an import (import_claims.rs).
        let refused = from_dlpack(objects.shared.bind(py), &ImportOptions::default()).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("from_dlpack: the tensor's memory is being written"),
            "{refused}"
        );
        drop(written);
        let (copy, _) = copy_of(objects.shared.bind(py)).unwrap();
        assert_eq!(bytes_of(&copy), [3; 16]);
    });
}

#[test]
fn reading_arguments_and_other_copies_do_not_keep_a_copy_out() {
    Python::initialize();
    Python::attach(|py| {
        let objects = objects(py, 8, 5);
        let bytes = objects.bytes.bind(py).clone().into_any();
        let read: dlbridge_pyo3::TensorArg<'_, u8> = bytes.extract().unwrap();
        let (first, _) = copy_of(objects.shared.bind(py)).unwrap();
        let (second, _) = copy_of(objects.ignores_copy.bind(py)).unwrap();
        assert_eq!(bytes_of(&first), [5; 8]);
        assert_eq!(bytes_of(&second), [5; 8]);
        drop(read);
        // The copies' claims were released with them: the memory may be written.
        let mut written: TensorArgMut<'_, u8> = bytes.extract().unwrap();
        written.view_mut().fill(6);
    });
}

/// A writer that claims the memory (a `TensorArgMut`, extracted with the GIL) and fills it
/// with its pass number with the GIL released, pass after pass, while two threads copy it
/// (one through the producer's copy, one through dlbridge's own): every copy granted holds the
/// bytes of one pass, and ThreadSanitizer (`scripts/sanitize-threads.sh`) sees no data race
/// between the fills and the copies. Without the copies' read claims both fail: the copies
/// read bytes the writer is writing.
#[test]
fn copies_made_while_a_kernel_writes_hold_one_pass_each() {
    const LEN: usize = 64 * 1024;
    const PASSES: u8 = 200;
    Python::initialize();
    let objects = Python::attach(|py| objects(py, LEN, 0));
    let writing = AtomicBool::new(true);
    let granted = AtomicUsize::new(0);
    let refused = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for pass in 1..=PASSES {
                Python::attach(|py| {
                    let mut written: TensorArgMut<'_, u8> =
                        objects.bytes.bind(py).extract().unwrap();
                    py.detach(|| {
                        written.view_mut().fill(pass);
                        // Time for a copier to try (and be refused) while the memory is held.
                        std::thread::yield_now();
                        written.view_mut().fill(pass);
                    });
                });
                std::thread::yield_now();
            }
            writing.store(false, Ordering::Release);
        });
        for copier in [&objects.shared, &objects.ignores_copy] {
            let (writing, granted, refused) = (&writing, &granted, &refused);
            scope.spawn(move || {
                while writing.load(Ordering::Acquire) {
                    Python::attach(|py| match copy_of(copier.bind(py)) {
                        Ok((copy, _)) => {
                            let copied = bytes_of(&copy);
                            let pass = copied[0];
                            assert!(
                                copied.iter().all(|&byte| byte == pass),
                                "a copy holds bytes of two passes"
                            );
                            granted.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(error) => {
                            assert_copy_refused(py, &error, "copy=True", "another thread");
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                    });
                    std::thread::yield_now();
                }
            });
        }
    });
    let (granted, refused) = (granted.into_inner(), refused.into_inner());
    assert!(
        granted > 0 && refused > 0,
        "granted {granted}, refused {refused}"
    );
    Python::attach(|py| {
        let (copy, _) = copy_of(objects.shared.bind(py)).unwrap();
        assert_eq!(bytes_of(&copy), vec![PASSES; LEN]);
    });
}
