//! The repository README's Rust blocks for extension authors, each compiled and run:
//!
//! - "Writing a Python extension" is a brief of the kernel author's guide on this crate's
//!   front page (`src/lib.rs`), whose module is compiled and run as a doc test: every line of
//!   the README's block must appear, in order, in the guide's example.
//! - "Rust's tensor libraries" shows a faer `matmul`: every line of it must appear, in order,
//!   in [`faer_matmul`] below, which is called on matrices and its product checked.
//!
//! So the README cannot show code that no longer compiles or does something else. Those are
//! the README's only `rust,ignore` blocks (checked here); its one `rust` block, the quick
//! start, is the core crate's (`crates/dlbridge/tests/readme_quick_start.rs`).

/// The repository's README.
fn readme() -> String {
    let root = env!("CARGO_MANIFEST_DIR");
    std::fs::read_to_string(format!("{root}/../../README.md")).expect("README.md")
}

/// The first `rust,ignore` block after the heading `section` of the README.
fn rust_block<'a>(readme: &'a str, section: &str) -> &'a str {
    readme
        .split(section)
        .nth(1)
        .unwrap_or_else(|| panic!("the README's section {section:?}"))
        .split("```rust,ignore\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .unwrap_or_else(|| panic!("the Rust block of the README's section {section:?}"))
}

/// Panics unless every non-empty line of `block` is one of `lines`, in the same order.
fn assert_lines_in_order(block: &str, lines: &[&str], place: &str) {
    let mut position = 0;
    for line in block.lines().filter(|line| !line.trim().is_empty()) {
        match lines[position..].iter().position(|other| *other == line) {
            Some(offset) => position += offset + 1,
            None => panic!("README line not in {place} (in order): {line:?}"),
        }
    }
}

#[test]
fn the_readme_has_no_other_unchecked_rust_block() {
    let readme = readme();
    assert_eq!(
        readme.matches("```rust,ignore\n").count(),
        2,
        "a new `rust,ignore` block of the README needs a test here that compiles and runs it"
    );
    assert_eq!(
        readme.matches("```rust\n").count(),
        1,
        "the README's one `rust` block is the quick start (crates/dlbridge/tests/readme_quick_start.rs)"
    );
}

#[test]
fn the_readme_extension_is_part_of_the_doc_tested_guide() {
    let readme = readme();
    let block = rust_block(&readme, "## Writing a Python extension");
    let root = env!("CARGO_MANIFEST_DIR");
    let guide = std::fs::read_to_string(format!("{root}/src/lib.rs")).expect("src/lib.rs");
    let guide_lines: Vec<&str> = guide
        .lines()
        .filter_map(|line| line.strip_prefix("//!"))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect();
    assert_lines_in_order(block, &guide_lines, "the guide's example");
}

#[cfg(feature = "faer")]
mod faer_matmul {
    use dlbridge_pyo3::prelude::*;
    use pyo3::prelude::*;
    use pyo3::types::PyDict;

    // The README's block, as it is written there (rustfmt would split its long line).

    /// `a @ b` by faer, read in place from any layout, returned as `a`'s framework: zero-copy
    /// for NumPy and PyTorch; faer pads the product's columns (a 3x3 float64 product has column
    /// stride 8), which JAX refuses, so JAX gets it compacted (one copy).
    #[pyfunction]
    #[rustfmt::skip]
    fn matmul<'py>(py: Python<'py>, a: TensorArg2<'_, f64>, b: TensorArg2<'_, f64>) -> PyResult<Bound<'py, PyAny>> {
        a.return_like(py, a.as_faer_mat()? * b.as_faer_mat()?)
    }

    #[test]
    fn the_readme_faer_matmul_is_this_one() {
        let readme = super::readme();
        let block = super::rust_block(&readme, "## Rust's tensor libraries");
        let source = include_str!("readme_blocks.rs");
        let lines: Vec<&str> = source.lines().map(|line| line.trim_start()).collect();
        let block: String = block
            .lines()
            .map(|line| format!("{}\n", line.trim_start()))
            .collect();
        super::assert_lines_in_order(&block, &lines, "tests/readme_blocks.rs's faer_matmul");
    }

    #[test]
    fn the_readme_faer_matmul_multiplies_and_returns_the_callers_kind() {
        Python::initialize();
        Python::attach(|py| {
            let locals = PyDict::new(py);
            locals
                .set_item("matmul", wrap_pyfunction!(matmul, py).unwrap())
                .unwrap();
            // Buffers (a memoryview comes back for memoryviews); the Python suite calls the
            // same kernels on NumPy, PyTorch and JAX (examples/tensor_libraries).
            let product = py
                .eval(
                    c"matmul(\
                        memoryview(bytearray(__import__('array').array('d', [1, 2, 3, 4, 5, 6]).tobytes())).cast('B').cast('d', [2, 3]), \
                        memoryview(bytearray(__import__('array').array('d', [7, 8, 9, 10, 11, 12]).tobytes())).cast('B').cast('d', [3, 2])\
                    ).tolist()",
                    None,
                    Some(&locals),
                )
                .unwrap();
            let product: Vec<Vec<f64>> = product.extract().unwrap();
            // [[1, 2, 3], [4, 5, 6]] @ [[7, 8], [9, 10], [11, 12]]
            assert_eq!(product, [[58.0, 64.0], [139.0, 154.0]]);
        });
    }
}
