"""The rules `dlbridge check` tests, the outcomes a check reports, and what ties them together.

Each `Rule` has an id (`family.name`), a level (MUST or SHOULD), the text the checker tests,
the public texts that say it (`cites`), a one-line fix (`hint`) and the rules whose failure
makes its own check fail too (`follows`).

Citations point into three public texts only (`SOURCES` lists the addresses they start with):

- the Python array API standard, its DLPack pages: the reference pages of `array.__dlpack__`,
  `array.__dlpack_device__` and `from_dlpack` (a citation names the parameter, or the part of
  the page, that says it) and the design topic "Data interchange mechanisms";
- DLPack's own Python specification (python_spec.html), by section: "Semantics",
  "Implementation" (capsule names, ownership and the capsule destructor, NULL strides, NULL
  data) and "DLPack C Exchange API" (`__dlpack_c_exchange_api__`), with the sentence meant;
- `dlpack.h`, by the struct, field, typedef or macro that says it (`DLTensor::strides`,
  `DLPACK_FLAG_BITMASK_READ_ONLY`, `DLPackExchangeAPI`, ...).

`Rule.section` is the short label built from them that the reports print.

Two rules, read together with their citations:

- `copy=True` on the consumer side: the standard's `from_dlpack` says copy=True "must always
  copy", and that it "must propagate" the exceptions `__dlpack__` raises. So a consumer that
  returns memory shared with x for copy=True breaks a MUST (`consumer.copy-true`), while one
  that propagates the producer's BufferError conforms; importing without copy and copying
  itself, as it must for an old producer that cannot be asked, gives the caller what was
  asked for and is the SHOULD (`consumer.copy-true-refused`).
- dtypes on the consumer side: `dlpack.h`'s `DLTensor::dtype` says what the bytes are, and
  the standard's `from_dlpack` returns "an array containing the data in x". A consumer that
  cannot hold a dtype must refuse it (raise); one that imports int64 as int32 (values wrapped
  modulo 2**32) or float64 as float32 hands out other data without a word, which breaks a MUST
  (`consumer.keeps-dtype-and-values`): JAX does, in its default configuration (jax_enable_x64
  off).

Causes: one fault often fails several checks (a consumer that never renames the capsule
`used_*` has its tensors' deleters called twice, which every check counting deleter calls
sees). `Rule.follows` names, for each rule, the rules whose failure was seen to fail its check
too (found by running every check on frameworks broken on purpose), and `attach_causes` marks
each finding of a framework's results with the finding it follows from (`caused_by`), so that
a report can show the root and put its consequences beneath it. Causes are known rule by
rule, not failure by failure: a finding that fails for a reason of its own while a rule it
follows fails too is marked all the same, so the root is the one to fix first, and a check
run again tells what is left. `explain(rule_id)` is a
rule's full text for `dlbridge check --explain`; `list_rules()` lists them all.
"""

from __future__ import annotations

import difflib
import textwrap
from collections.abc import Callable
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
#: A check that broke internally (it raised): no verdict on the framework, and no pass either.
ERROR = "error"
#: The framework's process died during the check (a signal, a fatal error).
CRASH = "crash"
#: The check did not answer within the time allowed.
HANG = "hang"
#: The outcomes that are findings: each needs a look, and none is a pass.
FINDINGS = (FAIL, ERROR, CRASH, HANG)

#: The rule families, in the order the checks run and the lists show them (a rule's id starts
#: with its family).
FAMILIES = ("producer", "exchange", "device", "consumer")

# ---- the public texts cited ------------------------------------------------------------------

#: The documents cited, as `Citation.document` names them.
ARRAY_API = "array API standard"
PYTHON_SPEC = "DLPack Python specification"
HEADER = "dlpack.h"

_ARRAY_API_URL = "https://data-apis.org/array-api/latest/"
_DLPACK_URL = _ARRAY_API_URL + "API_specification/generated/array_api.array.__dlpack__.html"
_DEVICE_URL = _ARRAY_API_URL + "API_specification/generated/array_api.array.__dlpack_device__.html"
_FROM_DLPACK_URL = _ARRAY_API_URL + "API_specification/generated/array_api.from_dlpack.html"
_INTERCHANGE_URL = _ARRAY_API_URL + "design_topics/data_interchange.html"
_PYTHON_SPEC_URL = "https://dmlc.github.io/dlpack/latest/python_spec.html"
_HEADER_URL = "https://github.com/dmlc/dlpack/blob/main/include/dlpack/dlpack.h"

#: Every citation's URL starts with one of these: the array API standard's reference pages
#: and design topics, DLPack's Python specification, and `dlpack.h` on DLPack's main branch.
SOURCES = (
    _ARRAY_API_URL + "API_specification/",
    _ARRAY_API_URL + "design_topics/",
    _PYTHON_SPEC_URL,
    _HEADER_URL,
)

#: How `Rule.section` names each document.
_SHORT_NAMES = {ARRAY_API: "array API", PYTHON_SPEC: "DLPack Python spec", HEADER: "dlpack.h"}


@dataclass(frozen=True)
class Citation:
    """Where a public text says a rule: the document (`ARRAY_API`, `PYTHON_SPEC` or
    `HEADER`), the part of it (a page and parameter, a section, or a C name, with what it says
    there in parentheses) and its URL."""

    document: str
    section: str
    url: str

    @property
    def label(self) -> str:
        """The part cited without the parenthesised note: `array.__dlpack__`, `Implementation`,
        `DLTensor::strides`."""
        return self.section.split(" (")[0]


