#!/usr/bin/env python3
"""The project's import rules, checked from the sources (`make lint` runs this).

1. No import cycle among the files of any crate (crates/*/src) or of the Python package
   (python/dlbridge): a file that imports another, directly or not, is never imported back.
2. In every crate, each file imports only files listed before it in lib.rs: a folder
   module's files take the folder's place, in the order its mod.rs lists them, and mod.rs
   itself comes after its children. So the `mod` lines read as the layers, from the ground up.
3. Sides that stay apart: a line `// module-layers: A never imports B, C` in a crate's lib.rs
   forbids every file of module A (and of the modules below it) to import B or C (or the
   modules below them), wherever lib.rs lists them. dlbridge-pyo3 says so of its produce side
   and its consume side, so that reordering the `mod` lines cannot undo it.
4. In the Python package, each module imports only modules on lower floors. The floors are
   declared here, package by package, from the ground up (`PYTHON_FLOORS`): a floor names the
   modules and subpackages of one package that stand side by side, `__init__` is the
   package's own module, and a subpackage takes its place in its parent's floors as a whole
   (its own floors are inside it). Of two modules, the package they both belong to, nearest
   them, decides: what stands for each there (the module, or the subpackage holding it) must
   be on a lower floor for the import, so siblings on one floor never import each other. A
   module or subpackage named on no floor of its package is itself a problem (a new file must
   be placed), as is a name declared for nothing; `*` places every module of its package not
   named on another floor (the framework modules of `dlbridge.check.frameworks`, which a new
   framework joins without a change here).

Test modules (`#[cfg(test)] mod ... { }` blocks, files of a `tests` module) are left out: a
test may build its fixtures with any part of the crate.

Rust imports are the `crate::`, `super::` and `self::` paths of the code (comments and doc
comments are not read); a path is charged to the longest module it names. Python imports are
`import`/`from ... import` statements of package modules, wherever they stand (a lazy import
inside a function still ties two files). Prints each cycle, out-of-order import or unplaced
module, with the names that tie the files, and exits 1 if there is any.

    python3 scripts/module-layers.py
"""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON_PACKAGE = ROOT / "python" / "dlbridge"

RUST_PATH = re.compile(r"(?<!\$)\b(crate|super|self)((?:::\w+)+|::\{)")
EXPORTED_MACRO = re.compile(r"#\[macro_export\]\s*macro_rules!\s*(\w+)")
SIDE_RULE = re.compile(r"^\s*// module-layers: (\S+) never imports (.+?)\.?\s*$", re.MULTILINE)
RUST_MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.MULTILINE)


def rust_module_files(src: Path) -> dict[tuple[str, ...], Path]:
    """Module path -> file, for every module file below `src`."""
    modules = {}
    for file in sorted(src.rglob("*.rs")):
        parts = list(file.relative_to(src).with_suffix("").parts)
        if parts in (["lib"], ["main"]):
            parts = []
        elif parts[-1] == "mod":
            parts = parts[:-1]
        modules[tuple(parts)] = file
    return modules


def strip_rust_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    return re.sub(r"//[^\n]*", "", text)


def strip_rust_tests(code: str) -> str:
    """`code` without its inline `#[cfg(test)] mod ... { ... }` blocks: tests may build their
    fixtures with any part of the crate."""
    while match := re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", code):
        depth, end = 0, match.end() - 1
        for end in range(match.end() - 1, len(code)):
            depth += {"{": 1, "}": -1}.get(code[end], 0)
            if depth == 0:
                break
        code = code[: match.start()] + code[end + 1 :]
    return code


