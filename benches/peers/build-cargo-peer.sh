#!/usr/bin/env bash
# Builds a Rust benchmark peer, benches/peers/NAME (its own Cargo crate, outside the
# workspace), and puts its extension module, dlbridge_peer_<NAME with _ for ->, in
# target/peers/python/. Run from the repository root; PYTHON picks the interpreter.
#
#   bash benches/peers/build-cargo-peer.sh dlpark
set -euo pipefail

name="$1"
module_name="dlbridge_peer_${name//-/_}"
python="${PYTHON:-.venv/bin/python}"
# PyO3's build script runs in another directory, so give it an absolute path.
case "$python" in
    */*) python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")" ;;
    *) python="$(command -v "$python")" ;;
esac
crate_dir="benches/peers/$name"
target_dir="target/peers/$name-target"
out_dir=target/peers/python

PYO3_PYTHON="$python" PYO3_BUILD_EXTENSION_MODULE=1 \
    "${CARGO:-cargo}" build --release --quiet --manifest-path "$crate_dir/Cargo.toml" --target-dir "$target_dir"

suffix="$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
mkdir -p "$out_dir"
module="$out_dir/$module_name$suffix"
cp "$target_dir/release/lib$module_name.so" "$module"
echo "$module_name ($name peer): $module"
