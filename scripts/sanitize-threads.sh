#!/usr/bin/env bash
# ThreadSanitizer on the aliasing registry of typed arguments (dlbridge-pyo3's claims.rs), and on
# the copies made for copy=True that claim memory in it.
#
#   CARGO=cargo TRIPLE=x86_64-unknown-linux-gnu scripts/sanitize-threads.sh
#
# 1. Builds dlbridge-pyo3's tests with `-Zsanitizer=thread` on the nightly toolchain, the
#    standard library rebuilt with the sanitizer (`-Zbuild-std`, from the rust-src component):
#    without it, the synchronization inside std (its locks, thread joins) is invisible to the
#    sanitizer, which then reports races that are not there. Into target/sanitize/thread.
# 2. Runs a canary first (`thread_sanitizer_canary`: two threads write one location without
#    synchronization): the sanitizer must report the data race, or the run proves nothing and
#    fails.
# 3. Runs the registry's unit tests (among them the stress: eight threads claiming under the
#    GIL and releasing without it, overlapping and interleaved layouts, every grant checked
#    against the test's own count of each byte's readers and writer) and the aliasing
#    integration tests (a thousand live arguments, interleaved views, the process-wide
#    registry), and the copies' claims (tests/copy_claims.rs: a writer filling memory through a
#    TensorArgMut with the GIL released while two threads copy it with copy=True, through the
#    producer's copy and dlbridge's own), and the imports' claims (the unit test
#    `imports_and_written_claims_on_many_threads_never_alias_a_write`: imports held across
#    rounds and released on another thread, whose lock-free pushes race with the registrations
#    that take them off the import index; and tests/import_claims.rs's
#    `imports_and_writers_on_two_threads_keep_each_other_out`), with halt_on_error: any report
#    fails.
#
# It adds the nightly rust-src component where it is missing; where that cannot be done, it is
# skipped with a note, and under CI=true that fails (scripts/missing-tool.sh).
#
# The interpreter the tests embed is not instrumented: its own memory accesses are not
# checked, but its locks (the GIL is a pthread mutex and condition variable) are seen by the
# sanitizer's interceptors, which is what orders the registrations of different threads.
set -euo pipefail
CARGO="${CARGO:-cargo}"
TRIPLE="${TRIPLE:-x86_64-unknown-linux-gnu}"
has_rust_src() {
    rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^rust-src'
}
has_rust_src || rustup component add --toolchain nightly rust-src >/dev/null 2>&1 || true
if ! has_rust_src; then
    exec bash "$(dirname "$0")/missing-tool.sh" sanitize-threads \
        "the nightly toolchain has no rust-src (rustup component add rust-src --toolchain nightly)"
fi
export RUSTFLAGS="-Zsanitizer=thread -Cforce-frame-pointers=yes"
export CARGO_TARGET_DIR=target/sanitize/thread
test_registry() {
    "$CARGO" +nightly test -Zbuild-std --target "$TRIPLE" -p dlbridge-pyo3 "$@"
}
echo "sanitize-threads: the canary (a data race ThreadSanitizer must report)"
if TSAN_OPTIONS="halt_on_error=1" test_registry --lib -- --ignored --exact \
    claims::tests::thread_sanitizer_canary > target/sanitize-threads-canary.log 2>&1; then
    echo "sanitize-threads: the canary's race was not reported: the build is not instrumented"
    exit 1
fi
if ! grep -q "ThreadSanitizer: data race" target/sanitize-threads-canary.log; then
    echo "sanitize-threads: the canary failed without a race report:"
    tail -20 target/sanitize-threads-canary.log
    exit 1
fi
echo "sanitize-threads: the canary's race was reported; now the registry"
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
test_registry --lib -- claims::
test_registry --test aliasing
test_registry --test copy_claims
test_registry --test import_claims -- --exact imports_and_writers_on_two_threads_keep_each_other_out
