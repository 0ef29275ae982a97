#!/usr/bin/env bash
# Issue 5, first version: basal against the alternatives an operator would pick, on the
# same three workloads, in one run (about 1 minute). Prints the table and writes
# docs/benchmarks-contenders.md (the whole page). Installs what it needs itself:
# quickjs-emscripten (pinned) into bench/contenders/node_modules, Debian's bubblewrap.
#
#   bench/contenders/run.sh            full run, rewrites docs/benchmarks-contenders.md
#   bench/contenders/run.sh --no-doc   prints only
#
# Needs `make bench-build` first (build/lib/libquickjs.a, build/bin/ck-basal,
# build/bench/basal_bench). Measurements, not tests: the exit status says only whether
# they ran.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
write_doc=1
[ "${1:-}" = "--no-doc" ] && write_doc=0

QE_VERSION=0.32.0            # quickjs-emscripten, pinned
N_INPROC=1000                # workload 1 and 2 executions for the in-process contenders
N_BASAL=1000                 # basal warm activations per ck-basal exec run
N_NODE=30                    # node -e executions (about 100 ms each)
N_BWRAP=200                  # bwrap qjs_run executions
N_COLD=30                    # cold starts of floor, quickjs-emscripten, basal
out=$here/out
mkdir -p "$out"
log() { echo "contenders: $*" >&2; }

# ---- what it needs -------------------------------------------------------------------
for f in build/lib/libquickjs.a build/bin/ck-basal build/bench/basal_bench; do
  [ -e "$f" ] || { echo "missing $f: run make bench-build first" >&2; exit 1; }
done
if ! command -v bwrap >/dev/null; then
  log "installing bubblewrap"; apt-get update -qq && apt-get install -y -qq bubblewrap >&2
fi
[ -x /usr/bin/time ] || { log "installing time"; apt-get update -qq && apt-get install -y -qq time >&2; }
if [ "$(node -p "try{require('$here/node_modules/quickjs-emscripten/package.json').version}catch(e){''}")" != "$QE_VERSION" ]; then
  log "installing quickjs-emscripten@$QE_VERSION"
  npm install --no-save --no-audit --no-fund --prefix "$here" "quickjs-emscripten@$QE_VERSION" >&2
fi
qcc() { cc -O2 -std=gnu11 -D_GNU_SOURCE -isystem build/quickjs -o "$out/$1" "$here/$1.c" build/lib/libquickjs.a -lm -lpthread -ldl; }
qcc floor; qcc qjs_run
cc -O2 -o "$out/spawn_time" "$here/spawn_time.c"

BODY1='let s = 0; for (let i = 0; i < 1000; i++) s += i; return s;'
echo "(function () { $BODY1 })()" >"$out/w1.js"                         # qjs_run
echo "$BODY1" >"$out/basal_w1.js"                                          # basal (async body)
echo "let s = 0; for (let i = 0; i < 1000; i++) s += i; let c = 0; for (let j = 0; j < 100; j++) c = await ops.call(\"test\", \"counter\"); return s;" >"$out/basal_w2.js"
home=$(mktemp -d); trap 'rm -rf "$home"' EXIT
basal() { build/bin/ck-basal --home "$home" exec "$@"; }
basal "$out/basal_w1.js" >/dev/null                                       # creates the home
BW=(bwrap --unshare-all --die-with-parent --ro-bind / / "$out/qjs_run" "$out/w1.js")
T() { /usr/bin/time -f %M -o "$out/$1.rss" "${@:2}"; }                   # max RSS, KiB
ST="$out/spawn_time"

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
t_start=$(date +%s)
# ---- measurements, all in this run ---------------------------------------------------
log "floor, round 1"
T floor_w1a "$out/floor" w1 $N_INPROC >"$out/floor_w1a"
T floor_w2 "$out/floor" w2 $N_INPROC >"$out/floor_w2"
log "quickjs-emscripten"
(cd "$here" && T qe_w1 node qe.mjs w1 $N_INPROC) >"$out/qe_w1"
(cd "$here" && T qe_w2 node qe.mjs w2 $N_INPROC) >"$out/qe_w2"
log "basal warm (ck-basal exec --repeat): 3 x ($N_BASAL and 1 runs) per workload"
: >"$out/bx_w1_n"; : >"$out/bx_w1_1"; : >"$out/bx_w2_n"; : >"$out/bx_w2_1"
for r in 1 2 3; do
  T bx_w1 $ST 1 499500 build/bin/ck-basal --home "$home" exec "$out/basal_w1.js" --repeat $N_BASAL >>"$out/bx_w1_n"
  $ST 1 499500 build/bin/ck-basal --home "$home" exec "$out/basal_w1.js" >>"$out/bx_w1_1"
  T bx_w2 $ST 1 499500 build/bin/ck-basal --home "$home" exec "$out/basal_w2.js" --repeat $N_BASAL >>"$out/bx_w2_n"
  $ST 1 499500 build/bin/ck-basal --home "$home" exec "$out/basal_w2.js" >>"$out/bx_w2_1"
