#!/usr/bin/env bash
# The test PostgreSQL cluster tests/run.sh starts (tests/lib/pg_cluster.sh): it runs as
# an unprivileged user, listens on no TCP port (the check is shown to see a TCP listener
# of the test's own), answers through its Unix socket, and pg_database (tests/lib/
# harness.sh) gives distinct empty databases, or the reason when there is no cluster.
cd "$(dirname "$0")/.." || exit 2
. tests/lib/harness.sh

if [ -z "${BASAL_TEST_PG_HOST:-}" ] || [ -z "${BASAL_TEST_PG_CTL:-}" ]; then
    not_ok "pg cluster: environment" "BASAL_TEST_PG_HOST unset: run under tests/run.sh, which starts a PostgreSQL cluster"
    exit 1
fi
scratch_dir pg-cluster

# The socket inodes of the processes given.
socket_inodes() {
    local pid fd link
    for pid in "$@"; do
        for fd in /proc/"$pid"/fd/*; do
            link=$(readlink "$fd" 2>/dev/null) || continue
            case "$link" in
            socket:\[*\]) link=${link#socket:[} && echo "${link%]}" ;;
            esac
        done
    done
}

# "STATE" (hex, 0A = LISTEN) of each TCP socket, IPv4 or IPv6, in the network
# namespace of pid $1 whose inode is one of the sockets of pids $1 $2...
tcp_states_of() {
    local inodes
    inodes=$(socket_inodes "$@" | tr '\n' ' ')
    awk -v want=" $inodes" 'FNR > 1 && index(want, " " $10 " ") { print $4 }' \
        /proc/"$1"/net/tcp /proc/"$1"/net/tcp6
}

# The same inodes among the Unix sockets: the positive control of socket_inodes.
unix_paths_of() {
    local inodes
    inodes=$(socket_inodes "$@" | tr '\n' ' ')
    awk -v want=" $inodes" 'FNR > 1 && index(want, " " $7 " ") && NF >= 8 { print $8 }' \
        /proc/"$1"/net/unix
}

# ---- the postmaster and its processes run unprivileged -------------------------------
pm=$(head -n 1 "$BASAL_TEST_PG_HOST/data/postmaster.pid" 2>/dev/null)
if [ -z "$pm" ] || ! [ -d "/proc/$pm" ]; then
    not_ok "pg cluster: postmaster running" "no live pid in $BASAL_TEST_PG_HOST/data/postmaster.pid ('$pm')"
    exit 1
fi
ok "pg cluster: postmaster running (pid $pm)"
if [ "$(id -u)" -eq 0 ]; then want_uid=$(id -u basal-pg 2>/dev/null); else want_uid=$(id -u); fi
procs="$pm $(pgrep -P "$pm" | tr '\n' ' ')"
bad=""
for p in $procs; do
    uids=$(awk '/^Uid:/ { print $2, $3, $4, $5 }' /proc/"$p"/status 2>/dev/null) || continue
    [ -z "$uids" ] && continue
    for u in $uids; do
        [ "$u" = "$want_uid" ] && [ "$u" != 0 ] || bad="$bad pid $p uids ($uids);"
    done
done
if [ -n "$want_uid" ] && [ "$want_uid" != 0 ] && [ -z "$bad" ]; then
    ok "pg cluster: postmaster and its $(echo "$procs" | wc -w) processes run as uid $want_uid, not root"
else
    not_ok "pg cluster: postmaster and its processes run unprivileged" "want uid '$want_uid' (never 0):$bad"
fi

# ---- no TCP: the check first sees a listener of the test's own -----------------------
# A listener on 127.0.0.1 that prints its port, then holds until its stdin closes.
coproc LISTENER {
    exec python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET)
s.bind(("127.0.0.1", 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
sys.stdin.read()
'
}
listener=$LISTENER_PID
port=""
read -r -t 30 port <&"${LISTENER[0]}"
states=$(tcp_states_of "$listener")
case " $(echo "$states" | tr '\n' ' ') " in
*" 0A "*) ok "pg cluster: control: the TCP check sees the test's own listener on 127.0.0.1:$port (state LISTEN)" ;;
*) not_ok "pg cluster: control: the TCP check sees the test's own listener" "port '$port', states of its sockets: '$states'" ;;
esac
eval "exec ${LISTENER[1]}>&-"
wait "$listener"

# shellcheck disable=SC2086 # one pid a word
states=$(tcp_states_of $procs)
if [ -z "$states" ]; then
    ok "pg cluster: no TCP socket at all among the cluster's processes (/proc/$pm/net/tcp, tcp6)"
else
    not_ok "pg cluster: no TCP socket among the cluster's processes" "states: $(one_line "$states")"
fi
paths=$(unix_paths_of "$pm")
case "$paths" in
*"$BASAL_TEST_PG_HOST/.s.PGSQL.$BASAL_TEST_PG_PORT"*) ok "pg cluster: control: the same inode check finds the postmaster's Unix socket in its directory" ;;
*) not_ok "pg cluster: control: the inode check finds the postmaster's Unix socket" "unix paths: '$(one_line "$paths")'" ;;
esac

# ---- a query through the socket ------------------------------------------------------
got=$(pg_psql -h "$BASAL_TEST_PG_HOST" -p "$BASAL_TEST_PG_PORT" -U "$BASAL_TEST_PG_USER" -d postgres \
    -c "SELECT current_user || ',' || current_setting('listen_addresses') || ',' || current_setting('unix_socket_directories')" 2>&1)
if [ "$got" = "basal_test,,$BASAL_TEST_PG_HOST" ]; then
    ok "pg cluster: a query through the socket answers as basal_test, listen_addresses empty"
else
    not_ok "pg cluster: a query through the socket" "got '$got'"
fi

# ---- pg_database: two distinct empty databases, or the reason ------------------------
a=$(pg_database cluster) || not_ok "pg cluster: pg_database (first)" "$a"
b=$(pg_database cluster) || not_ok "pg cluster: pg_database (second)" "$b"
case "$a" in
"postgresql://basal_test@/t_cluster_"*"?host=$BASAL_TEST_PG_HOST&port=$BASAL_TEST_PG_PORT")
    ok "pg cluster: pg_database gives a URI on the cluster's socket" ;;
*) not_ok "pg cluster: pg_database gives a URI on the cluster's socket" "got '$a'" ;;
esac
empty_a=$(pg_sql "$a" "SELECT current_database() || ':' || count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'")
pg_sql "$a" "CREATE TABLE only_in_a (x int)" >/dev/null
empty_b=$(pg_sql "$b" "SELECT current_database() || ':' || count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'")
in_a=$(pg_sql "$a" "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'")
if [ "${empty_a#*:}" = 0 ] && [ "${empty_b#*:}" = 0 ] && [ "${empty_a%:*}" != "${empty_b%:*}" ] && [ "$in_a" = 1 ]; then
    ok "pg cluster: pg_database twice gives two different empty databases (${empty_a%:*}, ${empty_b%:*}; a table made in one is not in the other)"
else
    not_ok "pg cluster: pg_database twice gives two different empty databases" "a '$empty_a' (table there: '$in_a'), b '$empty_b'"
fi
why=$(env -u BASAL_TEST_PG_HOST bash -c '. tests/lib/harness.sh; pg_database x')
status=$?
if [ "$status" -ne 0 ] && [ "$why" = "BASAL_TEST_PG_HOST unset: run under tests/run.sh, which starts a PostgreSQL cluster" ]; then
    ok "pg cluster: pg_database without the cluster's environment fails naming the reason"
else
    not_ok "pg cluster: pg_database without the cluster's environment fails naming the reason" "status $status, '$why'"
fi

exit $((harness_failed > 0))
