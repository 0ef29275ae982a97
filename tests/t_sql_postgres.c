/* The PostgreSQL engine of the store's statements (store/sql_postgres.h behind
 * store/sql.h) and of the store (store/store_postgres.c behind store/store.h), on a
 * real database of the suite's throwaway cluster (tests/lib/pg_test.h).
 *
 *   1. values round trip unchanged: multibyte UTF-8, bytea with NUL and 0xff, int64
 *      extremes, NULL, booleans; ?N out of order, ?1 inside a literal or a comment
 *      left alone, coalesce(?1, 0) with an int and with NULL, RETURNING, changes();
 *   2. statements are kept per connection and a nested use of one gets its own;
 *   3. errors are one line without DETAIL (no row's value), a full disk is named, a
 *      lost connection says so;
 *   4. store_open creates the schema once, refuses a newer version changing nothing,
 *      and an unreachable server in one line; store_use refuses passwords and other
 *      schemes;
 *   5. write transactions of two connections take turns (the advisory write lock),
 *      an unsynced one commits and is seen, an aborted one cannot commit;
 *   6. opens of a new database at once create its schema once. */
#include "lib/harness.h"

#include "lib/pg_test.h"
#include "store/sql.h"
#include "store/sql_postgres.h"
#include "store/store.h"
#include "store/store_internal.h"
#include "store/store_schema.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char g_uri[1024];

/* ---- small helpers ---------------------------------------------------------------- */

static bool one_line(const char *text) { return text != NULL && strpbrk(text, "\r\n") == NULL; }

/* Runs sql with no parameters and returns its first column's text, malloc'd ("" when
 * none, NULL on failure). */
static char *scalar(struct sql_db *db, const char *sql)
{
    struct sql_stmt *st;
    if (sql_prepare(db, sql, &st, NULL, 0) != 0)
        return NULL;
    char *out = NULL;
    enum sql_step rc = sql_step(st);
    if (rc == SQL_ROW)
        out = strdup(sql_column_is_null(st, 0) ? "" : sql_column_text(st, 0));
    else if (rc == SQL_DONE)
        out = strdup("");
    sql_release(st);
    return out;
}

