//! The raw C ABI of `dlpack.h` 1.3, `#[repr(C)]`, field for field.
//!
//! The plain value types of the header are the crate's vocabulary types, with the same layout,
//! re-exported here under their C names: [`DLPackVersion`], [`DLDeviceType`], [`DLDevice`],
//! [`DLDataTypeCode`], [`DLDataType`]. Device type and data type code are newtypes over their
//! integer with an associated constant for every value the header names: a value unknown to
//! this crate is still a valid Rust value. The header's constants are defined with the
//! vocabulary they belong to and re-exported here too: [`DLPACK_MAJOR_VERSION`] and
//! [`DLPACK_MINOR_VERSION`] (with [`DLPackVersion`]), the `DLPACK_FLAG_BITMASK_*` bits (with
//! [`crate::Flags`]). This module defines the structs and function types that hold them;
//! the vocabulary imports nothing from here.
//!
//! Every layout here is compared with the real header by the `abi_header` test, which compiles
//! a C program against `dlpack.h` and checks size, alignment and the offset of every field.
//!
//! Nothing in this module is safe to dereference on its own: the safe entry points are
//! [`crate::ManagedTensor`] (import), [`crate::TensorView`] (borrowed access) and
//! [`crate::Export`] (export).
//!
//! # The C names in Rust
//!
//! | `dlpack.h` | here | crate vocabulary |
//! |---|---|---|
//! | `DLTensor`, `DLManagedTensor`, `DLManagedTensorVersioned` | the same names | [`crate::TensorView`], [`crate::ManagedTensor`] hold them |
//! | `DLDevice { device_type, device_id }` | [`DLDevice`] | [`crate::Device`] (the same type) |
//! | `DLDeviceType`, `kDLCPU`, `kDLCUDA`, ... | [`DLDeviceType`]; [`kDLCPU`], [`kDLCUDA`], ... | [`crate::DeviceType::CPU`], [`crate::DeviceType::CUDA`], ... |
//! | `DLDataType { code, bits, lanes }` | [`DLDataType`] | [`crate::DataType`], with [`crate::DataType::FLOAT32`] and friends |
//! | `DLDataTypeCode`, `kDLInt`, `kDLFloat`, ... | [`DLDataTypeCode`]; [`kDLInt`], [`kDLFloat`], ... | [`crate::DataTypeCode::INT`], [`crate::DataTypeCode::FLOAT`], ... |
//! | `DLPackVersion`, `DLPACK_MAJOR_VERSION` | [`DLPackVersion`], [`DLPACK_MAJOR_VERSION`] | [`crate::Version`] |
//! | `DLPACK_FLAG_BITMASK_READ_ONLY`, ... | the same names (`u64`) | [`crate::Flags::READ_ONLY`], ... |
//!
//! C's enums are Rust newtypes over the integer, never Rust enums, because a producer may
//! send a value this crate does not know; so an enumerator is an associated constant
//! (`DLDeviceType::CPU`), not a variant, and `DLDeviceType::kDLCPU` does not exist. The
//! `kDL*` constants of this module spell every enumerator as `dlpack.h` does, for code
//! ported from C:
//!
//! ```
//! use dlbridge::ffi::{self, DLDevice, DLDataType};
//! let device = DLDevice { device_type: ffi::kDLCUDA, device_id: 0 };
//! assert_eq!(device, dlbridge::Device::new(dlbridge::DeviceType::CUDA, 0));
//! let dtype = DLDataType { code: ffi::kDLFloat, bits: 32, lanes: 1 };
//! assert_eq!(dtype, dlbridge::DataType::FLOAT32);
//! assert_eq!(ffi::kDLCUDAHost.0, 3); // the integer itself
//! ```

use std::ffi::{c_char, c_int, c_void};

pub use crate::device::{Device as DLDevice, DeviceType as DLDeviceType};
pub use crate::dtype::{DataType as DLDataType, DataTypeCode as DLDataTypeCode};
pub use crate::flags::{
    DLPACK_FLAG_BITMASK_IS_COPIED, DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED,
    DLPACK_FLAG_BITMASK_READ_ONLY,
};
pub use crate::version::{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION, Version as DLPackVersion};

/// Defines `kDL*` constants with the names of `dlpack.h`'s enumerators.
macro_rules! c_enumerators {
    ($ty:ident: $($c_name:ident = $rust_name:ident,)*) => {
        $(
            #[doc = concat!("`", stringify!($c_name), "` of `dlpack.h`: [`", stringify!($ty),
                "::", stringify!($rust_name), "`].")]
            #[allow(non_upper_case_globals)]
            pub const $c_name: $ty = $ty::$rust_name;
        )*
    };
}

