//! The repository README's Rust blocks, and the user guide's, are each compiled (and, where
//! they can be, run) by a doc test:
//!
//! - the README has exactly two Rust blocks, its quick starts. "Quick start: Rust" is the core
//!   crate's README example (`crates/dlbridge/tests/readme_quick_start.rs` keeps the two
//!   equal); "Quick start: a Python extension" is this crate's README example, which
//!   `src/lib.rs` compiles as a doc test: the two must be equal (checked here);
//! - every page of the guide (docs/guide/src) that holds a Rust block is included as a doc
//!   test by one crate's `src/guide_doctests.rs` (checked here), and no Rust block of the guide
//!   or the README is `ignore`d.
//!
//! So neither can show code that no longer compiles. This test reads files outside the crate,
//! so it is left out of the published crate (`exclude` in Cargo.toml).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The info string and the code of every fenced block of a Markdown text.
fn fenced_blocks(text: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_owned(), String::new())),
            (Some(_), Some(_)) => blocks.push(open.take().expect("an open block")),
            (Some((_, code)), None) => {
                code.push_str(line);
                code.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "a block is never closed");
    blocks
}

/// Whether rustdoc compiles a block with this info string as Rust (no language, or `rust`
/// with attributes).
fn is_rust(info: &str) -> bool {
    info.is_empty() || info.split(',').next() == Some("rust")
}

/// The Rust block right after the heading `section` of `text`.
fn rust_block_after(text: &str, section: &str) -> String {
    let rest = text
        .split(section)
        .nth(1)
        .unwrap_or_else(|| panic!("no section {section:?}"));
    fenced_blocks(rest)
        .into_iter()
        .find(|(info, _)| is_rust(info))
        .unwrap_or_else(|| panic!("no Rust block after {section:?}"))
        .1
}

#[test]
fn the_readme_has_its_two_quick_starts_and_no_other_rust_block() {
    let readme = read(&root().join("README.md"));
    let infos: Vec<String> = fenced_blocks(&readme)
        .into_iter()
        .map(|(info, _)| info)
        .filter(|info| is_rust(info))
        .collect();
    assert_eq!(
        infos,
        ["rust", "rust"],
        "the README's Rust blocks are its two quick starts, each a crate README's doc-tested \
         example; a new one needs a test that compiles it"
    );
}

#[test]
fn the_readme_extension_is_this_crates_doc_tested_example() {
    let readme = read(&root().join("README.md"));
    let crate_readme = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"));
    assert_eq!(
        rust_block_after(&readme, "## Quick start: a Python extension"),
        rust_block_after(&crate_readme, "## Example"),
        "the README's extension quick start differs from crates/dlbridge-pyo3/README.md's \
         example (compiled as a doc test by src/lib.rs)"
    );
}

/// The pages a crate's `src/guide_doctests.rs` includes (`include_str!("../guide/PAGE")`).
fn included_pages(crate_dir: &str) -> Vec<String> {
    let source = read(&root().join(crate_dir).join("src/guide_doctests.rs"));
    source
        .split("include_str!(\"../guide/")
        .skip(1)
        .map(|rest| rest.split('"').next().expect("a closing quote").to_owned())
        .collect()
}

#[test]
fn every_guide_page_with_rust_blocks_is_a_doc_test() {
    let guide = root().join("docs/guide/src");
    let mut with_rust = BTreeSet::new();
    for entry in std::fs::read_dir(&guide).expect("docs/guide/src") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|extension| extension == "md") {
            let blocks = fenced_blocks(&read(&path));
            for (info, _) in blocks.iter().filter(|(info, _)| is_rust(info)) {
                assert!(
                    !info.split(',').any(|attribute| attribute == "ignore"),
                    "{}: an `ignore`d Rust block runs nowhere",
                    path.display()
                );
            }
            if blocks.iter().any(|(info, _)| is_rust(info)) {
                let name = path.file_name().expect("a file name").to_string_lossy();
                with_rust.insert(name.into_owned());
            }
        }
    }
    let core = included_pages("crates/dlbridge");
    let pyo3 = included_pages("crates/dlbridge-pyo3");
    for page in core.iter().chain(&pyo3) {
        assert!(
            guide.join(page).is_file(),
            "guide_doctests includes a missing page {page}"
        );
    }
    let included: BTreeSet<String> = core.iter().chain(&pyo3).cloned().collect();
    assert_eq!(
        core.len() + pyo3.len(),
        included.len(),
        "a page is included twice: core {core:?}, dlbridge-pyo3 {pyo3:?}"
    );
    assert!(
        with_rust.len() >= 5,
        "only {with_rust:?} hold Rust blocks: was the guide moved?"
    );
    assert_eq!(
        with_rust, included,
        "every guide page with a Rust block must be included by a crate's src/guide_doctests.rs"
    );
}

#[test]
fn the_guide_link_of_each_crate_is_the_guide() {
    // The crates include the pages through `guide`, a link to docs/guide/src, so that the
    // published crates carry them.
    for crate_dir in ["crates/dlbridge", "crates/dlbridge-pyo3"] {
        let link = root().join(crate_dir).join("guide");
        assert_eq!(
            std::fs::canonicalize(&link).expect("the guide link"),
            std::fs::canonicalize(root().join("docs/guide/src")).expect("docs/guide/src"),
            "{crate_dir}/guide"
        );
    }
}

#[test]
fn the_block_reader_sees_rust_blocks_and_only_them() {
    // A positive control of the readers above.
    let text =
        "```rust\na\n```\n```text\nb\n```\n```\nc\n```\n```rust,no_run\nd\n```\n```sh\ne\n```\n";
    let rust: Vec<String> = fenced_blocks(text)
        .into_iter()
        .filter(|(info, _)| is_rust(info))
        .map(|(_, code)| code)
        .collect();
    assert_eq!(rust, ["a\n", "c\n", "d\n"]);
    assert_eq!(
        rust_block_after("## X\n```text\nz\n```\n```rust\ny\n```\n", "## X"),
        "y\n"
    );
}
