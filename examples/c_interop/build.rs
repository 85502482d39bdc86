//! Compiles the C producer and consumer (`c/`) with the `cc` crate against the real
//! `dlpack.h`, which this repository never holds a copy of and the build never downloads.
//!
//! The header is looked for in this order, the first source that has it winning:
//!
//! 1. `DLPACK_INCLUDE_DIR`: a directory holding `dlpack/dlpack.h`. When it is set (and not
//!    empty) it is the only source: a directory without the header is reported as the
//!    reason, never passed over for another source.
//! 2. The `apache-tvm-ffi` Python package, which ships `tvm_ffi/include/dlpack/dlpack.h`: asked
//!    of the workspace's virtual environment (`.venv` at the workspace root), of the active
//!    one (`$VIRTUAL_ENV`), then of `python3`, in that order.
//! 3. The cache that dlbridge's ABI test (`crates/dlbridge/tests/abi_header.rs`) writes:
//!    `$CARGO_TARGET_TMPDIR/dlpack-header/dlpack/dlpack.h`, i.e.
//!    `<target dir>/tmp/dlpack-header/dlpack/dlpack.h`.
//!
//! Without a header the build does not fail (this package is a workspace member, and
//! `cargo build --workspace` must work on a machine without Python): the C code is left out,
//! a `cargo:warning` says why, and the cfg `no_dlpack_header` (with the reasons in the
//! environment variable `DLBRIDGE_C_INTEROP_NO_HEADER`) makes the example program and the
//! test say how to provide the header; the test fails under CI.

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The variable naming a directory that holds `dlpack/dlpack.h`.
const INCLUDE_DIR_ENV: &str = "DLPACK_INCLUDE_DIR";
/// The header, relative to an include directory.
const HEADER: &str = "dlpack/dlpack.h";
/// The cfg set when no header was found.
const NO_HEADER_CFG: &str = "no_dlpack_header";
/// The variable carrying, at compile time, why no header was found.
const NO_HEADER_ENV: &str = "DLBRIDGE_C_INTEROP_NO_HEADER";

/// Asks a Python for the directory of the `tvm_ffi` package without importing it (an import
/// would load the package's native library); prints nothing when it is not installed.
const FIND_TVM_FFI: &str = "import importlib.util as u; s = u.find_spec('tvm_ffi'); \
    print(s.submodule_search_locations[0] if s and s.submodule_search_locations else '')";

/// Where the header was found, and how, for the log.
struct Found {
    include_dir: PathBuf,
    source: String,
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg({NO_HEADER_CFG})");
    println!("cargo::rerun-if-changed=c");
    println!("cargo::rerun-if-env-changed={INCLUDE_DIR_ENV}");
    println!("cargo::rerun-if-env-changed=VIRTUAL_ENV");

    let mut reasons = Vec::new();
    let mut watched = Vec::new();
    match find_header(&mut reasons, &mut watched) {
        Some(found) => compile(&found),
        None => {
            // A header that appears later (a virtual environment made, the ABI test run) is
            // found then: a path that does not exist makes cargo run this script again.
            for path in &watched {
                println!("cargo::rerun-if-changed={}", path.display());
            }
            // One line: cargo's instructions end at the first newline.
            let reasons = reasons.join("; ").replace(['\n', '\r'], " ");
            println!(
                "cargo::warning=no dlpack.h found, so the C side of the example is not built \
                 ({reasons}); set {INCLUDE_DIR_ENV} to a directory holding {HEADER}, install \
                 apache-tvm-ffi in the workspace's .venv, or run dlbridge's ABI test first"
            );
            println!("cargo::rustc-cfg={NO_HEADER_CFG}");
            println!("cargo::rustc-env={NO_HEADER_ENV}={reasons}");
        }
    }
}

fn compile(found: &Found) {
    let header = found.include_dir.join(HEADER);
    println!("cargo::rerun-if-changed={}", header.display());
    cc::Build::new()
        .file("c/producer.c")
        .file("c/consumer.c")
        .include(&found.include_dir)
        .include("c")
        .std("c11")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("dlbridge_c_interop");
    // Seen with `cargo build -vv`: which header the C side was compiled against.
    println!(
        "dlbridge-c-interop: dlpack.h from {} ({})",
        header.display(),
        found.source
    );
}

