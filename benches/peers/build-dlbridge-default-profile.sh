#!/usr/bin/env bash
# Builds dlbridge's own extension (crates/dlbridge-python, with the test kernels of the cargo
# feature `testing`) and the matmul example's (examples/matmul) as a user's crate is built:
# cargo's default release profile (thin-local LTO, 16 codegen units) in place of the
# workspace's fat LTO and one codegen unit. The two modules go into
# target/peers/python/dlbridge_default_profile/, where benches/python_exchange.py loads them
# under names of their own, beside the installed (workspace-profile) build, and times both in
# one interleaved run. Run from the repository root; PYTHON picks the interpreter.
#
#   bash benches/peers/build-dlbridge-default-profile.sh
set -euo pipefail

python="${PYTHON:-.venv/bin/python}"
# PyO3's build script runs in another directory, so give it an absolute path.
case "$python" in
    */*) python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")" ;;
    *) python="$(command -v "$python")" ;;
esac
target_dir=target/peers/dlbridge-default-profile-target
out_dir=target/peers/python/dlbridge_default_profile
suffix="$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
mkdir -p "$out_dir"

# CARGO_PROFILE_RELEASE_* override the workspace's [profile.release] with cargo's defaults.
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
export PYO3_PYTHON="$python" PYO3_BUILD_EXTENSION_MODULE=1
# One invocation each, as `make python-build` and `make example-build` build them, so that
# neither build's features reach the other's.
"${CARGO:-cargo}" build --release --quiet -p dlbridge-python --features testing \
    --target-dir "$target_dir"
cp "$target_dir/release/lib_dlbridge.so" "$out_dir/_dlbridge$suffix"
"${CARGO:-cargo}" build --release --quiet -p dlbridge-matmul --target-dir "$target_dir"
cp "$target_dir/release/libdlbridge_matmul.so" "$out_dir/dlbridge_matmul$suffix"
echo "dlbridge and the matmul example, cargo's default release profile: $out_dir"
