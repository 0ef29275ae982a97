# shellcheck shell=bash disable=SC2034 # its variables are read by tests/run.sh
# A throwaway PostgreSQL cluster for one test run (tests/run.sh sources this file).
#
#   pg_cluster_start   initdb + pg_ctl start in a fresh ${TMPDIR:-/tmp}/basal-pg.XXXXXX,
#                      as an unprivileged user: basal-pg (a system user, made if
#                      missing) when the tests run as root, else the current user.
#                      No TCP at all (listen_addresses ''); the Unix socket is in the
#                      cluster's directory, PG_PORT only names it (.s.PGSQL.PORT).
#                      Trust for local connections only; the superuser is basal_test.
#                      Exports, for the tests (tests/lib/pg_test.h, pg_database in
#                      tests/lib/harness.sh):
#                        BASAL_TEST_PG_HOST  the socket directory
#                        BASAL_TEST_PG_PORT  the port number (the socket's suffix)
#                        BASAL_TEST_PG_USER  basal_test
#                        BASAL_TEST_PG_BIN   the directory of psql, pg_ctl, postgres
#                        BASAL_TEST_PG_CTL   words to which a test appends restart,
#                                            stop, start or status (pg_ctl -w on the
#                                            data directory as the cluster's user; the
#                                            first word an absolute path); split on
#                                            spaces, no quoting (the paths have none).
#                                            The cluster is shared by the whole run
#                                            (tests run one at a time): a test that
#                                            stops it starts it again.
#                      Returns 0, or 1 with the reason in $pg_cluster_error.
#   pg_cluster_stop    stops it (fast shutdown) and removes its directory; nothing if
#                      none was started here.
#
# The settings live in postgresql.conf, so `$BASAL_TEST_PG_CTL restart` keeps them.
# fsync is off: a test cluster never has to survive the machine's crash, and syncing
# made the start and every commit slow; the commit path is otherwise PostgreSQL's own.

PG_CLUSTER_PORT=54329
pg_cluster_dir=""
pg_cluster_error=""
pg_cluster_ctl=""
pg_cluster_seconds=""

# The newest server's bin directory (Debian: /usr/lib/postgresql/VERSION/bin).
pg_cluster_bindir() {
    local d
    d=$(printf '%s\n' /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)
    [ -x "$d" ] && echo "${d%/initdb}"
}

pg_cluster_start() {
    local bin user as runuser dir started log
    pg_cluster_error=""
    bin=$(pg_cluster_bindir) || {
        pg_cluster_error="no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql; scripts/install-deps.sh --test)"
        return 1
    }
    started=$(date +%s%N)
    if [ "$(id -u)" -eq 0 ]; then
        user=basal-pg
        # (A run beside this one may make it at the same time: look again after.)
        if ! id -u "$user" >/dev/null 2>&1 &&
            ! useradd --system --no-create-home --shell /usr/sbin/nologin "$user" 2>/dev/null &&
            ! id -u "$user" >/dev/null 2>&1; then
            pg_cluster_error="useradd $user failed"
            return 1
        fi
        runuser=$(command -v runuser) || {
            pg_cluster_error="no runuser (util-linux) to run the cluster as $user"
            return 1
        }
        # An absolute path: a C test runs BASAL_TEST_PG_CTL's words without PATH.
        as="$runuser -u $user --"
    else
        user=$(id -un)
        as=""
    fi
    dir=$(mktemp -d "${TMPDIR:-/tmp}/basal-pg.XXXXXX") || {
        pg_cluster_error="mktemp -d failed"
        return 1
    }
    pg_cluster_dir=$dir
    # The directory holds the socket: traversable by the tests (root or not) and
    # owned by the cluster's user; the data directory below stays 0700 (initdb's rule).
    if ! chmod 0755 "$dir" || ! chown "$user" "$dir"; then
        pg_cluster_error="chmod 0755, chown $user $dir failed"
        return 1
    fi
    log="$dir/server.log"
    if ! $as "$bin/initdb" -D "$dir/data" -U basal_test --auth-local=trust --auth-host=reject \
        -E UTF8 --locale=C --no-sync --no-instructions >"$dir/initdb.log" 2>&1; then
        pg_cluster_error="initdb failed: $(tail -n 1 "$dir/initdb.log")${as:+ (user $user must reach ${TMPDIR:-/tmp})}"
        return 1
    fi
    cat >>"$dir/data/postgresql.conf" <<EOF
# tests/lib/pg_cluster.sh: no TCP, the socket in the cluster's own directory.
listen_addresses = ''
unix_socket_directories = '$dir'
unix_socket_permissions = 0777
port = $PG_CLUSTER_PORT
fsync = off
full_page_writes = off
max_connections = 200
EOF
    pg_cluster_ctl="${as:+$as }$bin/pg_ctl -D $dir/data -l $log -w -t 60"
    # shellcheck disable=SC2086 # the words of the command line
    if ! $pg_cluster_ctl start >"$dir/pg_ctl.log" 2>&1; then
        pg_cluster_error="pg_ctl start failed: $(tail -n 1 "$log" 2>/dev/null)"
        return 1
    fi
    export BASAL_TEST_PG_HOST="$dir"
    export BASAL_TEST_PG_PORT="$PG_CLUSTER_PORT"
    export BASAL_TEST_PG_USER=basal_test
    export BASAL_TEST_PG_BIN="$bin"
    export BASAL_TEST_PG_CTL="$pg_cluster_ctl"
    pg_cluster_seconds=$(awk -v ns=$(($(date +%s%N) - started)) 'BEGIN { printf "%.2f", ns / 1e9 }')
    return 0
}

pg_cluster_stop() {
    [ -n "$pg_cluster_dir" ] || return 0
    # A test may have stopped it (or left it stopped); a start that timed out may still
    # have a postmaster coming up: stop whatever postmaster.pid names.
    local pid
    if [ -f "$pg_cluster_dir/data/postmaster.pid" ] && [ -n "$pg_cluster_ctl" ]; then
        pid=$(head -n 1 "$pg_cluster_dir/data/postmaster.pid")
        # shellcheck disable=SC2086 # the words of the command line
        $pg_cluster_ctl -m fast stop >/dev/null 2>&1
        # pg_ctl returns once postmaster.pid is gone, a moment before the postmaster
        # has exited: wait for the process itself (its pidfd), so none is left when
        # run.sh ends.
        case "$pid" in
        '' | *[!0-9]*) ;;
        *) python3 -c 'import os, select, sys
try:
    select.select([os.pidfd_open(int(sys.argv[1]))], [], [], 30)
except ProcessLookupError:
    pass' "$pid" ;;
        esac
    fi
    rm -rf "$pg_cluster_dir"
    pg_cluster_dir=""
}
