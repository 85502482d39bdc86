/*
 * The C side of dlbridge's C interop example (examples/c_interop).
 *
 * producer.c makes DLPack tensors the way a C framework does: its own malloc'ed data, shape
 * and strides, a context of its own in `manager_ctx`, and a deleter that frees all of it.
 * consumer.c takes tensors that Rust hands over, reads them, writes them where allowed, and
 * calls their deleter exactly once.
 *
 * build.rs compiles both with the cc crate against the real dlpack.h (from DLPACK_INCLUDE_DIR,
 * the apache-tvm-ffi Python package, or the ABI test's cache); the header is never copied into
 * this repository. src/c.rs declares the same functions and the report struct for Rust: the
 * two must change together (the test compares the struct's size with
 * c_consumer_report_size()).
 */
#ifndef DLBRIDGE_C_INTEROP_H
#define DLBRIDGE_C_INTEROP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#if !defined(DLPACK_MAJOR_VERSION) || DLPACK_MAJOR_VERSION < 1
#error "the C interop example needs dlpack.h 1.0 or later (DLManagedTensorVersioned)"
#endif

/* ---------------------------------------------------------------------------------------- */
/* producer.c                                                                               */

/* The value of the padding floats that the transposed tensor's byte_offset skips: a reader
 * that ignores byte_offset sums them in and gets a visibly wrong answer. */
#define C_PRODUCER_SENTINEL (-1000.0f)
/* How many such floats precede the transposed tensor's first element. */
#define C_PRODUCER_PADDING 2

/*
 * Every producer function takes `deleter_calls`, a counter that the tensor's deleter
 * increments (atomically: DLPack lets the deleter run on any thread) after it has freed
 * everything the producer allocated for that tensor. The counter must outlive the tensor.
 * Each returns NULL when an extent is negative or too large, or when memory runs out.
 */

/* A rows x cols float32 matrix on the CPU, row-major (strides cols, 1), writable, version
 * DLPACK_MAJOR_VERSION.DLPACK_MINOR_VERSION of the header it was compiled with. Element
 * (r, c) holds r * cols + c + 1. */
DLManagedTensorVersioned *c_producer_matrix(int64_t rows, int64_t cols,
                                            _Atomic uint32_t *deleter_calls);

/* The transpose of c_producer_matrix(rows, cols) without a copy: a cols x rows tensor with
 * strides (1, cols) over the row-major storage, which starts with C_PRODUCER_PADDING
 * sentinel floats: `data` is the start of the allocation and `byte_offset` skips them.
 * Flagged READ_ONLY. */
DLManagedTensorVersioned *c_producer_transposed(int64_t rows, int64_t cols,
                                                _Atomic uint32_t *deleter_calls);

/* A legacy (pre-1.0) DLManagedTensor: a float32 vector of n elements, element i holding
 * i + 0.5, with strides (1). A legacy tensor has no flags, so it cannot say whether it may
 * be written. */
DLManagedTensor *c_producer_legacy_vector(int64_t n, _Atomic uint32_t *deleter_calls);

/* ---------------------------------------------------------------------------------------- */
/* consumer.c                                                                               */

/* What the consumer returns (and records in c_consumer_report.status). */
enum {
    /* The tensor was read, written unless READ_ONLY, and released. */
    C_CONSUMER_OK = 0,
    /* The tensor pointer was NULL: nothing to read or release. */
    C_CONSUMER_NULL_TENSOR = 1,
    /* A major version this consumer does not know: released without reading anything else. */
    C_CONSUMER_UNSUPPORTED_VERSION = 2,
    /* Not CPU memory: released unread. */
    C_CONSUMER_NOT_CPU = 3,
    /* Not float32 with one lane: released unread. */
    C_CONSUMER_NOT_FLOAT32 = 4,
    /* More than C_CONSUMER_MAX_NDIM dimensions, or a negative extent: released unread. */
    C_CONSUMER_BAD_SHAPE = 5,
};

/* The most dimensions the consumer walks. */
#define C_CONSUMER_MAX_NDIM 8
/* How many elements the report copies out. */
#define C_CONSUMER_COPY_CAPACITY 16

/* What the consumer saw and did, for the Rust side to check. */
typedef struct {
    /* One of the C_CONSUMER_* values above. */
    int32_t status;
    /* The tensor's version (0.0 for a legacy tensor, which has none). */
    uint32_t version_major;
    uint32_t version_minor;
    int32_t ndim;
    /* The tensor's flags (0 for a legacy tensor, which has none). */
    uint64_t flags;
    /* 1 when the consumer multiplied the elements in place, 0 when it only read them. */
    int32_t wrote;
    /* How many times the consumer called the tensor's deleter: 1 for every non-NULL tensor. */
    int32_t deleter_calls;
    /* How many values `elements` holds: min(num_elements, C_CONSUMER_COPY_CAPACITY). */
    int32_t copied;
    int64_t num_elements;
    /* The sum of the elements as received, and after the write (the same when read-only). */
    double sum_before;
    double sum_after;
    /* The first elements after the write, in row-major order of their indices. */
    float elements[C_CONSUMER_COPY_CAPACITY];
} c_consumer_report;

/* sizeof(c_consumer_report), for the Rust side's layout check. */
size_t c_consumer_report_size(void);

/*
 * Takes ownership of `tensor`: checks its version, device and dtype; sums its float32
 * elements, following shape, strides (compact row-major where a tensor older than 1.2 left
 * them NULL) and byte_offset; multiplies every element by `factor` in place unless the
 * tensor is flagged READ_ONLY (or two indices could reach one element: a zero stride); fills
 * `report` (which may be NULL) and calls the deleter exactly once, on every path but a NULL
 * tensor. Returns the status.
 */
int32_t c_consumer_scale_versioned(DLManagedTensorVersioned *tensor, float factor,
                                   c_consumer_report *report);

/*
 * The same for a legacy DLManagedTensor. A legacy tensor cannot be flagged READ_ONLY, so the
 * consumer writes into it: a producer that hands out memory that must not be written has to
 * use DLManagedTensorVersioned (dlbridge refuses the legacy export of a read-only tensor).
 */
int32_t c_consumer_scale_legacy(DLManagedTensor *tensor, float factor,
                                c_consumer_report *report);

#endif /* DLBRIDGE_C_INTEROP_H */
