#!/usr/bin/env bash
# `ck-basal codemode describe --format typescript` compiled by the real TypeScript
# compiler (docs/codemode.md, "Type-checking a script"), and the example of
# examples/codemode run end to end.
#
# tsc comes from the npm registry at the version and integrity pinned in
# tests/tools/tsc/package-lock.json, installed with `npm ci` into build/tsc (never
# committed). Without npm or the registry this test fails; it never skips.
#
#   1. the example agent script (examples/codemode/agent.js) type-checks against the
#      example catalog's declarations;
#   2. calls the schemas refuse (a value outside an enum, a wrong type, a missing
#      required property, an unknown property, a tool not in the catalog) are compile
#      errors, one per call [guard: the declarations are typed, not any];
#   3. a catalog using every schema keyword compiles, and a script tsc accepted runs:
#      `codemode run` succeeds with it;
#   4. optional properties named like members every object inherits (constructor,
#      toString, ...): a call leaving them out compiles, a wrong type does not, and the
#      script runs [guard: inherited member names];
#   5. examples/codemode/run.sh runs end to end: the note is added.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
. tests/lib/harness.sh
root=$PWD
basal=$root/build/test/bin/ck-basal
module=$root/build/test/tools/test_module
tscdir=$root/build/tsc
tsc=$tscdir/node_modules/.bin/tsc

if [ ! -x "$basal" ] || [ ! -x "$module" ]; then
  not_ok "typescript: test binaries" "$basal or $module missing (make test-build)"
  exit 1
fi

# ---- the compiler, pinned -----------------------------------------------------------
want=$(sed -n 's/.*"typescript": "\([0-9.]*\)".*/\1/p' tests/tools/tsc/package.json)
have=$(sed -n 's/^  "version": "\([0-9.]*\)".*/\1/p' "$tscdir/node_modules/typescript/package.json" 2>/dev/null)
if [ "$have" != "$want" ] || ! cmp -s tests/tools/tsc/package-lock.json "$tscdir/package-lock.json"; then
  mkdir -p "$tscdir"
  cp tests/tools/tsc/package.json tests/tools/tsc/package-lock.json "$tscdir/"
  if ! command -v npm >/dev/null 2>&1; then
    not_ok "typescript: tsc $want from the pinned lock" "npm is not installed (scripts/install-deps.sh)"
    exit 1
  fi
  if ! out=$(cd "$tscdir" && timeout 300 npm ci --ignore-scripts --no-audit --no-fund 2>&1); then
    not_ok "typescript: tsc $want from the pinned lock" "npm ci failed: $out"
    exit 1
  fi
fi
version=$("$tsc" --version 2>&1)
if [ "$version" = "Version $want" ]; then
  ok "typescript: tsc $want installed from the pinned lock (build/tsc)"
else
  not_ok "typescript: tsc $want installed from the pinned lock (build/tsc)" "$version"
  exit 1
fi

scratch_dir tsc
work=$scratch

# A data home with modules.json and tools.json; prints nothing.
make_home() { # home modules-text tools-file
  "$basal" --home "$1" setup >/dev/null || return 1
  printf '%s' "$2" >"$1/modules.json" && cp "$3" "$1/tools.json" &&
    chmod 600 "$1/modules.json" "$1/tools.json"
}

# tsc over the declarations and a script wrapped as the body of an async function.
typecheck() { # d.ts script.js out.ts
  { echo 'async function main(): Promise<unknown> {'; cat "$2"; echo '}'; } >"$3"
  "$tsc" --noEmit --strict --noImplicitAny false --useUnknownInCatchVariables false \
    --lib es2022 --target es2022 "$1" "$3" 2>&1
}

# A data home as make_home makes it, and its TypeScript declarations in out.d.ts.
declarations() { # home modules-text tools-file out.d.ts
  make_home "$1" "$2" "$3" && "$basal" --home "$1" codemode describe --format typescript >"$4"
}

# ok NAME if tsc accepts the script against the declarations, else not_ok with its errors.
expect_compiles() { # name d.ts script.js out.ts
  local out
  if out=$(typecheck "$2" "$3" "$4"); then
    ok "$1"
  else
    not_ok "$1" "$out"
  fi
}