def _dlpack(part: str) -> Citation:
    """The standard's `array.__dlpack__` page, at `part` (a parameter, Raises, Notes)."""
    return Citation(ARRAY_API, f"array.__dlpack__ ({part})", _DLPACK_URL)


def _dlpack_device(part: str) -> Citation:
    return Citation(ARRAY_API, f"array.__dlpack_device__ ({part})", _DEVICE_URL)


def _from_dlpack(part: str) -> Citation:
    return Citation(ARRAY_API, f"from_dlpack ({part})", _FROM_DLPACK_URL)


def _non_supported(part: str) -> Citation:
    """The section "Non-supported use cases" of the standard's design topic "Data
    interchange mechanisms"."""
    return Citation(
        ARRAY_API,
        f"Data interchange mechanisms (Non-supported use cases: {part})",
        f"{_INTERCHANGE_URL}#non-supported-use-cases",
    )


def _spec(title: str, anchor: str, part: str) -> Citation:
    """A section of DLPack's Python specification, `part` saying what it says there."""
    return Citation(PYTHON_SPEC, f"{title} ({part})", f"{_PYTHON_SPEC_URL}#{anchor}")


def _semantics(part: str) -> Citation:
    return _spec("Semantics", "semantics", part)


def _implementation(part: str) -> Citation:
    return _spec("Implementation", "implementation", part)


def _c_exchange(part: str) -> Citation:
    return _spec("DLPack C Exchange API", "dlpack-c-exchange-api", part)


def _header(name: str, part: str = "") -> Citation:
    """`dlpack.h`'s struct, field (`Struct::field`), typedef or macro `name`."""
    return Citation(HEADER, f"{name} ({part})" if part else name, _HEADER_URL)


# ---- rules -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """One clause of the standard, as the checker tests it: its id (`family.name`), level
    (MUST or SHOULD) and text; the public texts that say it; a one-line fix for a framework
    that fails it; and the rules (`follows`) whose failure was seen to fail its check too,
    in the order a cause is looked for (`attach_causes`)."""

    id: str
    level: str
    text: str
    cites: tuple[Citation, ...]
    hint: str
    follows: tuple[str, ...] = ()

    @property
    def section(self) -> str:
        """A short label of the citations, document by document: "array API:
        array.__dlpack__; dlpack.h: DLTensor::strides"."""
        by_document: dict = {}
        for cite in self.cites:
            labels = by_document.setdefault(_SHORT_NAMES.get(cite.document, cite.document), [])
            if cite.label not in labels:
                labels.append(cite.label)
        return "; ".join(f"{name}: {', '.join(labels)}" for name, labels in by_document.items())

    @property
    def family(self) -> str:
        """ "producer", "exchange", "device" or "consumer": the prefix of the id."""
        return self.id.split(".", 1)[0]


