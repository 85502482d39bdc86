"""The rules `dlbridge check` tests, each with its level and where the standard says it, and
the outcomes a check reports.

Sections refer to dlbridge's protocol checklist (`python-protocol.md`, sections 1-7), which
restates the array API standard's `__dlpack__` / `from_dlpack` text and `dlpack.h` (v1.3);
`header` means `dlpack.h` itself.

`copy=True` on the consumer side: the array API standard says `from_dlpack`'s copy=True
"must always copy", and that `from_dlpack` "must propagate" the exceptions `__dlpack__`
raises. So a consumer that returns memory shared with x for copy=True breaks a MUST
(`consumer.copy-true`), while one that propagates the producer's BufferError for copy=True
conforms; importing without copy and copying itself, as it must for an old producer that
cannot be asked, gives the caller what was asked for and is the SHOULD
(`consumer.copy-true-refused`).

Dtypes on the consumer side: `dlpack.h`'s DLTensor.dtype says what the bytes are, and the
standard's `from_dlpack` returns "an array containing the data in x". A consumer that cannot
hold a dtype must refuse it (raise); one that imports int64 as int32 (values wrapped modulo
2**32) or float64 as float32 hands out other data without a word, which breaks a MUST
(`consumer.keeps-dtype-and-values`): JAX does, in its default configuration
(jax_enable_x64 off).
"""

from __future__ import annotations

from dataclasses import dataclass

# Levels.
MUST = "MUST"
SHOULD = "SHOULD"

# Outcomes: a check returns (outcome, detail); the strings are those of the JSON report.
PASS = "pass"
FAIL = "fail"
NA = "n/a"  # the rule does not apply (the detail says why)
UNSUPPORTED = "unsupported"  # an interop matrix case the consumer refused
#: An interop matrix case whose result could not be compared: the producer's values cannot be
#: read independently of the consumer (not host memory, or not whole bytes per element).
UNCHECKED = "unchecked"


@dataclass(frozen=True)
class Rule:
    """One clause of the standard, as the checker tests it."""

    id: str
    level: str
    section: str
    text: str


