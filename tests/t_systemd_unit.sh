#!/usr/bin/env bash
# contrib/systemd/ck-basal.service, checked by systemd-analyze verify as a user unit
# (the way an operator installs it), with its ExecStart pointed at build/bin/ck-basal
# (verify wants the program to exist): no warning or error about the file. Scratch
# copies with a misspelled key, a bad value and a missing program must each draw one,
# which proves the check would turn red on a real mistake. Then the settings serve
# relies on are there, and none that would stop the worker confining itself.
set -u
cd "$(dirname "$0")/.." || exit 2
unit=contrib/systemd/ck-basal.service
name=ck-basal.service
parent=$PWD/build/bin/ck-basal
. tests/lib/harness.sh
scratch_dir unit
# verify --user needs a runtime directory; a scratch one, not the caller's session.
mkdir -m 0700 "$scratch/runtime" "$scratch/unit"

if ! command -v systemd-analyze >/dev/null; then
    echo "not ok - systemd unit: systemd-analyze is missing (scripts/install-deps.sh --test)"
    exit 1
fi
if [ ! -x "$parent" ]; then
    echo "not ok - systemd unit: $parent is missing (make)"
    exit 1
fi

# verify_unit FILE: systemd-analyze's lines about the unit on stdout; exit status 1 when
# it printed any or failed.
verify_unit() {
    local out status
    out=$(XDG_RUNTIME_DIR="$scratch/runtime" systemd-analyze verify --user --man=no "$1" 2>&1)
    status=$?
    mine=$(printf '%s\n' "$out" | grep -F "$name")
    printf '%s\n' "$out" | grep -vF "$name" | grep -v '^$' | sed 's/^/# other: /'
    [ -n "$mine" ] && printf '%s\n' "$mine"
    [ $status -eq 0 ] && [ -z "$mine" ]
}

# A copy of the unit with ExecStart's program replaced and LINE (if any) appended to
# [Service] (the file's last section is [Install], so the line goes before it).
copy_unit() {
    sed -e "s|^ExecStart=%h/.local/bin/ck-basal |ExecStart=$1 |" \
        -e "/^\[Install\]/i ${2:-#}" "$unit" >"$scratch/unit/$name"
}

if [ "$(grep -c '^ExecStart=%h/.local/bin/ck-basal serve' "$unit")" != 1 ]; then
    echo "not ok - systemd unit: ExecStart is not the one line %h/.local/bin/ck-basal serve"
else
    echo "ok - systemd unit: ExecStart runs %h/.local/bin/ck-basal serve"
fi

copy_unit "$parent"
if out=$(verify_unit "$scratch/unit/$name"); then
    echo "ok - systemd unit: systemd-analyze verify --user prints nothing about it"
    printf '%s\n' "$out" | grep '^# ' || true
else
    echo "not ok - systemd unit: systemd-analyze verify --user: $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-300)"
fi

# expect_red WHAT LINE PROGRAM: the copy must draw a complaint about the unit.
expect_red() {
    copy_unit "$3" "$2"
    if out=$(verify_unit "$scratch/unit/$name"); then
        echo "not ok - systemd unit: verify did not complain about $1"
    else
        echo "ok - systemd unit: verify complains about $1 ($(printf '%s' "$out" | grep -F "$name" | head -1 | cut -c1-100))"
    fi
}
expect_red "a misspelled key" "KillMod=mixed" "$parent"
expect_red "a bad value" "WatchdogSec=soon" "$parent"
expect_red "a program that does not exist" "" "$scratch/nonexistent/ck-basal"

# The effective value of a [Service] key (the last assignment wins).
setting() {
    sed -n '/^\[Service\]/,/^\[/p' "$unit" | grep "^$1=" | tail -1 | cut -d= -f2-
}
expect_setting() {
    local got
    got=$(setting "$1")
    if [ "$got" = "$2" ]; then echo "ok - systemd unit: $1=$2 ($3)"
    else echo "not ok - systemd unit: $1 is '$got', expected '$2' ($3)"; fi
}
expect_setting Type notify "READY=1 after recovery"
expect_setting NotifyAccess main "no worker or module may notify"
expect_setting Restart on-failure "restarted after a crash or a watchdog abort"
expect_setting KillMode mixed "SIGTERM to serve alone, its grace first"
watchdog=$(setting WatchdogSec)
if [ -n "$watchdog" ]; then echo "ok - systemd unit: WatchdogSec=$watchdog is set"
else echo "not ok - systemd unit: no WatchdogSec"; fi
stop=$(setting TimeoutStopSec)
stop_s=$(XDG_RUNTIME_DIR="$scratch/runtime" systemd-analyze timespan "$stop" 2>/dev/null \
         | sed -n 's/^ *μs: *//p')
if [ -n "$stop_s" ] && [ "$stop_s" -gt 30000000 ]; then
    echo "ok - systemd unit: TimeoutStopSec=$stop exceeds serve's 30 s grace"
else
    echo "not ok - systemd unit: TimeoutStopSec '$stop' does not exceed serve's 30 s grace"
fi
# Nothing that would stop the worker confining itself: no system call filter of the
# unit's own (it could lack seccomp or landlock_*), and namespaces the modules need.
if grep -q '^SystemCallFilter=' "$unit"; then
    echo "not ok - systemd unit: SystemCallFilter= is set (it must not refuse seccomp or landlock_*)"
else
    echo "ok - systemd unit: no SystemCallFilter= that could refuse seccomp or landlock_*"
fi
namespaces=$(setting RestrictNamespaces)
if [ -z "$namespaces" ] || { tr " " "\n" <<<"$namespaces" | grep -qx user && tr " " "\n" <<<"$namespaces" | grep -qx pid; }; then
    echo "ok - systemd unit: RestrictNamespaces=$namespaces keeps the modules' user and pid namespaces"
else
    echo "not ok - systemd unit: RestrictNamespaces='$namespaces' refuses the modules' user or pid namespace"
fi
