#!/usr/bin/env bash
# Checks that the two published crates (dlbridge, dlbridge-pyo3) are complete on their own:
#
# 1. each crate's LICENSE is the repository's (cargo packages the copy in the crate's folder);
# 2. `cargo publish --dry-run` of both together: packaging (README, LICENSE, metadata) and a
#    build of each packaged crate, dlbridge-pyo3 against the packaged dlbridge (cargo serves
#    it from a temporary registry; needs the crates.io index);
# 3. the doc tests of each unpacked package (target/package/<crate>-<version>/), README
#    included, with the features ndarray and cudarc (the library bridges' doc tests run in
#    `make rust-test`): they compile from the package's files alone, so a doc test that
#    reads a file outside the crate fails here. dlbridge-pyo3's doc tests embed Python, as its
#    tests in `make rust-test` do (PyO3 finds `python3`, or PYO3_PYTHON); its dependency on
#    dlbridge is patched to the unpacked dlbridge package, which is not on crates.io.
# 4. the MSRV (`rust-version` of the workspace): `cargo +<msrv> check` of both crates, every
#    target, with the features whose dependencies build with it (`ndarray`, `faer`): not
#    `cudarc` (and dlbridge-pyo3's `cuda`, which needs it: Rust 1.88), nor the library bridges
#    whose crates ask for more (docs/guide/src/platforms.md: nalgebra 1.89, image and arrow 1.88, burn 1.95), into
#    target/msrv; the toolchain is installed with rustup when it is
#    missing (minimal profile), and the step is skipped with a note where that fails (under
#    CI=true that fails the check: scripts/missing-tool.sh).
#
# `--allow-dirty` packages the working tree as it is, so the check also works before a commit.
set -euo pipefail
cd "$(dirname "$0")/.."

read -ra cargo <<<"${CARGO:-cargo}" # may carry arguments: CARGO="cargo +stable"
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
export CARGO_TARGET_DIR=$target_dir
version=$("${cargo[@]}" metadata --no-deps --format-version 1 |
    python3 -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "dlbridge"))')

for crate in dlbridge dlbridge-pyo3; do
    cmp -s LICENSE "crates/$crate/LICENSE" ||
        { echo "package-check: crates/$crate/LICENSE differs from LICENSE" >&2; exit 1; }
done

# The dry run verifies dlbridge-pyo3 against the packaged core through a local registry,
# which cargo extracts into its registry's src folder under the version, and reuses when an
# extraction of that version is there: one left by an earlier run of an older checkout (the
# version does not change between commits) would be built instead of this one.
# Its build of that extraction is reused the same way (a registry crate's fingerprint is its
# version), so the core's fingerprints go too: the core is then built again, which is quick.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/"dlbridge-$version"
rm -rf "$target_dir"/debug/.fingerprint/dlbridge-[0-9a-f]*
"${cargo[@]}" publish --dry-run --allow-dirty --quiet -p dlbridge -p dlbridge-pyo3

core=$target_dir/package/dlbridge-$version
# The doc tests of the library bridges (features nalgebra ... arrow) run in `make rust-test`; they
# read no file, and building them again here would take minutes on two cores.
# Their `compile_fail` error codes checked too (scripts/rustdoc-error-codes.sh).
export RUSTDOC="$PWD/scripts/rustdoc-error-codes.sh"
(cd "$core" && "${cargo[@]}" test --doc --features ndarray,cudarc --quiet)
(cd "$target_dir/package/dlbridge-pyo3-$version" &&
    "${cargo[@]}" test --doc --features cuda --quiet --config "patch.crates-io.dlbridge.path=\"$core\"")
unset RUSTDOC
echo "package-check: dlbridge and dlbridge-pyo3 $version package, build and pass their doc tests"

msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)
if cargo "+$msrv" --version >/dev/null 2>&1 ||
    rustup toolchain install "$msrv" --profile minimal >/dev/null 2>&1; then
    # Not `cudarc` (and dlbridge-pyo3's `cuda`, which turns it on): cudarc 0.19 needs
    # libloading 0.9, which needs Rust 1.88; nor the bridges whose libraries need more (the
    # features' own minimums are in docs/guide/src/platforms.md).
    CARGO_TARGET_DIR=$target_dir/msrv cargo "+$msrv" check --quiet --all-targets \
        --features dlbridge/ndarray,dlbridge/faer,dlbridge/safetensors -p dlbridge -p dlbridge-pyo3
    echo "package-check: dlbridge and dlbridge-pyo3 build with Rust $msrv (the MSRV, with ndarray, faer and safetensors; cudarc: 1.88)"
else
    bash scripts/missing-tool.sh package-check \
        "the Rust $msrv toolchain (the MSRV) could not be installed, so the MSRV is not checked" || exit $?
fi
