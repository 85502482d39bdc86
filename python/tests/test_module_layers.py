"""scripts/module-layers.py, the import rules `make lint` checks: it finds what it must find
(an import from a later layer, a cycle in a crate or a Python package, a Python import from
a sibling or a higher floor, a Python module placed on no floor) and passes the project's own
tree."""

from __future__ import annotations

import importlib.util
import shutil
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


def python_package(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package `pkg` in `tmp_path` holding `files` (paths relative to the package)."""
    package = tmp_path / "pkg"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


#: Two floors and the package's own module on top.
TWO_FLOORS = {"pkg": (("low",), ("high",), ("__init__",))}


def test_a_python_import_from_a_higher_floor_is_reported(layers, tmp_path):
    package = python_package(
        tmp_path,
        {
            "__init__.py": "from .high import thing\n",
            # A lazy import ties the files as much as one at the top.
            "low.py": "def later():\n    from .high import thing\n",
            "high.py": "from pkg.low import later\nthing = 1\n",
        },
    )
    assert layers.check_python_floors(package, TWO_FLOORS) == [
        (
            "layer order: pkg.low imports pkg.high (thing), which stands on a higher floor of pkg "
            "(high above low)"
        )
    ]


def test_python_siblings_on_one_floor_never_import_each_other(layers, tmp_path):
    package = python_package(
        tmp_path,
        {"__init__.py": "", "one.py": "from . import two\n", "two.py": "x = 1\n"},
    )
    problems = layers.check_python_floors(package, {"pkg": (("one", "two"), ("__init__",))})
    assert problems == [
        (
            "layer order: pkg.one imports pkg.two (two), which stands on the same floor of pkg "
            "(siblings never import each other)"
        )
    ]


SUBPACKAGE_FLOORS = {
    "pkg": (("low",), ("sub",), ("top",), ("__init__",)),
    "pkg.sub": (("base",), ("*",), ("__init__",)),
}


def test_python_floors_in_order_with_a_subpackage_pass(layers, tmp_path):
    files = {
        "__init__.py": "from .top import run\n",
        "low.py": "x = 1\n",
        "sub/__init__.py": "from .base import Base\nfrom . import member\n",
        "sub/base.py": "from pkg.low import x\nBase = x\n",
        # Placed by `*`: any module of the subpackage but those named.
        "sub/member.py": "from .base import Base\nimport pkg\n",
        "top.py": "from .sub import Base\nfrom .sub.member import Base as B\nrun = B\n",
    }
    package = python_package(tmp_path, files)
    assert layers.check_python_floors(package, SUBPACKAGE_FLOORS) == [
        # `import pkg` is the package's own module, which stands on its top floor.
        (
            "layer order: pkg.sub.member imports pkg (*), which stands on a higher floor of pkg "
            "(__init__ above sub)"
        )
    ]
    (package / "sub" / "member.py").write_text("from .base import Base\n")
    assert layers.check_python_floors(package, SUBPACKAGE_FLOORS) == []
    # A module of the subpackage reaching above the subpackage's place in its parent.
    (package / "sub" / "member.py").write_text("def later():\n    from ..top import run\n")
    assert layers.check_python_floors(package, SUBPACKAGE_FLOORS) == [
        (
            "layer order: pkg.sub.member imports pkg.top (run), which stands on a higher floor of "
            "pkg (top above sub)"
        )
    ]


def test_a_python_module_on_no_floor_and_a_name_for_nothing_are_reported(layers, tmp_path):
    package = python_package(
        tmp_path,
        {
            "__init__.py": "",
            "low.py": "",
            "high.py": "",
            "newcomer.py": "",
            "extra/__init__.py": "",
        },
    )
    floors = {"pkg": (("low", "gone"), ("high",), ("__init__",))}
    assert sorted(layers.check_python_floors(package, floors)) == [
        (
            "layer order: package pkg.extra has no floors: declare them (PYTHON_FLOORS in "
            "scripts/module-layers.py)"
        ),
        (
            "layer order: pkg.extra is on no floor: name extra on a floor of pkg "
            "(PYTHON_FLOORS in scripts/module-layers.py)"
        ),
        (
            "layer order: pkg.newcomer is on no floor: name newcomer on a floor of pkg "
            "(PYTHON_FLOORS in scripts/module-layers.py)"
        ),
        "layer order: pkg: gone is declared on a floor, but there is no such module or subpackage",
    ]


def test_the_python_package_catches_planted_sibling_and_upward_imports(layers, tmp_path):
    """The project's own floors (PYTHON_FLOORS) over a copy of python/dlbridge: the copy
    passes; a check family importing another (as exchange_checks imported producer_checks) and
    a module importing one above it are each reported by name."""
    copy = tmp_path / "dlbridge"
    shutil.copytree(
        layers.PYTHON_PACKAGE, copy, ignore=shutil.ignore_patterns("*.so", "__pycache__")
    )
    assert layers.check_python_floors(copy, layers.PYTHON_FLOORS) == []
    check = copy / "check"
    with (check / "exchange_checks.py").open("a") as file:
        file.write("from .producer_checks import EXCHANGES\n")
    with (check / "probes.py").open("a") as file:
        file.write("\n\ndef later():\n    from .cli import run\n")
    assert layers.check_python_floors(copy, layers.PYTHON_FLOORS) == [
        (
            "layer order: dlbridge.check.exchange_checks imports dlbridge.check.producer_checks "
            "(EXCHANGES), which stands on the same floor of dlbridge.check (siblings never import "
            "each other)"
        ),
        (
            "layer order: dlbridge.check.probes imports dlbridge.check.cli (run), which stands "
            "on a higher floor of dlbridge.check (cli above probes)"
        ),
    ]


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
