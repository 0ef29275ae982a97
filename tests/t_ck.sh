#!/usr/bin/env bash
# ck, driven as an operator drives it, with the real binaries:
#   - ck setup into a scratch prefix and home: the binaries installed (0755, the
#     release bytes), the data home set up, and the demo flow runs from the installed
#     ck-basal [guard ck-setup-installs];
#   - an upgrade from the previous build (PREV_COMMIT, store schema 3, built here once
#     and kept in build/ck-prev-COMMIT) with a store that has runs, journal and kv:
#       refused while a serve runs on the home, nothing changed [guard
#       upgrade-refuses-running-serve]; with --stop the serve is stopped (the old build
#       has no serve.stop: by SIGTERM) and, systemd not running it, not started again;
#       the store snapshotted before the migration [guard upgrade-snapshots-store], runs,
#       journal and kv all still there, and the printed restore command brings back a
#       store the old build reads;
#   - a downgrade refused, the installed bytes and the store unchanged [guard
#     upgrade-refuses-downgrade]; a lower VERSION refused too; a store newer than the
#     new build refused [guard upgrade-refuses-newer-store]; the same build again is
#     "nothing to do";
#   - --stop on a serve of this build goes through the ops socket (serve.stop), and a
#     serve that systemd's unit runs (a stub systemctl claims it: there is no user
#     manager here, so the decision is tested, not systemd) is started again [guard
#     upgrade-restarts-systemd-unit];
#   - --stop on a serve that is already stopping (its run held in the grace) takes the
#     serve's "serve is stopping" for the stop and upgrades once it has gone (red when
#     serve_stop treats that reply as a failure).
set -u
cd "$(dirname "$0")/.." || exit 2
repo=$PWD
NEW=$repo/build/bin
PREV_COMMIT=${CK_PREV_COMMIT:-511f156}
for b in ck ck-basal ck-basal-worker; do
    [ -x "$NEW/$b" ] || { echo "not ok - ck: $NEW/$b is missing (make)"; exit 1; }
