#!/usr/bin/env bash
# Type-checks the PyO3 crates against free-threaded CPython 3.14 ("3.14t", built with
# Py_GIL_DISABLED), which no interpreter on these machines provides and none can be installed.
#
# PyO3 normally asks the Python interpreter it finds for its configuration. Here a
# PYO3_CONFIG_FILE describes a 3.14t interpreter instead, so pyo3-ffi and pyo3 compile their
# free-threaded API, and dlbridge-pyo3's build script (pyo3_build_config::use_pyo3_cfgs,
# which reads the configuration that pyo3 forwards) sets `cfg(Py_GIL_DISABLED)` for its own
# code. `cargo check` needs no libpython, so nothing is linked (and the config suppresses
# PyO3's link lines). What this proves: the code compiles, with no warning, under
# Py_GIL_DISABLED, i.e. every `#[cfg(Py_GIL_DISABLED)]` path builds (the ordinary build
# checks only the other side of them). It does not run anything on a free-threaded
# interpreter.
#
# Checked: dlbridge-pyo3 (with its tests, which embed Python), the extension module
# dlbridge-python (with its test kernels, the feature `testing`; not its feature `abi3`, the
# limited API, which free-threaded CPython 3.14 does not have) and the example
# extension dlbridge-matmul. The build goes to its own target directory (target/free-threaded)
# so that it does not invalidate the ordinary build cache; RUSTFLAGS is left as it is. Fails
# (non-zero) on any error or any warning.
set -euo pipefail
cd "$(dirname "$0")/.."

read -ra cargo <<<"${CARGO:-cargo}" # may carry arguments: CARGO="cargo +stable"
RUSTC=${RUSTC:-rustc}
target_dir=$PWD/target/free-threaded
config=$target_dir/pyo3-config.txt # PyO3 requires an absolute path
log=$target_dir/check.log
mkdir -p "$target_dir"

pointer_width=$("$RUSTC" --print cfg | sed -n 's/^target_pointer_width="\(.*\)"$/\1/p')
[ -n "$pointer_width" ] || { echo "free-threaded-check: no target pointer width" >&2; exit 2; }

# The keys are those of PyO3 0.30's InterpreterConfig::from_reader. `target_abi` replaces the
# `abi3` key (deprecated since PyO3 0.29; the two together are an error). No lib_name/lib_dir:
# `cargo check` links nothing (PyO3 fills in a default library name, python3.14t).
# Written only when it changes: PyO3's build script re-runs, and everything above it is
# rebuilt, whenever the file's modification time changes.
cat >"$config.new" <<EOF
implementation=CPython
version=3.14
shared=true
target_abi=CPython-free_threaded-3.14
pointer_width=$pointer_width
build_flags=Py_GIL_DISABLED
suppress_build_script_link_lines=true
EOF
if cmp -s "$config.new" "$config"; then rm "$config.new"; else mv "$config.new" "$config"; fi

# Interpreter hints for PyO3's own discovery must not apply (the config file wins anyway).
unset PYO3_PYTHON PYO3_NO_PYTHON PYO3_CROSS PYO3_CROSS_LIB_DIR PYO3_CROSS_PYTHON_VERSION \
    PYO3_CROSS_PYTHON_IMPLEMENTATION

cmd=("${cargo[@]}" check -p dlbridge-pyo3 -p dlbridge-python -p dlbridge-matmul
    --features dlbridge-python/testing --all-targets)
echo "+ PYO3_CONFIG_FILE=$config CARGO_TARGET_DIR=$target_dir ${cmd[*]}" >&2
set +e
PYO3_CONFIG_FILE=$config CARGO_TARGET_DIR=$target_dir "${cmd[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

if [ "$status" -ne 0 ]; then
    echo "free-threaded-check: FAILED: the code does not compile for free-threaded CPython" \
        "3.14t (Py_GIL_DISABLED); see the errors above (cargo exit status $status)" >&2
    exit "$status"
fi
# Cargo replays the warnings of crates that are already built, so a warm run fails too.
if grep -Eq '^warning(\[[^]]*\])?:' "$log"; then
    echo "free-threaded-check: FAILED: warnings under free-threaded CPython 3.14t" \
        "(Py_GIL_DISABLED); see above" >&2
    exit 1
fi
echo "free-threaded-check: dlbridge-pyo3, dlbridge-python and dlbridge-matmul compile for" \
    "free-threaded CPython 3.14t (Py_GIL_DISABLED)"
