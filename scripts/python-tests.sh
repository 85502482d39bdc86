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
# pickling, frames for Ray and Dask, safetensors files, one semantics on every path, autograd, aliasing, the catalogue, the import rules, the
# installed package: version, command line, what works without NumPy) share one
# more process; the TVM example's test (TVM's compiler beside PyTorch and JAX) has its own. A
# run fails when pytest fails, when its report counts a failure (whatever the exit status: a
# sanitizer runtime may rewrite it), when it collects no tests (exit code 5 without a skip),
# when the process crashes or times out, when it leaves no report, or, where strict, when it
# skipped a test off the allow-list (below). The summary gives each run's passed, failed and
# skipped tests and the number that ran in all, so that a drop shows; the last line printed
# is the sum over all runs, alone on its line: "N passed, M failed".
#
# Skips. Under CI=true or PYTHON_TESTS_STRICT=1 (strict), a run fails when any of its tests
# (or a whole file) was skipped for a reason that is not on the allow-list of
# python/tests/_skips.py: a CUDA GPU missing (tests marked `gpu`), and, off Linux x86_64 only,
# a framework without a wheel for this platform or a test of another operating system. Each
# such skip is printed with its test and reason. Elsewhere skips are counted and their reasons
# printed, and do not fail. The skips are read from pytest's own JUnit report of each run,
# after it ended (python/tests/_skips.py REPORT.xml).
#
# The "mxnet" run (python/tests/mxnet) uses MXNET_PYTHON (default: target/mxnet-venv/bin/python,
# made by scripts/mxnet-env.sh); where that interpreter is missing, the run fails.
#
# Environment: PYTHON (default: .venv/bin/python at the repository root), RUN_TIMEOUT
# (seconds per process, default 1200), PYTHON_TESTS_STRICT (1: a skip off the allow-list
# fails; CI=true implies it), PYTHON_TESTS_ONLY (space-separated run names, e.g. "core torch":
# only those runs), PYTHON_TESTS_LEAVE_OUT (space-separated files, relative to python/tests,
# that no run collects: the AddressSanitizer run's leave-outs; printed at the start),
# PYTHON_TESTS_RUNS (replaces the list of runs; below).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TESTS="$ROOT/python/tests"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
RUN_TIMEOUT="${RUN_TIMEOUT:-1200}"
STRICT="${PYTHON_TESTS_STRICT:-0}"
[[ "${CI:-}" == "true" ]] && STRICT=1
ONLY="${PYTHON_TESTS_ONLY:-}"
LEAVE_OUT="${PYTHON_TESTS_LEAVE_OUT:-}"

if [[ ! -x "$PYTHON" ]]; then
    echo "python-tests: no Python at $PYTHON (create the virtual environment first)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
if [[ -n "$LEAVE_OUT" ]]; then
    echo "python-tests: left out of every run (PYTHON_TESTS_LEAVE_OUT): $LEAVE_OUT"
fi

REPORTS="$(mktemp -d "${TMPDIR:-/tmp}/dlbridge-pytest.XXXXXX")"
trap 'rm -rf "$REPORTS"' EXIT

