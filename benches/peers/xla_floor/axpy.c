// The floor under a dlbridge kernel inside `jax.jit`: the same work (`out = alpha * x + y`,
// float32) as a handler written by hand in C against XLA's C API (jaxlib's
// xla/ffi/api/c_api.h), with the checks a careful C handler makes and no more: the metadata
// query answered, the stages before execution skipped, the buffer counts, kinds, data types
// and element counts, and the attribute `alpha` (a float32 scalar, the call's only
// attribute). Not part of dlbridge; built by `make bench-peers` (build.sh) against the
// installed jaxlib's header, and registered by benches/compiled_graphs.py.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "xla/ffi/api/c_api.h"

static XLA_FFI_Error* refuse(const XLA_FFI_CallFrame* frame, const char* message) {
    XLA_FFI_Error_Create_Args args;
    memset(&args, 0, sizeof args);
    args.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
    args.message = message;
    args.errc = XLA_FFI_Error_Code_INVALID_ARGUMENT;
    return frame->api->XLA_FFI_Error_Create(&args);
}

static int64_t elements(const XLA_FFI_Buffer* buffer) {
    int64_t count = 1;
    for (int64_t i = 0; i < buffer->rank; ++i) count *= buffer->dims[i];
    return count;
}

XLA_FFI_Error* dlbridge_floor_axpy(XLA_FFI_CallFrame* frame) {
    for (XLA_FFI_Extension_Base* extension = frame->extension_start; extension != NULL;
         extension = extension->next) {
        if (extension->type == XLA_FFI_Extension_Metadata) {
            XLA_FFI_Metadata* metadata = ((XLA_FFI_Metadata_Extension*)extension)->metadata;
            metadata->api_version.major_version = XLA_FFI_API_MAJOR;
            metadata->api_version.minor_version = XLA_FFI_API_MINOR;
            metadata->traits = 0;
            return NULL;
        }
    }
    if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return NULL;
    if (frame->args.size != 2 || frame->rets.size != 1 || frame->attrs.size != 1)
        return refuse(frame, "axpy: two arguments, one result and one attribute");
    if (frame->args.types[0] != XLA_FFI_ArgType_BUFFER ||
        frame->args.types[1] != XLA_FFI_ArgType_BUFFER ||
        frame->rets.types[0] != XLA_FFI_RetType_BUFFER ||
        frame->attrs.types[0] != XLA_FFI_AttrType_SCALAR)
        return refuse(frame, "axpy: buffers and a scalar");
    const XLA_FFI_Buffer* x = frame->args.args[0];
    const XLA_FFI_Buffer* y = frame->args.args[1];
    XLA_FFI_Buffer* out = frame->rets.rets[0];
    const XLA_FFI_Scalar* alpha = frame->attrs.attrs[0];
    if (x->dtype != XLA_FFI_DataType_F32 || y->dtype != XLA_FFI_DataType_F32 ||
        out->dtype != XLA_FFI_DataType_F32 || alpha->dtype != XLA_FFI_DataType_F32)
        return refuse(frame, "axpy: float32 only");
    int64_t n = elements(out);
    if (elements(x) != n || elements(y) != n) return refuse(frame, "axpy: sizes differ");
    const float a = *(const float*)alpha->value;
    const float* xs = x->data;
    const float* ys = y->data;
    float* outs = out->data;
    for (int64_t i = 0; i < n; ++i) outs[i] = a * xs[i] + ys[i];
    return NULL;
}
