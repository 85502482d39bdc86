#!/usr/bin/env bash
# Builds the nanobind benchmark peer (noop.cpp) into
# target/peers/python/dlbridge_peer_nanobind<EXT_SUFFIX> with plain g++, using
# the C++ sources that ship inside the nanobind wheel (no CMake needed).
# Run from the repository root. PYTHON picks the interpreter (and so the
# Python headers, the extension suffix and where nanobind gets installed).
set -euo pipefail

PYTHON="${PYTHON:-.venv/bin/python}"
CXX="${CXX:-g++}"

here="benches/peers/nanobind"
src="$here/noop.cpp"
out_dir="target/peers/python"
obj_dir="target/peers/build/nanobind"

ext_suffix="$("$PYTHON" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")"
out="$out_dir/dlbridge_peer_nanobind$ext_suffix"

# Fast path for repeated bench runs: nothing to do when the module is newer
# than its source and this script.
if [[ -f "$out" && "$out" -nt "$src" && "$out" -nt "$here/build.sh" ]]; then
    echo "nanobind peer: $out (up to date)"
    exit 0
fi

# The built module links nanobind in statically, so nanobind itself is only
# needed (and installed on demand) when compiling.
if ! "$PYTHON" -c "import nanobind" >/dev/null 2>&1; then
    "$PYTHON" -m pip install --quiet nanobind
fi

nb_src="$("$PYTHON" -c "import nanobind; print(nanobind.source_dir())")"
nb_inc="$("$PYTHON" -c "import nanobind; print(nanobind.include_dir())")"
nb_root="$(dirname "$nb_inc")"
py_inc="$("$PYTHON" -c "import sysconfig; print(sysconfig.get_paths()['include'])")"

mkdir -p "$out_dir" "$obj_dir"

# Release flags. nanobind's headers expect hidden visibility; NDEBUG and
# NB_COMPACT_ASSERTIONS are what its own CMake setup uses for release builds.
common=(
    -std=c++17 -O3 -fPIC -fvisibility=hidden
    -DNDEBUG -DNB_COMPACT_ASSERTIONS
    -I"$py_inc" -I"$nb_inc" -I"$nb_root/ext/robin_map/include"
)

# nanobind's runtime core (one translation unit). It talks to the raw CPython
# API and must not be compiled with strict aliasing. The faster TLS descriptor
# model is used when the compiler offers it, as nanobind's CMake setup does.
core_flags=(-fno-strict-aliasing -ffunction-sections -fdata-sections)
if echo 'int main(){}' | "$CXX" -x c++ -mtls-dialect=gnu2 -fsyntax-only - >/dev/null 2>&1; then
    core_flags+=(-mtls-dialect=gnu2)
fi

"$CXX" "${common[@]}" "${core_flags[@]}" -c "$nb_src/nb_combined.cpp" -o "$obj_dir/nb_combined.o"
"$CXX" "${common[@]}" -c "$src" -o "$obj_dir/noop.o"
"$CXX" -shared -Wl,-s -Wl,--gc-sections \
    "$obj_dir/noop.o" "$obj_dir/nb_combined.o" -o "$out"

echo "nanobind peer: $out"