# name|files (space-separated, relative to python/tests)
RUNS=("core|test_protocol.py test_bad_input.py test_exchange_api.py test_kernel_args.py test_example_matmul.py test_example_tensor_libraries.py test_to_managed.py test_leaks.py test_threads.py test_semantics.py test_autograd.py test_aliasing.py test_load.py test_catalogue.py test_module_layers.py test_returning.py test_explain.py test_package.py test_frameworks.py test_pickle.py test_frames.py test_safetensors.py test_device_args.py test_device_streams.py test_inplace_rules.py test_kernel_messages.py test_bench_chart.py test_timed_stages.py test_skips.py test_suite_rules.py test_readme.py test_guide.py"
      "check|test_check.py test_check_device.py test_check_dtype_rule.py test_check_frameworks.py test_check_reports.py test_check_html.py test_check_cli.py test_check_planted.py test_check_rules.py"
      "tvm-example|test_example_tvm_matmul.py"
      "jax-jit|test_jax_jit.py"
      "torch-compile|test_torch_compile.py"
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

# PYTHON_TESTS_RUNS (lines of name|files, files absolute or relative to python/tests) replaces
# the runs above: test_skips.py runs this script on test files of its own that way.
if [[ -n "${PYTHON_TESTS_RUNS:-}" ]]; then
    mapfile -t RUNS <<<"$PYTHON_TESTS_RUNS"
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
    for f in "${files[@]}"; do
        [[ " $LEAVE_OUT " == *" $f "* ]] && continue
        if [[ "$f" == /* ]]; then paths+=("$f"); else paths+=("$TESTS/$f"); fi
    done
    if [[ ${#paths[@]} -eq 0 ]]; then
        continue
    fi
    xml="$REPORTS/$name.xml"

    echo "=== python-tests: $name (${paths[*]#"$TESTS/"})"
    (cd "$ROOT" && "${TIMEOUT_CMD[@]}" "$run_python" -m pytest -q --junitxml="$xml" "${paths[@]}" "$@")
    rc=$?

    # Counted from pytest's JUnit report (-1 each where it is missing): passed, failed,
    # skipped, the skips the allow-list allows here, and those for want of a GPU. The skips
    # off the allow-list are printed (stderr) as they are found.
    disallowed_file="$REPORTS/$name.disallowed"
    read -r passed failed skipped allowed nogpu < <("$PYTHON" "$TESTS/_skips.py" "$xml" 2>"$disallowed_file")

    status="ok"
    if [[ "$passed" == "-1" ]]; then
        # Crashed (e.g. SIGSEGV), killed by the timeout, or never started: count one failure.
        passed=0
        failed=1
        skipped=0
        allowed=0
        nogpu=0
        status="no report (exit code $rc)"
    elif [[ $rc -ne 0 && $rc -ne 5 ]]; then
        status="failed (exit code $rc)"
        failed=$((failed > 0 ? failed : 1))
    elif [[ $failed -gt 0 ]]; then
        # The report counts failures although the process exited 0: a runtime that rewrites
        # the exit status at exit did it (LeakSanitizer's `exitcode=0` under ASan replaces
        # pytest's status 1 whenever it reports the interpreter's leaks). The report decides.
        status="failed ($failed in the report, exit code $rc)"
    elif [[ $rc -eq 5 && $skipped -eq 0 ]]; then
        status="no tests collected (exit code 5)"
        failed=1
    elif [[ $skipped -gt $allowed && "$STRICT" == "1" ]]; then
        # pytest's exit status 5 with skips: every file was skipped at import. Either way,
        # a strict run allows only the skips of the allow-list.
        status="FAILED: $((skipped - allowed)) skipped off the allow-list (python/tests/_skips.py)"
        failed=$((skipped - allowed))
    elif [[ $skipped -gt 0 && $skipped -eq $nogpu ]]; then
        status="ok ($nogpu skipped: need a GPU)"
    elif [[ $skipped -gt 0 && $skipped -eq $allowed ]]; then
        status="ok ($skipped skipped, each on the allow-list)"
    elif [[ $skipped -gt 0 ]]; then
        status="SKIPPED: $((skipped - allowed)) off the allow-list (not strict: not failed)"
    fi
    if [[ -s "$disallowed_file" ]]; then
        cat "$disallowed_file"
    fi
    if [[ "$status" != ok* && "$status" != SKIPPED* ]]; then
        overall=1
    fi
    summary_lines+=("$(printf '%-12s %5d passed %5d failed %5d skipped  %s' \
        "$name" "$passed" "$failed" "$skipped" "$status")")
    if [[ -s "$disallowed_file" ]]; then
        while IFS= read -r line; do summary_lines+=("$line"); done <"$disallowed_file"
    fi
    TOTAL_PASSED=$(( ${TOTAL_PASSED:-0} + passed ))
    TOTAL_FAILED=$(( ${TOTAL_FAILED:-0} + failed ))
    TOTAL_SKIPPED=$(( ${TOTAL_SKIPPED:-0} + skipped ))
    RUNS_DONE=$(( ${RUNS_DONE:-0} + 1 ))
done

echo "=== python-tests: summary (strict: $([[ "$STRICT" == "1" ]] && echo yes || echo no))"
for line in "${summary_lines[@]}"; do
    echo "$line"
done
echo "tests that ran: $(( ${TOTAL_PASSED:-0} + ${TOTAL_FAILED:-0} )) in ${RUNS_DONE:-0} runs, ${TOTAL_SKIPPED:-0} skipped"
echo "${TOTAL_PASSED:-0} passed, ${TOTAL_FAILED:-0} failed"
exit "$overall"
