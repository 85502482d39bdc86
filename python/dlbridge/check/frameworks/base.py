"""What the checker knows of a framework, and the protocol a framework module follows.

`Framework` is the record the checks use: how to make one of the framework's tensors from
NumPy values, how its `from_dlpack` is called (also with copy=True), how to read a result
back, its catalogue of odd tensors (`Kind`s), its CUDA tensors and streams, and what must be
known to import it safely. `custom("module:factory")` makes one of a user's factory.

The framework module protocol
-----------------------------

Each framework the checker knows is one module of this package, named in the registry of
`frameworks/__init__.py`; `framework_of(module)` reads it into a `Framework`. It defines:

Required:

- `NAME`: the name on the command line (`dlbridge check NAME`), the module's own name.
- `MODULE`: the module that holds the framework; whether it is installed is asked without
  importing it (`importlib.util.find_spec`).
- `make(array)`: a tensor of the framework holding a NumPy array's values, in memory of its
  own (raising where it cannot hold them).
- `to_numpy(result)`: one of its tensors (a result of its consumer) read back as NumPy.
- its consumer, one of:
  - `consume(obj)`: its `from_dlpack` of a producer `obj`;
  - for a framework with DLPack functions but no `__dlpack__` (MXNet), `to_capsule(tensor)`
    (a legacy `dltensor` capsule of one of its tensors) and `from_capsule(capsule)` (its
    import), and optionally `device(tensor)` (its own `(device_type, device_id)` of a
    tensor): its tensors are then handed out in a `CapsuleOnly` adapter, its consumer is
    `from_capsule(x.__dlpack__())`, and the rules the adapter answers are n/a
    (`capsule_only.NOT_APPLICABLE`).

Optional (where a name is absent, the framework has no such thing and the rules that need it
say so, n/a):

- `consume_copy(obj)`: its `from_dlpack(obj, copy=True)`; where its `from_dlpack` has no
  copy parameter, `FROM_DLPACK_LACKS = {"copy": "why"}` says so instead (a framework
  described by a user must give one or the other: the copy rules are then n/a with that
  reason, never silently).
- `VERSION` (a string) or `version()`: the version the report names (default: the installed
  distribution `DISTRIBUTION`'s, else the module's `__version__`).
- `make_read_only(array)`: a tensor of the array's values whose data is read-only.
- `read_only(result)`: whether a result may not be written (absent: the framework has no such
  notion).
- `make_view(view)`: a tensor over a NumPy view that keeps the view's strides, for a
  framework without transposition or slicing of its own (the matrix's layouts).
- `kinds()`: its catalogue, the named tensors it can produce, as a list of `Kind`s
  (`kind_list` builds one); it imports the framework. The exchange table is compared with
  `__dlpack__` over every kind; without a catalogue, over the one tensor the checker makes.
  A kind may carry the values it holds (`expected`, a NumPy array: `producer.values` then
  compares what its `__dlpack__` describes, and one without elements is checked by
  `producer.zero-size`) and whether its data is read-only (`read_only=True`: the read-only
  rules check it, and the rules that ask for a legacy capsule expect it refused).
- `make_cuda(array)`, `new_cuda_stream()`, `current_cuda_stream()`, `write_late(tensor,
  array)`: its CUDA tensors and streams, for the device checks (see `Framework`).
- `NEEDS_GPU`: True where the framework is usable only with a CUDA driver (CuPy).
- `DISTRIBUTION`: the distribution whose version the report names (default: `MODULE`).
- `CONFLICTS`: the modules never imported into one process with it (they crash together).
- `BUILT_BEFORE`: the modules that, once loaded, keep its catalogue from being built.
- `TABLE_EXPORTS_REFUSED`: True where its C exchange table exports tensors its `__dlpack__`
  refuses (PyTorch, PaddlePaddle): every consumer is fed those of its kinds
  (`consumer.producer-refusals`).
- `NARROWING_FIX`: where its configuration makes its consumer narrow 64-bit dtypes, how to
  keep them (said with `consumer.keeps-dtype-and-values`).

A framework module imports nothing of its framework when it is imported: every function
imports what it needs when called, inside the worker process that checks the framework, so
that frameworks which crash when imported together never meet.

A framework of a user's
-----------------------

A user describes a framework the checker does not know with a module that follows the same
protocol (a file, `dlbridge check path/to/mylib_dlpack.py`, or an importable module,
`dlbridge check mylib_dlpack`): `describe(spec)` reads it, and it is checked as a producer,
as a consumer and in the interop matrix like the frameworks of this package
(docs/check-frameworks.md walks through one). The older `module:factory` form (`custom`)
checks one tensor, as a producer only.
"""

