//! XLA FFI handlers published on a module, for JAX: `dlbridge.jax.register(module)` registers
//! each with `jax.ffi.register_ffi_target`, so that `jax.jit` code calls the Rust kernel
//! through XLA, with no `__dlpack__` and no call back into Python.
//!
//! A handler is an `unsafe extern "C" fn` whose body is [`dlbridge::xla::handle`]: XLA's
//! buffers as validated DLPack views, its metadata query answered, errors and panics handed to
//! XLA. [`publish_xla_handlers`] puts them on the module as
//! `__dlbridge_xla_handlers__`: `{name: {platform: capsule}}`, each capsule holding the
//! handler's address as `jax.ffi.pycapsule` does.
//!
//! ```
//! use dlbridge_pyo3::dlbridge::Device;
//! use dlbridge_pyo3::dlbridge::xla::{Call, HandlerError, ffi, handle};
//! use dlbridge_pyo3::xla::{XlaHandler, publish_xla_handlers};
//! use pyo3::prelude::*;
//!
//! /// `out = a * 2` for float32 buffers of one shape.
//! unsafe extern "C" fn double(frame: *mut ffi::XLA_FFI_CallFrame) -> *mut ffi::XLA_FFI_Error {
//!     // SAFETY: XLA calls a handler with a live frame of host buffers (a CPU handler).
//!     unsafe { handle(frame, Device::CPU, 0, double_body) }
//! }
//!
//! fn double_body(call: &mut Call<'_>) -> Result<(), HandlerError> {
//!     let x = call.args[0].as_slice::<f32>()?.to_vec();
//!     let out = call.results[0].as_mut_slice::<f32>()?;
//!     for (out, x) in out.iter_mut().zip(x) {
//!         *out = 2.0 * x;
//!     }
//!     Ok(())
//! }
//!
//! #[pymodule]
//! fn my_kernels(module: &Bound<'_, PyModule>) -> PyResult<()> {
//!     publish_xla_handlers(module, &[XlaHandler::cpu("double", double)])
//! }
//! # Python::initialize();
//! # Python::attach(|py| {
//! #     let module = PyModule::new(py, "my_kernels").unwrap();
//! #     my_kernels(&module).unwrap();
//! #     let handlers = module.getattr("__dlbridge_xla_handlers__").unwrap();
//! #     assert!(handlers.get_item("double").unwrap().get_item("cpu").is_ok());
//! # });
//! ```

use std::ffi::c_void;

use dlbridge::xla::ffi::XLA_FFI_Handler;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyModule};

/// The module attribute that holds the published handlers.
pub const XLA_HANDLERS_ATTRIBUTE: &str = "__dlbridge_xla_handlers__";

/// One handler of a kernel for one XLA platform.
#[derive(Clone, Copy, Debug)]
pub struct XlaHandler {
    /// The kernel's name (the custom call target is `<module>.<name>` once registered).
    pub name: &'static str,
    /// The platform, as `jax.ffi.register_ffi_target` names it (`"cpu"`, `"CUDA"`).
    pub platform: &'static str,
    /// The handler, whose body is [`dlbridge::xla::handle`] with that platform's device.
    pub execute: XLA_FFI_Handler,
}

impl XlaHandler {
    /// A handler of the CPU platform: its buffers are host memory ([`dlbridge::Device::CPU`]).
    pub const fn cpu(name: &'static str, execute: XLA_FFI_Handler) -> Self {
        XlaHandler {
            name,
            platform: "cpu",
            execute,
        }
    }

    /// A handler of the CUDA platform: its buffers are memory of the CUDA device XLA runs the
    /// call on ([`dlbridge::xla::handle_on_device`]), its work goes on the call's stream.
    pub const fn cuda(name: &'static str, execute: XLA_FFI_Handler) -> Self {
        XlaHandler {
            name,
            platform: "CUDA",
            execute,
        }
    }
}

/// Publishes `handlers` on `module` (`__dlbridge_xla_handlers__`, `{name: {platform:
/// capsule}}`, added to what the module published before), for `dlbridge.jax.register`.
/// `ValueError` for a name given twice for one platform.
pub fn publish_xla_handlers(module: &Bound<'_, PyModule>, handlers: &[XlaHandler]) -> PyResult<()> {
    let py = module.py();
    let published = published_dict(module, XLA_HANDLERS_ATTRIBUTE)?;
    for handler in handlers {
        let platforms = match published.get_item(handler.name)? {
            Some(platforms) => platforms.cast_into::<PyDict>()?,
            None => {
                let fresh = PyDict::new(py);
                published.set_item(handler.name, &fresh)?;
                fresh
            }
        };
        if platforms.contains(handler.platform)? {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "the XLA handler {:?} for {:?} is published twice",
                handler.name, handler.platform
            )));
        }
        platforms.set_item(handler.platform, handler_capsule(py, handler.execute)?)?;
    }
    Ok(())
}

/// The dict a module publishes as `attribute`, made empty on first use (what `dlbridge.jax`
/// and `dlbridge.torch` read: handlers, kernels).
pub(crate) fn published_dict<'py>(
    module: &Bound<'py, PyModule>,
    attribute: &str,
) -> PyResult<Bound<'py, PyDict>> {
    match module.getattr(attribute) {
        Ok(existing) => Ok(existing.cast_into::<PyDict>()?),
        Err(_) => {
            let fresh = PyDict::new(module.py());
            module.setattr(attribute, &fresh)?;
            Ok(fresh)
        }
    }
}

/// A capsule holding `execute`'s address, unnamed and without a destructor, as
/// `jax.ffi.pycapsule` makes one (XLA reads the pointer; a function lives as long as the
/// module's code).
fn handler_capsule(py: Python<'_>, execute: XLA_FFI_Handler) -> PyResult<Bound<'_, PyAny>> {
    let address = execute as *mut c_void;
    // SAFETY: a non-NULL pointer (a function's address), no name and no destructor; the GIL is
    // held (`py`). A new reference, or NULL with an exception.
    unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            pyo3::ffi::PyCapsule_New(address, std::ptr::null(), None),
        )
    }
}
