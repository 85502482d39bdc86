//! The raw C ABI of XLA's FFI, `xla/ffi/api/c_api.h` (API 0.3, as jaxlib 0.10 ships it),
//! `#[repr(C)]`, field for field, under the header's own names.
//!
//! XLA calls a custom call's handler with one `XLA_FFI_CallFrame`: the argument and result
//! buffers (dense, row-major, with XLA's own data type numbers), the attributes, the execution
//! stage and the API table ([`XLA_FFI_Api`]) through which the handler makes errors and asks for
//! a stream. Before any call, XLA asks the handler for its metadata: the frame then carries a
//! [`XLA_FFI_Metadata_Extension`] and the handler answers with the API version it was built
//! for.
//!
//! Every layout here is compared with jaxlib's real header by the `xla_abi_header` test, which
//! compiles a C program against `c_api.h` (from `jax.ffi.include_dir()`) and checks size,
//! alignment and the offset of every field, and the value of every enumerator. The header is
//! never part of this repository.
//!
//! C's enums are newtypes over their integer (`XLA_FFI_DataType(11)` is F32), never Rust enums:
//! XLA may send a value a handler built against an older header does not know. Their
//! enumerators are associated constants (`XLA_FFI_DataType::F32`), and, under the header's
//! own spelling, constants of this module (`XLA_FFI_DataType_F32`) for code ported from C.
//!
//! Nothing here is safe to dereference on its own.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};

/// `XLA_FFI_API_MAJOR`: incremented on an ABI-incompatible change.
pub const XLA_FFI_API_MAJOR: c_int = 0;
/// `XLA_FFI_API_MINOR`: incremented on a compatible addition. A handler reports the version it
/// was built against in its metadata.
pub const XLA_FFI_API_MINOR: c_int = 3;

