//! Finding the CUDA driver without cudarc's panic: [`driver_available`].

use std::panic::catch_unwind;

/// Whether the CUDA driver library (`libcuda.so.1`, `nvcuda.dll`) can be loaded and reports at
/// least one device; `false` instead of cudarc's panic where it cannot.
///
/// ```
/// if dlbridge::cuda::driver_available() {
///     let context = cudarc::driver::CudaContext::new(0).unwrap();
///     assert_eq!(context.ordinal(), 0);
/// }
/// ```
pub fn driver_available() -> bool {
    if cfg!(miri) {
        // Miri cannot open libraries (no `dlopen`): there is no driver to find.
        return false;
    }
    // SAFETY: `is_culib_present` only tries to open the library by its usual names.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return false;
    }
    // A driver too old for a symbol cudarc binds panics on first use: caught here.
    catch_unwind(cudarc::driver::CudaContext::device_count)
        .map(|count| matches!(count, Ok(n) if n > 0))
        .unwrap_or(false)
}
