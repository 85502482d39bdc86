#!/usr/bin/env bash
# Builds the C floor under dlbridge kernels inside `jax.jit` (axpy.c: an XLA FFI handler written
# by hand against jaxlib's c_api.h) into target/peers/python/dlbridge_peer_xla_floor.so, a
# plain shared library that benches/compiled_graphs.py loads with ctypes. Run by
# `make bench-peers`.
set -euo pipefail

PYTHON="${PYTHON:-.venv/bin/python}"
CC="${CC:-cc}"

here="benches/peers/xla_floor"
src="$here/axpy.c"
out_dir="target/peers/python"
out="$out_dir/dlbridge_peer_xla_floor.so"

if [[ -f "$out" && "$out" -nt "$src" && "$out" -nt "$here/build.sh" ]]; then
    echo "XLA floor peer: $out (up to date)"
    exit 0
fi

include="$("$PYTHON" -c "import jax.ffi; print(jax.ffi.include_dir())")"
mkdir -p "$out_dir"
"$CC" -std=c11 -O2 -shared -fPIC -DNDEBUG -I"$include" "$src" -o "$out"
echo "XLA floor peer: $out"
