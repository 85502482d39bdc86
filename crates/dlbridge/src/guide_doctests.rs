//! The user guide's pages about this crate (docs/guide, `make guide`), whose Rust blocks are
//! compiled and run as doc tests, so that the guide cannot show code that no longer compiles
//! or does something else. `guide` is a link to the repository's docs/guide/src, so that the
//! published crate carries the pages it includes (its doc tests read no file outside it).
//! python/tests/test_guide.py checks that every page with a Rust block is included here or in
//! dlbridge-pyo3's `guide_doctests`.

/// The guide's page "The core crate" (docs/guide/src/rust-core.md).
#[doc = include_str!("../guide/rust-core.md")]
struct RustCore;

/// The guide's page "C interop" (docs/guide/src/c-interop.md).
#[doc = include_str!("../guide/c-interop.md")]
struct CInterop;

/// The guide's page "GPU" (docs/guide/src/gpu.md).
#[doc = include_str!("../guide/gpu.md")]
struct Gpu;

/// The guide's page "Model weights: safetensors files" (docs/guide/src/safetensors.md), whose
/// Rust block needs the feature `safetensors` (`make rust-test` turns it on).
#[doc = include_str!("../guide/safetensors.md")]
struct Safetensors;
