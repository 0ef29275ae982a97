#!/usr/bin/env bash
# The bash completion of ck-basal, driven as readline drives it (the line split at
# COMP_WORDBREAKS, the reply replacing only the text after the last break), under
# bash-completion's _init_completion and without it:
# - "--landlock=r" completes to "--landlock=required", not "--landlock=--landlock=..."
#   [guard completion-split-equals];
# - --format offers each command its own formats [guard completion-format-per-command];
# - flow ids and run ids come from the store the line's --home names
#   [guard completion-store-ids].
set -u
cd "$(dirname "$0")/.." || exit 2
parent=$PWD/build/bin/ck-basal
completion=$PWD/contrib/bash-completion/ck-basal
bash_completion=/usr/share/bash-completion/bash_completion
. tests/lib/harness.sh
scratch_dir completion

[ -x "$parent" ] || { echo "not ok - completion: $parent is missing (make)"; exit 1; }
[ -r "$bash_completion" ] || { echo "not ok - completion: $bash_completion is missing (apt-get install bash-completion; scripts/install-deps.sh --test does)"; exit 1; }

# A store with one flow and two runs (a flow run and a codemode run).
home=$scratch/home
mkdir -p "$scratch/flow" "$scratch/notes" "$scratch/out"
cp examples/demo-flow/flow.js "$scratch/flow/"
sed -e "s|@NOTES@|$scratch/notes|" -e "s|@OUT@|$scratch/out|" examples/demo-flow/manifest.json.in >"$scratch/flow/manifest.json"
echo 'return 1;' >"$scratch/one.js"
{ "$parent" --home "$home" setup && "$parent" --home "$home" flow install "$scratch/flow" &&
    "$parent" --home "$home" codemode run --landlock=optional "$scratch/one.js"; } >"$scratch/setup.log" 2>&1 ||
    { echo "not ok - completion: could not set up a store: $(tail -1 "$scratch/setup.log")"; exit 1; }

# complete MODE LINE: the line as readline would leave it after one TAB (when exactly one
# word is offered), or "LINE => a b c" listing the offers. MODE: "bash-completion" or "plain".
complete_line() {
    bash -c '
        mode=$1 completion=$2 line=$3
        [ "$mode" = bash-completion ] && source /usr/share/bash-completion/bash_completion
        source "$completion"
        # Split as readline does: spaces separate words, "=" is a word of its own.
        COMP_WORDS=() word=""
        for ((i = 0; i < ${#line}; i++)); do
            c=${line:i:1}
            case "$c" in
            " ") [ -n "$word" ] && COMP_WORDS+=("$word"); word="" ;;
            "=") [ -n "$word" ] && COMP_WORDS+=("$word"); COMP_WORDS+=("="); word="" ;;
            *) word+=$c ;;
            esac
        done
        COMP_WORDS+=("$word")
        [ "${COMP_WORDS[-1]}" = "" ] && [ "${COMP_WORDS[-2]:-}" = "=" ] && unset "COMP_WORDS[-1]"
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMP_LINE=$line COMP_POINT=${#line}
        _ck_basal
        # readline replaces the text after the last space or "=".
        stem=${line%[ =]*}; sep=${line:${#stem}:1}
        if [ "${#COMPREPLY[@]}" -eq 1 ]; then
            printf "%s%s%s\n" "$stem" "$sep" "${COMPREPLY[0]}"
        else
            printf "%s => %s\n" "$line" "$(printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " " | sed "s/ $//")"
        fi
    ' _ "$1" "$completion" "$2" 2>&1
}

# expect MODE LINE WANT GUARD
expect() {
    got=$(complete_line "$1" "$2")
    local short=${2#"$B" } # the label without the long path of the binary and the home
    if [ "$got" = "$3" ]; then
        echo "ok - completion ($1): '$short' gives '${3#"$B" }' [guard $4]"
    else
        echo "not ok - completion ($1): '$short' gave '${got#"$B" }', want '${3#"$B" }' [guard $4]"
    fi
}

B="$parent --home $home"
for mode in bash-completion plain; do
    expect "$mode" "$B worker-check --landlock=r" "$B worker-check --landlock=required" completion-split-equals
    expect "$mode" "$B serve --landlock=" "$B serve --landlock= => optional required" completion-split-equals
    expect "$mode" "$B serve --landl" "$B serve --landl => --landlock=optional --landlock=required" completion-split-equals
    expect "$mode" "$B codemode describe --format " "$B codemode describe --format  => json typescript" completion-format-per-command
    expect "$mode" "$B health --format " "$B health --format  => json prometheus" completion-format-per-command
    expect "$mode" "$B flow enable no" "$B flow enable notes-summary" completion-store-ids
    expect "$mode" "$B run " "$B run notes-summary" completion-store-ids
    expect "$mode" "$B journal " "$B journal c1" completion-store-ids
    expect "$mode" "$B cancel c" "$B cancel c1" completion-store-ids
    expect "$mode" "$B --json runs no" "$B --json runs notes-summary" completion-store-ids
done
# Without a store on the line's --home, ids complete to nothing (and nothing is created).
expect plain "$parent --home $scratch/none run " "$parent --home $scratch/none run  => " completion-store-ids
if [ -e "$scratch/none" ]; then
    echo "not ok - completion: completing an id created the data home $scratch/none"
else
    echo "ok - completion: completing an id against a missing data home creates nothing"
fi
