#!/usr/bin/env bash
# Runs make targets as `make test` does, and ends with the seconds each took and the wall
# time of the whole: CI has a time budget (the suite should stay under 35 minutes on two
# cores), and the table shows which stage grew. Stops at the first failing stage, with the
# table so far and that stage's exit status.
#
#   scripts/timed-stages.sh MAKE STAGE...
#
# MAKE is the make command to run each target with (the Makefile passes `$(MAKE)`, so the
# options and variables of the outer make carry over). A STAGE is a target, or targets joined
# by `+` (`python-test+miri`), which run at the same time: the first with its output on the
# terminal, each other one with its output in target/test-logs/TARGET.log (the folder is
# TIMED_STAGES_LOGS where that is set), printed when the first has ended and it has too. That
# is for targets that mostly keep one core busy (Miri interprets on one thread; the Python
# runs are one process at a time), so that two of them fill the two cores CI has. Targets of
# one stage must not depend on each other. A stage fails when any of its targets fails; the
# targets beside the first are waited for even then, so that their output is shown.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 2 ]; then
    echo "usage: $0 MAKE STAGE..." >&2
    exit 2
fi
make_command=$1
shift

logs=${TIMED_STAGES_LOGS:-target/test-logs}
rows=()
wall=0
report() {
    echo
    echo "make test: seconds per stage (CI budget: 35 minutes)"
    printf '  %-22s %6s\n' stage seconds
    local row
    for row in "${rows[@]}"; do
        printf '  %-22s %6s %s\n' ${row}
    done
    printf '  %-22s %6s  (%d min %02d s wall time)\n' total "$wall" $((wall / 60)) $((wall % 60))
}

for stage in "$@"; do
    IFS=+ read -r -a targets <<<"$stage"
    first=${targets[0]}
    others=("${targets[@]:1}")
    start=$(date +%s)
    pids=()
    if [ ${#others[@]} -gt 0 ]; then
        mkdir -p "$logs"
    fi
    for target in "${others[@]}"; do
        rm -f "$logs/$target.seconds"
        (
            target_start=$(date +%s)
            $make_command --no-print-directory "$target" >"$logs/$target.log" 2>&1
            status=$?
            echo "$(($(date +%s) - target_start))" >"$logs/$target.seconds"
            exit "$status"
        ) &
        pids+=($!)
        echo "timed-stages: $target runs beside $first; its output: $logs/$target.log"
    done
    $make_command --no-print-directory "$first"
    first_status=$?
    first_seconds=$(($(date +%s) - start))
    stage_status=$first_status
    stage_rows=("$first $first_seconds $([ "$first_status" -ne 0 ] && echo failed)")
    for index in "${!others[@]}"; do
        target=${others[$index]}
        wait "${pids[$index]}"
        status=$?
        seconds=$(cat "$logs/$target.seconds" 2>/dev/null || echo '?')
        echo
        echo "=== $target (ran beside $first): $logs/$target.log"
        cat "$logs/$target.log"
        note="beside-$first"
        if [ "$status" -ne 0 ]; then
            note="failed,beside-$first"
            [ "$stage_status" -ne 0 ] || stage_status=$status
        fi
        stage_rows+=("$target $seconds $note")
    done
    wall=$((wall + $(date +%s) - start))
    rows+=("${stage_rows[@]}")
    if [ "$stage_status" -ne 0 ]; then
        report
        exit "$stage_status"
    fi
done
report
