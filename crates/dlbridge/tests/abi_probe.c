/*
 * ABI probe for the `abi_header` integration test of dlbridge.
 *
 * Compiled by that test against the real `dlpack.h` (staged by the test as
 * `<include dir>/dlpack/dlpack.h`, given to the compiler with `-I`) and run once. It prints one
 * line per item, `NAME VALUE`, where NAME has no spaces:
 *
 *   sizeof(T) / alignof(T)              size and alignment of a type
 *   offsetof(T.field) / sizeof(T.field) offset and size of one field of a struct
 *   kDL...                              value of an enumerator
 *   DLPACK_...                          value of a macro
 *
 * The test builds the same table from `dlbridge::ffi` and reports every item that differs.
 * The header itself is never part of this repository.
 */
#include <dlpack/dlpack.h>

#include "c_probe/probe.h"

int main(void) {
  PROBE_MACRO(DLPACK_MAJOR_VERSION);
  PROBE_MACRO(DLPACK_MINOR_VERSION);
  PROBE_MACRO(DLPACK_FLAG_BITMASK_READ_ONLY);
  PROBE_MACRO(DLPACK_FLAG_BITMASK_IS_COPIED);
  PROBE_MACRO(DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);

  PROBE_TYPE(DLPackVersion);
  PROBE_FIELD(DLPackVersion, major);
  PROBE_FIELD(DLPackVersion, minor);

  /* DLDeviceType is stored as the enum itself (in DLDevice and as a function argument), so
   * its size and alignment are part of the ABI. */
  PROBE_TYPE(DLDeviceType);
  PROBE_ENUMERATOR(kDLCPU);
  PROBE_ENUMERATOR(kDLCUDA);
  PROBE_ENUMERATOR(kDLCUDAHost);
  PROBE_ENUMERATOR(kDLOpenCL);
  PROBE_ENUMERATOR(kDLVulkan);
  PROBE_ENUMERATOR(kDLMetal);
  PROBE_ENUMERATOR(kDLVPI);
  PROBE_ENUMERATOR(kDLROCM);
  PROBE_ENUMERATOR(kDLROCMHost);
  PROBE_ENUMERATOR(kDLExtDev);
  PROBE_ENUMERATOR(kDLCUDAManaged);
  PROBE_ENUMERATOR(kDLOneAPI);
  PROBE_ENUMERATOR(kDLWebGPU);
  PROBE_ENUMERATOR(kDLHexagon);
  PROBE_ENUMERATOR(kDLMAIA);
  PROBE_ENUMERATOR(kDLTrn);

  PROBE_TYPE(DLDevice);
  PROBE_FIELD(DLDevice, device_type);
  PROBE_FIELD(DLDevice, device_id);

  /* DLDataTypeCode is never stored as the enum: DLDataType keeps the code in a uint8_t, which
   * is what `sizeof(DLDataType.code)` checks. Only the enumerator values matter here. */
  PROBE_ENUMERATOR(kDLInt);
  PROBE_ENUMERATOR(kDLUInt);
  PROBE_ENUMERATOR(kDLFloat);
  PROBE_ENUMERATOR(kDLOpaqueHandle);
  PROBE_ENUMERATOR(kDLBfloat);
  PROBE_ENUMERATOR(kDLComplex);
  PROBE_ENUMERATOR(kDLBool);
  PROBE_ENUMERATOR(kDLFloat8_e3m4);
  PROBE_ENUMERATOR(kDLFloat8_e4m3);
  PROBE_ENUMERATOR(kDLFloat8_e4m3b11fnuz);
  PROBE_ENUMERATOR(kDLFloat8_e4m3fn);
  PROBE_ENUMERATOR(kDLFloat8_e4m3fnuz);
  PROBE_ENUMERATOR(kDLFloat8_e5m2);
  PROBE_ENUMERATOR(kDLFloat8_e5m2fnuz);
  PROBE_ENUMERATOR(kDLFloat8_e8m0fnu);
  PROBE_ENUMERATOR(kDLFloat6_e2m3fn);
  PROBE_ENUMERATOR(kDLFloat6_e3m2fn);
  PROBE_ENUMERATOR(kDLFloat4_e2m1fn);

  PROBE_TYPE(DLDataType);
  PROBE_FIELD(DLDataType, code);
  PROBE_FIELD(DLDataType, bits);
  PROBE_FIELD(DLDataType, lanes);

  PROBE_TYPE(DLTensor);
  PROBE_FIELD(DLTensor, data);
  PROBE_FIELD(DLTensor, device);
  PROBE_FIELD(DLTensor, ndim);
  PROBE_FIELD(DLTensor, dtype);
  PROBE_FIELD(DLTensor, shape);
  PROBE_FIELD(DLTensor, strides);
  PROBE_FIELD(DLTensor, byte_offset);

  PROBE_TYPE(DLManagedTensor);
  PROBE_FIELD(DLManagedTensor, dl_tensor);
  PROBE_FIELD(DLManagedTensor, manager_ctx);
  PROBE_FIELD(DLManagedTensor, deleter);

  PROBE_TYPE(DLManagedTensorVersioned);
  PROBE_FIELD(DLManagedTensorVersioned, version);
  PROBE_FIELD(DLManagedTensorVersioned, manager_ctx);
  PROBE_FIELD(DLManagedTensorVersioned, deleter);
  PROBE_FIELD(DLManagedTensorVersioned, flags);
  PROBE_FIELD(DLManagedTensorVersioned, dl_tensor);

  PROBE_TYPE(DLPackManagedTensorAllocator);
  PROBE_TYPE(DLPackManagedTensorFromPyObjectNoSync);
  PROBE_TYPE(DLPackManagedTensorToPyObjectNoSync);
  PROBE_TYPE(DLPackDLTensorFromPyObjectNoSync);
  PROBE_TYPE(DLPackCurrentWorkStream);

  PROBE_TYPE(DLPackExchangeAPIHeader);
  PROBE_FIELD(DLPackExchangeAPIHeader, version);
  PROBE_FIELD(DLPackExchangeAPIHeader, prev_api);

  PROBE_TYPE(DLPackExchangeAPI);
  PROBE_FIELD(DLPackExchangeAPI, header);
  PROBE_FIELD(DLPackExchangeAPI, managed_tensor_allocator);
  PROBE_FIELD(DLPackExchangeAPI, managed_tensor_from_py_object_no_sync);
  PROBE_FIELD(DLPackExchangeAPI, managed_tensor_to_py_object_no_sync);
  PROBE_FIELD(DLPackExchangeAPI, dltensor_from_py_object_no_sync);
  PROBE_FIELD(DLPackExchangeAPI, current_work_stream);

  return ferror(stdout) ? 1 : 0;
}
