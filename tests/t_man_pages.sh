#!/usr/bin/env bash
# The man pages: every command, subcommand and --option that `ck-basal --help` prints
# is in ck-basal(1) [guard man-page-covers-help], every page renders without a groff
# warning through the Makefile's own check (make man-check) [guard man-pages-render],
# and a scratch page with a mistake makes that check fail (so it can turn red).
# ck-basal(1) names the exit statuses and the files an operator meets. ck(1) has every
# command and option of `ck --help` [guard man-page-covers-ck-help].
set -u
cd "$(dirname "$0")/.." || exit 2
parent=build/bin/ck-basal
page=man/ck-basal.1
. tests/lib/harness.sh
scratch_dir man

if [ ! -x "$parent" ]; then
    echo "not ok - man pages: $parent is missing (make)"
    exit 1
fi
help=$("$parent" --help) || { echo "not ok - man pages: ck-basal --help failed"; exit 1; }

# The page's text as words: escapes for hyphens and fonts undone, so "\-\-home" and
# "\fBflow\fR" read as "--home" and "flow"; request lines (".TP") dropped.
text=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\(..//g' -e '/^\.\\"/d' -e 's/^\.[A-Z][A-Z]* *//' "$page")
has_word() { printf '%s\n' "$text" | grep -qE -- "(^|[^A-Za-z0-9_-])$1([^A-Za-z0-9_-]|$)"; }

# Commands: the first word of each entry (two spaces of indentation) under "commands:";
# subcommands: the first word after the command and each word after "| " on an entry
# line and its continuation lines (seven spaces, then "|" or "["); one letter is not a
# subcommand ("c<id>" names a codemode run).
commands=$(printf '%s\n' "$help" | sed -n '/^commands:/,/^options:/p' |
    grep -E '^  [a-z]' | awk '{print $1}' | sort -u)
subcommands=$(printf '%s\n' "$help" | sed -n '/^commands:/,/^options:/p' |
    grep -E '^  [a-z]|^       [|[]' |
    sed -E 's/^  [a-z-]+ ([a-z][a-z-]*).*/\1 &/; s/^       //' |
    grep -oE '(^[a-z][a-z-]* |\| [a-z][a-z-]*)' | sed -E 's/^\| //; s/ $//' | grep -E '..' | sort -u)
options=$(printf '%s\n' "$help" | grep -oE -- '--[a-z][a-z-]*(=[a-z]+)?' | sed 's/=.*//' | sort -u)

count=0
missing=""
for w in $commands $subcommands $options; do
    count=$((count + 1))
    has_word "$w" || missing="$missing $w"
done
if [ "$count" -lt 40 ]; then
    # The help text has 12 commands and about 40 options: fewer means the parse broke.
    echo "not ok - man pages: read only $count names from ck-basal --help (parse broken?)"
elif [ -n "$missing" ]; then
    echo "not ok - man pages: ck-basal(1) lacks what --help prints:$missing [guard man-page-covers-help]"
else
    echo "ok - man pages: ck-basal(1) has all $count commands, subcommands and options of --help [guard man-page-covers-help]"
fi
# Every command has a section of its own (.SS NAME).
nosection=""
for c in $commands; do
    grep -qE "^\.SS $(printf '%s' "$c" | sed 's/-/\\\\-/g')$" "$page" || nosection="$nosection $c"
done
if [ -z "$nosection" ]; then
    echo "ok - man pages: every command of --help has a section in ck-basal(1)"
else
    echo "not ok - man pages: no .SS section in ck-basal(1) for:$nosection"
fi

# The parts an operator looks for.
for want in "EXIT STATUS" "FILES" "SEE ALSO" "ENVIRONMENT"; do
    if grep -q "^\.SH $want\$" "$page"; then
        echo "ok - man pages: ck-basal(1) has $want"
    else
        echo "not ok - man pages: ck-basal(1) has no $want section"
    fi
done
for w in ops.sock serve.lock basal.db cortexkit/basal 'ck-basal-worker (8)'; do
    case "$w" in
    *' (8)') ok=$(grep -c '^\.BR ck-basal-worker (8)' "$page") ;;
    *) ok=$(printf '%s\n' "$text" | sed -n '/^FILES/,/^SEE ALSO/p' | grep -cF "$w") ;;
    esac
    if [ "$ok" -gt 0 ]; then
        echo "ok - man pages: ck-basal(1) names $w"
    else
        echo "not ok - man pages: ck-basal(1) does not name $w (in FILES / SEE ALSO)"
    fi
