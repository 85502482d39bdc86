#!/usr/bin/env bash
# Runs the dlbridge Python test suite (python/tests) with the project's virtual environment.
#
#   scripts/python-tests.sh [extra pytest arguments...]
#
# It builds and installs nothing: the dlbridge extension must already be installed in the
# environment (the Makefile runs `maturin develop` first). Every interop file runs in its own
# Python process, because some frameworks cannot share one (importing TensorFlow and then
# PaddlePaddle crashes the interpreter); the files directly under python/tests
# (protocol, bad input, exchange API, kernel arguments, the matmul example, leaks, threads,
# pickling, frames for Ray and Dask, one semantics on every path, autograd, aliasing, the catalogue, the import rules, the
# installed package: version, command line, what works without NumPy) share one
# more process; the TVM example's test (TVM's compiler beside PyTorch and JAX) has its own. A run fails when pytest fails, when its report counts a failure (whatever the
# exit status: a sanitizer runtime may rewrite it), when it collects no tests (exit code 5),
# when the process crashes or times out, or when it leaves no report. The last line printed is the sum over
# all runs, alone on its line: "N passed, M failed".
#
# A file skipped as a whole (pytest.importorskip of a framework that is not installed; pytest
# then exits with 5 but reports the skip) is listed as SKIPPED and does not fail the run,
# unless PYTHON_TESTS_STRICT=1; a file skipped because its framework has no wheel for this
# platform or Python (python/tests/_frameworks.py) is SKIPPED even then, with the reason,
# except on Linux x86_64, where every framework has wheels. A test that needs the test
# kernels (`dlbridge._dlbridge._testing`, built with the cargo feature `testing`: `make
# python-build`) skips where they are missing, and fails instead with PYTHON_TESTS_STRICT=1
# or CI=true (python/tests/_kernels.py).
#
# The "mxnet" run (python/tests/mxnet) uses MXNET_PYTHON (default: target/mxnet-venv/bin/python,
# made by scripts/mxnet-env.sh); where that interpreter is missing, the run fails.
#
# Environment: PYTHON (default: .venv/bin/python at the repository root), RUN_TIMEOUT
# (seconds per process, default 1200), PYTHON_TESTS_STRICT (1: a skipped file fails),
# PYTHON_TESTS_ONLY (space-separated run names, e.g. "core torch": only those runs).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TESTS="$ROOT/python/tests"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
RUN_TIMEOUT="${RUN_TIMEOUT:-1200}"
STRICT="${PYTHON_TESTS_STRICT:-0}"
ONLY="${PYTHON_TESTS_ONLY:-}"

if [[ ! -x "$PYTHON" ]]; then
    echo "python-tests: no Python at $PYTHON (create the virtual environment first)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

REPORTS="$(mktemp -d "${TMPDIR:-/tmp}/dlbridge-pytest.XXXXXX")"
trap 'rm -rf "$REPORTS"' EXIT

# name|files (space-separated, relative to python/tests)
RUNS=("core|test_protocol.py test_bad_input.py test_exchange_api.py test_kernel_args.py test_example_matmul.py test_example_tensor_libraries.py test_leaks.py test_threads.py test_semantics.py test_autograd.py test_aliasing.py test_load.py test_catalogue.py test_module_layers.py test_returning.py test_explain.py test_package.py test_frameworks.py test_pickle.py test_frames.py test_device_args.py test_device_streams.py test_inplace_rules.py test_kernel_messages.py test_bench_chart.py test_timed_stages.py"
      "check|test_check.py test_check_device.py test_check_dtype_rule.py test_check_frameworks.py test_check_reports.py test_check_html.py test_check_cli.py test_check_planted.py test_check_rules.py"
      "tvm-example|test_example_tvm_matmul.py"
      "cuda-example|test_example_cuda_saxpy.py")
for file in "$TESTS"/interop/test_*.py; do
    [[ -e "$file" ]] || continue
    name="$(basename "$file" .py)"
    RUNS+=("${name#test_}|interop/$(basename "$file")")
done
# dlbridge.distributed on real clusters: Ray's (two nodes) and Dask's, each in its own process.
RUNS+=("ray|distributed/test_ray.py" "dask|distributed/test_dask.py")
# MXNet 1.9.1 needs NumPy < 1.24 and so an environment of its own (scripts/mxnet-env.sh, run
# by `make python-test`): a third field names the run's interpreter.
RUNS+=("mxnet|mxnet/test_mxnet.py|${MXNET_PYTHON:-$ROOT/target/mxnet-venv/bin/python}")

# Every framework has wheels for Linux x86_64: there, a strict run skips none.
LINUX_X86_64=0
if [[ "$(uname -s)" == Linux && "$(uname -m)" == x86_64 ]]; then
    LINUX_X86_64=1
fi

TIMEOUT_CMD=()
if command -v timeout >/dev/null 2>&1; then
    TIMEOUT_CMD=(timeout --kill-after=30 "$RUN_TIMEOUT")
