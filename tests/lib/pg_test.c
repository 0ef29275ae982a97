#include "pg_test.h"

#include "harness.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PG_TEST_TIMEOUT_MS 60000
/* The label's part of a database name; PostgreSQL cuts names at 63 bytes. */
#define PG_TEST_LABEL_MAX 32

/* psql of the cluster's own installation (proc_run searches no PATH). */
static const char *psql_path(void)
{
    static char path[4096];
    const char *bin = getenv("BASAL_TEST_PG_BIN");
    if (bin == NULL || bin[0] != '/')
        return "/usr/bin/psql";
    int n = snprintf(path, sizeof path, "%s/psql", bin);
    return n > 0 && (size_t)n < sizeof path ? path : "/usr/bin/psql";
}

/* Copies text into out (cap > 0), without trailing newlines. */
static void copy_out(char *out, size_t cap, const char *text)
{
    size_t n = strlen(text);
    while (n > 0 && text[n - 1] == '\n')
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, text, n);
    out[n] = '\0';
}

int test_pg_database(const char *label, char *uri, size_t cap)
{
    static unsigned counter;
    char name[64];
    const char *host = getenv("BASAL_TEST_PG_HOST");
    const char *port = getenv("BASAL_TEST_PG_PORT");
    const char *user = getenv("BASAL_TEST_PG_USER");
    char check_name[160];
    snprintf(check_name, sizeof check_name, "%s: a PostgreSQL database", label);
    if (host == NULL || host[0] == '\0') {
        fail(check_name, "BASAL_TEST_PG_HOST unset: run under tests/run.sh, which starts "
                         "a PostgreSQL cluster");
        return -1;
    }
    if (port == NULL || port[0] == '\0' || user == NULL || user[0] == '\0') {
        fail(check_name, "BASAL_TEST_PG_PORT or BASAL_TEST_PG_USER unset: run under "
                         "tests/run.sh, which starts a PostgreSQL cluster");
        return -1;
    }
    /* An identifier that needs no quoting: the label in [a-z0-9_], pid, counter. */
    size_t n = 0;
    name[n++] = 't';
    name[n++] = '_';
    for (const char *c = label; *c != '\0' && n < 2 + PG_TEST_LABEL_MAX; c++)
        name[n++] = isalnum((unsigned char)*c) ? (char)tolower((unsigned char)*c) : '_';
    snprintf(name + n, sizeof name - n, "_%ld_%u", (long)getpid(), ++counter);

    char sql[128];
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    const char *argv[] = {psql_path(), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", host,
                          "-p", port, "-U", user, "-d", "postgres", "-c", sql, NULL};
    struct proc_result r = proc_run(argv, NULL, 0, PG_TEST_TIMEOUT_MS);
    bool created = proc_exited_with(&r, 0);
    if (!created)
        fail(check_name, "%s on %s port %s: %s", sql, host, port, proc_describe(&r));
    proc_result_free(&r);
    if (!created)
        return -1;
    int len = snprintf(uri, cap, "postgresql://%s@/%s?host=%s&port=%s", user, name, host, port);
    if (len < 0 || (size_t)len >= cap) {
        fail(check_name, "the URI of %s needs %d bytes, the buffer has %zu", name, len, cap);
        return -1;
    }
    return 0;
}

int test_pg_sql(const char *uri, const char *sql, char *out, size_t cap)
{
    const char *argv[] = {psql_path(), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1",
                          "-d", uri, NULL};
    struct proc_result r = proc_run(argv, sql, strlen(sql), PG_TEST_TIMEOUT_MS);
    int rc = proc_exited_with(&r, 0) ? 0 : -1;
    if (cap > 0) {
        if (rc == 0)
            copy_out(out, cap, r.out);
        else if (r.err_len > 0)
            copy_out(out, cap, r.err);
        else
            copy_out(out, cap, proc_describe(&r));
    }
    proc_result_free(&r);
    return rc;
}

#define PG_CTL_WORDS 32

/* BASAL_TEST_PG_CTL split on spaces into words (storage: buf), NULL-ended; the count,
 * or -1 if unset, empty or too long. */
static int ctl_words(char *buf, size_t cap, const char *words[], int max)
{
    const char *ctl = getenv("BASAL_TEST_PG_CTL");
    if (ctl == NULL || ctl[0] != '/' || strlen(ctl) >= cap)
        return -1;
    snprintf(buf, cap, "%s", ctl);
    int n = 0;
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w != NULL;
         w = strtok_r(NULL, " ", &save)) {
        if (n >= max - 1)
            return -1;
        words[n++] = w;
    }
    words[n] = NULL;
    return n;
}

int test_pg_ctl(const char *action, char *out, size_t cap)
{
    char buf[4096];
    const char *argv[PG_CTL_WORDS + 2];
    int n = ctl_words(buf, sizeof buf, argv, PG_CTL_WORDS);
    if (n <= 0) {
        copy_out(out, cap, "BASAL_TEST_PG_CTL unset or not an absolute command: run under "
                           "tests/run.sh, which starts a PostgreSQL cluster");
        return -1;
    }
    argv[n] = action;
    argv[n + 1] = NULL;
    struct proc_result r = proc_run(argv, NULL, 0, PG_TEST_TIMEOUT_MS);
    int rc = proc_exited_with(&r, 0) ? 0 : -1;
    char text[4096];
    snprintf(text, sizeof text, "%s%s%s", r.out, r.err_len > 0 ? " " : "", r.err);
    copy_out(out, cap, rc == 0 || r.started ? text : proc_describe(&r));
    proc_result_free(&r);
    return rc;
}

long test_pg_postmaster_pid(void)
{
    char buf[4096], path[4200];
    const char *argv[PG_CTL_WORDS + 1];
    int n = ctl_words(buf, sizeof buf, argv, PG_CTL_WORDS);
    for (int i = 0; i + 1 < n; i++) {
        if (strcmp(argv[i], "-D") != 0)
            continue;
        snprintf(path, sizeof path, "%s/postmaster.pid", argv[i + 1]);
        FILE *f = fopen(path, "r");
        long pid = -1;
        if (f != NULL) {
            char line[32];
            if (fgets(line, sizeof line, f) != NULL) {
                char *end = NULL;
                pid = strtol(line, &end, 10);
                if (end == line || (*end != '\n' && *end != '\0') || pid <= 0)
                    pid = -1;
            }
            fclose(f);
        }
        return pid;
    }
    return -1;
}