from __future__ import annotations

import importlib
import importlib.util
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable

import numpy as np

from dlbridge.check import capsule_only
from dlbridge.check.capsule_only import CapsuleOnly
from dlbridge.check.capsules import is_capsule


@dataclass
class Framework:
    """One framework, as producer and consumer.

    `make(array)` returns a tensor of the framework holding `array`'s values (its own memory);
    `make_read_only(array)` one whose data is read-only, where the framework has such a
    thing; `consume(obj)` is its `from_dlpack`; `to_numpy(result)` reads a result back;
    `read_only(result)` says whether a result may not be written (None: no such notion);
    `consume_copy(obj)` is its `from_dlpack(obj, copy=True)` (None: it has no copy parameter).

    A capsule-only framework (no `__dlpack__`) has an `adapter(tensor)` that wraps one of its
    tensors in a `CapsuleOnly`, the producer handed to consumers and producer checks (see
    `exporter`).
    """

    name: str
    module: str
    make: Callable[[np.ndarray], Any]
    consume: Callable[[Any], Any]
    to_numpy: Callable[[Any], np.ndarray]
    make_read_only: Callable[[np.ndarray], Any] | None = None
    read_only: Callable[[Any], bool | None] = lambda result: None
    #: For frameworks without transposition or slicing of their own: a tensor over a NumPy
    #: view, keeping its strides (the interop matrix's layouts).
    make_view: Callable[[np.ndarray], Any] | None = None
    needs_gpu: bool = False
    #: A user's `module:factory`: one tensor of unknown values, and a consumer only where
    #: the factory returns a `CapsuleOnly` with a `from_capsule`.
    user_factory: bool = False
    consume_copy: Callable[[Any], Any] | None = None
    adapter: Callable[[Any], Any] | None = None
    #: The rules that say nothing about this framework, with why (asked once the framework's
    #: tensors can be made: a user's factory knows only then).
    not_applicable: Callable[[], dict] = dict
    #: Whether `consume` is a from_dlpack at all (a user's factory may have none).
    has_consumer: Callable[[], bool] = lambda: True
    #: The device checks (`device_checks`): a tensor of the framework on CUDA device 0
    #: holding `array`'s values (None: the checker makes no CUDA tensors of it).
    make_cuda: Callable[[np.ndarray], Any] | None = None
    #: A new CUDA stream of the framework on device 0 that does not synchronise with the
    #: legacy default stream: (its handle, the object that keeps it alive).
    new_cuda_stream: Callable[[], tuple[int, Any]] | None = None
    #: The handle of the framework's current CUDA stream on device 0.
    current_cuda_stream: Callable[[], int] | None = None
    #: `write_late(tensor, array)`: enqueues on the framework's current CUDA stream a delay
    #: (a tenth of a second or so of spinning), then the writing of `array`'s values into
    #: the CUDA tensor `tensor` (of `array`'s shape and dtype), and returns at once.
    write_late: Callable[[Any, np.ndarray], None] | None = None
    #: The catalogue: `kinds()` lists the odd tensors the framework can produce (None: no
    #: catalogue; the exchange table is then compared on the checker's one tensor).
    kinds: Callable[[], list] | None = None
    #: The distribution whose version the report names (None: the framework's name).
    distribution: str | None = None
    #: Modules never imported into one process with this framework (they crash together).
    conflicts: frozenset = field(default_factory=frozenset)
    #: Modules that, once loaded, keep this framework's catalogue from being built.
    built_before: frozenset = field(default_factory=frozenset)
    #: Whether the framework's C exchange table exports tensors its `__dlpack__` refuses
    #: (every consumer is fed those of its kinds: `consumer.producer-refusals`).
    table_exports_refused: bool = False
    #: How to keep 64-bit dtypes where the framework's configuration narrows them.
    narrowing_fix: str | None = None
    #: The framework's version as it says it (None: read from its distribution).
    version: Callable[[], str | None] | None = None
    #: What its from_dlpack lacks, by keyword, with why (`FROM_DLPACK_LACKS`).
    lacks: dict = field(default_factory=dict)
    #: How a worker process finds this framework again: its registry name, a user's
    #: `module:factory`, or the file or module that describes it.
    spec: str | None = None
    #: Whether a user's module describes it (`describe`).
    described: bool = False

    def catalogue(self, which: Callable[[Kind], bool] = lambda kind: True) -> list:
        """The kinds of its catalogue for which `which(kind)` holds (none without one)."""
        return [kind for kind in self.kinds() if which(kind)] if self.kinds else []

    def exporter(self, tensor):
        """What is handed to a consumer for one of this framework's tensors: the tensor, or
        for a capsule-only framework its `CapsuleOnly` adapter."""
        if self.adapter is None or isinstance(tensor, CapsuleOnly):
            return tensor
        return self.adapter(tensor)

    def available(self) -> bool:
        """Whether the framework can be imported here (without importing it)."""
        if importlib.util.find_spec(self.module) is None:
            return False
        if self.needs_gpu:
            return cuda_driver_present()
        return True