/// Defines a newtype over a C enum's integer, its named values as associated constants and,
/// under the header's spelling, as constants of this module.
macro_rules! c_enum {
    (
        $(#[$attr:meta])*
        $ty:ident($repr:ty) {
            $($(#[$value_attr:meta])* $c_name:ident = $rust_name:ident = $value:expr,)*
        }
    ) => {
        $(#[$attr])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
        pub struct $ty(pub $repr);

        impl $ty {
            $(
                $(#[$value_attr])*
                pub const $rust_name: $ty = $ty($value);
            )*
            /// Every value the header names, in the header's order.
            pub const ALL: &'static [$ty] = &[$($ty::$rust_name),*];

            /// The header's name of this value, without the type's prefix (`"F32"`), or
            /// `None` for a value the header does not name.
            pub fn name(self) -> Option<&'static str> {
                match self {
                    $($ty::$rust_name => Some(stringify!($rust_name)),)*
                    _ => None,
                }
            }
        }

        $(
            #[doc = concat!("`", stringify!($c_name), "` of `c_api.h`: [`", stringify!($ty),
                "::", stringify!($rust_name), "`].")]
            #[allow(non_upper_case_globals)]
            pub const $c_name: $ty = $ty::$rust_name;
        )*
    };
}

c_enum! {
    /// `XLA_FFI_Extension_Type`: what an extension in a struct's `extension_start` chain is.
    XLA_FFI_Extension_Type(c_int) {
        /// The metadata query ([`XLA_FFI_Metadata_Extension`]).
        XLA_FFI_Extension_Metadata = METADATA = 1,
    }
}

c_enum! {
    /// `XLA_FFI_Error_Code`: the status codes of an error (Abseil's).
    XLA_FFI_Error_Code(c_int) {
        /// No error.
        XLA_FFI_Error_Code_OK = OK = 0,
        /// Cancelled.
        XLA_FFI_Error_Code_CANCELLED = CANCELLED = 1,
        /// Unknown.
        XLA_FFI_Error_Code_UNKNOWN = UNKNOWN = 2,
        /// An argument the handler does not take (a data type, a rank, a shape).
        XLA_FFI_Error_Code_INVALID_ARGUMENT = INVALID_ARGUMENT = 3,
        /// A deadline passed.
        XLA_FFI_Error_Code_DEADLINE_EXCEEDED = DEADLINE_EXCEEDED = 4,
        /// Something asked for was not found.
        XLA_FFI_Error_Code_NOT_FOUND = NOT_FOUND = 5,
        /// Something made already exists.
        XLA_FFI_Error_Code_ALREADY_EXISTS = ALREADY_EXISTS = 6,
        /// Not permitted.
        XLA_FFI_Error_Code_PERMISSION_DENIED = PERMISSION_DENIED = 7,
        /// Out of a resource.
        XLA_FFI_Error_Code_RESOURCE_EXHAUSTED = RESOURCE_EXHAUSTED = 8,
        /// The system is not in a state the call needs.
        XLA_FFI_Error_Code_FAILED_PRECONDITION = FAILED_PRECONDITION = 9,
        /// Aborted.
        XLA_FFI_Error_Code_ABORTED = ABORTED = 10,
        /// Out of range.
        XLA_FFI_Error_Code_OUT_OF_RANGE = OUT_OF_RANGE = 11,
        /// Not implemented (a stage or platform the handler does not serve).
        XLA_FFI_Error_Code_UNIMPLEMENTED = UNIMPLEMENTED = 12,
        /// An internal error (a handler that panicked).
        XLA_FFI_Error_Code_INTERNAL = INTERNAL = 13,
        /// Unavailable.
        XLA_FFI_Error_Code_UNAVAILABLE = UNAVAILABLE = 14,
        /// Data lost.
        XLA_FFI_Error_Code_DATA_LOSS = DATA_LOSS = 15,
        /// Not authenticated.
        XLA_FFI_Error_Code_UNAUTHENTICATED = UNAUTHENTICATED = 16,
    }
}

c_enum! {
    /// `XLA_FFI_DataType`: XLA's primitive types (`xla::PrimitiveType` of `xla_data.proto`).
    XLA_FFI_DataType(c_int) {
        /// Not a type.
        XLA_FFI_DataType_INVALID = INVALID = 0,
        /// A boolean, one byte.
        XLA_FFI_DataType_PRED = PRED = 1,
        /// A 1-bit signed integer.
        XLA_FFI_DataType_S1 = S1 = 30,
        /// A 2-bit signed integer.
        XLA_FFI_DataType_S2 = S2 = 26,
        /// A 4-bit signed integer.
        XLA_FFI_DataType_S4 = S4 = 21,
        /// `int8`.
        XLA_FFI_DataType_S8 = S8 = 2,
        /// `int16`.
        XLA_FFI_DataType_S16 = S16 = 3,
        /// `int32`.
        XLA_FFI_DataType_S32 = S32 = 4,
        /// `int64`.
        XLA_FFI_DataType_S64 = S64 = 5,
        /// A 1-bit unsigned integer.
        XLA_FFI_DataType_U1 = U1 = 31,
        /// A 2-bit unsigned integer.
        XLA_FFI_DataType_U2 = U2 = 27,
        /// A 4-bit unsigned integer.
        XLA_FFI_DataType_U4 = U4 = 22,
        /// `uint8`.
        XLA_FFI_DataType_U8 = U8 = 6,
        /// `uint16`.
        XLA_FFI_DataType_U16 = U16 = 7,
        /// `uint32`.
        XLA_FFI_DataType_U32 = U32 = 8,
        /// `uint64`.
        XLA_FFI_DataType_U64 = U64 = 9,
        /// IEEE half precision.
        XLA_FFI_DataType_F16 = F16 = 10,
        /// IEEE single precision.
        XLA_FFI_DataType_F32 = F32 = 11,
        /// IEEE double precision.
        XLA_FFI_DataType_F64 = F64 = 12,
        /// bfloat16.
        XLA_FFI_DataType_BF16 = BF16 = 16,
        /// A complex number of two F32.
        XLA_FFI_DataType_C64 = C64 = 15,
        /// A complex number of two F64.
        XLA_FFI_DataType_C128 = C128 = 18,
        /// An ordering token, no data.
        XLA_FFI_DataType_TOKEN = TOKEN = 17,
        /// float8 e5m2.
        XLA_FFI_DataType_F8E5M2 = F8E5M2 = 19,
        /// float8 e3m4.
        XLA_FFI_DataType_F8E3M4 = F8E3M4 = 29,
        /// float8 e4m3.
        XLA_FFI_DataType_F8E4M3 = F8E4M3 = 28,
        /// float8 e4m3fn.
        XLA_FFI_DataType_F8E4M3FN = F8E4M3FN = 20,
        /// float8 e4m3b11fnuz.
        XLA_FFI_DataType_F8E4M3B11FNUZ = F8E4M3B11FNUZ = 23,
        /// float8 e5m2fnuz.
        XLA_FFI_DataType_F8E5M2FNUZ = F8E5M2FNUZ = 24,
        /// float8 e4m3fnuz.
        XLA_FFI_DataType_F8E4M3FNUZ = F8E4M3FNUZ = 25,
        /// float4 e2m1fn.
        XLA_FFI_DataType_F4E2M1FN = F4E2M1FN = 32,
        /// float8 e8m0fnu.
        XLA_FFI_DataType_F8E8M0FNU = F8E8M0FNU = 33,
    }
}

c_enum! {
    /// `XLA_FFI_ArgType`: what an argument of a call frame is.
    XLA_FFI_ArgType(c_int) {
        /// An [`XLA_FFI_Buffer`].
        XLA_FFI_ArgType_BUFFER = BUFFER = 1,
    }
}

c_enum! {
    /// `XLA_FFI_RetType`: what a result of a call frame is.
    XLA_FFI_RetType(c_int) {
        /// An [`XLA_FFI_Buffer`], allocated by XLA, for the handler to fill.
        XLA_FFI_RetType_BUFFER = BUFFER = 1,
    }
}

c_enum! {
    /// `XLA_FFI_AttrType`: what an attribute of a call frame is.
    XLA_FFI_AttrType(c_int) {
        /// An [`XLA_FFI_Array`].
        XLA_FFI_AttrType_ARRAY = ARRAY = 1,
        /// A nested [`XLA_FFI_Attrs`].
        XLA_FFI_AttrType_DICTIONARY = DICTIONARY = 2,
        /// An [`XLA_FFI_Scalar`].
        XLA_FFI_AttrType_SCALAR = SCALAR = 3,
        /// An [`XLA_FFI_ByteSpan`].
        XLA_FFI_AttrType_STRING = STRING = 4,
    }
}

c_enum! {
    /// `XLA_FFI_ExecutionStage`: which of a handler's stages a call frame is for.
    XLA_FFI_ExecutionStage(c_int) {
        /// When the executable is instantiated (no buffers).
        XLA_FFI_ExecutionStage_INSTANTIATE = INSTANTIATE = 0,
        /// Before execution, to ask for resources (buffers not ready).
        XLA_FFI_ExecutionStage_PREPARE = PREPARE = 1,
        /// Before execution, resources acquired (buffers not ready).
        XLA_FFI_ExecutionStage_INITIALIZE = INITIALIZE = 2,
        /// The call itself.
        XLA_FFI_ExecutionStage_EXECUTE = EXECUTE = 3,
    }
}

/// `XLA_FFI_Handler_Traits`: bits of `XLA_FFI_Handler_TraitsBits`.
pub type XLA_FFI_Handler_Traits = u32;

/// `XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE`: every call launches the same device
/// work, so XLA may capture it into a command buffer (a CUDA graph) and replay it.
pub const XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE: XLA_FFI_Handler_Traits = 1 << 0;

/// `XLA_FFI_Extension_Base`: the head of every extension in an `extension_start` chain.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Extension_Base {
    /// The extension struct's size.
    pub struct_size: usize,
    /// What the extension is.
    pub type_: XLA_FFI_Extension_Type,
    /// The next extension, or NULL.
    pub next: *mut XLA_FFI_Extension_Base,
}

/// `XLA_FFI_Api_Version`: an API version, asked of XLA or reported by a handler.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Api_Version {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The major version.
    pub major_version: c_int,
    /// The minor version.
    pub minor_version: c_int,
}

