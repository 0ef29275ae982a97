#!/usr/bin/env bash
# Plain `make` (no target) builds both release binaries. The Makefile's first rule is
# not the default: `-include` of the dependency files puts an object's rule first, and
# a rule for build/gen/version.h sat above `all`, so `make` alone built one object or
# only fetched QuickJS. Checked from make's own database (-p) in a dry run (-n), which
# runs no recipe [guard make-default-goal].
set -u
cd "$(dirname "$0")/.." || exit 2

db=$(make -pn 2>/dev/null)
goal=$(printf '%s\n' "$db" | sed -n 's/^\.DEFAULT_GOAL := //p' | tail -n 1)
if [ "$goal" = "all" ]; then
    echo "ok - make: the default goal is all [guard make-default-goal]"
else
    echo "not ok - make: the default goal is '$goal', not all"
fi

prereqs=$(printf '%s\n' "$db" | sed -n 's/^all: //p' | tail -n 1)
found=0
for p in $prereqs; do
    case "$p" in build/bin/ck-basal | build/bin/ck-basal-worker) found=$((found + 1)) ;; esac
done
if [ "$found" -eq 2 ]; then
    echo "ok - make: all builds build/bin/ck-basal and build/bin/ck-basal-worker"
else
    echo "not ok - make: all has prerequisites '$prereqs', not both release binaries"
fi
