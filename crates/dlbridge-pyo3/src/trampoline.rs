//! The one way in from C. Every `extern "C"` function of this crate (the exchange table's
//! functions, the writability hook, the `__dlpack__` methods, capsule destructors, the
//! aliasing registry's table) runs its body through one of the flavours below, so that:
//!
//! - no panic unwinds into C: it is caught and becomes a Python exception that keeps the
//!   panic's message (`RuntimeError: dlbridge: a panic in <where>: <message>`);
//! - the value that tells the caller "failed" comes from the function's return type
//!   ([`ErrorValue`]: -1 for `int`, NULL for `PyObject*`; for a function that returns nothing,
//!   a capsule destructor, the exception is reported as unraisable);
//! - an unwind that would still escape (a panic while reporting a panic) aborts the process.
//!
//! The flavours differ in how they reach the interpreter:
//!
//! - [`attaching`]: for functions a consumer may call from any thread (the exchange table's
//!   functions, the writability hook). The standard has consumers hold the GIL, which makes
//!   attaching a no-op; it also keeps a consumer that forgot it from corrupting the
//!   interpreter.
//! - [`attached`]: for functions CPython calls with the thread attached (methods, capsule
//!   destructors). It takes the attachment as given, without PyO3's bookkeeping of attached
//!   threads, which would cost tens of nanoseconds on every `__dlpack__` call.
//! - [`detached`]: for a function whose C contract reports errors without Python (the
//!   exchange table's allocator, through its `SetError` callback); the body never touches
//!   the interpreter.
//! - [`infallible`]: for a function whose C contract has no way to fail (the aliasing
//!   registry's table: version 1 says 0 or 1, nothing else). Nothing in it panics but a
//!   broken invariant, which aborts.

use std::any::Any;
use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::prelude::*;

