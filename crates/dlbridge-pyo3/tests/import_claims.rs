//! A tensor imported into Rust (`from_dlpack`, `from_capsule`, an exchange table's export)
//! reads memory that Python code and kernels reach too, and hands out `&[T]` of it for as long
//! as it lives. So it holds a read claim in the aliasing registry of typed arguments for its
//! whole life, released when it is dropped or given away (`into_capsule`): a `TensorArgMut`
//! over memory that a live import reads is refused, and so is an import of memory that a live
//! `TensorArgMut` writes, on any thread. Without the claim a kernel could hold a `&[u8]` of
//! its own writable argument (imported again from `x.object(py)`) beside the argument's
//! `&mut [u8]`, which the optimizer miscompiles (a read after the write saw the old value).
//! Reading arguments beside imports are always accepted.

use std::sync::Arc;

use dlbridge::{DataType, Device, Export, ManagedTensor};
use dlbridge_pyo3::prelude::*;
use dlbridge_pyo3::{
    ImportOptions, PyObjectOwner,
    capsule::{DLTENSOR_VERSIONED, from_capsule, into_capsule},
    exchange::exchange_api,
    from_dlpack, from_dlpack_explained, publish_dlpack,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyCapsule, PyDict};

/// What a refused `TensorArgMut` says about an import holding the memory.
const HELD_BY_AN_IMPORT: &str = "overlaps memory that is read by a tensor imported into Rust \
                                 that is still alive";

/// A fresh DLPack capsule over `bytes`' memory (versioned, writable, not a copy), keeping the
/// bytearray alive: what a producer's `__dlpack__` hands out.
#[pyfunction]
fn capsule_of<'py>(bytes: &Bound<'py, PyByteArray>) -> PyResult<Bound<'py, PyCapsule>> {
    let owner = PyObjectOwner::new(bytes.clone().into_any().unbind());
    let shape = [bytes.len()];
    // SAFETY: the bytearray's bytes, readable and writable CPU memory, kept alive by the
    // owner; the tests never resize it, and write it only through typed arguments.
    let export = unsafe {
        Export::from_raw_parts(
            owner,
            bytes.data().cast(),
            DataType::UINT8,
            Device::CPU,
            &shape,
        )
    };
    into_capsule(bytes.py(), export.into_versioned().map_err(to_py_err)?)
}

/// A bytearray of `len` bytes of `value`, and a DLPack producer whose `__dlpack__` exports its
/// memory (a fresh capsule per call).
fn producer(py: Python<'_>, len: usize, value: u8) -> (Py<PyByteArray>, Py<PyAny>) {
    let bytes = PyByteArray::new(py, &vec![value; len]);
    let globals = PyDict::new(py);
    globals.set_item("bytes", &bytes).unwrap();
    globals
        .set_item("capsule_of", wrap_pyfunction!(capsule_of, py).unwrap())
        .unwrap();
    py.run(
        c"
class Producer:
    '''A DLPack producer of a bytearray's memory.'''
    def __init__(self, data):
        self.data = data
    def __dlpack_device__(self):
        return (1, 0)
    def __dlpack__(self, **kwargs):
        return capsule_of(self.data)
producer = Producer(bytes)
",
        Some(&globals),
        None,
    )
    .unwrap();
    let producer = globals.get_item("producer").unwrap().unwrap().unbind();
    (bytes.unbind(), producer)
}

/// A dlbridge tensor class over a bytearray's memory: imports of it take its C exchange table.
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

/// A `Shared` instance over `bytes`' memory.
fn shared_over(py: Python<'_>, bytes: &Bound<'_, PyByteArray>) -> Py<PyAny> {
    publish_dlpack::<Shared>(py).unwrap();
    let capsule = capsule_of(bytes).unwrap();
    let tensor = from_capsule(capsule.as_any()).unwrap();
    // The class's memory is Python's to lend to kernels: no lifetime claim.
    let mut tensor = tensor;
    // SAFETY: the tensor goes into a `ClassTensor`, which reads its elements under a claim.
    drop(unsafe { tensor.take_release_on_drop() });
    Shared::new_instance(py, tensor).unwrap().into_any()
}

/// Asserts that `refused` is a writable argument's `ValueError` for memory a live import
/// reads, imported on `whose` thread.
fn assert_held_by_an_import(py: Python<'_>, refused: &PyErr, whose: &str) {
    assert!(refused.is_instance_of::<PyValueError>(py), "{refused}");
    let message = refused.to_string();
    assert!(message.contains(HELD_BY_AN_IMPORT), "{message}");
    assert!(
        message.contains(&format!("imported on {whose}")),
        "{message}"
    );
    assert!(message.contains("drop the import first"), "{message}");
}

