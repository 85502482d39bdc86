"""What the benchmark scripts share: the machine they ran on, and callgrind's dumps read back.

benches/python_exchange.py, benches/compare_builds.py and benches/instructions.py import it
(each runs from benches/, which Python puts first on its path).
"""

import os
import pathlib
import platform


def machine() -> str:
    """The CPU's model name and the number of cores this process may use."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            names = [line.split(":", 1)[1].strip() for line in cpuinfo if "model name" in line]
        model = names[0] if names else model
    except OSError:
        pass
    return f"{model}, {len(os.sched_getaffinity(0))} cores"


def total_instructions(path):
    """The instructions of one callgrind dump (0 for an empty one)."""
    for line in pathlib.Path(path).read_text().splitlines():
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1])
    return 0


def dump_parts(directory):
    """The non-empty dumps callgrind wrote into `directory` (`callgrind.out.N`), in order. A
    run that dumps at a marker before and after each row's counted calls gives, after the
    first part (everything up to the first marker), per row its counted calls and then the
    next row's warm-up: row `i` is part `2 * i + 1`. A marker may dump twice (a function and
    its alias both match): the empty parts are left out, as no part with calls is empty."""
    return [
        path
        for path in sorted(
            pathlib.Path(directory).glob("callgrind.out.*"), key=lambda path: int(path.suffix[1:])
        )
        if total_instructions(path) > 0
    ]
