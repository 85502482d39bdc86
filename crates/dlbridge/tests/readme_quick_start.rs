//! The repository's README shows the quick start of this crate's README, which is compiled
//! and run as a doc test (`src/lib.rs`): the two Rust blocks must be equal, so that the
//! repository's front page cannot show code that no longer compiles. This test reads the
//! repository's README, so it is left out of the published crate (`exclude` in Cargo.toml).

fn first_rust_block(text: &str, after: &str) -> String {
    let section = text
        .split(after)
        .nth(1)
        .unwrap_or_else(|| panic!("no section {after:?}"));
    section
        .split("```rust\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .unwrap_or_else(|| panic!("no Rust block after {after:?}"))
        .to_owned()
}

#[test]
fn the_repository_readme_shows_the_crate_readme_quick_start() {
    // Read at compile time, so that the test also runs under Miri (whose isolation forbids
    // opening files).
    let repository = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"));
    let crate_readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"));
    assert_eq!(
        first_rust_block(repository, "## Quick start: Rust"),
        first_rust_block(crate_readme, "## Example"),
        "the Rust quick start of README.md differs from crates/dlbridge/README.md's example"
    );
}