/// Asserts that `refused` is an import's `ValueError` for memory a `TensorArgMut` writes on
/// `whose` thread.
fn assert_import_refused(py: Python<'_>, refused: &PyErr, what: &str, whose: &str) {
    assert!(refused.is_instance_of::<PyValueError>(py), "{refused}");
    let message = refused.to_string();
    let expected = format!(
        "{what}: the tensor's memory is being written by a writable argument of a running \
         kernel (tensor argument 1 of a call in progress on {whose}"
    );
    assert!(message.contains(&expected), "{message}");
    assert!(
        message.contains("so it cannot be imported until that call returns"),
        "{message}"
    );
}

/// The kernel: reads its own writable argument through an import of its object, then
/// writes the argument with what it read. Its `&[u8]` and `&mut [u8]` would be one byte.
#[pyfunction]
fn increments_through_an_import(py: Python<'_>, mut x: TensorArgMut<'_, u8, Ix1>) -> PyResult<u8> {
    let imported = from_dlpack(x.object(py), &ImportOptions::default())?;
    let read: &[u8] = imported.view().as_slice().map_err(to_py_err)?;
    x.view_mut()[0] = read[0].wrapping_add(1);
    Ok(read[0])
}

/// Reads its argument, and an import of the argument's object beside it.
#[pyfunction]
fn sums_through_an_import(py: Python<'_>, x: TensorArg<'_, u8, Ix1>) -> PyResult<u64> {
    let imported = from_dlpack(x.object(py), &ImportOptions::default())?;
    let read: &[u8] = imported.view().as_slice().map_err(to_py_err)?;
    Ok(read
        .iter()
        .zip(x.view())
        .map(|(&a, &b)| u64::from(a + b))
        .sum())
}

#[test]
fn a_kernel_that_imports_its_own_writable_argument_is_refused() {
    Python::initialize();
    Python::attach(|py| {
        let (bytes, producer) = producer(py, 4, 10);
        let kernel = wrap_pyfunction!(increments_through_an_import, py).unwrap();
        let refused = kernel.call1((producer.bind(py),)).unwrap_err();
        assert_import_refused(py, &refused, "from_dlpack", "this thread");
        assert_eq!(bytes.bind(py).to_vec(), [10; 4], "nothing was written");
        // The same kernel's read-only sibling imports its argument freely.
        let kernel = wrap_pyfunction!(sums_through_an_import, py).unwrap();
        let sum: u64 = kernel
            .call1((producer.bind(py),))
            .unwrap()
            .extract()
            .unwrap();
        assert_eq!(sum, 80);
    });
}

#[test]
fn a_live_import_keeps_writable_arguments_off_its_memory_until_it_is_dropped() {
    Python::initialize();
    Python::attach(|py| {
        let (bytes, producer) = producer(py, 8, 1);
        let bytes = bytes.bind(py).clone().into_any();
        let shared = shared_over(py, bytes.cast::<PyByteArray>().unwrap());
        let capsule = capsule_of(bytes.cast::<PyByteArray>().unwrap()).unwrap();
        let api = exchange_api(shared.bind(py))
            .unwrap()
            .expect("a published class");
        // Each way in: a capsule, a producer's `__dlpack__` (plain and explained), and a
        // tensor class's exchange table, through `from_dlpack` and the table itself. Made one
        // at a time: each must be the only import alive.
        let default = ImportOptions::default();
        type Import<'a> = Box<dyn Fn() -> PyResult<ManagedTensor> + 'a>;
        let imports: Vec<(&str, Import<'_>)> = vec![
            ("from_capsule", Box::new(|| from_capsule(capsule.as_any()))),
            (
                "from_dlpack",
                Box::new(|| from_dlpack(producer.bind(py), &default)),
            ),
            (
                "from_dlpack_explained",
                Box::new(|| from_dlpack_explained(producer.bind(py), &default).map(|(t, _)| t)),
            ),
            (
                "from_dlpack of a class",
                Box::new(|| from_dlpack(shared.bind(py), &default)),
            ),
            (
                "ExchangeApi::managed_tensor",
                Box::new(|| api.managed_tensor(shared.bind(py))),
            ),
        ];
        for (how, import) in &imports {
            let import = import().unwrap();
            assert!(import.has_release_on_drop(), "{how}: holds its claim");
            // The bytearray, the producer and the class instance: every object of the memory.
            for object in [&bytes, producer.bind(py), shared.bind(py)] {
                let refused = object.extract::<TensorArgMut<'_, u8>>().err();
                let refused = refused.unwrap_or_else(|| panic!("{how}: a writer was made"));
                assert_held_by_an_import(py, &refused, "this thread");
            }
            assert_eq!(
                import.view().as_slice::<u8>().unwrap(),
                [1; 8],
                "{how}: reads"
            );
            drop(import);
            let mut written: TensorArgMut<'_, u8> = bytes.extract().unwrap();
            written.view_mut().fill(1);
        }
    });
}

