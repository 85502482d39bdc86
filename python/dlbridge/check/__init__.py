"""`dlbridge check`: a DLPack conformance checker for any framework.

`python -m dlbridge check [NAME ...]` (or the `dlbridge check` console script) tells a
framework, rule by rule, where it breaks the standard: its producer (`__dlpack__`,
`__dlpack_device__`, the C exchange table), its consumer (`from_dlpack` fed with producers
built here that send what the standard allows), and its interop with every other installed
framework. Each framework runs in processes of its own, so one that crashes or hangs is
reported as such.

Modules, in floors from the ground up: each imports only modules on floors below its own,
never a sibling on its floor (`scripts/module-layers.py` checks it):
1. `rules`: the rules (level, section, text) and the outcome vocabulary; `abi`: the C ABI of
   `dlpack.h` in ctypes (structs, constants, capsule names, the C exchange table's layout and
   prototypes); `capi`: the functions of Python's C API called through ctypes, bound once;
2. `capsules`: what a producer hands out, read without dlbridge (tensor capsules, the
   reference reader `reference`, the C exchange table a type publishes); `records`:
   hand-built managed tensors with any field values and counted deleters;
3. `capsule_only`: `CapsuleOnly`, the adapter for frameworks with DLPack functions but no
   `__dlpack__` (MXNet), and the rules that say nothing about them; `fake_producers`: hostile
   and odd producers over hand-built tensors (fed to consumers);
4. `frameworks`: the frameworks the checker knows, one module each (how its tensors are made
   and read back, its `from_dlpack`, its catalogue of odd tensors, its CUDA tensors and
   streams, its import quirks), following the protocol of `frameworks.base`, in the order of
   the registry `frameworks.REGISTRY`;
5. `catalogue`: the odd tensors of every framework; `probes`: what the check families share
   (the tensors probed, calls whose exception is a finding, values read back, the C exchange
   table's members);
6. the check families, side by side: `producer_checks`, `exchange_checks` (the C exchange
   table), `device_checks` (CUDA tensors), `consumer_checks`, `matrix` (the interop matrix);
7. `report`: text, Markdown, JSON (`report_schema.json`); `report_junit`: JUnit XML;
   `report_html`: the HTML report; `baseline`: a report compared with an earlier one;
   `worker`: the subprocess side;
8. `cli`: orchestration and the exit status; then this package's own module.

A framework the checker does not know is described by a module of the user's that follows the
framework module protocol (`frameworks.base`; docs/check-frameworks.md), `Kind` being one
named tensor of its catalogue.

The checker builds its tensors with NumPy, which dlbridge itself does not need: it comes with
the extra `check` (`pip install "dlbridge[check]"`). Without it, importing this package raises
`ModuleNotFoundError` (for the module `numpy`) saying so.
"""


def _require_numpy() -> None:
    """Raises ModuleNotFoundError naming the extra `check` where NumPy is missing."""
    try:
        import numpy as np  # noqa: F401 (only whether it is there)
    except ImportError as missing:
        raise ModuleNotFoundError(
            "the DLPack conformance checker needs NumPy, which is not installed: "
            'pip install "dlbridge[check]"',
            name="numpy",
        ) from missing


_require_numpy()

# After the check above, so that a missing NumPy is reported as such.
from .capsule_only import CapsuleOnly  # noqa: E402
from .cli import FrameworkUnusable, exit_status, main, run  # noqa: E402
from .frameworks.base import Kind  # noqa: E402
from .rules import MUST, RULES, SHOULD, Rule  # noqa: E402

__all__ = [
    "MUST",
    "RULES",
    "SHOULD",
    "CapsuleOnly",
    "FrameworkUnusable",
    "Kind",
    "Rule",
    "exit_status",
    "main",
    "run",
]