# ok NAME if `codemode run` of the script in home succeeds and prints a result matching
# the pattern (grep's), else not_ok with what it printed.
expect_run_result() { # name home script.js pattern
  local out
  out=$("$basal" --home "$2" --json codemode run "$3" 2>&1)
  if printf '%s' "$out" | grep -q '"state":"succeeded"' && printf '%s' "$out" | grep -q "$4"; then
    ok "$1"
  else
    not_ok "$1" "$out"
  fi
}

# ---- 1. the example ----------------------------------------------------------------------
ex=$root/examples/codemode
home=$work/example
modules=$(sed -e "s|@MODULE@|$ex/notes-module.py|" -e "s|@NOTES@|$work/notes.jsonl|" "$ex/modules.json.in")
if declarations "$home" "$modules" "$ex/tools.json" "$work/example.d.ts"; then
  expect_compiles "typescript: the example agent script type-checks against the example catalog's declarations" \
    "$work/example.d.ts" "$ex/agent.js" "$work/agent.ts"
else
  not_ok "typescript: the example catalog's declarations" "describe failed"
fi

# ---- 2. what the schemas refuse does not compile ------------------------------------------
cat >"$work/wrong.js" <<'EOF'
await tools.call("add_note", { text: "x", tags: ["garden"] });
await tools.call("search_notes", { text: 5 });
await tools.call("search_notes", { limit: 3 });
await tools.call("add_note", { text: "x", colour: "red" });
await tools.call("delete_everything", {});
return null;
EOF
out=$(typecheck "$work/example.d.ts" "$work/wrong.js" "$work/wrong.ts")
errors=$(printf '%s\n' "$out" | grep -c 'wrong\.ts([0-9]*,[0-9]*): error TS')
lines=$(printf '%s\n' "$out" | sed -n 's/^.*wrong\.ts(\([0-9]*\),[0-9]*): error TS.*/\1/p' | tr '\n' ' ')
if [ "$errors" -eq 5 ] && [ "$lines" = "2 3 4 5 6 " ]; then
  ok "typescript: each call its schema refuses is a compile error (enum, type, required, additionalProperties, unknown tool) [guard: typed declarations]"
else
  not_ok "typescript: each call its schema refuses is a compile error (enum, type, required, additionalProperties, unknown tool) [guard: typed declarations]" "$errors errors at lines $lines: $out"
fi

