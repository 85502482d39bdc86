"""`dlbridge check` on a framework it does not know: plantedlib (check_planted/plantedlib.py), a
small tensor library described by a module of its own (check_planted/planted_good.py),
checked as a producer, as a consumer and in the interop matrix, with six bugs planted one at
a time (check_planted/planted_bugs.py, PLANTED_BUGS), each found by the rule meant for it and
the failures that follow from it marked `caused_by`; the runs that cannot check anything stop
with exit status 2 and one line saying why (no silent green); and MLX described as a user
would (check_planted/mlx_dlpack.py), where it is installed.

Every run is `python -m dlbridge check ... --json --quiet` in a process of its own, with the
folder check_planted on PYTHONPATH. The three long runs (the good library, the matrix, MLX)
start together when the file's first test runs and are read by the tests at its end.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

from _frameworks import import_framework

PLANTED = pathlib.Path(__file__).resolve().parent / "check_planted"
GOOD = str(PLANTED / "planted_good.py")
BUGGY = str(PLANTED / "planted_bugs.py")
MLX = str(PLANTED / "mlx_dlpack.py")

#: The outcomes that are findings other than a failed rule: never in a run that checked well.
BROKEN = ("error", "crash", "hang")


def _command(names, rules=(), *, matrix: bool = False) -> list:
    command = [sys.executable, "-m", "dlbridge", "check", *names, "--json", "--quiet"]
    if not matrix:
        command.append("--no-matrix")
    for rule in rules:
        command += ["--rule", rule]
    return command


def _environment(bugs=None) -> dict:
    """This process's environment, with check_planted on PYTHONPATH and PLANTED_BUGS set to
    `bugs` (a comma-separated string), or unset."""
    path = os.pathsep.join(filter(None, [str(PLANTED), os.environ.get("PYTHONPATH")]))
    environment = dict(os.environ, PYTHONPATH=path)
    environment.pop("PLANTED_BUGS", None)
    if bugs is not None:
        environment["PLANTED_BUGS"] = bugs
    return environment


def _check(*names, rules=(), bugs=None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        _command(names, rules),
        capture_output=True,
        text=True,
        env=_environment(bugs),
        cwd=cwd,
        timeout=300,
        check=False,
    )


def _report(run: subprocess.CompletedProcess) -> dict:
    assert run.returncode in (0, 1), f"exit status {run.returncode}: {run.stderr[-2000:]}"
    return json.loads(run.stdout)


def _by_rule(report: dict, framework: str) -> dict:
    return {result["rule"]: result for result in report["frameworks"][framework]}


def _found(results: dict) -> dict:
    """{rule: result} of the findings (a failure, error, crash or hang)."""
    return {rule: r for rule, r in results.items() if r["outcome"] not in ("pass", "n/a")}


# ---- the long runs, started together -------------------------------------------------------


class LongRuns:
    """The runs that take seconds each (the consumer rules import PyTorch and PaddlePaddle to
    feed what they refuse), started at once in processes of their own."""

    def __init__(self):
        self.processes: dict = {}
        self.start("good", [GOOD])
        self.start("matrix", [GOOD, "numpy"], matrix=True)
        if importlib.util.find_spec("mlx") is not None:
            self.start("mlx", [MLX])

    def start(self, key: str, names: list, *, matrix: bool = False) -> None:
        self.processes[key] = subprocess.Popen(
            _command(names, matrix=matrix),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_environment(),
        )

    def result(self, key: str) -> subprocess.CompletedProcess:
        process = self.processes[key]
        stdout, stderr = process.communicate(timeout=300)
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
            process.communicate()


@pytest.fixture(scope="module", autouse=True)
def long_runs():
    runs = LongRuns()
    yield runs
    runs.stop()


# ---- six planted bugs, each found by its rule ---------------------------------------------------

#: bug -> (the rule meant to find it, the rules that fail with it and follow from it, other
#: rules run alongside with their outcomes).
PLANTED_BUGS = {
    "null-strides": (
        "producer.strides-present",
        ("producer.values", "producer.zero-size"),
        {"producer.legacy-without-max-version": "pass"},
    ),
    "read-only-unflagged": (
        "producer.read-only-flag",
        (),
        {"producer.read-only-legacy-refused": "fail", "producer.values": "pass"},
    ),
    "copy-ignored": ("producer.copy-flag", (), {"producer.no-copy-shares": "pass"}),
    "no-rename": (
        "consumer.renames-capsule",
        (
            "consumer.deleter-once",
            "consumer.legacy-capsule",
            "consumer.null-strides",
            "consumer.major-version-2",
        ),
        {"consumer.keeps-dtype-and-values": "pass"},
    ),
    "ignores-byte-offset": ("consumer.byte-offset", (), {"consumer.legacy-capsule": "pass"}),
    "narrows-int64": (
        "consumer.keeps-dtype-and-values",
        (),
        {"consumer.versioned-capsule": "pass"},
    ),
}


@pytest.mark.parametrize("bug", list(PLANTED_BUGS))
def test_a_planted_bug_is_found_by_its_rule(bug):
    root, followers, others = PLANTED_BUGS[bug]
    run = _check(BUGGY, rules=[root, *followers, *others], bugs=bug)
    assert run.returncode == 1, run.stderr
    results = _by_rule(_report(run), f"plantedlib[{bug}]")
    assert set(results) == {root, *followers, *others}
    assert results[root]["outcome"] == "fail", results[root]
    assert "caused_by" not in results[root]
    for follower in followers:
        assert results[follower]["outcome"] == "fail", results[follower]
        assert results[follower].get("caused_by") == root, results[follower]
    for other, outcome in others.items():
        assert results[other]["outcome"] == outcome, results[other]
        assert "caused_by" not in results[other], results[other]


def test_the_read_only_bug_also_fails_the_legacy_refusal():
    run = _check(
        BUGGY,
        rules=["producer.read-only-flag", "producer.read-only-legacy-refused"],
        bugs="read-only-unflagged",
    )
    results = _by_rule(_report(run), "plantedlib[read-only-unflagged]")
    flag, legacy = results["producer.read-only-flag"], results["producer.read-only-legacy-refused"]
    assert flag["outcome"] == legacy["outcome"] == "fail"
    # make_read_only, the kind read_only and the kind frozen_bytes, each.
    for label in ("make_read_only", "kind read_only", "kind frozen_bytes"):
        assert f"{label}: flags 0x0 without READ_ONLY" in flag["detail"]
        assert f"{label}: a legacy capsule was made for read-only data" in legacy["detail"]


def test_a_consumer_bug_leaves_the_producer_rules_alone():
    """The consumer's bugs are the consumer's: its tensors still export as they should."""
    run = _check(
        BUGGY,
        rules=["producer.values", "producer.no-leak", "consumer.byte-offset"],
        bugs="no-rename,ignores-byte-offset,narrows-int64",
    )
    results = _by_rule(_report(run), "plantedlib[ignores-byte-offset,narrows-int64,no-rename]")
    assert results["producer.values"]["outcome"] == "pass"
    assert results["producer.no-leak"]["outcome"] == "pass"
    assert results["consumer.byte-offset"]["outcome"] == "fail"


# ---- nothing checked: exit status 2, one line saying why -------------------------------------


def _refused(run: subprocess.CompletedProcess) -> str:
    """The one line a run that checks nothing writes (exit status 2, nothing on stdout)."""
    assert run.returncode == 2, (run.returncode, run.stdout[-500:], run.stderr[-2000:])
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("dlbridge check: error: cannot check ")
    return lines[0]


def test_a_factory_whose_module_does_not_import():
    line = _refused(_check("nosuchmod:make"))
    assert "cannot import nosuchmod (of nosuchmod:make)" in line
    assert "No module named 'nosuchmod'" in line


def test_a_misspelled_factory_is_named_with_the_right_one():
    line = _refused(_check("planted_factories:mkae"))
    assert "module planted_factories has no mkae" in line
    assert "did you mean planted_factories:make?" in line


def test_a_factory_that_raises():
    line = _refused(_check("planted_factories:raises"))
    assert (
        "planted_factories:raises() raised RuntimeError: plantedlib has no device memory left"
        in line
    )


def test_a_factory_returning_an_int():
    line = _refused(_check("planted_factories:returns_int"))
    assert "planted_factories:returns_int() returned a builtins.int" in line
    assert "has no __dlpack__ method" in line


def test_a_description_silent_on_copy(tmp_path):
    description = tmp_path / "nocopy_dlpack.py"
    description.write_text(
        '"""plantedlib described without consume_copy nor FROM_DLPACK_LACKS."""\n'
        "import plantedlib\n"
        'NAME = "plantedlib_nocopy"\n'
        'MODULE = "plantedlib"\n'
        "make = plantedlib.Tensor\n"
        "consume = plantedlib.from_dlpack\n"
        "def to_numpy(result):\n"
        "    return result.numpy()\n"
    )
    line = _refused(_check(str(description)))
    assert "defines no consume_copy" in line
    assert 'FROM_DLPACK_LACKS = {"copy": "why"}' in line


def test_an_unknown_planted_bug_fails_the_description():
    line = _refused(_check(BUGGY, bugs="no-such-bug"))
    assert "fails to import: ValueError: unknown plantedlib bug(s) ['no-such-bug']" in line


# ---- module:factory tensors that are read-only ---------------------------------------------------

READ_ONLY_RULES = (
    "producer.accepts-keywords",
    "producer.legacy-without-max-version",
    "producer.no-leak",
    "producer.read-only-flag",
    "producer.read-only-legacy-refused",
)


def test_a_read_only_flagged_factory_tensor_conforms():
    """A read-only tensor flagged READ_ONLY whose legacy export is refused: the rules that
    ask for a legacy capsule expect the refusal and are not failed by it."""
    run = _check("planted_factories:read_only", rules=READ_ONLY_RULES)
    assert run.returncode == 0, run.stdout[-3000:]
    results = _by_rule(_report(run), "planted_factories:read_only")
    assert {rule: r["outcome"] for rule, r in results.items()} == dict.fromkeys(
        READ_ONLY_RULES, "pass"
    )
    assert (
        "refused (BufferError) on the legacy path"
        in (results["producer.legacy-without-max-version"]["detail"])
    )


def test_a_read_only_buffer_without_the_flag_fails():
    """A factory tensor whose buffer is read-only (memoryview(t).readonly: bytes) exported
    without READ_ONLY fails producer.read-only-flag, rather than being n/a."""
    run = _check("planted_factories:frozen_bytes_unflagged", rules=["producer.read-only-flag"])
    assert run.returncode == 1
    result = _by_rule(_report(run), "planted_factories:frozen_bytes_unflagged")[
        "producer.read-only-flag"
    ]
    assert result["outcome"] == "fail", result
    assert "memoryview(tensor).readonly" in result["detail"]
    assert "READ_ONLY is not set" in result["detail"]


# ---- the long runs: the good library, the matrix, MLX ------------------------------------------


def test_the_good_library_conforms(long_runs):
    run = long_runs.result("good")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    report = _report(run)
    assert list(report["frameworks"]) == ["plantedlib"]
    assert report["versions"] == {"plantedlib": "0.1.0"}
    results = _by_rule(report, "plantedlib")
    assert not _found(results), _found(results)
    summary = report["summary"]["plantedlib"]
    assert summary["verdict"] == "conforms"
    assert summary["must_failures"] == summary["should_failures"] == summary["errors"] == 0
    # What the description gives is checked, not left n/a: the catalogue's values, its
    # read-only kinds and its kind without elements, the copy rules, every consumer rule.
    for rule in (
        "producer.values",
        "producer.read-only-flag",
        "producer.read-only-legacy-refused",
        "producer.zero-size",
        "producer.copy-flag",
        "producer.no-leak",
        "consumer.renames-capsule",
        "consumer.deleter-once",
        "consumer.byte-offset",
        "consumer.keeps-dtype-and-values",
        "consumer.copy-true",
        "consumer.copy-true-refused",
        "consumer.major-version-2",
    ):
        assert results[rule]["outcome"] == "pass", results[rule]
    assert "kind read_only" in results["producer.read-only-flag"]["detail"]
    assert "kind zero_size" in results["producer.zero-size"]["detail"]
    # Only the rules plantedlib has nothing for are n/a: no C exchange table, no CUDA tensors.
    not_applicable = {
        rule
        for rule, r in results.items()
        if r["outcome"] == "n/a" and not rule.startswith(("exchange.", "device."))
    }
    # A CPU tensor never needs a copy to reach the CPU; a copied result is never re-exported.
    assert not_applicable == {"producer.copy-false-needs-copy", "consumer.legacy-re-export"}


def test_plantedlib_is_a_row_and_a_column_of_the_matrix(long_runs):
    run = long_runs.result("matrix")
    report = _report(run)
    assert set(report["frameworks"]) == {"plantedlib", "numpy"}
    assert not _found(_by_rule(report, "plantedlib"))
    pairs = {(pair["producer"], pair["consumer"]): pair for pair in report["matrix"]}
    assert set(pairs) == {
        (producer, consumer)
        for producer in ("plantedlib", "numpy")
        for consumer in ("plantedlib", "numpy")
    }
    for key in [("plantedlib", "numpy"), ("numpy", "plantedlib"), ("plantedlib", "plantedlib")]:
        pair = pairs[key]
        assert "error" not in pair, pair
        assert pair["failures"] == {}, pair
        assert pair["counts"]["fail"] == 0
        assert pair["counts"]["pass"] > 0
    # plantedlib copies every import; NumPy shares plantedlib's memory.
    assert pairs[("numpy", "plantedlib")]["zero_copy"] is False
    assert pairs[("plantedlib", "numpy")]["zero_copy"] is True


def test_mlx_described_by_a_user_is_checked_to_the_end(long_runs):
    import_framework("mlx.core", "mlx")  # skips (fails under CI) where MLX does not import
    report = _report(long_runs.result("mlx"))
    assert list(report["frameworks"]) == ["mlx"]
    assert report["versions"]["mlx"]
    results = _by_rule(report, "mlx")
    broken = {rule: r for rule, r in results.items() if r["outcome"] in BROKEN}
    assert not broken, broken
    # As a producer: its catalogue's values are what it made; as a consumer: it imports.
    assert results["producer.values"]["outcome"] == "pass", results["producer.values"]
    assert results["producer.zero-size"]["outcome"] == "pass"
    assert results["consumer.legacy-capsule"]["outcome"] == "pass"
    assert results["consumer.deleter-once"]["outcome"] == "pass"
    # MLX's from_dlpack has copy=: the copy rules are checked, not n/a.
    assert results["consumer.copy-true"]["outcome"] in ("pass", "fail")