c_enumerators! { DLDeviceType:
    kDLCPU = CPU,
    kDLCUDA = CUDA,
    kDLCUDAHost = CUDA_HOST,
    kDLOpenCL = OPENCL,
    kDLVulkan = VULKAN,
    kDLMetal = METAL,
    kDLVPI = VPI,
    kDLROCM = ROCM,
    kDLROCMHost = ROCM_HOST,
    kDLExtDev = EXT_DEV,
    kDLCUDAManaged = CUDA_MANAGED,
    kDLOneAPI = ONE_API,
    kDLWebGPU = WEBGPU,
    kDLHexagon = HEXAGON,
    kDLMAIA = MAIA,
    kDLTrn = TRN,
    // After the 1.3 tag, on DLPack's main branch: dmlc/dlpack#188 (TPU, TPUHost) and #189
    // (Ascend). The ABI test compares them with a header that names them.
    kDLTPU = TPU,
    kDLTPUHost = TPU_HOST,
    kDLAscend = ASCEND,
}

c_enumerators! { DLDataTypeCode:
    kDLInt = INT,
    kDLUInt = UINT,
    kDLFloat = FLOAT,
    kDLOpaqueHandle = OPAQUE_HANDLE,
    kDLBfloat = BFLOAT,
    kDLComplex = COMPLEX,
    kDLBool = BOOL,
    kDLFloat8_e3m4 = FLOAT8_E3M4,
    kDLFloat8_e4m3 = FLOAT8_E4M3,
    kDLFloat8_e4m3b11fnuz = FLOAT8_E4M3B11FNUZ,
    kDLFloat8_e4m3fn = FLOAT8_E4M3FN,
    kDLFloat8_e4m3fnuz = FLOAT8_E4M3FNUZ,
    kDLFloat8_e5m2 = FLOAT8_E5M2,
    kDLFloat8_e5m2fnuz = FLOAT8_E5M2FNUZ,
    kDLFloat8_e8m0fnu = FLOAT8_E8M0FNU,
    kDLFloat6_e2m3fn = FLOAT6_E2M3FN,
    kDLFloat6_e3m2fn = FLOAT6_E3M2FN,
    kDLFloat4_e2m1fn = FLOAT4_E2M1FN,
    // After the 1.3 tag, on DLPack's main branch (dmlc/dlpack#187).
    kDLBcomplex = BCOMPLEX,
}

/// `DLTensor`: a plain tensor descriptor that does not manage memory.
///
/// `data + byte_offset` is the address of the element at index `[0, 0, ...]`; strides are in
/// elements, not bytes, and may be negative. `shape` and `strides` may be NULL when
/// `ndim == 0`; before DLPack 1.2 a NULL `strides` meant compact row-major.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLTensor {
    /// Base address of the data (device pointer or handle on some devices: DLPack's main branch
    /// documents an `id<MTLBuffer>` for Metal, dmlc/dlpack#186); may be NULL when the tensor has
    /// no elements.
    pub data: *mut c_void,
    /// The device the data lives on.
    pub device: DLDevice,
    /// Number of dimensions.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` extents.
    pub shape: *mut i64,
    /// `ndim` strides in elements.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// The deleter of a legacy managed tensor: frees `self` and what `manager_ctx` holds.
pub type DLManagedTensorDeleter = Option<unsafe extern "C" fn(self_: *mut DLManagedTensor)>;

/// `DLManagedTensor`: the legacy (pre-1.0, unversioned) managed tensor, carried in capsules
/// named `dltensor`.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The tensor descriptor.
    pub dl_tensor: DLTensor,
    /// The producer's context; may be NULL.
    pub manager_ctx: *mut c_void,
    /// Releases the tensor; may be NULL when the producer has nothing to release.
    pub deleter: DLManagedTensorDeleter,
}

/// The deleter of a versioned managed tensor: frees `self` and what `manager_ctx` holds.
pub type DLManagedTensorVersionedDeleter =
    Option<unsafe extern "C" fn(self_: *mut DLManagedTensorVersioned)>;

