#!/usr/bin/env bash
# The Windows worker and parent under Wine (issue 27; docs/platforms.md "Windows").
# Builds both pairs (make windows windows-test-build: test-build already made them),
# lints the Windows sources (make windows-lint), then, in a private WINEPREFIX
# made for this run in a temp dir (no display, WINEDEBUG=-all):
#   - both release .exe are PE32+ with the hardening mingw links, the worker GUI
#     subsystem, the parent console
#   - the release worker started directly (no launcher) refuses: exit 70 and a named
#     token                                        [guard: confine_windows.c's sequence]
#   - the release parent's launcher refuses under Wine with a named reason and no worker
#     runs, for worker-check and for exec          [guard: worker_launch_windows.c's checks]
#   - the release parent beside the test-only worker refuses it (under Wine its
#     launcher already refuses), and the test-only worker's actual Welcome is refused by
#     the release rule
#                                                  [guard: welcome_rules.c, Windows fields]
#   - the test-only pair runs a script end to end and prints its result; a script's
#     error and its CPU budget (GetThreadTimes) come back as outcomes
# Wine missing is a failure, never a skip: scripts/install-deps.sh --test installs it.
set -u
cd "$(dirname "$0")/.." || exit 2

fail_all() { echo "not ok - windows: $1"; exit 1; }
command -v wine >/dev/null 2>&1 || fail_all "wine is installed: missing (scripts/install-deps.sh --test)"
command -v wineboot >/dev/null 2>&1 || fail_all "wineboot is installed: missing"
command -v wineserver >/dev/null 2>&1 || fail_all "wineserver is installed: missing"
command -v x86_64-w64-mingw32-objdump >/dev/null 2>&1 || fail_all "mingw-w64 binutils are installed: missing"
make -s --no-print-directory windows windows-test-build >/tmp/t_windows_build.$$ 2>&1 ||
    { sed 's/^/# /' /tmp/t_windows_build.$$ | tail -20; rm -f /tmp/t_windows_build.$$; fail_all "make windows windows-test-build failed"; }
rm -f /tmp/t_windows_build.$$
if make -s --no-print-directory windows-lint >/tmp/t_windows_lint.$$ 2>&1; then
    echo "ok - windows: the Windows sources lint clean (cppcheck for _WIN32, clang-tidy for the mingw target: make windows-lint)"
else
    echo "not ok - windows: the Windows sources lint clean: $(grep -m1 -E 'error|warning|style' /tmp/t_windows_lint.$$ | cut -c1-300)"
    sed 's/^/# /' /tmp/t_windows_lint.$$ | head -20
    lint_failed=1
fi
rm -f /tmp/t_windows_lint.$$

REL=build/windows/bin
TST=build/windows-test/bin
tmp=$(mktemp -d "${TMPDIR:-/tmp}/t_windows.XXXXXX") || exit 2
export WINEPREFIX="$tmp/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
unset DISPLAY WAYLAND_DISPLAY
# Our prefix's wineserver only (WINEPREFIX names it), then the prefix itself.
trap 'wineserver -k >/dev/null 2>&1; rm -rf "$tmp"' EXIT

failed=${lint_failed:-0}
ok() { echo "ok - $1"; }
bad() { echo "not ok - $1: $2"; failed=1; }

# ---- the binaries themselves (no Wine needed) ----
for exe in "$REL/ck-basal-worker.exe" "$REL/ck-basal.exe"; do
    headers=$(x86_64-w64-mingw32-objdump -p "$exe" 2>&1)
    if grep -q 'file format pei-x86-64' <<<"$headers" && grep -q '^Magic[[:space:]]*020b' <<<"$headers"; then
        ok "windows: $(basename "$exe") is PE32+ (pei-x86-64, optional header magic 0x20b)"
    else
        bad "windows: $(basename "$exe") is PE32+" "$(grep -m2 -E 'file format|^Magic' <<<"$headers")"
    fi
    missing=""
    for flag in HIGH_ENTROPY_VA DYNAMIC_BASE NX_COMPAT; do
        grep -q "$flag" <<<"$headers" || missing="$missing $flag"
    done
    if [ -z "$missing" ]; then
        ok "windows: $(basename "$exe") has ASLR (high entropy, dynamic base) and DEP"
    else
        bad "windows: $(basename "$exe") has ASLR and DEP" "missing$missing"
    fi