_RULES = [
    # ---- producers: __dlpack__ ------------------------------------------------------------
    Rule(
        "producer.keyword-only",
        MUST,
        "__dlpack__ takes its arguments by keyword only (a positional argument is a TypeError)",
        (_dlpack("signature: stream, max_version, dl_device and copy are keyword-only"),),
        "Declare __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None): "
        "keyword-only parameters",
    ),
    Rule(
        "producer.accepts-keywords",
        MUST,
        "__dlpack__ accepts stream, max_version, dl_device and copy",
        (
            _dlpack("signature and Parameters: stream, max_version, dl_device, copy"),
            _dlpack("Notes: consumers pass max_version, dl_device and copy, retrying on TypeError"),
        ),
        "Accept all four keywords (stream, max_version, dl_device, copy) in __dlpack__, raising "
        "BufferError for values you cannot honour",
        follows=(
            "producer.device-tuple",
            "producer.device-matches-capsule",
            "producer.legacy-without-max-version",
            "producer.versioned-capsule",
        ),
    ),
    Rule(
        "producer.legacy-without-max-version",
        MUST,
        "max_version None or of major < 1 gets a legacy `dltensor` capsule",
        (
            _dlpack("Notes: max_version None keeps the DLPack 0.X implementation"),
            _implementation("the producer names the capsule dltensor"),
            _header("DLManagedTensor"),
        ),
        "Return a DLManagedTensor in a capsule named dltensor when max_version is None or its "
        "major is 0",
    ),
    Rule(
        "producer.versioned-capsule",
        SHOULD,
        "max_version of major >= 1 gets a `dltensor_versioned` capsule",
        (
            _dlpack("max_version; Notes: the logic recommended for the producer"),
            _implementation(
                "DLManagedTensorVersioned should be used; its capsule names get _versioned"
            ),
            _header("DLManagedTensorVersioned"),
        ),
        "Return a DLManagedTensorVersioned in a capsule named dltensor_versioned when "
        "max_version's major is 1 or more",
    ),
    Rule(
        "producer.version-fields",
        MUST,
        "a versioned capsule holds version major 1, and no more than the major asked for",
        (
            _dlpack("Notes: the producer fills DLManagedTensorVersioned::version; majors are ABI"),
            _header("DLPackVersion", "a major other than the consumer's: a different layout"),
            _header("DLManagedTensorVersioned::version"),
        ),
        "Write version {1, your minor} into DLManagedTensorVersioned::version, never a major "
        "above the one max_version asks for",
    ),
    Rule(
        "producer.read-only-flag",
        MUST,
        "read-only data is flagged READ_ONLY on the versioned path",
        (
            _dlpack("Notes: DLPack 1.0 added a flag to indicate that the array is read-only"),
            _header("DLPACK_FLAG_BITMASK_READ_ONLY"),
            _header("DLManagedTensorVersioned::flags"),
        ),
        "Set DLPACK_FLAG_BITMASK_READ_ONLY in DLManagedTensorVersioned::flags whenever the "
        "exported memory must not be written",
        follows=("producer.versioned-capsule",),
    ),
    Rule(
        "producer.read-only-legacy-refused",
        MUST,
        "read-only data is refused (BufferError) on the legacy path",
        (
            _dlpack("Raises: BufferError when the data cannot be exported as DLPack"),
            _header("DLManagedTensor", "no flags: it cannot say the memory is read-only"),
            _header("DLPACK_FLAG_BITMASK_READ_ONLY"),
        ),
        "Raise BufferError when read-only data is asked for as a legacy dltensor capsule, which "
        "has no flags to say so",
        follows=("producer.legacy-without-max-version",),
    ),
    Rule(
        "producer.copy-flag",
        MUST,
        "copy=True gives a copy in other memory, flagged IS_COPIED",
        (
            _dlpack("copy: True must always copy; a copy sets DLPACK_FLAG_BITMASK_IS_COPIED"),
            _semantics("when a copy is made, the producer must set IS_COPIED"),
            _header("DLPACK_FLAG_BITMASK_IS_COPIED"),
        ),
        "On copy=True, copy the data into new memory and set DLPACK_FLAG_BITMASK_IS_COPIED in "
        "the versioned capsule's flags",
        follows=(
            "producer.accepts-keywords",
            "producer.versioned-capsule",
        ),
    ),
    Rule(
        "producer.no-copy-shares",
        MUST,
        "copy=False shares the tensor's memory",
        (_dlpack("copy: False must never copy"),),
        "On copy=False, export the tensor's own memory, and raise BufferError where that needs "
        "a copy",
        follows=(
            "producer.accepts-keywords",
            "producer.versioned-capsule",
        ),
    ),
    Rule(
        "producer.strides-present",
        MUST,
        "from version 1.2, strides are not NULL when ndim > 0",
        (_header("DLTensor::strides", "cannot be NULL if ndim != 0, from DLPack v1.2"),),
        "Always write DLTensor::strides (ndim entries, in elements) in tensors of version 1.2 or "
        "later, even for compact data",
    ),
    Rule(
        "producer.zero-size",
        MUST,
        "a tensor without elements exports, with byte_offset 0 when its data is NULL",
        (
            _implementation("an array of size zero has its data pointer NULL or 0"),
            _header("DLTensor::data", "a tensor of size zero: data should be NULL"),
            _header("DLTensor::byte_offset"),
        ),
        "Export tensors with a zero extent too, and write byte_offset 0 where DLTensor::data is "
        "NULL",
        follows=(
            "producer.strides-present",
            "producer.version-fields",
            "producer.versioned-capsule",
        ),
    ),
    Rule(
        "producer.device-tuple",
        MUST,
        "__dlpack_device__ returns a (device_type, device_id) pair of ints",
        (_dlpack_device("Returns: a tuple (device_type, device_id) in DLPack format"),),
        "Return a tuple (device_type, device_id) of ints (or an IntEnum device type) from "
        "__dlpack_device__",
    ),
    Rule(
        "producer.device-id-int",
        SHOULD,
        "__dlpack_device__'s device_id is an int, not None",
        (
            _dlpack_device("Returns: Tuple[Enum, int]"),
            _header("DLDevice::device_id", "0 for CPU, pinned and managed memory"),
        ),
        "Return device_id 0, not None, from __dlpack_device__ for host memory",
    ),
    Rule(
        "producer.device-matches-capsule",
        SHOULD,
        "the capsule's device is the one __dlpack_device__ reports",
        (
            _dlpack_device("Returns: the device type and ID in DLPack format"),
            _header("DLTensor::device"),
        ),
        "Report from __dlpack_device__ the device written into the capsule's DLTensor::device",
        follows=("producer.versioned-capsule",),
    ),
    Rule(
        "producer.bad-stream",
        MUST,
        "a stream other than None for CPU data raises, never TypeError (read as 'old "
        "producer') and never a crash",
        (
            _dlpack("stream: on CPU and other devices without streams, only None is accepted"),
            _dlpack("Notes: the consumer retries without keywords on TypeError"),
        ),
        "For CPU data, raise BufferError (or ValueError) when stream is not None: never "
        "TypeError, never a crash",
    ),
    Rule(
        "producer.bad-stream-error-type",
        SHOULD,
        "the error for a stream other than None on CPU data is ValueError or BufferError",
        (
            _dlpack("stream: on CPU, only None is accepted"),
            _dlpack("Raises: BufferError, or other errors for incorrect arguments"),
        ),
        "Raise BufferError or ValueError, not another class, for a stream other than None on "
        "CPU data",
        follows=("producer.bad-stream",),
    ),
    Rule(
        "producer.unreachable-device",
        MUST,
        "a dl_device the tensor cannot reach raises BufferError",
        (_dlpack("dl_device: a device type the producer cannot handle must raise BufferError"),),
        "Raise BufferError from __dlpack__ when dl_device names a device the tensor cannot be "
        "exported to",
        follows=("producer.accepts-keywords",),
    ),
    Rule(
        "producer.copy-false-needs-copy",
        MUST,
        "copy=False when a copy is needed raises BufferError",
        (
            _dlpack("dl_device: a copy needed but copy=False must raise BufferError"),
            _dlpack("copy: False raises BufferError in case a copy is deemed necessary"),
        ),
        "Raise BufferError when copy=False but honouring dl_device would need a copy",
    ),
    Rule(
        "producer.values",
        MUST,
        "the capsule describes the tensor's values (shape, dtype, strides, data)",
        (
            _from_dlpack("Returns: an array containing the data in x"),
            _header("DLTensor", "data, byte_offset, shape, strides (in elements), dtype"),
        ),
        "Describe exactly the tensor's elements: data + byte_offset, shape, strides in elements "
        "and the DLDataType they are stored as",
        follows=(
            "producer.strides-present",
            "producer.version-fields",
            "producer.legacy-without-max-version",
            "producer.versioned-capsule",
        ),
    ),
    Rule(
        "producer.consumed-once",
        MUST,
        "a capsule renamed used_* by its consumer is not freed by its destructor, and each "
        "__dlpack__ call gives a new capsule",
        (
            _implementation("the capsule is consumed exactly once"),
            _implementation("the capsule destructor calls the deleter only if named dltensor"),
        ),
        "Return a new capsule per __dlpack__ call; its destructor calls the deleter only while "
        "it is still named dltensor(_versioned)",
        follows=(
            "producer.strides-present",
            "producer.version-fields",
            "producer.versioned-capsule",
            "producer.values",
        ),
    ),
    Rule(
        "producer.no-leak",
        MUST,
        "memory and reference counts stay flat over 10,000 exchanges (consumed and not)",
        (
            _implementation("the deleter releases the owner and frees the DLManagedTensor"),
            _implementation("the capsule destructor calls the deleter of an unconsumed capsule"),
            _header("DLManagedTensorVersioned::deleter", "destructs manager_ctx, and self"),
        ),
        "Drop the owner's reference and free the managed struct in the deleter; call it from the "
        "destructor of an unconsumed capsule",
    ),
    # ---- producers: the C exchange table ---------------------------------------------------
    Rule(
        "exchange.capsule",
        MUST,
        "__dlpack_c_exchange_api__ is a capsule named dlpack_exchange_api on the type",
        (
            _c_exchange("an attribute of the array type, a PyCapsule named dlpack_exchange_api"),
            _header("DLPackExchangeAPI", "set on the type as a PyCapsule"),
        ),
        "Set __dlpack_c_exchange_api__ on the tensor type to a PyCapsule named "
        "dlpack_exchange_api over a static DLPackExchangeAPI",
    ),
    Rule(
        "exchange.version",
        MUST,
        "the table's header has version major 1 (or a prev_api chain reaching one)",
        (
            _header("DLPackExchangeAPIHeader::version", "the consumer must check the major"),
            _header("DLPackExchangeAPIHeader::prev_api", "an older table, for older consumers"),
        ),
        "Set header.version to {1, minor} (DLPACK_MAJOR_VERSION), or chain a major-1 table "
        "through header.prev_api",
    ),
    Rule(
        "exchange.members",
        MUST,
        "every member but dltensor_from_py_object_no_sync is non-NULL",
        (_header("DLPackExchangeAPI", "members must not be NULL but dltensor_from_py_object"),),
        "Fill every DLPackExchangeAPI function pointer; only dltensor_from_py_object_no_sync may "
        "be NULL",
    ),
    Rule(
        "exchange.from-py-object",
        MUST,
        "managed_tensor_from_py_object_no_sync exports the tensor __dlpack__ exports",
        (
            _header("DLPackManagedTensorFromPyObjectNoSync"),
            _c_exchange("a faster way, at the C level, to what __dlpack__ exports"),
        ),
        "Make managed_tensor_from_py_object_no_sync return 0 and an owning "
        "DLManagedTensorVersioned equal to __dlpack__'s export",
        follows=("exchange.members", "producer.strides-present", "producer.versioned-capsule"),
    ),
    Rule(
        "exchange.dltensor",
        MUST,
        "dltensor_from_py_object_no_sync describes the tensor __dlpack__ exports",
        (
            _header("DLPackDLTensorFromPyObjectNoSync"),
            _c_exchange("a faster way, at the C level, to what __dlpack__ exports"),
        ),
        "Make dltensor_from_py_object_no_sync fill the DLTensor with the data, shape, strides, "
        "dtype and device __dlpack__ exports",
        follows=("producer.strides-present", "producer.versioned-capsule"),
    ),
    Rule(
        "exchange.to-py-object",
        MUST,
        "managed_tensor_to_py_object_no_sync wraps a tensor in an object of the type",
        (_header("DLPackManagedTensorToPyObjectNoSync", "a tensor of the producer's own type"),),
        "Make managed_tensor_to_py_object_no_sync take the tensor over and return an object of "
        "your own tensor type",
        follows=("exchange.members",),
    ),
    Rule(
        "exchange.allocator",
        MUST,
        "managed_tensor_allocator allocates a CPU tensor shaped like the prototype",
        (_header("DLPackManagedTensorAllocator", "dtype, ndim, shape and device of prototype"),),
        "Make managed_tensor_allocator allocate a tensor of the prototype's dtype, shape and "
        "device, calling SetError on failure",
        follows=("exchange.members",),
    ),
    Rule(
        "exchange.work-stream",
        SHOULD,
        "current_work_stream succeeds for the CPU, with a NULL stream",
        (_header("DLPackCurrentWorkStream", "for kDLCPU the producer can return NULL"),),
        "Make current_work_stream return 0 and write NULL to out_current_stream for kDLCPU",
        follows=("exchange.members",),
    ),
    # ---- producers: CUDA tensors (device_checks; n/a without a GPU) ------------------------
    Rule(
        "device.stream-values",
        MUST,
        "a CUDA tensor's __dlpack__ takes stream=-1, 1 and a stream pointer, each giving a "
        "capsule of the tensor on its device; stream=2 (the per-thread default stream) too, "
        "or refuses it with BufferError (support for stream values is optional)",
        (_dlpack("stream: the values for CUDA: None, -1, 1, 2 and stream pointers"),),
        "Accept stream=-1, 1 and stream pointers for CUDA tensors, each giving a capsule of "
        "the tensor on its device; accept stream=2 or refuse it with BufferError",
    ),
    Rule(
        "device.stream-zero-refused",
        SHOULD,
        "stream=0, forbidden for CUDA, raises ValueError or BufferError",
        (
            _dlpack("stream: 0 is disallowed for CUDA due to its ambiguity"),
            _dlpack("Raises: other errors for incorrect arguments"),
        ),
        "Raise BufferError or ValueError for stream=0 on a CUDA tensor (0 is ambiguous)",
    ),
    Rule(
        "device.stream-honoured",
        MUST,
        "the data is ready on the consumer's stream: values written late on the producer's "
        "stream are what the consumer's stream reads",
        (
            _dlpack("stream: the producer ensures operations can safely be performed on it"),
            _semantics("the producer must synchronize or wait on the stream when necessary"),
        ),
        "Make the consumer's stream wait on an event recorded on your current stream before "
        "returning the capsule",
    ),
    Rule(
        "device.host-copy",
        SHOULD,
        "dl_device=(1, 0) gives a host copy of a CUDA tensor, with its values, flagged IS_COPIED",
        (
            _dlpack("dl_device: a way to return memory the interpreter can reach, kDLCPU"),
            _dlpack("copy: when a copy happens, DLPACK_FLAG_BITMASK_IS_COPIED must be set"),
        ),
        "On dl_device=(kDLCPU, 0) for a CUDA tensor, copy it to host memory and set "
        "DLPACK_FLAG_BITMASK_IS_COPIED",
    ),
    Rule(
        "device.copy-false-needs-copy",
        MUST,
        "copy=False with dl_device=(1, 0) for a CUDA tensor raises BufferError",
        (
            _dlpack("dl_device: a copy needed but copy=False must raise BufferError"),
            _dlpack("copy: False raises BufferError for a cross-device data movement"),
        ),
        "Raise BufferError for copy=False with dl_device=(kDLCPU, 0) on a CUDA tensor (reaching "
        "the host needs a copy)",
    ),
    Rule(
        "exchange.work-stream-cuda",
        SHOULD,
        "current_work_stream for CUDA device 0 gives the framework's current stream",
        (_header("DLPackCurrentWorkStream", "the producer's current work stream of a device"),),
        "Make current_work_stream(kDLCUDA, id) write the stream your framework launches its work "
        "on now",
        follows=("exchange.members",),
    ),
    Rule(
        "exchange.agrees-with-dlpack",
        MUST,
        "the table exports exactly what __dlpack__ exports, kind by kind (every catalogued "
        "kind of the framework, else its one tensor): both refuse, or both give the same "
        "dtype, shape, strides, device, data, values and READ_ONLY",
        (
            _c_exchange("a faster way, at the C level, to what __dlpack__ exports"),
            _header("DLPackManagedTensorFromPyObjectNoSync", "data DLPack cannot describe fails"),
        ),
        "Export through the table exactly what __dlpack__ exports, READ_ONLY included, and "
        "refuse what __dlpack__ refuses",
    ),
    Rule(
        "exchange.refusal-error-type",
        SHOULD,
        "where the table and __dlpack__ both refuse a kind, they raise the same exception "
        "class (BufferError)",
        (
            _header("DLPackManagedTensorFromPyObjectNoSync", "BufferError where DLPack cannot"),
            _dlpack("Raises: BufferError when the data cannot be exported as DLPack"),
            _non_supported("the implementation may raise a BufferError in __dlpack__"),
        ),
        "Set BufferError in the table's functions where __dlpack__ raises BufferError for the "
        "same tensor",
    ),
    # ---- consumers: from_dlpack ------------------------------------------------------------
    Rule(
        "consumer.legacy-capsule",
        MUST,
        "a legacy `dltensor` capsule is imported with its values",
        (
            _dlpack("max_version: the producer may answer another version; the consumer checks"),
            _implementation("a library should support both structs during the transition"),
            _from_dlpack("Returns: an array containing the data in x"),
        ),
        "Import DLManagedTensor from a capsule named dltensor, whatever max_version you asked for",
        follows=("consumer.renames-capsule", "consumer.deleter-once"),
    ),
    Rule(
        "consumer.renames-capsule",
        MUST,
        "the capsule imported is renamed `used_dltensor` (`used_dltensor_versioned`), so that "
        "its destructor does not call the deleter a second time",
        (
            _implementation("the consumer transfers ownership by renaming it used_dltensor"),
            _implementation("with DLManagedTensorVersioned, the names get a _versioned suffix"),
            _dlpack("Notes: set the name to used_dltensor_versioned when done"),
        ),
        "Rename the capsule to used_dltensor (used_dltensor_versioned) as soon as you own the "
        "tensor, before anything can call its deleter",
    ),
    Rule(
        "consumer.versioned-capsule",
        MUST,
        "a `dltensor_versioned` capsule is imported with its values",
        (
            _dlpack("Notes: the consumer logic for a capsule named dltensor_versioned"),
            _implementation("DLManagedTensorVersioned should be used from DLPack 1.0"),
            _from_dlpack("Returns: an array containing the data in x"),
        ),
        "Import DLManagedTensorVersioned from a capsule named dltensor_versioned, checking the "
        "name and version you got",
    ),
    Rule(
        "consumer.deleter-once",
        MUST,
        "the producer's deleter runs exactly once, after the result is released",
        (
            _implementation("the deleter is called by the consumer's object owning the tensor"),
            _header(
                "DLManagedTensorVersioned", "the borrowing framework calls the deleter when done"
            ),
        ),
        "Call the tensor's deleter exactly once, when the last array over the imported memory "
        "is released",
        follows=("consumer.renames-capsule",),
    ),
    Rule(
        "consumer.null-strides",
        MUST,
        "NULL strides from a legacy or pre-1.2 producer mean row-major",
        (
            _implementation("NULL strides indicate a row-major compact array"),
            _header("DLTensor::strides", "before DLPack v1.2, NULL for contiguous data"),
        ),
        "Read NULL DLTensor::strides of a legacy or pre-1.2 tensor as compact row-major strides",
        follows=("consumer.renames-capsule", "consumer.deleter-once", "consumer.legacy-capsule"),
    ),
    Rule(
        "consumer.extent-one-strides",
        MUST,
        "a dimension of extent 1 may carry any stride",
        (
            _header(
                "DLTensor::strides", "ndim strides, in elements, none of their values excluded"
            ),
            _from_dlpack("Returns: an array containing the data in x"),
        ),
        "Skip dimensions of extent 1 when checking strides for contiguity: their stride is never "
        "used",
        follows=(
            "consumer.renames-capsule",
            "consumer.deleter-once",
            "consumer.versioned-capsule",
            "consumer.legacy-capsule",
        ),
    ),
    Rule(
        "consumer.negative-strides",
        MUST,
        "negative strides are imported with their values, or refused with BufferError",
        (
            _header("DLTensor::strides", "int64_t, in elements: of either sign"),
            _from_dlpack("Raises: BufferError for incompatible strides"),
        ),
        "Import negative strides with their values, or raise BufferError (not another error) "
        "where you cannot",
        follows=(
            "consumer.renames-capsule",
            "consumer.deleter-once",
            "consumer.versioned-capsule",
            "consumer.legacy-capsule",
        ),
    ),
    Rule(
        "consumer.zero-size-null-data",
        MUST,
        "a tensor without elements may have NULL data",
        (
            _implementation("an array of size zero has its data pointer NULL or 0"),
            _header("DLTensor::data", "a tensor of size zero: data should be NULL"),
        ),
        "Accept DLTensor::data == NULL when a dimension is 0, without dereferencing it",
        follows=(
            "consumer.renames-capsule",
            "consumer.deleter-once",
            "consumer.versioned-capsule",
            "consumer.legacy-capsule",
        ),
    ),
    Rule(
        "consumer.byte-offset",
        MUST,
        "byte_offset is added to data",
        (
            _header("DLTensor::byte_offset", "the offset in bytes to the beginning of data"),
            _header("DLTensor::data", "byte_offset points to the beginning of the data"),
        ),
        "Read the first element at data + byte_offset, never at data alone",
        follows=(
            "consumer.renames-capsule",
            "consumer.deleter-once",
            "consumer.versioned-capsule",
            "consumer.legacy-capsule",
        ),
    ),
    Rule(
        "consumer.keeps-dtype-and-values",
        MUST,
        "the result keeps the dtype the capsule describes (DLTensor.dtype) and its values, or "
        "the import is refused (raises): never a narrower type (int64 as int32, float64 as "
        "float32), as the array API's from_dlpack returns an array containing the data in x",
        (
            _header("DLTensor::dtype"),
            _header("DLDataType", "code, bits and lanes: what the bytes are"),
            _from_dlpack("Returns: an array containing the data in x"),
        ),
        "Import each DLDataType as the same dtype, or raise BufferError for one you cannot hold; "
        "never narrow 64-bit types",
    ),
    Rule(
        "consumer.read-only",
        MUST,
        "READ_ONLY data is not handed out writable (the result is read-only or a copy)",
        (
            _header("DLPACK_FLAG_BITMASK_READ_ONLY", "the tensor is read only"),
            _dlpack("Notes: the read-only flag, and consumers that cannot mark arrays read-only"),
        ),
        "When DLPACK_FLAG_BITMASK_READ_ONLY is set, return a read-only array or a copy, never a "
        "writable view",
    ),
    Rule(
        "consumer.legacy-read-only",
        SHOULD,
        "a legacy capsule, which cannot say its memory may be written, is imported read-only "
        "(or copied)",
        (
            _header("DLManagedTensor", "no flags: it cannot say whether it may be written"),
            _header("DLPACK_FLAG_BITMASK_READ_ONLY"),
        ),
        "Import legacy dltensor capsules as read-only views, or copy them: they cannot say their "
        "memory may be written",
        follows=("consumer.read-only",),
    ),
    Rule(
        "consumer.legacy-re-export",
        MUST,
        "a result sharing a legacy capsule's memory is re-exported versioned with READ_ONLY",
        (
            _header("DLPACK_FLAG_BITMASK_READ_ONLY"),
            _header("DLManagedTensor", "no flags: it never said the memory may be written"),
            _dlpack("Notes: DLPack 1.0 added a flag to indicate that the array is read-only"),
        ),
        "Set DLPACK_FLAG_BITMASK_READ_ONLY when exporting again memory you imported from a "
        "legacy capsule",
        follows=("consumer.legacy-read-only",),
    ),
    Rule(
        "consumer.major-version-2",
        MUST,
        "a tensor of major version 2 is refused, and its deleter called once",
        (
            _header("DLPackVersion", "another major: call the deleter, read no other field"),
            _dlpack("max_version: the consumer must verify the version"),
        ),
        "Check DLManagedTensorVersioned::version.major; for any major but 1, call the deleter, "
        "read nothing else, and raise BufferError",
        follows=("consumer.renames-capsule",),
    ),
    Rule(
        "consumer.old-producer",
        MUST,
        "a producer whose __dlpack__ takes no max_version is retried without it",
        (
            _dlpack("Notes: the consumer logic: try max_version, except TypeError, retry"),
            _from_dlpack("Notes: see array.__dlpack__ to handle DLPack versioning"),
        ),
        "Call __dlpack__(max_version=...) first, and on TypeError call it again without the "
        "keywords an old producer lacks",
        follows=("consumer.legacy-capsule",),
    ),
    Rule(
        "consumer.copy-true",
        MUST,
        "from_dlpack(x, copy=True) never returns memory shared with x: not when the producer "
        "copies, nor when it refuses copy=True (BufferError) or takes no copy keyword (an old "
        "producer); propagating the producer's BufferError is allowed",
        (
            _from_dlpack("copy: True must always copy"),
            _from_dlpack("Raises: from_dlpack must propagate the producer's exceptions"),
        ),
        "For copy=True, return memory of your own: copy after importing where the producer "
        "cannot copy, or let its BufferError through",
    ),
    Rule(
        "consumer.copy-true-refused",
        SHOULD,
        "where the producer refuses copy=True (BufferError) or takes no copy keyword, "
        "from_dlpack(x, copy=True) imports without copy and copies the data itself",
        (
            _from_dlpack("copy: True must always copy"),
            _dlpack("Notes: the retry on TypeError applies to the copy keyword too"),
        ),
        "Where the producer refuses copy=True or has no copy keyword, import without copy and "
        "copy the data yourself",
    ),
    Rule(
        "consumer.producer-refusals",
        MUST,
        "every tensor a real producer's __dlpack__ refuses is refused, also where its "
        "exchange table would export it (PyTorch, PaddlePaddle)",
        (
            _from_dlpack("Raises: from_dlpack must propagate the exceptions __dlpack__ raises"),
            _c_exchange("consumers may move from __dlpack__ to the table for speed"),
        ),
        "Refuse what the producer's __dlpack__ refuses, also when you take its exchange table's "
        "fast path",
    ),
    Rule(
        "consumer.producer-refusal-error-type",
        SHOULD,
        "those refusals raise the producer's own exception class (BufferError, as __dlpack__ does)",
        (
            _from_dlpack("Raises: from_dlpack must propagate the exceptions __dlpack__ raises"),
            _non_supported("the implementation may raise a BufferError in __dlpack__"),
        ),
        "Raise the producer's own exception class (BufferError) when you refuse what its "
        "__dlpack__ refuses",
    ),
]

