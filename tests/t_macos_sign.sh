#!/usr/bin/env bash
# deploy/macos-sign.sh on Linux, against a stand-in for Apple's codesign (there is none
# here) that records its arguments and answers as codesign does for a chosen case.
# Proves the script's guards: it signs ad hoc with the hardened runtime, the plain
# identifiers and no --entitlements option, and refuses (exit 1, nothing claimed) a
# binary that fails --verify --strict, lacks the runtime flag, is not ad hoc, has
# another identifier, has get-task-allow or any other entitlement. Each refusal check
# is red if its guard is removed from the script. What the real codesign prints is
# checked on macOS by .github/workflows/macos.yml.
set -u
cd "$(dirname "$0")/.." || exit 2

ok() { echo "ok - $1"; }
notok() { echo "not ok - $1: $2"; }

scratch=$(mktemp -d "${TMPDIR:-/tmp}/basal-macos-sign.XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/bin"
printf 'worker\n' >"$scratch/bin/ck-basal-worker"
printf 'parent\n' >"$scratch/bin/ck-basal"

# The stand-in: FAKE_CASE picks the answer; every call is appended to $scratch/calls.
cat >"$scratch/codesign" <<'STUB'
#!/usr/bin/env bash
echo "$*" >>"$FAKE_CALLS"
file=${*: -1}
case " $* " in
*" --verify "*)
    [ "$FAKE_CASE" = verify-fails ] && { echo "$file: invalid signature" >&2; exit 1; }
    exit 0 ;;
*" --entitlements - "*)
    echo "Executable=$file" >&2
    case "$FAKE_CASE" in
    get-task-allow) printf '<plist><dict><key>com.apple.security.get-task-allow</key><true/></dict></plist>\n' ;;
    entitled) printf '<plist><dict><key>com.apple.security.cs.allow-jit</key><true/></dict></plist>\n' ;;
    esac
    exit 0 ;;
*" -d "*)
    id=cortexkit.basal; case "$file" in *-worker) id=cortexkit.basal.worker ;; esac
    [ "$FAKE_CASE" = other-identifier ] && id=com.example.other
    flags='0x10002(adhoc,runtime)'
    [ "$FAKE_CASE" = no-runtime ] && flags='0x2(adhoc)'
    [ "$FAKE_CASE" = not-adhoc ] && flags='0x10000(runtime)'
    printf 'Executable=%s\nIdentifier=%s\nFormat=Mach-O thin (arm64)\nCodeDirectory v=20500 size=100 flags=%s hashes=1+2 location=embedded\nSignature=adhoc\n' "$file" "$id" "$flags" >&2
    exit 0 ;;
*" --sign "*)
    exit 0 ;;
esac
echo "codesign stand-in: unexpected call: $*" >&2
exit 2
STUB
chmod +x "$scratch/codesign"

# run_case CASE [WHICH]: runs the script, leaves its status in $status, its output in $out.
run_case() {
    : >"$scratch/calls"
    out=$(FAKE_CASE=$1 FAKE_CALLS="$scratch/calls" CODESIGN="$scratch/codesign" \
        bash deploy/macos-sign.sh "$scratch/bin" ${2:+"$2"} 2>&1)
    status=$?
}

run_case good
if [ "$status" -eq 0 ] && [ "$(grep -c 'no entitlements$' <<<"$out")" -eq 2 ]; then
    ok "macos-sign: both binaries signed and verified"
else
    notok "macos-sign: both binaries signed and verified" "exit $status: $(tr '\n' ' ' <<<"$out")"
fi
for pair in "ck-basal-worker cortexkit.basal.worker" "ck-basal cortexkit.basal"; do
    read -r name id <<<"$pair"
    expect="--force --sign - --options runtime --identifier $id --timestamp=none $scratch/bin/$name"
    if grep -qxF -- "$expect" "$scratch/calls"; then
        ok "macos-sign: $name signed ad hoc, hardened runtime, identifier $id"
    else
        notok "macos-sign: $name signed ad hoc, hardened runtime, identifier $id" "calls: $(tr '\n' ';' <"$scratch/calls")"
    fi
    if grep -qxF -- "--verify --strict --verbose=2 $scratch/bin/$name" "$scratch/calls"; then
        ok "macos-sign: $name checked with codesign --verify --strict"
    else
        notok "macos-sign: $name checked with codesign --verify --strict" "calls: $(tr '\n' ';' <"$scratch/calls")"
    fi
done
if grep -E -- '--sign' "$scratch/calls" | grep -qE -- '--entitlements|get-task-allow'; then
    notok "macos-sign: no entitlements are given when signing" "$(grep -- '--sign' "$scratch/calls" | tr '\n' ';')"
else
    ok "macos-sign: no entitlements are given when signing"
fi

for case in verify-fails no-runtime not-adhoc other-identifier get-task-allow entitled; do
    run_case "$case"
    last=$(tail -1 <<<"$out")
    if [ "$status" -eq 1 ] && grep -q '^macos-sign: .*ck-basal-worker: ' <<<"$last" && ! grep -q 'no entitlements$' <<<"$out"; then
        ok "macos-sign: refuses a binary when $case (${last##*/})"
    else
        notok "macos-sign: refuses a binary when $case" "exit $status: $(tr '\n' ' ' <<<"$out")"
    fi
done

# "worker": the worker alone (make macos builds only it), with the same checks.
run_case good worker
if [ "$status" -eq 0 ] && [ "$(grep -c 'no entitlements$' <<<"$out")" -eq 1 ] &&
    grep -qxF -- "--force --sign - --options runtime --identifier cortexkit.basal.worker --timestamp=none $scratch/bin/ck-basal-worker" "$scratch/calls" &&
    ! grep -q "$scratch/bin/ck-basal\$" "$scratch/calls"; then
    ok "macos-sign: worker: only ck-basal-worker is signed and verified"
else
    notok "macos-sign: worker: only ck-basal-worker is signed and verified" "exit $status: $(tr '\n' ' ' <<<"$out")"
fi
run_case get-task-allow worker
if [ "$status" -eq 1 ] && grep -q 'ck-basal-worker: has get-task-allow' <<<"$out"; then
    ok "macos-sign: worker: the worker alone is refused like both"
else
    notok "macos-sign: worker: the worker alone is refused like both" "exit $status: $(tr '\n' ' ' <<<"$out")"
fi
run_case good parent
if [ "$status" -eq 1 ] && grep -q 'usage:' <<<"$out" && [ ! -s "$scratch/calls" ]; then
    ok "macos-sign: an unknown selection is refused before any signing"
else
    notok "macos-sign: an unknown selection is refused before any signing" "exit $status: $(tr '\n' ' ' <<<"$out")"
fi

rm -f "$scratch/bin/ck-basal"
run_case good
if [ "$status" -eq 1 ] && grep -q 'ck-basal: no such file' <<<"$out"; then
    ok "macos-sign: a missing binary is refused"
else
    notok "macos-sign: a missing binary is refused" "exit $status: $(tr '\n' ' ' <<<"$out")"
fi
