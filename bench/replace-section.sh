#!/usr/bin/env bash
# bench/replace-section.sh DOC NAME GENERATED: replaces the lines of DOC from the one
# starting "<!-- NAME:begin" to "<!-- NAME:end -->" (both included) with the file
# GENERATED, which carries its own markers. Exits 1 and changes nothing if DOC lacks
# either marker. Used by bench/run.sh and bench/contenders/run.sh.
set -euo pipefail
doc=$1 name=$2 gen=$3
grep -q "^<!-- $name:begin" "$doc" && grep -q "^<!-- $name:end -->" "$doc" || exit 1
awk -v gen="$gen" -v begin="^<!-- $name:begin" -v end="^<!-- $name:end -->" '
  $0 ~ begin { while ((getline line < gen) > 0) print line; skip = 1; next }
  $0 ~ end { skip = 0; next }
  !skip { print }
' "$doc" >"$doc.tmp"
mv "$doc.tmp" "$doc"