/// `XLA_FFI_Error`: an error, opaque, made by [`XLA_FFI_Api::XLA_FFI_Error_Create`]. A handler
/// returns it to XLA, which destroys it; an error returned by an API call is the caller's.
#[repr(C)]
pub struct XLA_FFI_Error {
    _opaque: [u8; 0],
}

/// `XLA_FFI_Error_Create_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Error_Create_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The message, NUL-terminated; XLA copies it.
    pub message: *const c_char,
    /// The status code.
    pub errc: XLA_FFI_Error_Code,
}

/// `XLA_FFI_Error_Create`.
pub type XLA_FFI_Error_Create =
    unsafe extern "C" fn(args: *mut XLA_FFI_Error_Create_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_Error_GetMessage_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Error_GetMessage_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The error asked about.
    pub error: *mut XLA_FFI_Error,
    /// Out: its message, owned by the error.
    pub message: *const c_char,
}

/// `XLA_FFI_Error_GetMessage`.
pub type XLA_FFI_Error_GetMessage = unsafe extern "C" fn(args: *mut XLA_FFI_Error_GetMessage_Args);

/// `XLA_FFI_Error_Destroy_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Error_Destroy_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The error to destroy.
    pub error: *mut XLA_FFI_Error,
}

/// `XLA_FFI_Error_Destroy`.
pub type XLA_FFI_Error_Destroy = unsafe extern "C" fn(args: *mut XLA_FFI_Error_Destroy_Args);

