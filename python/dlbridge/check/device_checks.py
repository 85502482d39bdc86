"""Device checks: what a framework's CUDA tensors do with streams and host copies (`__dlpack__`'s
stream, dl_device and copy) and what its exchange table says the current CUDA stream is.

They need a CUDA tensor of the framework (`Framework.make_cuda`), so they run only where the
framework can make one on this machine: on a machine without a CUDA driver, for a framework
the checker cannot make CUDA tensors of, or where making one fails (a CPU build), every rule
here is n/a with that reason, never a pass. Each check is a function of the `DeviceSubject`
that returns `(outcome, detail)`.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .abi import FLAG_IS_COPIED
from .capsules import read_capsule
from .frameworks import Framework, cuda_driver_present
from .probes import (
    BASE,
    STREAM_SENTINEL,
    call,
    copy_false_needs_copy,
    describe_error,
    failed_table_call,
    read_values,
    table_function,
)
from .rules import FAIL, NA, PASS

kDLCPU, kDLCUDA = 1, 2
#: The values `device.stream-honoured` writes late: distinct from BASE's, 1 MiB of them.
LATE_VALUES = np.arange(1 << 18, dtype=np.float32) * 3 + 1


class NoCudaTensor(Exception):
    """The framework cannot make a CUDA tensor here: every device rule is n/a, saying why."""


class DeviceSubject:
    """A framework's tensor on CUDA device 0 holding BASE's values (`cuda_subject` makes one
    where the framework can)."""

    def __init__(self, framework: Framework, tensor):
        self.framework = framework
        self.tensor = tensor
        #: The consumer streams made so far, kept alive while their handles are in use.
        self.streams: list = []

    def new_stream(self) -> int | None:
        """A new CUDA stream that does not synchronise with the legacy default stream, as a
        handle (None: the framework cannot make one)."""
        if self.framework.new_cuda_stream is None:
            return None
        handle, owner = self.framework.new_cuda_stream()
        self.streams.append(owner)
        return int(handle)


def cuda_subject(framework: Framework) -> DeviceSubject:
    """The framework's CUDA tensor as a subject, or `NoCudaTensor` saying why there is none."""
    if framework.make_cuda is None:
        raise NoCudaTensor(f"the checker makes no CUDA tensors of {framework.name}")
    if not cuda_driver_present():
        raise NoCudaTensor("no CUDA driver on this machine")
    try:
        tensor = framework.make_cuda(BASE)
    except Exception as error:
        raise NoCudaTensor(f"cannot make a CUDA tensor: {describe_error(error)}") from error
    return DeviceSubject(framework, tensor)


def _on_cuda(capsule) -> str | None:
    """Why a capsule is not a CUDA device 0 tensor with BASE's shape, or None."""
    info = read_capsule(capsule)
    if info["device"] != (kDLCUDA, 0):
        return f"a capsule on device {info['device']}"
    if tuple(info["shape"]) != BASE.shape:
        return f"a capsule of shape {tuple(info['shape'])}"
    return None


def _label(stream: int) -> str:
    """A stream as the protocol's small values read (-1, 1, 2), pointers in hexadecimal."""
    return str(stream) if stream <= 2 else hex(stream)


def stream_values(s: DeviceSubject):
    """-1, 1 and stream pointers are what consumers pass and must be taken. The standard makes
    support for stream values optional, so the per-thread default stream (2) may instead be
    refused as an export the producer cannot make: with BufferError, and said so in the
    detail (PyTorch 2.11 refuses it)."""
    handle = s.new_stream()
    asked = [-1, 1, 2] + ([handle] if handle is not None else [])
    wrong, notes = [], []
    for stream in asked:
        capsule, error = call(s.tensor.__dlpack__, stream=stream, max_version=(1, 3))
        if error is not None:
            if stream == 2 and isinstance(error, BufferError):
                notes.append(f"stream=2 refused with BufferError ({error})")
            else:
                wrong.append(f"stream={_label(stream)}: {describe_error(error)}")
        elif why := _on_cuda(capsule):
            wrong.append(f"stream={_label(stream)}: {why}")
    if wrong:
        return FAIL, "; ".join(wrong)
    tried = "-1, 1, 2 and a stream pointer" if handle is not None else "-1, 1 and 2"
    if handle is None:
        notes.append(f"{s.framework.name} makes no streams to pass")
    note = f" ({'; '.join(notes)})" if notes else ""
    return PASS, f"stream={tried} taken{note}"