#[test]
fn an_import_given_away_into_a_capsule_no_longer_keeps_writers_out() {
    Python::initialize();
    Python::attach(|py| {
        let (bytes, _) = producer(py, 4, 2);
        let bytes = bytes.bind(py);
        let import = from_capsule(capsule_of(bytes).unwrap().as_any()).unwrap();
        let handed_on = into_capsule(py, import).unwrap();
        // The capsule's tensor is no Rust handle: the memory may be written.
        let mut written: TensorArgMut<'_, u8> = bytes.extract().unwrap();
        written.view_mut().fill(3);
        drop(written);
        // Imported again, it claims again.
        let again = from_capsule(handed_on.as_any()).unwrap();
        let refused = bytes.extract::<TensorArgMut<'_, u8>>().err().unwrap();
        assert_held_by_an_import(py, &refused, "this thread");
        assert_eq!(again.view().as_slice::<u8>().unwrap(), [3; 4]);
        // Given away as a raw pointer, likewise.
        let raw = again.into_raw();
        let _written: TensorArgMut<'_, u8> = bytes.extract().unwrap();
        // SAFETY: the tensor just given away, released once.
        unsafe { raw.delete() };
    });
}

#[test]
fn a_share_of_an_import_keeps_its_claim_until_the_last_share_is_gone() {
    Python::initialize();
    Python::attach(|py| {
        let (bytes, producer) = producer(py, 4, 4);
        let bytes = bytes.bind(py);
        let import = Arc::new(from_dlpack(producer.bind(py), &ImportOptions::default()).unwrap());
        let share = Arc::clone(&import).share_versioned().unwrap();
        drop(import);
        let refused = bytes.extract::<TensorArgMut<'_, u8>>().err().unwrap();
        assert_held_by_an_import(py, &refused, "this thread");
        // Reads through the share, whose source (and claim) it keeps.
        assert_eq!(share.view().as_slice::<u8>().unwrap(), [4; 4]);
        drop(share);
        let mut written: TensorArgMut<'_, u8> = bytes.extract().unwrap();
        written.view_mut().fill(5);
    });
}

#[test]
fn reading_arguments_and_imports_go_side_by_side() {
    Python::initialize();
    Python::attach(|py| {
        let (bytes, producer) = producer(py, 4, 6);
        let bytes = bytes.bind(py);
        let first = from_dlpack(producer.bind(py), &ImportOptions::default()).unwrap();
        let read: TensorArg<'_, u8> = bytes.extract().unwrap();
        let second = from_dlpack(producer.bind(py), &ImportOptions::default()).unwrap();
        let third = from_capsule(capsule_of(bytes).unwrap().as_any()).unwrap();
        let also_read: TensorArg<'_, u8> = producer.bind(py).extract().unwrap();
        assert_eq!(read.view().sum(), 24);
        assert_eq!(also_read.view().sum(), 24);
        for import in [&first, &second, &third] {
            assert_eq!(import.view().as_slice::<u8>().unwrap(), [6; 4]);
        }
        // Copies of the memory are private: they claim nothing once made.
        let copy = from_dlpack(
            producer.bind(py),
            &ImportOptions::default().with_copy(Some(true)),
        )
        .unwrap();
        assert!(!copy.has_release_on_drop());
        drop((first, second, third, read, also_read));
        let mut written: TensorArgMut<'_, u8> = bytes.extract().unwrap();
        written.view_mut().fill(7);
        assert_eq!(copy.view().as_slice::<u8>().unwrap(), [6; 4]);
    });
}