done
log "floor, round 2"
"$out/floor" w1 $N_INPROC >"$out/floor_w1b"
log "node -e ($N_NODE) and bwrap qjs_run ($N_BWRAP)"
$ST $N_NODE 499500 node -e "console.log((function () { $BODY1 })())" >"$out/node_w1"
T node_w1 node -e "console.log((function () { $BODY1 })())" >/dev/null
$ST $N_BWRAP 499500 "${BW[@]}" >"$out/bwrap_w1"
T bwrap_w1 "${BW[@]}" >/dev/null
log "cold starts ($N_COLD each)"
$ST $N_COLD 499500 "$out/floor" once >"$out/floor_cold"
T floor_cold "$out/floor" once >/dev/null
(cd "$here" && $ST $N_COLD 499500 node qe.mjs once) >"$out/qe_cold"
(cd "$here" && T qe_cold node qe.mjs once) >/dev/null
$ST $N_COLD 499500 build/bin/ck-basal --home "$home" exec "$out/basal_w1.js" >"$out/basal_cold"
T basal_cold build/bin/ck-basal --home "$home" exec "$out/basal_w1.js" >/dev/null
log "basal_bench --scale 0.2 (basal's own per-activation median and p95)"
build/bench/basal_bench --scale 0.2 >"$out/basal_bench.txt" 2>/dev/null || log "basal_bench failed: its rows are left out"
log "floor, round 3"
"$out/floor" w1 $N_INPROC >"$out/floor_w1c"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
t_end=$(date +%s)
cat "$out/floor_w1a" "$out/floor_w1b" "$out/floor_w1c" >"$out/floor_w1"

# ---- statistics ----------------------------------------------------------------------
# stats FILE -> "n median p95 min max sum" (nearest rank), microseconds
stats() { sort -n "$1" | awk '{ v[NR] = $1; s += $1 } END {
  m = int((NR + 1) / 2); p = int(NR * 0.95 + 0.999999); if (p < 1) p = 1
  printf "%d %.3f %.3f %.3f %.3f %.3f\n", NR, v[m], v[p], v[1], v[NR], s }'; }
