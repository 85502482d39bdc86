"""`python -m dlbridge VERB ...`: the command line. One verb so far, `check`."""

import sys


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(
            "usage: dlbridge check [NAME ...] [--json | --markdown] [--no-matrix]\n\n"
            "  check   DLPack conformance of installed frameworks (see dlbridge check -h)"
        )
        return 0 if argv else 2
    verb, rest = argv[0], argv[1:]
    if verb == "check":
        from .check import main as check

        return check(rest)
    print(f"dlbridge: unknown verb {verb!r} (known: check)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
