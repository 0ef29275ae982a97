#!/usr/bin/env bash
# Every command and subcommand of ck-basal and ck answers --help and -h with its own
# usage (arguments, options, an example) on stdout, exit 0, and runs nothing: no data
# home created, nothing stored changed, even after arguments that would act
# [guard cli-help-runs-nothing]. Each command's --help names exactly the options the
# overview (`ck-basal --help`, which t_man_pages keeps equal to the man page) gives it
# [guard help-matches-overview]. The global options work anywhere on the line
# [guard globals-anywhere].
set -u
cd "$(dirname "$0")/.." || exit 2
parent=$PWD/build/bin/ck-basal
ck=$PWD/build/bin/ck
. tests/lib/harness.sh
scratch_dir help
[ -x "$parent" ] && [ -x "$ck" ] || { echo "not ok - help: build/bin/ck-basal or ck missing (make)"; exit 1; }

overview=$("$parent" --help)
usage_lines=$(printf '%s\n' "$overview" | sed -n '/^commands:/,/^options/p' | grep -E '^  [a-z]|^       [|[]')
# Every "COMMAND" and "COMMAND SUBCOMMAND" of the overview (a subcommand: the first word
# after the command, or after "| " at the start of a continuation line, in commands
# that have them).
commands=$(printf '%s\n' "$usage_lines" | grep -E '^  [a-z]' | awk '{print $1}')
with_subs="flow event codemode"
paths=""
for c in $commands; do
    case " $with_subs " in
    *" $c "*)
        subs=$(printf '%s\n' "$usage_lines" | awk -v c="$c" '
            /^  [a-z]/ { inside = ($1 == c); if (inside) { print $2 } ; next }
            inside { print }' | sed -E 's/^ *//' | grep -oE '(^[a-z][a-z-]+|\| [a-z][a-z-]+)' |
            sed -E 's/^\| //' | grep -vE '^(c)$' | sort -u)
        for s in $subs; do paths="$paths $c:$s"; done
        ;;
    *) paths="$paths $c:" ;;
    esac
done
n=$(echo $paths | wc -w)
if [ "$n" -lt 20 ]; then
    echo "not ok - help: read only $n commands and subcommands from the overview (parse broken?): $paths"
fi

