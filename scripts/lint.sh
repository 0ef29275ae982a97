#!/usr/bin/env bash
# Static checks of our own code (never of the fetched QuickJS sources):
#   clang build   every source compiled by clang with the project's -Werror flags
#   clang-tidy    the checks in .clang-tidy, warnings are errors
#   cppcheck      warning, style, performance and portability
# Prints one "ok - ..." or "not ok - ..." line per check, like the test programs.
set -uo pipefail
cd "$(dirname "$0")/.."

defs=(-std=gnu11 -D_GNU_SOURCE -Isrc -isystem build/quickjs -Ibuild/gen -isystem /usr/include/postgresql)
srcs=""
for f in src/*/*.c tests/*.c tests/lib/*.c tests/tools/*.c bench/*.c bench/lib/*.c bench/contenders/*.c; do
  case $f in
  *_macos.c) ;; # need macOS's headers: make macos-check lints them for macOS
  *_windows.c) ;; # need mingw-w64's headers: make windows-lint lints them for Windows
  *) [ -f "$f" ] && srcs="$srcs $f" ;;
  esac
done
status=0
report() { # name, exit code, output file
  if [ "$2" -eq 0 ]; then echo "ok - $1"; else
    echo "not ok - $1: $(grep -v 'warnings generated' "$3" | grep -m1 -E 'error|warning|style|portability|performance' | cut -c1-300)"
    grep -v 'warnings generated' "$3" | sed 's/^/# /' | head -40
    status=1
  fi
}
out=$(mktemp)

# One compiler per CPU: on a 2-core machine with other work beside it, a serial pass
# over every file twice took most of the suite's time.
jobs=$(nproc 2>/dev/null || echo 2)
compile_one() { # variant-flag file
  clang "${defs[@]}" $1 -O2 -Wall -Wextra -Werror -Wformat=2 -Wshadow -Wstrict-prototypes \
    -Wmissing-prototypes -Wvla -Wcast-qual -Wnull-dereference -c "$2" -o /dev/null 2>&1
}
export -f compile_one
export defs_joined="${defs[*]}"
rc=0
# shellcheck disable=SC2086
printf '%s\n' $srcs | sed 's/^/-UBASAL_TEST_HOOKS /; p; s/^-UBASAL_TEST_HOOKS /-DBASAL_TEST_HOOKS /' |
  xargs -P "$jobs" -L1 bash -c 'read -ra defs <<<"$defs_joined"; compile_one "$0" "$1"' >>"$out" || rc=1
report "lint: clang builds every source with -Werror (release and test hooks)" $rc "$out"

: >"$out"
# shellcheck disable=SC2086
printf '%s\n' $srcs | xargs -P "$jobs" -n 4 bash -c \
  'read -ra defs <<<"$defs_joined"; clang-tidy -quiet "$@" -- "${defs[@]}" -DBASAL_TEST_HOOKS' _ >"$out" 2>&1
rc=$?
grep -qE '(error|warning):' "$out" && rc=1
report "lint: clang-tidy (.clang-tidy checks) finds nothing" $rc "$out"

: >"$out"
# shellcheck disable=SC2086
cppcheck -j "$jobs" --quiet --enable=warning,style,performance,portability --error-exitcode=1 --inline-suppr \
  --suppress=missingIncludeSystem -D__linux__ -D__x86_64__ -DBASAL_TEST_HOOKS -Isrc $srcs >"$out" 2>&1
report "lint: cppcheck finds nothing" $? "$out"

rm -f "$out"
exit $status
