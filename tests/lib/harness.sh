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
#   install_approved CB HOME DIR  # CB (a ck-basal) sets HOME up, installs the flow in DIR
#                              # and approves it as `flow install` prints; 0 or 1

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

install_approved() {
    local cb=$1 home=$2 dir=$3 approve
    approve=$("$cb" --home "$home" setup >/dev/null 2>&1 &&
        "$cb" --home "$home" flow install "$dir" 2>&1 | sed -n 's/^approve with: ck-basal //p')
    # shellcheck disable=SC2086 # the printed command's words
    [ -n "$approve" ] && "$cb" --home "$home" $approve >/dev/null 2>&1
}
