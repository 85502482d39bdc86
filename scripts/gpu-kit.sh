#!/usr/bin/env bash
# `make gpu-kit`: what a GPU machine without Rust or a network needs to run dlbridge's GPU
# tests and benchmark, built here into target/gpu-kit (GPU_KIT=DIR puts it elsewhere):
#
#   dlbridge-*-cp312-*.whl             the Python package for CPython 3.12 (GPU_PYTHON=X.Y for
#                                      another), with the test kernels (cargo feature
#                                      `testing`), manylinux2014 (linked by Zig), stripped
#   dlbridge_cuda_saxpy-*-cp312-*.whl  the example extension (examples/cuda_saxpy)
#   apache_tvm_ffi-*.whl               the peer benches/gpu_exchange.py compares with, from PyPI
#   cuda-tests                         the Rust GPU tests (crates/dlbridge/tests/cuda.rs, with
#                                      the feature `cudarc`) as one test binary, stripped (the
#                                      GPU tests are ignored unless run with --include-ignored)
#   doc-examples/                      the API documentation's CUDA examples, each a program
#                                      the docs include as it is (crates/dlbridge/examples and
#                                      crates/dlbridge-pyo3/examples), stripped; dlbridge-pyo3's
#                                      embeds CPython, built against CPython 3.12 (GPU_PYTHON)
#   MANIFEST.txt                       what was built, from which commit, with sizes
#
# The GPU machine also needs the working tree (python/tests, benches, scripts), which travels
# with it; scripts/gpu-run.sh runs everything there. The kit must stay well under the 64 MiB
# that travels: its size is printed, and a kit over 48 MiB is an error.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/wheels-common.sh

kit=${GPU_KIT:-target/gpu-kit}
version=${GPU_PYTHON:-3.12}
interpreter=$(find_python "$version")
if [[ -z $interpreter ]]; then
    echo "gpu-kit: CPython $version not found (pyenv install $version)" >&2
    exit 1
fi
use_wheel_tools
rm -rf "$kit"
mkdir -p "$kit"

echo "gpu-kit: dlbridge for CPython $version, with the test kernels"
CARGO_TARGET_DIR=target/gpu-kit-build/dlbridge \
    maturin build --release --strip --zig --compatibility manylinux2014 \
    --interpreter "$interpreter" --features testing --out "$kit" --quiet
echo "gpu-kit: the example examples/cuda_saxpy"
CARGO_TARGET_DIR=target/gpu-kit-build/cuda_saxpy \
    maturin build --release --strip --zig --compatibility manylinux2014 \
    -m examples/cuda_saxpy/Cargo.toml --interpreter "$interpreter" --out "$kit" --quiet

echo "gpu-kit: apache-tvm-ffi for CPython $version, from PyPI"
tvm_ffi=$(sed -n 's/^\(apache-tvm-ffi[^;#]*\).*/\1/p' python/requirements-test.txt | head -1)
"$WHEEL_TOOLS/bin/python" -m pip download --quiet --no-deps --only-binary=:all: \
    --python-version "$version" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$kit" "${tvm_ffi// /}"

echo "gpu-kit: the Rust GPU tests"
binary=$(cargo test --release -p dlbridge --features cudarc --test cuda --no-run \
    --message-format=json 2>/dev/null | "$interpreter" -c '
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("reason") == "compiler-artifact" and message.get("executable") \
            and message["target"]["name"] == "cuda":
        print(message["executable"])
')
if [[ -z $binary ]]; then
    echo "gpu-kit: the test binary of crates/dlbridge/tests/cuda.rs was not built" >&2
    exit 1
fi
cp "$binary" "$kit/cuda-tests"
strip "$kit/cuda-tests"

# The examples in a target directory of their own, with PyO3 configured for the kit's CPython
# (PYO3_PYTHON) and the quick profile (no LTO: what they test is the code the docs show, not
# its speed), so that the main target directory's PyO3 build is left as it is.
echo "gpu-kit: the API documentation's CUDA examples"
examples=$(PYO3_PYTHON="$interpreter" CARGO_TARGET_DIR=target/gpu-kit-build/doc-examples \
    cargo build --quiet --profile wheel-quick -p dlbridge -p dlbridge-pyo3 \
    --features dlbridge/cudarc --examples --message-format=json-render-diagnostics |
    "$interpreter" -c '
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("reason") == "compiler-artifact" and message.get("executable") \
            and "example" in message["target"]["kind"]:
        print(message["executable"])
')
if [[ -z $examples ]]; then
    echo "gpu-kit: the examples (crates/dlbridge/examples, crates/dlbridge-pyo3/examples) were not built" >&2
    exit 1
fi
mkdir -p "$kit/doc-examples"
while read -r example; do
    cp "$example" "$kit/doc-examples/"
    strip "$kit/doc-examples/$(basename "$example")"
done <<<"$examples"

{
    echo "dlbridge GPU kit, built $(date -u +%Y-%m-%dT%H:%MZ) from commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
    echo "for CPython $version on x86_64 Linux (manylinux2014); run: bash scripts/gpu-run.sh"
    (cd "$kit" && find . -type f ! -name MANIFEST.txt -printf '%P %s bytes\n' | sort)
} >"$kit/MANIFEST.txt"
cat "$kit/MANIFEST.txt"
size=$(du -sm "$kit" | cut -f1)
echo "gpu-kit: $size MiB in $kit"
if ((size > 48)); then
    echo "gpu-kit: over 48 MiB: it would not travel with the working tree (64 MiB)" >&2
    exit 1
fi