/// `XLA_FFI_Buffer`: a dense, row-major array in device memory (no strides).
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Buffer {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The elements' type.
    pub dtype: XLA_FFI_DataType,
    /// The first element.
    pub data: *mut c_void,
    /// The number of dimensions.
    pub rank: i64,
    /// `rank` extents.
    pub dims: *mut i64,
}

/// `XLA_FFI_ExecutionContext`: per-call state, opaque.
#[repr(C)]
pub struct XLA_FFI_ExecutionContext {
    _opaque: [u8; 0],
}

/// `XLA_FFI_ByteSpan`: a string, not NUL-terminated.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct XLA_FFI_ByteSpan {
    /// The first byte.
    pub ptr: *const c_char,
    /// The number of bytes.
    pub len: usize,
}

/// `XLA_FFI_Scalar`: a scalar attribute.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Scalar {
    /// Its type.
    pub dtype: XLA_FFI_DataType,
    /// Its value.
    pub value: *mut c_void,
}

/// `XLA_FFI_Array`: a dense array attribute.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Array {
    /// The elements' type.
    pub dtype: XLA_FFI_DataType,
    /// The number of elements.
    pub size: usize,
    /// The first element.
    pub data: *mut c_void,
}

/// `XLA_FFI_TypeId`: a user type's identifier in one XLA instance.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XLA_FFI_TypeId {
    /// The identifier; 0 is `XLA_FFI_UNKNOWN_TYPE_ID`.
    pub type_id: i64,
}

/// `XLA_FFI_UNKNOWN_TYPE_ID`.
pub const XLA_FFI_UNKNOWN_TYPE_ID: XLA_FFI_TypeId = XLA_FFI_TypeId { type_id: 0 };

/// `XLA_FFI_TypeInfo`: how XLA destroys a user type's objects.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_TypeInfo {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// Destroys one object.
    pub deleter: Option<unsafe extern "C" fn(object: *mut c_void)>,
}

/// `XLA_FFI_Future`: an asynchronous handler's completion, opaque.
#[repr(C)]
pub struct XLA_FFI_Future {
    _opaque: [u8; 0],
}

/// `XLA_FFI_Future_Create_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Future_Create_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// Out: the future.
    pub future: *mut XLA_FFI_Future,
}

