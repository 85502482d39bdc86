"""The rules the test suite keeps so that a green run hides nothing (CONTRIBUTING.md, "Rules for
the tests"), read from the test sources themselves:

- frameworks and example extensions are imported through `_frameworks` (whose skips a strict
  run judges), never `pytest.importorskip`; no test is skipped by a marker of its own
  (`skipif`, `skip`, `xfail`): skips come from the helpers, with reasons the allow-list of
  `_skips.py` knows or rejects;
- GPU tests carry the one marker, `gpu`, and every file holding one is on the one list that
  scripts/gpu-run.sh runs on the GPU machine;
- the Rust GPU tests (`gpu_*`) are ignored with the reason "needs a GPU", so that a machine
  without one reports them as ignored rather than passed, and the GPU kit runs them.
"""

from __future__ import annotations

import os
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESTS = ROOT / "python" / "tests"


def python_test_files():
    return sorted(path for path in TESTS.rglob("*.py") if path.name != "test_suite_rules.py")


def uses(pattern: str) -> list[str]:
    found = []
    for path in python_test_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if re.search(pattern, code):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def test_no_importorskip():
    assert uses(r"importorskip\(") == [], "use _frameworks.import_framework / import_example"


def test_no_skip_markers():
    assert uses(r"mark\.(skipif|skip|xfail)\b") == [], (
        "a skip marker hides a test from CI: assert the behaviour on each platform, or use "
        "the helpers (_gpu's `gpu` marker, _frameworks, _skips.not_on_platform)"
    )


def gpu_run_list() -> set[str]:
    script = (ROOT / "scripts" / "gpu-run.sh").read_text(encoding="utf-8")
    listing = re.search(r"gpu_test_files=\(([^)]*)\)", script)
    assert listing, "scripts/gpu-run.sh has no gpu_test_files=(...) list"
    return set(listing.group(1).split())


def test_every_file_with_gpu_tests_is_on_the_gpu_machines_list():
    marked = {
        str(path.relative_to(ROOT))
        for path in python_test_files()
        if not path.name.startswith("_")
        and re.search(r"pytest\.mark\.gpu\b", path.read_text(encoding="utf-8"))
    }
    assert marked, "no test file has a GPU test"
    assert marked == gpu_run_list(), (
        f"on the list but without GPU tests: {sorted(gpu_run_list() - marked)}; "
        f"with GPU tests but not on the list: {sorted(marked - gpu_run_list())}"
    )


def test_gpu_tests_are_not_gated_by_an_ad_hoc_cuda_check():
    # A `cuda.is_available()` skip is invisible to DLBRIDGE_REQUIRE_GPU and to the summary.
    assert uses(r"skip.*cuda\.is_available|cuda\.is_available.*skip") == []


def test_rust_gpu_tests_are_ignored_as_needing_a_gpu():
    tests = []
    for path in sorted((ROOT / "crates").rglob("*.rs")):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"((?:#\[[^\n]*\]\s*)*)fn (gpu_\w+)\(", text):
            attributes = match.group(1)
            if "#[test]" not in attributes:
                continue
            tests.append(match.group(2))
            assert '#[ignore = "needs a GPU"]' in attributes, (
                f"{path.relative_to(ROOT)}: {match.group(2)} is not "
                '#[ignore = "needs a GPU"]: without a GPU it would count as passed'
            )
    assert len(tests) >= 6, tests


def test_every_compile_fail_doc_test_names_its_error_code():
    # Without a code, any error passes the test (a typo as well as the misuse it shows).
    bare = []
    for path in sorted((ROOT / "crates").rglob("*.rs")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            fence = re.search(r"```(\S*compile_fail\S*)", line)
            if fence and not re.search(r"\bE\d{4}\b", fence.group(1)):
                bare.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert bare == [], "compile_fail doc tests without an error code (compile_fail,E0XXX)"


def test_the_rustdoc_wrapper_checks_compile_fail_error_codes(tmp_path):
    # Positive control of scripts/rustdoc-error-codes.sh, which `make rust-test` runs the doc
    # tests with: a compile_fail test whose code is wrong must fail there (stable rustdoc
    # alone passes it, as the first run shows).
    import shutil
    import subprocess

    cargo = shutil.which("cargo")
    assert cargo, "cargo is not on PATH (the suite runs where the crates are built)"
    (tmp_path / "src").mkdir()
    (tmp_path / "Cargo.toml").write_text(
        '[package]\nname = "wrong_code"\nversion = "0.0.0"\nedition = "2021"\n\n[workspace]\n',
        encoding="utf-8",
    )
    (tmp_path / "src" / "lib.rs").write_text(
        "//! Crate.\n/// ```compile_fail,E0308\n/// let x: i32 = ;\n/// ```\npub fn f() {}\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k != "RUSTDOC"}
    env["CARGO_TARGET_DIR"] = str(tmp_path / "target")

    def doc_test(**extra):
        return subprocess.run(
            [cargo, "test", "--doc", "--quiet"],
            cwd=tmp_path,
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    plain = doc_test()
    assert plain.returncode == 0, plain.stderr[-2000:]
    checked = doc_test(RUSTDOC=str(ROOT / "scripts" / "rustdoc-error-codes.sh"))
    assert checked.returncode != 0, checked.stdout[-2000:]
    assert "Some expected error codes were not found" in checked.stdout + checked.stderr