@dataclass(frozen=True)
class Kind:
    """One odd tensor of a framework, in its catalogue.

    `make()` builds a fresh tensor object on every call; `note` says in one line what it is
    and why it is interesting. `expected`, where known, is a NumPy array of the values the
    tensor holds (its dtype, shape and elements: what its `__dlpack__` must describe);
    `read_only` says that its data may not be written (its versioned capsule must carry
    READ_ONLY, and a legacy capsule must be refused).
    """

    framework: str
    name: str
    make: Callable[[], object]
    note: str
    expected: Any = None
    read_only: bool = False


def kind_list(framework: str, entries: Iterable) -> list:
    """The `Kind`s of `framework` from `(name, make, note)` entries, in their order; an entry
    may have a fourth element, a dict of the kind's other fields (`expected`, `read_only`)."""
    kinds = []
    for name, make, note, *options in entries:
        kinds.append(Kind(framework, name, make, note, **(options[0] if options else {})))
    return kinds


def quiet(make: Callable[[], Any]) -> Any:
    """`make()` with warnings (beta/prototype/deprecation notices) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


def quietly(make: Callable[[], Any]) -> Callable[[], Any]:
    """`make`, called with warnings silenced (`quiet`)."""
    return lambda: quiet(make)


def cuda_driver_present() -> bool:
    """Whether the CUDA driver library is installed (a GPU may still be missing: making a
    CUDA tensor then fails, which callers report)."""
    import ctypes.util

    return ctypes.util.find_library("cuda") is not None


def read_only_copy(array) -> np.ndarray:
    """A copy of `array` that cannot be written (the read-only tensors of frameworks that
    hold NumPy memory)."""
    array = np.array(array, copy=True)
    array.flags.writeable = False
    return array


def via_numpy(result) -> np.ndarray:
    """A result read back through NumPy's `from_dlpack` (for frameworks without a NumPy
    conversion of their own)."""
    return np.from_dlpack(result)


def data_address(obj):
    """The address of the first element of `obj` as dlbridge imports it, or None when dlbridge
    cannot import it (not every result can be exported again)."""
    try:
        import dlbridge

        return dlbridge.from_dlpack(obj).data_ptr
    except Exception:  # noqa: BLE001 - not every object exports
        return None


def capsule_only_framework(
    name: str,
    module: str,
    make: Callable[[np.ndarray], Any],
    *,
    to_capsule: Callable[[Any], Any],
    from_capsule: Callable[[Any], Any],
    to_numpy: Callable[[Any], np.ndarray],
    device: Callable[[Any], tuple[int, int]] | None = None,
    make_view: Callable[[np.ndarray], Any] | None = None,
    **options: Any,
) -> Framework:
    """A framework with DLPack functions but no `__dlpack__` (MXNet): its tensors are handed
    out in a `CapsuleOnly` adapter, its consumer is `from_capsule(x.__dlpack__())`, and the
    rules the adapter answers are n/a. `options` are the record's other fields."""

    def adapter(tensor):
        return CapsuleOnly(
            tensor,
            to_capsule=to_capsule,
            from_capsule=from_capsule,
            to_numpy=to_numpy,
            device=device,
        )

    not_applicable = dict(capsule_only.NOT_APPLICABLE)
    if device is None:
        not_applicable.update(capsule_only.NO_DEVICE_FUNCTION)
    if options.get("consume_copy") is None:
        not_applicable.update(capsule_only.NO_COPY_ROUTE)
    return Framework(
        name,
        module,
        make,
        lambda obj: from_capsule(obj if is_capsule(obj) else obj.__dlpack__()),
        to_numpy,
        make_view=make_view,
        adapter=adapter,
        not_applicable=lambda: not_applicable,
        **options,
    )


# ---- reading a framework module ------------------------------------------------------------

#: The optional functions of the protocol, by the `Framework` field each fills.
OPTIONAL_FUNCTIONS = (
    "consume_copy",
    "make_read_only",
    "read_only",
    "make_view",
    "kinds",
    "make_cuda",
    "new_cuda_stream",
    "current_cuda_stream",
    "write_late",
)


