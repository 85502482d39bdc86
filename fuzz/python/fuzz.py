"""Runs one of dlbridge's atheris fuzzers, the modules of this folder:

- `capsules`: capsules, producers, `from_dlpack`'s keywords and typed kernel arguments;
- `rebuild`: distributed frames and pickle arguments, corrupted.

    .venv/bin/python fuzz/python/fuzz.py TARGET [libFuzzer options] [corpus dir]

Each target module defines `test_one_input(bytes)`; it and the `dlbridge` package's Python
code are instrumented for coverage. The Rust extension is guided too where it was built for
it: `make fuzz-python` builds it a second time with LLVM's SanitizerCoverage (inline 8-bit
counters, PC tables, comparison tracing: what libFuzzer reads) and places it with a copy of
the package in a folder named by DLBRIDGE_FUZZ_EXTENSION. The extension's coverage counters
register when it is loaded, with the libFuzzer that runs the inputs, whose symbols must then
be global: atheris loads its libFuzzer only when fuzzing starts, so the target module (and
with it `dlbridge`) is imported on the first input, after libFuzzer's library is made global.
Without the variable the installed package is used, and only Python code guides the search.
"""

from __future__ import annotations

import ctypes
import glob
import importlib
import os
import sys

import atheris

#: The fuzz targets: modules of this folder.
TARGETS = ("capsules", "rebuild")


def _use_instrumented_extension(folder: str) -> None:
    """Makes the libFuzzer atheris loaded global, and puts the instrumented package first on
    the path."""
    if not os.path.isdir(os.path.join(folder, "dlbridge")):
        raise FileNotFoundError(f"DLBRIDGE_FUZZ_EXTENSION={folder} holds no dlbridge package")
    libraries = glob.glob(os.path.join(os.path.dirname(atheris.__file__), "core_with_libfuzzer*"))
    if not libraries:
        raise FileNotFoundError("atheris has no core_with_libfuzzer library")
    # RTLD_NOLOAD: the library atheris already loaded, promoted to the global scope.
    ctypes.CDLL(libraries[0], mode=os.RTLD_NOW | os.RTLD_GLOBAL | os.RTLD_NOLOAD)
    sys.path.insert(0, folder)


def main() -> None:
    # libFuzzer's -merge and -fork run the command again, from its argv through the shell:
    # the interpreter goes into argv[0], the target into the environment.
    target = os.environ.get("DLBRIDGE_FUZZ_TARGET")
    if target is None:
        if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
            sys.exit(f"usage: {sys.argv[0]} {{{','.join(TARGETS)}}} [libFuzzer options] [corpus]")
        target = os.environ["DLBRIDGE_FUZZ_TARGET"] = sys.argv.pop(1)
    sys.argv[0] = f"{sys.executable} {os.path.abspath(__file__)}"
    extension = os.environ.get("DLBRIDGE_FUZZ_EXTENSION")
    # Imported first, so not instrumented: the test's own tools.
    import numpy as np  # noqa: F401

    run = None

    def test_one_input(data: bytes) -> None:
        nonlocal run
        if run is None:
            if extension:
                _use_instrumented_extension(extension)
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            with atheris.instrument_imports(include=[target, "dlbridge"]):
                run = importlib.import_module(target).test_one_input
            where = importlib.import_module("dlbridge._dlbridge").__file__
            print(f"fuzz.py: {target} against {where}", file=sys.stderr)
        run(data)

    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