/// `XLA_FFI_Future_Create`.
pub type XLA_FFI_Future_Create =
    unsafe extern "C" fn(args: *mut XLA_FFI_Future_Create_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_Future_SetAvailable_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Future_SetAvailable_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The future completed.
    pub future: *mut XLA_FFI_Future,
}

/// `XLA_FFI_Future_SetAvailable`.
pub type XLA_FFI_Future_SetAvailable =
    unsafe extern "C" fn(args: *mut XLA_FFI_Future_SetAvailable_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_Future_SetError_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Future_SetError_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The future failed.
    pub future: *mut XLA_FFI_Future,
    /// Its error, handed to XLA.
    pub error: *mut XLA_FFI_Error,
}

/// `XLA_FFI_Future_SetError`.
pub type XLA_FFI_Future_SetError =
    unsafe extern "C" fn(args: *mut XLA_FFI_Future_SetError_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_Args`: a call frame's arguments.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The number of arguments.
    pub size: i64,
    /// `size` types.
    pub types: *mut XLA_FFI_ArgType,
    /// `size` arguments, each of its type (an [`XLA_FFI_Buffer`]).
    pub args: *mut *mut c_void,
}

/// `XLA_FFI_Rets`: a call frame's results.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Rets {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The number of results.
    pub size: i64,
    /// `size` types.
    pub types: *mut XLA_FFI_RetType,
    /// `size` results, each of its type (an [`XLA_FFI_Buffer`]).
    pub rets: *mut *mut c_void,
}

/// `XLA_FFI_Attrs`: a call frame's attributes, sorted by name.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Attrs {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The number of attributes.
    pub size: i64,
    /// `size` types.
    pub types: *mut XLA_FFI_AttrType,
    /// `size` names.
    pub names: *mut *mut XLA_FFI_ByteSpan,
    /// `size` attributes, each of its type.
    pub attrs: *mut *mut c_void,
}

/// `XLA_FFI_CallFrame`: everything a handler is called with.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_CallFrame {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL; the metadata query puts an [`XLA_FFI_Metadata_Extension`] here.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The API table.
    pub api: *const XLA_FFI_Api,
    /// The call's execution context.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// The stage called.
    pub stage: XLA_FFI_ExecutionStage,
    /// The arguments.
    pub args: XLA_FFI_Args,
    /// The results.
    pub rets: XLA_FFI_Rets,
    /// The attributes.
    pub attrs: XLA_FFI_Attrs,
    /// Out: an asynchronous handler's future, or NULL.
    pub future: *mut XLA_FFI_Future,
}

/// `XLA_FFI_Handler`: a handler, called with a frame; returns NULL on success or an error.
pub type XLA_FFI_Handler =
    unsafe extern "C" fn(call_frame: *mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error;

/// `XLA_FFI_Handler_Bundle`: a handler per execution stage.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct XLA_FFI_Handler_Bundle {
    /// Optional.
    pub instantiate: Option<XLA_FFI_Handler>,
    /// Optional.
    pub prepare: Option<XLA_FFI_Handler>,
    /// Optional.
    pub initialize: Option<XLA_FFI_Handler>,
    /// Required.
    pub execute: Option<XLA_FFI_Handler>,
}

/// `XLA_FFI_Handler_Register_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Handler_Register_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The custom call's target name.
    pub name: XLA_FFI_ByteSpan,
    /// The platform (`"Host"`, `"CUDA"`, ...).
    pub platform: XLA_FFI_ByteSpan,
    /// The handlers.
    pub bundle: XLA_FFI_Handler_Bundle,
    /// Their traits.
    pub traits: XLA_FFI_Handler_Traits,
}

/// `XLA_FFI_Handler_Register`.
pub type XLA_FFI_Handler_Register =
    unsafe extern "C" fn(args: *mut XLA_FFI_Handler_Register_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_Type_Register_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Type_Register_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The type's name.
    pub name: XLA_FFI_ByteSpan,
    /// In and out: the type's identifier.
    pub type_id: *mut XLA_FFI_TypeId,
    /// How its objects are destroyed.
    pub type_info: *const XLA_FFI_TypeInfo,
}

