"""scripts/timed-stages.sh, which runs `make test`'s stages: targets joined by `+` run at the
same time, the output of those beside the first is shown after it, and a failure of any target
of a stage fails the run there with its exit status and the table so far."""

from __future__ import annotations

import pathlib
import subprocess

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "timed-stages.sh"

# `left` and `right` meet: each leaves a mark and waits (up to 20 s) for the other's, so
# they both succeed only when they run at the same time.
MAKEFILE = """\
left:
\t@echo left-start; touch left.mark; \\
\t for i in $$(seq 200); do [ -e right.mark ] && break; sleep 0.1; done; \\
\t [ -e right.mark ] && echo left-end
right:
\t@echo right-start; touch right.mark; \\
\t for i in $$(seq 200); do [ -e left.mark ] && break; sleep 0.1; done; \\
\t [ -e left.mark ] && echo right-end
quick:
\t@echo quick
broken:
\t@echo broken-said-this; exit 3
never:
\t@echo never-ran
"""


def _run(tmp_path, *stages):
    (tmp_path / "Makefile").write_text(MAKEFILE)
    return subprocess.run(
        ["bash", str(SCRIPT), f"make -C {tmp_path}", *stages],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "TIMED_STAGES_LOGS": str(tmp_path / "logs")},
    )


def _table(output: str) -> dict[str, list[str]]:
    table = output.split("seconds per stage", 1)[1].splitlines()[2:]
    return {line.split()[0]: line.split()[1:] for line in table if line.strip()}


def test_targets_of_one_stage_run_at_the_same_time(tmp_path):
    result = _run(tmp_path, "quick", "left+right")
    assert result.returncode == 0, result.stdout + result.stderr
    table = _table(result.stdout)
    assert table["left"][1:] == []
    assert table["right"][1] == "beside-left"
    # The one beside is shown after the first, in one piece.
    out = result.stdout
    assert out.index("left-end") < out.index("=== right (ran beside left)")
    assert out.index("=== right") < out.index("right-start") < out.index("right-end")
    assert (tmp_path / "logs" / "right.log").read_text().split() == ["right-start", "right-end"]


def test_a_failure_beside_the_first_fails_the_run_with_its_output(tmp_path):
    result = _run(tmp_path, "quick+broken", "never")
    assert result.returncode != 0
    assert "broken-said-this" in result.stdout
    assert "never-ran" not in result.stdout
    table = _table(result.stdout)
    assert table["broken"][1] == "failed,beside-quick"
    assert "never" not in table


def test_a_failing_first_target_still_shows_the_one_beside_it(tmp_path):
    result = _run(tmp_path, "broken+quick")
    assert result.returncode != 0
    assert "=== quick (ran beside broken)" in result.stdout
    table = _table(result.stdout)
    assert table["broken"][1] == "failed"
    assert table["quick"][1] == "beside-broken"


def test_one_target_a_stage_is_the_sequence_it_always_was(tmp_path):
    result = _run(tmp_path, "quick", "broken", "never")
    assert result.returncode == 2  # make's status for a failed recipe
    assert "never-ran" not in result.stdout
    assert list(_table(result.stdout)) == ["quick", "broken", "total"]
