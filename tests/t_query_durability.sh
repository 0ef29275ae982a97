#!/usr/bin/env bash
# A flow's journal syncs where a crash could repeat or lose an effect and nowhere else
# (issue 25; docs/flows.md, "Durability"), seen from the outside with strace -f: every
# fsync/fdatasync of the store's WAL during one `run`, for the release and test build.
#
# The runs (trigger {q, m, t}): q fs.stat calls, then m rounds of fs.write and one more
# fs.stat each, then t now() calls. With S0 the syncs of a run that makes no call:
#   q=8               S0: a query's two commits (row, outcome) do not wait for the disk
#                     [guard: flow_host.c's txn_open(fh, made_again ...) for queries:
#                     with store_begin_txn for every row, each query adds 2 (checked red)]
#   t=5               S0: neither does a now()'s one commit [same guard, journal_at_once]
#   m=2 (after q=8, each write followed by a stat)
#                     S0 + 4: each mutation's row waits for the disk before the write
#                     leaves and its outcome before the script hears of it, after an
#                     unsynced query just before it [guard: store.c's set_level: a
#                     durable transaction begins at synchronous=FULL again; without the
#                     restore the writes add 0 (checked red)]
# and each run's journal holds every call with its outcome and an audit row "allowed",
# the run succeeded [guard: flow_host.c's owed audits: a query with no transaction 2
# writes its audit row (fs audits after the effect) with the next transaction; without
# owe_audit the fs.stat rows have none (checked red)]. A query's outcome is written
# with its delivery order, not by a transaction of its own: one commit per query.
# The control: the m=2 run's count is above S0, so the trace sees the syncs a run makes.
#
# A codemode run the same way (trigger {q, m}; C0 the syncs of a run without calls):
#   q=4 calls of a query tool    C0 [guard: codemode_host.c's in_txn_as(h, query, ...):
#                                with every row synced, each adds 2 (checked red)]
#   then m=1 of a mutation tool  C0 + 2 (its row before the module runs, its outcome)
# and every call row is settled, the run succeeded.
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib/harness.sh
scratch_dir query-durability
chmod 700 "$scratch"

module=build/test/tools/test_module
if ! command -v strace >/dev/null || ! command -v sqlite3 >/dev/null || [ ! -x "$module" ]; then
    echo "not ok - query durability: strace, sqlite3 or $module is missing (scripts/install-deps.sh --test, make test-build)"
    exit 0
fi

mkdir -p "$scratch/flow" "$scratch/root"
cat >"$scratch/flow/flow.js" <<EOF
let seen = 0;
for (let i = 0; i < trigger.q; i++) seen += (await fs.stat('$scratch/root')).size >= 0 ? 1 : 0;
for (let i = 0; i < trigger.m; i++) {
  await fs.write('$scratch/root/out' + i, 'text ' + i);
  seen += (await fs.stat('$scratch/root/out' + i)).size > 0 ? 1 : 0;
}
for (let i = 0; i < trigger.t; i++) seen += now() > 0 ? 1 : 0;
return seen;
EOF
cat >"$scratch/flow/manifest.json" <<EOF
{"format": 1, "id": "mix", "version": 1, "purpose": "Stat and write files",
 "trigger": {"manual": true}, "fs": {"read": ["$scratch/root"], "write": ["$scratch/root"]}}
EOF

cat >"$scratch/agent.js" <<'EOF'
let seen = 0;
for (let i = 0; i < trigger.q; i++) seen += (await tools.call('echo_note', {text: 'n' + i})) ? 1 : 0;
for (let i = 0; i < trigger.m; i++) seen += await tools.call('add_numbers', {a: i, b: 1});
return seen;
EOF

# codemode_syncs CB HOME TRIGGER: prints "SYNCS SETTLED_CALLS STATE" of one codemode run
codemode_syncs() {
    local cb=$1 home=$2 trigger=$3 trace=$scratch/trace
    rm -f "$trace"
    sqlite3 "$home/basal.db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null 2>&1
    strace -f -qq -y -e trace=fsync,fdatasync -e signal=none -o "$trace" \
        "$cb" --home "$home" codemode run "$scratch/agent.js" --input "$trigger" >/dev/null 2>&1 || {
        echo "run-failed 0 none"
        return
    }
    local syncs calls
    syncs=$(grep -c "sync([0-9]*<$home/basal.db-wal>)" "$trace")
    calls=$(sqlite3 "file:$home/basal.db?mode=ro" "SELECT count(*) || ' ' || (SELECT state FROM
        codemode_runs ORDER BY id DESC LIMIT 1) FROM codemode_calls WHERE run_id =
        (SELECT max(id) FROM codemode_runs) AND state = 'settled'" 2>&1)
    echo "$syncs $calls"
}

