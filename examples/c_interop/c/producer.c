/*
 * A C producer of DLPack tensors, written as a C framework would write one: each tensor owns
 * five allocations (the managed tensor, the context, the element storage, the shape, the
 * strides) and its deleter frees all five, then counts the call.
 */
#include "c_interop.h"

#include <stdio.h>
#include <stdlib.h>

/* Marks a live context, so that the deleter notices a tensor it did not make. */
#define PRODUCER_MAGIC 0x43505244u

/* What the producer keeps in `manager_ctx`: everything it must free, as it allocated it (the
 * deleter does not trust the descriptor, which a consumer could have changed), and where to
 * count the deleter's calls. */
struct producer_ctx {
    uint32_t magic;
    /* The managed tensor this context belongs to (versioned or legacy). */
    void *owner;
    float *storage;
    int64_t *shape;
    int64_t *strides;
    _Atomic uint32_t *deleter_calls;
};

/* Frees a context and what it holds; returns its counter, to be incremented last. */
static _Atomic uint32_t *release_ctx(struct producer_ctx *ctx) {
    _Atomic uint32_t *deleter_calls = ctx->deleter_calls;
    free(ctx->storage);
    free(ctx->shape);
    free(ctx->strides);
    ctx->magic = 0;
    free(ctx);
    return deleter_calls;
}

/* A deleter called with a tensor this producer did not make (or already released) is a bug
 * in the consumer: stop loudly rather than free memory that is not ours. */
static struct producer_ctx *checked_ctx(void *manager_ctx, void *owner) {
    struct producer_ctx *ctx = manager_ctx;
    if (ctx == NULL || ctx->magic != PRODUCER_MAGIC || ctx->owner != owner) {
        fprintf(stderr, "c_interop producer: deleter called on a tensor it does not own\n");
        abort();
    }
    return ctx;
}

static void delete_versioned(DLManagedTensorVersioned *self) {
    if (self == NULL) {
        return;
    }
    _Atomic uint32_t *deleter_calls = release_ctx(checked_ctx(self->manager_ctx, self));
    free(self);
    atomic_fetch_add(deleter_calls, 1u);
}

static void delete_legacy(DLManagedTensor *self) {
    if (self == NULL) {
        return;
    }
    _Atomic uint32_t *deleter_calls = release_ctx(checked_ctx(self->manager_ctx, self));
    free(self);
    atomic_fetch_add(deleter_calls, 1u);
}

/* rows * cols as a count of floats, or -1 when an extent is negative or the product (plus
 * `extra`) would not fit in memory sizes. */
static int64_t element_count(int64_t rows, int64_t cols, int64_t extra) {
    const int64_t limit = (int64_t)(SIZE_MAX / sizeof(float) / 2);
    if (rows < 0 || cols < 0 || extra < 0) {
        return -1;
    }
    if (rows != 0 && cols > (limit - extra) / rows) {
        return -1;
    }
    return rows * cols + extra;
}

/* A context with storage for `count` floats and room for `ndim` extents and strides. */
static struct producer_ctx *new_ctx(int64_t count, int32_t ndim,
                                    _Atomic uint32_t *deleter_calls) {
    struct producer_ctx *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL) {
        return NULL;
    }
    /* malloc(0) may return NULL: every allocation asks for one element at least. */
    ctx->storage = malloc((size_t)(count > 0 ? count : 1) * sizeof(float));
    ctx->shape = malloc((size_t)ndim * sizeof(int64_t));
    ctx->strides = malloc((size_t)ndim * sizeof(int64_t));
    if (ctx->storage == NULL || ctx->shape == NULL || ctx->strides == NULL) {
        release_ctx(ctx);
        return NULL;
    }
    ctx->magic = PRODUCER_MAGIC;
    ctx->deleter_calls = deleter_calls;
    return ctx;
}

