//! XLA's FFI (`xla/ffi/api/c_api.h`), through which JAX runs native code inside `jax.jit`: the
//! raw C ABI ([`ffi`]) and XLA's data types named as DLPack's ([`data_type`], [`xla_type`]).
//!
//! Under `jax.jit` a kernel's arguments are tracers, which have no memory to export through
//! `__dlpack__`. JAX's route for native code is a custom call: a handler registered with
//! `jax.ffi.register_ffi_target` and called through `jax.ffi.ffi_call`, which XLA calls with
//! one call frame per execution, holding dense row-major buffers it allocated, the results'
//! included. These bindings are in the core crate because nothing in them is Python: the
//! handler is a C function that XLA calls.
//!
//! # Data types
//!
//! XLA names its types by `xla::PrimitiveType` numbers. [`data_type`] gives the DLPack data type
//! of each one DLPack can name with the same bits, [`xla_type`] the way back:
//!
//! | XLA | DLPack |
//! |---|---|
//! | `PRED` | `bool` (one byte) |
//! | `S8`, `S16`, `S32`, `S64` | `int8` ... `int64` |
//! | `U8`, `U16`, `U32`, `U64` | `uint8` ... `uint64` |
//! | `F16`, `F32`, `F64` | `float16`, `float32`, `float64` |
//! | `BF16` | `bfloat16` |
//! | `C64`, `C128` | `complex64`, `complex128` |
//! | `F8E5M2`, `F8E3M4`, `F8E4M3`, `F8E4M3FN`, `F8E4M3B11FNUZ`, `F8E5M2FNUZ`, `F8E4M3FNUZ`, `F8E8M0FNU` | the float8 type of the same name |
//!
//! Not mapped: `TOKEN` (no data), `INVALID`, and the sub-byte types (`S1`, `S2`, `S4`, `U1`,
//! `U2`, `U4`, `F4E2M1FN`), whose storage in an XLA buffer (packed or one element per byte)
//! depends on the platform and is not stated by the C API. A value the header does not name
//! maps to nothing.
//!
//! ```
//! use dlbridge::DataType;
//! use dlbridge::xla::{data_type, ffi::XLA_FFI_DataType, xla_type};
//!
//! assert_eq!(data_type(XLA_FFI_DataType::F32), Some(DataType::FLOAT32));
//! assert_eq!(xla_type(DataType::BFLOAT16), Some(XLA_FFI_DataType::BF16));
//! assert_eq!(data_type(XLA_FFI_DataType::TOKEN), None);
//! assert_eq!(data_type(XLA_FFI_DataType(1000)), None);
//! ```

pub mod ffi;
mod data_types;
mod call;

pub use call::{Attributes, Call, HandlerError, ResultBuffer, handle, handle_on_device};
pub use data_types::{data_type, xla_type};
