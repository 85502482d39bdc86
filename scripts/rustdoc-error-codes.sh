#!/usr/bin/env bash
# rustdoc, told it is a nightly build, so that it checks the error code of every
# `compile_fail,E0XXX` doc test: stable rustdoc compiles those tests but ignores their codes,
# and then a test that fails for another reason (a typo, a missing import) passes. Only rustdoc
# runs this way (the crates and their dependencies are compiled by rustc as usual), and no
# unstable feature is used: `make rust-test` and scripts/package-check.sh run their doc tests
# with RUSTDOC pointing here.
RUSTC_BOOTSTRAP=1 exec "${RUSTDOC_REAL:-rustdoc}" "$@"
