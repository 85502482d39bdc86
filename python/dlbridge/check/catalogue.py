"""The catalogue of the odd tensors each framework can produce; what the framework's own
`__dlpack__` hands out for each of them is read by `capsules.reference`, without dlbridge.

It drives differential tests (dlbridge's fast import paths against the framework's
`__dlpack__`) and rules of `dlbridge check`. Each framework's kinds are its framework
module's `kinds()` (`frameworks/`, where each module's docstring says what its kinds found);
this module is the catalogue as a whole:

- `kinds(framework)` lists `Kind`s: a name, a factory that builds a fresh tensor object
  each call, and a one-line note. It imports the framework (and nothing else of the
  others): TensorFlow and PaddlePaddle crash when imported into one process, so run one
  framework's kinds per process.
- `FRAMEWORKS`: the frameworks that have a catalogue, in the registry's order.
- `python -m dlbridge.check.catalogue FRAMEWORK` prints the kind -> result table.

Nothing but the standard library, NumPy, `capsules` and the framework modules (which import
their frameworks only when called) is imported at module level.
"""

from __future__ import annotations

from . import frameworks
from .capsules import reference
from .frameworks.base import Kind
from .frameworks.numpy import NUMPY_DTYPES
from .frameworks.torch import TORCH_NEGATED_KINDS

# `Kind`, `NUMPY_DTYPES` and `TORCH_NEGATED_KINDS` are the framework modules', imported from
# here by the tests and by users.
__all__ = ["FRAMEWORKS", "NUMPY_DTYPES", "TORCH_NEGATED_KINDS", "Kind", "kinds", "main", "table"]

#: The frameworks with a catalogue, in the registry's order.
FRAMEWORKS = tuple(
    name for name, framework in frameworks.FRAMEWORKS.items() if framework.kinds is not None
)


def kinds(framework: str) -> list:
    """The catalogued kinds of `framework` (one of FRAMEWORKS); imports that framework.

    Raises ValueError for an unknown framework name.
    """
    if framework not in FRAMEWORKS:
        raise ValueError(f"unknown framework {framework!r} (known: {', '.join(FRAMEWORKS)})")
    return frameworks.FRAMEWORKS[framework].kinds()


def table(framework: str, *, max_version=(1, 3)) -> list:
    """[(kind name, one-line result)] for every kind of `framework` (builds and reads each)."""
    rows = []
    for kind in kinds(framework):
        try:
            obj = kind.make()
        except Exception as error:  # noqa: BLE001
            rows.append((kind.name, f"BUILD FAILED {type(error).__name__}: {error}"))
            continue
        result = reference(obj, max_version=max_version)
        line = result.summary()
        if result.first_error:
            line += f"  [retried after {result.first_error.splitlines()[0][:60]}]"
        rows.append((kind.name, line))
        del obj, result
    return rows


def main(argv=None) -> int:
    """`python -m dlbridge.check.catalogue FRAMEWORK [--legacy]`: prints `table`."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m dlbridge.check.catalogue",
        description="Build every catalogued kind of one framework and read its __dlpack__.",
    )
    parser.add_argument("framework", choices=FRAMEWORKS)
    parser.add_argument("--legacy", action="store_true", help="ask for a legacy capsule")
    args = parser.parse_args(argv)
    rows = table(args.framework, max_version=None if args.legacy else (1, 3))
    width = max(len(name) for name, _ in rows)
    for name, line in rows:
        print(f"{name:<{width}}  {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
