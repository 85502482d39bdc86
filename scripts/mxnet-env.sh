#!/usr/bin/env bash
# The MXNet environment: a CPython 3.11 virtual environment in target/mxnet-venv with what
# python/requirements-mxnet.txt pins (MXNet 1.9.1, which needs NumPy < 1.24, whose wheels
# stop at CPython 3.11) and this checkout's dlbridge. `make python-test` runs it before the
# suite, whose "mxnet" run (python/tests/mxnet) uses this interpreter.
#
#   scripts/mxnet-env.sh        prints the environment's python as its last line
#
# Idempotent: the environment is made again only when the requirements file changed (its
# hash is kept in target/mxnet-venv/.installed) or the environment is broken. dlbridge: where
# the main virtual environment (VENV, default .venv) is CPython 3.11 too, `make python-build`
# built the extension for it into python/dlbridge, and this environment imports the package
# from python/ through a .pth file: that very build. Otherwise maturin builds it for 3.11
# (release, feature `testing`; incremental, so quick when nothing changed) in
# target/mxnet-build, so that the main build's artifacts stay as they are. Fails, saying why, when there is no CPython 3.11 (pyenv's or python3.11 on
# PATH), when an install fails, or when the environment cannot import mxnet and dlbridge.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=wheels-common.sh
source scripts/wheels-common.sh

ENV_DIR=${MXNET_ENV:-target/mxnet-venv}
REQUIREMENTS=python/requirements-mxnet.txt
PY=$ENV_DIR/bin/python
STAMP=$ENV_DIR/.installed

fail() {
    echo "mxnet-env: $*" >&2
    exit 1
}

wanted=$(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)
if [[ ! -x $PY || ! -f $STAMP || $(cat "$STAMP") != "$wanted" ]]; then
    python311=$(find_python 3.11)
    [[ -n $python311 ]] || fail "MXNet 1.9.1 needs CPython 3.11 (NumPy 1.23.5 has no wheels \
for later versions), and none was found (pyenv install 3.11, or python3.11 on PATH)"
    echo "mxnet-env: creating $ENV_DIR with $python311 ($REQUIREMENTS)"
    rm -rf "$ENV_DIR"
    "$python311" -m venv "$ENV_DIR" || fail "could not create the virtual environment"
    "$PY" -m pip install --quiet --disable-pip-version-check -r "$REQUIREMENTS" \
        || fail "pip could not install $REQUIREMENTS"
    echo "$wanted" >"$STAMP"
fi

# dlbridge: the 3.11 build of `make python-build`, or one made here.
site=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
main_python=${VENV:-.venv}/bin/python
if [[ -x $main_python ]] && "$main_python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
    && compgen -G "python/dlbridge/_dlbridge.cpython-311-*.so" >/dev/null; then
    echo "$ROOT/python" >"$site/dlbridge.pth"
else
    echo "mxnet-env: building dlbridge for CPython 3.11 (target/mxnet-build)"
    PYO3_BUILD_EXTENSION_MODULE=1 VIRTUAL_ENV="$ROOT/$ENV_DIR" CARGO_TARGET_DIR=target/mxnet-build \
        "$ENV_DIR/bin/maturin" develop --release --quiet --features testing \
        || fail "maturin could not build dlbridge for $PY"
fi

# The environment works: MXNet imports (its shared libraries load) and dlbridge is this
# checkout's.
"$PY" - "$ROOT" <<'PY' || fail "the environment $ENV_DIR does not work (see above)"
import os
import sys
import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # MXNet 1.9.1 uses np.bool
    import mxnet

import dlbridge

root = os.path.realpath(sys.argv[1])
where = os.path.realpath(dlbridge.__file__)
if not where.startswith(os.path.join(root, "python") + os.sep):
    sys.exit(f"dlbridge comes from {where}, not from this checkout ({root}/python)")
assert mxnet.__version__ == "1.9.1", mxnet.__version__
PY
echo "$ROOT/$PY"
