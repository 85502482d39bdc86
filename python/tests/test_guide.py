"""Every code block of the user guide (docs/guide/src, `make guide`) runs in the tests, or is
checked for what it is, and every link of the guide reaches its target.

- `python` blocks run here, each as a script in a fresh interpreter (this one: the virtual
  environment's), with checks appended where what the block does needs one
  (`PYTHON_CHECKS`). The one that needs MXNet's own environment runs there
  (`PYTHON_BLOCKS_ELSEWHERE`). A block's frameworks are imported through
  `_frameworks.import_framework` first, so a framework without a wheel here skips it the way
  the suite allows, and under CI a missing framework fails.
- `rust` blocks are doc tests: each page that holds one is included by a crate's
  `src/guide_doctests.rs` (crates/dlbridge-pyo3/tests/readme_blocks.rs checks which).
- `sh` blocks are commands, checked as the README's are (`_docs.check_sh_blocks`).
- `toml` blocks are manifests: they parse, and the dlbridge crates come from the repository.
- `text` blocks are output, shown as printed.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import tomllib

from _docs import (
    GUIDE,
    REPOSITORY,
    ROOT,
    check_sh_blocks,
    guide_pages,
    imported_modules,
    markdown_blocks,
    python_blocks,
)
from _frameworks import import_framework

#: The frameworks a block may import, and their distributions (python/requirements-test.txt).
FRAMEWORKS = {
    "numpy": "numpy",
    "torch": "torch",
    "jax": "jax",
    "ray": "ray",
    "distributed": "distributed",
}

#: Checks appended to a python block (found by a line it holds) after it ran.
PYTHON_CHECKS = {
    'ray.init(runtime_env={"worker_process_setup_hook": dd.ray_setup_hook("torch", "numpy")})': (
        "if __name__ == '__main__':\n"
        "    assert torch.equal(x, torch.ones(1024))\n"
        "    # A tensor sent to a worker and back, through dlbridge's serializer both ways.\n"
        "    total = client.submit(lambda t: t * 2, torch.ones(8)).result()\n"
        "    assert isinstance(total, torch.Tensor) and float(total.sum()) == 16.0\n"
        "    client.close()\n"
        "    ray.shutdown()\n"
    ),
}

#: The python blocks that run elsewhere (by a line they hold), and where.
PYTHON_BLOCKS_ELSEWHERE = {"import mxnet as mx": "python/tests/mxnet/test_mxnet.py"}

KINDS = {"python", "sh", "text", "toml"}


def rust_kind(info: str) -> bool:
    return info.split(",", maxsplit=1)[0] == "rust"


def blocks_run_here() -> list[tuple[str, str]]:
    """(id, code) of every python block that runs here."""
    return [
        (f"{path.stem}-{line}", code)
        for path, line, code in python_blocks(guide_pages())
        if not any(holding in code for holding in PYTHON_BLOCKS_ELSEWHERE)
    ]


def test_every_block_is_of_a_checked_kind():
    unknown = [
        (path.name, line, info)
        for path in guide_pages()
        for line, info, _ in markdown_blocks(path)
        if info not in KINDS and not rust_kind(info)
    ]
    assert unknown == [], f"guide blocks of no checked kind (page, line, info string): {unknown}"


def test_the_guide_has_its_python_blocks():
    # A guide without them would pass the test below by running nothing.
    assert len(blocks_run_here()) >= 7, [block_id for block_id, _ in blocks_run_here()]
    for where in PYTHON_BLOCKS_ELSEWHERE.values():
        assert "python_block(" in (ROOT / where).read_text(encoding="utf-8"), where
    for holding in [*PYTHON_CHECKS, *PYTHON_BLOCKS_ELSEWHERE]:
        holders = [code for _, _, code in python_blocks(guide_pages()) if holding in code]
        assert len(holders) == 1, f"{len(holders)} python blocks of the guide hold {holding!r}"


@pytest.mark.parametrize(
    ("block_id", "code"), blocks_run_here(), ids=[block_id for block_id, _ in blocks_run_here()]
)
def test_the_python_block_runs(block_id, code, tmp_path):
    for module in sorted(imported_modules(code) & set(FRAMEWORKS)):
        import_framework(module, FRAMEWORKS[module])
    checks = [extra for holding, extra in PYTHON_CHECKS.items() if holding in code]
    script = tmp_path / "block.py"
    script.write_text(code + "".join(checks), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, f"{block_id}:\n" + (result.stdout + result.stderr)[-4000:]


def test_a_failing_block_fails(tmp_path):
    # Positive control of the runner above: an assertion that fails in a block fails the test.
    with pytest.raises(AssertionError):
        test_the_python_block_runs("control", "assert 1 + 1 == 3\n", tmp_path)


def test_every_sh_block_names_what_exists():
    checked = sum(check_sh_blocks(path) for path in guide_pages())
    assert checked >= 20, f"only {checked} command lines found in the guide's sh blocks"


def test_every_toml_block_is_a_manifest_of_the_repositorys_crates():
    found = 0
    for path in guide_pages():
        for line, info, code in markdown_blocks(path):
            if info != "toml":
                continue
            manifest = tomllib.loads(code)
            for name, spec in manifest.get("dependencies", {}).items():
                if name.startswith("dlbridge"):
                    assert (ROOT / "crates" / name / "Cargo.toml").is_file(), (path.name, line)
                    assert spec == {"git": REPOSITORY}, f"{path.name}:{line}: {name} = {spec}"
                    found += 1
    assert found >= 2


# --- the book: its summary and its links --------------------------------------------------


def test_the_summary_lists_every_page():
    summary = (GUIDE / "SUMMARY.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\]\(([^)]+\.md)\)", summary))
    pages = {path.name for path in guide_pages()} - {"SUMMARY.md"}
    assert listed == pages, f"listed but missing: {listed - pages}; not listed: {pages - listed}"


def heading_ids(path) -> set[str]:
    """The ids mdBook gives the headings of a page (its `normalize_id`)."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    ids = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.MULTILINE):
        plain = heading.replace("`", "").strip().lower()
        slug = "".join(
            "-" if char == " " else char for char in plain if char.isalnum() or char in " _-"
        )
        ids.add(slug)
    return ids