static long long scalar_int(struct sql_db *db, const char *sql)
{
    char *text = scalar(db, sql);
    long long v = text != NULL ? strtoll(text, NULL, 10) : -999;
    free(text);
    return v;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- 1. values ---------------------------------------------------------------------- */

static void values(struct sql_db *db)
{
    char err[384];
    if (!check(sql_exec(db, "CREATE TABLE t (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
                            "s TEXT, b BYTEA, n BIGINT, u TEXT UNIQUE)") == 0,
               "sql pg: a table is created through sql_exec", "%s",
               sql_error_text(db, err, sizeof err)))
        return;

    /* text: multibyte UTF-8 survives both ways */
    static const char utf8[] = "h\xc3\xa9llo \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x8e\x89";
    struct sql_stmt *st;
    int64_t id = 0;
    if (sql_prepare(db, "INSERT INTO t(s) VALUES (?1) RETURNING id", &st, err, sizeof err) == 0) {
        sql_bind_text(st, 1, utf8);
        int got = sql_step_row(db, st, err, sizeof err);
        id = got == 1 ? sql_column_int64(st, 0) : 0;
        sql_release(st);
        check(got == 1 && id > 0, "sql pg: INSERT ... RETURNING id gives the new row's id", "%d %lld %s",
              got, (long long)id, err);
    }
    if (sql_prepare(db, "INSERT INTO t(s) VALUES (?1) RETURNING id", &st, err, sizeof err) == 0) {
        sql_bind_text(st, 1, "second");
        int got = sql_step_row(db, st, err, sizeof err);
        int64_t next = got == 1 ? sql_column_int64(st, 0) : 0;
        sql_release(st);
        check(next == id + 1, "sql pg: a second RETURNING id is the next identity", "%lld after %lld",
              (long long)next, (long long)id);
    }
    if (sql_prepare(db, "SELECT s, length(s), octet_length(s) FROM t WHERE id = ?1", &st, err,
                    sizeof err) == 0) {
        sql_bind_int64(st, 1, id);
        int got = sql_step_row(db, st, err, sizeof err);
        check(got == 1 && strcmp(sql_column_text(st, 0), utf8) == 0 &&
                  sql_column_int64(st, 1) == 12 && sql_column_int64(st, 2) == (int64_t)strlen(utf8),
              "sql pg: multibyte UTF-8 text round trips byte for byte (the server counts 12 "
              "characters: it was sent as UTF-8)",
              "%d '%s' %lld chars", got, got == 1 ? sql_column_text(st, 0) : err,
              got == 1 ? (long long)sql_column_int64(st, 1) : 0LL);
        sql_release(st);
    }
    /* a length that stops before the terminating NUL is honoured */
    if (sql_prepare(db, "SELECT ?1 || '|'", &st, err, sizeof err) == 0) {
        sql_bind_text_len(st, 1, "abcdef", 3);
        int got = sql_step_row(db, st, err, sizeof err);
        check(got == 1 && strcmp(sql_column_text(st, 0), "abc|") == 0,
              "sql pg: sql_bind_text_len sends exactly len bytes, not up to the NUL", "%s",
              got == 1 ? sql_column_text(st, 0) : err);
        sql_release(st);
    }

    /* bytea with NUL, 0xff, a backslash and "\x": the bytes come back */
    static const unsigned char blob[] = {0x00, 0xff, 'a', 0x00, 0x80, '\\', 'x', 0x7f, 0x01};
    if (sql_prepare(db, "UPDATE t SET b = ?2 WHERE id = ?1", &st, err, sizeof err) == 0) {
        sql_bind_int64(st, 1, id);
        sql_bind_blob(st, 2, blob, sizeof blob);
        check(sql_run(db, st, err, sizeof err) == 0 && sql_changes(db) == 1,
              "sql pg: UPDATE of a bytea changes one row (changes() from the command tag)", "%s", err);
    }
    if (sql_prepare(db, "SELECT b, octet_length(b) FROM t WHERE id = ?1", &st, err, sizeof err) == 0) {
        sql_bind_int64(st, 1, id);
        int got = sql_step_row(db, st, err, sizeof err);
        size_t len = 0;
        const void *bytes = got == 1 ? sql_column_blob(st, 0, &len) : NULL;
        check(bytes != NULL && len == sizeof blob && memcmp(bytes, blob, len) == 0 &&
                  sql_column_int64(st, 1) == (int64_t)sizeof blob,
              "sql pg: bytea with NUL, 0xff and a backslash round trips (hex form decoded)",
              "got %zu bytes, server has %lld", len, got == 1 ? (long long)sql_column_int64(st, 1) : -1LL);
        const char *as_text = got == 1 ? sql_column_text(st, 0) : NULL;
        check(as_text != NULL && memcmp(as_text, blob, sizeof blob) == 0,
              "sql pg: a bytea column read as text gives its bytes too (as SQLite's)", "%s",
              as_text == NULL ? "NULL" : "other bytes");
        sql_release(st);
    }
    if (sql_prepare(db, "SELECT ?1, ?1 IS NULL", &st, err, sizeof err) == 0) {
        sql_bind_blob(st, 1, NULL, 0);
        int got = sql_step_row(db, st, err, sizeof err);
        size_t len = 99;
        const void *bytes = got == 1 ? sql_column_blob(st, 0, &len) : NULL;
        check(got == 1 && bytes != NULL && len == 0 && sql_column_int64(st, 1) == 0,
              "sql pg: a blob of no bytes is an empty bytea, not NULL", "%d %zu %s", got, len, err);
        sql_release(st);
    }

    /* int64 extremes */
    static const int64_t ints[] = {INT64_MIN, INT64_MAX, 0, -1, 1};
    bool all = true;
    char detail[128] = "";
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (sql_prepare(db, "SELECT ?1, ?1 + 0 = ?1", &st, err, sizeof err) != 0) {
            all = false;
            break;
        }
        sql_bind_int64(st, 1, ints[i]);
        int got = sql_step_row(db, st, err, sizeof err);
        if (got != 1 || sql_column_int64(st, 0) != ints[i] || sql_column_int64(st, 1) != 1) {
            all = false;
            snprintf(detail, sizeof detail, "%lld came back as %.80s", (long long)ints[i],
                     got == 1 ? sql_column_text(st, 0) : err);
        }
        sql_release(st);
    }
    check(all, "sql pg: int64 extremes (INT64_MIN, INT64_MAX, 0, -1) round trip as int8", "%s", detail);

    /* NULL */
    if (sql_prepare(db, "SELECT ?1, ?2, ?3", &st, err, sizeof err) == 0) {
        sql_bind_null(st, 1);
        sql_bind_text(st, 2, NULL);
        sql_bind_text(st, 3, "");
        int got = sql_step_row(db, st, err, sizeof err);
        check(got == 1 && sql_column_is_null(st, 0) && sql_column_text(st, 0) == NULL &&
                  sql_column_is_null(st, 1) && !sql_column_is_null(st, 2) &&
                  strcmp(sql_column_text(st, 2), "") == 0 && sql_column_int64(st, 0) == 0,
              "sql pg: NULL (bind_null, bind_text NULL) reads as NULL, '' as empty text", "%d %s", got, err);
        sql_release(st);
    }

    /* ?N out of order, and inside a literal or a comment */
    if (sql_prepare(db, "SELECT ?2 || '-' || ?1", &st, err, sizeof err) == 0) {
        sql_bind_text(st, 1, "one");
        sql_bind_text(st, 2, "two");
        int got = sql_step_row(db, st, err, sizeof err);
        check(got == 1 && strcmp(sql_column_text(st, 0), "two-one") == 0,
              "sql pg: ?2 before ?1 binds each to its number", "%s", got == 1 ? sql_column_text(st, 0) : err);
        sql_release(st);
    }
    if (sql_prepare(db, "SELECT '?1 it''s ?2', ?1, \"?2\" FROM (SELECT 5 AS \"?2\") x -- ?3\n"
                        "/* ?4 */",
                    &st, err, sizeof err) == 0) {
        sql_bind_text(st, 1, "x");
        int got = sql_step_row(db, st, err, sizeof err);
        check(got == 1 && strcmp(sql_column_text(st, 0), "?1 it's ?2") == 0 &&
                  strcmp(sql_column_text(st, 1), "x") == 0 && sql_column_int64(st, 2) == 5,
              "sql pg: ?N inside a literal, a quoted name or a comment is left alone (one parameter)",
              "%s", got == 1 ? sql_column_text(st, 0) : err);
        sql_release(st);
    }

    /* coalesce(?1, 0): typed from the bind (int8), and NULL takes the other's type */
    if (sql_prepare(db, "SELECT coalesce(?1, 0)", &st, err, sizeof err) == 0) {
        sql_bind_int64(st, 1, INT64_MAX);
        int got = sql_step_row(db, st, err, sizeof err);
        check(got == 1 && sql_column_int64(st, 0) == INT64_MAX,
              "sql pg: coalesce(?1, 0) with an int64 beyond int4 (the type comes from the bind)",
              "%s", got == 1 ? sql_column_text(st, 0) : err);
        sql_release(st);
    }
    if (sql_prepare(db, "SELECT coalesce(?1, 0)", &st, err, sizeof err) == 0) {
        sql_bind_null(st, 1);
        int got = sql_step_row(db, st, err, sizeof err);
        check(got == 1 && !sql_column_is_null(st, 0) && sql_column_int64(st, 0) == 0,
              "sql pg: coalesce(?1, 0) with NULL gives 0 (a second server statement for the NULL)",
              "%s", got == 1 ? "NULL" : err);
        sql_release(st);
    }
    if (sql_prepare(db, "SELECT ?1 IS NULL, ?2 IS NULL", &st, err, sizeof err) == 0) {
        sql_bind_int64(st, 1, 3);
        sql_bind_text(st, 2, "t");
        int got = sql_step_row(db, st, err, sizeof err);
        check(got == 1 && sql_column_int64(st, 0) == 0 && sql_column_int64(st, 1) == 0,
              "sql pg: ?1 IS NULL with an int or a text bound (no context types it: the bind does)",
              "%s", got == 1 ? sql_column_text(st, 0) : err);
        sql_release(st);
    }

    /* a NULL where nothing types it (runs' filter), and NULL into a BIGINT column */
    static const char *const FILTER = "SELECT count(*) FROM t WHERE ?1 IS NULL OR s = ?1";
    long long counts[2] = {-1, -1};
    for (int i = 0; i < 2; i++) {
        if (sql_prepare(db, FILTER, &st, err, sizeof err) != 0)
            break;
        sql_bind_text(st, 1, i == 0 ? NULL : "second");
        if (sql_step_row(db, st, err, sizeof err) == 1)
            counts[i] = sql_column_int64(st, 0);
        sql_release(st);
    }
    check(counts[0] == 2 && counts[1] == 1,
          "sql pg: ?1 IS NULL OR s = ?1 runs with NULL (every row) and with a text (its row) "
          "[guard: a NULL is sent as the literal NULL]",
          "%lld %lld %s", counts[0], counts[1], err);
    if (sql_prepare(db, "INSERT INTO t(n, b) VALUES (?1, ?2) RETURNING n IS NULL, b IS NULL", &st, err,
                    sizeof err) == 0) {
        sql_bind_null(st, 1);
        sql_bind_null(st, 2);
        int got = sql_step_row(db, st, err, sizeof err);
        check(got == 1 && sql_column_int64(st, 0) == 1 && sql_column_int64(st, 1) == 1,
              "sql pg: NULL goes into a BIGINT and a BYTEA column", "%d %s", got, err);
        sql_release(st);
        (void)sql_exec(db, "DELETE FROM t WHERE s IS NULL AND n IS NULL AND b IS NULL");
    }

    /* booleans read as SQLite's integers */
    if (sql_prepare(db, "SELECT true, false", &st, err, sizeof err) == 0) {
        int got = sql_step_row(db, st, err, sizeof err);
        check(got == 1 && sql_column_int64(st, 0) == 1 && sql_column_int64(st, 1) == 0 &&
                  strcmp(sql_column_text(st, 0), "1") == 0 && strcmp(sql_column_text(st, 1), "0") == 0,
              "sql pg: booleans read as 1 and 0", "%s", got == 1 ? sql_column_text(st, 0) : err);
        sql_release(st);
    }

    /* changes(): the last INSERT, UPDATE or DELETE; a SELECT leaves it */
    if (sql_exec(db, "INSERT INTO t(n) VALUES (1), (2), (3)") == 0) {
        long long inserted = sql_changes(db);
        if (sql_prepare(db, "UPDATE t SET n = n + ?1 WHERE n IS NOT NULL", &st, err, sizeof err) == 0) {
            sql_bind_int64(st, 1, 10);
            int rc = sql_run(db, st, err, sizeof err);
            long long updated = sql_changes(db);
            char *count = scalar(db, "SELECT count(*) FROM t");
            long long after_select = sql_changes(db);
            check(rc == 0 && inserted == 3 && updated == 3 && after_select == 3,
                  "sql pg: changes() counts the rows of the last INSERT and UPDATE; a SELECT leaves it",
                  "insert %lld update %lld after select %lld", inserted, updated, after_select);
            free(count);
        }
    }
    if (sql_prepare(db, "SELECT n FROM t WHERE n IS NOT NULL ORDER BY n", &st, err, sizeof err) == 0) {
        int rows = 0;
        int64_t want = 11;
        bool in_order = true;
        while (sql_step(st) == SQL_ROW) {
            in_order = in_order && sql_column_int64(st, 0) == want++;
            rows++;
        }
        check(in_order && rows == 3 && sql_step(st) == SQL_DONE,
              "sql pg: step walks every row in order, then SQL_DONE (and stays there)", "%d rows", rows);
        sql_release(st);
    }
}