fi

overall=0
summary_lines=()
for run in "${RUNS[@]}"; do
    name="${run%%|*}"
    if [[ -n "$ONLY" && " $ONLY " != *" $name "* ]]; then
        continue
    fi
    spec="${run#*|}"
    run_python="$PYTHON"
    if [[ "$spec" == *"|"* ]]; then
        run_python="${spec#*|}"
        spec="${spec%%|*}"
    fi
    read -r -a files <<<"$spec"
    paths=()
    for f in "${files[@]}"; do paths+=("$TESTS/$f"); done
    xml="$REPORTS/$name.xml"

    echo "=== python-tests: $name (${files[*]})"
    (cd "$ROOT" && "${TIMEOUT_CMD[@]}" "$run_python" -m pytest -q --junitxml="$xml" "${paths[@]}" "$@")
    rc=$?

    # passed failed skipped, from the JUnit report (missing report: -1); then whether every
    # skip is for a framework without wheels here (python/tests/_frameworks.py) and the
    # first skip's reason.
    read -r passed failed skipped nowheel nogpu reason < <("$PYTHON" - "$xml" <<'PY'
import sys
import xml.etree.ElementTree as ET

try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError):
    print(-1, -1, -1, 0, 0)
    raise SystemExit(0)
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
tests = failed = skipped = 0
for suite in suites:
    tests += int(suite.get("tests", 0))
    failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    skipped += int(suite.get("skipped", 0))
# A skip at collection keeps its reason in the element's text ("... 'Skipped: REASON')").
reasons = []
for element in root.iter("skipped"):
    text = element.text or ""
    reason = text.split("Skipped: ", 1)[1] if "Skipped: " in text else ""
    if reason[-2:] in ("')", '")'):
        reason = reason[:-2]
    reasons.append(reason or element.get("message", ""))
nowheel = int(bool(reasons) and all("no wheel for this platform" in r for r in reasons))
# GPU-only tests (marker `gpu`, python/tests/_gpu.py) skipped for want of a GPU: counted apart.
nogpu = sum("no CUDA GPU here" in r for r in reasons)
first = " ".join(reasons[0].split()) if reasons else ""
print(tests - failed - skipped, failed, skipped, nowheel, nogpu, first)
PY
    )

    status="ok"
    if [[ "$passed" == "-1" ]]; then
        # Crashed (e.g. SIGSEGV), killed by the timeout, or never started: count one failure.
        passed=0
        failed=1
        skipped=0
        status="no report (exit code $rc)"
    elif [[ $rc -eq 5 && $skipped -gt 0 && $failed -eq 0 && $nowheel -eq 1 \
            && ( "$STRICT" != "1" || "$LINUX_X86_64" != "1" ) ]]; then
        # The framework has no wheel for this platform or Python, so the requirements leave
        # it out (their environment markers). Reported, not failed, even where strict, except
        # on Linux x86_64 where every framework has wheels.
        status="SKIPPED: $reason"
    elif [[ $rc -eq 5 && $skipped -gt 0 && $failed -eq 0 && "$STRICT" != "1" ]]; then
        # The whole file was skipped at import (pytest.importorskip: the framework is not
        # installed). Reported, not failed, unless PYTHON_TESTS_STRICT=1.
        status="SKIPPED: ${reason:-whole file skipped (framework not installed?)}"
    elif [[ $rc -eq 5 ]]; then
        status="no tests collected (exit code 5)"
        failed=$((failed > 0 ? failed : 1))
    elif [[ $rc -ne 0 ]]; then
        status="failed (exit code $rc)"
        failed=$((failed > 0 ? failed : 1))
    elif [[ $failed -gt 0 ]]; then
        # The report counts failures although the process exited 0: a runtime that rewrites
        # the exit status at exit did it (LeakSanitizer's `exitcode=0` under ASan replaces
        # pytest's status 1 whenever it reports the interpreter's leaks). The report decides.
        status="failed ($failed in the report, exit code 0)"
    fi
    if [[ "$status" != "ok" && "$status" != SKIPPED* ]]; then
        overall=1
    fi
    if [[ "$status" == "ok" && "${nogpu:-0}" -gt 0 ]]; then
        # GPU-only tests skipped where there is no GPU: allowed also where strict, and said.
        status="ok ($nogpu skipped: need a GPU)"
    fi
    summary_lines+=("$(printf '%-12s %5d passed %5d failed %5d skipped  %s' \
        "$name" "$passed" "$failed" "$skipped" "$status")")
    TOTAL_PASSED=$(( ${TOTAL_PASSED:-0} + passed ))
    TOTAL_FAILED=$(( ${TOTAL_FAILED:-0} + failed ))
done

echo "=== python-tests: summary"
for line in "${summary_lines[@]}"; do
    echo "$line"
done
echo "${TOTAL_PASSED:-0} passed, ${TOTAL_FAILED:-0} failed"
exit "$overall"
