#!/usr/bin/env bash
# Builds the rust-numpy benchmark peer (benches/peers/rust-numpy) and puts the extension
# module in target/peers/python/. Run from the repository root; PYTHON picks the interpreter.
set -euo pipefail

python="${PYTHON:-.venv/bin/python}"
# PyO3's build script runs in another directory, so give it an absolute path.
case "$python" in
    */*) python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")" ;;
    *) python="$(command -v "$python")" ;;
esac
crate_dir=benches/peers/rust-numpy
target_dir=target/peers/rust-numpy-target
out_dir=target/peers/python

PYO3_PYTHON="$python" PYO3_BUILD_EXTENSION_MODULE=1 \
    "${CARGO:-cargo}" build --release --quiet --manifest-path "$crate_dir/Cargo.toml" --target-dir "$target_dir"

suffix="$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
mkdir -p "$out_dir"
module="$out_dir/dlbridge_peer_rust_numpy$suffix"
cp "$target_dir/release/libdlbridge_peer_rust_numpy.so" "$module"
echo "dlbridge_peer_rust_numpy (rust-numpy peer): $module"
