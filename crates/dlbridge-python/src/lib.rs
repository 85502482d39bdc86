//! The extension module of the `dlbridge` Python package: `dlbridge.Tensor`, `from_dlpack`
//! and the creation functions, on top of the `dlbridge` core and `dlbridge-pyo3`.
//!
//! - `tensor`: the `Tensor` class;
//! - `buffer`: its buffer protocol (layout and `struct` formats);
//! - `pickling`: pickling it (`__reduce_ex__`, protocol 5's out-of-band buffers) and the
//!   reconstructor's checks;
//! - `frames`: a tensor as a header and its bytes, `dlbridge.distributed`'s format for Ray
//!   and Dask (`_frame_of`, `_tensor_from_frame`);
//! - `creation`: `from_dlpack`, `empty`, `zeros`, `arange`, the pickle reconstructor and their
//!   arguments;
//! - `minifloat`: float8 encodings, for `arange`;
//! - `explain`: `explain`, what `from_dlpack` and typed arguments do with an object;
//! - `framework_table`: `_framework_table`, what each framework's tensors can hold of a result
//!   (dlbridge-pyo3's table), for `dlbridge.distributed`;
//! - `safetensors`: safetensors files mapped into tensors and written from any producers
//!   (`_safetensors_load`, `_safetensors_metadata`, `_safetensors_save`), for
//!   `dlbridge.safetensors`;
//! - `testing` (cargo feature `testing`, off by default): the test suite's kernels, the
//!   submodule `dlbridge._dlbridge._testing`.
//!
//! The pure-Python parts, the type stubs and the tests live under `python/`.

mod minifloat;
mod pickling;
mod tensor;
mod creation;
mod frames;
mod explain;
mod framework_table;
mod safetensors;
#[cfg(feature = "testing")]
mod testing;

use dlbridge::{Flags, Version};
use dlbridge_pyo3::publish_dlpack;
use pyo3::prelude::*;

pub use tensor::Tensor;

/// The `dlbridge._dlbridge` extension module. It runs without the GIL on free-threaded Python
/// (`gil_used = false`): its state is dlbridge-pyo3's, which is safe without it.
#[pymodule(gil_used = false)]
fn _dlbridge(module: &Bound<'_, PyModule>) -> PyResult<()> {
    // The crate's version, which maturin also gives the package: right in every build,
    // `maturin develop` and editable installs included, whatever metadata is installed.
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add_class::<Tensor>()?;
    publish_dlpack::<Tensor>(module.py())?;
    module.add_function(wrap_pyfunction!(tensor::_exchange_api_exports, module)?)?;
    #[cfg(feature = "testing")]
    module.add_submodule(&testing::module(module.py())?)?;
    module.add_function(wrap_pyfunction!(creation::from_dlpack, module)?)?;
    module.add_function(wrap_pyfunction!(creation::empty, module)?)?;
    module.add_function(wrap_pyfunction!(creation::zeros, module)?)?;
    module.add_function(wrap_pyfunction!(creation::arange, module)?)?;
    module.add_function(wrap_pyfunction!(creation::_tensor_from_pickle, module)?)?;
    module.add_function(wrap_pyfunction!(frames::_frame_of, module)?)?;
    module.add_function(wrap_pyfunction!(frames::_tensor_from_frame, module)?)?;
    module.add_function(wrap_pyfunction!(explain::explain, module)?)?;
    module.add_function(wrap_pyfunction!(framework_table::_framework_table, module)?)?;
    module.add_function(wrap_pyfunction!(safetensors::_safetensors_load, module)?)?;
    module.add_function(wrap_pyfunction!(
        safetensors::_safetensors_metadata,
        module
    )?)?;
    module.add_function(wrap_pyfunction!(safetensors::_safetensors_save, module)?)?;
    module.add(
        "DLPACK_VERSION",
        (Version::CURRENT.major, Version::CURRENT.minor),
    )?;
    module.add("FLAG_READ_ONLY", Flags::READ_ONLY.bits())?;
    module.add("FLAG_IS_COPIED", Flags::IS_COPIED.bits())?;
    module.add(
        "FLAG_IS_SUBBYTE_TYPE_PADDED",
        Flags::IS_SUBBYTE_TYPE_PADDED.bits(),
    )?;
    Ok(())
}
