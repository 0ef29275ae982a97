#!/usr/bin/env bash
# basal against the alternatives an operator would pick, on the same three
# workloads, in one run (about 2 minutes), one stream and two streams at once. Prints the table and writes
# docs/benchmarks-contenders.md (the whole page). Installs what it needs itself:
# quickjs-emscripten (pinned) into bench/contenders/node_modules, Debian's bubblewrap.
#
#   bench/contenders/run.sh            full run, rewrites docs/benchmarks-contenders.md
#   bench/contenders/run.sh --no-doc   prints only
#
# Needs `make bench-build` first (build/lib/libquickjs.a, build/bin/ck-basal,
# build/bench/basal_bench, build/bench/contender_flows). Measurements, not tests: the
# exit status says only whether
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
N_FLOW1=1000                 # basal flow runs of workload 1 (about 1.5 ms each with fsync)
N_FLOW2=100                  # basal flow runs of workload 2 (about 35 ms each with fsync)
N_NODE=30                    # node -e executions (about 100 ms each)
N_BWRAP=200                  # bwrap qjs executions
N_COLD=30                    # cold starts of floor, quickjs-emscripten, basal
N_ROUNDS=${N_ROUNDS:-60}     # rounds of the interleaved cold starts (issue 32): bwrap qjs, exec, codemode run, run
out=$here/out
mkdir -p "$out"
log() { echo "contenders: $*" >&2; }

# ---- what it needs -------------------------------------------------------------------
for f in build/lib/libquickjs.a build/bin/ck-basal build/bench/basal_bench build/bench/contender_flows; do
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
qcc floor
cc -O2 -o "$out/spawn_time" "$here/spawn_time.c"
# The upstream qjs: build/quickjs/qjs.c + quickjs-libc.c with the defines the Makefile's
# QFLAGS give libquickjs.a (checked here), linked with that library and our stubs for
# the REPL and qjscalc bytecode (bench/contenders/qjs_stubs.c: never used here).
QDEF=(-std=gnu11 -O2 -g -fwrapv -D_GNU_SOURCE '-DCONFIG_VERSION="2021-03-27"' -DCONFIG_BIGNUM -fPIE -fstack-protector-strong -w)
qflags=$(awk '/^QFLAGS/ { f = 1 } f { print; if (!/\\$/) exit }' Makefile)
for d in CONFIG_BIGNUM 'CONFIG_VERSION='"'"'"2021-03-27"'"'" -fwrapv; do
  case $qflags in *"$d"*) ;; *) echo "Makefile QFLAGS no longer has $d: update QDEF in $0" >&2; exit 1 ;; esac
done
if [ ! -x "$out/qjs" ] || [ "$out/qjs" -ot build/lib/libquickjs.a ] || [ "$out/qjs" -ot "$here/qjs_stubs.c" ]; then
  log "building upstream qjs (build/quickjs/qjs.c, quickjs-libc.c)"
  cc "${QDEF[@]}" -c build/quickjs/qjs.c -o "$out/qjs.o"
  cc "${QDEF[@]}" -c build/quickjs/quickjs-libc.c -o "$out/quickjs-libc.o"
  cc -O2 -c "$here/qjs_stubs.c" -o "$out/qjs_stubs.o"
  cc -o "$out/qjs" "$out/qjs.o" "$out/quickjs-libc.o" "$out/qjs_stubs.o" build/lib/libquickjs.a -lm -ldl -lpthread
fi

BODY1='let s = 0; for (let i = 0; i < 1000; i++) s += i; return s;'
echo "console.log((function () { $BODY1 })())" >"$out/w1.js"              # qjs
echo "$BODY1" >"$out/basal_w1.js"                                          # basal (async body)
echo "let s = 0; for (let i = 0; i < 1000; i++) s += i; let c = 0; for (let j = 0; j < 100; j++) c = await ops.call(\"test\", \"counter\"); return s;" >"$out/basal_w2.js"
# Two streams of basal use a data home each ("$home" and "${home}b"), so that they do
# not queue on one store's write lock.
home=$(mktemp -d); fhome=$(mktemp -d)
mkdir -m 700 "${home}b" "${fhome}b"
tmpfiles=("$home" "$fhome" "${home}b" "${fhome}b"); trap 'rm -rf "${tmpfiles[@]}"' EXIT
for h in "$home" "${home}b"; do
  build/bin/ck-basal --home "$h" exec "$out/basal_w1.js" >/dev/null      # creates the home
