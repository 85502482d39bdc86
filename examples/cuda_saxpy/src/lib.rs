//! One CUDA kernel written in Rust-side source, called on PyTorch and CuPy tensors on the GPU
//! through dlbridge's device arguments, on the caller's stream.
//!
//! ```text
//! >>> import torch, dlbridge_cuda_saxpy as k
//! >>> x, y = torch.ones(4, device="cuda"), torch.arange(4.0, device="cuda")
//! >>> k.saxpy(2.0, x, y)            # a new torch tensor on the GPU: 2 * x + y
//! >>> k.saxpy_into(2.0, x, y, y)    # ... or written into a tensor of the caller's
//! ```
//!
//! - The kernel is CUDA C in this file ([`SAXPY_SOURCE`]), compiled once per process with NVRTC
//!   through cudarc and loaded once per device; the CUDA driver and NVRTC are loaded at run
//!   time, so the extension builds without CUDA. Where NVRTC is not on the loader's path, the
//!   copy that PyTorch's wheels ship (the `nvidia-cuda-nvrtc-cu12` package) is loaded first.
//! - The arguments are [`CudaArg`]s: extraction refuses a tensor that is not float32, not one
//!   C-contiguous dimension, or not on a CUDA device, naming the argument; each gives its
//!   device pointer and the stream its producer works on (PyTorch's or CuPy's current stream).
//! - The kernel is enqueued on that stream with the GIL released, and nothing waits for it:
//!   the caller's later work on the stream is ordered after it, as for the framework's own
//!   operations.
//! - `saxpy` allocates its result with cudarc on the caller's stream and returns it as a
//!   tensor of the caller's framework (PyTorch: through its exchange table; CuPy: its
//!   `from_dlpack`), zero-copy; the buffer is freed on that stream when the framework drops
//!   it, so that stream must outlive the result (PyTorch's streams live as long as the process;
//!   a `cupy.cuda.Stream` made for the call must be kept while its results are).
//! - `saxpy_out` (a result shaped like `x`) and `scale_` (in place) are declared once with
//!   `dlbridge_pyo3::kernel!`: eager functions, and the kernels `dlbridge.jax.kernel` runs
//!   inside `jax.jit` (XLA's CUDA handler, on XLA's stream) and `dlbridge.torch.register` makes
//!   PyTorch operators with a CUDA implementation, for `torch.compile` (`compiled_graphs.py`).
//!
//! Without a CUDA driver the functions raise `RuntimeError` (never a panic).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use dlbridge::cuda::export_slice;
use dlbridge_pyo3::kernel::{BodyError, publish_kernels};
use dlbridge_pyo3::prelude::*;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// The kernels, CUDA C, each a grid-stride loop over `n` elements: `saxpy`, `out[i] = a *
/// x[i] + y[i]`, and `scale`, `x[i] *= a`.
pub const SAXPY_SOURCE: &str = r#"
extern "C" __global__ void saxpy(float a, const float *x, const float *y, float *out,
                                 long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        out[i] = a * x[i] + y[i];
    }
}

extern "C" __global__ void scale(float a, float *x, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        x[i] *= a;
    }
}
"#;

/// Threads per block, and the most blocks a launch uses (the loop strides over the rest).
const BLOCK: u32 = 256;
const MAX_BLOCKS: u64 = 65_535;

/// The kernels loaded on one device, with the (primary) context they were loaded in.
struct Loaded {
    ordinal: usize,
    context: Arc<CudaContext>,
    saxpy: CudaFunction,
    scale: CudaFunction,
}

/// The kernel, loaded once per device.
static LOADED: Mutex<Vec<Arc<Loaded>>> = Mutex::new(Vec::new());
/// The PTX, compiled once per process.
static PTX: Mutex<Option<String>> = Mutex::new(None);

/// What went wrong with the driver or NVRTC, in words: a `RuntimeError` for the eager
/// functions, the kernels' error (a `ValueError` eagerly, XLA's error inside `jax.jit`).
type CudaResult<R> = Result<R, String>;

fn runtime_error(what: &str, error: impl std::fmt::Debug) -> String {
    format!("{what}: {error:?}")
}

/// Runs a cudarc call that may panic (a library or symbol it cannot load) as an error.
fn guarded<R>(what: &str, call: impl FnOnce() -> R) -> CudaResult<R> {
    catch_unwind(AssertUnwindSafe(call)).map_err(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        format!("{what}: {message}")
    })
}

