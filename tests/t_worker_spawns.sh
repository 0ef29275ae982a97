#!/usr/bin/env bash
# A one-shot command starts exactly the workers it uses (issue 32): every execve of
# ck-basal-worker under the command is counted from the outside (strace -f), for the
# release and the test build:
#   exec of one script            1 (the worker that runs it; no spare)
#   exec --repeat 3               1 (the three runs share the flow's one worker)
#   exec of two scripts           1 (both are bound to the one flow id "exec")
#   run of an approved flow       1 (the run's worker)
#   codemode run, one-tool catalog 2 (the compile check's single-use worker, then the run's)
# [guard: cmd_exec.c's cfg.spares = 0: with the default 2 spares, exec of one script
# starts 2 workers, --repeat 3 and two scripts 3 (checked red)]. The control: the count sees a worker that
# ck-basal worker-check starts (1), so a count of 0 could not pass for a success.
set -u
cd "$(dirname "$0")/.." || exit 2
scratch=$(mktemp -d "${TMPDIR:-/tmp}/basal-spawns.XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT
chmod 700 "$scratch"

if ! command -v strace >/dev/null; then
    echo "not ok - spawns: strace is not installed (scripts/install-deps.sh --test installs it)"
    exit 0
fi

echo 'let s = 0; for (let i = 0; i < 1000; i++) s += i; return s;' >"$scratch/w1.js"
echo 'return 2;' >"$scratch/two.js"

# workers BIN LABEL WANT CMD...: runs CMD under strace and checks it exited 0 and
# executed ck-basal-worker exactly WANT times
workers() {
    local bin=$1 label=$2 want=$3
    shift 3
    local trace=$scratch/trace out
    rm -f "$trace"
    out=$(strace -f -qq -e trace=execve -e signal=none -o "$trace" "$@" 2>&1)
    local rc=$?
    local got
    got=$(grep -c 'execve("[^"]*/ck-basal-worker", .*= 0$' "$trace" 2>/dev/null)
    if [ "$rc" -eq 0 ] && [ "$got" = "$want" ]; then
        echo "ok - spawns: $bin: $label starts $want worker(s)"
    else
        echo "not ok - spawns: $bin: $label: exit $rc, $got worker(s) started, want $want: $(printf '%s' "$out" | tail -2 | tr '\n' ' ')"
    fi
}

for bin in build/bin build/test/bin; do
    cb=$bin/ck-basal
    if [ ! -x "$cb" ]; then
        echo "not ok - spawns: $cb is missing (make test-build)"
        continue
    fi
    home=$scratch/home-${bin//\//-}
    "$cb" --home "$home" setup >/dev/null 2>&1 || echo "not ok - spawns: $bin: setup failed"
    workers "$bin" "worker-check (the control: the count sees a worker)" 1 "$cb" --home "$home" worker-check
    workers "$bin" "exec of one script" 1 "$cb" --home "$home" exec "$scratch/w1.js"
    workers "$bin" "exec --repeat 3" 1 "$cb" --home "$home" exec "$scratch/w1.js" --repeat 3
    workers "$bin" "exec of two scripts" 1 "$cb" --home "$home" exec "$scratch/w1.js" "$scratch/two.js"

    # an approved flow
    flow=$scratch/flow-${bin//\//-}
    mkdir -p "$flow"
    cp "$scratch/w1.js" "$flow/flow.js"
    cat >"$flow/manifest.json" <<'EOF'
{"format": 1, "id": "w1", "version": 1, "purpose": "Sum the numbers below 1000",
 "trigger": {"manual": true}}
EOF
    approve=$("$cb" --home "$home" flow install "$flow" 2>&1 | sed -n 's/^approve with: ck-basal //p')
    # shellcheck disable=SC2086 # the printed command's words
    if [ -n "$approve" ] && "$cb" --home "$home" $approve >/dev/null 2>&1; then
        workers "$bin" "run of an approved flow" 1 "$cb" --home "$home" run w1
    else
        echo "not ok - spawns: $bin: the flow w1 could not be installed and approved"
    fi

    # a one-tool catalog (the script calls no tool: no module program starts)
    cat >"$home/modules.json" <<'EOF'
{"modules": {"notes": {"program": "/bin/true", "ops": {"echo": {"kind": "query"}}}}}
EOF
    cat >"$home/tools.json" <<'EOF'
{"tools": {"echo_note": {"description": "Echo a note back.", "module": "notes", "op": "echo",
 "class": "query", "input": {"type": "object", "properties": {"text": {"type": "string"}}}}}}
EOF
    workers "$bin" "codemode run (compile check, then the run)" 2 "$cb" --home "$home" codemode run "$scratch/w1.js"
done
