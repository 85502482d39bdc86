#!/usr/bin/env bash
# Runs make targets one after another, as `make test` does, and ends with the seconds each
# took and their sum: CI has a time budget (the suite should stay under 35 minutes on two
# cores), and the table shows which stage grew. Stops at the first failing target, with the
# table so far and that target's exit status.
#
#   scripts/timed-stages.sh MAKE TARGET...
#
# MAKE is the make command to run each target with (the Makefile passes `$(MAKE)`, so the
# options and variables of the outer make carry over).
set -uo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 2 ]; then
    echo "usage: $0 MAKE TARGET..." >&2
    exit 2
fi
make_command=$1
shift

rows=()
total=0
report() {
    echo
    echo "make test: seconds per stage (CI budget: 35 minutes)"
    printf '  %-22s %6s\n' stage seconds
    local row
    for row in "${rows[@]}"; do
        printf '  %-22s %6s %s\n' ${row}
    done
    printf '  %-22s %6s  (%d min %02d s)\n' total "$total" $((total / 60)) $((total % 60))
}

for target in "$@"; do
    start=$(date +%s)
    $make_command --no-print-directory "$target"
    status=$?
    seconds=$(($(date +%s) - start))
    total=$((total + seconds))
    if [ "$status" -ne 0 ]; then
        rows+=("$target $seconds failed")
        report
        exit "$status"
    fi
    rows+=("$target $seconds")
done
report