/// The return type of an entry point, which says how a failure is handed to the caller.
pub(crate) trait ErrorValue {
    /// Hands `error` to the caller: sets it as the exception being raised and returns the
    /// value that says so (-1, NULL), or, for a function that returns nothing, reports it as
    /// unraisable (`sys.unraisablehook`).
    fn raise(py: Python<'_>, error: PyErr) -> Self;
}

impl ErrorValue for c_int {
    fn raise(py: Python<'_>, error: PyErr) -> Self {
        error.restore(py);
        -1
    }
}

impl ErrorValue for *mut ffi::PyObject {
    fn raise(py: Python<'_>, error: PyErr) -> Self {
        error.restore(py);
        std::ptr::null_mut()
    }
}

impl ErrorValue for () {
    fn raise(py: Python<'_>, error: PyErr) -> Self {
        error.write_unraisable(py, None);
    }
}

/// Runs an entry point's body with the thread attached to the interpreter (attaching it if
/// needed): its result, or the error value of `R` with the exception (or the panic, as a
/// `RuntimeError` naming `place`) raised.
pub(crate) fn attaching<R: ErrorValue>(
    place: &str,
    body: impl FnOnce(Python<'_>) -> PyResult<R>,
) -> R {
    let trap = AbortOnUnwind;
    let result = Python::attach(|py| match catch(|| body(py)) {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => R::raise(py, error),
        Err(message) => R::raise(py, panic_error(place, &message)),
    });
    std::mem::forget(trap);
    result
}

/// As [`attaching`], for an entry point that CPython calls with the thread attached.
///
/// The body runs with that token and without PyO3's own bookkeeping of attached threads
/// (which, entered from C, would call `PyGILState_Ensure`). Without that bookkeeping PyO3
/// queues the release of any `Py` reference dropped in the body until its next entry, so a
/// body's successful path should drop none (hold only `Bound` and `Borrowed` references);
/// errors are raised after attaching properly, which releases what was queued.
///
/// # Safety
///
/// The calling thread must be attached to the interpreter (hold the GIL).
pub(crate) unsafe fn attached<R: ErrorValue>(
    place: &str,
    body: impl for<'py> FnOnce(Python<'py>) -> PyResult<R>,
) -> R {
    let trap = AbortOnUnwind;
    // SAFETY: the caller's guarantee.
    let py = unsafe { Python::assume_attached() };
    let result = match catch(|| body(py)) {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => raise_attached(error),
        Err(message) => raise_attached(panic_error(place, &message)),
    };
    std::mem::forget(trap);
    result
}

/// Raises `error` from [`attached`], attached through PyO3 so that the references the error
/// drops are released now.
#[cold]
fn raise_attached<R: ErrorValue>(error: PyErr) -> R {
    Python::attach(|py| R::raise(py, error))
}

/// Runs the body of an entry point that reports failures without Python: a failure's
/// message, or a panic's (naming `place`), goes to `report`, and the entry point returns -1.
pub(crate) fn detached(
    place: &str,
    body: impl FnOnce() -> Result<(), String>,
    report: impl FnOnce(&str),
) -> c_int {
    let trap = AbortOnUnwind;
    let status = match catch(body) {
        Ok(Ok(())) => 0,
        Ok(Err(message)) => {
            report(&message);
            -1
        }
        Err(message) => {
            report(&format!("dlbridge: a panic in {place}: {message}"));
            -1
        }
    };
    std::mem::forget(trap);
    status
}

/// Runs the body of an entry point whose C contract cannot report a failure: a panic (a
/// broken invariant; the panic hook has printed its message) aborts the process.
#[inline(always)]
pub(crate) fn infallible<R>(body: impl FnOnce() -> R) -> R {
    let trap = AbortOnUnwind;
    let result = body();
    std::mem::forget(trap);
    result
}

/// Runs `body`, turning a panic into its message.
fn catch<R>(body: impl FnOnce() -> R) -> Result<R, String> {
    catch_unwind(AssertUnwindSafe(body)).map_err(|payload| panic_message(&*payload))
}

/// The message a panic was raised with (`panic!("...")` carries a `&str` or a `String`).
fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// The exception for a panic in `place`.
#[cold]
fn panic_error(place: &str, message: &str) -> PyErr {
    PyRuntimeError::new_err(format!("dlbridge: a panic in {place}: {message}"))
}

/// Aborts the process if dropped while unwinding: armed at the start of a flavour and
/// forgotten at its end, so that only an unwind escaping the flavour drops it.
pub(crate) struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        std::process::abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_keeps_its_message() {
        let caught = catch(|| -> i32 { panic!("the {} went wrong", "kernel") });
        assert_eq!(caught.unwrap_err(), "the kernel went wrong");
        let caught = catch(|| -> i32 { std::panic::panic_any(7u8) });
        assert_eq!(caught.unwrap_err(), "a panic without a message");
    }

    #[test]
    fn detached_reports_failures_and_panics() {
        let mut reported = Vec::new();
        assert_eq!(detached("f", || Ok(()), |m| reported.push(m.to_owned())), 0);
        assert_eq!(
            detached(
                "f",
                || Err("no".to_owned()),
                |m| reported.push(m.to_owned())
            ),
            -1
        );
        assert_eq!(
            detached("f", || panic!("boom"), |m| reported.push(m.to_owned())),
            -1
        );
        assert_eq!(reported, ["no", "dlbridge: a panic in f: boom"]);
    }

    #[test]
    fn attaching_raises_the_panic_with_its_message() {
        Python::initialize();
        // The thread stays known to the interpreter throughout (attached, then detached around
        // the call): the exception is set on its thread state, which a thread that was never
        // attached would get anew for the call and lose with it when the call detaches (as it
        // did when another test initialized the interpreter on another thread first).
        Python::attach(|py| {
            let status: c_int = py.detach(|| attaching("a test", |_py| panic!("lost {}", 42)));
            assert_eq!(status, -1);
            let error = PyErr::take(py).expect("an exception is set");
            assert!(error.is_instance_of::<PyRuntimeError>(py));
            assert_eq!(
                error.value(py).to_string(),
                "dlbridge: a panic in a test: lost 42"
            );
        });
    }
}