RULES = {rule.id: rule for rule in _RULES}


def _check_follows(rules: dict) -> None:
    """Raises ValueError where a rule follows an unknown rule, itself, or a rule that follows
    it back (directly or not): `follows` must stay a graph without cycles."""
    for rule in rules.values():
        for root in rule.follows:
            if root not in rules:
                raise ValueError(f"{rule.id} follows {root}, which is no rule")
    state: dict = {}  # rule id -> "open" while its roots are walked, "done" after

    def walk(rule_id: str, path: tuple) -> None:
        if state.get(rule_id) == "done":
            return
        if state.get(rule_id) == "open":
            raise ValueError("rules follow each other in a cycle: " + " -> ".join(path))
        state[rule_id] = "open"
        for root in rules[rule_id].follows:
            walk(root, (*path, root))
        state[rule_id] = "done"

    for rule_id in rules:
        walk(rule_id, (rule_id,))


_check_follows(RULES)


def followers(rule_id: str, rules: dict | None = None) -> list:
    """The ids of the rules that follow `rule_id` (name it in their `follows`), in order."""
    rules = RULES if rules is None else rules
    return [rule.id for rule in rules.values() if rule_id in rule.follows]


# ---- causes ----------------------------------------------------------------------------------


#: What a finding's evidence says where it is a symptom of a root's failure, by root: a
#: finding is put beneath such a root only where its own detail says so (case aside). A
#: consumer that leaves the capsule unrenamed fails the rules that count deleters ("deleters
#: ran [2] times"), but one that also reads byte_offset wrong fails `consumer.byte-offset` on
#: its own, and fixing the rename would not fix that.
SYMPTOMS = {
    "consumer.renames-capsule": "deleter",
    "consumer.deleter-once": "deleter",
    "producer.strides-present": "strides",
    "producer.versioned-capsule": "legacy",
}


