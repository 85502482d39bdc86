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
//!
//! Without a CUDA driver the functions raise `RuntimeError` (never a panic).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use dlbridge::cuda::export_slice;
use dlbridge_pyo3::prelude::*;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// The kernel, CUDA C: `out[i] = a * x[i] + y[i]`, a grid-stride loop over `n` elements.
pub const SAXPY_SOURCE: &str = r#"
extern "C" __global__ void saxpy(float a, const float *x, const float *y, float *out,
                                 long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        out[i] = a * x[i] + y[i];
    }
}
"#;

/// Threads per block, and the most blocks a launch uses (the loop strides over the rest).
const BLOCK: u32 = 256;
const MAX_BLOCKS: u64 = 65_535;

/// The kernel loaded on one device, with the (primary) context it was loaded in.
struct Loaded {
    ordinal: usize,
    context: Arc<CudaContext>,
    function: CudaFunction,
}

/// The kernel, loaded once per device.
static LOADED: Mutex<Vec<Arc<Loaded>>> = Mutex::new(Vec::new());
/// The PTX, compiled once per process.
static PTX: Mutex<Option<String>> = Mutex::new(None);

fn runtime_error(what: &str, error: impl std::fmt::Debug) -> PyErr {
    PyRuntimeError::new_err(format!("{what}: {error:?}"))
}

/// Runs a cudarc call that may panic (a library or symbol it cannot load) as a Python error.
fn guarded<R>(what: &str, call: impl FnOnce() -> R) -> PyResult<R> {
    catch_unwind(AssertUnwindSafe(call)).map_err(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        PyRuntimeError::new_err(format!("{what}: {message}"))
    })
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
        return Err(PyRuntimeError::new_err(
            "NVRTC (libnvrtc.so.12) cannot be loaded: install the CUDA toolkit's NVRTC or \
             `pip install nvidia-cuda-nvrtc-cu12`",
        ));
    }
    Ok(())
}

/// The kernel on device `ordinal`, compiled and loaded on first use.
fn kernel_on(py: Python<'_>, ordinal: usize) -> PyResult<Arc<Loaded>> {
    if let Some(loaded) = LOADED
        .lock()
        .unwrap()
        .iter()
        .find(|loaded| loaded.ordinal == ordinal)
    {
        return Ok(Arc::clone(loaded));
    }
    if !dlbridge::cuda::driver_available() {
        return Err(PyRuntimeError::new_err(
            "no CUDA driver: libcuda.so.1 cannot be loaded or reports no device",
        ));
    }
    let mut ptx_cache = PTX.lock().unwrap();
    let ptx_source = match ptx_cache.as_ref() {
        Some(ptx) => ptx.clone(),
        None => {
            ensure_nvrtc(py)?;
            let ptx = guarded("NVRTC", || cudarc::nvrtc::compile_ptx(SAXPY_SOURCE))?
                .map_err(|error| runtime_error("compiling the saxpy kernel", error))?;
            let source = ptx.to_src();
            *ptx_cache = Some(source.clone());
            source
        }
    };
    drop(ptx_cache);
    let loaded = guarded("the CUDA driver", || -> PyResult<Loaded> {
        let context = CudaContext::new(ordinal).map_err(|e| runtime_error("a CUDA context", e))?;
        let module = context
            .load_module(cudarc::nvrtc::Ptx::from_src(ptx_source))
            .map_err(|e| runtime_error("loading the saxpy kernel", e))?;
        let function = module
            .load_function("saxpy")
            .map_err(|e| runtime_error("the saxpy function", e))?;
        Ok(Loaded {
            ordinal,
            context,
            function,
        })
    })??;
    let loaded = Arc::new(loaded);
    LOADED.lock().unwrap().push(Arc::clone(&loaded));
    Ok(loaded)
}

/// The device ordinal of a CUDA stream's device.
fn ordinal_of(stream: WorkStream) -> usize {
    stream.device().device_id.max(0) as usize
}

/// The caller's stream as a cudarc stream (borrowed: never destroyed by cudarc).
fn borrowed_stream(loaded: &Loaded, stream: WorkStream) -> Arc<CudaStream> {
    // SAFETY: the stream is the producer's current stream on this device (the primary
    // context, which PyTorch and CuPy use), alive while the caller uses it: at least for the
    // call; cudarc only enqueues on it.
    unsafe {
        loaded
            .context
            .wrap_borrowed_stream(stream.as_raw() as cudarc::driver::sys::CUstream)
    }
}

/// Enqueues `out = a * x + y` over `n` elements at these device addresses on `stream`.
fn enqueue_saxpy(
    loaded: &Loaded,
    stream: &Arc<CudaStream>,
    a: f32,
    (x, y, out): (u64, u64, u64),
    n: usize,
) -> PyResult<()> {
    if n == 0 {
        return Ok(());
    }
    let blocks = (n as u64).div_ceil(u64::from(BLOCK)).min(MAX_BLOCKS) as u32;
    let config = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let n = n as i64;
    let mut launch = stream.launch_builder(&loaded.function);
    launch.arg(&a).arg(&x).arg(&y).arg(&out).arg(&n);
    // SAFETY: the kernel's parameters are (float, const float*, const float*, float*, long
    // long), passed in that order; `x`, `y` and `out` address `n` float32 elements on this
    // device that stay allocated until the kernel has run (the arguments' producers keep them,
    // and free them in stream order after the caller's stream).
    unsafe { launch.launch(config) }
        .map(|_| ())
        .map_err(|e| runtime_error("launching saxpy", e))
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
    let loaded = kernel_on(py, ordinal_of(stream))?;
    let (x_ptr, y_ptr, n) = (x.device_ptr(), y.device_ptr(), x.len());
    let out = py.detach(|| {
        guarded("the CUDA driver", || -> PyResult<_> {
            let cuda_stream = borrowed_stream(&loaded, stream);
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
    })?;
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
    let loaded = kernel_on(py, ordinal_of(stream))?;
    let (x_ptr, out_ptr, n) = (x.device_ptr(), out_arg.device_ptr_mut(), x.len());
    py.detach(|| {
        guarded("the CUDA driver", || {
            let cuda_stream = borrowed_stream(&loaded, stream);
            enqueue_saxpy(&loaded, &cuda_stream, a, (x_ptr, y_ptr, out_ptr), n)
        })?
    })
}

/// The example's Python module.
#[pymodule]
fn dlbridge_cuda_saxpy(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(saxpy, module)?)?;
    module.add_function(wrap_pyfunction!(saxpy_into, module)?)?;
    module.add("SAXPY_SOURCE", SAXPY_SOURCE)?;
    Ok(())
}
