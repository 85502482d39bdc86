#!/usr/bin/env bash
# Runs dlbridge's GPU tests and benchmark on a machine with an NVIDIA GPU, from the kit that
# `make gpu-kit` built (target/gpu-kit, or GPU_KIT=DIR) and the working tree beside it. It
# needs no Rust and no network: Python (GPU_RUN_PYTHON, default python3) with NumPy, pytest,
# hypothesis, a CUDA build of PyTorch, and CuPy and JAX for their tests.
#
#   bash scripts/gpu-run.sh             on the GPU machine
#   bash scripts/gpu-run.sh --dry-run   here, without a GPU: the kit installs and imports,
#                                       the Rust tests run (their GPU tests skip), pytest
#                                       collects the GPU tests; nothing else runs
#
# The kit's wheels are installed with pip into a folder of their own (--target, put first on
# PYTHONPATH), so the machine's own packages stay as they are. Then, each step's output into
# RESULTS (default $OUT where the device tool sets it, else target/gpu-results):
#   env.txt      nvidia-smi, the Python and framework versions
#   rust.txt     the Rust GPU tests (crates/dlbridge/tests/cuda.rs)
#   pytest.txt   the device test files of python/tests, GPU tests included
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

for needed in MANIFEST.txt cuda-tests; do
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

device_tests=(python/tests/test_device_args.py python/tests/test_device_streams.py
    python/tests/test_example_cuda_saxpy.py python/tests/test_check_device.py)
if ((dry_run)); then
    unset DLBRIDGE_REQUIRE_GPU
    step "rust" rust.txt "$kit/cuda-tests" --test-threads=1
    step "pytest-collect" pytest.txt "$python" -m pytest -q --collect-only -m gpu \
        -p no:cacheprovider "${device_tests[@]}"
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
    step "rust" rust.txt "$kit/cuda-tests" --test-threads=1
    step "pytest" pytest.txt "$python" -m pytest -q -rs -p no:cacheprovider "${device_tests[@]}"
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