#: The rules that say nothing of a consumer without a copy parameter.
COPY_RULES = ("consumer.copy-true", "consumer.copy-true-refused")


def framework_of(
    module: ModuleType, *, spec: str | None = None, described: bool = False
) -> Framework:
    """The `Framework` a framework module describes (see the module's docstring for the names
    it defines). Raises TypeError naming what is missing or not callable; for a user's
    description (`described`), also where it says nothing of its from_dlpack's copy
    parameter (neither `consume_copy` nor `FROM_DLPACK_LACKS["copy"]`)."""
    where = spec or module.__name__

    def required(name: str, kind: type | None = None):
        if not hasattr(module, name):
            raise TypeError(f"framework module {where} defines no {name}")
        value = getattr(module, name)
        if kind is not None and not isinstance(value, kind):
            raise TypeError(f"{where}.{name} must be a {kind.__name__}")
        if kind is None and not callable(value):
            raise TypeError(f"{where}.{name} must be callable")
        return value

    name, import_name = required("NAME", str), required("MODULE", str)
    make, to_numpy = required("make"), required("to_numpy")
    options: dict = {}
    for function in OPTIONAL_FUNCTIONS:
        value = getattr(module, function, None)
        if value is not None:
            if not callable(value):
                raise TypeError(f"{where}.{function} must be callable")
            options[function] = value
    options.update(
        needs_gpu=bool(getattr(module, "NEEDS_GPU", False)),
        distribution=getattr(module, "DISTRIBUTION", import_name),
        conflicts=frozenset(getattr(module, "CONFLICTS", ())),
        built_before=frozenset(getattr(module, "BUILT_BEFORE", ())),
        table_exports_refused=bool(getattr(module, "TABLE_EXPORTS_REFUSED", False)),
        narrowing_fix=getattr(module, "NARROWING_FIX", None),
        version=_version_of(module, where),
        lacks=_lacks_of(module, where),
        spec=spec,
        described=described,
    )
    if described and "consume_copy" not in options and "copy" not in options["lacks"]:
        raise TypeError(
            f"{where} defines no consume_copy (its from_dlpack(x, copy=True)): define it, or "
            "say that the library's from_dlpack has no copy parameter: "
            'FROM_DLPACK_LACKS = {"copy": "why"}'
        )
    capsule_functions = [f for f in ("to_capsule", "from_capsule") if hasattr(module, f)]
    if hasattr(module, "consume") == bool(capsule_functions):
        raise TypeError(
            f"framework module {where} defines consume, or to_capsule and from_capsule "
            "(a framework without __dlpack__): exactly one of them"
        )
    if not capsule_functions:
        framework = Framework(name, import_name, make, required("consume"), to_numpy, **options)
        if framework.consume_copy is None:
            why = framework.lacks.get("copy") or "it has no copy parameter"
            reasons = dict.fromkeys(COPY_RULES, f"{name}'s from_dlpack takes no copy: {why}")
            framework.not_applicable = lambda: reasons
        return framework
    return capsule_only_framework(
        name,
        import_name,
        make,
        to_capsule=required("to_capsule"),
        from_capsule=required("from_capsule"),
        to_numpy=to_numpy,
        device=getattr(module, "device", None),
        **options,
    )


def _version_of(module: ModuleType, where: str):
    """The module's `version()` or `VERSION`, as a function (None where it has neither)."""
    version = getattr(module, "version", None)
    if version is not None and not callable(version):
        raise TypeError(f"{where}.version must be callable (or define VERSION, a string)")
    if version is None and getattr(module, "VERSION", None) is not None:
        fixed = module.VERSION
        if not isinstance(fixed, str):
            raise TypeError(f"{where}.VERSION must be a str, not {type(fixed).__name__}")
        return lambda: fixed
    return version


def _lacks_of(module: ModuleType, where: str) -> dict:
    """The module's `FROM_DLPACK_LACKS`: {keyword: why} ({} where absent)."""
    lacks = getattr(module, "FROM_DLPACK_LACKS", {})
    if not isinstance(lacks, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in lacks.items()
    ):
        raise TypeError(f"{where}.FROM_DLPACK_LACKS must be a dict of str (keyword) to str (why)")
    return dict(lacks)


# ---- a user's framework ----------------------------------------------------------------------


