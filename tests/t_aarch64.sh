#!/usr/bin/env bash
# The arm64 cross build (make ARCH=aarch64, mk/aarch64.mk; part of make test-build):
# the three release binaries are arm64 ELF with the same hardening as the native ones,
# the worker is a static PIE that links nothing of the parent, and, run under
# qemu-aarch64-static, it answers --version but refuses engine mode (qemu-user runs
# threads of its own, so the single-thread startup check refuses: never a worker that
# runs without its confinement). Running it confined needs an arm64 machine
# (docs/platforms.md); its seccomp filter is checked by t_syscall_table ("aarch64 build").
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib/harness.sh

A64=build/aarch64/bin
READELF=aarch64-linux-gnu-readelf
NM=aarch64-linux-gnu-nm
QEMU=qemu-aarch64-static

need() {
    command -v "$1" >/dev/null 2>&1 || { not_ok "aarch64: $1 is installed" "missing (scripts/install-deps.sh --test)"; exit 1; }
}
need "$READELF"
need "$NM"
need "$QEMU"

for b in ck-basal-worker ck-basal ck; do
    f=$A64/$b
    if [ ! -f "$f" ]; then
        not_ok "aarch64: $f is built" "missing (make aarch64)"
        continue
    fi
    hdr=$($READELF -hW "$f")
    seg=$($READELF -lW "$f")
    dyn=$($READELF -dW "$f")
    if grep -q 'Machine: *AArch64' <<<"$hdr" && grep -q 'Type: *DYN' <<<"$hdr"; then
        ok "aarch64: $b is an arm64 position-independent executable"
    else
        not_ok "aarch64: $b is an arm64 position-independent executable" "$(grep -E 'Machine|Type' <<<"$hdr" | tr -s ' ' | tr '\n' ';')"
    fi
    if grep -q GNU_RELRO <<<"$seg" && grep -q 'BIND_NOW' <<<"$dyn" && grep -q 'GNU_STACK.* RW ' <<<"$seg"; then
        ok "aarch64: $b has full RELRO (BIND_NOW) and a non-executable stack"
    else
        not_ok "aarch64: $b has full RELRO (BIND_NOW) and a non-executable stack" "segments or dynamic flags lack it"
    fi
done

w=$A64/ck-basal-worker
if [ -f "$w" ]; then
    if ! grep -q INTERP <<<"$($READELF -lW "$w")" && ! grep -q NEEDED <<<"$($READELF -dW "$w")"; then
        ok "aarch64: the worker is a static PIE (no interpreter, no shared library)"
    else
        not_ok "aarch64: the worker is a static PIE (no interpreter, no shared library)" "it has an INTERP or NEEDED entry"
    fi
    parent_syms=$($NM "$w" 2>/dev/null | grep -cE ' (sqlite3_|curl_|json_(loads|dumps|object))' || true)
    if [ "$parent_syms" -eq 0 ]; then
        ok "aarch64: the worker links no SQLite, libcurl or jansson"
    else
        not_ok "aarch64: the worker links no SQLite, libcurl or jansson" "$parent_syms symbols of theirs"
    fi
    v=$($QEMU "$w" --version 2>&1)
    if grep -q "^ck-basal-worker $(cat VERSION) " <<<"$v"; then
        ok "aarch64: the worker runs its arm64 code under qemu (--version)"
    else
        not_ok "aarch64: the worker runs its arm64 code under qemu (--version)" "$v"
    fi
    err=$(mktemp) && out=$($QEMU "$w" --landlock=required </dev/null 2>"$err")
    rc=$?
    why=$(cat "$err")
    rm -f "$err"
    if [ "$rc" -eq 70 ] && [ -z "$out" ] && grep -q '^refusing to run unconfined: ' <<<"$why"; then
        ok "aarch64: under qemu-user the worker refuses engine mode with exit 70 and a named reason ($why), nothing on stdout"
    else
        not_ok "aarch64: under qemu-user the worker refuses engine mode with exit 70" "exit $rc, stdout '$out', stderr '$why'"
    fi
fi

p=$A64/ck-basal
if [ -f "$p" ]; then
    v=$($QEMU -L /usr/aarch64-linux-gnu "$p" --version 2>&1)
    if grep -q "^ck-basal $(cat VERSION) " <<<"$v"; then
        ok "aarch64: the parent runs under qemu with the arm64 libraries (--version)"
    else
        not_ok "aarch64: the parent runs under qemu with the arm64 libraries (--version)" "$v"
    fi
fi
