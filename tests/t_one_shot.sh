#!/usr/bin/env bash
# A one-shot command does only the work it needs (issue 32), seen from the outside
# with strace -f, for the release and the test build.
#
# 1. It starts exactly the workers it uses (every execve of ck-basal-worker counted):
#   exec of one script            1 (the worker that runs it; no spare)
#   exec --repeat 3               1 (the three runs share the flow's one worker)
#   exec of two scripts           1 (both are bound to the one flow id "exec")
#   run of an approved flow       1 (the run's worker)
#   codemode run, one-tool catalog 1 (the worker that compiled the script runs it)
# [guard: cmd_exec.c's cfg.spares = 0: with the default 2 spares, exec of one script
# starts 2 workers, --repeat 3 and two scripts 3 (checked red)]
# [guard: pool.c's POOL_USE_CODEMODE taking the POOL_USE_CODEMODE_CHECK worker: with a
# fresh worker for the run, codemode run starts 2 (checked red)]. The control: the count
# sees the worker that ck-basal worker-check starts (1), so a count of 0 could not pass.
#
# 2. Its store's close does not checkpoint: `run` syncs only the WAL (its commits),
# never basal.db, the WAL stays, and a fresh connection sees the run succeeded
# [guard: store.c's SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE: without it the close syncs the
# WAL and basal.db once more (checked red)]. The control: the sqlite3 shell's
# checkpoint of a scratch WAL database is seen to sync its main file, so a count of 0
# is not a trace that misses them.
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib/harness.sh
scratch_dir one-shot
chmod 700 "$scratch"

if ! command -v strace >/dev/null; then
    echo "not ok - one-shot: strace is not installed (scripts/install-deps.sh --test installs it)"
    exit 0
fi

echo 'let s = 0; for (let i = 0; i < 1000; i++) s += i; return s;' >"$scratch/w1.js"
echo 'return 2;' >"$scratch/two.js"

# workers BIN LABEL WANT CMD...: runs CMD under strace and checks it exited 0 and
# executed ck-basal-worker exactly WANT times
workers() {
    local bin=$1 label=$2 want=$3
    shift 3
    local trace=$scratch/trace out
    rm -f "$trace"
    out=$(strace -f -qq -e trace=execve -e signal=none -o "$trace" "$@" 2>&1)
    local rc=$?
    local got
    got=$(grep -c 'execve("[^"]*/ck-basal-worker", .*= 0$' "$trace" 2>/dev/null)
    if [ "$rc" -eq 0 ] && [ "$got" = "$want" ]; then
        echo "ok - one-shot: $bin: $label starts $want worker(s)"
    else
        echo "not ok - one-shot: $bin: $label: exit $rc, $got worker(s) started, want $want: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
    fi
}

# syncs BIN HOME CMD...: CMD (a run) synced the WAL and never basal.db; the WAL is
# still there and a fresh connection sees every run succeeded
syncs() {
    local bin=$1 home=$2
    shift 2
    local trace=$scratch/trace
    rm -f "$trace"
    "$@" >/dev/null 2>&1 # the first run after install made the WAL: now it exists
    strace -f -qq -y -e trace=fsync,fdatasync -e signal=none -o "$trace" "$@" >/dev/null 2>&1
    local rc=$?
    local wal db
    wal=$(grep -c "sync([0-9]*<$home/basal.db-wal>)" "$trace")
    db=$(grep -c "sync([0-9]*<$home/basal.db>)" "$trace")
    local runs
    runs=$(sqlite3 "file:$home/basal.db?mode=ro" \
        "SELECT count(*) || ' ' || sum(state = 'succeeded') FROM runs" 2>&1)
    if [ "$rc" -eq 0 ] && [ "$wal" -ge 1 ] && [ "$db" -eq 0 ] && [ -s "$home/basal.db-wal" ] &&
        [ "${runs% *}" = "${runs#* }" ] && [ "${runs% *}" -ge 2 ]; then
        echo "ok - one-shot: $bin: run syncs the WAL ($wal) and not basal.db at close; a fresh connection sees all ${runs% *} runs succeeded"
    else
        echo "not ok - one-shot: $bin: run: exit $rc, $wal syncs of the WAL, $db of basal.db (want 0), WAL size $(stat -c %s "$home/basal.db-wal" 2>&1), runs (count, succeeded): $runs"
    fi
    # the control: a checkpoint of a scratch WAL database with a commit in its WAL
    # syncs its main file, and the trace sees it
    rm -f "$scratch/control.db"*
    strace -f -qq -y -e trace=fsync,fdatasync -e signal=none -o "$trace" \
        sqlite3 "$scratch/control.db" "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
            CREATE TABLE t(x); INSERT INTO t VALUES (1); PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null 2>&1
    db=$(grep -c "sync([0-9]*<$scratch/control.db>)" "$trace")
    if [ "$db" -ge 1 ]; then
        echo "ok - one-shot: $bin: the control: a checkpoint's sync of the main file is seen ($db)"
    else
        echo "not ok - one-shot: $bin: the control: a checkpoint synced control.db $db times: the trace misses syncs"
    fi
}

for bin in build/bin build/test/bin; do
    cb=$bin/ck-basal
    if [ ! -x "$cb" ]; then
        echo "not ok - one-shot: $cb is missing (make test-build)"
        continue
    fi
    home=$scratch/home-${bin//\//-}
    "$cb" --home "$home" setup >/dev/null 2>&1 || echo "not ok - one-shot: $bin: setup failed"
    workers "$bin" "worker-check (the control: the count sees a worker)" 1 "$cb" --home "$home" worker-check
    workers "$bin" "exec of one script" 1 "$cb" --home "$home" exec "$scratch/w1.js"
    workers "$bin" "exec --repeat 3" 1 "$cb" --home "$home" exec "$scratch/w1.js" --repeat 3
    workers "$bin" "exec of two scripts" 1 "$cb" --home "$home" exec "$scratch/w1.js" "$scratch/two.js"

    # an approved flow
    flow=$scratch/flow-${bin//\//-}
    mkdir -p "$flow"
    cp "$scratch/w1.js" "$flow/flow.js"
    cat >"$flow/manifest.json" <<'EOF'
{"format": 1, "id": "w1", "version": 1, "purpose": "Sum the numbers below 1000",
 "trigger": {"manual": true}}
EOF
    if install_approved "$cb" "$home" "$flow"; then
        workers "$bin" "run of an approved flow" 1 "$cb" --home "$home" run w1
        syncs "$bin" "$home" "$cb" --home "$home" run w1
    else
        echo "not ok - one-shot: $bin: the flow w1 could not be installed and approved"
    fi

    # a one-tool catalog (the script calls no tool: no module program starts)
    cat >"$home/modules.json" <<'EOF'
{"modules": {"notes": {"program": "/bin/true", "ops": {"echo": {"kind": "query"}}}}}
EOF
    cat >"$home/tools.json" <<'EOF'
{"tools": {"echo_note": {"description": "Echo a note back.", "module": "notes", "op": "echo",
 "class": "query", "input": {"type": "object", "properties": {"text": {"type": "string"}}}}}}
EOF
    workers "$bin" "codemode run (compile check and run on one worker)" 1 "$cb" --home "$home" codemode run "$scratch/w1.js"
done
