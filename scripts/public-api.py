#!/usr/bin/env python3
"""The public Rust API of the workspace's library crates, from rustdoc's JSON, in a form two
checkouts can be compared by (`diff`): every public item reachable from a crate's root, with
its kind, signature, generics, trait impls and attributes, and ids, spans and file paths left
out, so that moving an item between private modules changes nothing while any change a user
could see (a renamed, added or removed item, another signature, bound or trait impl) does.
Docs are printed apart (`--docs`), since rewording them is not an API change.

    python3 scripts/public-api.py [--docs] > api.txt     # needs the nightly toolchain

Runs `cargo +nightly rustdoc --output-format json` for dlbridge and dlbridge-pyo3 with every
feature into target/public-api (CARGO_TARGET_DIR is left alone), then prints one canonical
JSON document per crate.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRATES = ("dlbridge", "dlbridge-pyo3")
# Keys that say where an item was written or how rustdoc numbered it, not what it is.
LOCATION_KEYS = {"span", "id", "crate_id", "links"}
# Keys whose value is a list of ids of the items they hold, expanded in place.
ITEM_LISTS = {"items", "impls", "fields", "variants", "implementations"}


def rustdoc_json(crate: str, target: Path) -> dict:
    env = dict(os.environ, RUSTDOCFLAGS="", CARGO_TARGET_DIR=str(target))
    subprocess.run(
        [
            "cargo",
            "+nightly",
            "rustdoc",
            "-q",
            "-p",
            crate,
            "--lib",
            "--all-features",
            "--",
            "-Z",
            "unstable-options",
            "--output-format",
            "json",
        ],
        cwd=ROOT,
        env=env,
        check=True,
    )
    return json.loads((target / "doc" / f"{crate.replace('-', '_')}.json").read_text())


def canonical(data: dict, with_docs: bool):
    index, paths = data["index"], data["paths"]

    def name_of(item_id) -> str:
        key = str(item_id)
        if key in paths:
            return "::".join(paths[key]["path"])
        if key in index:
            return index[key].get("name") or f"<{next(iter(index[key]['inner']))}>"
        return "<external>"

    def walk(value, seen: frozenset):
        if isinstance(value, dict):
            out = {}
            for key, inner in value.items():
                if key == "docs" and not with_docs:
                    continue
                if key == "id" and isinstance(inner, (int, str)) and len(value) > 1:
                    out["target"] = name_of(inner)
                    continue
                if key in LOCATION_KEYS:
                    continue
                if key in ITEM_LISTS and isinstance(inner, list):
                    out[key] = sorted(
                        (item(element, seen) for element in inner),
                        key=lambda entry: json.dumps(entry, sort_keys=True),
                    )
                    continue
                out[key] = walk(inner, seen)
            return out
        if isinstance(value, list):
            return [walk(element, seen) for element in value]
        return value

    def item(item_id, seen: frozenset):
        key = str(item_id)
        if key not in index or key in seen:
            return name_of(item_id)
        return walk(index[key], seen | {key})

    return item(data["root"], frozenset())


def main() -> int:
    with_docs = "--docs" in sys.argv[1:]
    target = ROOT / "target" / "public-api"
    for crate in CRATES:
        api = canonical(rustdoc_json(crate, target), with_docs)
        print(f"# {crate}")
        print(json.dumps(api, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
