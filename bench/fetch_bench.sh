#!/usr/bin/env bash
# net.fetch against curl (issue 13): a GET of a 1 KiB body from a local HTTPS server,
# through a flow and with curl, in the same run, interleaved. Prints a markdown table.
#
#   bench/fetch_bench.sh [--scale X]
#
# Keep-alive on both sides: a flow's net.fetch calls share one libcurl handle per run,
# and curl is given the URL N times in one invocation, so both reuse one TLS
# connection. Per request = (time for N requests - time for 1 request) / (N - 1) on
# each side, so process start, the worker, the connection and the TLS handshake cancel
# out. The flow side pays what a flow call is: the journal row committed before the
# request leaves, the outcome committed after it (a GET's commits do not wait for the
# disk: docs/flows.md, "Durability").
#
# The server is on loopback, so the flow needs the test build's test setting
# (loopback allowed, the test CA, a name mapped to 127.0.0.1): the parent is
# build/test/bin/ck-basal, compiled with the release flags plus -DBASAL_TEST_HOOKS.
# A measurement, not a test: the exit status says only whether it ran.
set -euo pipefail
cd "$(dirname "$0")/.."

scale=1
[ "${1:-}" = --scale ] && scale=$2
iterations=$(awk -v s="$scale" 'BEGIN { n = int(30 * s); print (n < 3 ? 3 : n) }')
N=50

make -s build/test/bin/ck-basal build/test/bin/ck-basal-worker >&2
command -v curl >/dev/null || { echo "fetch_bench: curl is not installed" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/basal-fetch-bench.XXXXXX")
cleanup() {
  exec 3>&- 2>/dev/null || true # the server's stdin: it stops at its end
  rm -rf "$tmp"
}
trap cleanup EXIT

tests/tools/make_test_ca.sh "$tmp"
mkfifo "$tmp/server.out"
exec 3> >(exec python3 tests/tools/https_server.py --cert "$tmp/server.pem" --key "$tmp/server.key" \
  --max-seconds 600 >"$tmp/server.out")
read -r _ port <"$tmp/server.out"

url="https://pub.basal.test:$port/kib"
parent=build/test/bin/ck-basal
home="$tmp/home"
export BASAL_TEST_NET_CA="$tmp/ca.pem" BASAL_TEST_NET_ALLOW_LOOPBACK=1 \
  BASAL_TEST_NET_RESOLVE="pub.basal.test=127.0.0.1"

"$parent" --home "$home" setup >/dev/null
mkdir -p "$tmp/flow"
cat >"$tmp/flow/flow.js" <<EOF
let bytes = 0;
for (let i = 0; i < trigger.n; i++) bytes += (await net.fetch('$url')).body.length;
return bytes;
EOF
cat >"$tmp/flow/manifest.json" <<'EOF'
{"format": 1, "id": "fetch", "version": 1, "purpose": "bench", "trigger": {"manual": true},
 "net": {"fetch": [{"host": "pub.basal.test"}]}}
EOF
# The same loop with a query call that leaves nothing: what the journal costs a call.
# Its root is a directory of its own: a root holding the data home is never granted.
mkdir -p "$tmp/stat" "$tmp/statroot"
cat >"$tmp/stat/flow.js" <<EOF
let bytes = 0;
for (let i = 0; i < trigger.n; i++) bytes += (await fs.stat('$tmp/statroot')).size > 0 ? 1024 : 0;
return bytes;
EOF
cat >"$tmp/stat/manifest.json" <<EOF
{"format": 1, "id": "stat", "version": 1, "purpose": "bench", "trigger": {"manual": true},
 "fs": {"read": ["$tmp/statroot"]}}
EOF
for f in flow stat; do
  hash=$("$parent" --json --home "$home" flow install "$tmp/$f" | sed -n 's/.*"code_hash": *"\([0-9a-f]*\)".*/\1/p')
  id=$([ "$f" = flow ] && echo fetch || echo stat)
  "$parent" --home "$home" flow approve "$id" --version 1 --code-hash "$hash" >/dev/null
done

curl_urls=()
for ((i = 0; i < N; i++)); do curl_urls+=("$url"); done
curl_run() { # count
  curl -q -s --fail --cacert "$tmp/ca.pem" --resolve "pub.basal.test:$port:127.0.0.1" \
    "${curl_urls[@]:0:$1}" >/dev/null
}
basal_run() { # count [flow]
  "$parent" --json --home "$home" run "${2:-fetch}" --trigger "{\"n\": $1}" >"$tmp/run.out"
  grep -q "\"result\": *$(($1 * 1024))" "$tmp/run.out" ||
    { echo "fetch_bench: the flow did not fetch $1 x 1 KiB:" >&2; cat "$tmp/run.out" >&2; exit 1; }
}
# Microseconds that cmd takes.
timed() {
  local t0=$EPOCHREALTIME
  "$@"
  local t1=$EPOCHREALTIME
  echo $(((${t1/./} - ${t0/./})))
}

# warm-up (not counted)
curl_run 2
basal_run 2
basal_run 2 stat

: >"$tmp/curl.us" && : >"$tmp/basal.us" && : >"$tmp/stat.us"
for ((it = 0; it < iterations; it++)); do
  c1=$(timed curl_run 1)
  b1=$(timed basal_run 1)
  cn=$(timed curl_run $N)
  bn=$(timed basal_run $N)
  s1=$(timed basal_run 1 stat)
  sn=$(timed basal_run $N stat)
  echo $(((sn - s1) / (N - 1))) >>"$tmp/stat.us"
  echo $(((cn - c1) / (N - 1))) >>"$tmp/curl.us"
  echo $(((bn - b1) / (N - 1))) >>"$tmp/basal.us"
done

# median, p95 (nearest rank), min of a file of microseconds, formatted
stats() {
  sort -n "$1" | awk '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    r = int(0.95 * NR + 0.999); if (r < 1) r = 1
    printf "%d %.0f %d %d\n", NR, m, v[r], v[1] }'
}
fmt() { awk -v u="$1" 'BEGIN { if (u >= 1000) printf "%.2f ms", u / 1000; else printf "%.1f µs", u }'; }