def rust_use_groups(code: str, start: int) -> list[str]:
    """The paths of a `use` tree starting at `code[start]` ("a::{b, c::d}" -> a::b, a::c::d)."""
    depth, end = 0, start
    while end < len(code):
        char = code[end]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif depth == 0 and not (char.isalnum() or char in "_:"):
            break
        end += 1
    tree = code[start:end]

    def expand(prefix: str, body: str) -> list[str]:
        body = body.strip()
        if not body.startswith("{"):
            return [prefix + body]
        inner, parts, depth, current = body[1:-1], [], 0, ""
        for char in inner:
            if char == "," and depth == 0:
                parts.append(current)
                current = ""
                continue
            depth += char == "{"
            depth -= char == "}"
            current += char
        parts.append(current)
        paths = []
        for part in filter(str.strip, parts):
            head, sep, rest = part.strip().partition("::{")
            if sep:
                paths += expand(prefix + head + "::", "{" + rest)
            else:
                paths.append(prefix + part.strip())
        return paths

    head, sep, rest = tree.partition("::{")
    return expand(head + "::", "{" + rest) if sep else [tree]


def rust_imports(module: tuple[str, ...], file: Path, modules) -> dict[tuple[str, ...], set]:
    """The modules `module` (in `file`) imports, each with the names it takes from it."""
    code = strip_rust_tests(strip_rust_comments(file.read_text()))
    imported: dict[tuple[str, ...], set] = {}
    for match in RUST_PATH.finditer(code):
        for path in rust_use_groups(code, match.start()):
            parts = [p for p in path.split("::") if p]
            anchor, rest = parts[0], parts[1:]
            base = [] if anchor == "crate" else list(module)
            if anchor == "super":
                base = base[:-1]
                while rest and rest[0] == "super":
                    base, rest = base[:-1], rest[1:]
            full = base + rest
            for length in range(len(full), -1, -1):
                target = tuple(full[:length])
                if target in modules:
                    break
            if target != module:
                name = full[length] if length < len(full) else "*"
                imported.setdefault(target, set()).add(name)
    return imported


