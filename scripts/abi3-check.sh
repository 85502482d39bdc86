#!/usr/bin/env bash
# The limited API (abi3) builds: dlbridge-pyo3's tests and clippy with `pyo3/abi3-py39`, the
# lowest abi3 level PyO3 offers (every limited-API path of the crate, those of 3.10 and 3.11
# included, is then compiled and run), and `cargo check` of the extension module with its
# cargo feature `abi3` (abi3-py311, the wheels' level) with and without its test kernels.
#
# The tests embed the interpreter PyO3 finds (PYO3_PYTHON, or python3 on PATH): an abi3-py39
# build runs on any CPython 3.9 or later, and exercises the buffer protocol's runtime check
# (src/host/buffer.rs) on the side of the interpreter found. The builds share the ordinary
# target directory (their artifacts have their own hashes: nothing of the default build is
# rebuilt). Fails (non-zero) on any error, failed test or clippy warning.
set -euo pipefail
cd "$(dirname "$0")/.."

read -ra cargo <<<"${CARGO:-cargo}" # may carry arguments: CARGO="cargo +stable"

run() {
    echo "+ ${*}" >&2
    "$@"
}

run "${cargo[@]}" test -p dlbridge-pyo3 --features pyo3/abi3-py39
run "${cargo[@]}" clippy -p dlbridge-pyo3 --all-targets --features pyo3/abi3-py39 -- -D warnings
run "${cargo[@]}" check -p dlbridge-python --features abi3
run "${cargo[@]}" clippy -p dlbridge-python --all-targets --features abi3,testing -- -D warnings
echo "abi3-check: dlbridge-pyo3 passes its tests under abi3-py39; dlbridge-python builds with" \
    "its feature abi3 (abi3-py311)"
