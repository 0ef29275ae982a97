#!/usr/bin/env bash
# The codemode example end to end (docs/codemode.md), in a data home of its own: the
# example module and its catalogs, the TypeScript declarations an agent harness puts
# in front of a model, the agent's script run once, then its journal and the notes.
#   examples/codemode/run.sh            uses build/bin/ck-basal (make first)
#   BASAL=path/to/ck-basal examples/codemode/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
basal=${BASAL:-build/bin/ck-basal}
here=$PWD/examples/codemode
command -v python3 >/dev/null || { echo "run.sh: the example module needs python3" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
home="$work/home"
"$basal" --home "$home" setup >/dev/null
sed -e "s|@MODULE@|$here/notes-module.py|" -e "s|@NOTES@|$work/notes.jsonl|" \
  "$here/modules.json.in" >"$home/modules.json"
cp "$here/tools.json" "$home/tools.json"
chmod 600 "$home/modules.json" "$home/tools.json"
printf '{"id": 1, "text": "call the plumber", "tags": ["house"]}\n' >"$work/notes.jsonl"

echo "== ck-basal codemode describe --format typescript =="
"$basal" --home "$home" codemode describe --format typescript
echo
echo "== ck-basal codemode run examples/codemode/agent.js --input '{\"item\": \"milk\"}' =="
"$basal" --home "$home" codemode run "$here/agent.js" --input '{"item": "milk"}'
echo
echo "== ck-basal journal c1 =="
"$basal" --home "$home" journal c1
echo
echo "== the notes file =="
cat "$work/notes.jsonl"