read -r n_c med_c p95_c min_c < <(stats "$tmp/curl.us")
read -r n_b med_b p95_b min_b < <(stats "$tmp/basal.us")
read -r n_s med_s p95_s min_s < <(stats "$tmp/stat.us")
ratio=$(awk -v b="$med_b" -v c="$med_c" 'BEGIN { printf "%.2f", b / c }')
ratio95=$(awk -v b="$p95_b" -v c="$p95_c" 'BEGIN { printf "%.2f", b / c }')
met=$(awk -v r="$ratio" -v r95="$ratio95" 'BEGIN {
  if (r <= 1.5) print (r95 <= 1.5 ? "**yes** (median and p95)" : "**yes** (median; not p95)")
  else print "**no**" }')

echo "| benchmark | n | median | p95 | min | ratio (medians) | goal | met |"
echo "|---|---:|---:|---:|---:|---:|---|---|"
echo "| reference: curl $(curl --version | awk 'NR == 1 { print $2 }'), GET of 1 KiB over HTTPS, per request (keep-alive) | $n_c | $(fmt "$med_c") | $(fmt "$p95_c") | $(fmt "$min_c") | 1.00x |  |  |"
echo "| net.fetch GET of 1 KiB through a flow, per request (keep-alive) | $n_b | $(fmt "$med_b") | $(fmt "$p95_b") | $(fmt "$min_b") | ${ratio}x | ≤ 1.5x curl | $met |"
echo "|   diagnostic: a query call that leaves nothing (\`fs.stat\`), per call: the journal's share | $n_s | $(fmt "$med_s") | $(fmt "$p95_s") | $(fmt "$min_s") |  |  |  |"
echo
echo "Per request: (N = $N requests - 1 request) / $((N - 1)) on each side, interleaved; the server is tests/tools/https_server.py (Python, HTTP/1.1) on loopback; the flow side is \`ck-basal run\` of the test build with the test setting (loopback, test CA, name map), and journals each call (two commits that do not wait for the disk: a query's rows reach it with the next commit that does, docs/flows.md \"Durability\")."
