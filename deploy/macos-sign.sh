#!/usr/bin/env bash
# Signs ck-basal and ck-basal-worker for macOS (sandbox.md, "macOS": hardened runtime):
# ad hoc (-s -), with the hardened runtime (-o runtime), a plain identifier and no
# entitlements at all (so never get-task-allow: no debugger can attach to the worker),
# then verifies what was signed and refuses (exit 1, one line) unless each binary is:
#   - valid under `codesign --verify --strict`;
#   - signed ad hoc with the runtime flag and the identifier asked for;
#   - without entitlements (`codesign -d --entitlements -` prints nothing).
#
#   deploy/macos-sign.sh [BINDIR [worker]]     (default build/bin, both binaries)
#
# With "worker", only ck-basal-worker is signed: `make macos` builds the worker alone
# (build/macos/bin; docs/platforms.md, "macOS": the parent is not ported yet).
#
# Runs on macOS only (codesign is Apple's); .github/workflows/macos.yml runs it.
# tests/t_macos_sign.sh drives it on Linux against a recording stand-in for codesign.
set -euo pipefail

bindir=${1:-build/bin}
which=${2:-both}
CODESIGN=${CODESIGN:-codesign}

fail() {
    echo "macos-sign: $*" >&2
    exit 1
}

case "$which" in
both | worker) ;;
*) fail "usage: deploy/macos-sign.sh [BINDIR [worker]]" ;;
esac
command -v "$CODESIGN" >/dev/null 2>&1 || fail "codesign not found (this script runs on macOS)"

# sign_one FILE IDENTIFIER
sign_one() {
    local file=$1 identifier=$2 details entitlements
    [ -f "$file" ] || fail "$file: no such file (build first: make)"
    # --force replaces any earlier signature; no --entitlements option: none are given.
    "$CODESIGN" --force --sign - --options runtime --identifier "$identifier" --timestamp=none "$file" ||
        fail "$file: codesign could not sign it"
    "$CODESIGN" --verify --strict --verbose=2 "$file" || fail "$file: codesign --verify --strict refuses it"
    details=$("$CODESIGN" -d --verbose=2 "$file" 2>&1) || fail "$file: codesign -d failed"
    grep -q "^Identifier=$identifier\$" <<<"$details" || fail "$file: identifier is not $identifier"
    grep -qE '^CodeDirectory .*flags=0x[0-9a-f]+\([^)]*adhoc[^)]*\)' <<<"$details" ||
        fail "$file: not signed ad hoc"
    grep -qE '^CodeDirectory .*flags=0x[0-9a-f]+\([^)]*runtime[^)]*\)' <<<"$details" ||
        fail "$file: no hardened runtime flag"
    # The entitlements go to stdout; codesign's "Executable=" line goes to stderr.
    entitlements=$("$CODESIGN" -d --entitlements - "$file" 2>/dev/null) ||
        fail "$file: codesign -d --entitlements failed"
    if grep -qi 'get-task-allow' <<<"$entitlements"; then
        fail "$file: has get-task-allow"
    fi
    [ -z "${entitlements//[[:space:]]/}" ] || fail "$file: has entitlements: $(head -c 200 <<<"$entitlements" | tr '\n' ' ')"
    echo "macos-sign: $file: ad hoc, hardened runtime, identifier $identifier, no entitlements"
}

sign_one "$bindir/ck-basal-worker" cortexkit.basal.worker
[ "$which" = worker ] || sign_one "$bindir/ck-basal" cortexkit.basal
