//! Capsules and negotiation, driven from Rust with an embedded interpreter.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dlbridge::{Device, DeviceType, Export, ManagedTensor};
use dlbridge_pyo3::{
    ImportOptions, PyObjectOwner,
    capsule::{from_capsule, into_capsule},
    device::dlpack_device,
    explain::{Copier, ImportPath, ImportStep},
    from_dlpack, from_dlpack_explained,
};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

/// An exported tensor whose owner counts its drops (the deleter's effect).
fn counted_tensor(drops: &Arc<AtomicUsize>, legacy: bool) -> ManagedTensor {
    struct Counted(Vec<f32>, Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }
    let mut owner = Counted(vec![1.0, 2.0, 3.0, 4.0], Arc::clone(drops));
    let data = owner.0.as_mut_ptr().cast();
    // SAFETY: the Vec inside the owner holds four f32 while the owner lives.
    let export = unsafe {
        Export::from_raw_parts(
            owner,
            data,
            dlbridge::DataType::FLOAT32,
            Device::CPU,
            &[2, 2],
        )
    };
    if legacy {
        export.into_legacy().unwrap()
    } else {
        export.into_versioned().unwrap()
    }
}

/// Runs `f` attached to an embedded interpreter (started once per test process).
fn attach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> R {
    Python::initialize();
    Python::attach(f)
}

fn refcount(object: &Bound<'_, PyAny>) -> isize {
    // SAFETY: a live object, read with the GIL held.
    unsafe { pyo3::ffi::Py_REFCNT(object.as_ptr()) }
}

fn capsule_name(capsule: &Bound<'_, PyCapsule>) -> String {
    capsule
        .name()
        .unwrap()
        // SAFETY: the capsule is alive, and with it its static name.
        .map(|name| unsafe { name.as_cstr() }.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[test]
fn capsules_round_trip_and_are_consumed_once() {
    attach(|py| {
        for legacy in [false, true] {
            let drops = Arc::new(AtomicUsize::new(0));
            let capsule = into_capsule(py, counted_tensor(&drops, legacy)).unwrap();
            let expected = if legacy {
                "dltensor"
            } else {
                "dltensor_versioned"
            };
            assert_eq!(capsule_name(&capsule), expected);
            let tensor = from_capsule(capsule.as_any()).unwrap();
            assert_eq!(capsule_name(&capsule), format!("used_{expected}"));
            assert_eq!(
                tensor.view().as_slice::<f32>().unwrap(),
                &[1.0, 2.0, 3.0, 4.0]
            );
            let again = from_capsule(capsule.as_any()).unwrap_err();
            assert!(again.is_instance_of::<PyValueError>(py), "{again}");
            assert!(again.to_string().contains("already consumed"), "{again}");
            drop(capsule);
            assert_eq!(drops.load(Ordering::SeqCst), 0, "the consumer owns it now");
            drop(tensor);
            assert_eq!(drops.load(Ordering::SeqCst), 1);
        }
    });
}

#[test]
fn an_unconsumed_capsule_frees_its_tensor_once_and_keeps_the_exception_in_flight() {
    attach(|py| {
        let drops = Arc::new(AtomicUsize::new(0));
        let locals = PyDict::new(py);
        let capsule = into_capsule(py, counted_tensor(&drops, false)).unwrap();
        let holder = pyo3::types::PyList::new(py, [capsule]).unwrap();
        locals.set_item("holder", holder).unwrap();
        let result = py.run(
            c"def f(c):\n    del c\n    1 / 0\ntry:\n    f(holder.pop())\nexcept ZeroDivisionError as e:\n    caught = type(e).__name__\n",
            None,
            Some(&locals),
        );
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(
            locals.get_item("caught").unwrap().unwrap().to_string(),
            "ZeroDivisionError"
        );
        drop(locals);
        py.run(c"import gc; gc.collect()", None, None).unwrap();
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "the capsule freed its tensor once"
        );
    });
}

#[test]
fn failed_imports_leave_the_capsule_owning_the_tensor() {
    attach(|py| {
        let drops = Arc::new(AtomicUsize::new(0));
        // A capsule holding the invalid tensor: built from a valid one, then broken.
        let capsule = into_capsule(py, counted_tensor(&drops, false)).unwrap();
        let pointer = capsule
            .pointer_checked(Some(c"dltensor_versioned"))
            .unwrap();
        let managed = pointer
            .as_ptr()
            .cast::<dlbridge::ffi::DLManagedTensorVersioned>();
        // SAFETY: the capsule's live tensor; its shape array holds two values.
        unsafe { *(*managed).dl_tensor.shape = -1 };
        let error = from_capsule(capsule.as_any()).unwrap_err();
        assert!(error.is_instance_of::<PyBufferError>(py), "{error}");
        assert!(
            error.to_string().contains("DLTensor.shape[0] = -1"),
            "{error}"
        );
        assert_eq!(capsule_name(&capsule), "dltensor_versioned", "not renamed");
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        drop(capsule);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "the capsule's destructor freed it"
        );
    });
}