def guide_links() -> list[tuple[str, str]]:
    """(page, link target) of every Markdown link of the guide, outside code blocks."""
    found = []
    for path in guide_pages():
        text = re.sub(
            r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE
        )
        found += [(path.name, target) for target in re.findall(r"\]\(([^)\s]+)\)", text)]
    return found


def test_links_between_pages_reach_their_page_and_heading():
    checked = 0
    for page, target in guide_links():
        if "://" in target:
            continue
        name, _, anchor = target.partition("#")
        destination = GUIDE / (name or page)
        assert destination.is_file(), f"{page}: a link to a missing page {target}"
        if anchor:
            assert anchor in heading_ids(destination), f"{page}: no heading #{anchor} in {name}"
        checked += 1
    assert checked >= 20, checked


def test_links_into_the_repository_reach_a_file():
    prefix = f"{REPOSITORY}/blob/main/"
    targets = [target for _, target in guide_links() if target.startswith(prefix)]
    assert len(targets) >= 10, targets
    missing = [t for t in targets if not (ROOT / t[len(prefix) :].split("#")[0]).exists()]
    assert missing == [], f"links to files the repository does not have: {missing}"


def test_the_heading_ids_are_mdbooks():
    # A control of heading_ids: the ids mdBook 0.5 gives these headings.
    ids = heading_ids(GUIDE / "checker.md")
    assert "frameworks-without-__dlpack__" in ids and "exit-status" in ids


def test_no_work_log_in_the_guide():
    # The guide is looked things up in: no "issue 30" or "this session" (upstream issues of
    # other projects are cited with their number sign: "nalgebra issue #1616").
    for path in [ROOT / "README.md", *guide_pages()]:
        text = path.read_text(encoding="utf-8")
        found = re.findall(r"\b[Ii]ssues? \d+|\bthis session\b|\bTODO\b", text)
        assert found == [], f"{path.name}: {found}"


def test_make_guide_builds_the_book_outside_make_test():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^guide:", makefile, flags=re.MULTILINE), "no `make guide`"
    assert "MDBOOK := target/tools/bin/mdbook" in makefile
    assert "$(MDBOOK) build docs/guide" in makefile
    stages = re.search(r"^TEST_STAGES := (.*)$", makefile, flags=re.MULTILINE)
    assert stages and "guide" not in stages.group(1).split(), (
        "`make guide` is not part of make test"
    )
    book = tomllib.loads((GUIDE.parent / "book.toml").read_text(encoding="utf-8"))
    assert book["build"]["build-dir"] == "../../target/guide"