_RULES = [
    # ---- producers: __dlpack__ ------------------------------------------------------------
    Rule(
        "producer.keyword-only",
        MUST,
        "protocol 3",
        "__dlpack__ takes its arguments by keyword only (a positional argument is a TypeError)",
    ),
    Rule(
        "producer.accepts-keywords",
        MUST,
        "protocol 3",
        "__dlpack__ accepts stream, max_version, dl_device and copy",
    ),
    Rule(
        "producer.legacy-without-max-version",
        MUST,
        "protocol 3",
        "max_version None or of major < 1 gets a legacy `dltensor` capsule",
    ),
    Rule(
        "producer.versioned-capsule",
        SHOULD,
        "protocol 3",
        "max_version of major >= 1 gets a `dltensor_versioned` capsule",
    ),
    Rule(
        "producer.version-fields",
        MUST,
        "protocol 1, header",
        "a versioned capsule holds version major 1, and no more than the major asked for",
    ),
    Rule(
        "producer.read-only-flag",
        MUST,
        "protocol 3",
        "read-only data is flagged READ_ONLY on the versioned path",
    ),
    Rule(
        "producer.read-only-legacy-refused",
        MUST,
        "protocol 3",
        "read-only data is refused (BufferError) on the legacy path",
    ),
    Rule(
        "producer.copy-flag",
        MUST,
        "protocol 3",
        "copy=True gives a copy in other memory, flagged IS_COPIED",
    ),
    Rule("producer.no-copy-shares", MUST, "protocol 3", "copy=False shares the tensor's memory"),
    Rule(
        "producer.strides-present",
        MUST,
        "protocol 1",
        "from version 1.2, strides are not NULL when ndim > 0",
    ),
    Rule(
        "producer.zero-size",
        MUST,
        "protocol 1, 2",
        "a tensor without elements exports, with byte_offset 0 when its data is NULL",
    ),
    Rule(
        "producer.device-tuple",
        MUST,
        "protocol 4",
        "__dlpack_device__ returns a (device_type, device_id) pair of ints",
    ),
    Rule(
        "producer.device-id-int",
        SHOULD,
        "protocol 4",
        "__dlpack_device__'s device_id is an int, not None",
    ),
    Rule(
        "producer.device-matches-capsule",
        SHOULD,
        "protocol 4",
        "the capsule's device is the one __dlpack_device__ reports",
    ),
    Rule(
        "producer.bad-stream",
        MUST,
        "protocol 3",
        "a stream other than None for CPU data raises, never TypeError (read as 'old "
        "producer') and never a crash",
    ),
    Rule(
        "producer.bad-stream-error-type",
        SHOULD,
        "protocol 3",
        "the error for a stream other than None on CPU data is ValueError or BufferError",
    ),
    Rule(
        "producer.unreachable-device",
        MUST,
        "protocol 3",
        "a dl_device the tensor cannot reach raises BufferError",
    ),
    Rule(
        "producer.copy-false-needs-copy",
        MUST,
        "protocol 3",
        "copy=False when a copy is needed raises BufferError",
    ),
    Rule(
        "producer.values",
        MUST,
        "protocol 1",
        "the capsule describes the tensor's values (shape, dtype, strides, data)",
    ),
    Rule(
        "producer.consumed-once",
        MUST,
        "protocol 5",
        "a capsule renamed used_* by its consumer is not freed by its destructor, and each "
        "__dlpack__ call gives a new capsule",
    ),
    Rule(
        "producer.no-leak",
        MUST,
        "protocol 5",
        "memory and reference counts stay flat over 10,000 exchanges (consumed and not)",
    ),
    # ---- producers: the C exchange table ---------------------------------------------------
    Rule(
        "exchange.capsule",
        MUST,
        "protocol 6",
        "__dlpack_c_exchange_api__ is a capsule named dlpack_exchange_api on the type",
    ),
    Rule(
        "exchange.version",
        MUST,
        "protocol 6",
        "the table's header has version major 1 (or a prev_api chain reaching one)",
    ),
    Rule(
        "exchange.members",
        MUST,
        "protocol 6",
        "every member but dltensor_from_py_object_no_sync is non-NULL",
    ),
    Rule(
        "exchange.from-py-object",
        MUST,
        "protocol 6",
        "managed_tensor_from_py_object_no_sync exports the tensor __dlpack__ exports",
    ),
    Rule(
        "exchange.dltensor",
        MUST,
        "protocol 6",
        "dltensor_from_py_object_no_sync describes the tensor __dlpack__ exports",
    ),
    Rule(
        "exchange.to-py-object",
        MUST,
        "protocol 6",
        "managed_tensor_to_py_object_no_sync wraps a tensor in an object of the type",
    ),
    Rule(
        "exchange.allocator",
        MUST,
        "protocol 6",
        "managed_tensor_allocator allocates a CPU tensor shaped like the prototype",
    ),
    Rule(
        "exchange.work-stream",
        SHOULD,
        "protocol 6",
        "current_work_stream succeeds for the CPU, with a NULL stream",
    ),
    # ---- producers: CUDA tensors (device_checks; n/a without a GPU) ------------------------
    Rule(
        "device.stream-values",
        MUST,
        "protocol 3",
        "a CUDA tensor's __dlpack__ takes stream=-1, 1, 2 and a stream pointer, each giving a "
        "capsule of the tensor on its device",
    ),
    Rule(
        "device.stream-zero-refused",
        SHOULD,
        "protocol 3",
        "stream=0, forbidden for CUDA, raises ValueError or BufferError",
    ),
    Rule(
        "device.stream-honoured",
        MUST,
        "protocol 3",
        "the data is ready on the consumer's stream: values written late on the producer's "
        "stream are what the consumer's stream reads",
    ),
    Rule(
        "device.host-copy",
        SHOULD,
        "protocol 3",
        "dl_device=(1, 0) gives a host copy of a CUDA tensor, with its values, flagged IS_COPIED",
    ),
    Rule(
        "device.copy-false-needs-copy",
        MUST,
        "protocol 3",
        "copy=False with dl_device=(1, 0) for a CUDA tensor raises BufferError",
    ),
    Rule(
        "exchange.work-stream-cuda",
        SHOULD,
        "protocol 6",
        "current_work_stream for CUDA device 0 gives the framework's current stream",
    ),
    Rule(
        "exchange.agrees-with-dlpack",
        MUST,
        "protocol 6",
        "the table exports exactly what __dlpack__ exports, kind by kind (every catalogued "
        "kind of the framework, else its one tensor): both refuse, or both give the same "
        "dtype, shape, strides, device, data, values and READ_ONLY",
    ),
    Rule(
        "exchange.refusal-error-type",
        SHOULD,
        "protocol 6",
        "where the table and __dlpack__ both refuse a kind, they raise the same exception "
        "class (BufferError)",
    ),
    # ---- consumers: from_dlpack ------------------------------------------------------------
    Rule(
        "consumer.legacy-capsule",
        MUST,
        "protocol 1, 3",
        "a legacy `dltensor` capsule is imported with its values",
    ),
    Rule(
        "consumer.versioned-capsule",
        MUST,
        "protocol 1, 3",
        "a `dltensor_versioned` capsule is imported with its values",
    ),
    Rule(
        "consumer.deleter-once",
        MUST,
        "protocol 5",
        "the producer's deleter runs exactly once, after the result is released",
    ),
    Rule(
        "consumer.null-strides",
        MUST,
        "protocol 1",
        "NULL strides from a legacy or pre-1.2 producer mean row-major",
    ),
    Rule(
        "consumer.extent-one-strides",
        MUST,
        "protocol 2",
        "a dimension of extent 1 may carry any stride",
    ),
    Rule(
        "consumer.negative-strides",
        MUST,
        "protocol 2",
        "negative strides are imported with their values, or refused with BufferError",
    ),
    Rule(
        "consumer.zero-size-null-data",
        MUST,
        "protocol 1, 2",
        "a tensor without elements may have NULL data",
    ),
    Rule("consumer.byte-offset", MUST, "protocol 1", "byte_offset is added to data"),
    Rule(
        "consumer.keeps-dtype-and-values",
        MUST,
        "protocol 1, header",
        "the result keeps the dtype the capsule describes (DLTensor.dtype) and its values, or "
        "the import is refused (raises): never a narrower type (int64 as int32, float64 as "
        "float32), as the array API's from_dlpack returns an array containing the data in x",
    ),
    Rule(
        "consumer.read-only",
        MUST,
        "protocol 1",
        "READ_ONLY data is not handed out writable (the result is read-only or a copy)",
    ),
    Rule(
        "consumer.legacy-read-only",
        SHOULD,
        "protocol 1",
        "a legacy capsule, which cannot say its memory may be written, is imported read-only "
        "(or copied)",
    ),
    Rule(
        "consumer.legacy-re-export",
        MUST,
        "protocol 1",
        "a result sharing a legacy capsule's memory is re-exported versioned with READ_ONLY",
    ),
    Rule(
        "consumer.major-version-2",
        MUST,
        "protocol 1",
        "a tensor of major version 2 is refused, and its deleter called once",
    ),
    Rule(
        "consumer.old-producer",
        MUST,
        "protocol 7",
        "a producer whose __dlpack__ takes no max_version is retried without it",
    ),
    Rule(
        "consumer.copy-true",
        MUST,
        "protocol 3, 7",
        "from_dlpack(x, copy=True) never returns memory shared with x: not when the producer "
        "copies, nor when it refuses copy=True (BufferError) or takes no copy keyword (an old "
        "producer); propagating the producer's BufferError is allowed",
    ),
    Rule(
        "consumer.copy-true-refused",
        SHOULD,
        "protocol 3, 7",
        "where the producer refuses copy=True (BufferError) or takes no copy keyword, "
        "from_dlpack(x, copy=True) imports without copy and copies the data itself",
    ),
    Rule(
        "consumer.producer-refusals",
        MUST,
        "protocol 6",
        "every tensor a real producer's __dlpack__ refuses is refused, also where its "
        "exchange table would export it (PyTorch, PaddlePaddle)",
    ),
    Rule(
        "consumer.producer-refusal-error-type",
        SHOULD,
        "protocol 6",
        "those refusals raise the producer's own exception class (BufferError, as __dlpack__ does)",
    ),
]

RULES = {rule.id: rule for rule in _RULES}
