//! The README's Python-extension example is a brief of the kernel author's guide on this
//! crate's front page (`src/lib.rs`), whose module is compiled and run as a doc test: every
//! line of the README's block must appear, in order, in the guide's example, so that the
//! README cannot show code that no longer compiles.

#[test]
fn the_readme_extension_is_part_of_the_doc_tested_guide() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/../../README.md")).expect("README.md");
    let guide = std::fs::read_to_string(format!("{root}/src/lib.rs")).expect("src/lib.rs");
    let section = readme
        .split("## Writing a Python extension")
        .nth(1)
        .expect("the README's section \"Writing a Python extension\"");
    let block = section
        .split("```rust,ignore\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("the section's Rust block");
    let guide_lines: Vec<&str> = guide
        .lines()
        .filter_map(|line| line.strip_prefix("//!"))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect();
    let mut position = 0;
    for line in block.lines().filter(|line| !line.trim().is_empty()) {
        match guide_lines[position..]
            .iter()
            .position(|guide_line| *guide_line == line)
        {
            Some(offset) => position += offset + 1,
            None => panic!("README line not in the guide's example (in order): {line:?}"),
        }
    }
}