def _shows_symptom(root: str, detail: str) -> bool:
    """Whether a finding's detail shows the symptom of `root`'s failure (`SYMPTOMS`; a root
    without one explains every finding that follows it)."""
    symptom = SYMPTOMS.get(root)
    return symptom is None or symptom in detail.lower()


def _root_cause(rule_id: str, found: dict, rules: dict) -> str | None:
    """The finding `rule_id`'s finding follows from, at the end of the chain: the first rule
    of its `follows` that is a finding and whose symptom its detail shows (`SYMPTOMS`), then
    that rule's, and so on. None where there is none, or where the chain comes back to
    `rule_id` (a cycle of planted rules: each rule on it is its own root, so that no two
    findings are caused by each other). `found` maps each finding's rule to its detail."""
    chain = [rule_id]
    while True:
        rule = rules.get(chain[-1])
        detail = found[chain[-1]]
        step = (
            next((r for r in rule.follows if r in found and _shows_symptom(r, detail)), None)
            if rule
            else None
        )
        if step is None:
            break
        if step in chain:
            if step == rule_id:
                return None
            break
        chain.append(step)
    return chain[-1] if len(chain) > 1 else None


def attach_causes(results: list, rules: dict | None = None) -> None:
    """Marks each finding of one framework's results with the finding it follows from.

    `results` are dicts {"rule", "outcome", "detail", ...}. A result whose outcome is in
    FINDINGS, whose rule follows (`Rule.follows`, first match first) a rule that is itself a
    finding here, and whose detail shows that rule's symptom (`SYMPTOMS`), gets `caused_by`:
    that rule, or the rule it in turn follows from, up to the end of the chain (the ultimate
    root, never itself caused by another). Any other result loses a `caused_by` it had.
    Results of rules unknown to `rules` (default `RULES`) are left as they are."""
    rules = RULES if rules is None else rules
    found = {r["rule"]: str(r.get("detail", "")) for r in results if r.get("outcome") in FINDINGS}
    for result in results:
        if result.get("rule") not in rules:
            continue
        root = _root_cause(result["rule"], found, rules) if result["rule"] in found else None
        if root is None:
            result.pop("caused_by", None)
        else:
            result["caused_by"] = root


