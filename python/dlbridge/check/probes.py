"""What the check families share, on the floor beneath them: the families (`producer_checks`,
`exchange_checks`, `device_checks`, `consumer_checks`) stand side by side on these and never
import one another.

- The tensors probed: `BASE` (the values of the tensors the checks make) and `Subject` (a
  framework's tensors for its producer and exchange-table checks, made once).
- Calls whose exception is a finding: `call` returns it instead of raising,
  `describe_error` says it in one line, `expect_raised` judges a call that must raise.
- Values read back through dlbridge's validating importer: `read_values`.
- Where a tensor lives: `on_host`.
- The C exchange table a tensor's type publishes, reached member by member: `table_of`,
  `usable_table_of` (the table of major version 1), `table_function` (one member as a
  callable, or the outcome to report without it), `failed_table_call` (the failure of a call
  that did not return 0) and `STREAM_SENTINEL` (what a stream holds before
  `current_work_stream` writes it).
- The one rule two families check, each on its own tensor: `copy_false_needs_copy` (a CPU
  tensor for `producer.copy-false-needs-copy`, a CUDA tensor for
  `device.copy-false-needs-copy`).

Each check is a function of a subject that returns `(outcome, detail)` for its rule: PASS,
FAIL or NA (the rule does not apply, with the reason).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .abi import FLAG_READ_ONLY, HOST_DEVICES
from .capsule_only import CapsuleOnly
from .capsules import capsule_table, major_one, read_capsule, table_member
from .frameworks import Framework
from .rules import FAIL, NA, PASS

#: The values of the tensors the checks make.
BASE = np.arange(6, dtype=np.float32).reshape(2, 3)
#: What the stream holds before `current_work_stream` is called: a value it never writes, so
#: that a call returning 0 without writing the stream is seen.
STREAM_SENTINEL = 0x5EED


class Subject:
    """The tensors a framework's producer and exchange-table checks use, made once."""

    def __init__(self, framework: Framework):
        self.framework = framework
        #: What is asked for capsules: the framework's tensor, or a capsule-only framework's
        #: adapter over it.
        self.tensor = framework.exporter(framework.make(None if framework.user_factory else BASE))
        self.known_values = not framework.user_factory
        #: Whether the tensor's data may not be written, as the framework says: the tensor a
        #: framework makes of `BASE` is its own, writable memory; a user's factory says it by
        #: flagging its versioned capsule READ_ONLY or by a read-only buffer (`memoryview`).
        #: A legacy capsule of it must then be refused, so the rules that ask for one expect
        #: that refusal.
        self.read_only = framework.user_factory and (
            flagged_read_only(self.tensor) or read_only_evidence(self.tensor) is not None
        )
        #: What checks sharing one costly survey computed (the exchange table's kinds).
        self.cache: dict = {}

    def plain_data(self) -> int:
        """The address of the first element of the tensor's versioned export."""
        info = read_capsule(self.tensor.__dlpack__(max_version=(1, 3)))
        return (info["data"] or 0) + info["byte_offset"]


def flagged_read_only(tensor) -> bool:
    """Whether the tensor's versioned capsule carries READ_ONLY (False where it has none)."""
    capsule, error = call(tensor.__dlpack__, max_version=(1, 3))
    if error is not None:
        return False
    info = read_capsule(capsule)
    return info["version"] is not None and bool(info["flags"] & FLAG_READ_ONLY)


def read_only_evidence(tensor) -> str | None:
    """Why the tensor's data is read-only, by what the tensor says other than its capsule's
    flag (a read-only buffer: `memoryview(tensor).readonly`) or by where it lies (a memory
    page this process may not write); None where nothing says so."""
    owner = tensor.tensor if isinstance(tensor, CapsuleOnly) else tensor
    try:
        if memoryview(owner).readonly:
            return "its buffer is read-only (memoryview(tensor).readonly)"
    except TypeError:
        pass  # no buffer protocol: nothing said that way
    capsule, error = call(tensor.__dlpack__, max_version=(1, 3))
    if error is not None:
        capsule, error = call(tensor.__dlpack__)
    if error is not None:
        return None
    info = read_capsule(capsule)
    if info["device"][0] not in HOST_DEVICES or not info["data"]:
        return None
    if page_writable(info["data"] + info["byte_offset"]) is False:
        return "its memory lies in a page this process may not write (/proc/self/maps)"
    return None


