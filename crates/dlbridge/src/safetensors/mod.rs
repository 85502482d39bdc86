//! safetensors files: model weights mapped once and handed to any DLPack consumer without a
//! copy, and files written from any host tensors (feature `safetensors`).
//!
//! [`SafetensorsFile::open`] maps a file privately (copy-on-write) and checks its header
//! against every rule of the format; each tensor is then exported over the mapping as a
//! read-only versioned CPU tensor ([`SafetensorsFile::tensor`]), which keeps the mapping alive
//! for as long as it lives. Nothing of the data is read until a consumer touches it, so a
//! 1 GiB file's tensors reach PyTorch, NumPy or JAX in microseconds and the process's resident
//! memory grows only by the pages read (BENCHMARKS.md). [`SafetensorsFile::read`] reads the
//! file into memory instead: safe where the file may change under a mapping.
//!
//! Every safetensors data type has a DLPack one, FP8, FP6 and FP4 included:
//!
//! | safetensors | DLPack | | safetensors | DLPack |
//! |---|---|---|---|---|
//! | `BOOL` | `bool` | | `F8_E4M3` | `float8_e4m3fn` |
//! | `U8`, `U16`, `U32`, `U64` | `uint8`...`uint64` | | `F8_E5M2` | `float8_e5m2` |
//! | `I8`, `I16`, `I32`, `I64` | `int8`...`int64` | | `F8_E4M3FNUZ` | `float8_e4m3fnuz` |
//! | `F16`, `BF16` | `float16`, `bfloat16` | | `F8_E5M2FNUZ` | `float8_e5m2fnuz` |
//! | `F32`, `F64` | `float32`, `float64` | | `F8_E8M0` | `float8_e8m0fnu` |
//! | `C64` | `complex64` | | `F6_E2M3`, `F6_E3M2` | `float6_e2m3fn`, `float6_e3m2fn` (packed) |
//! | | | | `F4` | `float4_e2m1fn` (packed) |
//!
//! [`write`](fn@write) and [`save`] take the other direction, from any host tensors; DLPack
//! types the format cannot name (`complex128`, `float8_e3m4`, `bcomplex32`, vectors) are
//! refused by name.
//!
//! A hostile file (a header that lies about offsets, sizes or types, overlapping tensors, a
//! truncated file) is refused as a whole with a [`SafetensorsError`] naming the tensor, the
//! field and the value; no tensor ever addresses a byte outside the file. The reader is
//! fuzzed (`fuzz/fuzz_targets/safetensors.rs`).

mod dtypes;
mod error;
mod header;
mod file;
mod writer;

#[cfg(test)]
mod tests;

pub use error::{MAX_HEADER_BYTES, SafetensorsError};
pub use file::SafetensorsFile;
pub use header::TensorInfo;
pub use writer::{save, write};
