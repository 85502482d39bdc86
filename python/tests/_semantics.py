"""One semantics on every path: each way dlbridge reads a tensor, compared with what the
producer's own `__dlpack__` hands out (the reference, read with ctypes by
`dlbridge.check.capsules.reference`, without dlbridge).

For every kind of `dlbridge.check.catalogue`, `check_kind` runs the paths below and returns
the mismatches (an empty list when every path agrees):

- `from_dlpack`: `dlbridge.from_dlpack(x)` (the exchange table, NumPy's array struct or
  `__dlpack__`, whichever the type takes), and for a refused kind also with `copy=True` and
  `copy=False` (compared with `__dlpack__(copy=...)`; where `copy=True` is refused with
  `BufferError`, with the plain call's answer, since dlbridge then asks without `copy` and
  copies itself);
- the raw capsules `x.__dlpack__(max_version=(1, 3))` and `x.__dlpack__()` (legacy, which is
  read-only for every consumer that can express it);
- typed arguments, read (`TensorArg`) and written (`TensorArgMut`), through
  `kernels.inspect_argument`, which runs their extraction and says which path it took;
- the buffer protocol, by handing the typed arguments `memoryview(x)` where it exists.

The answer must equal the reference's in values (element bytes), data type, shape, strides
(up to extent-1 dimensions), device, data address (zero-copy) and writability; a refusal
must be of the reference's exception class. Documented departures:

- stricter: a refusal (`BufferError`) where the reference exports wrong data
  (`STRICTER`: PyTorch's views with a lazy negation bit);
- a typed argument reads a tensor autograd tracks as `x.detach()` (the reference refuses
  `x`); a writable one refuses it while grad mode is on (`TypeError`), and refuses an
  inference tensor outside inference mode, as PyTorch's in-place operations do.

`python _semantics.py FRAMEWORK` checks every kind of one framework and prints the
mismatches as JSON: the tests run it in a process of its own with
`DLBRIDGE_NO_EXCHANGE_API=1`, where the reference path replaces the exchange table.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass

from dlbridge.check import capsules, catalogue
from dlbridge.check.capsules import Exported, Refused, normalized_strides

HERE = os.path.dirname(os.path.abspath(__file__))

#: Kinds the reference exports with wrong values and dlbridge refuses, with a word of the
#: refusal's message.
STRICTER = {("torch", name): "negation bit" for name in catalogue.TORCH_NEGATED_KINDS}


def _framework_of(obj) -> str:
    return type(obj).__module__.split(".")[0]


def tracked(obj) -> bool:
    """Whether autograd tracks `obj` (a PyTorch tensor that requires grad, a PaddlePaddle one
    with stop_gradient=False)."""
    framework = _framework_of(obj)
    if framework == "torch":
        return bool(obj.requires_grad)
    if framework == "paddle":
        return not obj.stop_gradient
    return False


def grad_enabled(obj) -> bool:
    framework = _framework_of(obj)
    if framework == "torch":
        import torch

        return torch.is_grad_enabled()
    import paddle

    return paddle.is_grad_enabled()


def inference_write_refused(obj) -> bool:
    """Whether PyTorch's in-place operations refuse to write `obj` now: an inference tensor
    outside inference mode."""
    if _framework_of(obj) != "torch":
        return False
    import torch

    return obj.is_inference() and not torch.is_inference_mode_enabled()


def untracked(obj):
    """`obj` as a typed argument reads it: `obj.detach()` when autograd tracks it."""
    return obj.detach() if tracked(obj) else obj


@dataclass(frozen=True)
class Seen:
    """What one path made of a tensor, comparable with a reference `Exported`."""

    dtype: tuple[int, int, int]
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    device: tuple[int, int]
    data: int
    elements: bytes | None
    read_only: bool
    path: str = ""


def _seen_through_dlbridge(tensor, path: str) -> Seen:
    """A `dlbridge.Tensor`, read back through its own `__dlpack__` with the reference reader
    (so that its versioned export says READ_ONLY where dlbridge holds it read-only)."""
    exported = capsules.reference(tensor)
    assert isinstance(exported, Exported), exported
    return Seen(
        exported.dtype,
        exported.shape,
        exported.strides,
        exported.device,
        exported.data,
        exported.elements,
        exported.read_only,
        path,
    )


def _seen_by_argument(inspection: dict) -> Seen:
    return Seen(
        tuple(inspection["dtype_code"]),
        tuple(inspection["shape"]),
        tuple(inspection["strides"]),
        tuple(inspection["device"]),
        inspection["data"],
        inspection["bytes"],
        inspection["read_only"],
        inspection["path"],
    )


def _differences(expected: Exported, seen: Seen, *, writability: bool) -> list[str]:
    wrong = []
    if seen.dtype != expected.dtype:
        wrong.append(f"dtype {seen.dtype} != {expected.dtype}")
    if seen.shape != expected.shape:
        wrong.append(f"shape {seen.shape} != {expected.shape}")
    elif normalized_strides(seen.shape, seen.strides) != normalized_strides(
        expected.shape, expected.strides
    ):
        wrong.append(f"strides {seen.strides} != {expected.strides}")
    if seen.device != expected.device:
        wrong.append(f"device {seen.device} != {expected.device}")
    if expected.size and not expected.is_copied and seen.data != expected.data:
        wrong.append(f"data {seen.data:#x} != {expected.data:#x} (not zero-copy)")
    if (
        expected.elements is not None
        and seen.elements is not None
        and seen.elements != expected.elements
    ):
        wrong.append("element values differ")
    if writability and seen.read_only != expected.read_only:
        wrong.append(f"read_only {seen.read_only} != {expected.read_only}")
    return wrong


def _attempt(function):
    try:
        return function(), None
    except Exception as error:  # noqa: BLE001 - every exception is an answer here
        return None, error


def _judge(
    problems: list[str],
    path: str,
    expected,
    attempt,
    *,
    writability: bool = True,
    stricter: str | None = None,
) -> Seen | None:
    """Compares one path's outcome with the expected one (an `Exported`, a `Refused`, or an
    exception class name), appending mismatches to `problems`."""
    seen, error = attempt
    if isinstance(expected, str):
        expected = Refused(expected, "")
    if isinstance(expected, Refused) or stricter:
        wanted = "BufferError" if stricter and not isinstance(expected, Refused) else None
        wanted = wanted or expected.exception
        if error is None:
            problems.append(f"{path}: accepted what the reference refuses ({wanted})")
        elif type(error).__name__ != wanted:
            problems.append(
                f"{path}: raised {type(error).__name__} ({str(error).splitlines()[0][:100]}) "
                f"where the reference raises {wanted}"
            )
        elif stricter and not isinstance(expected, Refused) and stricter not in str(error):
            problems.append(f"{path}: refused without saying '{stricter}': {error}")
        return None
    if error is not None:
        problems.append(
            f"{path}: raised {type(error).__name__}: {str(error).splitlines()[0][:120]} "
            f"where the reference exports {expected.summary()}"
        )
        return None
    problems.extend(
        f"{path}: {difference}"
        for difference in _differences(expected, seen, writability=writability)
    )
    return seen


def check_kind(kind) -> tuple[list[str], dict[str, str]]:
    """Every path for one catalogue kind: the mismatches, and the path each typed argument
    took (`exchange`, `exchange-export`, `numpy`, `buffer`, `dlpack`)."""
    import dlbridge
    from _kernels import kernels

    problems: list[str] = []
    paths: dict[str, str] = {}
    x = kind.make()
    reference = capsules.reference(x)
    if not hasattr(x, "__dlpack__"):
        # Not a producer at all: dlbridge says so with TypeError (the protocol's answer).
        reference = Refused("TypeError", "not a DLPack producer")
    stricter = STRICTER.get((kind.framework, kind.name))

    # from_dlpack, and what `copy=` changes about a refusal.
    _judge(
        problems,
        "from_dlpack",
        reference,
        _attempt(lambda: _seen_through_dlbridge(dlbridge.from_dlpack(x), "from_dlpack")),
        stricter=stricter,
    )
    if isinstance(reference, Refused):
        for copy in (True, False):
            refusal = capsules.reference(x, copy=copy)
            if not hasattr(x, "__dlpack__") or (
                copy and isinstance(refusal, Refused) and refusal.exception == "BufferError"
            ):
                # A producer that cannot copy: dlbridge asks again without `copy` (to copy
                # here), so the plain call's answer is the one to give.
                refusal = reference
            if isinstance(refusal, Refused):
                _judge(
                    problems,
                    f"from_dlpack(copy={copy})",
                    refusal,
                    _attempt(lambda copy=copy: dlbridge.from_dlpack(x, copy=copy)),
                )

    # Raw capsules.
    def through_versioned_capsule():
        capsule = x.__dlpack__(max_version=(1, 3))
        return _seen_through_dlbridge(dlbridge.from_dlpack(capsule), "capsule")

    if not isinstance(reference, Refused):
        _judge(problems, "versioned capsule", reference, _attempt(through_versioned_capsule))
    legacy = capsules.reference(x, max_version=None)
    if isinstance(legacy, Exported):
        _judge(
            problems,
            "legacy capsule",
            legacy,
            _attempt(
                lambda: _seen_through_dlbridge(dlbridge.from_dlpack(x.__dlpack__()), "legacy")
            ),
        )

    # Typed arguments: read as `x.detach()`; written only outside autograd.
    read_reference = reference
    if tracked(x):
        read_reference = capsules.reference(untracked(x))
    seen = _judge(
        problems,
        "TensorArg",
        read_reference,
        _attempt(lambda: _seen_by_argument(kernels.inspect_argument(x, False))),
        writability=False,
        stricter=stricter,
    )
    if seen is not None:
        paths["TensorArg"] = seen.path
    write_expected = read_reference
    if (tracked(x) and grad_enabled(x)) or inference_write_refused(x):
        write_expected = "TypeError"
    seen = _judge(
        problems,
        "TensorArgMut",
        write_expected,
        _attempt(lambda: _seen_by_argument(kernels.inspect_argument(x, True))),
        stricter=stricter if not isinstance(write_expected, str) else None,
    )
    if seen is not None:
        paths["TensorArgMut"] = seen.path

    # The buffer protocol, where the object has one and the reference exports a data type
    # that the buffer protocol can name (bfloat16 and float8 have no `struct` format: a
    # buffer shows their bits as unsigned integers, which is what a memoryview then is).
    view, error = _attempt(lambda: memoryview(x))
    nameable = isinstance(reference, Exported) and reference.dtype[0] in _BUFFER_CODES
    if error is None and nameable and not stricter:
        for writable in (False, True):
            name = f"buffer {'TensorArgMut' if writable else 'TensorArg'}"
            buffer_seen, buffer_error = _attempt(
                lambda writable=writable: _seen_by_argument(
                    kernels.inspect_argument(view, writable)
                )
            )
            if buffer_error is not None and isinstance(buffer_error, (TypeError, BufferError)):
                # A format the buffer path does not take, and a memoryview has no __dlpack__:
                # nothing to compare.
                continue
            _judge(
                problems,
                name,
                reference,
                (buffer_seen, buffer_error),
                writability=writable and not view.readonly and not reference.read_only,
            )
            if buffer_seen is not None:
                paths[name] = buffer_seen.path
        view.release()
    return [f"{kind.framework}.{kind.name}: {problem}" for problem in problems], paths


#: DLPack type codes with a `struct` format: int, uint, float (IEEE), complex, bool.
_BUFFER_CODES = frozenset({0, 1, 2, 5, 6})


def check_framework(framework: str) -> tuple[list[str], dict[str, dict[str, str]]]:
    """`check_kind` for every kind of one framework."""
    problems: list[str] = []
    paths: dict[str, dict[str, str]] = {}
    for kind in catalogue.kinds(framework):
        found, taken = check_kind(kind)
        problems += found
        paths[kind.name] = taken
    return problems, paths


def every_path_test(framework: str):
    """A pytest test function checking every kind of `framework` (one test per kind), for an
    interop file to bind to a `test_*` name."""
    import pytest

    @pytest.mark.parametrize("kind", catalogue.kinds(framework), ids=lambda kind: kind.name)
    def test_every_path_gives_the_answer_of_dlpack(kind):
        problems, _ = check_kind(kind)
        assert problems == []

    return test_every_path_gives_the_answer_of_dlpack


if __name__ == "__main__":
    found, taken = check_framework(sys.argv[1])
    print(json.dumps({"problems": found, "paths": taken}))
