#!/usr/bin/env bash
# make install into a DESTDIR with PREFIX=/usr: both release binaries side by side in
# usr/bin (0755), the man pages, the systemd user unit with ExecStart at /usr/bin and
# the bash completion (0644). From the installed tree the parent starts the worker that
# sits beside it [guard install-worker-beside-parent] (with that worker moved away,
# worker-check refuses) and runs the demo flow end to end (setup, flow install,
# approve, run). make uninstall removes exactly what install wrote: no file of ours is
# left, a stranger's file in the same directories stays [guard uninstall-exact].
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib/harness.sh
scratch_dir install
dest=$scratch/dest
bin=$dest/usr/bin

for b in build/bin/ck build/bin/ck-basal build/bin/ck-basal-worker; do
    [ -x "$b" ] || { echo "not ok - install: $b is missing (make)"; exit 1; }
done

# A file that is not ours, in a directory install also writes to.
mkdir -p "$bin"
echo stranger >"$bin/someone-else"

if make -s install DESTDIR="$dest" PREFIX=/usr >"$scratch/install.log" 2>&1; then
    echo "ok - install: make install DESTDIR=... PREFIX=/usr succeeded"
else
    echo "not ok - install: make install failed: $(tr '\n' ' ' <"$scratch/install.log" | cut -c1-300)"
    exit 1
fi

# expect_file PATH MODE
expect_file() {
    local mode
    if [ ! -f "$dest/$1" ]; then
        echo "not ok - install: /$1 was not installed"
        return
    fi
    mode=$(stat -c %a "$dest/$1")
    if [ "$mode" = "$2" ]; then
        echo "ok - install: /$1 installed, mode $2"
    else
        echo "not ok - install: /$1 has mode $mode, not $2"
    fi
}
expect_file usr/bin/ck-basal 755
expect_file usr/bin/ck 755
expect_file usr/share/man/man1/ck.1 644
expect_file usr/share/bash-completion/completions/ck 644
expect_file usr/bin/ck-basal-worker 755
expect_file usr/share/man/man1/ck-basal.1 644
expect_file usr/share/man/man8/ck-basal-worker.8 644
expect_file usr/lib/systemd/user/ck-basal.service 644
expect_file usr/share/bash-completion/completions/ck-basal 644

for b in ck ck-basal ck-basal-worker; do
    if cmp -s "build/bin/$b" "$bin/$b"; then
        echo "ok - install: /usr/bin/$b is the release build"
    else
        echo "not ok - install: /usr/bin/$b differs from build/bin/$b"
    fi
done

unit=$dest/usr/lib/systemd/user/ck-basal.service
if [ "$(grep '^ExecStart=' "$unit")" = "ExecStart=/usr/bin/ck-basal serve" ] &&
    diff <(grep -v '^ExecStart=' contrib/systemd/ck-basal.service) <(grep -v '^ExecStart=' "$unit") >/dev/null; then
    echo "ok - install: the unit's ExecStart is /usr/bin/ck-basal serve, the rest as in contrib/"
else
    echo "not ok - install: the installed unit's ExecStart is '$(grep '^ExecStart=' "$unit")' or other lines changed"
fi

completion=$dest/usr/share/bash-completion/completions/ck-basal
reply=$(bash -c 'source "$1"; COMP_WORDS=(ck-basal --home /x serve --sp); COMP_CWORD=4; _ck_basal; echo "${COMPREPLY[*]}"' _ "$completion" 2>&1)
if [ "$reply" = "--spares" ]; then
    echo "ok - install: the bash completion completes 'ck-basal --home /x serve --sp' to --spares"
else
    echo "not ok - install: the bash completion offered '$reply' for 'serve --sp'"
fi

completion=$dest/usr/share/bash-completion/completions/ck
reply=$(bash -c 'source "$1"; COMP_WORDS=(ck upgrade --st); COMP_CWORD=2; _ck; echo "${COMPREPLY[*]}"' _ "$completion" 2>&1)
if [ "$reply" = "--stop" ]; then
    echo "ok - install: the bash completion of ck completes 'ck upgrade --st' to --stop"
