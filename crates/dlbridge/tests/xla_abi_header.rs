//! ABI check of [`dlbridge::xla::ffi`] against XLA's real FFI header, `xla/ffi/api/c_api.h`.
//!
//! The declarations in `dlbridge::xla::ffi` are written by hand. As `abi_header.rs` does for
//! `dlpack.h`, this test compiles `tests/xla_abi_probe.c` against the real header with the
//! system C compiler, runs it, and compares what it prints with the same table computed on the
//! Rust side:
//!
//! - size and alignment of every struct the header completes, and of every enum type;
//! - offset and size of every field of every struct;
//! - `<struct>_STRUCT_SIZE`, which callers put in `struct_size` (`STRUCT_SIZE` here);
//! - the value of every enumerator, and `XLA_FFI_API_MAJOR` / `XLA_FFI_API_MINOR`.
//!
//! Every differing item is reported as `item: header=X rust=Y`. The header text is scanned for
//! enumerators (`XLA_FFI_...`), so that one a newer header adds is reported as missing on the
//! Rust side, and each enum's `ALL` list must hold exactly the header's enumerators.
//!
//! # Where the header comes from
//!
//! It is never part of this repository. jaxlib ships it: `jax.ffi.include_dir()` is the
//! directory that holds `xla/ffi/api/c_api.h`. The first source that works wins:
//!
//! 1. `DLBRIDGE_XLA_FFI_INCLUDE`: such a directory. When set (and not empty) it is the only
//!    source, and the header is compared whatever API version it declares.
//! 2. `jax.ffi.include_dir()` of the workspace's `.venv/bin/python` (which `make test` makes
//!    before this test runs), then of `python3`; accepted only when the header declares the
//!    API version these bindings are for (`XLA_FFI_API_MAJOR`.`XLA_FFI_API_MINOR`, 0.3).
//!
//! When neither works (or no C compiler is there) the test prints `skipped: ...` with the
//! reasons and passes, except under `CI=true`, where it fails. Miri cannot spawn processes, so
//! the test is ignored under Miri.