/// A `RuntimeError` of the eager functions.
fn to_runtime_error(message: String) -> PyErr {
    PyRuntimeError::new_err(message)
}

/// Makes NVRTC loadable: where `libnvrtc` is not on the loader's path, the copy of the
/// `nvidia-cuda-nvrtc-cu12` package (a dependency of PyTorch's CUDA wheels) is loaded into the
/// process, where cudarc's `dlopen("libnvrtc.so.12")` then finds it by its name.
fn ensure_nvrtc(py: Python<'_>) -> PyResult<()> {
    // SAFETY: only tries to open the library by its usual names.
    if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Ok(());
    }
    let found = PyModule::from_code(
        py,
        cr#"
import ctypes, glob, importlib.util, os
def load():
    spec = importlib.util.find_spec("nvidia.cuda_nvrtc")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for path in sorted(glob.glob(os.path.join(root, "lib", "libnvrtc.so*"))):
            if "builtins" not in path:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                return path
    return None
"#,
        c"dlbridge_cuda_saxpy_nvrtc.py",
        c"dlbridge_cuda_saxpy_nvrtc",
    )?
    .getattr("load")?
    .call0()?;
    if found.is_none() {
        return Err(PyRuntimeError::new_err(NVRTC_MISSING));
    }
    Ok(())
}

const NVRTC_MISSING: &str = "NVRTC (libnvrtc.so.12) cannot be loaded: install the CUDA \
                             toolkit's NVRTC or `pip install nvidia-cuda-nvrtc-cu12`";

/// An error where the CUDA driver cannot be loaded or reports no device.
fn require_driver() -> CudaResult<()> {
    if dlbridge::cuda::driver_available() {
        Ok(())
    } else {
        Err("no CUDA driver: libcuda.so.1 cannot be loaded or reports no device".into())
    }
}

/// The kernels on device `ordinal` for an eager function: found where they are loaded, else
/// loaded after making NVRTC loadable (`RuntimeError`s).
fn prepared_kernels(py: Python<'_>, ordinal: usize) -> PyResult<Arc<Loaded>> {
    if let Some(loaded) = loaded_kernels(ordinal) {
        return Ok(loaded);
    }
    require_driver().map_err(to_runtime_error)?;
    ensure_nvrtc(py)?;
    kernel_on(ordinal).map_err(to_runtime_error)
}

/// The kernels on device `ordinal`, where they are loaded.
fn loaded_kernels(ordinal: usize) -> Option<Arc<Loaded>> {
    LOADED
        .lock()
        .unwrap()
        .iter()
        .find(|loaded| loaded.ordinal == ordinal)
        .map(Arc::clone)
}

/// The kernels on device `ordinal`, compiled and loaded on first use. NVRTC must be loadable
/// (`ensure_nvrtc`, which the module's import and the eager functions call).
fn kernel_on(ordinal: usize) -> CudaResult<Arc<Loaded>> {
    if let Some(loaded) = loaded_kernels(ordinal) {
        return Ok(loaded);
    }
    require_driver()?;
    let mut ptx_cache = PTX.lock().unwrap();
    let ptx_source = match ptx_cache.as_ref() {
        Some(ptx) => ptx.clone(),
        None => {
            // SAFETY: only tries to open the library by its usual names.
            if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
                return Err(NVRTC_MISSING.into());
            }
            let ptx = guarded("NVRTC", || cudarc::nvrtc::compile_ptx(SAXPY_SOURCE))?
                .map_err(|error| runtime_error("compiling the saxpy kernel", error))?;
            let source = ptx.to_src();
            *ptx_cache = Some(source.clone());
            source
        }
    };
    drop(ptx_cache);
    let loaded = guarded("the CUDA driver", || -> CudaResult<Loaded> {
        let context = CudaContext::new(ordinal).map_err(|e| runtime_error("a CUDA context", e))?;
        let module = context
            .load_module(cudarc::nvrtc::Ptx::from_src(ptx_source))
            .map_err(|e| runtime_error("loading the saxpy kernel", e))?;
        let function = |name: &str| {
            module
                .load_function(name)
                .map_err(|e| runtime_error(&format!("the {name} function"), e))
        };
        Ok(Loaded {
            ordinal,
            context: Arc::clone(&context),
            saxpy: function("saxpy")?,
            scale: function("scale")?,
        })
    })??;
    let loaded = Arc::new(loaded);
    LOADED.lock().unwrap().push(Arc::clone(&loaded));
    Ok(loaded)
}