# ---- the rules in words ----------------------------------------------------------------------


def _unknown(rule_id: str) -> KeyError:
    """The KeyError for an id that names no rule, with the nearest ids."""
    near = difflib.get_close_matches(rule_id, list(RULES), n=5, cutoff=0.5)
    if not near:
        near = [r for r in RULES if rule_id and rule_id.lower() in r]
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    return KeyError(f"no rule {rule_id!r}{hint} (dlbridge check --list-rules lists them all)")


def explain(rule_id: str) -> str:
    """A rule in full, for `dlbridge check --explain RULE`: its id, level and family, its
    text, each citation (document, section, URL), its fix, the rules it follows from and those
    that follow from it. Raises KeyError, naming the nearest ids, for an unknown id."""
    if rule_id not in RULES:
        raise _unknown(rule_id)
    rule = RULES[rule_id]
    wrap = textwrap.TextWrapper(width=100, initial_indent="  ", subsequent_indent="  ")
    lines = [f"{rule.id}: {rule.level} ({rule.family} rule)", "", *wrap.wrap(rule.text), ""]
    lines.append("Where the standard says it:")
    for cite in rule.cites:
        lines.append(f"  - {cite.document}: {cite.section}")
        lines.append(f"    {cite.url}")
    lines += ["", "Fix:", *wrap.wrap(rule.hint), ""]
    if rule.follows:
        lines.append("Follows from (its check fails too where one of these fails: fix that first):")
        lines += [f"  - {root} ({RULES[root].level})" for root in rule.follows]
    else:
        lines.append("Follows from no other rule.")
    after = followers(rule.id)
    if after:
        lines.append("Followed by (their checks fail too where this one fails):")
        lines += [f"  - {follower} ({RULES[follower].level})" for follower in after]
    return "\n".join(lines)