/// `XLA_FFI_Type_Register`.
pub type XLA_FFI_Type_Register =
    unsafe extern "C" fn(args: *mut XLA_FFI_Type_Register_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_ExecutionContext_Get_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_ExecutionContext_Get_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The context asked.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// The type asked for.
    pub type_id: *mut XLA_FFI_TypeId,
    /// Out: the data.
    pub data: *mut c_void,
}

/// `XLA_FFI_ExecutionContext_Get`.
pub type XLA_FFI_ExecutionContext_Get =
    unsafe extern "C" fn(args: *mut XLA_FFI_ExecutionContext_Get_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_State_Set_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_State_Set_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The context.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// The stage whose state is set.
    pub stage: XLA_FFI_ExecutionStage,
    /// The state's type.
    pub type_id: *mut XLA_FFI_TypeId,
    /// The state.
    pub state: *mut c_void,
}

/// `XLA_FFI_State_Set`.
pub type XLA_FFI_State_Set =
    unsafe extern "C" fn(args: *mut XLA_FFI_State_Set_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_State_Get_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_State_Get_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The context.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// The stage whose state is asked.
    pub stage: XLA_FFI_ExecutionStage,
    /// The state's type.
    pub type_id: *mut XLA_FFI_TypeId,
    /// Out: the state.
    pub state: *mut c_void,
}

/// `XLA_FFI_State_Get`.
pub type XLA_FFI_State_Get =
    unsafe extern "C" fn(args: *mut XLA_FFI_State_Get_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_Stream_Get_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Stream_Get_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The call's context.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// Out: the platform's stream (CUDA: a `CUstream`).
    pub stream: *mut c_void,
}

/// `XLA_FFI_Stream_Get`.
pub type XLA_FFI_Stream_Get =
    unsafe extern "C" fn(args: *mut XLA_FFI_Stream_Get_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_DeviceMemory_Allocate_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_DeviceMemory_Allocate_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The call's context.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// Bytes.
    pub size: usize,
    /// Alignment in bytes.
    pub alignment: usize,
    /// Out: the memory.
    pub data: *mut c_void,
}

/// `XLA_FFI_DeviceMemory_Allocate`.
pub type XLA_FFI_DeviceMemory_Allocate =
    unsafe extern "C" fn(args: *mut XLA_FFI_DeviceMemory_Allocate_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_DeviceMemory_Free_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_DeviceMemory_Free_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The call's context.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// Bytes.
    pub size: usize,
    /// The memory.
    pub data: *mut c_void,
}

/// `XLA_FFI_DeviceMemory_Free`.
pub type XLA_FFI_DeviceMemory_Free =
    unsafe extern "C" fn(args: *mut XLA_FFI_DeviceMemory_Free_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_Task`: a task for XLA's thread pool.
pub type XLA_FFI_Task = unsafe extern "C" fn(data: *mut c_void);

/// `XLA_FFI_ThreadPool_Schedule_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_ThreadPool_Schedule_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The call's context.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// The task.
    pub task: Option<XLA_FFI_Task>,
    /// Its data.
    pub data: *mut c_void,
}

/// `XLA_FFI_ThreadPool_Schedule`.
pub type XLA_FFI_ThreadPool_Schedule =
    unsafe extern "C" fn(args: *mut XLA_FFI_ThreadPool_Schedule_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_ThreadPool_NumThreads_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_ThreadPool_NumThreads_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The call's context.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// Out: the number of threads.
    pub num_threads: *mut i64,
}

/// `XLA_FFI_ThreadPool_NumThreads`.
pub type XLA_FFI_ThreadPool_NumThreads =
    unsafe extern "C" fn(args: *mut XLA_FFI_ThreadPool_NumThreads_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_RunId_Get_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_RunId_Get_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The call's context.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// Out: the logical execution's identifier.
    pub run_id: i64,
}