/// `DLManagedTensorVersioned`: the current managed tensor, carried in capsules named
/// `dltensor_versioned`.
///
/// Only the fields up to and including `deleter` are stable across major versions: a consumer
/// that does not know `version.major` must call the deleter and read nothing else.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// The ABI version the producer wrote.
    pub version: DLPackVersion,
    /// The producer's context; may be NULL.
    pub manager_ctx: *mut c_void,
    /// Releases the tensor; may be NULL when the producer has nothing to release.
    pub deleter: DLManagedTensorVersionedDeleter,
    /// `DLPACK_FLAG_BITMASK_*` bits; unknown bits must be ignored.
    pub flags: u64,
    /// The tensor descriptor.
    pub dl_tensor: DLTensor,
}

/// The error callback handed to [`DLPackManagedTensorAllocator`]:
/// `SetError(error_ctx, kind, message)`.
pub type DLPackSetError = Option<
    unsafe extern "C" fn(error_ctx: *mut c_void, kind: *const c_char, message: *const c_char),
>;

/// `DLPackManagedTensorAllocator`: asks the producer to allocate a new tensor shaped like
/// `prototype` (only dtype, ndim, shape and device are read). Returns 0 on success; on failure
/// calls `set_error` and returns non-zero.
pub type DLPackManagedTensorAllocator = Option<
    unsafe extern "C" fn(
        prototype: *mut DLTensor,
        out: *mut *mut DLManagedTensorVersioned,
        error_ctx: *mut c_void,
        set_error: DLPackSetError,
    ) -> c_int,
>;

/// `DLPackManagedTensorFromPyObjectNoSync`: exports a Python object (`PyObject*`) of the
/// table's type as an owning versioned tensor, without stream synchronization. Returns 0 on
/// success, -1 with a Python exception set.
pub type DLPackManagedTensorFromPyObjectNoSync = Option<
    unsafe extern "C" fn(py_object: *mut c_void, out: *mut *mut DLManagedTensorVersioned) -> c_int,
>;

/// `DLPackManagedTensorToPyObjectNoSync`: wraps an owning versioned tensor (ownership is
/// stolen) into a Python object (`PyObject*`) of the producer's type. Returns 0 on success,
/// -1 with a Python exception set.
pub type DLPackManagedTensorToPyObjectNoSync = Option<
    unsafe extern "C" fn(
        tensor: *mut DLManagedTensorVersioned,
        out_py_object: *mut *mut c_void,
    ) -> c_int,
>;

/// `DLPackDLTensorFromPyObjectNoSync`: fills a caller-provided `DLTensor` describing a Python
/// object's data, non-owning, valid until control returns to the producer. Returns 0 on
/// success, -1 with a Python exception set.
pub type DLPackDLTensorFromPyObjectNoSync =
    Option<unsafe extern "C" fn(py_object: *mut c_void, out: *mut DLTensor) -> c_int>;

/// `DLPackCurrentWorkStream`: the producer's current stream for a device (NULL for CPU).
/// Returns 0 on success, -1 with a Python exception set.
pub type DLPackCurrentWorkStream = Option<
    unsafe extern "C" fn(
        device_type: DLDeviceType,
        device_id: i32,
        out_current_stream: *mut *mut c_void,
    ) -> c_int,
>;

/// `DLPackExchangeAPIHeader`: the part of the exchange table that stays stable across
/// versions.
#[repr(C)]
#[derive(Debug)]
pub struct DLPackExchangeAPIHeader {
    /// The table's version; check `major` before reading anything past this header.
    pub version: DLPackVersion,
    /// An older table of the same producer, or NULL.
    pub prev_api: *mut DLPackExchangeAPIHeader,
}

/// `DLPackExchangeAPI`: the C function table a Python tensor type publishes through the
/// `__dlpack_c_exchange_api__` attribute (a capsule named `dlpack_exchange_api`).
#[repr(C)]
#[derive(Debug)]
pub struct DLPackExchangeAPI {
    /// Version and chain to older tables.
    pub header: DLPackExchangeAPIHeader,
    /// Allocates a new tensor in the producer; must not be NULL.
    pub managed_tensor_allocator: DLPackManagedTensorAllocator,
    /// Exports an object as an owning tensor; must not be NULL.
    pub managed_tensor_from_py_object_no_sync: DLPackManagedTensorFromPyObjectNoSync,
    /// Imports an owning tensor as an object; must not be NULL.
    pub managed_tensor_to_py_object_no_sync: DLPackManagedTensorToPyObjectNoSync,
    /// Describes an object without ownership; may be NULL.
    pub dltensor_from_py_object_no_sync: DLPackDLTensorFromPyObjectNoSync,
    /// The producer's current stream; must not be NULL.
    pub current_work_stream: DLPackCurrentWorkStream,
}