done
subsystem() { x86_64-w64-mingw32-objdump -p "$1" | grep -m1 '^Subsystem'; }
case $(subsystem "$REL/ck-basal-worker.exe") in
*"Windows GUI"*) ok "windows: the worker is a GUI-subsystem program (sandbox.md: no console is created for it)" ;;
*) bad "windows: the worker is a GUI-subsystem program" "$(subsystem "$REL/ck-basal-worker.exe")" ;;
esac
case $(subsystem "$REL/ck-basal.exe") in
*"Windows CUI"*) ok "windows: the parent is a console program" ;;
*) bad "windows: the parent is a console program" "$(subsystem "$REL/ck-basal.exe")" ;;
esac

# The test-only paths are compiled out of the release pair, and present in the test
# pair (so the search is not vacuous).
release_hits=$(cat "$REL/ck-basal-worker.exe" "$REL/ck-basal.exe" | grep -a -c -E 'UNCONFINED|--release-rules')
test_hits=$(cat "$TST/ck-basal-worker.exe" "$TST/ck-basal.exe" | grep -a -c -E 'UNCONFINED|--release-rules')
if [ "$release_hits" -eq 0 ] && [ "$test_hits" -gt 0 ]; then
    ok "windows: the release pair holds none of the test-only pair's unconfined paths"
else
    bad "windows: the release pair holds none of the test-only paths" "release $release_hits, test $test_hits"
fi

# ---- a private prefix; wineboot returns when the prefix is made, wineserver -w when
# everything it started has finished (no sleep) ----
started=$SECONDS
if wineboot --init >"$tmp/wineboot.log" 2>&1 && wineserver -w; then
    ok "windows: a private WINEPREFIX is initialised ($((SECONDS - started)) s)"
else
    sed 's/^/# /' "$tmp/wineboot.log" | tail -10
    fail_all "wineboot --init failed"
fi

# run NAME EXE ARGS...: stdout to $tmp/NAME.out, stderr to $tmp/NAME.err, status in $rc.
run() {
    local name=$1
    shift
    wine "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" </dev/null
    rc=$?
}
show() { sed 's/^/#   /' "$tmp/$1.out" "$tmp/$1.err" | head -12; }

# ---- the release worker, started directly: it refuses (guard: confine_windows.c) ----
run direct "$REL/ck-basal-worker.exe" --landlock=required
token=$(sed -n 's/^refusing to run unconfined: \([a-z0-9-]*\)$/\1/p' "$tmp/direct.err")
if [ "$rc" -eq 70 ] && [ -n "$token" ] && grep -q "^ck-basal-worker: $token: " "$tmp/direct.err"; then
    ok "windows: the release worker started without the launcher refuses: exit 70, named '$token' [guard confine sequence]"
else
    bad "windows: the release worker started without the launcher refuses with exit 70 and a named reason" "exit $rc"
    show direct
fi
# Its Welcome is never sent: nothing on stdout.
if [ ! -s "$tmp/direct.out" ]; then
    ok "windows: the refusing worker wrote nothing on stdout (no Welcome)"
else
    bad "windows: the refusing worker wrote nothing on stdout" "$(head -c 80 "$tmp/direct.out" | od -c | head -2)"
fi

# ---- the release parent: its launcher refuses under Wine, no worker runs ----
# Its named reasons (worker_launch_windows.h); Wine 8 stores no job limits, so the
# launch stops at check-job, before the AppContainer profile (docs/platforms.md).
launcher_token='(pipes|command-line|environment|job|check-job|appcontainer-profile|restricted-token|attributes|create-process|thread-token|check-primary-token|check-thread-token|check-job-membership|resume)'
run check "$REL/ck-basal.exe" worker-check
if [ "$rc" -eq 1 ] && grep -Eq "^launch        refused: $launcher_token: " "$tmp/check.out" &&
    grep -q 'no worker ran' "$tmp/check.out" && ! grep -q '^welcome' "$tmp/check.out"; then
    ok "windows: the release parent's worker-check refuses with the launcher's named reason ($(sed -n 's/^launch        refused: \([a-z-]*\):.*/\1/p' "$tmp/check.out")) and no worker ran [guard launcher checks]"
else
    bad "windows: the release parent's worker-check refuses with a named reason and no worker ran" "exit $rc"
    show check
fi
printf 'return 6 * 7;\n' >"$tmp/answer.js"
run exec_release "$REL/ck-basal.exe" exec "$(winepath -w "$tmp/answer.js" 2>/dev/null)"
if [ "$rc" -eq 1 ] && grep -q 'no worker ran' "$tmp/exec_release.out" && ! grep -q '^result' "$tmp/exec_release.out"; then
    ok "windows: the release parent's exec runs nothing when the launcher refuses"
