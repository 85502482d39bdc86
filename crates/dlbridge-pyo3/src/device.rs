//! Devices as the Python protocol writes them: `(device_type, device_id)` pairs, read from
//! `__dlpack_device__()` and from `device=` / `dl_device=` arguments.

use dlbridge::{Device, DeviceType};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::errors::repr_of;

/// Reads `obj.__dlpack_device__()`: a `(device_type, device_id)` pair of ints or IntEnums; a
/// `device_id` of None (Paddle, for CPU) reads as 0.
///
/// ```
/// use dlbridge::DeviceType;
/// use dlbridge_pyo3::device::dlpack_device;
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     // A producer on the second CUDA device, as `torch.ones(3, device="cuda:1")` is.
///     let on_gpu = c"type('T', (), {'__dlpack_device__': lambda self: (2, 1)})()";
///     let on_gpu = py.eval(on_gpu, None, None)?;
///     assert_eq!(dlpack_device(&on_gpu)?, Device::new(DeviceType::CUDA, 1));
///     // No DLPack producer: the AttributeError of the missing method.
///     let refused = dlpack_device(&py.eval(c"'text'", None, None)?).unwrap_err();
///     assert!(refused.is_instance_of::<pyo3::exceptions::PyAttributeError>(py), "{refused}");
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub fn dlpack_device(object: &Bound<'_, PyAny>) -> PyResult<Device> {
    device_from_tuple(&object.call_method0(intern!(object.py(), "__dlpack_device__"))?)
}

/// Reads a `(device_type, device_id)` tuple, as `__dlpack_device__()` returns it and as
/// `device=` / `dl_device=` arguments pass it: ints or IntEnums, and a `device_id` of None
/// (Paddle, for CPU) read as 0. Anything else is a `TypeError`.
///
/// ```
/// use dlbridge::DeviceType;
/// use dlbridge_pyo3::device::device_from_tuple;
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::exceptions::PyTypeError;
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     let cuda = py.eval(c"(2, 0)", None, None)?;
///     assert_eq!(device_from_tuple(&cuda)?, Device::new(DeviceType::CUDA, 0));
///     // PaddlePaddle's CPU.
///     assert_eq!(device_from_tuple(&py.eval(c"(1, None)", None, None)?)?, Device::CPU);
///     let error = device_from_tuple(&py.eval(c"'cpu'", None, None)?).unwrap_err();
///     assert!(error.is_instance_of::<PyTypeError>(py));
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub fn device_from_tuple(result: &Bound<'_, PyAny>) -> PyResult<Device> {
    let bad = || {
        PyTypeError::new_err(format!(
            "expected a (device_type, device_id) tuple of ints, got {}",
            repr_of(result)
        ))
    };
    let pair = result.cast::<PyTuple>().map_err(|_| bad())?;
    if pair.len() != 2 {
        return Err(bad());
    }
    let device_type: i32 = pair.get_item(0)?.extract().map_err(|_| bad())?;
    let id = pair.get_item(1)?;
    let device_id: i32 = if id.is_none() {
        0
    } else {
        id.extract().map_err(|_| bad())?
    };
    Ok(Device::new(DeviceType(device_type), device_id))
}

/// Reads a `(device_type, device_id)` argument called `name` (`device=`, `dl_device=`) as
/// [`device_from_tuple`] does; a malformed one is a `ValueError` naming the argument.
///
/// ```
/// use dlbridge_pyo3::device::device_argument;
/// use dlbridge_pyo3::prelude::*;
/// use pyo3::exceptions::PyValueError;
/// use pyo3::prelude::*;
/// # Python::initialize();
/// Python::attach(|py| -> PyResult<()> {
///     assert_eq!(device_argument("dl_device", &py.eval(c"(1, 0)", None, None)?)?, Device::CPU);
///     let error = device_argument("dl_device", &py.eval(c"'cuda:0'", None, None)?).unwrap_err();
///     // A ValueError that names the argument.
///     assert!(error.is_instance_of::<PyValueError>(py));
///     assert!(error.to_string().starts_with("ValueError: dl_device: "));
///     Ok(())
/// })
/// # .unwrap();
/// ```
pub fn device_argument(name: &str, value: &Bound<'_, PyAny>) -> PyResult<Device> {
    device_from_tuple(value).map_err(|error| PyValueError::new_err(format!("{name}: {error}")))
}