/// The first source that has the header, recording why each one before it did not, and the
/// paths whose appearance would change the answer.
fn find_header(reasons: &mut Vec<String>, watched: &mut Vec<PathBuf>) -> Option<Found> {
    // 1. The explicit directory, alone.
    if let Some(dir) = env::var_os(INCLUDE_DIR_ENV).filter(|dir| !dir.is_empty()) {
        let dir = PathBuf::from(dir);
        if dir.join(HEADER).is_file() {
            return Some(Found {
                include_dir: dir,
                source: INCLUDE_DIR_ENV.to_owned(),
            });
        }
        reasons.push(format!(
            "{INCLUDE_DIR_ENV}={} has no {HEADER}, and no other source is tried when it is set",
            dir.display()
        ));
        watched.push(dir.join(HEADER));
        return None;
    }

    // 2. apache-tvm-ffi, from the workspace's virtual environment, the active one, python3.
    let mut pythons: Vec<(OsString, String)> = Vec::new();
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    // This package is examples/c_interop: the workspace root is two levels up.
    if let Some(root) = manifest_dir.ancestors().nth(2) {
        let python = venv_python(&root.join(".venv"));
        watched.push(python.clone());
        pythons.push((python.into_os_string(), "the workspace's .venv".to_owned()));
    }
    if let Some(venv) = env::var_os("VIRTUAL_ENV").filter(|venv| !venv.is_empty()) {
        let python = venv_python(Path::new(&venv));
        pythons.push((python.into_os_string(), "$VIRTUAL_ENV".to_owned()));
    }
    pythons.push(("python3".into(), "python3 on PATH".to_owned()));
    for (python, what) in pythons {
        let shown = Path::new(&python).display().to_string();
        match tvm_ffi_include_dir(&python) {
            Ok(dir) => {
                return Some(Found {
                    include_dir: dir,
                    source: format!("apache-tvm-ffi of {shown}, {what}"),
                });
            }
            Err(why) => reasons.push(format!("{shown} ({what}): {why}")),
        }
    }

    // 3. The ABI test's cache, in the target directory (the nearest ancestor of OUT_DIR with
    // cargo's CACHEDIR.TAG that has it; `--target` builds have a tag in their triple's
    // directory too, so every tagged ancestor is asked).
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    let mut target_dirs = out_dir
        .ancestors()
        .filter(|dir| dir.join("CACHEDIR.TAG").is_file())
        .peekable();
    if target_dirs.peek().is_none() {
        reasons.push(format!(
            "no cargo target directory above {} to hold the ABI test's cache",
            out_dir.display()
        ));
    }
    for target_dir in target_dirs {
        let include_dir = target_dir.join("tmp").join("dlpack-header");
        if include_dir.join(HEADER).is_file() {
            return Some(Found {
                include_dir,
                source: "the ABI test's cache".to_owned(),
            });
        }
        reasons.push(format!(
            "{} does not exist (dlbridge's ABI test writes it)",
            include_dir.join(HEADER).display()
        ));
        watched.push(include_dir.join(HEADER));
    }
    None
}

/// The interpreter of a virtual environment.
fn venv_python(venv: &Path) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    }
}

/// `tvm_ffi/include` of the package that `python` sees, when it holds the header.
fn tvm_ffi_include_dir(python: &std::ffi::OsStr) -> Result<PathBuf, String> {
    let output = Command::new(python)
        .args(["-c", FIND_TVM_FFI])
        .output()
        .map_err(|err| match err.kind() {
            std::io::ErrorKind::NotFound => "not found".to_owned(),
            _ => format!("cannot be run: {err}"),
        })?;
    if !output.status.success() {
        return Err(format!(
            "failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let package = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if package.is_empty() {
        return Err("apache-tvm-ffi is not installed".to_owned());
    }
    let include_dir = Path::new(&package).join("include");
    if include_dir.join(HEADER).is_file() {
        Ok(include_dir)
    } else {
        Err(format!(
            "its tvm_ffi package ({package}) has no include/{HEADER}"
        ))
    }
}