done
for h in "$fhome" "${fhome}b"; do
  build/bench/contender_flows setup "$h"                                   # flows w1, w2 approved
done
# codemode run: a data home with a one-tool catalog (the script calls no tool, so no
# module program starts: /bin/true is never run), one per stream
chome=$(mktemp -d); tmpfiles+=("$chome" "${chome}b")
for h in "$chome" "${chome}b"; do
  build/bin/ck-basal --home "$h" setup >/dev/null
  echo '{"modules": {"notes": {"program": "/bin/true", "ops": {"echo": {"kind": "query"}}}}}' >"$h/modules.json"
  echo '{"tools": {"echo_note": {"description": "Echo a note back.", "module": "notes", "op": "echo", "class": "query", "input": {"type": "object", "properties": {"text": {"type": "string"}}}}}}' >"$h/tools.json"
done
BW=(bwrap --unshare-all --die-with-parent --ro-bind / / "$out/qjs" "$out/w1.js")
T() { /usr/bin/time -f %M -o "$out/$1.rss" "${@:2}"; }                   # max RSS, KiB
ST="$out/spawn_time"
CF=build/bench/contender_flows
# pair NAME DELAY_MS CMD...: two copies of CMD at once, each told by BENCH_START_AT to
# start its measured loop at the same moment (now + DELAY_MS); their samples go to
# NAME.p1 and NAME.p2, the start to NAME.start. The commands print "# end T". In CMD,
# {S} becomes "" for the first copy and "b" for the second (basal: the second data
# home; flows: w1b, the twin of w1, as runs of one flow execute one at a time).
pair() {
  local name=$1 delay=$2; shift 2
  local t0; t0=$(( $("$ST" --now) + delay * 1000 ))
  echo "$t0" >"$out/$name.start"
  BENCH_START_AT=$t0 "${@//\{S\}/}" >"$out/$name.p1" & local p1=$!
  BENCH_START_AT=$t0 "${@//\{S\}/b}" >"$out/$name.p2" & local p2=$!
  wait "$p1"; wait "$p2"
}

# busy CPU time of the whole machine so far, in seconds (USER_HZ ticks of /proc/stat)
busy() { awk -v hz="$(getconf CLK_TCK)" '/^cpu / { printf "%.2f", ($2 + $3 + $4 + $7 + $8 + $9) / hz; exit }' /proc/stat; }
# CPU time of this script and every process it waited for (bash's times), in seconds
# (times itself runs in this shell: in a pipeline's subshell it would count nothing)
# into $own_v; call it as `own`, never in $(...), which is a subshell too
own() { times >"$out/times"; own_v=$(awk '{ for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } } END { printf "%.2f", t }' "$out/times"); }
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
t_start=$(date +%s); busy_start=$(busy); own; own_start=$own_v
# ---- measurements, all in this run ---------------------------------------------------
log "floor, round 1"
T floor_w1a "$out/floor" w1 $N_INPROC >"$out/floor_w1a"
T floor_w2 "$out/floor" w2 $N_INPROC >"$out/floor_w2"
log "quickjs-emscripten"
(cd "$here" && T qe_w1 node qe.mjs w1 $N_INPROC) >"$out/qe_w1"
(cd "$here" && T qe_w2 node qe.mjs w2 $N_INPROC) >"$out/qe_w2"
log "basal flows through the run driver: journal on, then store fsync off"
T fl_w1 "$CF" run "$fhome" w1 $N_FLOW1 >"$out/fl_w1"
T fl_w2 "$CF" run "$fhome" w2 $N_FLOW2 >"$out/fl_w2"
T fo_w1 "$CF" run "$fhome" w1 $N_FLOW1 --fsync-off >"$out/fo_w1"
T fo_w2 "$CF" run "$fhome" w2 $N_FLOW2 --fsync-off >"$out/fo_w2"
log "basal warm (ck-basal exec --repeat): 3 x ($N_BASAL and 1 runs) per workload"
: >"$out/bx_w1_n"; : >"$out/bx_w1_1"; : >"$out/bx_w2_n"; : >"$out/bx_w2_1"
for _ in 1 2 3; do
  T bx_w1 "$ST" 1 499500 build/bin/ck-basal --home "$home" exec "$out/basal_w1.js" --repeat $N_BASAL >>"$out/bx_w1_n"
  "$ST" 1 499500 build/bin/ck-basal --home "$home" exec "$out/basal_w1.js" >>"$out/bx_w1_1"
  T bx_w2 "$ST" 1 499500 build/bin/ck-basal --home "$home" exec "$out/basal_w2.js" --repeat $N_BASAL >>"$out/bx_w2_n"
  "$ST" 1 499500 build/bin/ck-basal --home "$home" exec "$out/basal_w2.js" >>"$out/bx_w2_1"