none=$scratch/none
for p in $paths; do
    c=${p%%:*} s=${p#*:}
    for flag in --help -h; do
        # The usage even after words that would act (an id, a directory).
        out=$("$parent" --home "$none" $c $s x y "$flag" 2>"$scratch/err")
        rc=$?
        want="usage: ck-basal [--json] [--home DIR] $c${s:+ $s}"
        if [ "$rc" -eq 0 ] && [ "$(printf '%s\n' "$out" | head -1 | cut -c1-${#want})" = "$want" ] &&
            printf '%s\n' "$out" | grep -qx 'example:' && [ ! -s "$scratch/err" ] && [ ! -e "$none" ]; then
            echo "ok - help: '$c${s:+ $s} x y $flag' prints its usage with an example, exit 0, creates nothing [guard cli-help-runs-nothing]"
        else
            echo "not ok - help: '$c${s:+ $s} x y $flag': exit $rc, stderr '$(one_line "$(cat "$scratch/err")")', data home created: $([ -e "$none" ] && echo yes || echo no), out: $(one_line "$out") [guard cli-help-runs-nothing]"
        fi
    done
done

# Each command's options, by its own --help and by the overview's entry, are the same.
for c in $commands; do
    # The usage lines, not the text: a continuation line after "usage:" starts with spaces.
    own=$("$parent" $c --help | awk '/^usage: /{u=1; print; next} u && /^       /{print; next} {u=0}' |
        sed 's/^usage: ck-basal \[--json\] \[--home DIR\]//' | grep -oE -- '--[a-z][a-z-]*' | sort -u | tr '\n' ' ')
    listed=$(printf '%s\n' "$usage_lines" | awk -v c="$c" '/^  [a-z]/ { inside = ($1 == c) } inside' |
        sed -E 's/^  [a-z-]+//; s/  [a-z].*$//' | grep -oE -- '--[a-z][a-z-]*' | sort -u | tr '\n' ' ')
    if [ "$own" = "$listed" ]; then
        echo "ok - help: $c --help and the overview give $c the same options (${own:-none}) [guard help-matches-overview]"
    else
        echo "not ok - help: $c --help has options '$own', the overview '$listed' [guard help-matches-overview]"
    fi
done

# A store with a flow: --help after words that would change it changes nothing.
home=$scratch/home
mkdir -p "$scratch/flow" "$scratch/notes" "$scratch/out"
sed -e "s|@NOTES@|$scratch/notes|" -e "s|@OUT@|$scratch/out|" examples/demo-flow/manifest.json.in >"$scratch/flow/manifest.json"
cp examples/demo-flow/flow.js "$scratch/flow/"
"$parent" --home "$home" setup >/dev/null 2>&1 && "$parent" --home "$home" flow install "$scratch/flow" >/dev/null 2>&1 ||
    echo "not ok - help: could not set up a store"
state() { "$parent" --home "$home" --json flow list; "$parent" --home "$home" --json runs; }
before=$(state)
"$parent" --home "$home" flow disable notes-summary --help >/dev/null 2>&1
"$parent" --home "$home" flow install "$scratch/flow" -h >/dev/null 2>&1
"$parent" --home "$home" run notes-summary --help >/dev/null 2>&1
"$parent" --home "$home" cancel 1 --reason x --help >/dev/null 2>&1
if [ "$(state)" = "$before" ] && [ -n "$before" ]; then
    echo "ok - help: flow disable, flow install, run and cancel with --help change nothing stored [guard cli-help-runs-nothing]"
else
    echo "not ok - help: a command with --help changed the store [guard cli-help-runs-nothing]"
fi

# Global options anywhere: after the command, between its words, at the end.
a=$("$parent" --json --home "$home" flow list) b=$("$parent" flow list --json --home "$home")
c=$("$parent" flow --home "$home" list --json)
if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$c" ]; then
    echo "ok - help: --json and --home after the command and between its words as before it [guard globals-anywhere]"
else
    echo "not ok - help: 'flow list' with the globals moved: '$(one_line "$a" 80)' / '$(one_line "$b" 80)' / '$(one_line "$c" 80)' [guard globals-anywhere]"
fi
a=$("$parent" --json --home "$home" runs) b=$("$parent" runs --home "$home" --json)
if [ -n "$a" ] && [ "$a" = "$b" ]; then
    echo "ok - help: 'runs --json' is '--json runs' [guard globals-anywhere]"
else
    echo "not ok - help: 'runs --json' printed '$(one_line "$b" 80)', '--json runs' '$(one_line "$a" 80)' [guard globals-anywhere]"
fi
out=$("$parent" --home "$home" runs --home "$scratch/other" 2>&1)
rc=$?
if [ "$rc" -eq 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && printf '%s' "$out" | grep -q 'given twice' && [ ! -e "$scratch/other" ]; then
    echo "ok - help: two different --home are a usage error, one line ($out)"
else
    echo "not ok - help: two different --home: exit $rc: $(one_line "$out")"
fi

# Every --json output is one line of JSON, worker-check's too (it was the only indented
# one) [guard json-one-line].
for words in "worker-check --landlock=optional" "flow list" "runs" "setup" "codemode describe" \
    "health --landlock=optional" "flow show notes-summary"; do
    out=$("$parent" --home "$home" --json $words 2>/dev/null)
    if [ -n "$out" ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] &&
        printf '%s' "$out" | python3 -c 'import json,sys; json.loads(sys.stdin.read())' 2>/dev/null; then
        echo "ok - help: --json $words prints one line of JSON [guard json-one-line]"
    else
        echo "not ok - help: --json $words printed $(printf '%s\n' "$out" | wc -l) lines: $(one_line "$out" 120) [guard json-one-line]"
    fi
done

# ck: each command's usage, nothing installed.
export HOME=$scratch/ckhome
mkdir -p "$HOME"
for c in setup upgrade; do
    for flag in --help -h; do
        out=$("$ck" $c --prefix "$scratch/prefix" "$flag" 2>"$scratch/err")
        rc=$?
        if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | head -1 | grep -q "^usage: ck $c " &&
            printf '%s\n' "$out" | grep -qx 'example:' && [ ! -s "$scratch/err" ] && [ ! -e "$scratch/prefix" ] &&
            [ -z "$(ls -A "$HOME")" ]; then
            echo "ok - help: 'ck $c --prefix P $flag' prints its usage with an example, installs nothing [guard cli-help-runs-nothing]"
        else
            echo "not ok - help: 'ck $c $flag': exit $rc: $(one_line "$out") [guard cli-help-runs-nothing]"
        fi
    done
done
