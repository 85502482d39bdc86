//! The Rust side of dlbridge's end-to-end C example: DLPack tensors made by a C producer and
//! read in Rust, and Rust tensors handed to a C consumer that writes them and calls their
//! deleter. The program is `src/main.rs` (`cargo run -p dlbridge-c-interop`), the checks
//! `tests/c_interop.rs`; this library holds what both use:
//!
//! - the module `c`: the C functions of `c/c_interop.h` (compiled by `build.rs` against the
//!   real `dlpack.h`), declared once, and the report the C consumer fills. It exists only
//!   when the build found the header;
//! - [`missing_header`]: why a build has no C side, and the three ways to give it one.

#[cfg(not(no_dlpack_header))]
pub mod c;

/// The three ways to provide `dlpack.h`, which this repository does not hold and the build
/// never downloads.
pub const HEADER_SOURCES: &str = "  \
1. DLPACK_INCLUDE_DIR=<dir>, a directory holding dlpack/dlpack.h (a dlpack checkout's \
include/, or tvm_ffi/include of an installed apache-tvm-ffi): \
DLPACK_INCLUDE_DIR=<dir> cargo run -p dlbridge-c-interop;
  2. the apache-tvm-ffi Python package, which ships tvm_ffi/include/dlpack/dlpack.h, installed \
in the workspace's .venv (`make venv`; then `make example-c` passes it as DLPACK_INCLUDE_DIR), \
in the active virtual environment ($VIRTUAL_ENV) or for python3 (pip install apache-tvm-ffi);
  3. the copy that dlbridge's ABI test caches in <target dir>/tmp/dlpack-header: \
cargo test -p dlbridge --test abi_header, then build again.";

/// Why this build has no C side (each source the build script asked, and its answer) and how
/// to give it one; `None` when the C producer and consumer were compiled.
pub fn missing_header() -> Option<String> {
    if cfg!(no_dlpack_header) {
        let reasons = option_env!("DLBRIDGE_C_INTEROP_NO_HEADER").unwrap_or("no reason recorded");
        Some(format!(
            "the C side of the example was not built: no dlpack.h was found ({reasons}).\n\
             Provide the header in one of three ways, then build again:\n{HEADER_SOURCES}"
        ))
    } else {
        None
    }
}