# wal_syncs CB HOME TRIGGER: prints "SYNCS CALLS_WITH_OUTCOME STATE" of one run
wal_syncs() {
    local cb=$1 home=$2 trigger=$3 trace=$scratch/trace
    rm -f "$trace"
    # an empty WAL: no run here reaches the checkpoint (256 pages), whose syncs would count
    sqlite3 "$home/basal.db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null 2>&1
    strace -f -qq -y -e trace=fsync,fdatasync -e signal=none -o "$trace" \
        "$cb" --home "$home" run mix --trigger "$trigger" >/dev/null 2>&1 || {
        echo "run-failed 0 0 none"
        return
    }
    local syncs calls
    syncs=$(grep -c "sync([0-9]*<$home/basal.db-wal>)" "$trace")
    # calls with an outcome, calls audited allowed, the run's state
    calls=$(sqlite3 "file:$home/basal.db?mode=ro" "SELECT count(*) || ' ' || (SELECT count(*) FROM
        audit WHERE run_id = (SELECT max(id) FROM runs) AND decision = 'allowed') || ' ' ||
        (SELECT state FROM runs ORDER BY id DESC LIMIT 1) FROM journal WHERE run_id =
        (SELECT max(id) FROM runs) AND settlement IS NOT NULL" 2>&1)
    echo "$syncs $calls"
}

check() { # LABEL GOT WANT_SYNCS WANT_CALLS
    local label=$1 got=$2 want=$3 calls=$4
    if [ "$got" = "$want $calls $calls succeeded" ]; then
        ok "query durability: $label: $want WAL syncs, $calls calls journaled with outcomes and audited"
    else
        not_ok "query durability: $label" "got (syncs, calls with outcomes, audited, state) '$got', want '$want $calls $calls succeeded'"
    fi
}

for bin in build/bin build/test/bin; do
    cb=$bin/ck-basal home=$scratch/home-${bin//\//-}
    [ -x "$cb" ] || { not_ok "query durability: $cb" "missing (make test-build)"; continue; }
    rm -rf "$scratch/root"/out*
    if ! install_approved "$cb" "$home" "$scratch/flow"; then
        echo "not ok - query durability: $bin: the flow could not be installed and approved"
        continue
    fi
    "$cb" --home "$home" run mix --trigger '{"q":0,"m":0,"t":0}' >/dev/null 2>&1 # the WAL exists now
    base=$(wal_syncs "$cb" "$home" '{"q":0,"m":0,"t":0}')
    s0=${base%% *}
    check "$bin: a run without calls (S0)" "$base" "$s0" 0
    check "$bin: 8 fs.stat queries add no sync" "$(wal_syncs "$cb" "$home" '{"q":8,"m":0,"t":0}')" "$s0" 8
    check "$bin: 5 now() add no sync" "$(wal_syncs "$cb" "$home" '{"q":0,"m":0,"t":5}')" "$s0" 5
    got=$(wal_syncs "$cb" "$home" '{"q":8,"m":2,"t":0}')
    check "$bin: 2 fs.write among 10 fs.stat add 2 syncs each" "$got" "$((s0 + 4))" 12
    if [ "${got%% *}" -gt "$s0" ] 2>/dev/null; then
        echo "ok - query durability: $bin: the control: the trace sees a mutation's syncs (${got%% *} > $s0)"
    else
        echo "not ok - query durability: $bin: the control: a run with 2 fs.write synced the WAL '${got%% *}' times, S0 $s0"
    fi
    if [ "$(cat "$scratch/root/out1" 2>&1)" = "text 1" ]; then
        echo "ok - query durability: $bin: the writes happened"
    else
        echo "not ok - query durability: $bin: out1 holds '$(cat "$scratch/root/out1" 2>&1)'"
    fi

    # codemode: a catalog of a query tool and a mutation tool
    cat >"$home/modules.json" <<EOF
{"modules": {"notes": {"program": "$PWD/$module", "args": ["--log", "$scratch/module.log"],
  "ops": {"echo": {"kind": "query"}, "add": {"kind": "mutate"}}}}}
EOF
    cat >"$home/tools.json" <<'EOF'
{"tools": {
  "echo_note": {"description": "Echo a note.", "module": "notes", "op": "echo", "class": "query",
    "input": {"type": "object", "properties": {"text": {"type": "string"}}}},
  "add_numbers": {"description": "Add two numbers.", "module": "notes", "op": "add",
    "class": "mutation", "input": {"type": "object", "properties": {"a": {"type": "integer"},
    "b": {"type": "integer"}}}}}}
EOF
    base=$(codemode_syncs "$cb" "$home" '{"q":0,"m":0}')
    c0=${base%% *}
    got=$(codemode_syncs "$cb" "$home" '{"q":4,"m":0}')
    if [ "$got" = "$c0 4 succeeded" ]; then
        ok "query durability: $bin: codemode: 4 query tool calls add no sync to C0 ($c0), all settled"
    else
        not_ok "query durability: $bin: codemode: 4 query tool calls" "got (syncs, settled, state) '$got', want '$c0 4 succeeded' (C0 from '$base')"
    fi
    got=$(codemode_syncs "$cb" "$home" '{"q":4,"m":1}')
    if [ "$got" = "$((c0 + 2)) 5 succeeded" ]; then
        ok "query durability: $bin: codemode: a mutation tool call after them adds 2 syncs, all settled"
    else
        not_ok "query durability: $bin: codemode: a mutation tool call" "got (syncs, settled, state) '$got', want '$((c0 + 2)) 5 succeeded'"
    fi
done