#[test]
fn negotiation_retries_for_old_producers_and_reads_device_quirks() {
    attach(|py| {
        let module = PyModule::from_code(
            py,
            c"
calls = []
class Old:
    def __init__(self, capsule):
        self.capsule = capsule
    def __dlpack__(self, stream=None):
        calls.append('old')
        return self.capsule
    def __dlpack_device__(self):
        return (1, None)
class Modern:
    def __init__(self, capsule):
        self.capsule = capsule
    def __dlpack__(self, **kwargs):
        calls.append(sorted(kwargs))
        return self.capsule
    def __dlpack_device__(self):
        import enum
        class D(enum.IntEnum):
            CPU = 1
        return (D.CPU, 0)
class NotACapsule:
    def __dlpack__(self, **kwargs):
        return 42
",
            c"producers.py",
            c"producers",
        )
        .unwrap();
        let drops = Arc::new(AtomicUsize::new(0));
        let make = |class: &str| {
            let capsule = into_capsule(py, counted_tensor(&drops, false)).unwrap();
            module.getattr(class).unwrap().call1((capsule,)).unwrap()
        };
        let old = make("Old");
        assert_eq!(
            dlpack_device(&old).unwrap(),
            Device::CPU,
            "device_id None reads as 0"
        );
        let tensor = from_dlpack(&old, &ImportOptions::default()).unwrap();
        assert_eq!(tensor.view().shape(), &[2, 2]);
        let modern = make("Modern");
        let _tensor = from_dlpack(&modern, &ImportOptions::default()).unwrap();
        let calls = module.getattr("calls").unwrap().to_string();
        assert_eq!(
            calls, "['old', ['max_version']]",
            "old: bare retry; modern: max_version only"
        );
        let not_capsule = module.getattr("NotACapsule").unwrap().call0().unwrap();
        let error = from_dlpack(&not_capsule, &ImportOptions::default()).unwrap_err();
        assert!(error.is_instance_of::<PyTypeError>(py), "{error}");
        let error = from_dlpack(&py.None().into_bound(py), &ImportOptions::default()).unwrap_err();
        assert!(error.is_instance_of::<PyTypeError>(py), "{error}");
        // Asking for a device the producer is not on, from an old producer: BufferError.
        let old = make("Old");
        let options = ImportOptions::default().with_device(Some(Device::new(DeviceType::CUDA, 0)));
        let error = from_dlpack(&old, &options).unwrap_err();
        assert!(error.is_instance_of::<PyBufferError>(py), "{error}");
        // copy=True from an old producer: copied here, flagged IS_COPIED.
        let old = make("Old");
        let options = ImportOptions::default().with_copy(Some(true));
        let copy = from_dlpack(&old, &options).unwrap();
        assert!(copy.view().flags().is_copied());
    });
}