else
    echo "not ok - install: the ck completion offered '$reply' for 'upgrade --st'"
fi

# From the installed tree. The build tree's binaries are not on any path it uses: the
# parent finds its worker in its own directory.
if out=$("$bin/ck-basal" worker-check 2>&1); then
    echo "ok - install: the installed ck-basal worker-check accepts the installed worker [guard install-worker-beside-parent]"
else
    echo "not ok - install: the installed worker-check failed: $(printf '%s' "$out" | tail -3 | tr '\n' ' ' | cut -c1-300)"
fi
if ! mv "$bin/ck-basal-worker" "$scratch/worker-away" 2>/dev/null; then
    echo "not ok - install: no installed worker to move away"
elif out=$("$bin/ck-basal" worker-check 2>&1); then
    echo "not ok - install: worker-check succeeded with no worker beside the installed parent"
else
    echo "ok - install: with the worker moved away from it, the installed parent refuses ($(printf '%s' "$out" | tail -1 | cut -c1-100))"
fi
[ -f "$scratch/worker-away" ] && mv "$scratch/worker-away" "$bin/ck-basal-worker"

# The demo flow (scripts/demo.sh's steps) in a scratch data home.
work=$scratch/work
home=$work/home
mkdir -p "$work/notes" "$work/out" "$work/flow"
printf 'buy milk\ncall the plumber\n' >"$work/notes/monday.txt"
printf 'the build is green again\n' >"$work/notes/tuesday.txt"
sed -e "s|@NOTES@|$work/notes|" -e "s|@OUT@|$work/out|" examples/demo-flow/manifest.json.in \
    >"$work/flow/manifest.json"
cp examples/demo-flow/flow.js "$work/flow/flow.js"
basal() { "$bin/ck-basal" --home "$home" "$@"; }
demo() {
    basal setup >/dev/null || { echo "setup failed"; return 1; }
    local installed hash trigger
    installed=$(basal --json flow install "$work/flow") || { echo "flow install failed"; return 1; }
    hash=$(printf '%s' "$installed" | sed -n 's/.*"code_hash":"\([0-9a-f]*\)".*/\1/p')
    [ -n "$hash" ] || { echo "no code hash in: $installed"; return 1; }
    basal flow approve notes-summary --version 1 --code-hash "$hash" >/dev/null ||
        { echo "approve failed"; return 1; }
    trigger="{\"notes\":\"$work/notes\",\"out\":\"$work/out\"}"
    basal --json run notes-summary --trigger "$trigger" || { echo "run failed"; return 1; }
}
if out=$(demo 2>&1); then
    if printf '%s' "$out" | grep -q '"state":"succeeded"' && [ -s "$work/out/summary.json" ] &&
        [ -s "$home/sinks/summaries.jsonl" ]; then
        echo "ok - install: the demo flow ran end to end from the installed tree (setup, install, approve, run: succeeded, summary written)"
    else
        echo "not ok - install: the demo run did not succeed or wrote nothing: $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-300)"
    fi
else
    echo "not ok - install: the demo flow from the installed tree: $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-300)"
fi

if make -s uninstall DESTDIR="$dest" PREFIX=/usr >"$scratch/uninstall.log" 2>&1; then
    echo "ok - install: make uninstall succeeded"
else
    echo "not ok - install: make uninstall failed: $(tr '\n' ' ' <"$scratch/uninstall.log" | cut -c1-300)"
fi
left=$(cd "$dest" && find . ! -type d ! -path ./usr/bin/someone-else | sed 's|^\./|/|')
if [ -z "$left" ]; then
    echo "ok - install: make uninstall left no file of ours behind [guard uninstall-exact]"
else
    echo "not ok - install: make uninstall left: $(printf '%s' "$left" | tr '\n' ' ' | cut -c1-300) [guard uninstall-exact]"
fi
if [ "$(cat "$bin/someone-else" 2>/dev/null)" = stranger ]; then
    echo "ok - install: make uninstall left a file that is not ours alone"
else
    echo "not ok - install: make uninstall removed /usr/bin/someone-else, which it did not install"
fi