/* ---- 2. kept statements ------------------------------------------------------------- */

static void kept(struct sql_db *db)
{
    static const char *const SQL = "SELECT ?1 + 1";
    char err[384];
    struct sql_stmt *a = NULL, *b = NULL, *c = NULL;
    if (sql_prepare(db, SQL, &a, err, sizeof err) != 0)
        return fail("sql pg: kept statements", "%s", err);
    sql_release(a);
    if (sql_prepare(db, SQL, &b, err, sizeof err) != 0)
        return fail("sql pg: kept statements", "%s", err);
    check(a == b, "sql pg: the same SQL pointer prepared again reuses the kept statement", "%p %p",
          (void *)a, (void *)b);
    /* b is in use: a nested use of the same SQL gets its own statement */
    if (sql_prepare(db, SQL, &c, err, sizeof err) != 0) {
        sql_release(b);
        return fail("sql pg: kept statements", "%s", err);
    }
    sql_bind_int64(b, 1, 1);
    sql_bind_int64(c, 1, 41);
    bool b_row = sql_step(b) == SQL_ROW, c_row = sql_step(c) == SQL_ROW;
    check(c != b && b_row && c_row && sql_column_int64(b, 0) == 2 && sql_column_int64(c, 0) == 42,
          "sql pg: a nested use of a statement in use gets its own, and both run",
          "%s", c == b ? "same statement" : "wrong values");
    sql_release(c);
    sql_release(b);
    /* binds do not leak into the next use: an unbound parameter is NULL */
    if (sql_prepare(db, "SELECT ?1", &a, err, sizeof err) == 0) {
        sql_bind_text(a, 1, "first");
        (void)sql_step(a);
        sql_release(a);
    }
    if (sql_prepare(db, "SELECT ?1", &a, err, sizeof err) == 0) {
        int got = sql_step_row(db, a, err, sizeof err);
        check(got == 1 && sql_column_is_null(a, 0),
              "sql pg: release forgets the binds (an unbound parameter is NULL, as SQLite's)", "%s",
              got == 1 ? sql_column_text(a, 0) : err);
        sql_release(a);
    }
}

