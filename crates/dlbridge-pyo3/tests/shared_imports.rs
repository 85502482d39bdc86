//! Tensors imported from Python objects hand out shared access only (issue 27): the object,
//! its other views and other imports of it can still reach the memory, so two imports must
//! never give a `&mut [T]` beside a `&[T]`. A copy made for the import (IS_COPIED, or made
//! here) is the caller's alone and may be written.

use std::sync::Arc;

use dlbridge::{Error, Export, ManagedTensor};
use dlbridge_pyo3::{
    ImportOptions,
    capsule::{from_capsule, into_capsule},
    from_dlpack,
};
use pyo3::prelude::*;

#[test]
fn an_imported_capsule_reads_but_does_not_write() {
    Python::initialize();
    Python::attach(|py| {
        // Two capsules over one memory, as two `__dlpack__` calls of one object give.
        let original = Arc::new(
            Export::new(vec![1i32, 2, 3], &[3])
                .into_versioned()
                .unwrap(),
        );
        let first = into_capsule(py, Arc::clone(&original).share_versioned().unwrap()).unwrap();
        let second = into_capsule(py, Arc::clone(&original).share_versioned().unwrap()).unwrap();
        drop(original);
        let mut a = from_capsule(&first).unwrap();
        let mut b = from_capsule(&second).unwrap();
        assert!(!a.is_exclusive() && !b.is_exclusive());
        assert_eq!(a.as_mut_slice::<i32>(), Err(Error::SharedMemory));
        assert_eq!(b.elements_mut::<i32>().unwrap_err(), Error::SharedMemory);
        assert_eq!(
            a.view().as_slice::<i32>().unwrap(),
            b.view().as_slice::<i32>().unwrap()
        );
        // Shares of a tensor that Rust still held when they left for Python go out read-only
        // (into_capsule takes the rule of every way out), so no consumer writes what
        // `original` could still read.
        assert!(a.view().is_read_only() && b.view().is_read_only());
    });
}

#[test]
fn an_object_imported_with_from_dlpack_reads_but_does_not_write() {
    Python::initialize();
    Python::attach(|py| {
        let tensor = Export::new(vec![0.5f32; 4], &[4]).into_versioned().unwrap();
        let capsule = into_capsule(py, tensor).unwrap();
        let mut imported = from_dlpack(capsule.as_any(), &ImportOptions::default()).unwrap();
        assert_eq!(imported.as_mut_slice::<f32>(), Err(Error::SharedMemory));
        assert_eq!(imported.view().as_slice::<f32>().unwrap(), &[0.5; 4]);
    });
}

#[test]
fn a_copy_made_for_the_import_is_the_callers_to_write() {
    Python::initialize();
    Python::attach(|py| {
        let tensor = Export::new(vec![1u8, 2, 3], &[3]).into_versioned().unwrap();
        let capsule = into_capsule(py, tensor).unwrap();
        let options = ImportOptions::default().with_copy(Some(true));
        let mut copy: ManagedTensor = from_dlpack(capsule.as_any(), &options).unwrap();
        assert!(copy.view().flags().is_copied() && copy.is_exclusive());
        copy.as_mut_slice::<u8>().unwrap()[0] = 9;
        assert_eq!(copy.view().as_slice::<u8>().unwrap(), &[9, 2, 3]);
        // A capsule the producer flagged IS_COPIED is a private copy too.
        let private = Export::new(vec![4u8, 5], &[2])
            .is_copied(true)
            .into_versioned()
            .unwrap();
        let mut taken = from_capsule(&into_capsule(py, private).unwrap()).unwrap();
        taken.as_mut_slice::<u8>().unwrap()[1] = 6;
        assert_eq!(taken.view().as_slice::<u8>().unwrap(), &[4, 6]);
    });
}
