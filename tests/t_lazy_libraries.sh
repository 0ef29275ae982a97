#!/usr/bin/env bash
# libcurl, libmicrohttpd, libsystemd and libpq are loaded when first used, not linked
# (base/shared_library.h): a one-shot command never maps them, and a library that cannot
# be loaded refuses what needs it (fail closed) instead of running without it. The
# broken libraries are empty shared objects with the real sonames, found first through
# LD_LIBRARY_PATH, as the dynamic loader would find any other.
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib/harness.sh
scratch_dir lazy-libraries
for v in test asan; do
    [ -x "build/$v/bin/ck-basal" ] || { echo "not ok - lazy libraries: build/$v/bin/ck-basal is missing (make test-build)"; exit 1; }
done
echo 'int basal_not_the_library;' >"$scratch/empty.c"
for soname in libcurl.so.4 libmicrohttpd.so.12 libsystemd.so.0 libpq.so.5; do
    mkdir -p "$scratch/broken-${soname%%.*}"
    cc -shared -fPIC -o "$scratch/broken-${soname%%.*}/$soname" "$scratch/empty.c" ||
        { echo "not ok - lazy libraries: cannot build the empty $soname"; exit 1; }
done
echo 'return 1;' >"$scratch/one.js"
# A flow whose one net.fetch is granted: with no libcurl it must be refused, not sent.
mkdir -p "$scratch/fetch-flow"
cat >"$scratch/fetch-flow/manifest.json" <<'JSON'
{"format": 1, "id": "fetcher", "version": 1, "purpose": "test", "trigger": {"manual": true},
 "net": {"fetch": [{"host": "pub.basal.test"}]}}
JSON
cat >"$scratch/fetch-flow/flow.js" <<'JS'
try { await net.fetch('https://pub.basal.test/ok'); return 'sent'; }
catch (e) { return e.name + ' ' + e.data.code + ' ' + e.data.message; }
JS

# serve_until_ready LABEL HOME ENV... -- ARGS...: starts serve, waits for its "ready"
# line (a pipe, no sleep), stops it with SIGTERM; prints its log; 0 if it got ready and
# stopped with exit 0.
serve_until_ready() {
    local home=$1
    shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    local fifo=$scratch/serve.fifo log=$scratch/serve.log
    rm -f "$fifo" && mkfifo "$fifo"
    env "${envs[@]}" "$bin" --home "$home" serve --max-runs 1 --spares 0 "$@" 2>"$fifo" &
    local pid=$! ready=1 line
    : >"$log"
    while IFS= read -r -t 30 line; do
        echo "$line" >>"$log"
        case "$line" in *ready*) ready=0; break ;; esac
    done <"$fifo" 3>"$fifo"
    [ "$ready" -eq 0 ] && kill -TERM "$pid"
    wait "$pid"
    local rc=$?
    cat "$log"
    [ "$ready" -eq 0 ] && [ "$rc" -eq 0 ]
}

