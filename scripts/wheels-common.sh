# Shared by scripts/build-wheels.sh and scripts/test-wheels.sh (sourced, not run).

# The build tools' virtual environment (maturin, ziglang, auditwheel: pinned in
# python/requirements-wheels.txt); `use_wheel_tools` installs it.
WHEEL_TOOLS=target/wheel-tools/venv

# use_wheel_tools: installs the build tools into $WHEEL_TOOLS where they are missing or older
# than their list (as the Makefile's `venv` target installs the test dependencies), and puts
# them first on PATH: maturin finds Zig as `python3 -m ziglang`, the tools' python3.
use_wheel_tools() {
    local requirements=python/requirements-wheels.txt
    if [[ ! -f $WHEEL_TOOLS/.installed || $requirements -nt $WHEEL_TOOLS/.installed ]]; then
        echo "$(basename "$0" .sh): installing the build tools into $WHEEL_TOOLS"
        test -x "$WHEEL_TOOLS/bin/python" || python3 -m venv "$WHEEL_TOOLS"
        "$WHEEL_TOOLS/bin/python" -m pip install --quiet -r "$requirements"
        touch "$WHEEL_TOOLS/.installed"
    fi
    export PATH="$PWD/$WHEEL_TOOLS/bin:$PATH"
}

# read_wheel_mode "$@": the scripts' one option. Sets `quick` (1 for --quick: `make test`'s
# quick form, 0 for the release form) and `wheel_dir`, the folder of the wheels (WHEEL_DIR,
# else target/wheels-quick or target/wheels); anything else is a usage error.
read_wheel_mode() {
    quick=0
    case "${1:-}" in
        "") ;;
        --quick) quick=1 ;;
        *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
    esac
    if ((quick)); then
        wheel_dir=${WHEEL_DIR:-target/wheels-quick}
    else
        wheel_dir=${WHEEL_DIR:-target/wheels}
    fi
}

# The CPython versions a release covers, oldest first.
WHEEL_PYTHONS=(3.9 3.10 3.11 3.12 3.13)

# find_python X.Y: the path of a CPython X.Y interpreter (pyenv's, else pythonX.Y on PATH; not
# a free-threaded build), or nothing when there is none.
find_python() {
    local version=$1 candidate
    for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/python \
        "$(command -v "python$version" || true)"; do
        if [[ -x $candidate ]] && "$candidate" -c "
import sys, sysconfig
ok = sys.version_info[:2] == tuple(map(int, '$version'.split('.')))
raise SystemExit(0 if ok and not sysconfig.get_config_var('Py_GIL_DISABLED') else 1)
" 2>/dev/null; then
            echo "$candidate"
            return
        fi
    done
}
