#!/usr/bin/env bash
# `make test-wheels`: tests the wheels and the sdist that scripts/build-wheels.sh made.
#
#   scripts/test-wheels.sh           the release wheels of target/wheels, and the sdist there
#   scripts/test-wheels.sh --quick   `make test`'s quick form: the wheels of
#                                    target/wheels-quick, no sdist
# WHEEL_DIR=DIR tests the wheels there instead.
#
# Each wheel: `auditwheel show` must find manylinux2014 (glibc 2.17) or older, its library
# must be built for the wheel's machine and stripped, and it must not have the test kernels
# (`_testing`, the cargo feature `testing`). Each CPython 3.9-3.13 found (pyenv's, or
# pythonX.Y on PATH; an absent one is skipped with a note) gets a fresh virtual environment,
# NumPy from PyPI, and dlbridge with
# `pip install --no-index --find-links WHEEL_DIR dlbridge`: pip itself picks the wheel that
# fits, as a user's would. Then scripts/wheel_smoke.py runs there, outside the source tree.
# The sdist (release form only) must build a wheel with nothing but maturin (no index), which
# must pass the same smoke test. Last, a table: wheel, tags, size, policy, versions passed.
#
# The aarch64 wheel for CPython 3.11 also runs, on Debian's arm64 CPython and NumPy under
# qemu-user-static (step 2b, scripts/arm64-python.sh), in the quick form too.
#
# Under CI=true at least two versions must have been tested, and every wheel that can run
# here (x86_64) must have passed on at least one; otherwise missing interpreters are notes.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/wheels-common.sh

read_wheel_mode "$@"
dir=$wheel_dir
strict=0
[[ ${CI:-} == true ]] && strict=1

tools=$WHEEL_TOOLS              # auditwheel and maturin: scripts/build-wheels.sh installs them
work=$PWD/target/wheel-test     # the virtual environments, made anew on every run
smoke=$PWD/scripts/wheel_smoke.py
if [[ ! -x $tools/bin/auditwheel ]]; then
    echo "test-wheels: no build tools in $tools (make wheels first)" >&2
    exit 1
