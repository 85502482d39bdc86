#!/usr/bin/env bash
# Runs dlbridge's GPU tests and benchmark on a machine with an NVIDIA GPU, from the kit that
# `make gpu-kit` built (target/gpu-kit, or GPU_KIT=DIR) and the working tree beside it. It
# needs no Rust and no network: Python (GPU_RUN_PYTHON, default python3) with NumPy, pytest,
# hypothesis, a CUDA build of PyTorch, and CuPy and JAX for their tests.
#
#   bash scripts/gpu-run.sh             on the GPU machine
#   bash scripts/gpu-run.sh --dry-run   here, without a GPU: the kit installs and imports,
#                                       the Rust tests run (their GPU tests are listed as
#                                       ignored), the doc examples are found with their
#                                       libraries, pytest collects the GPU tests; nothing
#                                       else runs
#
# The kit's wheels are installed with pip into a folder of their own (--target, put first on
# PYTHONPATH), so the machine's own packages stay as they are. Then, each step's output into
# RESULTS (default $OUT where the device tool sets it, else target/gpu-results):
#   env.txt      nvidia-smi, the Python and framework versions
#   rust.txt     the Rust GPU tests (crates/dlbridge/tests/cuda.rs), with --include-ignored
#                (elsewhere they are ignored, "needs a GPU")
#   doc-examples.txt  the API documentation's CUDA examples (the kit's doc-examples/), one
#                after another, each a step of its own
#   pytest.txt   the GPU tests of python/tests (marker `gpu`, the files of gpu_test_files)
#   demo.txt     examples/cuda_saxpy/demo.py: its kernels eagerly, in torch.compile, in jax.jit
#   check.md     `dlbridge check torch cupy jax --no-matrix`: the device rules run for real
#   bench.md     benches/gpu_exchange.py
#   summary.txt  each step's exit status
# With DLBRIDGE_REQUIRE_GPU=1 (set here), a GPU test that would skip fails instead. The exit
# status is 0 only when every step passed (`dlbridge check`'s 1, "a framework breaks a MUST
# rule", counts as passed: it is a finding about the framework, in check.md).
set -uo pipefail
cd "$(dirname "$0")/.."

dry_run=0
case "${1:-}" in
    "") ;;
    --dry-run) dry_run=1 ;;
    *) echo "usage: $0 [--dry-run]" >&2; exit 2 ;;
esac
kit=${GPU_KIT:-target/gpu-kit}
python=${GPU_RUN_PYTHON:-python3}
results=${RESULTS:-${OUT:-target/gpu-results}}
mkdir -p "$results"
site=$(mktemp -d "${TMPDIR:-/tmp}/dlbridge-gpu-site.XXXXXX")
trap 'rm -rf "$site"' EXIT

for needed in MANIFEST.txt cuda-tests doc-examples; do
    if [[ ! -e $kit/$needed ]]; then
        echo "gpu-run: $kit/$needed is missing: build the kit with \`make gpu-kit\`" >&2
        exit 2
    fi
