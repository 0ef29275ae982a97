/* A test's PostgreSQL: a fresh, empty database on the cluster tests/run.sh started
 * (tests/lib/pg_cluster.sh; its socket directory, port and user in BASAL_TEST_PG_HOST,
 * BASAL_TEST_PG_PORT, BASAL_TEST_PG_USER), and SQL run there through the psql client,
 * outside the code under test (tests never link libpq). */
#ifndef BASAL_TESTS_PG_TEST_H
#define BASAL_TESTS_PG_TEST_H

#include <stddef.h>

/* Creates a new empty database named from label, this process's pid and a counter, and
 * writes its libpq URI into uri (cap bytes):
 *     postgresql://basal_test@/DBNAME?host=HOSTDIR&port=PORT
 * Returns 0, or reports "not ok - <label>: a PostgreSQL database: <reason>" (the
 * environment unset, psql failing, the URI longer than cap) and returns -1. */
int test_pg_database(const char *label, char *uri, size_t cap);

/* Runs sql (one text, any number of statements, on psql's stdin) on the database uri
 * with psql -X -q -At -v ON_ERROR_STOP=1. Returns 0 with psql's output in out (rows one
 * a line, columns separated by "|", the last newline dropped), or -1 with what psql
 * said on stderr (or why it could not run) in out. Reports no check: a test that
 * expects a refusal reads the error. out is cut at cap - 1 bytes. */
int test_pg_sql(const char *uri, const char *sql, char *out, size_t cap);

/* Runs BASAL_TEST_PG_CTL's words with action appended ("restart", "stop", "start",
 * "status"): pg_ctl -w on the cluster, as its user. Returns 0 with pg_ctl's output in
 * out, or -1 with its output or why it could not run (the environment unset). Reports
 * no check. The cluster is the whole run's: a test that stops it starts it again. */
int test_pg_ctl(const char *action, char *out, size_t cap);

/* The postmaster's pid from postmaster.pid in the cluster's data directory (the word
 * after -D in BASAL_TEST_PG_CTL), or -1: a test sees a restart change it. */
long test_pg_postmaster_pid(void);

#endif
