/* tests/lib/pg_test.h itself: test_pg_sql gives rows as psql -At prints them and an
 * error as psql says it; test_pg_database without the cluster's environment reports
 * the reason (seen in a child, so that expected "not ok" is not this test's); and
 * test_pg_ctl restarts the cluster: a new postmaster, the data still there. (Two
 * distinct empty databases: t_schema_postgres.) */
#include "lib/harness.h"
#include "lib/pg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define URI_MAX 1024
#define OUT_MAX 8192

extern char **environ;

/* The child: the environment has no BASAL_TEST_PG_HOST. */
static int child_unset(void)
{
    char uri[URI_MAX];
    test_pg_database("unset", uri, sizeof uri);
    return harness_finish();
}

static void unset_environment(void)
{
    char *env[256];
    size_t n = 0;
    for (char **e = environ; *e != NULL && n + 1 < sizeof env / sizeof env[0]; e++)
        if (strncmp(*e, "BASAL_TEST_PG_HOST=", 19) != 0)
            env[n++] = *e;
    env[n] = NULL;
    const char *argv[] = {"/proc/self/exe", "--child-unset", NULL};
    struct proc_opts opts = {.envp = env};
    struct proc_result r = proc_run_opts(argv, &opts, NULL, 0, 60000);
    check(proc_exited_with(&r, 1) &&
              output_has_line(r.out, "not ok - unset: a PostgreSQL database: BASAL_TEST_PG_HOST "
                                     "unset: run under tests/run.sh, which starts a PostgreSQL "
                                     "cluster"),
          "pg test: test_pg_database without BASAL_TEST_PG_HOST fails naming the reason",
          "%s; stdout: %s", proc_describe(&r), r.out);
    proc_result_free(&r);
}

static void sql_output(const char *uri)
{
    char out[OUT_MAX];
    int rc = test_pg_sql(uri, "SELECT 1, 'a' UNION ALL SELECT 2, 'b' ORDER BY 1;", out, sizeof out);
    check(rc == 0 && strcmp(out, "1|a\n2|b") == 0,
          "pg test: test_pg_sql gives the rows, one a line, columns split by |", "rc %d, '%s'", rc,
          out);
    rc = test_pg_sql(uri, "SELECT 1; SELECT * FROM no_such_table; SELECT 3;", out, sizeof out);
    check(rc == -1 && strstr(out, "relation \"no_such_table\" does not exist") != NULL,
          "pg test: test_pg_sql fails with psql's error and stops at it", "rc %d, '%s'", rc, out);
}

static void restart(const char *uri)
{
    char out[OUT_MAX];
    if (test_pg_sql(uri, "CREATE TABLE kept (x int); INSERT INTO kept VALUES (42);", out,
                    sizeof out) != 0) {
        fail("pg test: a table to keep across the restart", "%s", out);
        return;
    }
    long before = test_pg_postmaster_pid();
    int rc = test_pg_ctl("restart", out, sizeof out);
    long after = test_pg_postmaster_pid();
    check(rc == 0 && before > 0 && after > 0 && before != after,
          "pg test: test_pg_ctl restart gives a new postmaster", "rc %d, pid %ld then %ld: %s", rc,
          before, after, out);
    rc = test_pg_sql(uri, "SELECT x FROM kept;", out, sizeof out);
    check(rc == 0 && strcmp(out, "42") == 0,
          "pg test: after the restart the database answers with its data", "rc %d, '%s'", rc, out);
    rc = test_pg_ctl("status", out, sizeof out);
    check(rc == 0 && strstr(out, "server is running") != NULL,
          "pg test: test_pg_ctl status: the server is running", "rc %d, '%s'", rc, out);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--child-unset") == 0)
        return child_unset();
    char uri[URI_MAX];
    if (test_pg_database("pg_test", uri, sizeof uri) == 0) {
        sql_output(uri);
        restart(uri);
    }
    unset_environment();
    return harness_finish();
}