/// The ordinal of a CUDA device (a stream's, a buffer's).
fn ordinal_of(device: Device) -> usize {
    device.device_id.max(0) as usize
}

/// A stream handle (the caller's current stream, or XLA's for the call) as a cudarc stream
/// (borrowed: never destroyed by cudarc).
fn borrowed_stream(loaded: &Loaded, stream: usize) -> Arc<CudaStream> {
    // SAFETY: the stream is the producer's current stream on this device, or XLA's stream for
    // the call (the primary context, which PyTorch, CuPy and XLA use), alive while the caller
    // uses it: at least for the call; cudarc only enqueues on it.
    unsafe {
        loaded
            .context
            .wrap_borrowed_stream(std::ptr::with_exposed_provenance_mut(stream))
    }
}

/// A grid-stride launch over `n` elements.
fn launch_config(n: usize) -> LaunchConfig {
    let blocks = (n as u64).div_ceil(u64::from(BLOCK)).min(MAX_BLOCKS) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Enqueues `out = a * x + y` over `n` elements at these device addresses on `stream`.
fn enqueue_saxpy(
    loaded: &Loaded,
    stream: &Arc<CudaStream>,
    a: f32,
    (x, y, out): (u64, u64, u64),
    n: usize,
) -> CudaResult<()> {
    if n == 0 {
        return Ok(());
    }
    let n_arg = n as i64;
    let mut launch = stream.launch_builder(&loaded.saxpy);
    launch.arg(&a).arg(&x).arg(&y).arg(&out).arg(&n_arg);
    // SAFETY: the kernel's parameters are (float, const float*, const float*, float*, long
    // long), passed in that order; `x`, `y` and `out` address `n` float32 elements on this
    // device that stay allocated until the kernel has run (the arguments' producers keep them,
    // and free them in stream order after the caller's stream).
    unsafe { launch.launch(launch_config(n)) }
        .map(|_| ())
        .map_err(|e| runtime_error("launching saxpy", e))
}

/// Enqueues `x *= a` over `n` elements at this device address on `stream`.
fn enqueue_scale(
    loaded: &Loaded,
    stream: &Arc<CudaStream>,
    a: f32,
    x: u64,
    n: usize,
) -> CudaResult<()> {
    if n == 0 {
        return Ok(());
    }
    let n_arg = n as i64;
    let mut launch = stream.launch_builder(&loaded.scale);
    launch.arg(&a).arg(&x).arg(&n_arg);
    // SAFETY: the kernel's parameters are (float, float*, long long), in that order; `x`
    // addresses `n` float32 elements on this device, allocated until the kernel has run.
    unsafe { launch.launch(launch_config(n)) }
        .map(|_| ())
        .map_err(|e| runtime_error("launching scale", e))
}

fn check_same_length(x: &CudaArg<'_, f32, Ix1, CContiguous>, others: &[usize]) -> PyResult<()> {
    match others.iter().find(|&&len| len != x.len()) {
        Some(len) => Err(PyValueError::new_err(format!(
            "saxpy needs vectors of one length: x has {}, got one of {len}",
            x.len()
        ))),
        None => Ok(()),
    }
}

/// `a * x + y` for float32 CUDA vectors, as a new tensor of `x`'s framework on the same
/// device, computed on the caller's current stream (nothing waits for it).
#[pyfunction]
fn saxpy<'py>(
    py: Python<'py>,
    a: f32,
    x: CudaArg<'_, f32, Ix1, CContiguous>,
    y: CudaArg<'_, f32, Ix1, CContiguous>,
) -> PyResult<Bound<'py, PyAny>> {
    check_same_length(&x, &[y.len()])?;
    let stream = WorkStream::common([x.stream(), y.stream()])?;
    let loaded = prepared_kernels(py, ordinal_of(stream.device()))?;
    let (x_ptr, y_ptr, n) = (x.device_ptr(), y.device_ptr(), x.len());
    let raw_stream = stream.handle().unwrap_or(0);
    let out = py
        .detach(|| {
            guarded("the CUDA driver", || -> CudaResult<_> {
                let cuda_stream = borrowed_stream(&loaded, raw_stream);
                // SAFETY: every element is written by the kernel enqueued next on this stream.
                let mut out = unsafe { cuda_stream.alloc::<f32>(n) }
                    .map_err(|e| runtime_error("allocating the result", e))?;
                let out_ptr = {
                    use cudarc::driver::DevicePtrMut;
                    let (address, _write) = out.device_ptr_mut(&cuda_stream);
                    address
                };
                enqueue_saxpy(&loaded, &cuda_stream, a, (x_ptr, y_ptr, out_ptr), n)?;
                Ok(out)
            })?
        })
        .map_err(to_runtime_error)?;
    let shape = [n];
    let tensor = export_slice(out, &shape)
        .into_versioned()
        .map_err(to_py_err)?;
    x.return_like(py, tensor)
}

