"""The frameworks `dlbridge check` knows (`dlbridge.check.frameworks`): every built-in
framework module follows the protocol of `frameworks/base.py`, the registry keeps its order,
and adding a framework is one new module and one registry line: a throwaway framework written
into a copy of the package runs through every check family and the interop matrix, and the
import rules (scripts/module-layers.py) place it without a change to them."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import dlbridge
from dlbridge.check import catalogue, frameworks
from dlbridge.check.frameworks import FRAMEWORKS, REGISTRY, Framework, framework_of
from dlbridge.check.frameworks.base import OPTIONAL_FUNCTIONS, Kind
from dlbridge.check.rules import RULES

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"

#: The protocol's required names.
REQUIRED = ("NAME", "MODULE", "make", "to_numpy")


def test_the_registry_keeps_the_order_of_the_frameworks():
    assert REGISTRY == (
        "numpy",
        "torch",
        "jax",
        "tensorflow",
        "paddle",
        "pyarrow",
        "tvm_ffi",
        "mxnet",
        "cupy",
        "dlbridge",
    )
    assert list(FRAMEWORKS) == list(REGISTRY)


@pytest.mark.parametrize("name", REGISTRY)
def test_every_framework_module_follows_the_protocol(name):
    module = importlib.import_module(f"dlbridge.check.frameworks.{name}")
    for required in REQUIRED:
        assert hasattr(module, required), f"{module.__name__} defines no {required}"
    assert name == module.NAME, "a framework module is named for its framework"
    framework = FRAMEWORKS[name]
    assert (framework.name, framework.module) == (module.NAME, module.MODULE)
    # Its consumer: `consume`, or the two functions of a framework without __dlpack__.
    capsule_only = hasattr(module, "to_capsule")
    assert hasattr(module, "consume") != capsule_only
    assert (framework.adapter is not None) == capsule_only
    # Every optional function it defines reaches the record; one it does not define is None
    # there (`read_only`: a function answering None, the framework has no such notion).
    for function in OPTIONAL_FUNCTIONS:
        if hasattr(module, function):
            assert getattr(framework, function) is getattr(module, function), function
        elif function == "read_only":
            assert framework.read_only(object()) is None
        else:
            assert getattr(framework, function) is None, function
    assert module.__doc__, f"{module.__name__} has no docstring"


def test_importing_the_registry_imports_no_framework():
    code = (
        "import sys\n"
        "import dlbridge.check.frameworks as f\n"
        "heavy = {'torch', 'jax', 'tensorflow', 'paddle', 'pyarrow', 'tvm_ffi', 'mxnet', 'cupy'}\n"
        "assert len(f.FRAMEWORKS) == 10\n"
        "assert not heavy & set(sys.modules), heavy & set(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_a_module_breaking_the_protocol_is_refused():
    module = types.ModuleType("broken")
    module.NAME, module.MODULE = "broken", "numpy"
    module.make = module.to_numpy = lambda x: x
    with pytest.raises(TypeError, match="defines consume, or to_capsule and from_capsule"):
        framework_of(module)
    module.consume = lambda x: x
    assert isinstance(framework_of(module), Framework)
    module.to_capsule = lambda x: x  # a consumer both ways
    with pytest.raises(TypeError, match="exactly one of them"):
        framework_of(module)
    del module.to_capsule
    module.kinds = "not callable"
    with pytest.raises(TypeError, match=r"broken\.kinds must be callable"):
        framework_of(module)
    del module.kinds, module.make
    with pytest.raises(TypeError, match="defines no make"):
        framework_of(module)


def test_the_catalogue_is_the_framework_modules_kinds():
    assert tuple(n for n, fw in FRAMEWORKS.items() if fw.kinds) == catalogue.FRAMEWORKS
    kinds = catalogue.kinds("numpy")
    assert kinds and all(isinstance(kind, Kind) and kind.framework == "numpy" for kind in kinds)
    assert [k.name for k in kinds] == [k.name for k in frameworks.FRAMEWORKS["numpy"].kinds()]


# ---- adding a framework: one module, one registry line ---------------------------------------

#: A framework of dlbridge tensors, made and read through NumPy, with a catalogue of three
#: kinds: the whole description of a framework, as a new module of the package would hold it.
TOY = '''"""toy: a throwaway framework of the tests, over dlbridge tensors."""

from __future__ import annotations

import numpy as np

from .base import kind_list

NAME = "toy"
MODULE = "dlbridge"


def make(array):
    import dlbridge

    return dlbridge.from_dlpack(np.array(array, copy=True)).copy()


def consume(obj):
    import dlbridge

    return dlbridge.from_dlpack(obj)


def consume_copy(obj):
    import dlbridge

    return dlbridge.from_dlpack(obj, copy=True)


def to_numpy(result):
    return np.from_dlpack(result)


def make_view(view):
    # dlbridge tensors have no transposition or slicing: the matrix's layouts are NumPy's.
    import dlbridge

    return dlbridge.from_dlpack(view)


def read_only(result):
    return result.readonly


def kinds():
    import dlbridge

    return kind_list(
        NAME,
        [
            ("six", lambda: dlbridge.arange(6, "float32"), "six float32 values"),
            ("empty", lambda: dlbridge.zeros((0, 3)), "no elements"),
            ("reversed", lambda: dlbridge.from_dlpack(np.arange(5.0)[::-1]), "stride -1"),
        ],
    )
'''
#: The registry line that names it.
REGISTRY_LINE = '    "toy",\n'


def _check(copy_root: Path, *arguments: str) -> subprocess.CompletedProcess:
    """`python -m dlbridge check ARGUMENTS` run on the copy of the package in `copy_root`."""
    env = dict(os.environ, PYTHONPATH=str(copy_root))
    return subprocess.run(
        [sys.executable, "-m", "dlbridge", "check", *arguments],
        text=True,
        capture_output=True,
        env=env,
        timeout=300,
        check=False,
    )


def _module_layers():
    spec = importlib.util.spec_from_file_location("module_layers", SCRIPTS / "module-layers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_framework_is_one_module_and_one_registry_line(tmp_path):
    copy = tmp_path / "dlbridge"
    package = Path(dlbridge.__file__).resolve().parent
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    registry = copy / "check" / "frameworks" / "__init__.py"
    (copy / "check" / "frameworks" / "toy.py").write_text(TOY)

    # The module alone is not a framework of the checker: the registry names it.
    unknown = _check(tmp_path, "toy", "--json", "--quiet")
    assert unknown.returncode == 2 and "unknown framework 'toy'" in unknown.stderr, unknown

    text = registry.read_text()
    last = '    "dlbridge",\n)\n'
    assert text.count(last) == 1, "the registry's last line moved"
    registry.write_text(text.replace(last, f'    "dlbridge",\n{REGISTRY_LINE})\n'))

    done = _check(tmp_path, "toy", "--json", "--quiet")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(done.stdout)
    results = {result["rule"]: result for result in report["frameworks"]["toy"]}
    assert set(results) == set(RULES), "every rule of every family ran"
    assert report["summary"]["toy"]["must_failures"] == 0, report["summary"]
    for family in ("producer.", "exchange.", "consumer."):
        outcomes = [r["outcome"] for rule, r in results.items() if rule.startswith(family)]
        assert outcomes.count("pass") > len(outcomes) // 2, (family, outcomes)
    # The exchange table is compared with __dlpack__ over the toy's own catalogue.
    agrees = results["exchange.agrees-with-dlpack"]
    assert agrees["outcome"] == "pass", agrees
    assert agrees["detail"].startswith("agrees on 3 catalogued kinds: 3 compared"), agrees
    # The device checks ran on its description, which makes no CUDA tensors: n/a, saying so.
    for rule in (r for r in RULES if r.startswith("device.")):
        assert results[rule]["outcome"] == "n/a", results[rule]
        assert results[rule]["detail"] == "the checker makes no CUDA tensors of toy"
    # The interop matrix: the toy as producer and consumer.
    (pair,) = report["matrix"]
    assert (pair["producer"], pair["consumer"]) == ("toy", "toy")
    assert pair["counts"] == {"pass": 36, "fail": 0, "unsupported": 0, "unchecked": 0}, pair

    # The import rules place the new module without a change to them.
    layers = _module_layers()
    assert layers.check_python_floors(copy, layers.PYTHON_FLOORS) == []