use std::fs;
use std::mem::{align_of, offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

use dlbridge::xla::ffi;

mod c_probe;
use c_probe::{
    ProbeError, Table, check_all_list, check_enumerator_coverage, compare, compile_and_run,
    field_size, header_define, insert, run, rust_layout, scan_enumerators,
};

/// This test's name in its reports.
const TEST: &str = "xla_abi_header";
/// Environment variable naming an include directory that holds `xla/ffi/api/c_api.h`.
const INCLUDE_ENV: &str = "DLBRIDGE_XLA_FFI_INCLUDE";
/// The header, relative to the include directory.
const HEADER: &str = "xla/ffi/api/c_api.h";
/// The enumerators of `c_api.h`.
const ENUMERATOR_PREFIX: &str = "XLA_FFI_";

/// Adds each enumerator's value (a newtype's integer) under its name in `c_api.h`.
macro_rules! enumerators {
    ($table:expr, $($name:ident),* $(,)?) => {{
        let table: &mut Table = $table;
        $(insert(table, stringify!($name).into(), ffi::$name.0);)*
    }};
}

/// Adds each struct's `<name>_STRUCT_SIZE`, as the header computes it (`STRUCT_SIZE` here).
macro_rules! struct_sizes {
    ($table:expr, $($ty:ident),* $(,)?) => {{
        let table: &mut Table = $table;
        $(insert(table, concat!(stringify!($ty), "_STRUCT_SIZE").into(), ffi::$ty::STRUCT_SIZE);)*
    }};
}

/// Everything the C probe prints, computed from `dlbridge::xla::ffi`.
fn rust_table() -> Table {
    let mut table = Table::new();
    let t = &mut table;
    insert(t, "XLA_FFI_API_MAJOR".into(), ffi::XLA_FFI_API_MAJOR);
    insert(t, "XLA_FFI_API_MINOR".into(), ffi::XLA_FFI_API_MINOR);
    insert(
        t,
        "XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE".into(),
        ffi::XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE,
    );
    insert(
        t,
        "sizeof(XLA_FFI_Handler_Traits)".into(),
        size_of::<ffi::XLA_FFI_Handler_Traits>(),
    );
    insert(
        t,
        "alignof(XLA_FFI_Handler_Traits)".into(),
        align_of::<ffi::XLA_FFI_Handler_Traits>(),
    );
    // The C field is `type`, a Rust keyword.
    insert(
        t,
        "offsetof(XLA_FFI_Extension_Base.type)".into(),
        offset_of!(ffi::XLA_FFI_Extension_Base, type_),
    );
    insert(
        t,
        "sizeof(XLA_FFI_Extension_Base.type)".into(),
        field_size(|value: &ffi::XLA_FFI_Extension_Base| &value.type_),
    );
    rust_layout!(t, ffi::XLA_FFI_Extension_Type);
    enumerators!(t, XLA_FFI_Extension_Metadata);
    rust_layout!(t, ffi::XLA_FFI_Error_Code);
    enumerators!(
        t,
        XLA_FFI_Error_Code_OK,
        XLA_FFI_Error_Code_CANCELLED,
        XLA_FFI_Error_Code_UNKNOWN,
        XLA_FFI_Error_Code_INVALID_ARGUMENT,
        XLA_FFI_Error_Code_DEADLINE_EXCEEDED,
        XLA_FFI_Error_Code_NOT_FOUND,
        XLA_FFI_Error_Code_ALREADY_EXISTS,
        XLA_FFI_Error_Code_PERMISSION_DENIED,
        XLA_FFI_Error_Code_RESOURCE_EXHAUSTED,
        XLA_FFI_Error_Code_FAILED_PRECONDITION,
        XLA_FFI_Error_Code_ABORTED,
        XLA_FFI_Error_Code_OUT_OF_RANGE,
        XLA_FFI_Error_Code_UNIMPLEMENTED,
        XLA_FFI_Error_Code_INTERNAL,
        XLA_FFI_Error_Code_UNAVAILABLE,
        XLA_FFI_Error_Code_DATA_LOSS,
        XLA_FFI_Error_Code_UNAUTHENTICATED
    );
    rust_layout!(t, ffi::XLA_FFI_DataType);
    enumerators!(t, XLA_FFI_DataType_INVALID, XLA_FFI_DataType_PRED);
    insert(t, "XLA_FFI_DataType_S1".into(), ffi::XLA_FFI_DataType_S1.0);
    insert(t, "XLA_FFI_DataType_S2".into(), ffi::XLA_FFI_DataType_S2.0);
    insert(t, "XLA_FFI_DataType_S4".into(), ffi::XLA_FFI_DataType_S4.0);
    insert(t, "XLA_FFI_DataType_S8".into(), ffi::XLA_FFI_DataType_S8.0);
    enumerators!(
        t,
        XLA_FFI_DataType_S16,
        XLA_FFI_DataType_S32,
        XLA_FFI_DataType_S64
    );
    insert(t, "XLA_FFI_DataType_U1".into(), ffi::XLA_FFI_DataType_U1.0);
    insert(t, "XLA_FFI_DataType_U2".into(), ffi::XLA_FFI_DataType_U2.0);
    insert(t, "XLA_FFI_DataType_U4".into(), ffi::XLA_FFI_DataType_U4.0);
    insert(t, "XLA_FFI_DataType_U8".into(), ffi::XLA_FFI_DataType_U8.0);
    enumerators!(
        t,
        XLA_FFI_DataType_U16,
        XLA_FFI_DataType_U32,
        XLA_FFI_DataType_U64,
        XLA_FFI_DataType_F16,
        XLA_FFI_DataType_F32,
        XLA_FFI_DataType_F64,
        XLA_FFI_DataType_BF16,
        XLA_FFI_DataType_C64,
        XLA_FFI_DataType_C128,
        XLA_FFI_DataType_TOKEN,
        XLA_FFI_DataType_F8E5M2,
        XLA_FFI_DataType_F8E3M4,
        XLA_FFI_DataType_F8E4M3,
        XLA_FFI_DataType_F8E4M3FN,
        XLA_FFI_DataType_F8E4M3B11FNUZ,
        XLA_FFI_DataType_F8E5M2FNUZ,
        XLA_FFI_DataType_F8E4M3FNUZ,
        XLA_FFI_DataType_F4E2M1FN,
        XLA_FFI_DataType_F8E8M0FNU
    );
    rust_layout!(t, ffi::XLA_FFI_ArgType);
    enumerators!(t, XLA_FFI_ArgType_BUFFER);
    rust_layout!(t, ffi::XLA_FFI_RetType);
    enumerators!(t, XLA_FFI_RetType_BUFFER);
    rust_layout!(t, ffi::XLA_FFI_AttrType);
    enumerators!(
        t,
        XLA_FFI_AttrType_ARRAY,
        XLA_FFI_AttrType_DICTIONARY,
        XLA_FFI_AttrType_SCALAR,
        XLA_FFI_AttrType_STRING
    );
    rust_layout!(t, ffi::XLA_FFI_ExecutionStage);
    enumerators!(
        t,
        XLA_FFI_ExecutionStage_INSTANTIATE,
        XLA_FFI_ExecutionStage_PREPARE,
        XLA_FFI_ExecutionStage_INITIALIZE,
        XLA_FFI_ExecutionStage_EXECUTE
    );
    rust_layout!(t, ffi::XLA_FFI_Extension_Base { struct_size, next });
    rust_layout!(
        t,
        ffi::XLA_FFI_Api_Version {
            struct_size,
            extension_start,
            major_version,
            minor_version
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_Error_Create_Args {
            struct_size,
            extension_start,
            message,
            errc
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_Error_GetMessage_Args {
            struct_size,
            extension_start,
            error,
            message
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_Error_Destroy_Args {
            struct_size,
            extension_start,
            error
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_Buffer {
            struct_size,
            extension_start,
            dtype,
            data,
            rank,
            dims
        }
    );
    rust_layout!(t, ffi::XLA_FFI_ByteSpan { ptr, len });
    rust_layout!(t, ffi::XLA_FFI_Scalar { dtype, value });
    rust_layout!(t, ffi::XLA_FFI_Array { dtype, size, data });
    rust_layout!(t, ffi::XLA_FFI_TypeId { type_id });
    rust_layout!(
        t,
        ffi::XLA_FFI_TypeInfo {
            struct_size,
            extension_start,
            deleter
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_Future_Create_Args {
            struct_size,
            extension_start,
            future
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_Future_SetAvailable_Args {
            struct_size,
            extension_start,
            future
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_Future_SetError_Args {
            struct_size,
            extension_start,
            future,
            error
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_Args {
            struct_size,
            extension_start,
            size,
            types,
            args
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_Rets {
            struct_size,
            extension_start,
            size,
            types,
            rets
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_Attrs {
            struct_size,
            extension_start,
            size,
            types,
            names,
            attrs
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_CallFrame {
            struct_size,
            extension_start,
            api,
            ctx,
            stage,
            args,
            rets,
            attrs,
            future
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_Handler_Bundle {
            instantiate,
            prepare,
            initialize,
            execute
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_Handler_Register_Args {
            struct_size,
            extension_start,
            name,
            platform,
            bundle,
            traits
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_Type_Register_Args {
            struct_size,
            extension_start,
            name,
            type_id,
            type_info
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_ExecutionContext_Get_Args {
            struct_size,
            extension_start,
            ctx,
            type_id,
            data
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_State_Set_Args {
            struct_size,
            extension_start,
            ctx,
            stage,
            type_id,
            state
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_State_Get_Args {
            struct_size,
            extension_start,
            ctx,
            stage,
            type_id,
            state
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_Stream_Get_Args {
            struct_size,
            extension_start,
            ctx,
            stream
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_DeviceMemory_Allocate_Args {
            struct_size,
            extension_start,
            ctx,
            size,
            alignment,
            data
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_DeviceMemory_Free_Args {
            struct_size,
            extension_start,
            ctx,
            size,
            data
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_ThreadPool_Schedule_Args {
            struct_size,
            extension_start,
            ctx,
            task,
            data
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_ThreadPool_NumThreads_Args {
            struct_size,
            extension_start,
            ctx,
            num_threads
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_RunId_Get_Args {
            struct_size,
            extension_start,
            ctx,
            run_id
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_DeviceOrdinal_Get_Args {
            struct_size,
            extension_start,
            ctx,
            device_ordinal
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_Metadata {
            struct_size,
            api_version,
            traits,
            state_type_id
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_Metadata_Extension {
            extension_base,
            metadata
        }
    );
    rust_layout!(
        t,
        ffi::XLA_FFI_Api {
            struct_size,
            extension_start,
            api_version,
            internal_api,
            XLA_FFI_Error_Create,
            XLA_FFI_Error_GetMessage,
            XLA_FFI_Error_Destroy,
            XLA_FFI_Handler_Register,
            XLA_FFI_Stream_Get,
            XLA_FFI_Type_Register,
            XLA_FFI_ExecutionContext_Get,
            XLA_FFI_State_Set,
            XLA_FFI_State_Get,
            XLA_FFI_DeviceMemory_Allocate,
            XLA_FFI_DeviceMemory_Free,
            XLA_FFI_ThreadPool_Schedule,
            XLA_FFI_ThreadPool_NumThreads,
            XLA_FFI_Future_Create,
            XLA_FFI_Future_SetAvailable,
            XLA_FFI_Future_SetError,
            XLA_FFI_RunId_Get,
            XLA_FFI_DeviceOrdinal_Get
        }
    );
    struct_sizes!(
        t,
        XLA_FFI_Extension_Base,
        XLA_FFI_Api_Version,
        XLA_FFI_Error_Create_Args,
        XLA_FFI_Error_GetMessage_Args,
        XLA_FFI_Error_Destroy_Args,
        XLA_FFI_Buffer,
        XLA_FFI_TypeInfo,
        XLA_FFI_Future_Create_Args,
        XLA_FFI_Future_SetAvailable_Args,
        XLA_FFI_Future_SetError_Args,
        XLA_FFI_Args,
        XLA_FFI_Rets,
        XLA_FFI_Attrs,
        XLA_FFI_CallFrame,
        XLA_FFI_Handler_Register_Args,
        XLA_FFI_Type_Register_Args,
        XLA_FFI_ExecutionContext_Get_Args,
        XLA_FFI_State_Set_Args,
        XLA_FFI_State_Get_Args,
        XLA_FFI_Stream_Get_Args,
        XLA_FFI_DeviceMemory_Allocate_Args,
        XLA_FFI_DeviceMemory_Free_Args,
        XLA_FFI_ThreadPool_Schedule_Args,
        XLA_FFI_ThreadPool_NumThreads_Args,
        XLA_FFI_RunId_Get_Args,
        XLA_FFI_DeviceOrdinal_Get_Args,
        XLA_FFI_Metadata,
        XLA_FFI_Metadata_Extension,
        XLA_FFI_Api
    );
    table
}

/// `(major, minor)` as declared by the header.
fn header_version(header_text: &str) -> Option<(i128, i128)> {
    Some((
        header_define(header_text, "XLA_FFI_API_MAJOR")?,
        header_define(header_text, "XLA_FFI_API_MINOR")?,
    ))
}

/// A header found by [`find_header`].
struct Header {
    /// The include directory that holds it.
    include: PathBuf,
    /// How it was found, for the log.
    source: String,
    /// Its text.
    text: String,
}

/// The header under `include`, accepted only when it declares the bindings' API version.
fn versioned_header(include: &Path, source: String) -> Result<Header, String> {
    let path = include.join(HEADER);
    let text = fs::read_to_string(&path).map_err(|err| format!("{}: {err}", path.display()))?;
    let wanted = (
        i128::from(ffi::XLA_FFI_API_MAJOR),
        i128::from(ffi::XLA_FFI_API_MINOR),
    );
    match header_version(&text) {
        Some(version) if version == wanted => Ok(Header {
            include: include.to_owned(),
            source,
            text,
        }),
        Some((major, minor)) => Err(format!(
            "{} declares API {major}.{minor}, not {}.{}",
            path.display(),
            wanted.0,
            wanted.1
        )),
        None => Err(format!(
            "{} does not define XLA_FFI_API_MAJOR and XLA_FFI_API_MINOR",
            path.display()
        )),
    }
}

/// The header to check against, or why no source worked (one reason per source).
///
/// Panics when `DLBRIDGE_XLA_FFI_INCLUDE` is set but holds no readable header: an explicit
/// choice is never silently replaced by another source.
fn find_header() -> Result<Header, String> {
    if let Some(include) = std::env::var_os(INCLUDE_ENV).filter(|value| !value.is_empty()) {
        let include = PathBuf::from(include);
        let path = include.join(HEADER);
        let text = fs::read_to_string(&path).unwrap_or_else(|err| {
            panic!(
                "{TEST}: {INCLUDE_ENV} is set to {} but {} cannot be read: {err}",
                include.display(),
                path.display()
            )
        });
        return Ok(Header {
            include,
            source: INCLUDE_ENV.to_owned(),
            text,
        });
    }
    let mut failures = vec![format!("{INCLUDE_ENV}: not set")];
    let workspace_python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    for python in [workspace_python.as_path(), Path::new("python3")] {
        let asked =
            run(Command::new(python).args(["-c", "import jax.ffi; print(jax.ffi.include_dir())"]));
        let found = asked.and_then(|output| {
            let include = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
            versioned_header(
                &include,
                format!("jax.ffi.include_dir() of {}", python.display()),
            )
        });
        match found {
            Ok(header) => return Ok(header),
            Err(reason) => failures.push(format!("{}: {reason}", python.display())),
        }
    }
    Err(format!(
        "no XLA FFI header of API {}.{} found:\n  - {}",
        ffi::XLA_FFI_API_MAJOR,
        ffi::XLA_FFI_API_MINOR,
        failures.join("\n  - ")
    ))
}

/// Compiles `tests/xla_abi_probe.c` against `header` and returns what it prints.
fn run_probe(header: &Header) -> Result<Table, ProbeError> {
    let probe_source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xla_abi_probe.c");
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("xla-abi-probe-{}", std::process::id()));
    compile_and_run(&probe_source, &header.include, &work)
}

#[test]
#[cfg_attr(miri, ignore)]
fn xla_ffi_layout_matches_the_real_c_api_header() {
    let header = match find_header() {
        Ok(header) => header,
        Err(reason) => return c_probe::unavailable(TEST, &reason),
    };
    eprintln!(
        "{TEST}: using {} ({})",
        header.include.join(HEADER).display(),
        header.source
    );
    let from_header = match run_probe(&header) {
        Ok(table) => table,
        Err(ProbeError::NoCompiler(reason)) => return c_probe::unavailable(TEST, &reason),
        Err(ProbeError::Failed(reason)) => panic!("{TEST}: the C probe failed: {reason}"),
    };
    let from_rust = rust_table();
    let enums = scan_enumerators(&header.text, ENUMERATOR_PREFIX);
    let mut problems = compare(&from_header, &from_rust);
    problems.extend(check_enumerator_coverage(
        &enums,
        &from_header,
        &from_rust,
        "tests/xla_abi_probe.c",
    ));
    // Each enum's `ALL` list, by the enum's name.
    macro_rules! all_lists {
        ($($enum:ident),* $(,)?) => {
            [$((
                stringify!($enum),
                values(ffi::$enum::ALL.iter().map(|value| value.0)),
            )),*]
        };
    }
    let all_lists: [(&str, Vec<i128>); 7] = all_lists![
        XLA_FFI_Extension_Type,
        XLA_FFI_Error_Code,
        XLA_FFI_DataType,
        XLA_FFI_ArgType,
        XLA_FFI_RetType,
        XLA_FFI_AttrType,
        XLA_FFI_ExecutionStage,
    ];
    for (enum_name, all) in &all_lists {
        problems.extend(check_all_list(&enums, &from_header, enum_name, all));
    }
    assert!(
        problems.is_empty(),
        "dlbridge::xla::ffi does not match {} ({} problems):\n  {}",
        header.include.join(HEADER).display(),
        problems.len(),
        problems.join("\n  ")
    );
    eprintln!(
        "{TEST}: {} items and {} enumerators checked, all equal",
        from_header.len(),
        enums.len()
    );
}

/// The integers of an enum's `ALL` list.
fn values(all: impl Iterator<Item = std::ffi::c_int>) -> Vec<i128> {
    all.map(i128::from).collect()
}

#[test]
#[cfg_attr(miri, ignore)]
fn only_enum_bodies_hold_enumerators() {
    // A made-up fragment in the style of c_api.h: a macro call whose arguments look like
    // enumerators, a typedef'd enum, a tagged enum without a typedef name, and a struct.
    let text = "#define XLA_FFI_API_MAJOR 0\n\
                XLA_FFI_DEFINE_STRUCT_TRAITS(XLA_FFI_Buffer, dims);\n\
                typedef enum {\n\
                  XLA_FFI_ArgType_BUFFER = 1,\n\
                  XLA_FFI_ArgType_FUTURE, // implicit\n\
                } XLA_FFI_ArgType;\n\
                enum XLA_FFI_Handler_TraitsBits {\n\
                  XLA_FFI_HANDLER_TRAITS_X = 1u << 0,\n\
                };\n\
                struct XLA_FFI_Args { int64_t size; };\n";
    assert_eq!(header_define(text, "XLA_FFI_API_MAJOR"), Some(0));
    let scanned: Vec<_> = scan_enumerators(text, ENUMERATOR_PREFIX)
        .into_iter()
        .map(|e| (e.name, e.value, e.enum_name))
        .collect();
    let arg_type = Some("XLA_FFI_ArgType".to_owned());
    assert_eq!(
        scanned,
        [
            (
                "XLA_FFI_ArgType_BUFFER".to_owned(),
                Some(1),
                arg_type.clone()
            ),
            ("XLA_FFI_ArgType_FUTURE".to_owned(), None, arg_type),
            (
                "XLA_FFI_HANDLER_TRAITS_X".to_owned(),
                Some(1),
                Some("XLA_FFI_Handler_TraitsBits".to_owned())
            ),
        ]
    );
}
