/*
 * ABI probe for the `xla_abi_header` integration test of dlbridge.
 *
 * Compiled by that test against XLA's real FFI header (`xla/ffi/api/c_api.h` under
 * `jax.ffi.include_dir()`, given to the compiler with `-I`) and run once. It prints one line per
 * item, `NAME VALUE`, where NAME has no spaces, as `abi_probe.c` does for `dlpack.h`:
 *
 *   sizeof(T) / alignof(T)              size and alignment of a type
 *   offsetof(T.field) / sizeof(T.field) offset and size of one field of a struct
 *   T_STRUCT_SIZE                       the header's struct size of T (last field's end)
 *   XLA_FFI_...                         value of an enumerator or a macro
 *
 * The test builds the same table from `dlbridge::xla::ffi` and reports every item that
 * differs. The header itself is never part of this repository.
 */
#include <xla/ffi/api/c_api.h>

#include "c_probe/probe.h"

#define PROBE_STRUCT_SIZE(T) printf("%s_STRUCT_SIZE %lld\n", #T, (long long)(T##_STRUCT_SIZE))

int main(void) {
  PROBE_ENUMERATOR(XLA_FFI_API_MAJOR);
  PROBE_ENUMERATOR(XLA_FFI_API_MINOR);
  PROBE_ENUMERATOR(XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE);
  PROBE_TYPE(XLA_FFI_Handler_Traits);

  PROBE_TYPE(XLA_FFI_Extension_Type);
  PROBE_ENUMERATOR(XLA_FFI_Extension_Metadata);

  PROBE_TYPE(XLA_FFI_Error_Code);
  PROBE_ENUMERATOR(XLA_FFI_Error_Code_OK);
  PROBE_ENUMERATOR(XLA_FFI_Error_Code_CANCELLED);
  PROBE_ENUMERATOR(XLA_FFI_Error_Code_UNKNOWN);
  PROBE_ENUMERATOR(XLA_FFI_Error_Code_INVALID_ARGUMENT);
  PROBE_ENUMERATOR(XLA_FFI_Error_Code_DEADLINE_EXCEEDED);
  PROBE_ENUMERATOR(XLA_FFI_Error_Code_NOT_FOUND);
  PROBE_ENUMERATOR(XLA_FFI_Error_Code_ALREADY_EXISTS);
  PROBE_ENUMERATOR(XLA_FFI_Error_Code_PERMISSION_DENIED);
  PROBE_ENUMERATOR(XLA_FFI_Error_Code_RESOURCE_EXHAUSTED);
  PROBE_ENUMERATOR(XLA_FFI_Error_Code_FAILED_PRECONDITION);
  PROBE_ENUMERATOR(XLA_FFI_Error_Code_ABORTED);
  PROBE_ENUMERATOR(XLA_FFI_Error_Code_OUT_OF_RANGE);
  PROBE_ENUMERATOR(XLA_FFI_Error_Code_UNIMPLEMENTED);
  PROBE_ENUMERATOR(XLA_FFI_Error_Code_INTERNAL);
  PROBE_ENUMERATOR(XLA_FFI_Error_Code_UNAVAILABLE);
  PROBE_ENUMERATOR(XLA_FFI_Error_Code_DATA_LOSS);
  PROBE_ENUMERATOR(XLA_FFI_Error_Code_UNAUTHENTICATED);

  PROBE_TYPE(XLA_FFI_DataType);
  PROBE_ENUMERATOR(XLA_FFI_DataType_INVALID);
  PROBE_ENUMERATOR(XLA_FFI_DataType_PRED);
  PROBE_ENUMERATOR(XLA_FFI_DataType_S1);
  PROBE_ENUMERATOR(XLA_FFI_DataType_S2);
  PROBE_ENUMERATOR(XLA_FFI_DataType_S4);
  PROBE_ENUMERATOR(XLA_FFI_DataType_S8);
  PROBE_ENUMERATOR(XLA_FFI_DataType_S16);
  PROBE_ENUMERATOR(XLA_FFI_DataType_S32);
  PROBE_ENUMERATOR(XLA_FFI_DataType_S64);
  PROBE_ENUMERATOR(XLA_FFI_DataType_U1);
  PROBE_ENUMERATOR(XLA_FFI_DataType_U2);
  PROBE_ENUMERATOR(XLA_FFI_DataType_U4);
  PROBE_ENUMERATOR(XLA_FFI_DataType_U8);
  PROBE_ENUMERATOR(XLA_FFI_DataType_U16);
  PROBE_ENUMERATOR(XLA_FFI_DataType_U32);
  PROBE_ENUMERATOR(XLA_FFI_DataType_U64);
  PROBE_ENUMERATOR(XLA_FFI_DataType_F16);
  PROBE_ENUMERATOR(XLA_FFI_DataType_F32);
  PROBE_ENUMERATOR(XLA_FFI_DataType_F64);
  PROBE_ENUMERATOR(XLA_FFI_DataType_BF16);
  PROBE_ENUMERATOR(XLA_FFI_DataType_C64);
  PROBE_ENUMERATOR(XLA_FFI_DataType_C128);
  PROBE_ENUMERATOR(XLA_FFI_DataType_TOKEN);
  PROBE_ENUMERATOR(XLA_FFI_DataType_F8E5M2);
  PROBE_ENUMERATOR(XLA_FFI_DataType_F8E3M4);
  PROBE_ENUMERATOR(XLA_FFI_DataType_F8E4M3);
  PROBE_ENUMERATOR(XLA_FFI_DataType_F8E4M3FN);
  PROBE_ENUMERATOR(XLA_FFI_DataType_F8E4M3B11FNUZ);
  PROBE_ENUMERATOR(XLA_FFI_DataType_F8E5M2FNUZ);
  PROBE_ENUMERATOR(XLA_FFI_DataType_F8E4M3FNUZ);
  PROBE_ENUMERATOR(XLA_FFI_DataType_F4E2M1FN);
  PROBE_ENUMERATOR(XLA_FFI_DataType_F8E8M0FNU);

  PROBE_TYPE(XLA_FFI_ArgType);
  PROBE_ENUMERATOR(XLA_FFI_ArgType_BUFFER);

  PROBE_TYPE(XLA_FFI_RetType);
  PROBE_ENUMERATOR(XLA_FFI_RetType_BUFFER);

  PROBE_TYPE(XLA_FFI_AttrType);
  PROBE_ENUMERATOR(XLA_FFI_AttrType_ARRAY);
  PROBE_ENUMERATOR(XLA_FFI_AttrType_DICTIONARY);
  PROBE_ENUMERATOR(XLA_FFI_AttrType_SCALAR);
  PROBE_ENUMERATOR(XLA_FFI_AttrType_STRING);

  PROBE_TYPE(XLA_FFI_ExecutionStage);
  PROBE_ENUMERATOR(XLA_FFI_ExecutionStage_INSTANTIATE);
  PROBE_ENUMERATOR(XLA_FFI_ExecutionStage_PREPARE);
  PROBE_ENUMERATOR(XLA_FFI_ExecutionStage_INITIALIZE);
  PROBE_ENUMERATOR(XLA_FFI_ExecutionStage_EXECUTE);

  PROBE_TYPE(XLA_FFI_Extension_Base);
  PROBE_FIELD(XLA_FFI_Extension_Base, struct_size);
  PROBE_FIELD(XLA_FFI_Extension_Base, type);
  PROBE_FIELD(XLA_FFI_Extension_Base, next);

  PROBE_TYPE(XLA_FFI_Api_Version);
  PROBE_FIELD(XLA_FFI_Api_Version, struct_size);
  PROBE_FIELD(XLA_FFI_Api_Version, extension_start);
  PROBE_FIELD(XLA_FFI_Api_Version, major_version);
  PROBE_FIELD(XLA_FFI_Api_Version, minor_version);

  PROBE_TYPE(XLA_FFI_Error_Create_Args);
  PROBE_FIELD(XLA_FFI_Error_Create_Args, struct_size);
  PROBE_FIELD(XLA_FFI_Error_Create_Args, extension_start);
  PROBE_FIELD(XLA_FFI_Error_Create_Args, message);
  PROBE_FIELD(XLA_FFI_Error_Create_Args, errc);

  PROBE_TYPE(XLA_FFI_Error_GetMessage_Args);
  PROBE_FIELD(XLA_FFI_Error_GetMessage_Args, struct_size);
  PROBE_FIELD(XLA_FFI_Error_GetMessage_Args, extension_start);
  PROBE_FIELD(XLA_FFI_Error_GetMessage_Args, error);
  PROBE_FIELD(XLA_FFI_Error_GetMessage_Args, message);

  PROBE_TYPE(XLA_FFI_Error_Destroy_Args);
  PROBE_FIELD(XLA_FFI_Error_Destroy_Args, struct_size);
  PROBE_FIELD(XLA_FFI_Error_Destroy_Args, extension_start);
  PROBE_FIELD(XLA_FFI_Error_Destroy_Args, error);

  PROBE_TYPE(XLA_FFI_Buffer);
  PROBE_FIELD(XLA_FFI_Buffer, struct_size);
  PROBE_FIELD(XLA_FFI_Buffer, extension_start);
  PROBE_FIELD(XLA_FFI_Buffer, dtype);
  PROBE_FIELD(XLA_FFI_Buffer, data);
  PROBE_FIELD(XLA_FFI_Buffer, rank);
  PROBE_FIELD(XLA_FFI_Buffer, dims);

  PROBE_TYPE(XLA_FFI_ByteSpan);
  PROBE_FIELD(XLA_FFI_ByteSpan, ptr);
  PROBE_FIELD(XLA_FFI_ByteSpan, len);

  PROBE_TYPE(XLA_FFI_Scalar);
  PROBE_FIELD(XLA_FFI_Scalar, dtype);
  PROBE_FIELD(XLA_FFI_Scalar, value);

  PROBE_TYPE(XLA_FFI_Array);
  PROBE_FIELD(XLA_FFI_Array, dtype);
  PROBE_FIELD(XLA_FFI_Array, size);
  PROBE_FIELD(XLA_FFI_Array, data);

  PROBE_TYPE(XLA_FFI_TypeId);
  PROBE_FIELD(XLA_FFI_TypeId, type_id);

  PROBE_TYPE(XLA_FFI_TypeInfo);
  PROBE_FIELD(XLA_FFI_TypeInfo, struct_size);
  PROBE_FIELD(XLA_FFI_TypeInfo, extension_start);
  PROBE_FIELD(XLA_FFI_TypeInfo, deleter);

  PROBE_TYPE(XLA_FFI_Future_Create_Args);
  PROBE_FIELD(XLA_FFI_Future_Create_Args, struct_size);
  PROBE_FIELD(XLA_FFI_Future_Create_Args, extension_start);
  PROBE_FIELD(XLA_FFI_Future_Create_Args, future);

  PROBE_TYPE(XLA_FFI_Future_SetAvailable_Args);
  PROBE_FIELD(XLA_FFI_Future_SetAvailable_Args, struct_size);
  PROBE_FIELD(XLA_FFI_Future_SetAvailable_Args, extension_start);
  PROBE_FIELD(XLA_FFI_Future_SetAvailable_Args, future);

  PROBE_TYPE(XLA_FFI_Future_SetError_Args);
  PROBE_FIELD(XLA_FFI_Future_SetError_Args, struct_size);
  PROBE_FIELD(XLA_FFI_Future_SetError_Args, extension_start);
  PROBE_FIELD(XLA_FFI_Future_SetError_Args, future);
  PROBE_FIELD(XLA_FFI_Future_SetError_Args, error);

  PROBE_TYPE(XLA_FFI_Args);
  PROBE_FIELD(XLA_FFI_Args, struct_size);
  PROBE_FIELD(XLA_FFI_Args, extension_start);
  PROBE_FIELD(XLA_FFI_Args, size);
  PROBE_FIELD(XLA_FFI_Args, types);
  PROBE_FIELD(XLA_FFI_Args, args);

  PROBE_TYPE(XLA_FFI_Rets);
  PROBE_FIELD(XLA_FFI_Rets, struct_size);
  PROBE_FIELD(XLA_FFI_Rets, extension_start);
  PROBE_FIELD(XLA_FFI_Rets, size);
  PROBE_FIELD(XLA_FFI_Rets, types);
  PROBE_FIELD(XLA_FFI_Rets, rets);

  PROBE_TYPE(XLA_FFI_Attrs);
  PROBE_FIELD(XLA_FFI_Attrs, struct_size);
  PROBE_FIELD(XLA_FFI_Attrs, extension_start);
  PROBE_FIELD(XLA_FFI_Attrs, size);
  PROBE_FIELD(XLA_FFI_Attrs, types);
  PROBE_FIELD(XLA_FFI_Attrs, names);
  PROBE_FIELD(XLA_FFI_Attrs, attrs);

  PROBE_TYPE(XLA_FFI_CallFrame);
  PROBE_FIELD(XLA_FFI_CallFrame, struct_size);
  PROBE_FIELD(XLA_FFI_CallFrame, extension_start);
  PROBE_FIELD(XLA_FFI_CallFrame, api);
  PROBE_FIELD(XLA_FFI_CallFrame, ctx);
  PROBE_FIELD(XLA_FFI_CallFrame, stage);
  PROBE_FIELD(XLA_FFI_CallFrame, args);
  PROBE_FIELD(XLA_FFI_CallFrame, rets);
  PROBE_FIELD(XLA_FFI_CallFrame, attrs);
  PROBE_FIELD(XLA_FFI_CallFrame, future);

  PROBE_TYPE(XLA_FFI_Handler_Bundle);
  PROBE_FIELD(XLA_FFI_Handler_Bundle, instantiate);
  PROBE_FIELD(XLA_FFI_Handler_Bundle, prepare);
  PROBE_FIELD(XLA_FFI_Handler_Bundle, initialize);
  PROBE_FIELD(XLA_FFI_Handler_Bundle, execute);

  PROBE_TYPE(XLA_FFI_Handler_Register_Args);
  PROBE_FIELD(XLA_FFI_Handler_Register_Args, struct_size);
  PROBE_FIELD(XLA_FFI_Handler_Register_Args, extension_start);
  PROBE_FIELD(XLA_FFI_Handler_Register_Args, name);
  PROBE_FIELD(XLA_FFI_Handler_Register_Args, platform);
  PROBE_FIELD(XLA_FFI_Handler_Register_Args, bundle);
  PROBE_FIELD(XLA_FFI_Handler_Register_Args, traits);

  PROBE_TYPE(XLA_FFI_Type_Register_Args);
  PROBE_FIELD(XLA_FFI_Type_Register_Args, struct_size);
  PROBE_FIELD(XLA_FFI_Type_Register_Args, extension_start);
  PROBE_FIELD(XLA_FFI_Type_Register_Args, name);
  PROBE_FIELD(XLA_FFI_Type_Register_Args, type_id);
  PROBE_FIELD(XLA_FFI_Type_Register_Args, type_info);

  PROBE_TYPE(XLA_FFI_ExecutionContext_Get_Args);
  PROBE_FIELD(XLA_FFI_ExecutionContext_Get_Args, struct_size);
  PROBE_FIELD(XLA_FFI_ExecutionContext_Get_Args, extension_start);
  PROBE_FIELD(XLA_FFI_ExecutionContext_Get_Args, ctx);
  PROBE_FIELD(XLA_FFI_ExecutionContext_Get_Args, type_id);
  PROBE_FIELD(XLA_FFI_ExecutionContext_Get_Args, data);

  PROBE_TYPE(XLA_FFI_State_Set_Args);
  PROBE_FIELD(XLA_FFI_State_Set_Args, struct_size);
  PROBE_FIELD(XLA_FFI_State_Set_Args, extension_start);
  PROBE_FIELD(XLA_FFI_State_Set_Args, ctx);
  PROBE_FIELD(XLA_FFI_State_Set_Args, stage);
  PROBE_FIELD(XLA_FFI_State_Set_Args, type_id);
  PROBE_FIELD(XLA_FFI_State_Set_Args, state);

  PROBE_TYPE(XLA_FFI_State_Get_Args);
  PROBE_FIELD(XLA_FFI_State_Get_Args, struct_size);
  PROBE_FIELD(XLA_FFI_State_Get_Args, extension_start);
  PROBE_FIELD(XLA_FFI_State_Get_Args, ctx);
  PROBE_FIELD(XLA_FFI_State_Get_Args, stage);
  PROBE_FIELD(XLA_FFI_State_Get_Args, type_id);
  PROBE_FIELD(XLA_FFI_State_Get_Args, state);

  PROBE_TYPE(XLA_FFI_Stream_Get_Args);
  PROBE_FIELD(XLA_FFI_Stream_Get_Args, struct_size);
  PROBE_FIELD(XLA_FFI_Stream_Get_Args, extension_start);
  PROBE_FIELD(XLA_FFI_Stream_Get_Args, ctx);
  PROBE_FIELD(XLA_FFI_Stream_Get_Args, stream);

  PROBE_TYPE(XLA_FFI_DeviceMemory_Allocate_Args);
  PROBE_FIELD(XLA_FFI_DeviceMemory_Allocate_Args, struct_size);
  PROBE_FIELD(XLA_FFI_DeviceMemory_Allocate_Args, extension_start);
  PROBE_FIELD(XLA_FFI_DeviceMemory_Allocate_Args, ctx);
  PROBE_FIELD(XLA_FFI_DeviceMemory_Allocate_Args, size);
  PROBE_FIELD(XLA_FFI_DeviceMemory_Allocate_Args, alignment);
  PROBE_FIELD(XLA_FFI_DeviceMemory_Allocate_Args, data);

  PROBE_TYPE(XLA_FFI_DeviceMemory_Free_Args);
  PROBE_FIELD(XLA_FFI_DeviceMemory_Free_Args, struct_size);
  PROBE_FIELD(XLA_FFI_DeviceMemory_Free_Args, extension_start);
  PROBE_FIELD(XLA_FFI_DeviceMemory_Free_Args, ctx);
  PROBE_FIELD(XLA_FFI_DeviceMemory_Free_Args, size);
  PROBE_FIELD(XLA_FFI_DeviceMemory_Free_Args, data);

  PROBE_TYPE(XLA_FFI_ThreadPool_Schedule_Args);
  PROBE_FIELD(XLA_FFI_ThreadPool_Schedule_Args, struct_size);
  PROBE_FIELD(XLA_FFI_ThreadPool_Schedule_Args, extension_start);
  PROBE_FIELD(XLA_FFI_ThreadPool_Schedule_Args, ctx);
  PROBE_FIELD(XLA_FFI_ThreadPool_Schedule_Args, task);
  PROBE_FIELD(XLA_FFI_ThreadPool_Schedule_Args, data);

  PROBE_TYPE(XLA_FFI_ThreadPool_NumThreads_Args);
  PROBE_FIELD(XLA_FFI_ThreadPool_NumThreads_Args, struct_size);
  PROBE_FIELD(XLA_FFI_ThreadPool_NumThreads_Args, extension_start);
  PROBE_FIELD(XLA_FFI_ThreadPool_NumThreads_Args, ctx);
  PROBE_FIELD(XLA_FFI_ThreadPool_NumThreads_Args, num_threads);

  PROBE_TYPE(XLA_FFI_RunId_Get_Args);
  PROBE_FIELD(XLA_FFI_RunId_Get_Args, struct_size);
  PROBE_FIELD(XLA_FFI_RunId_Get_Args, extension_start);
  PROBE_FIELD(XLA_FFI_RunId_Get_Args, ctx);
  PROBE_FIELD(XLA_FFI_RunId_Get_Args, run_id);

  PROBE_TYPE(XLA_FFI_DeviceOrdinal_Get_Args);
  PROBE_FIELD(XLA_FFI_DeviceOrdinal_Get_Args, struct_size);
  PROBE_FIELD(XLA_FFI_DeviceOrdinal_Get_Args, extension_start);
  PROBE_FIELD(XLA_FFI_DeviceOrdinal_Get_Args, ctx);
  PROBE_FIELD(XLA_FFI_DeviceOrdinal_Get_Args, device_ordinal);

  PROBE_TYPE(XLA_FFI_Metadata);
  PROBE_FIELD(XLA_FFI_Metadata, struct_size);
  PROBE_FIELD(XLA_FFI_Metadata, api_version);
  PROBE_FIELD(XLA_FFI_Metadata, traits);
  PROBE_FIELD(XLA_FFI_Metadata, state_type_id);

  PROBE_TYPE(XLA_FFI_Metadata_Extension);
  PROBE_FIELD(XLA_FFI_Metadata_Extension, extension_base);
  PROBE_FIELD(XLA_FFI_Metadata_Extension, metadata);

  PROBE_TYPE(XLA_FFI_Api);
  PROBE_FIELD(XLA_FFI_Api, struct_size);
  PROBE_FIELD(XLA_FFI_Api, extension_start);
  PROBE_FIELD(XLA_FFI_Api, api_version);
  PROBE_FIELD(XLA_FFI_Api, internal_api);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_Error_Create);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_Error_GetMessage);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_Error_Destroy);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_Handler_Register);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_Stream_Get);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_Type_Register);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_ExecutionContext_Get);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_State_Set);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_State_Get);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_DeviceMemory_Allocate);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_DeviceMemory_Free);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_ThreadPool_Schedule);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_ThreadPool_NumThreads);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_Future_Create);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_Future_SetAvailable);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_Future_SetError);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_RunId_Get);
  PROBE_FIELD(XLA_FFI_Api, XLA_FFI_DeviceOrdinal_Get);

  PROBE_STRUCT_SIZE(XLA_FFI_Extension_Base);
  PROBE_STRUCT_SIZE(XLA_FFI_Api_Version);
  PROBE_STRUCT_SIZE(XLA_FFI_Error_Create_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_Error_GetMessage_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_Error_Destroy_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_Buffer);
  PROBE_STRUCT_SIZE(XLA_FFI_TypeInfo);
  PROBE_STRUCT_SIZE(XLA_FFI_Future_Create_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_Future_SetAvailable_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_Future_SetError_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_Rets);
  PROBE_STRUCT_SIZE(XLA_FFI_Attrs);
  PROBE_STRUCT_SIZE(XLA_FFI_CallFrame);
  PROBE_STRUCT_SIZE(XLA_FFI_Handler_Register_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_Type_Register_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_ExecutionContext_Get_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_State_Set_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_State_Get_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_Stream_Get_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_DeviceMemory_Allocate_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_DeviceMemory_Free_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_ThreadPool_Schedule_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_ThreadPool_NumThreads_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_RunId_Get_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_DeviceOrdinal_Get_Args);
  PROBE_STRUCT_SIZE(XLA_FFI_Metadata);
  PROBE_STRUCT_SIZE(XLA_FFI_Metadata_Extension);
  PROBE_STRUCT_SIZE(XLA_FFI_Api);
  return 0;
}