/* ---- 3. errors ------------------------------------------------------------------------ */

static void errors(struct sql_db *db, struct sql_db *other)
{
    char err[384], text[384];
    struct sql_stmt *st;
    /* a unique violation: PostgreSQL's DETAIL would say Key (u)=(the value) */
    static const char *const INSERT_U = "INSERT INTO t(u) VALUES (?1)";
    for (int i = 0; i < 2; i++) {
        if (sql_prepare(db, INSERT_U, &st, err, sizeof err) != 0)
            break;
        sql_bind_text(st, 1, "secret-value-0451");
        int rc = sql_run(db, st, err, sizeof err);
        if (i == 1) {
            check(rc != 0 && strstr(err, "unique") != NULL && strstr(err, "0451") == NULL && one_line(err),
                  "sql pg: an error is the primary message in one line, without the DETAIL that "
                  "names the row's value",
                  "%s", err);
            check(strncmp(err, "store: ", 7) == 0 && !sql_disk_full(db),
                  "sql pg: sql_fail says store: and a unique violation is no full disk", "%s", err);
        }
    }
    if (sql_prepare(db, "SELEC 1", &st, err, sizeof err) == 0) {
        enum sql_step rc = sql_step(st);
        sql_error_text(db, text, sizeof text);
        check(rc == SQL_ERROR && strstr(text, "syntax error") != NULL && one_line(text),
              "sql pg: a syntax error fails the first step, in one line", "%s", text);
        check(sql_step(st) == SQL_ERROR, "sql pg: a failed statement keeps failing until released",
              "%s", "stepped again");
        sql_release(st);
    }
    /* class 53: only 53100 is a full disk */
    int rc = sql_exec(db, "DO $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on "
                          "device' USING ERRCODE = '53100'; END $$");
    sql_error_text(db, text, sizeof text);
    check(rc != 0 && sql_disk_full(db) && strncmp(text, "the disk is full (", 18) == 0,
          "sql pg: SQLSTATE 53100 is a full disk and says so", "%s", text);
    rc = sql_exec(db, "DO $$ BEGIN RAISE EXCEPTION 'out of memory' USING ERRCODE = '53200'; END $$");
    sql_error_text(db, text, sizeof text);
    check(rc != 0 && !sql_disk_full(db) && strstr(text, "out of memory") != NULL,
          "sql pg: SQLSTATE 53200 (out of memory) is not a full disk", "%s", text);
    check(strcmp(sql_engine(db), "postgresql") == 0, "sql pg: sql_engine names postgresql", "%s",
          sql_engine(db));

    /* a lost connection: another session terminates this one's backend and waits */
    char *pid = scalar(db, "SELECT pg_backend_pid()");
    char kill_sql[128];
    snprintf(kill_sql, sizeof kill_sql, "SELECT pg_terminate_backend(%s, 10000)", pid != NULL ? pid : "0");
    char *killed = scalar(other, kill_sql);
    free(pid);
    if (!check(killed != NULL && strcmp(killed, "1") == 0, "sql pg: the session was terminated (setup)",
               "%s", killed != NULL ? killed : sql_error_text(other, text, sizeof text))) {
        free(killed);
        return;
    }
    free(killed);
    if (sql_prepare(db, "SELECT 1", &st, err, sizeof err) == 0) {
        enum sql_step step = sql_step(st);
        sql_error_text(db, text, sizeof text);
        check(step == SQL_ERROR && strstr(text, "the connection to PostgreSQL was lost") != NULL &&
                  one_line(text),
              "sql pg: a statement on a lost connection says the connection was lost", "%s", text);
        sql_release(st);
    }
    check(sql_postgres_txn_status(db) == SQL_PG_UNKNOWN,
          "sql pg: a lost connection is not idle (serve closes it rather than keeping it)", "%d",
          (int)sql_postgres_txn_status(db));
}