done
log "floor, round 2"
"$out/floor" w1 $N_INPROC >"$out/floor_w1b"
log "node -e ($N_NODE) and bwrap qjs ($N_BWRAP)"
$ST $N_NODE 499500 node -e "console.log((function () { $BODY1 })())" >"$out/node_w1"
T node_w1 node -e "console.log((function () { $BODY1 })())" >/dev/null
$ST $N_BWRAP 499500 "${BW[@]}" >"$out/bwrap_w1"
T bwrap_w1 "${BW[@]}" >/dev/null
log "cold starts ($N_COLD each)"
$ST $N_COLD 499500 "$out/floor" once >"$out/floor_cold"
T floor_cold "$out/floor" once >/dev/null
(cd "$here" && "$ST" $N_COLD 499500 node qe.mjs once) >"$out/qe_cold"
(cd "$here" && T qe_cold node qe.mjs once) >/dev/null
$ST $N_COLD 499500 build/bin/ck-basal --home "$home" exec "$out/basal_w1.js" >"$out/basal_cold"
T basal_cold build/bin/ck-basal --home "$home" exec "$out/basal_w1.js" >/dev/null
$ST $N_COLD "result: 499500" build/bin/ck-basal --home "$fhome" run w1 >"$out/basal_runcold"
T basal_runcold build/bin/ck-basal --home "$fhome" run w1 >/dev/null
log "cold starts side by side ($N_ROUNDS rounds of bwrap qjs, ck-basal exec, codemode run, run)"
# Each round runs the four once, one after the other, so that a change of the machine's
# load falls on all of them alike. Wall: spawn_time's sample; CPU: this shell's reaped
# children's user + system time (bash's times, a builtin: no process of its own) before
# and after, which counts every process of the command that was waited for (the
# worker, bwrap's sandboxed child) and spawn_time (a fork and a wait).
COLD_KINDS=(bwrap exec cm run)
cpu_ms() { # bash's times into $cpu_v, the children's user + system in ms (builtins only)
  times >"$out/times"; local u s m r; { read -r _; read -r u s; } <"$out/times"
  cpu_v=0; for r in "$u" "$s"; do m=${r%%m*}; r=${r#*m}; r=${r%s}
    cpu_v=$(( cpu_v + m * 60000 + 10#${r%.*} * 1000 + 10#${r#*.} )); done; }
for k in "${COLD_KINDS[@]}"; do : >"$out/round_$k"; : >"$out/round_$k.cpu"; done
for ((r = 0; r < N_ROUNDS; r++)); do
  for k in "${COLD_KINDS[@]}"; do
    case $k in
      bwrap) cmd=("$ST" 1 499500 "${BW[@]}") ;;
      exec) cmd=("$ST" 1 499500 build/bin/ck-basal --home "$home" exec "$out/basal_w1.js") ;;
      cm) cmd=("$ST" 1 "result: 499500" build/bin/ck-basal --home "$chome" codemode run "$out/basal_w1.js") ;;
      run) cmd=("$ST" 1 "result: 499500" build/bin/ck-basal --home "$fhome" run w1) ;;
    esac
    cpu_ms; c0=$cpu_v
    "${cmd[@]}" >>"$out/round_$k"
    cpu_ms; echo $(( cpu_v - c0 )) >>"$out/round_$k.cpu"
  done