done
. tests/lib/harness.sh
scratch_dir ck
serve_pid=""
cleanup() {
    [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
    rm -rf "$scratch"
}
trap cleanup EXIT
export HOME=$scratch/home
unset XDG_DATA_HOME
mkdir -p "$HOME"

# What ck compares builds by: ck-basal --version --json, --json before or after.
want="{\"program\":\"ck-basal\",\"version\":\"$(cat VERSION)\",\"git\":\"$("$NEW/ck-basal" --version | sed -n 's/.*(git \(.*\))$/\1/p')\",\"store_schema\":$(sed -n 's/^#define STORE_SCHEMA_VERSION \([0-9]*\)$/\1/p' src/store/store_schema.h)}"
if [ "$("$NEW/ck-basal" --version --json)" = "$want" ] && [ "$("$NEW/ck-basal" --json --version)" = "$want" ]; then
    echo "ok - ck-basal --version --json: $want"
else
    echo "not ok - ck-basal --version --json: '$("$NEW/ck-basal" --version --json)', wanted '$want'"
fi

# --- the previous build ---------------------------------------------------------------
# Release binaries of PREV_COMMIT, from `git archive` (no worktree, nothing in the
# repository changes) with this tree's QuickJS (the same pinned tarball and patches),
# cached under build/ (never committed) so a second run builds nothing.
# A shallow clone (depth 1, as some CI systems make) lacks the commit: it is fetched from
# origin once, the commit alone first, else the whole history.
have_prev_commit() {
    git cat-file -e "$PREV_COMMIT^{commit}" 2>/dev/null && return 0
    timeout 300 git fetch --quiet origin "$PREV_COMMIT" >/dev/null 2>&1 ||
        timeout 300 git fetch --quiet --unshallow origin >/dev/null 2>&1
    git cat-file -e "$PREV_COMMIT^{commit}" 2>/dev/null
}
prev_build() {
    local dir=$repo/build/ck-prev-$PREV_COMMIT
    OLD=$dir/src/build/bin
    [ -x "$OLD/ck-basal" ] && [ -x "$OLD/ck-basal-worker" ] && return 0
    if ! have_prev_commit; then
        echo "commit $PREV_COMMIT is not in this clone and could not be fetched from origin" \
            >"$dir.log"
        return 1
    fi
    rm -rf "$dir" && mkdir -p "$dir/src/build" || return 1
    git archive "$PREV_COMMIT" | tar -x -C "$dir/src" || return 1
    cp -a build/dl build/quickjs "$dir/src/build/" || return 1
    [ -d build/lib ] && cp -a build/lib "$dir/src/build/"
    # The version stamp: no git above the extracted tree, so "unknown", not this one.
    (cd "$dir/src" && GIT_CEILING_DIRECTORIES=$dir make -s -j2 build/bin/ck-basal \
        build/bin/ck-basal-worker) >"$dir/build.log" 2>&1
}
if prev_build; then
    echo "ok - ck: the previous build ($PREV_COMMIT) is ready: $("$OLD/ck-basal" --version)"
else
    echo "not ok - ck: building $PREV_COMMIT failed: $(tail -3 "$repo/build/ck-prev-$PREV_COMMIT.log" "$repo/build/ck-prev-$PREV_COMMIT/build.log" 2>/dev/null | tr '\n' ' ' | cut -c1-300)"
    exit 1
fi

# --- the demo flow, from an installed tree -------------------------------------------
work=$scratch/work
mkdir -p "$work/notes" "$work/out" "$work/flow"
printf 'buy milk\ncall the plumber\n' >"$work/notes/monday.txt"
sed -e "s|@NOTES@|$work/notes|" -e "s|@OUT@|$work/out|" examples/demo-flow/manifest.json.in \
    >"$work/flow/manifest.json"
cp examples/demo-flow/flow.js "$work/flow/flow.js"
trigger="{\"notes\":\"$work/notes\",\"out\":\"$work/out\"}"
# demo_install BIN HOME: install and approve the demo flow.
demo_install() {
    local installed hash
    installed=$("$1/ck-basal" --home "$2" --json flow install "$work/flow") || return 1
    hash=$(printf '%s' "$installed" | sed -n 's/.*"code_hash":"\([0-9a-f]*\)".*/\1/p')
    "$1/ck-basal" --home "$2" flow approve notes-summary --version 1 --code-hash "$hash" >/dev/null
}
# demo_run BIN HOME: one run; prints its "runs" (the kv counter) or fails.
demo_run() {
    local out
    out=$("$1/ck-basal" --home "$2" --json run notes-summary --trigger "$trigger" 2>&1) || {
        echo "run failed: $(one_line "$out")"
        return 1
    }
    printf '%s' "$out" | grep -q '"state":"succeeded"' || { echo "not succeeded: $(one_line "$out")"; return 1; }
    printf '%s' "$out" | grep -o '\\"runs\\":[0-9]*\|"runs":[0-9]*' | head -1 | grep -o '[0-9]*$'
}
# Bytes of the installed programs, for "nothing changed".
fingerprint() { (cd "$1" && sha256sum ck-basal ck-basal-worker 2>&1); }
store_version() { sqlite3 "$1/basal.db" 'PRAGMA user_version' 2>&1; }
# the schema this build migrates to, and one it does not know
schema=$(sed -n 's/^#define STORE_SCHEMA_VERSION \([0-9]*\)$/\1/p' src/store/store_schema.h)
[ -n "$schema" ] || echo "not ok - ck: no STORE_SCHEMA_VERSION in src/store/store_schema.h"
newer=$((${schema:-0} + 1))

# --- ck setup ---------------------------------------------------------------------------
h1=$scratch/data1
if out=$(SHELL=/bin/bash "$NEW/ck" setup --home "$h1" 2>&1); then
    echo "ok - ck setup: installed into the default prefix (~/.local) and set up $h1"
else
    echo "not ok - ck setup: $(one_line "$out")"
fi
ubin=$HOME/.local/bin
bad=""
for b in ck ck-basal ck-basal-worker; do
    [ "$(stat -c %a "$ubin/$b" 2>/dev/null)" = 755 ] && cmp -s "$NEW/$b" "$ubin/$b" || bad="$bad $b"
done
leftover=$(find "$ubin" -name '.*' -type f | head -3)
if [ -z "$bad" ] && [ -z "$leftover" ]; then
    echo "ok - ck setup: ~/.local/bin has ck, ck-basal and ck-basal-worker, mode 0755, the release bytes, no temporary file [guard ck-setup-installs]"
else
    echo "not ok - ck setup: wrong or missing in ~/.local/bin:$bad $leftover [guard ck-setup-installs]"
fi
if printf '%s' "$out" | grep -q 'created at schema version' && printf '%s' "$out" | grep -q 'seccomp filters with KILL_PROCESS' &&
    printf '%s' "$out" | grep -q '^verdict *accepted'; then
    echo "ok - ck setup: says what it did and what the kernel offers (ck-basal setup, worker-check)"
else
    echo "not ok - ck setup: no setup or worker-check report in: $(one_line "$out")"
fi
if demo_install "$ubin" "$h1" >/dev/null 2>&1 && n=$(demo_run "$ubin" "$h1") && [ "$n" = 1 ] &&
    [ -s "$work/out/summary.json" ]; then
    echo "ok - ck setup: the demo flow runs from the installed ck-basal (install, approve, run: succeeded)"
else
    echo "not ok - ck setup: the demo flow from the installed tree: ${n:-}"
fi
# ~/.local/bin is not on the test's PATH: setup prints the one line that puts it there
# for the user's shell, and that line, run, does [guard ck-setup-path-line].
line=$(printf '%s\n' "$out" | sed -n '/is not on your PATH; to add it, run:/{n;s/^    //;p;}')
if [ "$line" = "echo 'export PATH=\"$ubin:\$PATH\"' >> ~/.bashrc" ] && sh -c "$line" &&
    found=$(env -i HOME="$HOME" PATH=/usr/bin:/bin bash -i -c 'command -v ck-basal' 2>/dev/null) &&
    [ "$found" = "$ubin/ck-basal" ]; then
    echo "ok - ck setup: prints the line for bash's ~/.bashrc, and after it an interactive bash finds ck-basal in ~/.local/bin [guard ck-setup-path-line]"
else
    echo "not ok - ck setup: PATH line '$line' (found '${found:-}') in: $(one_line "$out") [guard ck-setup-path-line]"
fi
for shell_case in "/usr/bin/zsh|echo 'export PATH=\"$ubin:\$PATH\"' >> ~/.zshrc" "/usr/bin/fish|fish_add_path $ubin" \
    "/bin/dash|echo 'export PATH=\"$ubin:\$PATH\"' >> ~/.profile"; do
    again=$(SHELL=${shell_case%%|*} "$NEW/ck" setup --home "$h1" 2>&1)
    line=$(printf '%s\n' "$again" | sed -n '/is not on your PATH; to add it, run:/{n;s/^    //;p;}')
    if [ "$line" = "${shell_case#*|}" ]; then
        echo "ok - ck setup: with SHELL=${shell_case%%|*} the PATH line is: $line"
    else
        echo "not ok - ck setup: with SHELL=${shell_case%%|*} the PATH line is '$line', want '${shell_case#*|}'"
    fi
done
out=$("$NEW/ck" setup --prefix relative/dir 2>&1)
rc=$?
if [ $rc = 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ]; then
    echo "ok - ck setup: a relative --prefix is a usage error, one line ($out)"
else
    echo "not ok - ck setup: --prefix relative/dir: exit $rc: $(one_line "$out")"
fi

# --- the old build, a store with runs, journal and kv ----------------------------------
p=$scratch/prefix
pbin=$p/bin
h=$scratch/data
if out=$("$NEW/ck" setup --from "$OLD" --prefix "$p" --home "$h" 2>&1) &&
    [ "$(store_version "$h")" = 3 ] && cmp -s "$OLD/ck-basal" "$pbin/ck-basal"; then
    echo "ok - ck: the previous build installed in a scratch prefix, its store at schema 3"
else
    echo "not ok - ck: installing the previous build: $(one_line "$out")"
    exit 1
fi
demo_install "$pbin" "$h" >/dev/null 2>&1
r1=$(demo_run "$pbin" "$h")
r2=$(demo_run "$pbin" "$h")
runs_before=$("$pbin/ck-basal" --home "$h" runs 2>&1)
journal_before=$("$pbin/ck-basal" --home "$h" journal 2 2>&1)
if [ "$r1/$r2" = 1/2 ] && [ "$(printf '%s\n' "$runs_before" | grep -c succeeded)" = 2 ] &&
    printf '%s' "$journal_before" | grep -q kv.set; then
    echo "ok - ck: the old build made 2 runs, their journal and a kv counter (2)"
else
    echo "not ok - ck: the old build's runs: $r1/$r2: $(one_line "$runs_before")"
fi

# --- an upgrade while a serve runs -----------------------------------------------------
# start_serve BIN: a serve on $h, waited for until its "ready" line (a pipe, no sleep).
start_serve() {
    coproc SERVE { exec "$1/ck-basal" --home "$h" serve 2>&1; }
    # shellcheck disable=SC2153 # SERVE_PID is set by coproc
    serve_pid=$SERVE_PID
    # A descriptor of our own: bash drops SERVE[] when the coprocess ends.
    exec {serve_out}<&"${SERVE[0]}"
    local line
    while IFS= read -r -t 60 -u "$serve_out" line; do
        case "$line" in *event=ready*) return 0 ;; esac
    done
    return 1
}
# wait_serve_gone: the serve's pipe reaches its end when it exits.
wait_serve_gone() {
    local rest
    rest=$(timeout 120 cat <&"$serve_out")
    exec {serve_out}<&-
    wait "$serve_pid" 2>/dev/null
    serve_pid=""
    printf '%s' "$rest"
}
stub=$scratch/stub
mkdir -p "$stub"
# systemctl as a user manager would answer: MainPID from $STUB_MAINPID, every call logged.
cat >"$stub/systemctl" <<'STUB'
#!/bin/sh
echo "$*" >>"$STUB_LOG"
case "$*" in
*show*MainPID*) echo "${STUB_MAINPID:-0}" ;;
esac
exit 0
STUB
chmod +x "$stub/systemctl"
export STUB_LOG=$scratch/systemctl.log
: >"$STUB_LOG"