def describe(spec: str) -> Framework:
    """The framework a user's module describes, following the framework module protocol:
    `spec` is a file (`path/to/mylib_dlpack.py`) or an importable module (`mylib_dlpack`).
    Raises ValueError saying why it cannot be read (not found, fails to import, or not a
    description: the TypeError of `framework_of`)."""
    import pathlib

    if spec.endswith(".py") or "/" in spec:
        path = pathlib.Path(spec)
        if not path.is_file():
            raise ValueError(f"no file {spec}")
        module_name = f"_dlbridge_check_description_{path.stem}"
        loader = importlib.util.spec_from_file_location(module_name, path)
        if loader is None or loader.loader is None:
            raise ValueError(f"{spec} cannot be loaded as a Python module")
        module = importlib.util.module_from_spec(loader)
        import sys

        sys.modules[module_name] = module
        try:
            loader.loader.exec_module(module)
        except Exception as error:  # noqa: BLE001 - whatever it raises is the reason
            del sys.modules[module_name]
            raise ValueError(f"{spec} fails to import: {type(error).__name__}: {error}") from None
    else:
        try:
            module = importlib.import_module(spec)
        except ModuleNotFoundError as error:
            if error.name is not None and spec.startswith(error.name):
                raise ValueError(f"no module named {spec}") from None
            raise ValueError(f"{spec} fails to import: {type(error).__name__}: {error}") from None
        except Exception as error:  # noqa: BLE001 - whatever it raises is the reason
            raise ValueError(f"{spec} fails to import: {type(error).__name__}: {error}") from None
    if not hasattr(module, "NAME") or not hasattr(module, "make"):
        raise ValueError(
            f"{spec} is not a framework description: it defines no NAME or no make "
            "(see `dlbridge check --help` and docs/check-frameworks.md)"
        )
    try:
        return framework_of(module, spec=spec, described=True)
    except TypeError as error:
        raise ValueError(str(error)) from None


# ---- a user's producer ---------------------------------------------------------------------


class FactoryError(ValueError):
    """A user's `module:factory` that cannot be used: its module does not import, it has no
    such factory, or the factory is not callable."""


def load_factory(spec: str) -> Callable[[], Any]:
    """The factory of a `module:factory`, or FactoryError saying why there is none (with the
    names the module does have that come close, for a typo)."""
    import difflib

    module_name, _, attribute = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # noqa: BLE001 - whatever the import raises is the reason
        raise FactoryError(
            f"cannot import {module_name} (of {spec}): {type(error).__name__}: {error}"
        ) from None
    factory = getattr(module, attribute, None)
    if factory is None:
        near = difflib.get_close_matches(attribute, [n for n in dir(module) if n[:1] != "_"])
        hint = f" (did you mean {module_name}:{near[0]}?)" if near else ""
        raise FactoryError(f"module {module_name} has no {attribute}{hint}")
    if not callable(factory):
        raise FactoryError(f"{spec} is a {type(factory).__name__}, not a function to call")
    return factory


def custom(spec: str) -> Framework:
    """A user's producer, `module:factory`: `factory()` returns a tensor object to check (as
    a producer only: there is no consumer to call), or a `CapsuleOnly` (a tensor of a
    framework without `__dlpack__`, with its DLPack functions: a producer through the
    adapter, and a consumer where it has a `from_capsule`)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"expected module:factory, got {spec!r}")
    first: list = []

    def make(_array):
        made = load_factory(spec)()
        if not first:
            first.append(made)
        return made

    def sample():
        """The factory's first tensor (made once), which tells what the factory hands out."""
        if not first:
            make(None)
        return first[0]

    def capsule_only_sample():
        made = sample()
        return made if isinstance(made, CapsuleOnly) else None

    def has_consumer():
        adapter = capsule_only_sample()
        return adapter is not None and adapter.from_capsule is not None

    def consume(obj):
        adapter = capsule_only_sample()
        if adapter is None or adapter.from_capsule is None:
            raise NotImplementedError("a module:factory producer has no from_dlpack")
        return adapter.consume(obj)

    def to_numpy(result):
        adapter = capsule_only_sample()
        if isinstance(result, CapsuleOnly):
            return result.to_numpy(result.tensor)
        if adapter is not None:
            return adapter.to_numpy(result)
        return via_numpy(result)

    def adapt(tensor):
        adapter = capsule_only_sample()
        return adapter.wrap(tensor) if adapter is not None else tensor

    def not_applicable():
        adapter = capsule_only_sample()
        if adapter is None:
            return {}
        reasons = {**capsule_only.NOT_APPLICABLE, **capsule_only.NO_COPY_ROUTE}
        if adapter.device is None:
            reasons.update(capsule_only.NO_DEVICE_FUNCTION)
        return reasons

    return Framework(
        spec,
        module_name,
        make,
        consume,
        to_numpy,
        spec=spec,
        user_factory=True,
        adapter=adapt,
        has_consumer=has_consumer,
        not_applicable=not_applicable,
    )