# ---- 3. every keyword compiles; the checked script runs -------------------------------------
cat >"$work/rich-tools.json" <<'EOF'
{"tools": {
  "file.ticket": {
    "description": "File a ticket.\nA second line, with */ in it.",
    "module": "t", "op": "echo", "class": "query",
    "input": {"type": "object", "required": ["title", "items"], "additionalProperties": false,
      "properties": {
        "title": {"type": "string", "minLength": 1, "maxLength": 80, "title": "Title"},
        "priority": {"type": "integer", "minimum": 1, "maximum": 3},
        "ratio": {"type": "number"},
        "state": {"enum": ["open", "closed", null, 3]},
        "note": {"type": ["string", "null"]},
        "odd key": {"type": "boolean"},
        "meta": {"type": "object", "additionalProperties": {"type": "number"}},
        "loose": {},
        "items": {"type": "array", "minItems": 1, "maxItems": 3,
          "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}
      }}},
  "ping": {"description": "Ping.", "module": "t", "op": "echo", "class": "query",
    "input": {"type": "null"}},
  "store": {"description": "Store anything.", "module": "t", "op": "add", "class": "mutation",
    "input": {"type": "array", "items": {"type": ["object", "string"]}}}
}}
EOF
home=$work/rich
modules="{\"modules\": {\"t\": {\"program\": \"$module\", \"args\": [\"--log\", \"$work/rich.log\"], \"ops\": {\"echo\": {\"kind\": \"query\"}, \"add\": {\"kind\": \"mutate\"}}}}}"
cat >"$work/rich.js" <<'EOF'
const ticket = await tools.call("file.ticket", {
  title: "printer", priority: 2, state: null, note: null, "odd key": true,
  meta: { pages: 3 }, loose: [1, "two"], items: [{ name: "paper" }],
});
const pong = await tools.call("ping", null);
let refused = "";
try { await tools.call("store", ["a", { b: 1 }]); } catch (e) { refused = e.data.code + ": " + e.data.message; }
return { title: ticket.title, pong, refused };
EOF
if declarations "$home" "$modules" "$work/rich-tools.json" "$work/rich.d.ts"; then
  expect_compiles "typescript: a catalog using every schema keyword compiles with a script using it" \
    "$work/rich.d.ts" "$work/rich.js" "$work/rich.ts"
  # The add op of test_module wants {a, b}: the input passes the tool's schema, so the
  # module runs and answers its own error.
  expect_run_result "typescript: the script tsc accepted runs with codemode run" "$home" "$work/rich.js" \
    '"result":{"title":"printer","pong":null,"refused":"invalid_arguments: add takes {a, b}"}'
else
  not_ok "typescript: the rich catalog's declarations" "describe failed"
fi

# ---- 4. property names every object inherits ----------------------------------------------
# An optional "constructor" or "toString" must not make a call that leaves it out fail
# (tsc compares the missing property with Object's member); a wrong type still fails.
cat >"$work/inherited-tools.json" <<'EOF'
{"tools": {
  "label": {"description": "Label a thing.", "module": "t", "op": "echo", "class": "query",
    "input": {"type": "object", "required": ["title"], "additionalProperties": false,
      "properties": {"title": {"type": "string"}, "constructor": {"type": "string"},
        "toString": {"type": "string"}, "valueOf": {"type": "integer"},
        "nested": {"type": "object", "properties": {"hasOwnProperty": {"type": "boolean"}}}}}}
}}
EOF
home=$work/inherited
modules="{\"modules\": {\"t\": {\"program\": \"$module\", \"args\": [\"--log\", \"$work/inherited.log\"], \"ops\": {\"echo\": {\"kind\": \"query\"}}}}}"
cat >"$work/inherited.js" <<'EOF'
const a = await tools.call("label", { title: "a" });
const b = await tools.call("label", { title: "b", constructor: "c", toString: "d", valueOf: 2 });
const c = await tools.call("label", { title: "c", nested: {} });
return [a.title, b.constructor, b.toString, c.nested];
EOF
cat >"$work/inherited-wrong.js" <<'EOF'
await tools.call("label", { title: "a", toString: 5 });
return null;
EOF
if declarations "$home" "$modules" "$work/inherited-tools.json" "$work/inherited.d.ts"; then
  expect_compiles "typescript: calls leaving out optional constructor, toString, valueOf, hasOwnProperty compile [guard: inherited member names]" \
    "$work/inherited.d.ts" "$work/inherited.js" "$work/inherited.ts"
  out=$(typecheck "$work/inherited.d.ts" "$work/inherited-wrong.js" "$work/inherited-wrong.ts")
  if printf '%s\n' "$out" | grep -q 'inherited-wrong\.ts(2,[0-9]*): error TS'; then
    ok "typescript: a number for the string toString is still a compile error"
  else
    not_ok "typescript: a number for the string toString is still a compile error" "$out"
  fi
  expect_run_result "typescript: the script tsc accepted runs with codemode run (the schema accepts it too)" \
    "$home" "$work/inherited.js" '"result":\["a","c","d",{}\]'
else
  not_ok "typescript: the inherited-names catalog's declarations" "describe failed"
fi

# ---- 6. codemode tsconfig and codemode check ------------------------------------------------
# With the one tsconfig basal ships, default tsc --strict accepts a correct script that
# uses console and e.data in a catch (the DOM's console and unknown catch variables
# rejected it), with the pinned tsc and with Debian's node-typescript (/usr/bin/tsc);
# `codemode check` runs that check and names the script's own lines; without tsc it
# says how to install it [guard codemode-check].
cat >"$work/good.js" <<'EOF'
console.log("searching");
let found = [];
try {
  found = await tools.call("search_notes", { text: "milk", limit: 3 });
} catch (e) {
  console.log("search failed:", e.data.code);
}
await tools.call("add_note", { text: "buy milk", tags: ["shopping"] });
return found;
EOF
example_home=$work/example # section 1's, with the example catalog
debian_tsc=/usr/bin/tsc
[ -x "$debian_tsc" ] || not_ok "typescript: Debian's tsc" "$debian_tsc is missing (apt-get install node-typescript; scripts/install-deps.sh --test does)"
by_hand=$work/by-hand
mkdir -p "$by_hand"
cp "$work/example.d.ts" "$by_hand/tools.d.ts"
{ echo 'async function main(): Promise<unknown> {'; cat "$work/good.js"; echo '}'; } >"$by_hand/script.ts"
"$basal" codemode tsconfig >"$by_hand/tsconfig.json"
for compiler in "$tsc" "$debian_tsc"; do
  if out=$(cd "$by_hand" && "$compiler" -p . 2>&1); then
    ok "typescript: $("$compiler" --version) -p with codemode tsconfig accepts a correct script using console and e.data"
  else
    not_ok "typescript: $compiler -p with codemode tsconfig accepts a correct script using console and e.data" "$out"
  fi
  out=$("$basal" --home "$example_home" codemode check "$work/good.js" --tsc "$compiler" 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ] && [ "$out" = "no type errors: every tools.call matches its tool's input type" ]; then
    ok "typescript: codemode check --tsc $compiler passes the correct script [guard codemode-check]"
  else
    not_ok "typescript: codemode check --tsc $compiler passes the correct script [guard codemode-check]" "exit $rc: $out"
  fi
  out=$("$basal" --home "$example_home" codemode check "$work/wrong.js" --tsc "$compiler" 2>&1)
  rc=$?
  lines=$(printf '%s\n' "$out" | sed -n "s|^$work/wrong\.js:\([0-9]*\):[0-9]*: error TS.*|\1|p" | tr '\n' ' ')
  if [ "$rc" -eq 1 ] && [ "$lines" = "1 2 3 4 5 " ]; then
    ok "typescript: codemode check --tsc $compiler fails the wrong script, one error on each of its lines 1-5, named by the script's own file and lines [guard codemode-check]"
  else
    not_ok "typescript: codemode check --tsc $compiler fails the wrong script at its own lines [guard codemode-check]" "exit $rc, lines '$lines': $out"
  fi
done
# tsc found in PATH, as a user runs it.
out=$(PATH=/usr/bin:/bin "$basal" --home "$example_home" codemode check "$work/good.js" 2>&1)
if [ $? -eq 0 ]; then
  ok "typescript: codemode check finds Debian's tsc in PATH"
else
  not_ok "typescript: codemode check finds Debian's tsc in PATH" "$out"
fi
runs_before=$("$basal" --home "$example_home" --json runs)
out=$(PATH=/nonexistent "$basal" --home "$example_home" codemode check "$work/good.js" 2>&1)
rc=$?
if [ "$rc" -eq 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] &&
  printf '%s' "$out" | grep -q 'not found: install the TypeScript compiler (apt-get install node-typescript'; then
  ok "typescript: without tsc, codemode check says how to install it (exit 1, one line)"
else
  not_ok "typescript: without tsc, codemode check says how to install it" "exit $rc: $out"
fi
if [ "$("$basal" --home "$example_home" --json runs)" = "$runs_before" ]; then
  ok "typescript: codemode check records no run"
else
  not_ok "typescript: codemode check records no run" "the runs changed"
fi

# ---- 5. the example end to end --------------------------------------------------------------
if out=$(BASAL=$basal "$ex/run.sh" 2>&1) &&
  printf '%s\n' "$out" | grep -q '^codemode run c1: succeeded$' &&
  printf '%s\n' "$out" | grep -q '"text": "buy milk"'; then
  ok "typescript: examples/codemode/run.sh runs end to end (the agent adds its note)"
else
  not_ok "typescript: examples/codemode/run.sh runs end to end (the agent adds its note)" "$out"
fi

exit $((harness_failed > 0))
