# The shell tests' harness (tests/*.sh source it after `cd` to the repository root):
# the same check lines as tests/lib/harness.h, and a scratch directory under $TMPDIR.
#
#   . tests/lib/harness.sh
#   scratch_dir NAME           # $scratch: a fresh ${TMPDIR:-/tmp}/basal-NAME.XXXXXX,
#                              # removed at exit (a test with more to clean up sets
#                              # its own EXIT trap after this, and removes $scratch too)
#   ok NAME                    # "ok - NAME"
#   not_ok NAME DETAIL         # "not ok - NAME: DETAIL" (DETAIL on one line); counts
#                              # it in $harness_failed (`exit $((harness_failed > 0))`)
#   one_line TEXT [WIDTH]      # TEXT with newlines as spaces, cut at WIDTH (300)

one_line() { printf '%s' "$1" | tr '\n' ' ' | cut -c1-"${2:-300}"; }
ok() { echo "ok - $1"; }
harness_failed=0
not_ok() {
    echo "not ok - $1: $(one_line "$2" 600)"
    harness_failed=$((harness_failed + 1))
}

scratch_dir() {
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/basal-$1.XXXXXX") || exit 2
    trap 'rm -rf "$scratch"' EXIT
}