done
if printf '%s\n' "$text" | sed -n '/^EXIT STATUS/,/^ENVIRONMENT/p' | grep -qx '0' &&
    printf '%s\n' "$text" | sed -n '/^EXIT STATUS/,/^ENVIRONMENT/p' | grep -qx '1' &&
    printf '%s\n' "$text" | sed -n '/^EXIT STATUS/,/^ENVIRONMENT/p' | grep -qx '2'; then
    echo "ok - man pages: ck-basal(1) lists exit statuses 0, 1 and 2"
else
    echo "not ok - man pages: ck-basal(1) EXIT STATUS does not list 0, 1 and 2"
fi
worker_text=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' man/ck-basal-worker.8)
if printf '%s\n' "$worker_text" | grep -q 'never run by hand' &&
    printf '%s\n' "$worker_text" | grep -qi 'seccomp' && printf '%s\n' "$worker_text" | grep -qi 'landlock'; then
    echo "ok - man pages: ck-basal-worker(8) says it is never run by hand and how it is confined"
else
    echo "not ok - man pages: ck-basal-worker(8) lacks 'never run by hand' or its confinement"
fi

# Rendering, through the Makefile's check, then the same check on a scratch page with
# an unknown macro, which must fail.
if out=$(make -s man-check 2>&1); then
    echo "ok - man pages: make man-check renders every page without a groff warning [guard man-pages-render]"
else
    echo "not ok - man pages: make man-check: $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-300)"
fi
{ cat "$page"; printf '.XY not a macro\n'; } >"$scratch/bad.1"
if out=$(make -s man-check MAN_PAGES="$scratch/bad.1" 2>&1); then
    echo "not ok - man pages: make man-check passed a page with an unknown macro"
else
    echo "ok - man pages: make man-check fails on a page with an unknown macro ($(printf '%s' "$out" | head -1 | cut -c1-80))"