done
T cm_cold build/bin/ck-basal --home "$chome" codemode run "$out/basal_w1.js" >/dev/null
log "two streams at once (every contender, both workloads)"
pair floor_w1 300 "$out/floor" w1 $N_INPROC
pair floor_w2 300 "$out/floor" w2 $N_INPROC
(cd "$here" && pair qe_w1 1500 node qe.mjs w1 $N_INPROC)
(cd "$here" && pair qe_w2 1500 node qe.mjs w2 $N_INPROC)
pair fl_w1 500 "$CF" run "$fhome{S}" "w1{S}" $N_FLOW1
pair fl_w2 500 "$CF" run "$fhome{S}" "w2{S}" $N_FLOW2
pair fo_w1 500 "$CF" run "$fhome{S}" "w1{S}" $N_FLOW1 --fsync-off
pair fo_w2 500 "$CF" run "$fhome{S}" "w2{S}" $N_FLOW2 --fsync-off
pair bx_w1 100 "$ST" 1 499500 build/bin/ck-basal --home "$home{S}" exec "$out/basal_w1.js" --repeat $N_BASAL
pair bx_w2 100 "$ST" 1 499500 build/bin/ck-basal --home "$home{S}" exec "$out/basal_w2.js" --repeat $N_BASAL
pair node_w1 100 "$ST" $N_NODE 499500 node -e "console.log((function () { $BODY1 })())"
pair bwrap_w1 100 "$ST" $N_BWRAP 499500 "${BW[@]}"
pair floor_cold 100 "$ST" $N_COLD 499500 "$out/floor" once
(cd "$here" && pair qe_cold 100 "$ST" $N_COLD 499500 node qe.mjs once)
pair basal_cold 100 "$ST" $N_COLD 499500 build/bin/ck-basal --home "$home{S}" exec "$out/basal_w1.js"
pair basal_runcold 100 "$ST" $N_COLD "result: 499500" build/bin/ck-basal --home "$fhome{S}" run "w1{S}"
pair cm_cold 100 "$ST" $N_COLD "result: 499500" build/bin/ck-basal --home "$chome{S}" codemode run "$out/basal_w1.js"
log "basal_bench --scale 0.2 (basal's own per-activation median and p95)"
build/bench/basal_bench --scale 0.2 >"$out/basal_bench.txt" 2>/dev/null || log "basal_bench failed: its rows are left out"
log "floor, round 3"
"$out/floor" w1 $N_INPROC >"$out/floor_w1c"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
t_end=$(date +%s); busy_end=$(busy); own; own_end=$own_v
# other processes' CPU use during the run, in % of one CPU
other=$(awk -v b="$busy_end" -v b0="$busy_start" -v o="$own_end" -v o0="$own_start" -v t="$t_end" -v t0="$t_start" \
  'BEGIN { x = ((b - b0) - (o - o0)) * 100 / (t - t0); printf "%.0f", x < 0 ? 0 : x }')
cat "$out/floor_w1a" "$out/floor_w1b" "$out/floor_w1c" >"$out/floor_w1"

# ---- statistics ----------------------------------------------------------------------
# stats FILE -> "n median p95 min max sum" (nearest rank), microseconds ("#" lines skipped)
stats() { grep -v '^#' "$1" | sort -n | awk '{ v[NR] = $1; s += $1 } END {
  m = int((NR + 1) / 2); p = int(NR * 0.95 + 0.999999); if (p < 1) p = 1
  printf "%d %.3f %.3f %.3f %.3f %.3f\n", NR, v[m], v[p], v[1], v[NR], s }'; }