done
cat "$kit/MANIFEST.txt"
if ! "$python" -m pip install --quiet --no-index --no-deps --no-compile --target "$site" \
    "$kit"/*.whl; then
    echo "gpu-run: the kit's wheels do not install for $("$python" --version 2>&1)" >&2
    exit 2
fi
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
export DLBRIDGE_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
# JAX takes most of the GPU's memory on first use unless told not to; the tests and the
# benchmark share the device between JAX, PyTorch and CuPy in one process.
export XLA_PYTHON_CLIENT_PREALLOCATE=false

imported=$("$python" -c 'import dlbridge, dlbridge_cuda_saxpy, tvm_ffi; print(dlbridge.__file__)') || {
    echo "gpu-run: the kit's packages do not import" >&2
    exit 2
}
case $imported in
    "$site"/*) ;;
    *) echo "gpu-run: dlbridge came from $imported, not from the kit" >&2; exit 2 ;;
esac

statuses=()
step() {
    local name=$1 file=$2
    shift 2
    echo "=== gpu-run: $name"
    "$@" 2>&1 | tee "$results/$file"
    local status=${PIPESTATUS[0]}
    statuses+=("$name: exit $status")
    echo "=== gpu-run: $name: exit $status"
    return 0
}

# The API documentation's CUDA examples, programs the docs include as they are. dlbridge-pyo3's
# embeds CPython (built against CPython 3.12): it runs with this interpreter's libpython on the
# library path, and this interpreter's directory first on PATH, where the embedded interpreter
# looks for `python3` to find its prefix (a virtual environment's site-packages included); the
# kit's packages come first on PYTHONPATH, as for every step.
doc_examples=("$kit"/doc-examples/*)
embedding=$("$python" - <<'PYTHON'
import os, sys, sysconfig
name = sysconfig.get_config_var("INSTSONAME") or ""
dirs = [sysconfig.get_config_var("LIBDIR") or "", os.path.join(sys.base_prefix, "lib")]
found = [d for d in dirs if d and name and os.path.isfile(os.path.join(d, name))]
print(os.path.dirname(sys.executable))
print(found[0] if found else "")
PYTHON
)
python_bin=$(sed -n 1p <<<"$embedding")
python_lib=$(sed -n 2p <<<"$embedding")
if [[ -z $python_lib ]]; then
    echo "gpu-run: no shared libpython beside $python: the doc example that embeds CPython may not load"
fi
doc_example() {
    PATH="$python_bin:$PATH" LD_LIBRARY_PATH="$python_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"
}
# --dry-run: each example is there, executable, and finds the libraries it links.
doc_examples_present() {
    local example missing status=0
    for example in "${doc_examples[@]}"; do
        if [[ ! -x $example ]]; then
            echo "$example: missing or not executable"
            status=1
        elif missing=$(doc_example ldd "$example" | grep 'not found'); then
            echo "$(basename "$example"): a library is not found: $missing"
            status=1
        else
            echo "$(basename "$example"): present, its libraries found"
        fi
    done
    return $status
}

# The one list of the files that hold GPU tests (marker `gpu`): python/tests/test_suite_rules.py
# fails when a file with the marker is missing here, or a file here has none. Only the GPU
# tests of these files run here (-m gpu); CI runs the rest of them.
gpu_test_files=(python/tests/test_device_args.py python/tests/test_device_streams.py
    python/tests/test_example_cuda_saxpy.py python/tests/test_check_device.py
    python/tests/interop/test_torch.py)
# The GPU tests, then their JUnit report judged as the CPU runs' are (python/tests/_skips.py):
# with DLBRIDGE_REQUIRE_GPU=1 no skip is allowed, and a run that ran no test fails too.
gpu_pytest() {
    local report="$site/gpu-tests.xml" status counts
    "$python" -m pytest -q -rs -p no:cacheprovider -m gpu --junitxml="$report" \
        "${gpu_test_files[@]}"
    status=$?
    counts=$("$python" python/tests/_skips.py "$report") || return 1
    read -r passed failed skipped allowed _ <<<"$counts"
    echo "gpu-run: GPU tests: $passed passed, $failed failed, $skipped skipped"
    if ((passed < 1 || skipped > allowed)); then
        echo "gpu-run: GPU tests that did not run (above): with a GPU every one must" >&2
        return 1
    fi
    return "$status"
}
if ((dry_run)); then
    unset DLBRIDGE_REQUIRE_GPU
    step "rust" rust.txt "$kit/cuda-tests" --test-threads=1
    step "doc-examples" doc-examples.txt doc_examples_present
    step "pytest-collect" pytest.txt "$python" -m pytest -q --collect-only -m gpu \
        -p no:cacheprovider "${gpu_test_files[@]}"
else
    step "env" env.txt bash -c "nvidia-smi; $python -c '
import sys, numpy, dlbridge
print(\"Python\", sys.version.split()[0], \"numpy\", numpy.__version__, \"dlbridge\", dlbridge.__version__)
for name in (\"torch\", \"cupy\", \"jax\", \"tvm_ffi\"):
    try:
        module = __import__(name)
        print(name, module.__version__)
    except ImportError as error:
        print(name, \"missing:\", error)
'"
    step "rust" rust.txt "$kit/cuda-tests" --test-threads=1 --include-ignored
    : >"$results/doc-examples.txt"
    for example in "${doc_examples[@]}"; do
        step "doc-example $(basename "$example")" doc-example.txt doc_example "$example"
        cat "$results/doc-example.txt" >>"$results/doc-examples.txt"
    done
    rm -f "$results/doc-example.txt"
    step "pytest" pytest.txt gpu_pytest
    step "example demo" demo.txt "$python" examples/cuda_saxpy/demo.py
    step "check" check.md bash -c \
        "$python -m dlbridge check torch cupy jax --no-matrix --markdown; s=\$?; [ \$s -le 1 ]"
    step "bench" bench.md "$python" benches/gpu_exchange.py
fi
printf '%s\n' "${statuses[@]}" | tee "$results/summary.txt"
if printf '%s\n' "${statuses[@]}" | grep -qv 'exit 0$'; then
    echo "gpu-run: a step failed (summary above; outputs in $results)"
    exit 1
fi
echo "gpu-run: every step passed (outputs in $results)"