def find_cycles(graph: dict) -> list[list]:
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on_stack, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(10000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def cycle_problems(graph: dict, name) -> list[str]:
    """Each import cycle of `graph`, its files (`name` of each) and the names that tie them."""
    problems = []
    for cycle in find_cycles(graph):
        ties = [
            f"    {name(a)} -> {name(b)}: {', '.join(sorted(graph[a][b]))}"
            for a in cycle
            for b in cycle
            if b in graph[a]
        ]
        problems.append("import cycle: " + ", ".join(map(name, cycle)) + "\n" + "\n".join(ties))
    return problems


def declared_order(src: Path, module: tuple[str, ...], modules) -> list[tuple[str, ...]]:
    """The modules of the crate in the order the `mod` declarations list them, children
    before their folder's mod.rs."""
    order = []
    for child in RUST_MOD.findall(strip_rust_comments(modules[module].read_text())):
        path = (*module, child)
        if path in modules:
            file = modules[path]
            if file.name == "mod.rs":
                order += declared_order(src, path, modules)
            else:
                order.append(path)
    order.append(module)
    return order


def check_rust(crate: Path) -> list[str]:
    src = crate / "src"
    modules = rust_module_files(src)
    # Test modules in files of their own (`#[cfg(test)] mod tests;`) are tests too.
    product = {m: f for m, f in modules.items() if not (m and m[-1] == "tests")}
    graph = {m: rust_imports(m, f, modules) for m, f in product.items()}
    # `#[macro_export]` puts a macro at the crate root, wherever it is defined: naming it
    # there ties a file to the macro's own file, not to lib.rs.
    exported_macros = {
        name for f in modules.values() for name in EXPORTED_MACRO.findall(f.read_text())
    }
    for imports in graph.values():
        names = imports.get((), set())
        names -= exported_macros
        if () in imports and not names:
            del imports[()]

    def name(module):
        return os.path.relpath(modules[module], ROOT)

    problems = cycle_problems(graph, name)
    problems += side_problems(src, graph, name)
    order = declared_order(src, (), modules)
    place = {m: i for i, m in enumerate(order)}
    for module in order:
        for target, names in sorted(graph.get(module, {}).items()):
            if target in place and place[target] > place[module]:
                problems.append(
                    f"layer order: {name(module)} imports {name(target)} "
                    f"({', '.join(sorted(names))}), which lib.rs lists after it"
                )
    return problems


def side_problems(src: Path, graph: dict, name) -> list[str]:
    """Imports that cross a `// module-layers: A never imports B, C` line of lib.rs."""

    def path(text: str) -> tuple[str, ...]:
        return tuple(part for part in text.strip().split("::") if part)

    def within(module: tuple[str, ...], top: tuple[str, ...]) -> bool:
        return module[: len(top)] == top

    problems = []
    for importer, forbidden in SIDE_RULE.findall((src / "lib.rs").read_text()):
        side = path(importer)
        others = [path(other) for other in forbidden.split(",")]
        for module, imports in sorted(graph.items()):
            if not within(module, side):
                continue
            for target, names in sorted(imports.items()):
                crossed = [other for other in others if within(target, other)]
                if crossed:
                    problems.append(
                        f"side rule: {name(module)} imports {name(target)} "
                        f"({', '.join(sorted(names))}), but lib.rs says "
                        f"{importer} never imports {'::'.join(crossed[0])}"
                    )
    return problems


def python_imports(file: Path, package: Path) -> dict[str, set]:
    """The package modules `file` imports, each with the names it takes."""
    root_name = package.name
    module = ".".join(file.relative_to(package.parent).with_suffix("").parts)
    if module.endswith(".__init__"):
        module = module[: -len(".__init__")]
        here = module
    else:
        here = module.rsplit(".", 1)[0]
    imported: dict[str, set] = {}
    for node in ast.walk(ast.parse(file.read_text(), str(file))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != root_name:
                continue
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                key = candidate if module_file(candidate, package) else target
                imported.setdefault(key, set()).add(alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == root_name:
                    imported.setdefault(alias.name, set()).add("*")
    imported.pop(module, None)
    return {k: v for k, v in imported.items() if module_file(k, package)}


def module_file(module: str, package: Path) -> Path | None:
    """The file of the dotted `module` in `package`'s tree (a package's `__init__.py`), or
    None when it is not a Python file there."""
    path = package.parent.joinpath(*module.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def check_python(package: Path) -> list[str]:
    """Every import cycle among the modules of `package` (rule 1)."""
    files = sorted(package.rglob("*.py"))
    graph = {}
    for file in files:
        module = ".".join(file.relative_to(package.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        graph[module] = python_imports(file, package)
    return cycle_problems(graph, str)


# ---- Python: the floors of each package ------------------------------------------------------

#: The floors of the Python package, from the ground up, for each package (dotted name ->
#: floors): a floor is the names of the package's modules and subpackages that stand side by
#: side (`__init__`: the package's own module; `*`: every module not named on another floor).
PYTHON_FLOORS = {
    "dlbridge": (
        ("__init__",),  # the extension's names
        ("_kernel_signatures",),  # what dlbridge.jax and dlbridge.torch read of a kernel
        ("distributed", "check", "jax", "torch", "safetensors"),
        ("__main__",),  # the command line
    ),
    "dlbridge.check": (
        ("rules", "abi", "capi"),
        ("capsules", "records"),
        ("capsule_only", "fake_producers"),
        ("frameworks",),
        ("catalogue", "probes"),
        # The check families, side by side on what they share (`probes`).
        ("producer_checks", "exchange_checks", "device_checks", "consumer_checks", "matrix"),
        ("report", "report_junit", "report_html", "baseline", "worker"),
        ("cli",),
        ("__init__",),
    ),
    "dlbridge.check.frameworks": (
        ("base",),  # the record and the protocol
        ("*",),  # one module per framework
        ("__init__",),  # the registry
    ),
}
#: The floor name that stands for every module of a package not named on another floor.
EVERY_OTHER = "*"


def python_modules(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of `package` (a package's own module is
    named as the package)."""
    modules = {}
    for file in sorted(package.rglob("*.py")):
        module = ".".join(file.relative_to(package.parent).with_suffix("").parts)
        modules[module.removesuffix(".__init__")] = file
    return modules


def python_placement(module: str, modules: dict[str, Path]) -> list[tuple[str, str]]:
    """What stands for `module` in each package above it, from the outermost: (package, the
    name of the module or subpackage there, `__init__` for a package's own module)."""
    parts = module.split(".")
    is_package = modules[module].name == "__init__.py"
    path = [(".".join(parts[:i]), parts[i]) for i in range(1, len(parts))]
    return [*path, (module, "__init__")] if is_package else path


def python_floor_of(floors: dict, package: str, name: str) -> int | None:
    """The floor of `name` in `package`'s declared floors (counted from 0), or None."""
    declared = floors.get(package, ())
    for index, floor in enumerate(declared):
        if name in floor:
            return index
    for index, floor in enumerate(declared):
        if EVERY_OTHER in floor and name != "__init__":
            return index
    return None


def python_floor_declaration_problems(floors: dict, modules: dict[str, Path]) -> list[str]:
    """Names declared for nothing or twice, and modules or subpackages placed on no floor."""
    problems = []
    present: dict[str, set] = {}
    for module in modules:
        for package, name in python_placement(module, modules):
            present.setdefault(package, set()).add(name)
    for package, declared in floors.items():
        named = [name for floor in declared for name in floor if name != EVERY_OTHER]
        problems.extend(
            f"layer order: {package}: {name} is named on two floors"
            for name in sorted({n for n in named if named.count(n) > 1})
        )
        problems.extend(
            f"layer order: {package}: {name} is declared on a floor, but there is no such "
            "module or subpackage"
            for name in named
            if name not in present.get(package, set())
        )
    problems.extend(
        f"layer order: package {package} has no floors: declare them (PYTHON_FLOORS in "
        "scripts/module-layers.py)"
        for package in sorted(present)
        if package not in floors
    )
    problems.extend(
        f"layer order: {package if name == '__init__' else f'{package}.{name}'} is on no "
        f"floor: name {name} on a floor of {package} (PYTHON_FLOORS in "
        "scripts/module-layers.py)"
        for package in sorted(present)
        if package in floors
        for name in sorted(present[package])
        if python_floor_of(floors, package, name) is None
    )
    return problems


def python_meeting_point(placement: list, target_placement: list) -> tuple[str, str, str]:
    """Where two modules' placements part: (the package nearest both, what stands for the
    first module there, what stands for the second)."""
    for (package, name), (_, target_name) in zip(placement, target_placement):
        if name != target_name:
            return package, name, target_name
    raise ValueError("a module and itself have no meeting point")


def check_python_floors(package: Path, floors: dict) -> list[str]:
    """Every import of `package` from a module on the same floor or a higher one, and every
    module placed on no floor (rule 4)."""
    modules = python_modules(package)
    problems = python_floor_declaration_problems(floors, modules)
    for module, file in modules.items():
        placement = python_placement(module, modules)
        for target, names in sorted(python_imports(file, package).items()):
            package_name, name, target_name = python_meeting_point(
                placement, python_placement(target, modules)
            )
            here = python_floor_of(floors, package_name, name)
            there = python_floor_of(floors, package_name, target_name)
            if here is None or there is None or there < here:
                continue
            where = (
                f"on the same floor of {package_name} (siblings never import each other)"
                if there == here
                else f"on a higher floor of {package_name} ({target_name} above {name})"
            )
            problems.append(
                f"layer order: {module} imports {target} ({', '.join(sorted(names))}), which "
                f"stands {where}"
            )
    return problems


def main() -> int:
    problems = []
    crates = sorted(p.parent for p in ROOT.glob("crates/*/Cargo.toml"))
    for crate in crates:
        problems += check_rust(crate)
    problems += check_python(PYTHON_PACKAGE)
    problems += check_python_floors(PYTHON_PACKAGE, PYTHON_FLOORS)
    for problem in problems:
        print(problem)
    checked = ", ".join(str(c.relative_to(ROOT)) for c in crates)
    print(
        f"module-layers: {len(problems)} problem(s) in {checked} and "
        f"{PYTHON_PACKAGE.relative_to(ROOT)}"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