else
    bad "windows: the release parent's exec runs nothing when the launcher refuses" "exit $rc"
    show exec_release
fi

# ---- the release parent refuses the test-only worker ----
mixed="$tmp/mixed"
mkdir -p "$mixed"
cp "$REL/ck-basal.exe" "$mixed/ck-basal.exe"
cp "$TST/ck-basal-worker.exe" "$mixed/ck-basal-worker.exe"
run mixed "$mixed/ck-basal.exe" exec "$(winepath -w "$tmp/answer.js" 2>/dev/null)"
if [ "$rc" -eq 1 ] && grep -q '^verdict       refused' "$tmp/mixed.out" && ! grep -q '^result' "$tmp/mixed.out"; then
    ok "windows: the release parent beside the test-only worker refuses it (under Wine at its launcher) and runs nothing"
else
    bad "windows: the release parent beside the test-only worker refuses it" "exit $rc"
    show mixed
fi
# The rule a release parent applies, on the test-only worker's actual Welcome (the
# release launcher starts no worker under Wine, so the test-only launcher starts it).
run rules "$TST/ck-basal.exe" worker-check --release-rules
if [ "$rc" -eq 1 ] && grep -q '^welcome       os windows' "$tmp/rules.out" &&
    grep -q '^verdict       refused: Welcome reports no attested LPAC token' "$tmp/rules.out"; then
    ok "windows: the release rule refuses the test-only worker's Welcome (all five fields false) [guard welcome rules]"
else
    bad "windows: the release rule refuses the test-only worker's Welcome" "exit $rc"
    show rules
fi

# ---- the test-only pair: the engine and protocol end to end on Windows code paths ----
run tcheck "$TST/ck-basal.exe" worker-check
if [ "$rc" -eq 0 ] && grep -q '^verdict       accepted UNCONFINED: test-only build' "$tmp/tcheck.out"; then
    ok "windows: the test-only parent accepts the test-only worker, and says it is unconfined"
else
    bad "windows: the test-only parent accepts the test-only worker" "exit $rc"
    show tcheck
fi
run texec "$TST/ck-basal.exe" exec "$(winepath -w "$tmp/answer.js" 2>/dev/null)"
if [ "$rc" -eq 0 ] && grep -qx 'result        42' "$tmp/texec.out"; then
    ok "windows: the test-only pair runs a script end to end: result 42"
else
    bad "windows: the test-only pair runs a script end to end" "exit $rc"
    show texec
fi
printf 'const o = JSON.parse(%s);\nreturn { sum: o.a.reduce((x, y) => x + y, 0), text: "caf\\u00e9" };\n' \
    "'{\"a\":[1,2,3,4]}'" >"$tmp/json.js"
run tjson "$TST/ck-basal.exe" exec "$(winepath -w "$tmp/json.js" 2>/dev/null)"
if [ "$rc" -eq 0 ] && grep -qx 'result        {"sum":10,"text":"café"}' "$tmp/tjson.out"; then
    ok "windows: a script's JSON value (UTF-8 included) comes back through the protocol"
else
    bad "windows: a script's JSON value comes back through the protocol" "exit $rc"
    show tjson
fi
printf 'throw new TypeError("no such thing");\n' >"$tmp/throw.js"
run tthrow "$TST/ck-basal.exe" exec "$(winepath -w "$tmp/throw.js" 2>/dev/null)"
if [ "$rc" -eq 1 ] && grep -q '^failed        [a-z_]*: TypeError: no such thing' "$tmp/tthrow.out"; then
    ok "windows: a script's error comes back as a failed outcome"
else
    bad "windows: a script's error comes back as a failed outcome" "exit $rc"
    show tthrow
fi
printf 'for (;;) {}\n' >"$tmp/spin.js"
run tspin "$TST/ck-basal.exe" exec "$(winepath -w "$tmp/spin.js" 2>/dev/null)"
if [ "$rc" -eq 1 ] && grep -q '^failed        budget exhausted (1)' "$tmp/tspin.out"; then
    ok "windows: an endless loop ends at its CPU budget (GetThreadTimes clock): budget exhausted (cpu)"
else
    bad "windows: an endless loop ends at its CPU budget" "exit $rc"
    show tspin
fi

exit "$failed"
