#!/usr/bin/env bash
# Builds a Rust benchmark crate, benches/peers/NAME (its own Cargo crate, outside the
# workspace, so built with cargo's default release profile as a user's crate is: no LTO, 16
# codegen units), and puts its extension module, dlbridge_peer_<NAME with _ for ->, in
# target/peers/python/. With `--lto`, the same crate with the dlbridge workspace's release
# profile instead (fat LTO, one codegen unit) and its feature `lto-module`, which names the
# module dlbridge_peer_<name>_lto. Run from the repository root; PYTHON picks the interpreter.
#
#   bash benches/peers/build-cargo-peer.sh dlpark
#   bash benches/peers/build-cargo-peer.sh rust-numpy --lto
set -euo pipefail

name="$1"
lto="${2:-}"
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
build=("${CARGO:-cargo}" build --release --quiet --manifest-path "$crate_dir/Cargo.toml")
case "$lto" in
    "") ;;
    --lto)
        module_name="${module_name}_lto"
        target_dir="$target_dir-lto"
        build+=(--features lto-module)
        export CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1
        ;;
    *)
        echo "usage: $0 NAME [--lto]" >&2
        exit 2
        ;;
esac

PYO3_PYTHON="$python" PYO3_BUILD_EXTENSION_MODULE=1 "${build[@]}" --target-dir "$target_dir"

suffix="$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
mkdir -p "$out_dir"
module="$out_dir/$module_name$suffix"
# The library's file is named after the crate's [lib] (dlbridge_peer_<name>), the module's
# file after the module.
cp "$target_dir/release/libdlbridge_peer_${name//-/_}.so" "$module"
echo "$module_name ($name peer): $module"