/// `out[...] = a * x + y` for float32 CUDA vectors, written into the caller's `out` on the
/// caller's current stream (nothing waits for it). `out` may be `y`.
#[pyfunction]
fn saxpy_into(
    py: Python<'_>,
    a: f32,
    x: CudaArg<'_, f32, Ix1, CContiguous>,
    y: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
) -> PyResult<()> {
    // `out` may be `y`: `y` is read through the writable argument then, so that the
    // aliasing registry does not refuse the pair.
    let mut out_arg: CudaArgMut<'_, f32, Ix1, CContiguous> = out.extract()?;
    let y_ptr = if y.is(out) {
        out_arg.device_ptr()
    } else {
        let y_arg: CudaArg<'_, f32, Ix1, CContiguous> = y.extract()?;
        check_same_length(&x, &[y_arg.len()])?;
        WorkStream::common([x.stream(), y_arg.stream()])?;
        y_arg.device_ptr()
    };
    check_same_length(&x, &[out_arg.len()])?;
    let stream = WorkStream::common([x.stream(), out_arg.stream()])?;
    let loaded = prepared_kernels(py, ordinal_of(stream.device()))?;
    let (x_ptr, out_ptr, n) = (x.device_ptr(), out_arg.device_ptr_mut(), x.len());
    let raw_stream = stream.handle().unwrap_or(0);
    py.detach(|| {
        guarded("the CUDA driver", || {
            let cuda_stream = borrowed_stream(&loaded, raw_stream);
            enqueue_saxpy(&loaded, &cuda_stream, a, (x_ptr, y_ptr, out_ptr), n)
        })?
    })
    .map_err(to_runtime_error)
}

dlbridge_pyo3::kernel! {
    /// `out = a * x + y` for float32 CUDA vectors of one length, enqueued on the caller's
    /// stream (eagerly) or XLA's (inside `jax.jit`); nothing waits for it.
    pub fn saxpy_out(
        x: CudaArg<'_, f32, Ix1, CContiguous>,
        y: CudaArg<'_, f32, Ix1, CContiguous>,
        out: CudaArgMut<'_, f32, Ix1, CContiguous>,
        a: f32,
    )
    where out = like(x)
    {
        if y.len() != x.len() {
            return Err(BodyError::new(format!(
                "saxpy needs vectors of one length: x has {}, y {}",
                x.len(),
                y.len()
            )));
        }
        let loaded = kernel_on(ordinal_of(x.device()))?;
        let (x_ptr, y_ptr, out_ptr, n) = (x.device_ptr(), y.device_ptr(), out.device_ptr_mut(), x.len());
        guarded("the CUDA driver", || {
            let stream = borrowed_stream(&loaded, out.stream());
            enqueue_saxpy(&loaded, &stream, a, (x_ptr, y_ptr, out_ptr), n)
        })??;
        Ok(())
    }
}

dlbridge_pyo3::kernel! {
    /// `x *= a` for a float32 CUDA vector, in place, enqueued as `saxpy_out` is.
    pub fn scale_(x: CudaArgMut<'_, f32, Ix1, CContiguous>, a: f32) {
        let loaded = kernel_on(ordinal_of(x.device()))?;
        let (x_ptr, n) = (x.device_ptr_mut(), x.len());
        guarded("the CUDA driver", || {
            let stream = borrowed_stream(&loaded, x.stream());
            enqueue_scale(&loaded, &stream, a, x_ptr, n)
        })??;
        Ok(())
    }
}

/// The example's Python module.
#[pymodule]
fn dlbridge_cuda_saxpy(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(saxpy, module)?)?;
    module.add_function(wrap_pyfunction!(saxpy_into, module)?)?;
    publish_kernels(module, &[saxpy_out::KERNEL, scale_::KERNEL])?;
    module.add("SAXPY_SOURCE", SAXPY_SOURCE)?;
    // The kernels run where no Python is at hand (inside XLA): NVRTC is made loadable now,
    // where it can be. Without it (no CUDA here) they say so when called.
    let _ = ensure_nvrtc(module.py());
    Ok(())
}
