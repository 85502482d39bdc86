#!/usr/bin/env bash
# `make wheels`: the release wheels of the Python package and its sdist, into target/wheels.
#
#   scripts/build-wheels.sh           release: every wheel below, plus the sdist
#   scripts/build-wheels.sh --quick   `make test`'s quick form: no sdist, the cargo profile
#                                     `wheel-quick` (no LTO), into target/wheels-quick
# WHEEL_DIR=DIR puts them elsewhere.
#
# Which wheels cover CPython 3.9-3.13:
#   - with the cargo feature `abi3` of crates/dlbridge-python (pyo3/abi3-py311): one wheel
#     per version for 3.9 and 3.10 (the buffer protocol joined the limited API only in 3.11)
#     and one cp311-abi3 wheel for 3.11 and later;
#   - without it (until that feature lands): one wheel per version for every CPython 3.9-3.13
#     found here.
# The quick form builds the abi3 wheel alone, or without the feature the wheels of the
# oldest and the newest version found, so that `make test` tests on two versions.
#
# Every wheel is linked by Zig (`maturin build --zig`, ziglang from PyPI) against glibc 2.17:
# manylinux2014. The aarch64 wheels are cross-built the same way when the Rust target
# aarch64-unknown-linux-gnu is installed (`rustup target add aarch64-unknown-linux-gnu`), and
# skipped with a note otherwise; under CI=true the target is added where it is missing (and
# a failure to add it fails), so that the aarch64 cp311-abi3 wheel is built, and run under
# qemu by scripts/test-wheels.sh, in the quick form too. WHEEL_TARGETS="x86_64-unknown-linux-gnu
# ..." chooses the targets by hand. The wheels leave out the test kernels (the cargo feature `testing` is off)
# and their libraries are stripped (`--strip`). scripts/test-wheels.sh tests them.
#
# The build tools (maturin, ziglang, auditwheel; pinned in python/requirements-wheels.txt)
# live in their own virtual environment, target/wheel-tools/venv, re-installed when the list
# changes. Each wheel builds in a cargo target directory of its own
# (target/wheel-build/TRIPLE/ABI), so that building again rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/wheels-common.sh

read_wheel_mode "$@"

out=$wheel_dir
if ((quick)); then
    profile=(--profile wheel-quick)
else
    profile=(--release)
fi

use_wheel_tools

# Does crates/dlbridge-python declare the cargo feature `abi3`?
has_abi3=$(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
packages = json.load(sys.stdin)["packages"]
features = next(p["features"] for p in packages if p["name"] == "dlbridge-python")
print(1 if "abi3" in features else 0)
')

# The wheels to build, one "ABI VERSION" entry each: ABI is cpXY or abi3; VERSION the
# interpreter maturin builds for (for abi3, the oldest the wheel supports).
found=()
for version in "${WHEEL_PYTHONS[@]}"; do
    if [[ -n $(find_python "$version") ]]; then
        found+=("$version")
    else
        echo "build-wheels: CPython $version not found here"
    fi
done
((${#found[@]})) || { echo "build-wheels: no CPython 3.9-3.13 found" >&2; exit 1; }
builds=()
if ((has_abi3)); then
    if ((quick)); then
        builds=("abi3 3.11")
    else
        builds=("cp39 3.9" "cp310 3.10" "abi3 3.11")
    fi
else
    echo "build-wheels: crates/dlbridge-python has no feature abi3 yet: one wheel per version"
    if ((quick)); then
        versions=("${found[0]}")
        ((${#found[@]} > 1)) && versions+=("${found[-1]}")
    else
        versions=("${found[@]}")
    fi
    for version in "${versions[@]}"; do
        builds+=("cp${version/./} $version")
    done
fi

# The targets: x86_64, and aarch64 where its Rust target is installed (added under CI).
if [[ -n ${WHEEL_TARGETS:-} ]]; then
    read -r -a targets <<<"$WHEEL_TARGETS"
else
    targets=(x86_64-unknown-linux-gnu)
    aarch64=aarch64-unknown-linux-gnu
    if [[ ${CI:-} == true ]] && ! rustup target list --installed 2>/dev/null | grep -qx $aarch64
    then
        rustup target add $aarch64 >/dev/null ||
            { echo "build-wheels: CI=true: cannot add the Rust target $aarch64" >&2; exit 1; }
    fi
    if rustup target list --installed 2>/dev/null | grep -qx $aarch64; then
        targets+=($aarch64)
    else
        echo "build-wheels: Rust target $aarch64 not installed;" \
            "no aarch64 wheels (rustup target add $aarch64)"
    fi
fi

# Only this build's files in the output directory: scripts/test-wheels.sh tests them all.
mkdir -p "$out"
rm -f "$out"/dlbridge-*.whl "$out"/dlbridge-*.tar.gz

for target in "${targets[@]}"; do
    for build in "${builds[@]}"; do
        read -r abi version <<<"$build"
        features=()
        [[ $abi == abi3 ]] && features=(--features abi3)
        if [[ $target == "$(rustc -vV | sed -n 's/^host: //p')" ]]; then
            # A native build: the interpreter itself tells maturin its configuration. The
            # abi3 wheel can be built by any CPython it supports (3.11 or later).
            interpreter=$(find_python "$version")
            if [[ $abi == abi3 && -z $interpreter ]]; then
                for later in "${found[@]}"; do
                    if ((${later#3.} >= ${version#3.})); then
                        interpreter=$(find_python "$later")
                        break
                    fi
                done
            fi
            if [[ -z $interpreter ]]; then
                echo "build-wheels: CPython $version not found; no $abi wheel for $target"
                continue
            fi
        else
            # A cross build: maturin describes CPython X.Y of the target from its own data.
            interpreter=python$version
        fi
        echo "build-wheels: $abi wheel for $target (${profile[*]})"
        CARGO_TARGET_DIR=target/wheel-build/$target/$abi \
            maturin build "${profile[@]}" --strip --zig --compatibility manylinux2014 \
            --target "$target" --interpreter "$interpreter" "${features[@]}" \
            --out "$out" --quiet
    done
done

if ((!quick)); then
    echo "build-wheels: sdist"
    maturin sdist --out "$out"
fi
echo "build-wheels: into $out:"
ls -l "$out"
