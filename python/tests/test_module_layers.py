"""scripts/module-layers.py, the import rules `make lint` checks: it finds what it must find
(an import from a later layer, a cycle in a crate or a Python package) and passes the
project's own tree."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "module-layers.py"


@pytest.fixture(scope="module")
def layers():
    spec = importlib.util.spec_from_file_location("module_layers", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def crate(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "src" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_an_import_from_a_later_layer_is_reported(layers, tmp_path):
    root = crate(
        tmp_path,
        {
            "lib.rs": "mod high;\nmod low;\n",
            "high.rs": "use crate::low::Thing;\n",
            "low.rs": "pub struct Thing;\n",
        },
    )
    problems = layers.check_rust(root)
    assert len(problems) == 1
    assert "high.rs imports" in problems[0]
    assert "low.rs (Thing)" in problems[0]


def test_layers_in_order_with_folders_and_tests_pass(layers, tmp_path):
    root = crate(
        tmp_path,
        {
            "lib.rs": "mod low;\nmod folder;\n",
            # A test module may use any layer.
            "low.rs": "pub struct Thing;\n#[cfg(test)]\nmod tests { use crate::folder::Top; }",
            "folder/mod.rs": "mod first;\nmod second;\npub use second::Top;\n",
            "folder/first.rs": "use crate::low::Thing;\n",
            "folder/second.rs": "use super::first::{self, X};\npub struct Top;\n",
        },
    )
    assert layers.check_rust(root) == []


def test_an_import_across_a_side_rule_is_reported_wherever_the_modules_are_listed(layers, tmp_path):
    # `consumer` is listed first, so the layer order alone would allow the import.
    root = crate(
        tmp_path,
        {
            "lib.rs": "// module-layers: producer never imports consumer, other.\n"
            "mod consumer;\nmod other;\nmod producer;\n",
            "consumer.rs": "pub struct Reader;\n",
            "other.rs": "pub struct Unrelated;\n",
            "producer/mod.rs": "mod answers;\n",
            "producer/answers.rs": "use crate::consumer::Reader;\nuse crate::other::Unrelated;\n",
        },
    )
    problems = layers.check_rust(root)
    assert len(problems) == 2, problems
    assert "side rule: " in problems[0] and "producer/answers.rs imports" in problems[0]
    assert "consumer.rs (Reader)" in problems[0]
    assert "never imports consumer" in problems[0]
    assert "other.rs (Unrelated)" in problems[1]
    # Without the rule the same tree passes.
    (root / "src" / "lib.rs").write_text("mod consumer;\nmod other;\nmod producer;\n")
    assert layers.check_rust(root) == []


def test_a_cycle_in_a_crate_is_reported_with_what_ties_it(layers, tmp_path):
    root = crate(
        tmp_path,
        {
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b.rs": "use crate::a::A;\npub struct B;\n",
        },
    )
    problems = layers.check_rust(root)
    cycles = [p for p in problems if p.startswith("import cycle")]
    assert len(cycles) == 1
    assert "a.rs -> " in cycles[0]
    assert ": B" in cycles[0]
    assert ": A" in cycles[0]


def test_a_cycle_in_a_python_package_is_reported(layers, tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "one.py").write_text("from . import two\n")
    (package / "two.py").write_text("def later():\n    from pkg.one import thing\n")
    problems = layers.check_python(package)
    assert len(problems) == 1
    assert "pkg.one -> pkg.two: two" in problems[0]
    assert "pkg.two -> pkg.one: thing" in problems[0]


def test_the_project_follows_its_rules(layers, capsys):
    assert layers.main() == 0, capsys.readouterr().out


def test_every_test_file_is_in_a_run_of_the_runner():
    """scripts/python-tests.sh names the files of each run: a test file it does not name is
    never run by `make test`."""
    import pathlib
    import re

    tests = pathlib.Path(__file__).resolve().parent
    runner = (tests.parent.parent / "scripts" / "python-tests.sh").read_text()
    named = set(re.findall(r"test_[A-Za-z0-9_]+\.py", runner))
    # interop/ files are found by the runner's glob, one run each.
    missing = sorted(path.name for path in tests.glob("test_*.py") if path.name not in named)
    assert missing == [], f"not in any run of scripts/python-tests.sh: {missing}"
