#!/usr/bin/env bash
# Builds dlbridge's extension module `_dlbridge` (crates/dlbridge-python, with the test kernels
# of the cargo feature `testing`) and the matmul example's `dlbridge_matmul` (examples/matmul,
# whose `add` returns its result with `return_like`) as they were at COMMIT, in both build
# profiles, for benches/compare_builds.py to time against another commit's:
#
#   lto/      the workspace's release profile (fat LTO, one codegen unit), as
#             `maturin develop --release` (make python-build) builds it;
#   default/  cargo's default release profile (no cross-crate LTO, 16 codegen units), as a
#             user's crate builds it (benches/peers/build-dlbridge-default-profile.sh).
#
# COMMIT's tree is taken with `git archive` into target/compare/src-<short> (the checkout and
# its index are not touched); COMMIT=WORKTREE builds the working tree itself, uncommitted
# changes included. Each (commit, profile) has its own target dir,
# target/compare/target-<short>-<profile>, so a second run only rebuilds what changed. The
# modules go to OUT_DIR/<profile>/_dlbridge<EXT_SUFFIX> and dlbridge_matmul<EXT_SUFFIX>;
# MATMUL=0 leaves the example out. Run from the repository root;
# PYTHON picks the interpreter (default .venv/bin/python); PROFILES picks the profiles
# (default "lto default").
#
#   bash benches/build-at-commit.sh 0744a74 target/compare/builds/before
#   bash benches/build-at-commit.sh WORKTREE target/compare/builds/after
set -euo pipefail

if [ "$#" -ne 2 ]; then
    echo "usage: $0 COMMIT|WORKTREE OUT_DIR" >&2
    exit 2
fi
commit="$1"
out_dir="$2"
root="$(pwd)"

python="${PYTHON:-.venv/bin/python}"
# PyO3's build script runs in another directory, so give it an absolute path.
case "$python" in
    */*) python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")" ;;
    *) python="$(command -v "$python")" ;;
esac
suffix="$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"

if [ "$commit" = WORKTREE ]; then
    short=worktree
    src="$root"
else
    short="$(git rev-parse --short=7 "$commit^{commit}")"
    src="$root/target/compare/src-$short"
    if [ ! -f "$src/Cargo.toml" ]; then
        rm -rf "$src"
        mkdir -p "$src"
        git archive --format=tar "$short" | tar -x -C "$src"
    fi
fi
mkdir -p "$out_dir"
out_dir="$(cd "$out_dir" && pwd)"

export PYO3_PYTHON="$python" PYO3_BUILD_EXTENSION_MODULE=1
for profile in ${PROFILES:-lto default}; do
    target_dir="$root/target/compare/target-$short-$profile"
    case "$profile" in
        lto) profile_env=() ;;
        # CARGO_PROFILE_RELEASE_* override the workspace's [profile.release] with cargo's
        # defaults.
        default) profile_env=(CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16) ;;
        *)
            echo "unknown profile $profile (lto, default)" >&2
            exit 2
            ;;
    esac
    echo "building $commit ($short), profile $profile, in $target_dir" >&2
    mkdir -p "$out_dir/$profile"
    # One invocation each, as `make python-build` and `make example-build` build them, so that
    # neither build's features reach the other's.
    (cd "$src" && env "${profile_env[@]}" "${CARGO:-cargo}" build --release --quiet \
        -p dlbridge-python --features testing --target-dir "$target_dir")
    cp "$target_dir/release/lib_dlbridge.so" "$out_dir/$profile/_dlbridge$suffix"
    echo "$out_dir/$profile/_dlbridge$suffix" >&2
    if [ "${MATMUL:-1}" != 0 ]; then
        (cd "$src" && env "${profile_env[@]}" "${CARGO:-cargo}" build --release --quiet \
            -p dlbridge-matmul --target-dir "$target_dir")
        cp "$target_dir/release/libdlbridge_matmul.so" "$out_dir/$profile/dlbridge_matmul$suffix"
        echo "$out_dir/$profile/dlbridge_matmul$suffix" >&2
    fi
done