if start_serve "$pbin"; then
    echo "ok - ck: the old build's serve runs on the data home (pid $serve_pid)"
else
    echo "not ok - ck: the old serve did not become ready"
fi
before=$(fingerprint "$pbin")
out=$("$NEW/ck" upgrade --from "$NEW" --prefix "$p" --home "$h" 2>&1)
rc=$?
if [ $rc = 1 ] && printf '%s' "$out" | grep -q "a serve runs on $h (pid $serve_pid): refused" &&
    [ "$(fingerprint "$pbin")" = "$before" ] && [ "$(store_version "$h")" = 3 ] &&
    [ -z "$(find "$h" -name 'basal.db.pre-upgrade-*')" ] && kill -0 "$serve_pid"; then
    echo "ok - ck upgrade: refused while a serve runs, without --stop; binaries, store and serve untouched [guard upgrade-refuses-running-serve]"
else
    echo "not ok - ck upgrade: with a serve running and no --stop: exit $rc: $(one_line "$out") [guard upgrade-refuses-running-serve]"
fi

out=$(PATH=$stub:$PATH STUB_MAINPID=0 "$NEW/ck" upgrade --from "$NEW" --prefix "$p" --home "$h" --stop 2>&1)
rc=$?
serve_tail=$(wait_serve_gone)
if [ $rc = 0 ] && printf '%s' "$out" | grep -q 'by SIGTERM (its build has no serve.stop)' &&
    printf '%s' "$serve_tail" | grep -q 'event=stopped' &&
    printf '%s' "$out" | grep -q 'the serve stays stopped (systemd did not run it)' &&
    ! grep -q start "$STUB_LOG"; then
    echo "ok - ck upgrade --stop: stopped the old serve (SIGTERM: its build has no serve.stop), upgraded, did not start it again (no systemd unit ran it)"
