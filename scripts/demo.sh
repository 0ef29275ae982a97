#!/usr/bin/env bash
# The main job on a fresh Debian machine: install what is missing, build, show a
# confined worker being started and checked exactly as ck-basal does before it runs
# any flow code, then run a demo flow end to end (install, a dry run answered by the
# shipped fixtures, approve by code hash, run, journal) in a data home of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
make -j"$(nproc)" all >/dev/null
basal=build/bin/ck-basal

echo "== ck-basal worker-check: start ck-basal-worker, confine it, check its Welcome =="
$basal worker-check
echo
echo "== ck-basal exec examples/demo.js: a script in a confined, pooled worker =="
$basal exec examples/demo.js
echo

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
home="$work/home"
mkdir -p "$work/notes" "$work/out" "$work/flow"
printf 'buy milk\ncall the plumber\n' >"$work/notes/monday.txt"
printf 'the build is green again\n' >"$work/notes/tuesday.txt"
sed -e "s|@NOTES@|$work/notes|" -e "s|@OUT@|$work/out|" examples/demo-flow/manifest.json.in \
  >"$work/flow/manifest.json"
cp examples/demo-flow/flow.js "$work/flow/flow.js"

echo "== a flow end to end, in the data home $home =="
$basal --home "$home" setup >/dev/null
installed=$($basal --home "$home" --json flow install "$work/flow")
hash=$(printf '%s' "$installed" | sed -n 's/.*"code_hash":"\([0-9a-f]*\)".*/\1/p')
echo "\$ ck-basal flow install $work/flow   -> code hash $hash"
trigger="{\"notes\":\"$work/notes\",\"out\":\"$work/out\"}"
echo "\$ ck-basal flow dry-run $work/flow --trigger '$trigger' --fixtures examples/demo-flow/fixtures.json"
$basal --home "$home" flow dry-run "$work/flow" --trigger "$trigger" --fixtures examples/demo-flow/fixtures.json
$basal --home "$home" flow approve notes-summary --version 1 --code-hash "$hash"
echo "\$ ck-basal run notes-summary --trigger '$trigger'"
$basal --home "$home" run notes-summary --trigger "$trigger"
echo "\$ ck-basal journal 1"
$basal --home "$home" journal 1
echo "== what the flow wrote =="
cat "$work/out/summary.json"
cat "$home/sinks/summaries.jsonl"