/* ---- 4. store_open, store_use --------------------------------------------------------- */

static void schema(struct sql_db *observer, const char *home)
{
    char err[512];
    struct store *s = NULL;
    if (!check(store_use(g_uri, err, sizeof err) == 0, "store pg: store_use takes a postgresql:// URI",
               "%s", err))
        return;
    check(store_location() != NULL && strcmp(store_location(), g_uri) == 0,
          "store pg: store_location gives the URI", "%s", store_location() ? store_location() : "NULL");
    if (!check(store_open(home, &s, err, sizeof err) == 0, "store pg: store_open on a fresh database",
               "%s", err))
        return;
    check(store_created(s) && store_schema_version_at_open(s) == 0 &&
              store_schema_version(s) == STORE_SCHEMA_VERSION,
          "store pg: a fresh database gets the schema (created, at open 0, now the build's version)",
          "created %d at open %d now %d", store_created(s), store_schema_version_at_open(s),
          store_schema_version(s));
    check_int_eq(scalar_int(observer, "SELECT version FROM basal_schema"), STORE_SCHEMA_VERSION,
                 "store pg: basal_schema holds the build's version (7)");
    check(strcmp(store_path(s), g_uri) == 0, "store pg: store_path is the URI", "%s", store_path(s));
    struct store_settings set;
    check(store_settings_get(s, &set, err, sizeof err) == 0 && strcmp(set.journal_mode, "postgresql") == 0 &&
              set.synchronous == 2 && set.foreign_keys,
          "store pg: settings say postgresql, commits wait for their flush, foreign keys on", "%s %d %d %s",
          set.journal_mode, set.synchronous, set.foreign_keys, err);
    check(store_group_commit(s, err, sizeof err) == 0 && store_settings_get(s, &set, err, sizeof err) == 0 &&
              set.synchronous == 2,
          "store pg: store_group_commit changes nothing (PostgreSQL shares flushes itself)", "%d",
          set.synchronous);
    check(store_benchmark_sync_off(s, true) == 0 && store_settings_get(s, &set, err, sizeof err) == 0 &&
              set.synchronous == 0,
          "store pg: store_benchmark_sync_off(true) turns synchronous_commit off", "%d", set.synchronous);
    check(store_benchmark_sync_off(s, false) == 0 && store_settings_get(s, &set, err, sizeof err) == 0 &&
              set.synchronous == 2,
          "store pg: store_benchmark_sync_off(false) brings it back", "%d", set.synchronous);
    store_close(s);
    s = NULL;

    long long tables = scalar_int(observer, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()");
    if (check(store_open(home, &s, err, sizeof err) == 0, "store pg: store_open of an existing database",
              "%s", err)) {
        check(!store_created(s) && store_schema_version_at_open(s) == STORE_SCHEMA_VERSION &&
                  scalar_int(observer, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()") ==
                      tables,
              "store pg: opening it again creates nothing (found at its version)", "created %d at open %d",
              store_created(s), store_schema_version_at_open(s));
        store_close(s);
        s = NULL;
    }

    /* a newer version is refused and nothing changes */
    if (sql_exec(observer, "UPDATE basal_schema SET version = 99") != 0)
        return fail("store pg: basal_schema set to 99 (setup)", "%s", sql_error_text(observer, err, sizeof err));
    int rc = store_open(home, &s, err, sizeof err);
    char want[1200];
    snprintf(want, sizeof want, "store %s has schema version 99, newer than this build's %d", g_uri,
             STORE_SCHEMA_VERSION);
    check(rc != 0 && s == NULL && strstr(err, want) != NULL && one_line(err),
          "store pg: a newer schema version is refused in one line naming both versions", "%s", err);
    check(scalar_int(observer, "SELECT version FROM basal_schema") == 99 &&
              scalar_int(observer, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()") == tables,
          "store pg: the refused open changed nothing (still 99, the same tables)", "%lld",
          scalar_int(observer, "SELECT version FROM basal_schema"));
    if (s != NULL)
        store_close(s);
    (void)sql_exec(observer, "UPDATE basal_schema SET version = 7");
}

static void uris(const char *home)
{
    char err[512];
    char dir[] = "/tmp/basal-no-pg.XXXXXX";
    if (mkdtemp(dir) == NULL)
        return fail("store pg: unreachable server (setup)", "mkdtemp failed");
    char uri[256];
    snprintf(uri, sizeof uri, "postgresql:///basal?host=%s", dir);
    struct store *s = NULL;
    if (store_use(uri, err, sizeof err) == 0) {
        int rc = store_open(home, &s, err, sizeof err);
        check(rc != 0 && s == NULL && strncmp(err, "store: cannot connect to PostgreSQL: ", 37) == 0 &&
                  one_line(err) && strlen(err) > 37,
              "store pg: no server at the socket: one line, store: cannot connect to PostgreSQL: "
              "libpq's reason",
              "%s", err);
        harness_note("unreachable: %s", err);
    } else {
        fail("store pg: store_use of a socket URI", "%s", err);
    }
    rmdir(dir);

    static const char *const REFUSED[] = {
        "postgresql://basal:hunter2@localhost/basal",
        "postgres://basal:hunter2@/basal?host=/run/postgresql",
        "postgresql:///basal?password=hunter2",
        "postgresql:///basal?host=/run/postgresql&password=hunter2",
    };
    for (size_t i = 0; i < sizeof REFUSED / sizeof REFUSED[0]; i++) {
        char name[160];
        snprintf(name, sizeof name, "store pg: a URI with a password is refused, without echoing it (%zu)", i);
        int rc = store_use(REFUSED[i], err, sizeof err);
        check(rc != 0 && strstr(err, "password") != NULL && strstr(err, "hunter2") == NULL &&
                  store_location() != NULL && strcmp(store_location(), uri) == 0,
              name, "%d %s (location %s)", rc, err, store_location() ? store_location() : "NULL");
    }
    static const char *const OTHER[] = {"mysql://localhost/basal", "sqlite:///tmp/basal.db", "/tmp/basal.db"};
    for (size_t i = 0; i < sizeof OTHER / sizeof OTHER[0]; i++) {
        char name[160];
        snprintf(name, sizeof name, "store pg: a non-PostgreSQL location is refused (%s)", OTHER[i]);
        check(store_use(OTHER[i], err, sizeof err) != 0 && strstr(err, "not a PostgreSQL") != NULL &&
                  strcmp(store_location(), uri) == 0,
              name, "%s", err);
    }
    check(store_use(g_uri, err, sizeof err) == 0, "store pg: store_use back to the test database", "%s", err);
}

/* ---- 5. transactions ------------------------------------------------------------------ */

static atomic_int g_committing; /* set by the first writer just before its COMMIT */

struct second_writer {
    struct store *s;
    atomic_int started;
    int begin_rc;
    int saw_committing;
    long long counter;
    char err[384];
};

static void *second_writer(void *arg)
{
    struct second_writer *w = arg;
    atomic_store(&w->started, 1);
    w->begin_rc = store_begin_txn(w->s, w->err, sizeof w->err);
    w->saw_committing = atomic_load(&g_committing);
    if (w->begin_rc == 0) {
        (void)store_health_get(w->s, "pg.turns", &w->counter);
        (void)store_health_add(w->s, "pg.turns", 1);
        (void)store_end_txn(w->s, 0, w->err, sizeof w->err);
    }
    return NULL;
}

/* True once some session waits for an advisory lock: the second writer is blocked. */
static bool a_writer_waits(struct sql_db *observer, int timeout_ms)
{
    int64_t deadline = now_us() + (int64_t)timeout_ms * 1000;
    do {
        if (scalar_int(observer, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND "
                                 "NOT granted") > 0)
            return true;
    } while (now_us() < deadline);
    return false;
}

static void transactions(struct sql_db *observer, const char *home)
{
    char err[512];
    struct store *a = NULL, *b = NULL;
    if (store_open(home, &a, err, sizeof err) != 0 || store_open(home, &b, err, sizeof err) != 0)
        return fail("store pg: two connections (setup)", "%s", err);
    check(store_idle(a), "store pg: a fresh connection is idle", "%s", "not idle");
    if (store_begin_txn(a, err, sizeof err) != 0) {
        fail("store pg: first write transaction", "%s", err);
        goto out;
    }
    check(!store_idle(a), "store pg: inside a transaction the connection is not idle", "%s", "idle");
    check(store_begin_txn(a, err, sizeof err) != 0 && strstr(err, "already open") != NULL,
          "store pg: a transaction does not nest (PostgreSQL would only warn)", "%s", err);
    (void)store_health_add(a, "pg.turns", 1);

    struct second_writer w = {.s = b};
    pthread_t thread;
    if (pthread_create(&thread, NULL, second_writer, &w) != 0) {
        fail("store pg: second writer thread", "pthread_create failed");
        goto out;
    }
    bool waited = a_writer_waits(observer, 20000);
    atomic_store(&g_committing, 1);
    int rc = store_commit(a);
    pthread_join(thread, NULL);
    check(rc == 0, "store pg: the first writer commits", "%s", store_errmsg(a));
    check(waited && w.begin_rc == 0 && w.saw_committing == 1,
          "store pg: a second write transaction waits for the first: its begin returns only after "
          "the first began to commit [guard: the advisory write lock]",
          "waiting seen %d, begin %d, flag seen after begin %d: %s", waited, w.begin_rc,
          w.saw_committing, w.err);
    check(w.counter == 1 && scalar_int(observer, "SELECT value FROM health_counters WHERE name = 'pg.turns'") == 2,
          "store pg: the second writer, once in, reads what the first committed (BEGIN IMMEDIATE's view)",
          "it read %lld", w.counter);

    /* unsynced: commits without waiting for the flush, and is seen */
    if (store_begin_txn_unsynced(a, err, sizeof err) == 0) {
        struct store_settings set = {0};
        (void)store_settings_get(a, &set, err, sizeof err);
        (void)store_health_add(a, "pg.unsynced", 5);
        int crc = store_end_txn(a, 0, err, sizeof err);
        struct store_settings after = {0};
        (void)store_settings_get(a, &after, err, sizeof err);
        check(set.synchronous == 0 && crc == 0 &&
                  scalar_int(observer, "SELECT value FROM health_counters WHERE name = 'pg.unsynced'") == 5,
              "store pg: an unsynced transaction runs with synchronous_commit off, commits and is "
              "seen by another connection",
              "level inside %d, commit %d: %s", set.synchronous, crc, err);
        check(after.synchronous == 2, "store pg: after it the connection waits for flushes again (SET LOCAL)",
              "%d", after.synchronous);
    } else {
        fail("store pg: an unsynced transaction", "%s", err);
    }

    /* a read transaction is one snapshot and writes nothing */
    if (store_begin_read(a, err, sizeof err) == 0) {
        long long before = 0, later = 0;
        (void)store_health_get(a, "pg.unsynced", &before);
        (void)store_health_add(b, "pg.unsynced", 1); /* b commits meanwhile */
        (void)store_health_get(a, "pg.unsynced", &later);
        int wrc = store_health_add(a, "pg.unsynced", 1);
        store_end_read(a);
        check(before == 5 && later == 5, "store pg: a read transaction sees one state (repeatable read)",
              "%lld then %lld", before, later);
        check(wrc != 0 && store_idle(a), "store pg: a read transaction refuses writes, and ends", "%d", wrc);
    }

    /* a failed statement aborts the transaction: its COMMIT must not claim success */
    if (store_begin_txn(a, err, sizeof err) == 0) {
        (void)store_health_add(a, "pg.aborted", 1);
        (void)sql_exec(store_db(a), "SELECT 1/0");
        int crc = store_commit(a);
        const char *why = store_errmsg(a);
        check(crc != 0 && strstr(why, "aborted") != NULL && strstr(why, "division by zero") != NULL,
              "store pg: COMMIT of a transaction PostgreSQL aborted fails, naming the first failure "
              "[guard: no false commit]",
              "%d %s", crc, why);
        store_rollback(a);
        check(store_idle(a) && scalar_int(observer, "SELECT count(*) FROM health_counters WHERE name = "
                                                    "'pg.aborted'") == 0,
              "store pg: nothing of the aborted transaction is kept", "%s", "a row was kept");
    }
    check(store_commit(a) != 0, "store pg: COMMIT with no transaction open fails (as SQLite's)", "%s",
          "committed");

    /* timing: a trivial write transaction through the engine */
    enum { ROUNDS = 200 };
    int64_t t0 = now_us();
    int done = 0;
    for (int i = 0; i < ROUNDS; i++) {
        if (store_begin_txn(a, err, sizeof err) != 0)
            break;
        int hrc = store_health_add(a, "pg.timing", 1);
        if (store_end_txn(a, hrc, err, sizeof err) != 0)
            break;
        done++;
    }
    int64_t t1 = now_us();
    struct sql_stmt *st;
    int raw = 0;
    for (int i = 0; i < ROUNDS; i++) {
        if (sql_prepare(observer, "INSERT INTO health_counters(name, value) VALUES ('pg.raw', 1) "
                                  "ON CONFLICT(name) DO UPDATE SET value = health_counters.value + 1",
                        &st, NULL, 0) != 0 || sql_run(observer, st, NULL, 0) != 0)
            break;
        raw++;
    }
    int64_t t2 = now_us();
    check(done == ROUNDS && raw == ROUNDS, "store pg: timed write transactions all commit", "%d %d", done, raw);
    harness_note("a write transaction (BEGIN, lock, one upsert, COMMIT) through store.h: %.0f us; "
                 "one autocommit upsert on a bare connection: %.0f us",
                 (double)(t1 - t0) / ROUNDS, (double)(t2 - t1) / ROUNDS);
out:
    store_close(a);
    store_close(b);
}

/* ---- 6. nodes opening a new database at once ---------------------------------------- */

struct opener {
    const char *home;
    pthread_barrier_t *start;
    int rc;
    bool created;
    char err[512];
};

static void *open_at_once(void *arg)
{
    struct opener *o = arg;
    struct store *s = NULL;
    pthread_barrier_wait(o->start);
    o->rc = store_open(o->home, &s, o->err, sizeof o->err);
    o->created = o->rc == 0 && store_created(s);
    if (s != NULL)
        store_close(s);
    return NULL;
}

static void concurrent_open(const char *home)
{
    enum { OPENERS = 3 };
    char uri[1024], err[512];
    if (test_pg_database("t_sql_postgres_race", uri, sizeof uri) != 0)
        return;
    if (store_use(uri, err, sizeof err) != 0)
        return fail("store pg: concurrent opens (setup)", "%s", err);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, OPENERS);
    struct opener o[OPENERS];
    pthread_t threads[OPENERS];
    for (int i = 0; i < OPENERS; i++) {
        o[i] = (struct opener){.home = home, .start = &start};
        pthread_create(&threads[i], NULL, open_at_once, &o[i]);
    }
    int opened = 0, created = 0;
    const char *why = "";
    for (int i = 0; i < OPENERS; i++) {
        pthread_join(threads[i], NULL);
        opened += o[i].rc == 0;
        created += o[i].created;
        if (o[i].rc != 0)
            why = o[i].err;
    }
    pthread_barrier_destroy(&start);
    check(opened == OPENERS && created == 1,
          "store pg: three opens of a new database at once all succeed and exactly one creates the "
          "schema [guard: the schema's advisory lock]",
          "%d opened, %d created: %s", opened, created, why);
    (void)store_use(g_uri, err, sizeof err);
}

int main(void)
{
    char err[512];
    if (test_pg_database("t_sql_postgres", g_uri, sizeof g_uri) != 0) {
        fail("sql pg: a test database", "%s", g_uri);
        return harness_finish();
    }
    char home[] = "/tmp/basal-t-sql-pg.XXXXXX";
    if (mkdtemp(home) == NULL) {
        fail("sql pg: a data home", "mkdtemp failed");
        return harness_finish();
    }
    struct sql_db *db = sql_postgres_connect(g_uri, err, sizeof err);
    struct sql_db *other = sql_postgres_connect(g_uri, err, sizeof err);
    if (!check(db != NULL && other != NULL, "sql pg: sql_postgres_connect reaches the test database",
               "%s", err))
        return harness_finish();
    values(db);
    kept(db);
    errors(db, other);
    sql_postgres_close(db);
    schema(other, home);
    uris(home);
    transactions(other, home);
    concurrent_open(home);
    sql_postgres_close(other);
    rmdir(home);
    return harness_finish();
}
