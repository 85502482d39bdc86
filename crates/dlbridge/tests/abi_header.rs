//! ABI check of [`dlbridge::ffi`] against the real DLPack `dlpack.h`.
//!
//! The Rust declarations in `dlbridge::ffi` are written by hand. This test proves that they
//! describe the same ABI as the C header: it compiles `tests/abi_probe.c` against the real
//! header with the system C compiler (`cc`), runs it, and compares what it prints with the
//! same table computed on the Rust side:
//!
//! - size and alignment of every struct and typedef (`DLPackVersion`, `DLDevice`,
//!   `DLDataType`, `DLTensor`, `DLManagedTensor`, `DLManagedTensorVersioned`,
//!   `DLPackExchangeAPIHeader`, `DLPackExchangeAPI`, `DLDeviceType` and the five function
//!   pointer typedefs of the exchange API);
//! - offset and size of every field of every struct;
//! - the value of every enumerator of `DLDeviceType` and `DLDataTypeCode` (the Rust
//!   `DataTypeCode` is a `u8` newtype because `DLDataType` stores the code as `uint8_t`, so for
//!   that enum only the values are compared, and the storage is checked through
//!   `sizeof(DLDataType.code)`);
//! - `DLPACK_MAJOR_VERSION`, `DLPACK_MINOR_VERSION` and the `DLPACK_FLAG_BITMASK_*` macros.
//!
//! Every differing item is reported, as `item: header=X rust=Y`. In addition the header text is
//! scanned for enumerators (`kDL... = <number>`, or without a value), so that an enumerator
//! added by a future header is reported as missing on the Rust side (and in the probe) instead
//! of being silently ignored, and `DeviceType::ALL` / `DataTypeCode::ALL` must list exactly
//! the enumerators of their enum.
//!
//! # Where the header comes from
//!
//! The header is never part of this repository; it is obtained at test time, first source
//! that works wins:
//!
//! 1. `DLBRIDGE_DLPACK_HEADER`: the path of a `dlpack.h`. When this variable is set (and not
//!    empty) it is the only source: a path that cannot be read is a failure, never a silent
//!    fallback, and the header is compared as it is, whatever version it declares (a header
//!    of another version shows its differences as mismatches).
//! 2. A cache under the cargo target dir: `$CARGO_TARGET_TMPDIR/dlpack-header/dlpack/dlpack.h`,
//!    written by source 3.
//! 3. The `apache-tvm-ffi` wheel from PyPI (`python3 -m pip download --no-deps
//!    --only-binary=:all: apache-tvm-ffi`), from which `tvm_ffi/include/dlpack/dlpack.h` is
//!    extracted with Python's `zipfile` module and stored in the cache.
//! 4. The header shipped with PyTorch, when `python3 -c "import torch"` works.
//!
//! Sources 2 to 4 are only accepted when the header declares the version this crate
//! implements (`ffi::DLPACK_MAJOR_VERSION`.`ffi::DLPACK_MINOR_VERSION`, i.e. 1.3).
//!
//! When no header (or no C compiler) is available the test prints `skipped: ...` with the
//! reason for every source to stderr and passes, except when the environment variable `CI` is
//! `true` (or `1`): then it fails with the same explanation.
//!
//! The probe runs on the machine running the tests, so the comparison is for the native
//! target; cross-compiled test runs are not supported. Miri cannot spawn processes, so every
//! test here is ignored under Miri.

