#!/usr/bin/env bash
# Runs the test suite and ends with exactly one summary line "N passed, N failed".
#
#   tests/run.sh                 every test program in build/test/tests/ and
#                                build/asan/tests/, then every tests/*.sh
#   tests/run.sh NAME...         only those: t_startup (both variants), test/t_startup
#                                or asan/t_startup (one variant), pg/t_triggers (the
#                                PostgreSQL variant), or foo.sh
#
# The pg/ variant: the test programs of PG_VARIANT run once more, their ck-basal on a
# PostgreSQL store (BASAL_TEST_ENGINE=postgresql: tests/lib/test_store.h gives every
# data home a database of its own on the run's cluster), so the same checks prove the
# same behaviour on both engines. Those programs look at the store only through ck-basal.
#
# Each test prints one line per check, "ok - <name>" or "not ok - <name>: <detail>";
# this script counts them. A test program that exits non-zero (or dies, or times out)
# without printing any "not ok" line, or that prints no check at all, counts as one
# more failure of its own, so a crash can never pass silently. Exit status: 0 only if
# nothing failed. Run `make test-build` first (make check does both).
#
# Before the tests it starts a throwaway PostgreSQL cluster for the whole run
# (tests/lib/pg_cluster.sh: BASAL_TEST_PG_HOST, _PORT, _USER, _BIN, _CTL in the tests'
# environment) unless BASAL_TEST_PG_HOST is set already, and removes it at exit. If it
# cannot start, "not ok - postgresql cluster: <reason>" counts once, and every test
# still runs (those needing PostgreSQL fail by themselves).
set -u

cd "$(dirname "$0")/.." || exit 2

# A safety net only: a test that hangs is killed and counted as failed.
TEST_TIMEOUT=${TEST_TIMEOUT:-600}

passed=0
failed=0
out=$(mktemp "${TMPDIR:-/tmp}/basal-run.XXXXXX") || exit 2
# One line "SECONDS LABEL" per test, for the slowest list at the end (CI's time budget).
durations=$(mktemp "${TMPDIR:-/tmp}/basal-run-times.XXXXXX") || exit 2
# A throwaway PostgreSQL cluster for the tests of the PostgreSQL store
# (tests/lib/pg_cluster.sh), unless the caller gives one (BASAL_TEST_PG_HOST and the
# rest set). If it cannot start, that is one failure here; the tests that need it then
# fail by themselves, the others run.
. tests/lib/pg_cluster.sh
trap 'pg_cluster_stop; rm -f "$out" "$durations"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [ -z "${BASAL_TEST_PG_HOST:-}" ]; then
    if pg_cluster_start; then
        echo "# postgresql cluster: started in ${pg_cluster_seconds}s, socket in $BASAL_TEST_PG_HOST"
    else
        echo "not ok - postgresql cluster: $(printf '%s' "$pg_cluster_error" | tr '\n' ' ')"
        failed=$((failed + 1))
        pg_cluster_stop
    fi
fi

# run_one LABEL COMMAND...
run_one() {
    label=$1
    shift
    echo "== $label"
    started=$SECONDS
    timeout --kill-after=10 "$TEST_TIMEOUT" "$@" >"$out"
    status=$?
    echo "$((SECONDS - started)) $label" >>"$durations"
    cat "$out"
    ok=$(grep -c '^ok - ' "$out")
    notok=$(grep -c '^not ok - ' "$out")
    passed=$((passed + ok))
    failed=$((failed + notok))
    if [ "$status" -ne 0 ] && [ "$notok" -eq 0 ]; then
        if [ "$status" -eq 124 ]; then
            echo "not ok - $label: timed out after ${TEST_TIMEOUT}s"
        elif [ "$status" -gt 128 ]; then
            echo "not ok - $label: died by signal $((status - 128)) without reporting a failure"
        else
            echo "not ok - $label: exited $status without reporting a failure"
        fi
        failed=$((failed + 1))
    elif [ "$ok" -eq 0 ] && [ "$notok" -eq 0 ]; then
        echo "not ok - $label: made no check"
        failed=$((failed + 1))
    fi
}

missing() {
    echo "not ok - $1: no such test (run make test-build?)"
    failed=$((failed + 1))
}

run_program() {
    if [ -x "$1" ]; then
        run_one "$1" "$1"
    else
        missing "$1"
    fi
}

# The programs whose every check holds on either engine (they read the store only
# through ck-basal or tests/lib/store_view.c, never basal.db itself).
PG_VARIANT="t_json_output t_triggers t_metrics t_flow_workers t_git_builtin t_module_endpoint
t_events t_serve_refusals t_admission_batch t_long_running"

run_pg() {
    if [ -x "build/test/tests/$1" ]; then
        run_one "pg/$1" env BASAL_TEST_ENGINE=postgresql "build/test/tests/$1"
    else
        missing "pg/$1"
    fi
}

run_script() {
    if [ -f "$1" ]; then
        run_one "$1" bash "$1"
    else
        missing "$1"
    fi
}

if [ "$#" -eq 0 ]; then
    found=0
    for variant in test asan; do
        for t in build/"$variant"/tests/t_*; do
            [ -f "$t" ] || continue
            case "$t" in *.o | *.d) continue ;; esac
            found=1
            run_program "$t"
        done
    done
    for t in $PG_VARIANT; do
        found=1
        run_pg "$t"
    done
    for s in tests/*.sh; do
        [ -f "$s" ] || continue
        [ "$s" = tests/run.sh ] && continue
        found=1
        run_script "$s"
    done
    if [ "$found" -eq 0 ]; then
        echo "not ok - run.sh: no test programs found (run make test-build)"
        failed=$((failed + 1))
    fi
else
    for name in "$@"; do
        case "$name" in
        *.sh)
            case "$name" in
            */*) run_script "$name" ;;
            *) run_script "tests/$name" ;;
            esac
            ;;
        pg/*)
            run_pg "${name#pg/}"
            ;;
        test/* | asan/*)
            run_program "build/${name%%/*}/tests/${name#*/}"
            ;;
        *)
            run_program "build/test/tests/$name"
            run_program "build/asan/tests/$name"
            ;;
        esac
    done
fi

echo "# the slowest tests (seconds):"
sort -rn "$durations" | head -12 | sed 's/^/#   /'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