def _short_text(text: str, room: int) -> str:
    """`text` up to its first clause, cut at a word to fit `room` characters."""
    text = text.split("; ", maxsplit=1)[0]
    if len(text) <= room:
        return text
    return text[: room - 3].rsplit(" ", 1)[0].rstrip(" ,") + "..."


def list_rules() -> str:
    """Every rule on a line (id, level, the text up to its first clause), family by family,
    for `dlbridge check --list-rules`."""
    width = max(len(rule_id) for rule_id in RULES)
    room = 100 - (2 + width + 1 + 6 + 1)
    lines = []
    for family in FAMILIES:
        members = [rule for rule in _RULES if rule.family == family]
        if not members:
            continue
        if lines:
            lines.append("")
        lines.append(f"{family} rules ({len(members)})")
        lines += [
            f"  {rule.id:<{width}} {rule.level:<6} {_short_text(rule.text, room)}"
            for rule in members
        ]
    return "\n".join(lines)


# ---- a framework's summary ---------------------------------------------------------------


def verdict(summary: dict) -> str:
    """The verdict of a framework's counts (`summarise`'s keys): the worst finding first."""
    if summary["crashes"] or summary["hangs"]:
        return "crashes or hangs"
    if summary["must_failures"]:
        return "breaks MUST rules"
    if summary["errors"]:
        return "could not be checked completely"
    if summary["should_failures"]:
        return "conforms (SHOULD failures)"
    return "conforms"


def summarise(results: list, level_of: Callable[[str], str] | None = None) -> dict:
    """One framework's counts by outcome (failures by level: `level_of(rule_id)`, by default
    the level in `RULES`) and its `verdict`: the report's "summary" of that framework."""
    level_of = level_of or (lambda rule_id: RULES[rule_id].level)

    def count(outcome, level=None):
        return sum(
            1
            for r in results
            if r.get("outcome") == outcome and (level is None or level_of(r.get("rule")) == level)
        )

    summary = {
        "must_failures": count(FAIL, MUST),
        "should_failures": count(FAIL, SHOULD),
        "errors": count(ERROR),
        "crashes": count(CRASH),
        "hangs": count(HANG),
        "passed": count(PASS),
        "not_applicable": count(NA),
    }
    summary["verdict"] = verdict(summary)
    return summary
