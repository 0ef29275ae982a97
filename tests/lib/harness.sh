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
#   pg_database LABEL          # a fresh empty database on tests/run.sh's PostgreSQL
#                              # cluster (tests/lib/pg_cluster.sh): echoes its URI
#                              # postgresql://basal_test@/DB?host=DIR&port=PORT, or
#                              # echoes the reason and returns 1:
#                              #   uri=$(pg_database x) || not_ok "x: database" "$uri"
#   pg_sql URI SQL             # psql -X -q -At -v ON_ERROR_STOP=1 on URI, SQL on stdin;
#                              # psql's status, its output (stderr too) on stdout

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

pg_psql() { "${BASAL_TEST_PG_BIN:-/usr/bin}/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"; }

pg_database() {
    local name err
    if [ -z "${BASAL_TEST_PG_HOST:-}" ] || [ -z "${BASAL_TEST_PG_PORT:-}" ] ||
        [ -z "${BASAL_TEST_PG_USER:-}" ]; then
        echo "BASAL_TEST_PG_HOST unset: run under tests/run.sh, which starts a PostgreSQL cluster"
        return 1
    fi
    # An identifier without quoting; the subshell's pid and the microseconds keep two
    # calls of one test apart ($(pg_database) runs in a subshell: no counter survives).
    # shellcheck disable=SC2018,SC2019 # ASCII only: an identifier
    name=$(printf '%s' "$1" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9_' '_' | cut -c1-24)
    name="t_${name}_$$_${BASHPID}_${EPOCHREALTIME/./}"
    name=${name:0:63}
    if ! err=$(pg_psql -h "$BASAL_TEST_PG_HOST" -p "$BASAL_TEST_PG_PORT" \
        -U "$BASAL_TEST_PG_USER" -d postgres -c "CREATE DATABASE $name" 2>&1); then
        echo "CREATE DATABASE $name on $BASAL_TEST_PG_HOST: $(one_line "$err")"
        return 1
    fi
    echo "postgresql://$BASAL_TEST_PG_USER@/$name?host=$BASAL_TEST_PG_HOST&port=$BASAL_TEST_PG_PORT"
}

pg_sql() {
    printf '%s\n' "$2" | pg_psql -d "$1" 2>&1
}