/// `XLA_FFI_RunId_Get`.
pub type XLA_FFI_RunId_Get =
    unsafe extern "C" fn(args: *mut XLA_FFI_RunId_Get_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_DeviceOrdinal_Get_Args`.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_DeviceOrdinal_Get_Args {
    /// This struct's size.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The call's context.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// Out: the device's ordinal.
    pub device_ordinal: i32,
}

/// `XLA_FFI_DeviceOrdinal_Get`.
pub type XLA_FFI_DeviceOrdinal_Get =
    unsafe extern "C" fn(args: *mut XLA_FFI_DeviceOrdinal_Get_Args) -> *mut XLA_FFI_Error;

/// `XLA_FFI_Metadata`: what a handler says of itself when XLA asks.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Metadata {
    /// This struct's size.
    pub struct_size: usize,
    /// The API version the handler was built against.
    pub api_version: XLA_FFI_Api_Version,
    /// The handler's traits.
    pub traits: XLA_FFI_Handler_Traits,
    /// A stateful handler's state type; else [`XLA_FFI_UNKNOWN_TYPE_ID`].
    pub state_type_id: XLA_FFI_TypeId,
}

/// `XLA_FFI_Metadata_Extension`: the extension of a metadata query's call frame.
#[repr(C)]
#[derive(Debug)]
pub struct XLA_FFI_Metadata_Extension {
    /// Its head, of type [`XLA_FFI_Extension_Type::METADATA`].
    pub extension_base: XLA_FFI_Extension_Base,
    /// Out: the handler's metadata, to fill.
    pub metadata: *mut XLA_FFI_Metadata,
}

/// `XLA_FFI_InternalApi`: XLA's own, opaque.
#[repr(C)]
pub struct XLA_FFI_InternalApi {
    _opaque: [u8; 0],
}

/// `XLA_FFI_Api`: the API table a call frame carries.
#[repr(C)]
#[derive(Debug)]
#[allow(non_snake_case)]
pub struct XLA_FFI_Api {
    /// This struct's size: a field past it is not there.
    pub struct_size: usize,
    /// Extensions, or NULL.
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// XLA's API version.
    pub api_version: XLA_FFI_Api_Version,
    /// XLA's own.
    pub internal_api: *const XLA_FFI_InternalApi,
    /// Makes an error.
    pub XLA_FFI_Error_Create: Option<XLA_FFI_Error_Create>,
    /// An error's message.
    pub XLA_FFI_Error_GetMessage: Option<XLA_FFI_Error_GetMessage>,
    /// Destroys an error.
    pub XLA_FFI_Error_Destroy: Option<XLA_FFI_Error_Destroy>,
    /// Registers a handler.
    pub XLA_FFI_Handler_Register: Option<XLA_FFI_Handler_Register>,
    /// The call's stream.
    pub XLA_FFI_Stream_Get: Option<XLA_FFI_Stream_Get>,
    /// Registers a user type.
    pub XLA_FFI_Type_Register: Option<XLA_FFI_Type_Register>,
    /// Data of the execution context.
    pub XLA_FFI_ExecutionContext_Get: Option<XLA_FFI_ExecutionContext_Get>,
    /// Sets a stage's state.
    pub XLA_FFI_State_Set: Option<XLA_FFI_State_Set>,
    /// Gets a stage's state.
    pub XLA_FFI_State_Get: Option<XLA_FFI_State_Get>,
    /// Allocates device memory.
    pub XLA_FFI_DeviceMemory_Allocate: Option<XLA_FFI_DeviceMemory_Allocate>,
    /// Frees device memory.
    pub XLA_FFI_DeviceMemory_Free: Option<XLA_FFI_DeviceMemory_Free>,
    /// Schedules a task on XLA's thread pool.
    pub XLA_FFI_ThreadPool_Schedule: Option<XLA_FFI_ThreadPool_Schedule>,
    /// The thread pool's size.
    pub XLA_FFI_ThreadPool_NumThreads: Option<XLA_FFI_ThreadPool_NumThreads>,
    /// Makes a future.
    pub XLA_FFI_Future_Create: Option<XLA_FFI_Future_Create>,
    /// Completes a future.
    pub XLA_FFI_Future_SetAvailable: Option<XLA_FFI_Future_SetAvailable>,
    /// Fails a future.
    pub XLA_FFI_Future_SetError: Option<XLA_FFI_Future_SetError>,
    /// The logical execution's identifier.
    pub XLA_FFI_RunId_Get: Option<XLA_FFI_RunId_Get>,
    /// The device's ordinal.
    pub XLA_FFI_DeviceOrdinal_Get: Option<XLA_FFI_DeviceOrdinal_Get>,
}

/// Defines `STRUCT_SIZE` on structs: `c_api.h`'s `<name>_STRUCT_SIZE`, the offset of the field
/// its `XLA_FFI_DEFINE_STRUCT_TRAITS` names plus that field's size. A caller fills
/// `struct_size` with it, so that a newer callee knows which fields are there.
macro_rules! struct_sizes {
    ($($ty:ident: $field:ident: $field_ty:ty,)*) => {
        $(
            impl $ty {
                #[doc = concat!("`", stringify!($ty), "_STRUCT_SIZE` of `c_api.h`.")]
                pub const STRUCT_SIZE: usize =
                    std::mem::offset_of!($ty, $field) + std::mem::size_of::<$field_ty>();
            }
        )*
    };
}

struct_sizes! {
    XLA_FFI_Extension_Base: next: *mut XLA_FFI_Extension_Base,
    XLA_FFI_Api_Version: minor_version: c_int,
    XLA_FFI_Error_Create_Args: errc: XLA_FFI_Error_Code,
    XLA_FFI_Error_GetMessage_Args: message: *const c_char,
    XLA_FFI_Error_Destroy_Args: error: *mut XLA_FFI_Error,
    XLA_FFI_Buffer: dims: *mut i64,
    XLA_FFI_TypeInfo: deleter: Option<unsafe extern "C" fn(object: *mut c_void)>,
    XLA_FFI_Future_Create_Args: extension_start: *mut XLA_FFI_Extension_Base,
    XLA_FFI_Future_SetAvailable_Args: future: *mut XLA_FFI_Future,
    XLA_FFI_Future_SetError_Args: error: *mut XLA_FFI_Error,
    XLA_FFI_Args: args: *mut *mut c_void,
    XLA_FFI_Rets: rets: *mut *mut c_void,
    XLA_FFI_Attrs: attrs: *mut *mut c_void,
    XLA_FFI_CallFrame: attrs: XLA_FFI_Attrs,
    XLA_FFI_Handler_Register_Args: traits: XLA_FFI_Handler_Traits,
    XLA_FFI_Type_Register_Args: type_id: *mut XLA_FFI_TypeId,
    XLA_FFI_ExecutionContext_Get_Args: data: *mut c_void,
    XLA_FFI_State_Set_Args: state: *mut c_void,
    XLA_FFI_State_Get_Args: state: *mut c_void,
    XLA_FFI_Stream_Get_Args: stream: *mut c_void,
    XLA_FFI_DeviceMemory_Allocate_Args: data: *mut c_void,
    XLA_FFI_DeviceMemory_Free_Args: data: *mut c_void,
    XLA_FFI_ThreadPool_Schedule_Args: data: *mut c_void,
    XLA_FFI_ThreadPool_NumThreads_Args: num_threads: *mut i64,
    XLA_FFI_RunId_Get_Args: run_id: i64,
    XLA_FFI_DeviceOrdinal_Get_Args: device_ordinal: i32,
    XLA_FFI_Metadata: traits: XLA_FFI_Handler_Traits,
    XLA_FFI_Metadata_Extension: metadata: *mut XLA_FFI_Metadata,
    XLA_FFI_Api: XLA_FFI_DeviceOrdinal_Get: Option<XLA_FFI_DeviceOrdinal_Get>,
}
