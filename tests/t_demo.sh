#!/usr/bin/env bash
# The README's main job, scripts/demo.sh, as a newcomer runs it: it exits 0 and shows
# each step it promises (the worker check, the demo flow's dry run answered by the
# shipped examples/demo-flow/fixtures.json, the run, its journal, what the flow wrote).
# Without --fixtures the dry run's error names the option to pass.
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib/harness.sh
scratch_dir demo

out=$(scripts/demo.sh 2>&1)
rc=$?
if [ "$rc" -eq 0 ]; then
    echo "ok - demo: scripts/demo.sh exits 0"
else
    echo "not ok - demo: scripts/demo.sh exited $rc: $(printf '%s' "$out" | tail -3 | tr '\n' ' ')"
fi
expect() { # NAME PATTERN (an extended regex one line of the output matches)
    if printf '%s\n' "$out" | grep -qE -- "$2"; then
        echo "ok - demo: $1"
    else
        echo "not ok - demo: $1: no line matches '$2'"
    fi
}
expect "the worker check accepts a confined worker" '^verdict +accepted'
expect "the dry run of the demo flow completes" '^dry run of flow notes-summary version 1 .*: completed$'
expect "the dry run's three mutations are answered by the shipped fixtures" \
    '^[0-9]+ calls: [0-9]+ performed \(reads\), 3 captured \(3 from fixtures\), 1 refused; nothing was changed$'
expect "the run succeeds" '^run 1 of flow notes-summary: succeeded'
expect "the journal is shown" 'sink\.emit +keyed_mutation'
expect "the flow's summary is shown" '"notes": \['

# The same dry run without fixtures: the first mutation rejects, and says what to pass.
home=$scratch/home
mkdir -p "$scratch/notes" "$scratch/out" "$scratch/flow"
sed -e "s|@NOTES@|$scratch/notes|" -e "s|@OUT@|$scratch/out|" examples/demo-flow/manifest.json.in >"$scratch/flow/manifest.json"
cp examples/demo-flow/flow.js "$scratch/flow/"
build/bin/ck-basal --home "$home" setup >/dev/null 2>&1
dry=$(build/bin/ck-basal --home "$home" flow dry-run "$scratch/flow" \
    --trigger "{\"notes\":\"$scratch/notes\",\"out\":\"$scratch/out\"}" 2>&1)
rc=$?
if [ "$rc" -eq 1 ] && printf '%s\n' "$dry" | grep -q '^error: .*kv.set is not performed and no fixture answers it (--fixtures FILE gives one) (.*flow.js:[0-9]*:[0-9]*)$'; then
    echo "ok - demo: a dry run without fixtures fails (exit 1) and its error names --fixtures"
else
    echo "not ok - demo: a dry run without fixtures: exit $rc: $(printf '%s' "$dry" | head -3 | tr '\n' ' ')"
fi
