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

from .abi import HOST_DEVICES
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
        self.tensor = framework.exporter(framework.make(BASE))
        self.known_values = not framework.user_factory
        #: What checks sharing one costly survey computed (the exchange table's kinds).
        self.cache: dict = {}

    def plain_data(self) -> int:
        """The address of the first element of the tensor's versioned export."""
        info = read_capsule(self.tensor.__dlpack__(max_version=(1, 3)))
        return (info["data"] or 0) + info["byte_offset"]


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
    """The values of a capsule (or producer), imported with dlbridge's validating importer."""
    import dlbridge

    return np.from_dlpack(dlbridge.from_dlpack(capsule))


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