def stream_zero_refused(s: DeviceSubject):
    _, error = call(s.tensor.__dlpack__, stream=0, max_version=(1, 3))
    if error is None:
        return FAIL, "stream=0 (forbidden for CUDA) was accepted"
    if isinstance(error, (ValueError, BufferError)):
        return PASS, type(error).__name__
    return FAIL, f"raised {describe_error(error)}, not ValueError or BufferError"


def stream_honoured(s: DeviceSubject):
    """Values written late on the producer's current stream (after a delay enqueued there)
    are what a consumer on another stream reads after `__dlpack__(stream=its stream)`:
    dlbridge imports with that stream and copies to the host on it, which a producer that
    did not order the streams lets run before the write."""
    import dlbridge

    framework = s.framework
    if framework.write_late is None:
        return NA, f"the checker cannot enqueue delayed work on {framework.name}'s stream"
    handle = s.new_stream()
    if handle is None:
        return NA, f"{framework.name} makes no streams to consume on"
    target = framework.make_cuda(np.zeros_like(LATE_VALUES))
    framework.write_late(target, LATE_VALUES)
    imported = dlbridge.from_dlpack(target, stream=handle)
    host = np.from_dlpack(dlbridge.from_dlpack(imported, device=(kDLCPU, 0)))
    if np.array_equal(host, LATE_VALUES):
        return PASS, f"the data was ready on the consumer's stream {handle:#x}"
    stale = int(np.count_nonzero(host != LATE_VALUES))
    return FAIL, (
        f"{stale} of {LATE_VALUES.size} values read on the consumer's stream {handle:#x} were "
        f"not yet written (the producer did not order its current stream before it)"
    )


def host_copy(s: DeviceSubject):
    capsule, error = call(s.tensor.__dlpack__, max_version=(1, 3), dl_device=(kDLCPU, 0))
    if error is not None:
        return FAIL, f"dl_device=(1, 0) raised {describe_error(error)}"
    info = read_capsule(capsule)
    if info["device"] != (kDLCPU, 0):
        return FAIL, f"dl_device=(1, 0) gave a capsule on device {info['device']}"
    values = read_values(capsule)
    if not np.array_equal(values, BASE):
        return FAIL, f"the host copy holds {values.tolist()}, not {BASE.tolist()}"
    if info["version"] is not None and not info["flags"] & FLAG_IS_COPIED:
        return FAIL, "the host copy is not flagged IS_COPIED"
    return PASS, "a host copy with the tensor's values"


def work_stream_cuda(s: DeviceSubject):
    current, outcome = table_function(s, "current_work_stream")
    if current is None:
        return outcome
    if s.framework.current_cuda_stream is None:
        return NA, f"the checker cannot ask {s.framework.name} for its current CUDA stream"
    stream = ctypes.c_void_p(STREAM_SENTINEL)
    status, error = call(current, kDLCUDA, 0, ctypes.byref(stream))
    if failure := failed_table_call(status, error):
        return failure
    if stream.value == STREAM_SENTINEL:
        return FAIL, "returned 0 without writing the stream"
    expected = int(s.framework.current_cuda_stream())
    if (stream.value or 0) != expected:
        return FAIL, f"stream {stream.value or 0:#x}, but the current stream is {expected:#x}"
    return PASS, f"the current stream, {expected:#x}"


CHECKS = {
    "device.stream-values": stream_values,
    "device.stream-zero-refused": stream_zero_refused,
    "device.stream-honoured": stream_honoured,
    "device.host-copy": host_copy,
    # The producer rule's check (`probes`), on the CUDA tensor: there a copy to the CPU is
    # needed.
    "device.copy-false-needs-copy": copy_false_needs_copy,
    "exchange.work-stream-cuda": work_stream_cuda,
}