for v in test asan; do
    bin=build/$v/bin/ck-basal
    home=$scratch/home-$v
    "$bin" --home "$home" setup >/dev/null 2>&1 || not_ok "lazy libraries ($v): setup of the data home" "exit $?"
    installed=$("$bin" --home "$home" --json flow install "$scratch/fetch-flow" 2>&1)
    hash=$(printf '%s' "$installed" | sed -n 's/.*"code_hash":"\([0-9a-f]*\)".*/\1/p')
    "$bin" --home "$home" flow approve fetcher --version 1 --code-hash "$hash" >/dev/null 2>&1 ||
        not_ok "lazy libraries ($v): the net.fetch flow is installed and approved" "$installed"
    needed=$(readelf -dW "$bin" | grep NEEDED)
    # libc.so.6 is the control: readelf shows the shared libraries it does need
    if grep -q libc.so.6 <<<"$needed" && ! grep -qE 'libcurl|libmicrohttpd|libsystemd|libpq' <<<"$needed"; then
        ok "lazy libraries ($v): ck-basal needs libc but not libcurl, libmicrohttpd, libsystemd or libpq at start [guard: loaded only when used]"
    else
        not_ok "lazy libraries ($v): ck-basal needs libc but not libcurl, libmicrohttpd, libsystemd or libpq at start [guard: loaded only when used]" "$needed"
    fi

    out=$(LD_LIBRARY_PATH="$scratch/broken-libcurl:$scratch/broken-libmicrohttpd:$scratch/broken-libsystemd:$scratch/broken-libpq" \
        "$bin" --home "$home" exec "$scratch/one.js" 2>&1)
    if [ "$?" -eq 0 ] && [ "$out" = 1 ]; then
        ok "lazy libraries ($v): exec runs with all four libraries broken (a one-shot command loads none of them)"
    else
        not_ok "lazy libraries ($v): exec runs with all four libraries broken (a one-shot command loads none of them)" "$out"
    fi

    # The PostgreSQL store loads libpq at its first connection: with one that cannot be
    # loaded, setup refuses in one line naming it, and never falls back to SQLite.
    if uri=$(pg_database lazy_libpq); then
        pghome=$scratch/pg-home-$v
        out=$(LD_LIBRARY_PATH="$scratch/broken-libpq" "$bin" --home "$pghome" --store "$uri" setup 2>&1)
        rc=$?
        if [ "$rc" -ne 0 ] && grep -q 'cannot connect to PostgreSQL: libpq.so.5 has no PQ' <<<"$out" &&
            [ "$(grep -c . <<<"$out")" -eq 1 ] && [ ! -e "$pghome/basal.db" ]; then
            ok "lazy libraries ($v): a PostgreSQL store with a libpq that cannot be loaded is refused in one line, no SQLite store made [guard libpq-load-fail-closed]"
        else
            not_ok "lazy libraries ($v): a PostgreSQL store with a libpq that cannot be loaded is refused in one line, no SQLite store made [guard libpq-load-fail-closed]" "exit $rc: $out"
        fi
        out=$("$bin" --home "$pghome" --store "$uri" setup 2>&1)
        if [ "$?" -eq 0 ] && grep -q 'created at schema version' <<<"$out"; then
            ok "lazy libraries ($v): the same setup with the real libpq creates the store (control)"
        else
            not_ok "lazy libraries ($v): the same setup with the real libpq creates the store (control)" "$out"
        fi
    else
        not_ok "lazy libraries ($v): a PostgreSQL database for the libpq checks" "$uri"
    fi

    out=$(LD_LIBRARY_PATH="$scratch/broken-libcurl" "$bin" --home "$home" --json run fetcher 2>&1)
    if grep -q 'HostError io_error net.fetch: libcurl.so.4 has no curl_easy_cleanup' <<<"$out" &&
        grep -q '"state":"succeeded"' <<<"$out"; then
        ok "lazy libraries ($v): a granted net.fetch with a libcurl that cannot be loaded is refused (io_error, the reason named), nothing sent [guard curl-load-fail-closed]"
    else
        not_ok "lazy libraries ($v): a granted net.fetch with a libcurl that cannot be loaded is refused (io_error, the reason named), nothing sent [guard curl-load-fail-closed]" "$out"
    fi

    if log=$(serve_until_ready "$home" BASAL_UNUSED=1 --); then
        ok "lazy libraries ($v): serve starts and stops with the real libraries (control)"
    else
        not_ok "lazy libraries ($v): serve starts and stops with the real libraries (control)" "$log"
    fi

    out=$(LD_LIBRARY_PATH="$scratch/broken-libcurl" timeout 60 "$bin" --home "$home" serve --spares 0 2>&1)
    rc=$?
    if [ "$rc" -eq 1 ] && grep -q 'libcurl.so.4 has no curl_easy_cleanup' <<<"$out" && [ "$(wc -l <<<"$out")" -eq 1 ]; then
        ok "lazy libraries ($v): serve with a libcurl that cannot be loaded refuses to start, one line [guard curl-load-fail-closed]"
    else
        not_ok "lazy libraries ($v): serve with a libcurl that cannot be loaded refuses to start, one line [guard curl-load-fail-closed]" "exit $rc: $out"
    fi

    out=$(LD_LIBRARY_PATH="$scratch/broken-libmicrohttpd" timeout 60 "$bin" --home "$home" serve --spares 0 --metrics 127.0.0.1:0 2>&1)
    rc=$?
    if [ "$rc" -eq 1 ] && grep -q 'libmicrohttpd.so.12 has no MHD_' <<<"$out"; then
        ok "lazy libraries ($v): serve --metrics with a libmicrohttpd that cannot be loaded refuses to start [guard microhttpd-load-fail-closed]"
    else
        not_ok "lazy libraries ($v): serve --metrics with a libmicrohttpd that cannot be loaded refuses to start [guard microhttpd-load-fail-closed]" "exit $rc: $out"
    fi

    if log=$(serve_until_ready "$home" LD_LIBRARY_PATH="$scratch/broken-libsystemd" NOTIFY_SOCKET=/nonexistent/notify --); then
        if grep -q 'systemd_unreachable' <<<"$log" && grep -q 'libsystemd.so.0 has no sd_' <<<"$log"; then
            ok "lazy libraries ($v): under systemd with a libsystemd that cannot be loaded, serve says so in its log"
        else
            not_ok "lazy libraries ($v): under systemd with a libsystemd that cannot be loaded, serve says so in its log" "$log"
        fi
    else
        not_ok "lazy libraries ($v): under systemd with a libsystemd that cannot be loaded, serve says so in its log" "serve did not start: $log"
    fi
done
exit $((harness_failed > 0))
