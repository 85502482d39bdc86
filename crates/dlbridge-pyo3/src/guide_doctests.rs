//! The user guide's pages about Python extensions (docs/guide, `make guide`), whose Rust blocks
//! are compiled and run as doc tests (with Python embedded, as the crate's own doc tests are),
//! so that the guide cannot show code that no longer compiles or does something else. `guide`
//! is a link to the repository's docs/guide/src, so that the published crate carries the pages
//! it includes (its doc tests read no file outside it). A block that needs a feature is
//! compiled with it only (`# #[cfg(feature = "faer")]`); `make rust-test` turns on every one.
//! python/tests/test_guide.py checks that every page with a Rust block is included here or in
//! the core crate's `guide_doctests`.

/// The guide's page "Writing a Python extension" (docs/guide/src/kernels.md).
#[doc = include_str!("../guide/kernels.md")]
struct Kernels;

/// The guide's page "Rust's tensor libraries" (docs/guide/src/tensor-libraries.md): the core
/// crate's bridges (through this crate's dependency on it, with the features of the same
/// names) and their use in kernels.
#[doc = include_str!("../guide/tensor-libraries.md")]
struct TensorLibraries;

/// The guide's page "Kernels inside `jax.jit` and `torch.compile`"
/// (docs/guide/src/compiled-graphs.md): one declaration per kernel (`kernel!`).
#[doc = include_str!("../guide/compiled-graphs.md")]
struct CompiledGraphs;