else
    echo "not ok - ck upgrade --stop: exit $rc: $(one_line "$out" 600) / serve: $(one_line "$serve_tail")"
fi
bad=""
for b in ck ck-basal ck-basal-worker; do cmp -s "$NEW/$b" "$pbin/$b" || bad="$bad $b"; done
if [ -z "$bad" ] && [ "$(store_version "$h")" = "$schema" ]; then
    echo "ok - ck upgrade: the new binaries are installed and the store migrated to schema $schema"
else
    echo "not ok - ck upgrade: not the new bytes:$bad; store at $(store_version "$h")"
fi

# The snapshot, named with the exact restore command.
snap=$(printf '%s\n' "$out" | sed -n 's/^    \(\/.*basal\.db\.pre-upgrade-v3-[0-9TZ]*\) (0600.*/\1/p')
restore=$(printf '%s\n' "$out" | grep -A1 '^  to restore it' | sed -n '2s/^    //p')
if [ -n "$snap" ] && [ -f "$snap" ] && [ "$(stat -c %a "$snap")" = 600 ] &&
    [ "$(sqlite3 "$snap" 'PRAGMA user_version')" = 3 ] &&
    [ "$(sqlite3 "$snap" 'SELECT count(*) FROM runs')" = 2 ] && [ -n "$restore" ]; then
    echo "ok - ck upgrade: snapshot $(basename "$snap") before the migration: 0600, schema 3, both runs [guard upgrade-snapshots-store]"
