/*
 * A C consumer of DLPack tensors: it takes ownership of what it is handed, reads float32
 * elements wherever shape, strides and byte_offset place them, writes them only when the
 * producer allows it, and calls the deleter exactly once.
 */
#include "c_interop.h"

#include <string.h>

size_t c_consumer_report_size(void) {
    return sizeof(c_consumer_report);
}

/* Calls `visit` on every element of a float32 tensor, in row-major order of the indices,
 * with `strides` in elements (negative ones included). An empty tensor has no element, and
 * its data pointer is not used. */
static void for_each_element(const DLTensor *tensor, const int64_t *strides,
                             void (*visit)(float *element, void *state), void *state) {
    int32_t ndim = tensor->ndim;
    for (int32_t d = 0; d < ndim; ++d) {
        if (tensor->shape[d] == 0) {
            return;
        }
    }
    /* The first element: the data pointer, moved by byte_offset bytes. */
    float *first = (float *)((char *)tensor->data + tensor->byte_offset);
    int64_t index[C_CONSUMER_MAX_NDIM] = {0};
    for (;;) {
        int64_t offset = 0;
        for (int32_t d = 0; d < ndim; ++d) {
            offset += index[d] * strides[d];
        }
        visit(first + offset, state);
        /* The next index, last dimension fastest; done when every dimension wrapped. */
        int32_t d = ndim - 1;
        while (d >= 0 && ++index[d] == tensor->shape[d]) {
            index[d] = 0;
            --d;
        }
        if (d < 0) {
            return;
        }
    }
}

static void add_to_sum(float *element, void *state) {
    *(double *)state += (double)*element;
}

static void multiply(float *element, void *state) {
    *element *= *(const float *)state;
}

/* Copies the first C_CONSUMER_COPY_CAPACITY elements into the report. */
static void copy_out(float *element, void *state) {
    c_consumer_report *report = state;
    if (report->copied < C_CONSUMER_COPY_CAPACITY) {
        report->elements[report->copied++] = *element;
    }
}

/* Reads, and unless `read_only` writes, one CPU float32 tensor; the caller releases it. */
static int32_t consume(const DLTensor *tensor, int read_only, float factor,
                       c_consumer_report *report) {
    report->ndim = tensor->ndim;
    if (tensor->device.device_type != kDLCPU) {
        return C_CONSUMER_NOT_CPU;
    }
    if (tensor->dtype.code != kDLFloat || tensor->dtype.bits != 32 || tensor->dtype.lanes != 1) {
        return C_CONSUMER_NOT_FLOAT32;
    }
    if (tensor->ndim < 0 || tensor->ndim > C_CONSUMER_MAX_NDIM) {
        return C_CONSUMER_BAD_SHAPE;
    }

    /* Strides as given, or compact row-major ones where an older producer left them NULL
     * (allowed before DLPack 1.2 and in legacy tensors). */
    int64_t strides[C_CONSUMER_MAX_NDIM];
    int64_t count = 1;
    int overlapping = 0;
    for (int32_t d = tensor->ndim - 1; d >= 0; --d) {
        if (tensor->shape[d] < 0) {
            return C_CONSUMER_BAD_SHAPE;
        }
        strides[d] = tensor->strides != NULL ? tensor->strides[d] : count;
        /* A zero stride over more than one index (a broadcast) makes several indices one
         * element: multiplying would scale it several times, so such a tensor is only read.
         * (Other overlaps would need a full test; a producer exporting writable memory does
         * not make them.) */
        if (strides[d] == 0 && tensor->shape[d] > 1) {
            overlapping = 1;
        }
        count *= tensor->shape[d];
    }
    report->num_elements = count;

    for_each_element(tensor, strides, add_to_sum, &report->sum_before);
    if (!read_only && !overlapping) {
        for_each_element(tensor, strides, multiply, &factor);
        report->wrote = 1;
    }
    for_each_element(tensor, strides, add_to_sum, &report->sum_after);
    for_each_element(tensor, strides, copy_out, report);
    return C_CONSUMER_OK;
}

int32_t c_consumer_scale_versioned(DLManagedTensorVersioned *tensor, float factor,
                                   c_consumer_report *report) {
    c_consumer_report ignored;
    if (report == NULL) {
        report = &ignored;
    }
    memset(report, 0, sizeof *report);
    if (tensor == NULL) {
        return report->status = C_CONSUMER_NULL_TENSOR;
    }
    report->version_major = tensor->version.major;
    report->version_minor = tensor->version.minor;
    if (tensor->version.major != DLPACK_MAJOR_VERSION) {
        /* Another major version may lay out everything after `version` differently: the only
         * thing left to do is to give the tensor back. */
        report->status = C_CONSUMER_UNSUPPORTED_VERSION;
    } else {
        report->flags = tensor->flags;
        int read_only = (tensor->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
        report->status = consume(&tensor->dl_tensor, read_only, factor, report);
    }
    if (tensor->deleter != NULL) {
        tensor->deleter(tensor);
        report->deleter_calls += 1;
    }
    return report->status;
}

int32_t c_consumer_scale_legacy(DLManagedTensor *tensor, float factor,
                                c_consumer_report *report) {
    c_consumer_report ignored;
    if (report == NULL) {
        report = &ignored;
    }
    memset(report, 0, sizeof *report);
    if (tensor == NULL) {
        return report->status = C_CONSUMER_NULL_TENSOR;
    }
    /* No flags: a legacy tensor is taken to be writable. */
    report->status = consume(&tensor->dl_tensor, 0, factor, report);
    if (tensor->deleter != NULL) {
        tensor->deleter(tensor);
        report->deleter_calls += 1;
    }
    return report->status;
}