fmt() { awk -v u="$1" 'BEGIN { if (u == "") print "—"; else if (u >= 1000) printf "%.2f ms", u / 1000; else if (u >= 10) printf "%.1f µs", u; else printf "%.2f µs", u }'; }
mib() { [ -s "$out/$1.rss" ] && awk '{ printf "%.1f MiB", $1 / 1024 }' "$out/$1.rss" || echo "—"; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
# basal_bench row "NAME" -> its median, p95 and min in µs (the row's units converted)
bb() { awk -F' \\| ' -v name="$1" 'index($1, name) {
  for (i = 3; i <= 5; i++) { x = $i; f = (x ~ /ms/) ? 1000 : 1; gsub(/[^0-9.-]/, "", x); printf "%s%.3f", (i > 3 ? " " : ""), x * f }
  printf " %s\n", $2; exit }' "$out/basal_bench.txt" 2>/dev/null; }

read -r fn fmed fp95 fmin fmax fsum < <(stats "$out/floor_w1")
read -r f2n f2med f2p95 f2min f2max f2sum < <(stats "$out/floor_w2")
floor_call=$(awk -v a="$f2med" -v b="$fmed" 'BEGIN { printf "%.3f", (a - b) / 100 }')

rows=$(mktemp); trap 'rm -rf "$home" "$rows"' EXIT
# row LABEL WORKLOAD N MED P95 MIN MAX THROUGHPUT RSS NOTE ; ratio vs the floor median of the workload
row() {
  local ref=$fmed; [ "$2" = 2 ] && ref=$f2med; [ "$2" = 3 ] && ref=$fcold
  local ratio="—"; [ -n "$4" ] && ratio=$(div "$4" "$ref")
  local tp="—"; [ -n "$8" ] && tp=$8
  local spread="—"; [ -n "$6" ] && spread="min $(fmt "$6")"; [ -n "$6" ] && [ -n "$7" ] && spread="$(fmt "$6") – $(fmt "$7")"
  [ -n "${11:-}" ] && ratio=${11}
  echo "| $1 | $2 | $3 | $(fmt "$4") | $(fmt "$5") | $spread | $tp | $ratio | $9 | ${10} |" >>"$rows"
}
tput() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.0f/s", n * 1e6 / s }'; }
srow() { # srow LABEL WORKLOAD FILE RSSNAME NOTE
  local n med p95 mn mx sum; read -r n med p95 mn mx sum < <(stats "$out/$3")
  row "$1" "$2" "$n" "$med" "$p95" "$mn" "$mx" "$(tput "$n" "$sum")" "$(mib "$4")" "$5"; }
read -r _ fcold _ _ _ _ < <(stats "$out/floor_cold")

# basal warm via ck-basal exec: per activation = (median T(N) - median T(1)) / (N - 1)
bmean() { awk -v a="$(stats "$out/$1" | cut -d' ' -f2)" -v b="$(stats "$out/$2" | cut -d' ' -f2)" -v n=$N_BASAL 'BEGIN { printf "%.3f", (a - b) / (n - 1) }'; }
bx1=$(bmean bx_w1_n bx_w1_1); bx2=$(bmean bx_w2_n bx_w2_1)

srow "floor: in-process QuickJS 2021, fresh runtime + context per execution (3 rounds)" 1 floor_w1 floor_w1a "max RSS of the process over the 1000 executions of round 1"
read -r m p mn n_ < <(bb "warm pooled activation, worker ready") || true
[ -n "${m:-}" ] && row "basal warm activation, worker ready (basal_bench --scale 0.2, \`pool_run\`)" 1 "$n_" "$m" "$p" "$mn" "" "" "—" "parent's pool directly, test host; no CLI"
read -r m p mn n_ < <(bb "warm pooled activation, back to back") || true
[ -n "${m:-}" ] && row "basal warm activation, back to back (basal_bench --scale 0.2)" 1 "$n_" "$m" "$p" "$mn" "" "" "—" ""
row "basal warm activation, back to back (\`ck-basal exec --repeat $N_BASAL\`)" 1 "3 x $N_BASAL" "$bx1" "" "" "" "$(awk -v u="$bx1" 'BEGIN { printf "%.0f/s", 1e6 / u }')" "$(mib bx_w1)" "mean, not median: (T($N_BASAL runs) - T(1 run)) / $((N_BASAL - 1)), medians of 3; RSS is the larger of parent and worker"
srow "quickjs-emscripten $QE_VERSION in Node $(node --version), fresh runtime + context per execution" 1 qe_w1 qe_w1 "RSS of the Node process over the 1000 executions"
srow "\`node -e\` per execution" 1 node_w1 node_w1 "only $N_NODE executions (about 0.1 s each)"
srow "\`qjs_run\` under \`bwrap --unshare-all --die-with-parent --ro-bind / /\` per execution" 1 bwrap_w1 bwrap_w1 "only $N_BWRAP executions; qjs_run, not upstream qjs (see the text)"

srow "floor, native host function \`inc()\`" 2 floor_w2 floor_w2 "per host call: $(fmt "$floor_call") ((median w2 - median w1) / 100)"
row "basal warm, back to back, 100 × \`await ops.call(\"test\", \"counter\")\` (\`ck-basal exec --repeat $N_BASAL\`)" 2 "3 x $N_BASAL" "$bx2" "" "" "" "$(awk -v u="$bx2" 'BEGIN { printf "%.0f/s", 1e6 / u }')" "$(mib bx_w2)" "mean; per host call: $(fmt "$(awk -v a="$bx2" -v b="$bx1" 'BEGIN { print (a - b) / 100 }')") (async, across the process boundary)"
read -r m p mn n_ < <(bb "async host call round trip, per call (N = 200)") || true
[ -n "${m:-}" ] && row "basal per host call, \`ops.call(\"test\", \"echo\", i)\` (basal_bench --scale 0.2; one call, not a whole execution)" 2 "$n_" "$m" "$p" "$mn" "" "" "—" "one call, compare with the floor's per call above" "$(div "$m" "$floor_call") floor's per call"
read -r _ q2 _ _ _ _ < <(stats "$out/qe_w2"); read -r _ q1 _ _ _ _ < <(stats "$out/qe_w1")
srow "quickjs-emscripten, host function \`inc()\` (\`vm.newFunction\`)" 2 qe_w2 qe_w2 "per host call: $(fmt "$(awk -v a="$q2" -v b="$q1" 'BEGIN { print (a - b) / 100 }')")"
row "\`node -e\` per execution" 2 "—" "" "" "" "" "" "—" "not expressible the same way: no host to call"
row "\`qjs_run\` under \`bwrap\` per execution" 2 "—" "" "" "" "" "" "—" "not expressible the same way: no host to call"

srow "floor: process start to first result (\`floor once\`)" 3 floor_cold floor_cold "fork + exec + runtime + eval + print"
srow "basal cold: \`ck-basal exec\` of one script (CLI start, pool, worker spawn to Welcome, activation, result)" 3 basal_cold basal_cold "RSS is the larger of parent and worker"
read -r m p mn n_ < <(bb "spawn to Welcome (") || true
[ -n "${m:-}" ] && row "basal: spawn to Welcome only (basal_bench --scale 0.2)" 3 "$n_" "$m" "$p" "$mn" "" "" "—" "part of the row above"
srow "quickjs-emscripten: \`node qe.mjs once\` (Node start, module + WebAssembly load, first result)" 3 qe_cold qe_cold ""
srow "\`node -e\` (the workload 1 samples: every execution is cold)" 3 node_w1 node_w1 ""
srow "\`qjs_run\` under \`bwrap\` (the workload 1 samples: every execution is cold)" 3 bwrap_w1 bwrap_w1 ""

# noise: the floor measured three times in the run, at the start, in the middle, at the end
noise=$(for r in a b c; do stats "$out/floor_w1$r" | cut -d' ' -f2; done | sort -n | awk '{ v[NR] = $1 } END {
  printf "floor medians of the 3 rounds (start, middle, end, sorted): %.1f, %.1f, %.1f µs: spread %.0f%% of the lowest", v[1], v[2], v[3], (v[3] - v[1]) * 100 / v[1] }')
noise2="floor p95 / median: $(div "$fp95" "$fmed"); floor max / median: $(div "$fmax" "$fmed")"

table=$(mktemp); trap 'rm -rf "$home" "$rows" "$table"' EXIT
{
  echo "Reproduce with \`bench/contenders/run.sh\` (after \`make bench-build\`)."
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); run took $((t_end - t_start)) s"
  echo "- machine: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) CPUs; kernel $(uname -r); Node $(node --version); $(bwrap --version)"
  echo "- basal: $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$([ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && echo ' + uncommitted changes'); release build"
  echo "- load average (1, 5, 15 min): $load_before before the run, $load_after after"
  echo "- noise: $noise; $noise2"
  echo
  echo "| contender | workload | n | median | p95 | min – max | throughput (one stream) | ratio to floor (medians) | peak memory (max RSS) | note |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
  cat "$rows"
} >"$table"
cat "$table"

if [ $write_doc = 1 ]; then
  doc=docs/benchmarks-contenders.md
  {
    cat "$here/doc-head.md"
    echo
    echo "<!-- contenders:begin (generated by bench/contenders/run.sh) -->"
    echo
    cat "$table"
    echo
    echo "<!-- contenders:end -->"
  } >"$doc"
  log "wrote $doc"
fi
