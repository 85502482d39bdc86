#!/usr/bin/env bash
# Builds the PyTorch floor (floor.cpp) into
# target/peers/python/dlbridge_peer_torch_floor<EXT_SUFFIX> with plain g++, against the
# headers and libraries inside the installed torch wheel. Run from the repository root;
# PYTHON picks the interpreter.
set -euo pipefail

PYTHON="${PYTHON:-.venv/bin/python}"
CXX="${CXX:-g++}"

here="benches/peers/torch_floor"
src="$here/floor.cpp"
out_dir="target/peers/python"

ext_suffix="$("$PYTHON" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")"
out="$out_dir/dlbridge_peer_torch_floor$ext_suffix"

if [[ -f "$out" && "$out" -nt "$src" && "$out" -nt "$here/build.sh" ]]; then
    echo "torch floor peer: $out (up to date)"
    exit 0
fi

torch_dir="$("$PYTHON" -c "import os, torch; print(os.path.dirname(torch.__file__))")"
abi="$("$PYTHON" -c "import torch; print(int(torch.compiled_with_cxx11_abi()))")"
py_inc="$("$PYTHON" -c "import sysconfig; print(sysconfig.get_paths()['include'])")"

mkdir -p "$out_dir"
"$CXX" -std=c++20 -O2 -shared -fPIC -DNDEBUG -D_GLIBCXX_USE_CXX11_ABI="$abi" \
    -I"$torch_dir/include" -I"$torch_dir/include/torch/csrc/api/include" -I"$py_inc" \
    "$src" -o "$out" \
    -L"$torch_dir/lib" -lc10 -ltorch -ltorch_cpu -ltorch_python -Wl,-rpath,"$torch_dir/lib"

echo "torch floor peer: $out"