else
    echo "not ok - ck upgrade: no usable snapshot ('$snap') or restore command in: $(one_line "$out" 600) [guard upgrade-snapshots-store]"
fi

runs_after=$("$pbin/ck-basal" --home "$h" runs 2>&1)
journal_after=$("$pbin/ck-basal" --home "$h" journal 2 2>&1)
r3=$(demo_run "$pbin" "$h")
if [ "$runs_after" = "$runs_before" ] && [ "$journal_after" = "$journal_before" ] && [ "$r3" = 3 ]; then
    echo "ok - ck upgrade: runs and journal read the same from the new build, and the next run counts on from kv (3)"
else
    echo "not ok - ck upgrade: after the upgrade: runs equal? $([ "$runs_after" = "$runs_before" ] && echo yes || echo no), journal equal? $([ "$journal_after" = "$journal_before" ] && echo yes || echo no), kv count $r3"
fi

# The restore command, as printed, on a copy of the data home; the old build reads it.
copy=$scratch/restored
cp -a "$h" "$copy"
restore_copy=${restore//$h/$copy}
if [ -n "$restore" ] && (eval "$restore_copy") 2>/dev/null && [ "$(store_version "$copy")" = 3 ] &&
    [ "$("$OLD/ck-basal" --home "$copy" runs 2>&1)" = "$runs_before" ]; then
    echo "ok - ck upgrade: the printed restore command gives back the schema-3 store, and the old build lists its runs"
else
    echo "not ok - ck upgrade: restoring with '$restore_copy' failed or the old build reads other runs"
fi

# --- a downgrade -----------------------------------------------------------------------
before=$(fingerprint "$pbin")
db_before=$(sha256sum "$h/basal.db")
out=$("$NEW/ck" upgrade --from "$OLD" --prefix "$p" --home "$h" 2>&1)
rc=$?
if [ $rc = 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && printf '%s' "$out" | grep -q 'a downgrade, refused' &&
    [ "$(fingerprint "$pbin")" = "$before" ] && [ "$(sha256sum "$h/basal.db")" = "$db_before" ]; then
    echo "ok - ck upgrade: the previous build over this one is a downgrade: refused in one line, binaries and store unchanged [guard upgrade-refuses-downgrade]"
else
    echo "not ok - ck upgrade: --from the previous build: exit $rc: $(one_line "$out") [guard upgrade-refuses-downgrade]"
fi
lower=$scratch/lower
mkdir -p "$lower"
cp "$NEW/ck-basal-worker" "$lower/"
printf '#!/bin/sh\necho %s\n' "'{\"program\":\"ck-basal\",\"version\":\"0.0.9\",\"git\":\"000000000000\",\"store_schema\":9}'" >"$lower/ck-basal"
chmod +x "$lower/ck-basal"
out=$("$NEW/ck" upgrade --from "$lower" --prefix "$p" --home "$h" 2>&1)
rc=$?
if [ $rc = 1 ] && printf '%s' "$out" | grep -q '0.0.9 .* is older than the installed 0.1.0' &&
    [ "$(fingerprint "$pbin")" = "$before" ]; then
    echo "ok - ck upgrade: a build of a lower VERSION (0.0.9, even with a higher schema) is refused"
else
    echo "not ok - ck upgrade: a lower VERSION: exit $rc: $(one_line "$out")"
fi
# A store newer than the new build knows: the old build installed over a store a
# later build left at schema $newer (user_version set by hand). Refused whatever the
# binaries' order [guard upgrade-refuses-newer-store].
p5=$scratch/prefix5
h5=$scratch/data5
if "$NEW/ck" setup --from "$OLD" --prefix "$p5" --home "$h5" >/dev/null 2>&1 &&
    sqlite3 "$h5/basal.db" "PRAGMA user_version = $newer"; then
    before=$(fingerprint "$p5/bin")
    out=$("$NEW/ck" upgrade --reinstall --from "$NEW" --prefix "$p5" --home "$h5" 2>&1)
    rc=$?
    if [ $rc = 1 ] && printf '%s' "$out" | grep -q "is at schema $newer, newer than the new build knows ($schema): refused" &&
        [ "$(fingerprint "$p5/bin")" = "$before" ] && [ "$(store_version "$h5")" = "$newer" ] &&
        [ -z "$(find "$h5" -name 'basal.db.pre-upgrade-*')" ]; then
        echo "ok - ck upgrade: a store at schema $newer with a schema-$schema build is refused even with --reinstall, nothing changed [guard upgrade-refuses-newer-store]"
    else
        echo "not ok - ck upgrade: a store newer than the new build: exit $rc: $(one_line "$out") [guard upgrade-refuses-newer-store]"
    fi
else
    echo "not ok - ck: could not prepare a store at schema $newer"
fi

out=$("$NEW/ck" upgrade --from "$NEW" --prefix "$p" --home "$h" 2>&1)
rc=$?
if [ $rc = 0 ] && printf '%s' "$out" | grep -q '^ck upgrade: nothing to do'; then
    echo "ok - ck upgrade: the installed build again is nothing to do, exit 0"
else
    echo "not ok - ck upgrade: the same build: exit $rc: $(one_line "$out")"
fi

# --- --stop through the ops socket, under a (stub) systemd unit ------------------------
if start_serve "$pbin"; then
    # serve.stop checks its request like every ops command: an argument is exit 2 and
    # the serve keeps running.
    reply=$(python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"{\"cmd\":\"serve.stop\",\"args\":{\"now\":true}}\n")
print(s.makefile().readline().strip())' "$h/ops.sock" 2>&1)
    if [ "$reply" = '{"ok":false,"exit":2,"error":"unexpected argument"}' ] &&
        kill -0 "$serve_pid"; then
        echo "ok - serve.stop with an argument: exit 2, and the serve runs on"
    else
        echo "not ok - serve.stop with an argument: '$reply'"
    fi
    : >"$STUB_LOG"
    out=$(PATH=$stub:$PATH STUB_MAINPID=$serve_pid "$NEW/ck" upgrade --reinstall --from "$NEW" \
        --prefix "$p" --home "$h" --stop 2>&1)
    rc=$?
    serve_tail=$(wait_serve_gone)
    if [ $rc = 0 ] && printf '%s' "$out" | grep -q 'through its ops socket (serve.stop)' &&
        printf '%s' "$serve_tail" | grep -q 'event=stopped' &&
        grep -qx -- '--user start ck-basal.service' "$STUB_LOG" &&
        printf '%s' "$out" | grep -q 'started ck-basal.service again'; then
        echo "ok - ck upgrade --stop: a serve of this build stops through serve.stop; systemd's unit ran it, so ck starts the unit again [guard upgrade-restarts-systemd-unit]"
    else
        echo "not ok - ck upgrade --stop under the unit: exit $rc: $(one_line "$out" 500); systemctl calls: $(one_line "$(cat "$STUB_LOG")") [guard upgrade-restarts-systemd-unit]"
    fi
else
    echo "not ok - ck: this build's serve did not become ready"
fi

# --- --stop on a serve that is already stopping ----------------------------------------
# A stopping serve answers every request "serve is stopping" (docs/ops-protocol.md); ck
# upgrade --stop takes that for the stop it asks for and waits for the lock. A run held
# by the test module (until this script closes the FIFO) keeps the serve in its grace,
# so ck asks while it is stopping. Every wait reads a pipe: no sleep.
fifo=$scratch/hold.fifo
mkfifo "$fifo"
exec {hold_fd}<>"$fifo"
printf '{"modules": {"hold": {"program": "%s", "args": ["--log", "%s"], "timeout_ms": 120000, "ops": {"hold_query": {"kind": "query"}}}}}\n' \
    "$repo/build/test/tools/test_module" "$scratch/hold.log" >"$h/modules.json"
chmod 600 "$h/modules.json"
mkdir -p "$work/hold"
printf '{"format":1,"id":"hold","version":1,"purpose":"holds the serve in its grace","trigger":{"manual":true},"limits":{"cpu_ms":10000},"ops":[{"module":"hold","op":"hold_query"}]}\n' \
    >"$work/hold/manifest.json"
printf "await ops.call('hold', 'hold_query', {fifo: '%s'});\nreturn 1;\n" "$fifo" >"$work/hold/flow.js"
installed=$("$pbin/ck-basal" --home "$h" --json flow install "$work/hold" 2>&1)
hash=$(printf '%s' "$installed" | sed -n 's/.*"code_hash":"\([0-9a-f]*\)".*/\1/p')
held=""
if [ -n "$hash" ] && "$pbin/ck-basal" --home "$h" flow approve hold --version 1 --code-hash "$hash" >/dev/null &&
    start_serve "$pbin" && "$pbin/ck-basal" --home "$h" run hold --detach >/dev/null &&
    IFS= read -r -t 60 -u "$hold_fd" held && kill -TERM "$serve_pid"; then
    while IFS= read -r -t 60 -u "$serve_out" line; do
        case "$line" in *event=stopping*) break ;; esac
    done
    exec {ck_out}< <(PATH=$stub:$PATH STUB_MAINPID=0 "$NEW/ck" upgrade --reinstall --from "$NEW" \
        --prefix "$p" --home "$h" --stop 2>&1; echo "ck-exit=$?")
    out=""
    while IFS= read -r -t 120 -u "$ck_out" line; do
        out="$out$line "
        case "$line" in *"waiting for it to end"* | ck-exit=*) break ;; esac
    done
    exec {hold_fd}>&- # the held run ends; the serve stops, ck takes the lock
    while IFS= read -r -t 120 -u "$ck_out" line; do out="$out$line "; done
    exec {ck_out}<&-
    serve_tail=$(wait_serve_gone)
    if printf '%s' "$out" | grep -q '(it was already stopping)' &&
        printf '%s' "$out" | grep -q 'ck-exit=0' && printf '%s' "$serve_tail" | grep -q 'event=stopped'; then
        echo "ok - ck upgrade --stop on a serve already stopping: its 'serve is stopping' is the stop ck asked for; ck waits for it and upgrades"
    else
        echo "not ok - ck upgrade --stop on a stopping serve: $(one_line "$out" 500); serve: $(one_line "$serve_tail")"
    fi
else
    echo "not ok - ck: a serve held in its grace for the stopping check: held '$held', install $(one_line "$installed")"
    [ -n "${serve_pid:-}" ] && kill "$serve_pid" 2>/dev/null
fi
