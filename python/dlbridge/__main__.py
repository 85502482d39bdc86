"""`python -m dlbridge VERB ...`: the command line. One verb so far, `check`; and `--version`."""

from __future__ import annotations

import sys

USAGE = (
    "usage: dlbridge check [NAME ...] [--json | --markdown] [--no-matrix]\n"
    "       dlbridge --version\n\n"
    "  check      DLPack conformance of installed frameworks (see dlbridge check -h)\n"
    "  --version  print dlbridge's version and exit"
)


def main(argv: list[str] | None = None) -> int:
    """Runs the command line on `argv` (default: `sys.argv[1:]`); returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    verb, rest = argv[0], argv[1:]
    if verb in ("-V", "--version"):
        from . import __version__

        print(f"dlbridge {__version__}")
        return 0
    if verb == "check":
        try:
            from .check import main as check
        except ModuleNotFoundError as missing:
            # Only NumPy, the extra `check`, is expected to be missing: anything else is a
            # broken installation, shown as it is.
            if missing.name != "numpy":
                raise
            print(f"dlbridge check: {missing}", file=sys.stderr)
            return 2
        return check(rest)
    print(f"dlbridge: unknown verb {verb!r} (known: check, --version)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