/* A float32 tensor on the CPU over the context's storage. */
static DLTensor cpu_float32(struct producer_ctx *ctx, int32_t ndim) {
    DLTensor tensor;
    tensor.data = ctx->storage;
    tensor.device.device_type = kDLCPU;
    tensor.device.device_id = 0;
    tensor.ndim = ndim;
    tensor.dtype.code = kDLFloat;
    tensor.dtype.bits = 32;
    tensor.dtype.lanes = 1;
    tensor.shape = ctx->shape;
    tensor.strides = ctx->strides;
    tensor.byte_offset = 0;
    return tensor;
}

/* A versioned managed tensor around the context, or NULL (the context released). */
static DLManagedTensorVersioned *new_versioned(struct producer_ctx *ctx, DLTensor tensor,
                                               uint64_t flags) {
    DLManagedTensorVersioned *managed = malloc(sizeof *managed);
    if (managed == NULL) {
        release_ctx(ctx);
        return NULL;
    }
    managed->version.major = DLPACK_MAJOR_VERSION;
    managed->version.minor = DLPACK_MINOR_VERSION;
    managed->manager_ctx = ctx;
    managed->deleter = delete_versioned;
    managed->flags = flags;
    managed->dl_tensor = tensor;
    ctx->owner = managed;
    return managed;
}

DLManagedTensorVersioned *c_producer_matrix(int64_t rows, int64_t cols,
                                            _Atomic uint32_t *deleter_calls) {
    int64_t count = element_count(rows, cols, 0);
    if (count < 0 || deleter_calls == NULL) {
        return NULL;
    }
    struct producer_ctx *ctx = new_ctx(count, 2, deleter_calls);
    if (ctx == NULL) {
        return NULL;
    }
    for (int64_t i = 0; i < count; ++i) {
        ctx->storage[i] = (float)(i + 1);
    }
    ctx->shape[0] = rows;
    ctx->shape[1] = cols;
    ctx->strides[0] = cols;
    ctx->strides[1] = 1;
    return new_versioned(ctx, cpu_float32(ctx, 2), 0);
}

DLManagedTensorVersioned *c_producer_transposed(int64_t rows, int64_t cols,
                                                _Atomic uint32_t *deleter_calls) {
    int64_t count = element_count(rows, cols, C_PRODUCER_PADDING);
    if (count < 0 || deleter_calls == NULL) {
        return NULL;
    }
    struct producer_ctx *ctx = new_ctx(count, 2, deleter_calls);
    if (ctx == NULL) {
        return NULL;
    }
    for (int64_t i = 0; i < C_PRODUCER_PADDING; ++i) {
        ctx->storage[i] = C_PRODUCER_SENTINEL;
    }
    /* The same values as c_producer_matrix, row-major after the padding... */
    for (int64_t i = C_PRODUCER_PADDING; i < count; ++i) {
        ctx->storage[i] = (float)(i - C_PRODUCER_PADDING + 1);
    }
    /* ...seen as their transpose: element (c, r) is storage[padding + r * cols + c]. */
    ctx->shape[0] = cols;
    ctx->shape[1] = rows;
    ctx->strides[0] = 1;
    ctx->strides[1] = cols;
    DLTensor tensor = cpu_float32(ctx, 2);
    tensor.byte_offset = C_PRODUCER_PADDING * sizeof(float);
    return new_versioned(ctx, tensor, DLPACK_FLAG_BITMASK_READ_ONLY);
}

DLManagedTensor *c_producer_legacy_vector(int64_t n, _Atomic uint32_t *deleter_calls) {
    int64_t count = element_count(n, 1, 0);
    if (count < 0 || deleter_calls == NULL) {
        return NULL;
    }
    struct producer_ctx *ctx = new_ctx(count, 1, deleter_calls);
    if (ctx == NULL) {
        return NULL;
    }
    for (int64_t i = 0; i < count; ++i) {
        ctx->storage[i] = (float)i + 0.5f;
    }
    ctx->shape[0] = n;
    ctx->strides[0] = 1;
    DLManagedTensor *managed = malloc(sizeof *managed);
    if (managed == NULL) {
        release_ctx(ctx);
        return NULL;
    }
    managed->dl_tensor = cpu_float32(ctx, 1);
    managed->manager_ctx = ctx;
    managed->deleter = delete_legacy;
    ctx->owner = managed;
    return managed;
}
