"""`dlbridge check`: a DLPack conformance checker for any framework.

`python -m dlbridge check [NAME ...]` (or the `dlbridge check` console script) tells a
framework, rule by rule, where it breaks the standard: its producer (`__dlpack__`,
`__dlpack_device__`, the C exchange table), its consumer (`from_dlpack` fed with producers
built here that send what the standard allows), and its interop with every other installed
framework. Each framework runs in processes of its own, so one that crashes or hangs is
reported as such.

Modules: `rules` (the rules, their level and section), `producer_checks`, `consumer_checks`,
`matrix`, `frameworks` (how each framework is driven), `producers` (the ctypes toolkit of
hand-built tensors), `exchange_table` (the C table through ctypes), `worker` (the
subprocess side), `cli` (orchestration), `report` (text, Markdown, JSON).
"""

from .cli import main, run
from .rules import MUST, RULES, SHOULD, Rule

__all__ = ["MUST", "RULES", "SHOULD", "Rule", "main", "run"]