fi
# ck(1): the commands (two-space entries under "commands:") and every --option of
# `ck --help`, each command with a section of its own.
if [ -x build/bin/ck ] && ck_help=$(build/bin/ck --help); then
    ck_text=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\(..//g' -e '/^\.\\"/d' -e 's/^\.[A-Z][A-Z]* *//' man/ck.1)
    ck_commands=$(printf '%s\n' "$ck_help" | sed -n '/^commands:/,/^options:/p' | grep -E '^  [a-z]' | awk '{print $1}')
    ck_options=$(printf '%s\n' "$ck_help" | grep -oE -- '--[a-z][a-z-]*' | sort -u)
    count=0
    missing=""
    for w in $ck_commands $ck_options; do
        count=$((count + 1))
        printf '%s\n' "$ck_text" | grep -qE -- "(^|[^A-Za-z0-9_-])$w([^A-Za-z0-9_-]|$)" || missing="$missing $w"
    done
    for c in $ck_commands; do
        grep -qx "\.SS $c" man/ck.1 || missing="$missing (no .SS $c)"
    done
    if [ "$count" -lt 9 ]; then
        echo "not ok - man pages: read only $count names from ck --help (parse broken?)"
    elif [ -n "$missing" ]; then
        echo "not ok - man pages: ck(1) lacks what ck --help prints:$missing [guard man-page-covers-ck-help]"
    else
        echo "ok - man pages: ck(1) has all $count commands and options of ck --help, a section per command [guard man-page-covers-ck-help]"
    fi
else
    echo "not ok - man pages: build/bin/ck --help failed (make)"
fi

# The rendered text, as a reader sees it (wide, unhyphenated, so no option is broken
# across a line): every --option in it is one the help prints [guard man-rendered-options]
# (a font request that glues words, ".BR [--input JSON]" rendering "--inputJSON", fails
# here), and an option the help shows only in brackets (optional) is never shown
# unbracketed in a command's synopsis line [guard man-rendered-optional].
render() { groff -man -Tutf8 -rLL=2000n -rHY=0 -ww "$1" 2>/dev/null | col -bx | sed 's/\xe2\x80\x90/-/g'; }
strip_brackets() { sed -E ':a; s/\[[^][]*\]//g; ta'; }
check_rendered() { # PAGE HELP-TEXT [OTHER PROGRAMS' OPTIONS THE PAGE QUOTES...]
    rendered=$(render "$1")
    known=$( { printf '%s\n' "$2" | grep -oE -- '--[a-z][a-z-]*'; printf '%s\n' "${@:3}"; } | sort -u)
    unknown=$(printf '%s\n' "$rendered" | grep -oE -- '--[A-Za-z][A-Za-z-]*' | sort -u |
        grep -vxF -f <(printf '%s\n' "$known"))
    if [ -z "$rendered" ]; then
        echo "not ok - man pages: $1 renders to nothing"
    elif [ -n "$unknown" ]; then
        echo "not ok - man pages: $1 renders options its --help does not have: $(printf '%s' "$unknown" | tr '\n' ' ') [guard man-rendered-options]"
    else
        echo "ok - man pages: every option in the rendered $1 is one --help prints [guard man-rendered-options]"
    fi
    usage=$(printf '%s\n' "$2" | sed -n '/^commands:/,/^options:/p' | grep -E '^  [a-z]|^       [|[]')
    required=$(printf '%s\n' "$usage" | strip_brackets | grep -oE -- '--[a-z][a-z-]*' | sort -u)
    words=$(printf '%s\n' "$usage" | grep -E '^  [a-z]' | awk '{print $1}' | sort -u | paste -sd'|')
    wrong=$(printf '%s\n' "$rendered" | grep -E "^       ($words)( |$)" | strip_brackets |
        grep -oE -- '--[a-z][a-z-]*' | sort -u | grep -vxF -f <(printf '%s\n' "$required"))
    if [ -n "$wrong" ]; then
        echo "not ok - man pages: $1 shows as required what --help shows as optional: $(printf '%s' "$wrong" | tr '\n' ' ') [guard man-rendered-optional]"
    else
        echo "ok - man pages: $1's synopsis lines bracket every option --help brackets [guard man-rendered-optional]"
    fi
}
check_rendered "$page" "$help"
[ -n "${ck_help:-}" ] && check_rendered man/ck.1 "$ck_help" --user # systemctl --user
# The two checks can turn red: a scratch page with a glued option and an unbracketed one.
{ cat "$page"; printf '.SS scratch\n.TP\n.BR "codemode run " [ \\-\\-input \\fIJSON\\fR]\nglued.\n.TP\n.B flow schedule ID \\-\\-count N\nrequired.\n'; } >"$scratch/glued.1"
red=$(check_rendered "$scratch/glued.1" "$help")
if printf '%s\n' "$red" | grep -q 'not ok.*--inputJSON' && printf '%s\n' "$red" | grep -q 'not ok.*optional: --count'; then
    echo "ok - man pages: the rendered-text checks fail on a page with a glued and an unbracketed option"
else
    echo "not ok - man pages: the rendered-text checks passed a page with a glued and an unbracketed option: $(printf '%s' "$red" | tr '\n' ' ' | cut -c1-300)"
fi

# man(1) itself, the way a reader opens it, warns about nothing either.
for p in $page man/ck-basal-worker.8 man/ck.1; do
    out=$(MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null)
    if [ -z "$out" ]; then
        echo "ok - man pages: man --warnings -l $p is silent"
    else
        echo "not ok - man pages: man --warnings -l $p: $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-200)"
    fi
done