fi
shopt -s nullglob
wheels=("$dir"/dlbridge-*.whl)
shopt -u nullglob
((${#wheels[@]})) || { echo "test-wheels: no wheel in $dir (make wheels)" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"
# Only WHEEL_DIR may provide dlbridge: no find-links from the environment (pip's config here
# adds one), no source tree on the path.
unset PIP_FIND_LINKS PYTHONPATH
export PIP_DISABLE_PIP_VERSION_CHECK=1
host_arch=$(uname -m)

declare -A passed   # wheel file name -> the versions it passed on
for wheel in "${wheels[@]}"; do passed[$(basename "$wheel")]=""; done

# 1. Each wheel as a file: policy, stripped library, no test kernels.
declare -A policy
for wheel in "${wheels[@]}"; do
    name=$(basename "$wheel")
    shown=$("$tools/bin/auditwheel" show "$wheel")
    tag=$(grep -o 'manylinux_2_[0-9]*_[a-z0-9_]*' <<<"$shown" | head -n 1 || true)
    glibc_minor=$(sed -n 's/^manylinux_2_\([0-9]*\)_.*/\1/p' <<<"$tag")
    if [[ -z $tag || $glibc_minor -gt 17 ]]; then
        echo "$shown" >&2
        echo "test-wheels: $name is not manylinux2014 or older (${tag:-no manylinux tag})" >&2
        exit 1
    fi
    policy[$name]=$tag
    unpacked=$work/unpacked/$name
    "$tools/bin/python" -m zipfile -e "$wheel" "$unpacked"
    if find "$unpacked" -name '*_testing*' | grep -q .; then
        echo "test-wheels: $name has a _testing file" >&2
        exit 1
    fi
    # The machine its libraries must be built for, from the wheel's platform tag.
    case $name in
        *_x86_64.whl) machine=X86-64 ;;
        *_aarch64.whl) machine=AArch64 ;;
        *) echo "test-wheels: $name: unexpected platform" >&2; exit 1 ;;
    esac
    for library in "$unpacked"/dlbridge/*.so; do
        if ! readelf -h "$library" | grep -q "Machine:.*$machine"; then
            echo "test-wheels: $name: $(basename "$library") is not built for $machine" >&2
            exit 1
        fi
        if readelf -S --wide "$library" | grep -q '\.symtab'; then
            echo "test-wheels: $name: $(basename "$library") is not stripped" >&2
            exit 1
        fi
        # The name of the test kernels' submodule is in the library only with `testing`.
        if grep -qa '_testing' "$library"; then
            echo "test-wheels: $name: $(basename "$library") has the test kernels" >&2
            exit 1
        fi
    done
    echo "test-wheels: $name: $tag, $machine, stripped, no test kernels"
done

# A fresh virtual environment with NumPy from PyPI: make_venv PYTHON DIR
make_venv() {
    "$1" -m venv "$2"
    "$2/bin/python" -m pip install --quiet numpy
}

# chosen_wheel REPORT: the file name of the dlbridge wheel pip installed, from its
# `pip install --report REPORT`.
chosen_wheel() {
    "$tools/bin/python" -c '
import json, sys
from urllib.parse import unquote
installs = json.load(open(sys.argv[1]))["install"]
url = next(i["download_info"]["url"] for i in installs if i["metadata"]["name"] == "dlbridge")
print(unquote(url).rsplit("/", 1)[-1])
' "$1"
}

# 2. Every CPython 3.9-3.13 found: install from the wheel directory, run the smoke test.
tested=()
for version in "${WHEEL_PYTHONS[@]}"; do
    python=$(find_python "$version")
    if [[ -z $python ]]; then
        echo "test-wheels: CPython $version not found; not tested"
        continue
    fi
    # Is there a wheel for it? pip's own tag rules say (its vendored `packaging`).
    fitting=$("$python" - "$dir" <<'EOF'
import pathlib
import sys

from pip._vendor.packaging.tags import sys_tags
from pip._vendor.packaging.utils import parse_wheel_filename

supported = set(sys_tags())
wheels = pathlib.Path(sys.argv[1]).glob("dlbridge-*.whl")
print(sum(1 for wheel in wheels if parse_wheel_filename(wheel.name)[3] & supported))
EOF
)
    if ((fitting == 0)); then
        if ((quick)); then
            echo "test-wheels: no quick wheel for CPython $version; not tested"
            continue
        fi
        echo "test-wheels: no wheel in $dir installs on CPython $version" >&2
        exit 1
    fi
    venv=$work/venv-$version
    make_venv "$python" "$venv"
    # --report says which wheel pip chose.
    "$venv/bin/python" -m pip install --quiet --no-index --find-links "$dir" \
        --report "$work/report-$version.json" dlbridge
    chosen=$(chosen_wheel "$work/report-$version.json")
    echo "test-wheels: CPython $version: $chosen"
    (cd "$work" && "$venv/bin/python" "$smoke")
    passed[$chosen]+="${passed[$chosen]:+ }$version"
    tested+=("$version")
done

# 2b. The aarch64 wheel for CPython 3.11 (cp311-abi3), run: Debian's arm64 CPython 3.11 and
# NumPy under qemu-user-static (scripts/arm64-python.sh prepares them). pip, asked for an
# aarch64 CPython 3.11, picks the wheel from the directory and installs it into a folder of
# its own for that interpreter (which has no venv module); the smoke test runs there. Only
# where an aarch64 wheel was built (scripts/build-wheels.sh, where the Rust target is
# installed; under CI=true it is added, and the quick form has the wheel too). Where the
# interpreter cannot be prepared here the wheel is a note, and under CI=true a failure.
shopt -s nullglob
arm64_wheels=("$dir"/dlbridge-*_aarch64.whl)
shopt -u nullglob
if ((${#arm64_wheels[@]})); then
    if arm64_python=$(bash scripts/arm64-python.sh | tail -n 1); then
        site=$work/arm64-site
        "$tools/bin/python" -m pip install --quiet --no-index --find-links "$dir" \
            --target "$site" --platform manylinux2014_aarch64 --python-version 3.11 \
            --implementation cp --abi cp311 --only-binary=:all: --no-deps \
            --report "$work/report-arm64.json" dlbridge
        chosen=$(chosen_wheel "$work/report-arm64.json")
        echo "test-wheels: CPython 3.11 on aarch64 (Debian's, under qemu): $chosen"
        (cd "$work" && QEMU_LD_PREFIX=${arm64_python%/usr/bin/python3.11} PYTHONPATH=$site \
            "$arm64_python" "$smoke" --site "$site")
        passed[$chosen]+="${passed[$chosen]:+ }3.11 (aarch64, qemu)"
    elif ((strict)); then
        echo "test-wheels: CI=true: the aarch64 interpreter cannot be prepared here" >&2
        exit 1
    else
        echo "test-wheels: no aarch64 interpreter here (scripts/arm64-python.sh); the aarch64" \
            "wheels are checked as files only"
    fi
fi

# 3. The sdist builds a wheel offline with maturin (the release profile without its slow
# whole-program optimization: what is checked is that the sdist has every file it needs),
# which passes the smoke test on the tools' interpreter. Its target directory is new every
# time: the sdist's files keep old times, so a kept one would look up to date to cargo and
# give back the extension of an earlier sdist.
sdist_row=""
if ((!quick)); then
    sdists=("$dir"/dlbridge-*.tar.gz)
    [[ -f ${sdists[0]} ]] || { echo "test-wheels: no sdist in $dir" >&2; exit 1; }
    echo "test-wheels: building a wheel from $(basename "${sdists[0]}")"
    CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
        CARGO_TARGET_DIR=$work/sdist-target \
        "$tools/bin/python" -m pip wheel --quiet --no-index --no-deps --no-build-isolation \
        --wheel-dir "$work/from-sdist" "${sdists[0]}"
    venv=$work/venv-sdist
    make_venv "$tools/bin/python" "$venv"
    "$venv/bin/python" -m pip install --quiet --no-index "$work"/from-sdist/dlbridge-*.whl
    (cd "$work" && "$venv/bin/python" "$smoke")
    sdist_version=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    sdist_kib=$((($(stat -c %s "${sdists[0]}") + 1023) / 1024))
    sdist_row="$(basename "${sdists[0]}")|sdist|$sdist_kib KiB|-"
    sdist_row+="|$sdist_version (wheel built from it)"
fi

# 4. The table, then CI's rules.
echo
printf '%-76s %-34s %9s %-26s %s\n' wheel tags size policy "passed on CPython"
failed=0
for wheel in "${wheels[@]}"; do
    name=$(basename "$wheel")
    IFS=- read -r _ _ py abi platform <<<"${name%.whl}"
    versions=${passed[$name]}
    if [[ -z $versions ]]; then
        if [[ $platform == *"$host_arch"* ]]; then
            versions="NONE"
            ((strict)) && failed=1
        else
            versions="- (not runnable on $host_arch)"
        fi
    fi
    printf '%-76s %-34s %5s KiB %-26s %s\n' "$name" "$py-$abi-${platform%%.*}" \
        "$((($(stat -c %s "$wheel") + 1023) / 1024))" "${policy[$name]}" "$versions"
done
if [[ -n $sdist_row ]]; then
    IFS='|' read -r name tags size pol versions <<<"$sdist_row"
    printf '%-76s %-34s %9s %-26s %s\n' "$name" "$tags" "$size" "$pol" "$versions"
fi
echo
echo "test-wheels: tested on CPython ${tested[*]:-nothing}"
if ((strict && ${#tested[@]} < 2)); then
    echo "test-wheels: CI=true needs at least two CPython versions tested" >&2
    exit 1
fi
if ((failed)); then
    echo "test-wheels: CI=true: a wheel for $host_arch was tested on no version" >&2
    exit 1
fi