use std::fs;
use std::mem::{align_of, offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

use dlbridge::ffi;
use dlbridge::{DataTypeCode, DeviceType};

mod c_probe;
use c_probe::{
    Enumerator, ProbeError, Table, check_all_list, check_enumerator_coverage, compare,
    compile_and_run, header_define, insert, parse_probe_output, run, rust_layout, scan_enumerators,
};

/// This test's name in its reports.
const TEST: &str = "abi_header";
/// The enumerators of `dlpack.h`.
const ENUMERATOR_PREFIX: &str = "kDL";

/// Environment variable naming an explicit `dlpack.h`.
const HEADER_ENV: &str = "DLBRIDGE_DLPACK_HEADER";
/// The PyPI project whose wheel ships `dlpack.h`.
const WHEEL_PROJECT: &str = "apache-tvm-ffi";
/// Where the header lies inside that wheel.
const WHEEL_MEMBER: &str = "tvm_ffi/include/dlpack/dlpack.h";
/// Where PyTorch keeps the header, relative to its package directory.
const TORCH_CANDIDATES: [&str; 2] = ["include/dlpack/dlpack.h", "include/ATen/dlpack.h"];
/// The C enums whose enumerators must all be known to the Rust side.
const DEVICE_TYPE_ENUM: &str = "DLDeviceType";
const DATA_TYPE_CODE_ENUM: &str = "DLDataTypeCode";

// ---------------------------------------------------------------------------------------------
// The Rust side of the table.

/// `(name, constant)` pairs of `ffi`'s `kDL*` constants, the name spelled by the constant's own
/// identifier, so that each is compared with the header's enumerator of that name.
macro_rules! c_enumerators {
    ($($name:ident),* $(,)?) => {
        [$((stringify!($name), ffi::$name)),*]
    };
}

/// The header's enumerator names with the Rust constants that stand for them (`ffi::kDLCPU`
/// is `DeviceType::CPU`, and so on).
fn rust_device_types() -> [(&'static str, DeviceType); 16] {
    c_enumerators![
        kDLCPU,
        kDLCUDA,
        kDLCUDAHost,
        kDLOpenCL,
        kDLVulkan,
        kDLMetal,
        kDLVPI,
        kDLROCM,
        kDLROCMHost,
        kDLExtDev,
        kDLCUDAManaged,
        kDLOneAPI,
        kDLWebGPU,
        kDLHexagon,
        kDLMAIA,
        kDLTrn,
    ]
}

/// The header's enumerator names with the Rust constants that stand for them.
fn rust_data_type_codes() -> [(&'static str, DataTypeCode); 18] {
    c_enumerators![
        kDLInt,
        kDLUInt,
        kDLFloat,
        kDLOpaqueHandle,
        kDLBfloat,
        kDLComplex,
        kDLBool,
        kDLFloat8_e3m4,
        kDLFloat8_e4m3,
        kDLFloat8_e4m3b11fnuz,
        kDLFloat8_e4m3fn,
        kDLFloat8_e4m3fnuz,
        kDLFloat8_e5m2,
        kDLFloat8_e5m2fnuz,
        kDLFloat8_e8m0fnu,
        kDLFloat6_e2m3fn,
        kDLFloat6_e3m2fn,
        kDLFloat4_e2m1fn,
    ]
}

/// The enumerators DLPack's main branch added after the 1.3 tag (dmlc/dlpack#187, #188,
/// #189), with the values `ffi` gives them. The probe cannot name them (a 1.3 header has none):
/// each is checked against the header's text where the header declares it, and must otherwise
/// take a value no enumerator of its enum has.
fn post_1_3_enumerators() -> [(&'static str, &'static str, i128); 4] {
    [
        (DEVICE_TYPE_ENUM, "kDLTPU", ffi::kDLTPU.0.into()),
        (DEVICE_TYPE_ENUM, "kDLTPUHost", ffi::kDLTPUHost.0.into()),
        (DEVICE_TYPE_ENUM, "kDLAscend", ffi::kDLAscend.0.into()),
        (
            DATA_TYPE_CODE_ENUM,
            "kDLBcomplex",
            ffi::kDLBcomplex.0.into(),
        ),
    ]
}

/// Checks the post-1.3 enumerators against the header: one it declares must have `ffi`'s
/// value (it then joins both tables, the header's value read from its text), one it does not
/// declare must not take a value another enumerator of its enum has. Returns the ones the
/// header does not declare (their enum and value), which the `ALL` lists hold beyond the
/// header's.
fn check_post_1_3(
    enums: &[Enumerator],
    from_header: &mut Table,
    from_rust: &mut Table,
    problems: &mut Vec<String>,
) -> Vec<(&'static str, i128)> {
    let mut beyond = Vec::new();
    for (enum_name, name, value) in post_1_3_enumerators() {
        match enums.iter().find(|e| e.name == name) {
            Some(declared) => {
                from_rust.insert(name.to_owned(), value);
                match declared.value {
                    Some(text) => {
                        from_header.insert(name.to_owned(), text);
                    }
                    None => problems.push(format!("{name}: declared without a plain value")),
                }
            }
            None => {
                let taken = enums.iter().find(|e| {
                    e.enum_name.as_deref() == Some(enum_name)
                        && from_header.get(&e.name).copied().or(e.value) == Some(value)
                });
                if let Some(other) = taken {
                    problems.push(format!(
                        "{name}: dlbridge gives it {value}, which the header gives {}",
                        other.name
                    ));
                }
                beyond.push((enum_name, value));
            }
        }
    }
    beyond
}

/// Everything the C probe prints, computed from `dlbridge`.
fn rust_table() -> Table {
    let mut table = Table::new();
    let t = &mut table;

    insert(t, "DLPACK_MAJOR_VERSION".into(), ffi::DLPACK_MAJOR_VERSION);
    insert(t, "DLPACK_MINOR_VERSION".into(), ffi::DLPACK_MINOR_VERSION);
    insert(
        t,
        "DLPACK_FLAG_BITMASK_READ_ONLY".into(),
        ffi::DLPACK_FLAG_BITMASK_READ_ONLY,
    );
    insert(
        t,
        "DLPACK_FLAG_BITMASK_IS_COPIED".into(),
        ffi::DLPACK_FLAG_BITMASK_IS_COPIED,
    );
    insert(
        t,
        "DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED".into(),
        ffi::DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED,
    );

    for (name, device_type) in rust_device_types() {
        insert(t, name.into(), device_type.0);
    }
    for (name, code) in rust_data_type_codes() {
        insert(t, name.into(), code.0);
    }

    rust_layout!(t, ffi::DLPackVersion { major, minor });
    rust_layout!(t, ffi::DLDeviceType);
    rust_layout!(
        t,
        ffi::DLDevice {
            device_type,
            device_id
        }
    );
    rust_layout!(t, ffi::DLDataType { code, bits, lanes });
    rust_layout!(
        t,
        ffi::DLTensor {
            data,
            device,
            ndim,
            dtype,
            shape,
            strides,
            byte_offset,
        }
    );
    rust_layout!(
        t,
        ffi::DLManagedTensor {
            dl_tensor,
            manager_ctx,
            deleter
        }
    );
    rust_layout!(
        t,
        ffi::DLManagedTensorVersioned {
            version,
            manager_ctx,
            deleter,
            flags,
            dl_tensor,
        }
    );
    rust_layout!(t, ffi::DLPackManagedTensorAllocator);
    rust_layout!(t, ffi::DLPackManagedTensorFromPyObjectNoSync);
    rust_layout!(t, ffi::DLPackManagedTensorToPyObjectNoSync);
    rust_layout!(t, ffi::DLPackDLTensorFromPyObjectNoSync);
    rust_layout!(t, ffi::DLPackCurrentWorkStream);
    rust_layout!(t, ffi::DLPackExchangeAPIHeader { version, prev_api });
    rust_layout!(
        t,
        ffi::DLPackExchangeAPI {
            header,
            managed_tensor_allocator,
            managed_tensor_from_py_object_no_sync,
            managed_tensor_to_py_object_no_sync,
            dltensor_from_py_object_no_sync,
            current_work_stream,
        }
    );
    table
}

/// `(major, minor)` as declared by the header.
fn header_version(header_text: &str) -> Option<(i128, i128)> {
    Some((
        header_define(header_text, "DLPACK_MAJOR_VERSION")?,
        header_define(header_text, "DLPACK_MINOR_VERSION")?,
    ))
}

// ---------------------------------------------------------------------------------------------
// Obtaining the header.

/// A header found by [`find_header`].
struct Header {
    /// Where it was read from.
    path: PathBuf,
    /// How it was obtained, for the log.
    source: String,
    /// Its full text.
    text: String,
}

/// The cargo-provided scratch directory for this integration test.
fn tmp_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
}

fn cache_dir() -> PathBuf {
    tmp_dir().join("dlpack-header")
}

fn cached_header_path() -> PathBuf {
    cache_dir().join("dlpack").join("dlpack.h")
}

/// A header text, accepted only when it declares the version this crate implements.
fn read_versioned_header(path: &Path) -> Result<String, String> {
    let text = fs::read_to_string(path).map_err(|err| format!("{}: {err}", path.display()))?;
    let wanted = (
        i128::from(ffi::DLPACK_MAJOR_VERSION),
        i128::from(ffi::DLPACK_MINOR_VERSION),
    );
    match header_version(&text) {
        Some(version) if version == wanted => Ok(text),
        Some((major, minor)) => Err(format!(
            "{} declares DLPack {major}.{minor}, not {}.{}",
            path.display(),
            wanted.0,
            wanted.1
        )),
        None => Err(format!(
            "{} does not define DLPACK_MAJOR_VERSION and DLPACK_MINOR_VERSION",
            path.display()
        )),
    }
}

/// Source 3: download the wheel, extract the header into the cache, return its path.
fn header_from_wheel() -> Result<(PathBuf, String, String), String> {
    let download = cache_dir().join(format!("download-{}", std::process::id()));
    let _ = fs::remove_dir_all(&download);
    fs::create_dir_all(&download).map_err(|err| format!("{}: {err}", download.display()))?;
    let result = (|| {
        run(Command::new("python3")
            .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
            .args(["--disable-pip-version-check", "--quiet", "--timeout", "20"])
            .arg(WHEEL_PROJECT)
            .arg("-d")
            .arg(&download))?;
        let wheel = fs::read_dir(&download)
            .map_err(|err| format!("{}: {err}", download.display()))?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .find(|path| path.extension().is_some_and(|ext| ext == "whl"))
            .ok_or_else(|| format!("pip left no wheel in {}", download.display()))?;
        let wheel_name = wheel
            .file_name()
            .map_or_else(String::new, |name| name.to_string_lossy().into_owned());

        // Extract next to the cache entry, check it, then move it in place in one step, so
        // that a concurrent run never sees a partial file.
        let cached = cached_header_path();
        let parent = cached.parent().expect("the cache path has a parent");
        fs::create_dir_all(parent).map_err(|err| format!("{}: {err}", parent.display()))?;
        let staged = parent.join(format!("dlpack.h.{}.tmp", std::process::id()));
        run(Command::new("python3")
            .arg("-c")
            .arg(
                "import sys, zipfile\n\
                 with zipfile.ZipFile(sys.argv[1]) as wheel:\n\
                 \x20   data = wheel.read(sys.argv[2])\n\
                 with open(sys.argv[3], 'wb') as out:\n\
                 \x20   out.write(data)\n",
            )
            .arg(&wheel)
            .arg(WHEEL_MEMBER)
            .arg(&staged))?;
        let text = read_versioned_header(&staged).inspect_err(|_| {
            let _ = fs::remove_file(&staged);
        })?;
        fs::rename(&staged, &cached).map_err(|err| format!("{}: {err}", cached.display()))?;
        // Remember where the cached header came from, for the log of later runs.
        let _ = fs::write(cache_dir().join("ORIGIN"), &wheel_name);
        Ok((cached, wheel_name, text))
    })();
    let _ = fs::remove_dir_all(&download);
    result
}

/// Source 4: the header shipped with PyTorch.
fn header_from_torch() -> Result<(PathBuf, String), String> {
    let output = run(Command::new("python3").args([
        "-c",
        "import os, torch; print(os.path.dirname(torch.__file__))",
    ]))?;
    let torch_dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    let mut reasons = Vec::new();
    for candidate in TORCH_CANDIDATES {
        let path = torch_dir.join(candidate);
        if !path.is_file() {
            reasons.push(format!("{}: no such file", path.display()));
            continue;
        }
        match read_versioned_header(&path) {
            Ok(text) => return Ok((path, text)),
            Err(reason) => reasons.push(reason),
        }
    }
    Err(reasons.join("; "))
}

/// The header to check against, or why no source worked (one reason per source).
///
/// Panics when `DLBRIDGE_DLPACK_HEADER` is set but cannot be read: an explicit choice is never
/// silently replaced by another source.
fn find_header() -> Result<Header, String> {
    if let Some(path) = std::env::var_os(HEADER_ENV).filter(|value| !value.is_empty()) {
        let path = PathBuf::from(path);
        let text = fs::read_to_string(&path).unwrap_or_else(|err| {
            panic!(
                "abi_header: {HEADER_ENV} is set to {} but it cannot be read: {err}\n\
                 (an explicit header is never replaced by another source; unset the variable \
                 to use the cache or the download)",
                path.display()
            )
        });
        return Ok(Header {
            source: HEADER_ENV.to_owned(),
            path,
            text,
        });
    }
    let mut failures = vec![format!("{HEADER_ENV}: not set")];

    let cached = cached_header_path();
    if cached.is_file() {
        match read_versioned_header(&cached) {
            Ok(text) => {
                let origin = fs::read_to_string(cache_dir().join("ORIGIN"))
                    .map(|origin| format!(", extracted from {}", origin.trim()))
                    .unwrap_or_default();
                return Ok(Header {
                    source: format!("cached header{origin}"),
                    path: cached,
                    text,
                });
            }
            Err(reason) => failures.push(format!("cache: {reason} (ignored)")),
        }
    } else {
        failures.push(format!("cache: {} does not exist yet", cached.display()));
    }

    match header_from_wheel() {
        Ok((path, wheel, text)) => {
            return Ok(Header {
                source: format!("{WHEEL_MEMBER} of {wheel}, downloaded by pip and now cached"),
                path,
                text,
            });
        }
        Err(reason) => failures.push(format!("{WHEEL_PROJECT} wheel: {reason}")),
    }

    match header_from_torch() {
        Ok((path, text)) => {
            return Ok(Header {
                source: "the header shipped with PyTorch".to_owned(),
                path,
                text,
            });
        }
        Err(reason) => failures.push(format!("torch: {reason}")),
    }

    Err(format!(
        "no DLPack {}.{} header found:\n  - {}",
        ffi::DLPACK_MAJOR_VERSION,
        ffi::DLPACK_MINOR_VERSION,
        failures.join("\n  - ")
    ))
}

// ---------------------------------------------------------------------------------------------
// Compiling and running the probe.

/// Compiles `tests/abi_probe.c` against `header` and returns what it prints.
fn run_probe(header: &Header) -> Result<Table, ProbeError> {
    let probe_source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/abi_probe.c");
    let work = tmp_dir().join(format!("abi-probe-{}", std::process::id()));
    let include = work.join("include");
    // Stage exactly the text that was scanned as `<include>/dlpack/dlpack.h`, whatever the
    // original file is called.
    let staged = include.join("dlpack").join("dlpack.h");
    fs::create_dir_all(staged.parent().expect("has a parent"))
        .and_then(|()| fs::write(&staged, &header.text))
        .map_err(|err| ProbeError::Failed(format!("{}: {err}", staged.display())))?;
    compile_and_run(&probe_source, &include, &work)
}

// ---------------------------------------------------------------------------------------------
// Tests.

#[test]
#[cfg_attr(miri, ignore)]
fn ffi_layout_matches_the_real_dlpack_header() {
    let header = match find_header() {
        Ok(header) => header,
        Err(reason) => return c_probe::unavailable(TEST, &reason),
    };
    eprintln!(
        "abi_header: using {} at {}",
        header.source,
        header.path.display()
    );
    if let Some((major, minor)) = header_version(&header.text) {
        eprintln!("abi_header: the header declares DLPack {major}.{minor}");
    }
    let from_header = match run_probe(&header) {
        Ok(table) => table,
        Err(ProbeError::NoCompiler(reason)) => return c_probe::unavailable(TEST, &reason),
        Err(ProbeError::Failed(reason)) => panic!("abi_header: the C probe failed: {reason}"),
    };
    let mut from_header = from_header;
    let mut from_rust = rust_table();

    let enums = scan_enumerators(&header.text, ENUMERATOR_PREFIX);
    let mut problems = Vec::new();
    let beyond = check_post_1_3(&enums, &mut from_header, &mut from_rust, &mut problems);
    problems.extend(compare(&from_header, &from_rust));
    problems.extend(check_enumerator_coverage(
        &enums,
        &from_header,
        &from_rust,
        "tests/abi_probe.c",
    ));
    // The ALL lists hold the post-1.3 values too: those the header does not declare are left
    // out of the comparison with it.
    let beyond = &beyond;
    let declared = |enum_name| move |value: &i128| !beyond.contains(&(enum_name, *value));
    let device_types: Vec<i128> = DeviceType::ALL
        .iter()
        .map(|d| d.0.into())
        .filter(declared(DEVICE_TYPE_ENUM))
        .collect();
    problems.extend(check_all_list(
        &enums,
        &from_header,
        DEVICE_TYPE_ENUM,
        &device_types,
    ));
    let codes: Vec<i128> = DataTypeCode::ALL
        .iter()
        .map(|c| c.0.into())
        .filter(declared(DATA_TYPE_CODE_ENUM))
        .collect();
    problems.extend(check_all_list(
        &enums,
        &from_header,
        DATA_TYPE_CODE_ENUM,
        &codes,
    ));

    assert!(
        problems.is_empty(),
        "dlbridge::ffi does not match {} ({} problems):\n  {}",
        header.path.display(),
        problems.len(),
        problems.join("\n  ")
    );
    eprintln!(
        "abi_header: {} items and {} enumerators checked, all equal",
        from_header.len(),
        enums.len()
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn comparison_reports_every_wrong_item_by_name() {
    let rust = rust_table();
    assert!(compare(&rust, &rust).is_empty());

    let mut wrong = rust.clone();
    *wrong.get_mut("offsetof(DLTensor.ndim)").unwrap() += 4;
    *wrong.get_mut("kDLTrn").unwrap() = 99;
    wrong.remove("sizeof(DLPackExchangeAPI)");
    wrong.insert("kDLFromTheFuture".to_owned(), 19);

    let ndim = rust["offsetof(DLTensor.ndim)"];
    let api = rust["sizeof(DLPackExchangeAPI)"];
    assert_eq!(
        compare(&wrong, &rust),
        [
            "kDLFromTheFuture: header=19 rust=<missing>".to_owned(),
            format!("kDLTrn: header=99 rust={}", DeviceType::TRN.0),
            format!("offsetof(DLTensor.ndim): header={} rust={ndim}", ndim + 4),
            format!("sizeof(DLPackExchangeAPI): header=<missing> rust={api}"),
        ]
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn probe_output_is_parsed_strictly() {
    let table = parse_probe_output("sizeof(DLTensor) 48\nkDLCPU 1\n\nDLPACK_MINOR_VERSION 3\n");
    assert_eq!(
        table.unwrap(),
        Table::from([
            ("sizeof(DLTensor)".to_owned(), 48),
            ("kDLCPU".to_owned(), 1),
            ("DLPACK_MINOR_VERSION".to_owned(), 3),
        ])
    );
    assert!(parse_probe_output("sizeof(DLTensor)\n").is_err());
    assert!(parse_probe_output("kDLCPU one\n").is_err());
    assert!(parse_probe_output("kDLCPU 1\nkDLCPU 1\n").is_err());
}

#[test]
#[cfg_attr(miri, ignore)]
fn new_enumerators_in_a_header_are_reported() {
    // A made-up header fragment in the style of dlpack.h: one enumerator the Rust side knows,
    // and ones it cannot know.
    let text = "#define DLPACK_MAJOR_VERSION 1\n\
                #define DLPACK_MINOR_VERSION 9 // comment\n\
                /* kDLInComment = 5, */\n\
                typedef enum {\n\
                  kDLCPU = 1, // a known one\n\
                  kDLNewDevice = 0x20U,\n\
                  kDLNegative = -3,\n\
                  kDLImplicit\n\
                } DLDeviceType;\n\
                typedef struct { int x; } Other;\n";
    assert_eq!(header_version(text), Some((1, 9)));
    let enums = scan_enumerators(text, ENUMERATOR_PREFIX);
    let device = Some(DEVICE_TYPE_ENUM.to_owned());
    let scanned: Vec<_> = enums
        .iter()
        .map(|e| (e.name.as_str(), e.value, e.enum_name.clone()))
        .collect();
    assert_eq!(
        scanned,
        [
            ("kDLCPU", Some(1), device.clone()),
            ("kDLNewDevice", Some(32), device.clone()),
            ("kDLNegative", Some(-3), device.clone()),
            ("kDLImplicit", None, device.clone()),
        ]
    );

    let probed = Table::from([("kDLCPU".to_owned(), 1), ("kDLNewDevice".to_owned(), 32)]);
    let problems = check_enumerator_coverage(&enums, &probed, &rust_table(), "tests/abi_probe.c");
    for name in ["kDLNewDevice", "kDLNegative", "kDLImplicit"] {
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with(&format!("{name}: "))
                    && p.contains("missing on the Rust side")),
            "{name} not reported: {problems:#?}"
        );
    }
    assert!(
        problems.iter().all(|p| !p.starts_with("kDLCPU")),
        "{problems:#?}"
    );

    let problems = check_all_list(&enums, &probed, DEVICE_TYPE_ENUM, &[1, 2]);
    assert_eq!(
        problems,
        [
            "DLDeviceType: the header declares 4 enumerators, the Rust ALL list has 2",
            "DLDeviceType: the Rust ALL list has 2, which no enumerator of the header has",
        ]
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn post_1_3_enumerators_are_checked_where_a_header_declares_them() {
    // A header of DLPack's main branch declares them: their values join both tables.
    let newer = "typedef enum {\n  kDLTrn = 18,\n  kDLTPU = 19,\n  kDLTPUHost = 20,\n  \
                 kDLAscend = 21,\n} DLDeviceType;\n\
                 typedef enum {\n  kDLFloat4_e2m1fn = 17U,\n  kDLBcomplex = 18U,\n} \
                 DLDataTypeCode;\n";
    let enums = scan_enumerators(newer, ENUMERATOR_PREFIX);
    let (mut header, mut rust, mut problems) = (Table::new(), Table::new(), Vec::new());
    let beyond = check_post_1_3(&enums, &mut header, &mut rust, &mut problems);
    assert!(
        problems.is_empty() && beyond.is_empty(),
        "{problems:?} {beyond:?}"
    );
    assert!(compare(&header, &rust).is_empty());
    assert_eq!(header["kDLBcomplex"], 18);

    // A header that gives one another value is reported by the comparison.
    let moved = newer.replace("kDLAscend = 21", "kDLAscend = 22");
    let enums = scan_enumerators(&moved, ENUMERATOR_PREFIX);
    let (mut header, mut rust, mut problems) = (Table::new(), Table::new(), Vec::new());
    check_post_1_3(&enums, &mut header, &mut rust, &mut problems);
    assert_eq!(compare(&header, &rust), ["kDLAscend: header=22 rust=21"]);

    // A header without them, whose enum gives one of their values to another enumerator.
    let taken = "typedef enum {\n  kDLTrn = 18,\n  kDLSomethingElse = 19,\n} DLDeviceType;\n";
    let enums = scan_enumerators(taken, ENUMERATOR_PREFIX);
    let (mut header, mut rust, mut problems) = (Table::new(), Table::new(), Vec::new());
    let beyond = check_post_1_3(&enums, &mut header, &mut rust, &mut problems);
    assert_eq!(
        problems,
        ["kDLTPU: dlbridge gives it 19, which the header gives kDLSomethingElse"]
    );
    assert_eq!(beyond.len(), 4);
}