def page_writable(address: int) -> bool | None:
    """Whether the memory page holding `address` may be written, from /proc/self/maps (None
    where that cannot be told: no such file, or no mapping holds the address)."""
    try:
        with open("/proc/self/maps") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        low, high = (int(bound, 16) for bound in fields[0].split("-"))
        if low <= address < high:
            return "w" in fields[1]
    return None


def call(function: Callable, *args, **kwargs):
    """(result, None) or (None, exception)."""
    try:
        return function(*args, **kwargs), None
    except Exception as error:  # noqa: BLE001 - every exception is a finding here
        return None, error


def describe_error(error: BaseException) -> str:
    """An exception in one line: its class and message, at most 200 characters."""
    return f"{type(error).__name__}: {error}".strip()[:200]


def expect_raised(error, expected: type, when_nothing: str):
    """The outcome of a call that must raise `expected`: `when_nothing` fails it when it
    raised nothing."""
    if error is None:
        return FAIL, when_nothing
    if isinstance(error, expected):
        return PASS, expected.__name__
    return FAIL, f"raised {describe_error(error)}, not {expected.__name__}"


def read_values(capsule) -> np.ndarray:
    """The values of a capsule (or producer), imported with dlbridge's validating importer.

    Read through NumPy's `from_dlpack`; for a read-only tensor, which dlbridge rightly will
    not export as a legacy capsule, and a NumPy older than 2 (it asks for legacy capsules
    only), through the buffer protocol instead."""
    import dlbridge

    tensor = dlbridge.from_dlpack(capsule)
    try:
        return np.from_dlpack(tensor)
    except BufferError:
        if not tensor.readonly:
            raise
        return np.array(memoryview(tensor))


def on_host(s) -> bool:
    """Whether the subject's tensor says it is in host memory (`__dlpack_device__`)."""
    device, error = call(s.tensor.__dlpack_device__)
    return error is None and int(device[0]) in HOST_DEVICES


# ---- the C exchange table -------------------------------------------------------------------


def table_of(kind: type):
    """(the table `kind` publishes, None), or (None, why) when it publishes none, or (False,
    why) when its capsule is not a table's."""
    capsule = getattr(kind, "__dlpack_c_exchange_api__", None)
    if capsule is None:
        return None, "the type publishes no __dlpack_c_exchange_api__"
    try:
        return capsule_table(capsule), None
    except ValueError as error:
        return False, str(error)


def usable_table_of(kind: type):
    """(the major-1 table `kind` publishes, None), or (None, why)."""
    table, why = table_of(kind)
    if not table:
        return None, why
    table = major_one(table)
    if table is None:
        return None, "no table of major version 1"
    return table, None


def table_function(s, member: str, missing=(FAIL, "NULL")):
    """(callable, None) for a member of the major-1 table of the type of the subject's
    tensor, or (None, the outcome to report): n/a without a usable table, `missing` when the
    member is NULL."""
    table, why = usable_table_of(type(s.tensor))
    if table is None:
        return None, (NA, why)
    function = table_member(table, member)
    return (function, None) if function is not None else (None, missing)


def failed_table_call(status, error):
    """The failure to report for a table call that did not return 0, else None."""
    if error is not None or status != 0:
        return FAIL, f"returned {status}: {describe_error(error) if error else 'no error set'}"
    return None


# ---- a rule two families check ----------------------------------------------------------------


def copy_false_needs_copy(s):
    """`copy=False` with `dl_device=(1, 0)` for a tensor not in host memory raises
    BufferError (n/a for a tensor in host memory)."""
    if on_host(s):
        return NA, "a tensor in host memory never needs a copy to reach the CPU"
    _, error = call(s.tensor.__dlpack__, max_version=(1, 3), dl_device=(1, 0), copy=False)
    return expect_raised(error, BufferError, "copy=False to the CPU from a device tensor succeeded")
