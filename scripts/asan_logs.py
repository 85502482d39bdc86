"""Judges the AddressSanitizer / LeakSanitizer reports of a sanitizer run.

    python scripts/asan_logs.py LOG_DIR              # the exchange tests' reports
    python scripts/asan_logs.py --expect-overflow LOG_DIR   # the canary's

Every file `asan.<pid>` directly in LOG_DIR is one process's report. The run fails on any
error report (an invalid read or write, a use after free, a double or invalid free), and on
any leak whose allocation stack passes through dlbridge code (a frame in the extension module
or in a dlbridge crate). Leaks that do not (the interpreter's, NumPy's and PyTorch's objects
still alive at exit) are summed and their origins listed, but do not fail the run.

With --expect-overflow, the run passes only when a heap-buffer-overflow was reported inside
dlbridge code: proof that the extension was instrumented and the runtime was watching.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import re
import sys
import typing

ERROR = re.compile(r"^(?:==\d+==)?(?:ERROR: )?(AddressSanitizer|LeakSanitizer): (.*)$")
LEAK = re.compile(r"^(Direct|Indirect) leak of (\d+) byte\(s\) in (\d+) object\(s\)")
FRAME = re.compile(r"^\s+#(\d+) 0x[0-9a-f]+ (?:in )?(.*)$")
OURS = re.compile(r"dlbridge")
# Frames of the allocator itself, skipped when naming where a leak comes from.
ALLOCATOR = re.compile(r"malloc|calloc|realloc|operator new|asan_|gc_alloc|_PyObject_GC_New")


class Report(typing.NamedTuple):
    """One error report, or one leak record, of one process's log."""

    file: str
    kind: str  # "error" or "leak"
    title: str
    frames: list
    size: int = 0  # leaks: bytes
    objects: int = 0  # leaks: allocations

    def through_dlbridge(self) -> bool:
        return any(OURS.search(frame) for frame in self.frames)


def reports(directory: pathlib.Path):
    """Every error report and every leak record in the logs, as `Report`s."""
    for path in sorted(directory.glob("asan.*")):
        current = None
        for line in [*path.read_text(errors="replace").splitlines(), ""]:
            error = ERROR.match(line)
            leak = LEAK.match(line)
            frame = FRAME.match(line)
            if frame and current is not None:
                current.frames.append(frame.group(2))
                continue
            if current is not None and (
                error or leak or not line.strip() or line.startswith("SUMMARY")
            ):
                yield current
                current = None
            if error and error.group(1) == "AddressSanitizer" and "leaked" not in error.group(2):
                current = Report(path.name, "error", error.group(2), [])
            elif leak:
                current = Report(
                    path.name, "leak", line.strip(), [], int(leak.group(2)), int(leak.group(3))
                )


def origin(frames: list[str]) -> str:
    for frame in frames:
        if not ALLOCATOR.search(frame):
            return frame[:120]
    return frames[-1][:120] if frames else "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log_dir", type=pathlib.Path)
    parser.add_argument("--expect-overflow", action="store_true")
    args = parser.parse_args()

    files = sorted(args.log_dir.glob("asan.*"))
    found = list(reports(args.log_dir))
    errors = [r for r in found if r.kind == "error"]
    leaks = [r for r in found if r.kind == "leak"]

    if args.expect_overflow:
        caught = [
            r for r in errors if r.title.startswith("heap-buffer-overflow") and r.through_dlbridge()
        ]
        if caught:
            where = next(f for f in caught[0].frames if OURS.search(f))
            print(f"asan-logs: canary caught: {caught[0].title.split(' on ')[0]} in {where[:100]}")
            return 0
        print(
            "asan-logs: the canary's out-of-bounds read was NOT reported: the extension is "
            "not instrumented or the runtime is not loaded; the run proves nothing"
        )
        return 1

    ours = [r for r in leaks if r.through_dlbridge()]
    foreign = [r for r in leaks if not r.through_dlbridge()]
    foreign_bytes = sum(r.size for r in foreign)
    foreign_objects = sum(r.objects for r in foreign)

    for r in errors:
        print(f"asan-logs: ERROR in {r.file}: {r.title}")
        for frame in r.frames[:12]:
            print(f"    {frame}")
    for r in ours:
        print(f"asan-logs: LEAK through dlbridge in {r.file}: {r.title}")
        for frame in r.frames[:16]:
            print(f"    {frame}")
    print(
        f"asan-logs: {len(files)} process reports; {len(errors)} errors; "
        f"{len(ours)} leaks through dlbridge; {foreign_bytes} bytes in {foreign_objects} "
        f"objects leaked at exit by the interpreter and the frameworks"
    )
    if foreign:
        by_origin = collections.Counter()
        for r in foreign:
            by_origin[origin(r.frames)] += r.size
        for where, size in by_origin.most_common(5):
            print(f"    {size:>8} bytes from {where}")
    return 1 if errors or ours else 0


if __name__ == "__main__":
    sys.exit(main())
