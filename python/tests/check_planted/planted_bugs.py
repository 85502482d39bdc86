"""plantedlib with planted bugs, described for `dlbridge check`: planted_good.py's description
with the bugs that the environment variable PLANTED_BUGS names (comma-separated, from
plantedlib.ALL_BUGS), read when this module is imported, so the checker's worker processes,
which inherit the environment, see them too:

    PLANTED_BUGS=no-rename python -m dlbridge check python/tests/check_planted/planted_bugs.py

Its NAME says the bugs: plantedlib[no-rename]. An unknown bug name fails the import (and so
the run, with exit status 2).
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import sys

_HERE = pathlib.Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import plantedlib  # noqa: E402 - beside this file, on the path only now

_BUGS = plantedlib.parse_bugs(os.environ.get("PLANTED_BUGS", ""))

# A copy of planted_good's description of its own (not the module `planted_good`, which another
# description in the same process may use), with the bugs set: its functions read them there.
_spec = importlib.util.spec_from_file_location(
    f"_planted_good_with_{'_'.join(sorted(_BUGS)) or 'none'}", _HERE / "planted_good.py"
)
_description = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_description)
_description.BUGS = _BUGS
_description.NAME = f"plantedlib[{','.join(sorted(_BUGS))}]" if _BUGS else "plantedlib"

NAME = _description.NAME
MODULE = _description.MODULE
BUGS = _BUGS
version = _description.version
make = _description.make
make_read_only = _description.make_read_only
consume = _description.consume
consume_copy = _description.consume_copy
to_numpy = _description.to_numpy
read_only = _description.read_only
kinds = _description.kinds
