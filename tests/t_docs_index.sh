#!/usr/bin/env bash
# The README's "Documentation" list names every docs/*.md exactly once and nothing that
# does not exist [guard readme-docs-index]; a scratch README with a duplicate line and
# a missing page makes the same check fail.
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib/harness.sh
scratch_dir docs

# check_index README: prints what is wrong, nothing when the list is right.
check_index() {
    listed=$(sed -n '/^## Documentation/,/^## /p' "$1" | grep -oE '^- `docs/[^`]+`' | sed -E 's/^- `//; s/`$//')
    printf '%s\n' "$listed" | sort | uniq -d | sed 's/^/listed twice: /'
    for f in docs/*.md; do
        printf '%s\n' "$listed" | grep -qxF "$f" || echo "not listed: $f"
    done
    for f in $listed; do
        [ -f "$f" ] || echo "listed but missing: $f"
    done
}

wrong=$(check_index README.md)
if [ -z "$wrong" ]; then
    echo "ok - docs index: README lists each of the $(ls docs/*.md | wc -l) docs/*.md exactly once [guard readme-docs-index]"
else
    echo "not ok - docs index: $(printf '%s' "$wrong" | tr '\n' ';') [guard readme-docs-index]"
fi
{ sed '/^## Documentation/q' README.md; echo '- `docs/flows.md`: a.'; echo '- `docs/flows.md`: b.'; } >"$scratch/README.md"
red=$(check_index "$scratch/README.md")
if printf '%s\n' "$red" | grep -q 'listed twice: docs/flows.md' && printf '%s\n' "$red" | grep -q 'not listed: docs/triggers.md'; then
    echo "ok - docs index: the check fails on a README with a duplicate and a missing page"
else
    echo "not ok - docs index: the check passed a README with a duplicate and a missing page"
fi