fmt() { awk -v u="$1" 'BEGIN { if (u == "") print "—"; else if (u >= 1000) printf "%.2f ms", u / 1000; else if (u >= 10) printf "%.1f µs", u; else printf "%.2f µs", u }'; }
mib() { [ -s "$out/$1.rss" ] && awk '{ printf "%.1f MiB", $1 / 1024 }' "$out/$1.rss" || echo "—"; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
# basal_bench row "NAME" -> its median, p95 and min in µs (the row's units converted)
bb() { awk -F' \\| ' -v name="$1" 'index($1, name) {
  for (i = 3; i <= 5; i++) { x = $i; f = (x ~ /ms/) ? 1000 : 1; gsub(/[^0-9.-]/, "", x); printf "%s%.3f", (i > 3 ? " " : ""), x * f }
  printf " %s\n", $2; exit }' "$out/basal_bench.txt" 2>/dev/null; }
# two-stream throughput of pair NAME: (samples of both) / (last "# end" - the start),
# as "N/s"; with a second argument K, (both runs' count x K) / (wall - K2) for the
# ck-basal exec pairs: pair2 NAME PER_PROCESS_COUNT SUBTRACT_US
pair_tp() { awk -v start="$(cat "$out/$1.start")" '/^# end/ { if ($3 > e) e = $3; next } { n++ }
  END { printf "%.0f/s", n * 1e6 / (e - start) }' "$out/$1.p1" "$out/$1.p2"; }
pair_wall() { awk -v start="$(cat "$out/$1.start")" '/^# end/ { if ($3 > e) e = $3 } END { printf "%.3f", e - start }' "$out/$1.p1" "$out/$1.p2"; }
# the ratio of two "N/s" figures
tpr() { awk -v a="${1%/s}" -v b="${2%/s}" 'BEGIN { printf "%.2fx", a / b }'; }

read -r _ fmed fp95 _ fmax _ < <(stats "$out/floor_w1")
read -r _ f2med _ _ _ _ < <(stats "$out/floor_w2")
floor_call=$(awk -v a="$f2med" -v b="$fmed" 'BEGIN { printf "%.3f", (a - b) / 100 }')

rows=$(mktemp); tmpfiles+=("$rows")
# row LABEL WORKLOAD N MED P95 MIN MAX TP1 TP2 RSS NOTE [RATIO] ; ratio vs the floor median of the workload
row() {
  local ref=$fmed; [ "$2" = 2 ] && ref=$f2med; [ "$2" = 3 ] && ref=$fcold
  local ratio="—"; [ -n "$4" ] && ratio=$(div "$4" "$ref")
  local tp="—"; [ -n "$8" ] && tp=$8
  local tp2="—"; [ -n "$9" ] && tp2="$9 ($(tpr "$9" "$tp") one stream)"
  local spread="—"; [ -n "$6" ] && spread="min $(fmt "$6")"; [ -n "$6" ] && [ -n "$7" ] && spread="$(fmt "$6") – $(fmt "$7")"
  [ -n "${12:-}" ] && ratio=${12}
  echo "| $1 | $2 | $3 | $(fmt "$4") | $(fmt "$5") | $spread | $tp | $tp2 | $ratio | ${10} | ${11} |" >>"$rows"
}
tput() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.0f/s", n * 1e6 / s }'; }
srow() { # srow LABEL WORKLOAD FILE RSSNAME NOTE [PAIRNAME]
  local n med p95 mn mx sum; read -r n med p95 mn mx sum < <(stats "$out/$3")
  local tp2=""; [ -n "${6:-}" ] && tp2=$(pair_tp "$6")
  row "$1" "$2" "$n" "$med" "$p95" "$mn" "$mx" "$(tput "$n" "$sum")" "$tp2" "$(mib "$4")" "$5"; }
med() { stats "$out/$1" | cut -d' ' -f2; }
read -r _ fcold _ _ _ _ < <(stats "$out/floor_cold")

# basal warm via ck-basal exec: per activation = (median T(N) - median T(1)) / (N - 1)
# (with a third argument 4 or 5: from the fastest or slowest of the 3 runs of N instead)
bmean() { awk -v a="$(stats "$out/$1" | cut -d' ' -f"${3:-2}")" -v b="$(med "$2")" -v n=$N_BASAL 'BEGIN { printf "%.3f", (a - b) / (n - 1) }'; }
bx1=$(bmean bx_w1_n bx_w1_1); bx2=$(bmean bx_w2_n bx_w2_1)
# two streams of ck-basal exec --repeat N: 2 (N - 1) / (wall of the pair - median T(1 run))
bxpair() { awk -v w="$(pair_wall "$1")" -v b="$(med "$2")" -v n=$N_BASAL 'BEGIN { printf "%.0f/s", 2 * (n - 1) * 1e6 / (w - b) }'; }

flrow() { # flrow WORKLOAD NAME LABEL NOTE
  srow "$3" "$1" "$2_w$1" "$2_w$1" "$4" "$2_w$1"; }

srow "floor: in-process QuickJS 2021, fresh runtime + context per execution (3 rounds)" 1 floor_w1 floor_w1a "max RSS of the process over the 1000 executions of round 1" floor_w1
read -r m p mn n_ < <(bb "warm pooled activation, worker ready") || true
[ -n "${m:-}" ] && row "basal warm activation, worker ready (basal_bench --scale 0.2, \`pool_run\`)" 1 "$n_" "$m" "$p" "$mn" "" "" "" "—" "parent's pool directly, test host, no journal; no CLI"
read -r m p mn n_ < <(bb "warm pooled activation, back to back") || true
[ -n "${m:-}" ] && { bbw1=$m; row "basal warm activation, back to back (basal_bench --scale 0.2)" 1 "$n_" "$m" "$p" "$mn" "" "" "" "—" "no journal"; }
row "basal warm activation, back to back (\`ck-basal exec --repeat $N_BASAL\`)" 1 "3 x $N_BASAL" "$bx1" "" "$(bmean bx_w1_n bx_w1_1 4)" "$(bmean bx_w1_n bx_w1_1 5)" "$(awk -v u="$bx1" 'BEGIN { printf "%.0f/s", 1e6 / u }')" "$(bxpair bx_w1 bx_w1_1)" "$(mib bx_w1)" "no journal (test host); mean, not median: (T($N_BASAL runs) - T(1 run)) / $((N_BASAL - 1)), medians of 3 (min – max: the fastest and slowest of the 3 runs); two streams: 2 x $((N_BASAL - 1)) / (wall of the pair - T(1 run)); RSS is the larger of parent and worker"
flrow 1 fl "basal flow run, journal on (\`runs_admit_claimed\` + \`run_drive_claimed\`, store synchronous=FULL)" "admission with the claim, then the end state: two committed, fsynced transactions around the activation on the flow's warm worker; RSS is the larger of the bench process and the worker"
flrow 1 fo "basal flow run, store fsync off (benchmark-only \`synchronous=OFF\`)" "the same runs without fsync"
srow "quickjs-emscripten $QE_VERSION in Node $(node --version), fresh runtime + context per execution" 1 qe_w1 qe_w1 "RSS of the Node process over the 1000 executions" qe_w1
srow "\`node -e\` per execution" 1 node_w1 node_w1 "only $N_NODE executions (about 0.1 s each)" node_w1
srow "upstream \`qjs\` under \`bwrap --unshare-all --die-with-parent --ro-bind / /\` per execution" 1 bwrap_w1 bwrap_w1 "only $N_BWRAP executions; \`qjs w1.js\`, the script prints its result with console.log" bwrap_w1

srow "floor, native host function \`inc()\`" 2 floor_w2 floor_w2 "per host call: $(fmt "$floor_call") ((median w2 - median w1) / 100)" floor_w2
row "basal warm, back to back, 100 × \`await ops.call(\"test\", \"counter\")\` (\`ck-basal exec --repeat $N_BASAL\`)" 2 "3 x $N_BASAL" "$bx2" "" "$(bmean bx_w2_n bx_w2_1 4)" "$(bmean bx_w2_n bx_w2_1 5)" "$(awk -v u="$bx2" 'BEGIN { printf "%.0f/s", 1e6 / u }')" "$(bxpair bx_w2 bx_w2_1)" "$(mib bx_w2)" "no journal (test host's in-memory counter); mean; per host call: $(fmt "$(awk -v a="$bx2" -v b="$bx1" 'BEGIN { print (a - b) / 100 }')") (async, across the process boundary)"
read -r m p mn n_ < <(bb "async host call round trip, per call (N = 200)") || true
[ -n "${m:-}" ] && { bbcall=$m; row "basal per host call, \`ops.call(\"test\", \"echo\", i)\` (basal_bench --scale 0.2; one call, not a whole execution)" 2 "$n_" "$m" "$p" "$mn" "" "" "" "—" "no journal; one call, compare with the floor's per call above" "$(div "$m" "$floor_call") floor's per call"; }
flcall() { awk -v a="$(med "$1_w2")" -v b="$(med "$1_w1")" 'BEGIN { print (a - b) / 100 }'; }
flrow 2 fl "basal flow run, journal on: 100 × \`await kv.set(\"c\", ++c)\` (store synchronous=FULL)" "kv.set of the running count (the counter held by the host's kv), not an increment by the host; per host call: $(fmt "$(flcall fl)") (journal row + kv change fsynced before delivery)"
flrow 2 fo "basal flow run, fsync off: 100 × \`await kv.set(\"c\", ++c)\` (benchmark-only \`synchronous=OFF\`)" "per host call: $(fmt "$(flcall fo)")"
read -r _ q2 _ _ _ _ < <(stats "$out/qe_w2"); read -r _ q1 _ _ _ _ < <(stats "$out/qe_w1")
srow "quickjs-emscripten, host function \`inc()\` (\`vm.newFunction\`)" 2 qe_w2 qe_w2 "per host call: $(fmt "$(awk -v a="$q2" -v b="$q1" 'BEGIN { print (a - b) / 100 }')")" qe_w2
row "\`node -e\` per execution" 2 "—" "" "" "" "" "" "" "—" "not expressible the same way: no host to call"
row "upstream \`qjs\` under \`bwrap\` per execution" 2 "—" "" "" "" "" "" "" "—" "not expressible the same way: no host to call"

srow "floor: process start to first result (\`floor once\`)" 3 floor_cold floor_cold "fork + exec + runtime + eval + print" floor_cold
srow "basal cold: \`ck-basal exec\` of one script (CLI start, pool, worker spawn to Welcome, activation, result)" 3 basal_cold basal_cold "no journal; RSS is the larger of parent and worker" basal_cold
srow "basal cold with the journal: \`ck-basal run w1\` (CLI start, store open, admission, claim, worker spawn, activation, end state)" 3 basal_runcold basal_runcold "flow installed and approved before timing; synchronous=FULL" basal_runcold
read -r m p mn n_ < <(bb "spawn to Welcome (") || true
[ -n "${m:-}" ] && row "basal: spawn to Welcome only (basal_bench --scale 0.2)" 3 "$n_" "$m" "$p" "$mn" "" "" "" "—" "part of the rows above"
srow "quickjs-emscripten: \`node qe.mjs once\` (Node start, module + WebAssembly load, first result)" 3 qe_cold qe_cold "" qe_cold
srow "\`node -e\` (the workload 1 samples: every execution is cold)" 3 node_w1 node_w1 "" node_w1
srow "upstream \`qjs\` under \`bwrap\` (the workload 1 samples: every execution is cold)" 3 bwrap_w1 bwrap_w1 "" bwrap_w1
# the interleaved rounds (issue 32): wall medians and mean CPU against bwrap qjs's
cpumean() { awk '{ t += $1 } END { printf "%.3f", t * 1000 / NR }' "$out/round_$1.cpu"; } # µs
rbw=$(med round_bwrap); rbwc=$(cpumean bwrap)
coldside() { # coldside KIND LABEL RSSNAME PAIRNAME NOTE
  local note; note="CPU $(fmt "$(cpumean "$1")") per execution (mean)"
  [ "$1" != bwrap ] && note="$note; $(div "$(med "round_$1")" "$rbw") bwrap qjs's wall (medians), $(div "$(cpumean "$1")" "$rbwc") its CPU (means)"
  srow "$2" 3 "round_$1" "$3" "$note${5:+; $5}" "$4"; }
coldside bwrap "side by side ($N_ROUNDS rounds): upstream \`qjs\` under \`bwrap\`" bwrap_w1 bwrap_w1 "the reference of the three rows below"
coldside exec "side by side: cold \`ck-basal exec\` of one script" basal_cold basal_cold "no journal"
coldside cm "side by side: cold \`ck-basal codemode run\` of one script, one-tool catalog" cm_cold cm_cold "catalog load, compile check in its own worker, run row and end state in the store, the run's worker; the script calls no tool"
coldside run "side by side: cold \`ck-basal run w1\` of an approved flow" basal_runcold basal_runcold "store, admission and claim, worker, end state; synchronous=FULL"

# noise: the floor measured three times in the run, at the start, in the middle, at the end
noise=$(for r in a b c; do med "floor_w1$r"; done | sort -n | awk '{ v[NR] = $1 } END {
  printf "floor medians of the 3 rounds (start, middle, end, sorted): %.1f, %.1f, %.1f µs: spread %.0f%% of the lowest", v[1], v[2], v[3], (v[3] - v[1]) * 100 / v[1] }')
noise2="floor p95 / median: $(div "$fp95" "$fmed"); floor max / median: $(div "$fmax" "$fmed")"

# ---- the issue's goals, from this run's numbers ---------------------------------------
bwm=$(med bwrap_w1); ndm=$(med node_w1); flm=$(med fl_w1); fom=$(med fo_w1)
cmpx() { awk -v a="$1" -v b="$2" 'BEGIN { print (a < b) ? "yes" : "no" }'; }
within2() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%s (%.2fx)", (a <= 2 * b) ? "yes" : "no", a / b }'; }
goals=$(mktemp); tmpfiles+=("$goals")
{
  echo "| goal | basal figure (median unless said) | met |"
  echo "|---|---|---|"
  for g in "warm activation, no journal (basal_bench back to back)|${bbw1:-}" "warm activation, no journal (\`exec --repeat\`, mean)|$bx1" \
           "flow run, journal on (workload 1)|$flm" "flow run, store fsync off (workload 1)|$fom"; do
    n=${g%%|*}; v=${g#*|}; [ -n "$v" ] || continue
    echo "| $n ahead of every OS-confined contender (bwrap qjs $(fmt "$bwm"), \`node -e\` $(fmt "$ndm")) | $(fmt "$v") | $(cmpx "$v" "$bwm") |"
    echo "| $n within 2x of the floor ($(fmt "$fmed")) | $(fmt "$v") | $(within2 "$v" "$fmed") |"
  done
  for g in "exec|cold \`ck-basal exec\` of one script|1" "cm|cold \`ck-basal codemode run\` of one script, one-tool catalog|1.5" "run|cold \`ck-basal run\` of an approved flow|2"; do
    k=${g%%|*}; rest=${g#*|}; lab=${rest%|*}; lim=${rest##*|}
    v=$(med "round_$k")
    echo "| $lab within ${lim}x of bwrap qjs's wall ($(fmt "$rbw"), side by side, medians; issue 32) | $(fmt "$v"), CPU $(fmt "$(cpumean "$k")") (bwrap qjs's $(fmt "$rbwc")) | $(awk -v a="$v" -v b="$rbw" -v l="$lim" 'BEGIN { printf "%s (%.2fx wall)", (a <= l * b) ? "yes" : "no", a / b }') |"
  done
  echo "| per host call ahead of every OS-confined contender | — | cannot be judged: neither \`node -e\` nor bwrap qjs has a host to call |"
  v=$(awk -v a="$bx2" -v b="$bx1" 'BEGIN { print (a - b) / 100 }')
  echo "| per host call within 2x of the floor's ($(fmt "$floor_call")), no journal (\`exec --repeat\` mean, \`test.counter\`) | $(fmt "$v") | $(within2 "$v" "$floor_call") |"
  [ -n "${bbcall:-}" ] && echo "| per host call within 2x of the floor's ($(fmt "$floor_call")), no journal (basal_bench \`test.echo\`) | $(fmt "$bbcall") | $(within2 "$bbcall" "$floor_call") |"
  for k in fl fo; do
    v=$(flcall $k); lab="journal on, kv.set"; [ $k = fo ] && lab="fsync off, kv.set"
    echo "| per host call within 2x of the floor's ($(fmt "$floor_call")), $lab | $(fmt "$v") | $(within2 "$v" "$floor_call") |"
  done
} >"$goals"

table=$(mktemp); tmpfiles+=("$table")
{
  echo "Reproduce with \`bench/contenders/run.sh\` (after \`make bench-build\`)."
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); run took $((t_end - t_start)) s"
  echo "- machine: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) CPUs; kernel $(uname -r); Node $(node --version); $(bwrap --version)"
  echo "- basal: $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$([ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && echo ' + uncommitted changes'); release build"
  echo "- load average (1, 5, 15 min): $load_before before the run, $load_after after (the run's own two-stream phase keeps both CPUs busy)"
  echo -n "- other processes' CPU use during the run (all CPUs' busy time from /proc/stat less this run's own and its children's): $other% of one CPU"
  if [ "$other" -ge 20 ]; then echo " (**not alone**: other work competed for the $(nproc) CPUs; every figure, the two-stream ones most, carries that noise)"; else echo " (a quiet machine)"; fi
  echo "- noise: $noise; $noise2"
  echo
  echo "| contender | workload | n | median | p95 | min – max | throughput, one stream | throughput, two streams at once | ratio to floor (medians) | peak memory (max RSS) | note |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
  cat "$rows"
  echo
  echo "The issue's goals against this run (warm activation and per-call cost ahead of every"
  echo "contender that confines with an OS boundary, and within 2x of the in-process floor):"
  echo
  cat "$goals"
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
  # The same table in docs/benchmarks.md, between its own markers (readers look
  # there first, with the command that reproduces it); the text around them is kept.
  main=docs/benchmarks.md
  {
    echo "<!-- contenders:begin (generated by bench/contenders/run.sh: edits here are overwritten) -->"
    echo
    echo "How each contender runs and what every column means: docs/benchmarks-contenders.md."
    echo
    cat "$table"
    echo
    echo "<!-- contenders:end -->"
  } >"$table.main"
  if "$root/bench/replace-section.sh" "$main" contenders "$table.main"; then
    log "wrote the table into $main"
  fi
  rm -f "$table.main"
fi