#[test]
fn python_owners_may_be_dropped_on_any_thread() {
    attach(|py| {
        let list = pyo3::types::PyList::empty(py);
        let owner = PyObjectOwner::new(list.clone().into_any().unbind());
        assert_eq!(refcount(list.as_any()), 2);
        py.detach(|| std::thread::spawn(move || drop(owner)).join().unwrap());
        assert_eq!(refcount(list.as_any()), 1);
    });
}

#[test]
fn explained_imports_say_their_path_their_retries_and_who_copied() {
    attach(|py| {
        let module = PyModule::from_code(
            py,
            c"
class Old:
    def __init__(self, capsule):
        self.capsule = capsule
    def __dlpack__(self):
        return self.capsule
    def __dlpack_device__(self):
        return (1, 0)
class Pinned:
    def __init__(self, capsule):
        self.capsule = capsule
    def __dlpack__(self, **kwargs):
        return self.capsule
    def __dlpack_device__(self):
        return (3, 0)
",
            c"explained_producers.py",
            c"explained_producers",
        )
        .unwrap();
        let drops = Arc::new(AtomicUsize::new(0));
        let make = |class: &str, legacy: bool| {
            let capsule = into_capsule(py, counted_tensor(&drops, legacy)).unwrap();
            module.getattr(class).unwrap().call1((capsule,)).unwrap()
        };
        let copy = ImportOptions::default().with_copy(Some(true));

        // An old producer: both retries, a legacy tensor (read-only), and for copy=True the
        // copy is dlbridge's.
        let (legacy, report) =
            from_dlpack_explained(&make("Old", true), &ImportOptions::default()).unwrap();
        assert_eq!(report.path, ImportPath::DlpackLegacy);
        assert_eq!(report.steps, [ImportStep::MaxVersionRefused]);
        assert_eq!((report.version, report.copied), (None, None));
        assert!(report.read_only);
        let (copied, report) = from_dlpack_explained(&make("Old", true), &copy).unwrap();
        assert_eq!(
            report.steps,
            [
                ImportStep::MaxVersionRefused,
                ImportStep::KeywordsRefused,
                ImportStep::CopiedHere
            ]
        );
        assert_eq!(report.copied, Some(Copier::Dlbridge));
        assert!(!report.read_only && copied.view().flags().is_copied());

        // Pinned memory (`__dlpack_device__` says CUDAHost, the capsule CPU) asked for on the
        // CPU: the producer gave the device asked for, which is kept as it is.
        let cpu = ImportOptions::default().with_device(Some(Device::CPU));
        let (pinned, report) = from_dlpack_explained(&make("Pinned", false), &cpu).unwrap();
        assert_eq!(report.path, ImportPath::DlpackVersioned);
        assert_eq!(report.steps, []);
        assert_eq!((report.device, report.copied), (Device::CPU, None));
        assert_eq!(report.version, Some(dlbridge::Version::CURRENT));
        assert_eq!(
            (report.shape.as_slice(), report.strides.as_slice()),
            (&[2, 2][..], &[2, 1][..])
        );
        assert_eq!(pinned.view().device(), Device::CPU);

        // A raw capsule; a refusal is from_dlpack's.
        let capsule = into_capsule(py, counted_tensor(&drops, false)).unwrap();
        let (raw, report) =
            from_dlpack_explained(capsule.as_any(), &ImportOptions::default()).unwrap();
        assert_eq!((report.path, report.steps.len()), (ImportPath::Capsule, 0));
        assert_eq!(report.path.to_string(), "capsule");
        let error = from_dlpack_explained(capsule.as_any(), &ImportOptions::default()).unwrap_err();
        assert!(error.is_instance_of::<PyValueError>(py), "{error}");

        // Every tensor handed out was released once (the copy's source at once).
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        drop((legacy, copied, pinned, raw));
        assert_eq!(drops.load(Ordering::SeqCst), 4);
    });
}