#[test]
fn imports_and_writers_on_two_threads_keep_each_other_out() {
    Python::initialize();
    Python::attach(|py| {
        let (bytes, producer) = producer(py, 16, 8);
        let bytes = bytes.bind(py).clone().into_any().unbind();
        let shared = shared_over(py, bytes.bind(py).cast::<PyByteArray>().unwrap());
        // A kernel writing the memory with the GIL released; another thread imports it.
        let mut written: TensorArgMut<'_, u8> = bytes.bind(py).extract().unwrap();
        py.detach(|| {
            written.view_mut().fill(9);
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    Python::attach(|py| {
                        let refused =
                            from_dlpack(producer.bind(py), &ImportOptions::default()).unwrap_err();
                        assert_import_refused(py, &refused, "from_dlpack", "another thread");
                        let capsule =
                            capsule_of(bytes.bind(py).cast::<PyByteArray>().unwrap()).unwrap();
                        let refused = from_capsule(capsule.as_any()).unwrap_err();
                        assert_import_refused(py, &refused, "from_capsule", "another thread");
                        // The refused capsule keeps its tensor: importable once the writer
                        // is gone.
                        assert!(capsule.is_valid_checked(Some(DLTENSOR_VERSIONED)));
                        let refused = exchange_api(shared.bind(py))
                            .unwrap()
                            .expect("a published class")
                            .managed_tensor(shared.bind(py))
                            .unwrap_err();
                        assert_import_refused(
                            py,
                            &refused,
                            "ExchangeApi::managed_tensor",
                            "another thread",
                        );
                    })
                });
            });
            written.view_mut().fill(10);
        });
        drop(written);
        // The other way round: an import held on this thread (a long-lived Rust value), a
        // writer on another.
        let import = from_dlpack(producer.bind(py), &ImportOptions::default()).unwrap();
        py.detach(|| {
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    Python::attach(|py| {
                        let refused = bytes
                            .bind(py)
                            .extract::<TensorArgMut<'_, u8>>()
                            .err()
                            .unwrap();
                        assert_held_by_an_import(py, &refused, "another thread");
                    })
                });
            });
            assert_eq!(import.view().as_slice::<u8>().unwrap(), [10; 16]);
        });
        drop(import);
        let _written: TensorArgMut<'_, u8> = bytes.bind(py).extract().unwrap();
    });
}

/// Nanoseconds per call of `op`, the best of five rounds of `count` calls.
fn time_per_call(count: u32, mut op: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let start = std::time::Instant::now();
            for _ in 0..count {
                op();
            }
            start.elapsed().as_nanos() as f64 / f64::from(count)
        })
        .fold(f64::INFINITY, f64::min)
}

/// What the imports' claims cost: an import of a NumPy array (where NumPy can be imported:
/// `PYTHONPATH` naming a site-packages that has it) and of a producer's capsule, and the
/// extraction of a typed argument (read and written) and an import beside 0, 100 and 1,000
/// live imports (whose claims a read registration never meets, and a written one or an
/// import finds through a sorted index). Printed, not asserted: run with
/// `make bench-claims` (a release build, NumPy on the path).
#[test]
#[ignore = "a measurement, printed: make bench-claims runs it"]
fn measure_the_cost_of_import_claims() {
    Python::initialize();
    Python::attach(|py| {
        let options = ImportOptions::default();
        if let Ok(numpy) = py.import("numpy") {
            let array = numpy.call_method1("zeros", (16, "uint8")).unwrap();
            let ns = time_per_call(100_000, || {
                drop(from_dlpack(&array, &options).unwrap());
            });
            println!("from_dlpack(numpy_array) + drop: {ns:.1} ns");
        } else {
            println!("NumPy not importable: no NumPy import measured");
        }
        let (_, producer) = producer(py, 16, 0);
        let ns = time_per_call(100_000, || {
            drop(from_dlpack(producer.bind(py), &options).unwrap());
        });
        println!("from_dlpack(producer's __dlpack__) + drop: {ns:.1} ns");
        let argument = PyByteArray::new(py, &[0u8; 16]).into_any();
        let mut held = Vec::new();
        let mut arrays = Vec::new();
        for live in [0usize, 100, 1_000] {
            while held.len() < live {
                let bytes = PyByteArray::new(py, &[1u8; 16]);
                held.push(from_capsule(capsule_of(&bytes).unwrap().as_any()).unwrap());
                arrays.push(bytes);
            }
            let read = time_per_call(100_000, || {
                drop(argument.extract::<TensorArg<'_, u8>>().unwrap());
            });
            let written = time_per_call(100_000, || {
                drop(argument.extract::<TensorArgMut<'_, u8>>().unwrap());
            });
            let imported = time_per_call(20_000, || {
                drop(from_dlpack(producer.bind(py), &options).unwrap());
            });
            println!(
                "{live} live imports: TensorArg extraction {read:.1} ns, TensorArgMut \
                 {written:.1} ns, from_dlpack(producer's __dlpack__) + drop {imported:.1} ns"
            );
        }
    });
}
