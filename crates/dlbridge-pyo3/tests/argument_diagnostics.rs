//! The compile errors a kernel author meets for a typed argument declared wrong name what is
//! wrong and where it goes (`#[diagnostic::on_unimplemented]` on the argument types' traits).
//!
//! Each file under `tests/compile_fail` is a small program with one mistake, and lists the
//! diagnostic text it must produce in lines starting with `//~ `. The test builds every file
//! as a binary of a scratch package that depends on this crate (in
//! `target/argument-diagnostics`), and checks that each fails to compile with every listed
//! text in the compiler's output. Only the project's own wording is checked, not rustc's
//! layout around it, which changes with the compiler and with this crate's source.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The cases: (name, source, expected texts).
fn cases(directory: &Path) -> Vec<(String, String, Vec<String>)> {
    let mut cases: Vec<_> = std::fs::read_dir(directory)
        .expect("tests/compile_fail")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "rs"))
        .map(|path| {
            let source = std::fs::read_to_string(&path).expect("a case's source");
            let expected = source
                .lines()
                .filter_map(|line| line.trim_start().strip_prefix("//~ "))
                .map(str::to_owned)
                .collect();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            (name, source, expected)
        })
        .collect();
    cases.sort();
    cases
}

/// Writes the scratch package: this crate and PyO3 as dependencies (PyO3 at the version and
/// features of the workspace, through the workspace's lock file), one binary per case.
fn scratch_package(crate_root: &Path, package: &Path, names: &[String]) {
    let sources = package.join("src/bin");
    std::fs::create_dir_all(&sources).expect("the scratch package's directory");
    let workspace = crate_root
        .parent()
        .and_then(Path::parent)
        .expect("the workspace");
    let manifest = format!(
        "[package]\nname = \"argument-diagnostics\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
         publish = false\n\n[dependencies]\ndlbridge-pyo3 = {{ path = {:?} }}\n\
         pyo3 = {{ version = \"0.30\", default-features = false, features = [\"macros\"] }}\n\n\
         [workspace]\n",
        crate_root.display().to_string()
    );
    std::fs::write(package.join("Cargo.toml"), manifest).expect("the scratch manifest");
    std::fs::copy(workspace.join("Cargo.lock"), package.join("Cargo.lock"))
        .expect("the workspace's lock file");
    // Only the current cases: a case removed from tests/compile_fail leaves no binary behind.
    for entry in std::fs::read_dir(&sources).expect("src/bin") {
        let path = entry.expect("an entry").path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if !names.contains(&stem) {
            std::fs::remove_file(path).expect("a stale case");
        }
    }
}

#[test]
fn declared_mistakes_are_named_at_compile_time() {
    let crate_root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let cases = cases(&crate_root.join("tests/compile_fail"));
    assert!(cases.len() >= 5, "the compile-fail cases were not found");
    let target = crate_root.join("../../target/argument-diagnostics");
    let package = target.join("package");
    let names: Vec<String> = cases.iter().map(|(name, ..)| name.clone()).collect();
    scratch_package(&crate_root, &package, &names);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut failures = Vec::new();
    for (name, source, expected) in &cases {
        assert!(!expected.is_empty(), "{name}.rs lists no `//~ ` diagnostic");
        std::fs::write(package.join(format!("src/bin/{name}.rs")), source).expect("a case");
        let output = Command::new(&cargo)
            .args(["check", "--quiet", "--color=never", "--bin", name])
            .current_dir(&package)
            .env("CARGO_TARGET_DIR", target.join("target"))
            // The diagnostics of the compiler as the project builds, not of a sanitizer run.
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_BUILD_TARGET")
            .output()
            .expect("cargo runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.success() {
            failures.push(format!("{name}.rs compiled, but must not"));
            continue;
        }
        for text in expected {
            if !stderr.contains(text.as_str()) {
                failures.push(format!(
                    "{name}.rs: the compiler did not say `{text}`; it said:\n{stderr}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
