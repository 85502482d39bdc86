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
JSON document per crate; a re-export is printed as the item it names, whatever private module
that item is defined in. `--from-json DIR` reads the JSON files rustdoc left in DIR instead.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRATES = ("dlbridge", "dlbridge-pyo3")
# Keys that say where an item was written or how rustdoc numbered it, not what it is.
LOCATION_KEYS = {"span", "id", "crate_id", "links"}
# Keys whose value is a list of ids of the items they hold, expanded in place.
ITEM_LISTS = {"items", "impls", "fields", "variants", "implementations"}
# Source positions rustdoc writes into some attributes' text.
SPAN_TEXT = re.compile(r"span: [^)]*?\(#\d+\)|[\w./-]+\.rs:\d+:\d+: \d+:\d+ \(#\d+\)")
# The name rustdoc gives an `impl Trait` argument's generic: the trait as the source spelled it.
IMPL_TRAIT_NAME = re.compile(r"^impl (?:[\w$]+::)*(\w+)")


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
            path = paths[key]["path"]
            # The crate's own items by crate and name: the private module an item is
            # defined in is no part of the API (users name it where it is re-exported).
            return "::".join(path if paths[key]["crate_id"] else [path[0], path[-1]])
        if key in index:
            return index[key].get("name") or f"<{next(iter(index[key]['inner']))}>"
        return "<external>"

    def walk(value, seen: frozenset):
        if isinstance(value, dict):
            out = {}
            if "source" in value and "is_glob" in value:
                # A re-export (`pub use module::Item`): what it names, expanded where it is
                # the crate's own, not the private path it is written with.
                target = value.get("id")
                out["name"] = value.get("name")
                out["is_glob"] = value["is_glob"]
                out["item"] = item(target, seen) if target is not None else value["source"]
                return out
            if "target" in value or ("id" in value and "path" in value and "args" in value):
                # A path to a type or trait: what it names, not how the source spelled it.
                value = {key: inner for key, inner in value.items() if key != "path"}
            for key, inner in value.items():
                if key == "docs" and not with_docs:
                    continue
                if key == "id" and isinstance(inner, (int, str)) and len(value) > 1:
                    out["target"] = name_of(inner)
                    continue
                if key in LOCATION_KEYS:
                    continue
                if key in ITEM_LISTS and isinstance(inner, list):
                    entries = [item(element, seen) for element in inner]
                    if key == "impls":
                        entries = inherent_methods(entries)
                    out[key] = sorted(entries, key=lambda entry: json.dumps(entry, sort_keys=True))
                    continue
                if key == "tuple" and all(e is None or isinstance(e, int) for e in inner or []):
                    # A tuple struct's or variant's fields, by id (None: a hidden field).
                    out[key] = [None if e is None else item(e, seen) for e in inner]
                    continue
                out[key] = walk(inner, seen)
            return out
        if isinstance(value, list):
            return [walk(element, seen) for element in value]
        if isinstance(value, str):
            return IMPL_TRAIT_NAME.sub(r"impl \1", SPAN_TEXT.sub("span: _", value))
        return value

    def inherent_methods(impls: list) -> list:
        """A type's impls with its inherent impl blocks taken apart into one entry per item
        (with the block's generics): how methods are grouped into blocks is not API."""
        out = []
        for entry in impls:
            block = entry.get("inner", {}).get("impl") if isinstance(entry, dict) else None
            if not block or block.get("trait") is not None:
                out.append(entry)
                continue
            generics = block.get("generics")
            out.extend(
                {"inherent": member, "generics": generics} for member in block.get("items", [])
            )
        return out

    def item(item_id, seen: frozenset):
        key = str(item_id)
        if key not in index or key in seen:
            return name_of(item_id)
        return walk(index[key], seen | {key})

    return item(data["root"], frozenset())


def main() -> int:
    arguments = sys.argv[1:]
    with_docs = "--docs" in arguments
    target = ROOT / "target" / "public-api"
    saved = (
        Path(arguments[arguments.index("--from-json") + 1]) if "--from-json" in arguments else None
    )
    for crate in CRATES:
        if saved is None:
            data = rustdoc_json(crate, target)
        else:
            data = json.loads((saved / f"{crate.replace('-', '_')}.json").read_text())
        api = canonical(data, with_docs)
        print(f"# {crate}")
        print(json.dumps(api, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
