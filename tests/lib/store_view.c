#include "store_view.h"

#include "harness.h"
#include "pg_test.h"
#include "test_store.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STORE_VIEW_BUSY_MS 10000

/* The first row of sql on a read-only connection, or NULL (then *db_out is closed). */
static sqlite3_stmt *first_row(const char *db, const char *sql, sqlite3 **db_out)
{
    sqlite3_stmt *st = NULL;
    *db_out = NULL;
    if (sqlite3_open_v2(db, db_out, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(*db_out, STORE_VIEW_BUSY_MS);
        if (sqlite3_prepare_v2(*db_out, sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            return st;
    }
    sqlite3_finalize(st);
    sqlite3_close(*db_out);
    *db_out = NULL;
    return NULL;
}

/* The PostgreSQL database of db's data home in the pg/ variant (test_store.h), or
 * NULL: the store is the SQLite file db. */
static const char *pg_store_of(const char *db)
{
    const char *slash = strrchr(db, '/');
    char home[4096];
    if (slash == NULL || (size_t)(slash - db) >= sizeof home)
        return NULL;
    memcpy(home, db, (size_t)(slash - db));
    home[slash - db] = '\0';
    return test_store_uri(home);
}

/* psql prints a BYTEA (the store's BLOB columns: results, values, scripts) as "\x" and
 * hex, where SQLite gives the bytes: decodes such a text in place, so that a test reads
 * the same value on either engine. (No TEXT column of the store holds "\x" and hex.) */
static void pg_bytea_decode(char *text)
{
    size_t len = strlen(text);
    if (len < 2 || text[0] != '\\' || text[1] != 'x' || len % 2 != 0 ||
        strspn(text + 2, "0123456789abcdef") != len - 2)
        return;
    size_t n = 0;
    for (size_t i = 2; i < len; i += 2) {
        char pair[3] = {text[i], text[i + 1], '\0'};
        text[n++] = (char)strtol(pair, NULL, 16);
    }
    text[n] = '\0';
}

/* The first column of the first row of sql on PostgreSQL, into out: 0, or -1 (no row,
 * or the statement failed). */
static int pg_first(const char *uri, const char *sql, char *out, size_t cap)
{
    if (test_pg_sql(uri, sql, out, cap) != 0 || out[0] == '\0')
        return -1;
    out[strcspn(out, "|\n")] = '\0';
    pg_bytea_decode(out);
    return 0;
}

long long store_number(const char *db, const char *sql)
{
    const char *uri = pg_store_of(db);
    if (uri != NULL) {
        char out[4096];
        return pg_first(uri, sql, out, sizeof out) == 0 ? strtoll(out, NULL, 10) : -1;
    }
    sqlite3 *h;
    sqlite3_stmt *st = first_row(db, sql, &h);
    long long v = st != NULL ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

char *store_text(const char *db, const char *sql)
{
    const char *uri = pg_store_of(db);
    if (uri != NULL) {
        char out[65536];
        return pg_first(uri, sql, out, sizeof out) == 0 ? strdup(out) : NULL;
    }
    sqlite3 *h;
    sqlite3_stmt *st = first_row(db, sql, &h);
    const unsigned char *text = st != NULL ? sqlite3_column_text(st, 0) : NULL;
    char *v = text != NULL ? strdup((const char *)text) : NULL;
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

long long store_exec_changes(const char *db, const char *sql)
{
    const char *uri = pg_store_of(db);
    if (uri != NULL) {
        check(false, "store view: a count of changed rows on PostgreSQL", "%s",
              "not provided in the pg/ variant: keep this test out of PG_VARIANT");
        return -1;
    }
    sqlite3 *h = NULL;
    long long changed = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(h, STORE_VIEW_BUSY_MS);
        if (sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK)
            changed = sqlite3_total_changes64(h);
    }
    sqlite3_close(h);
    return changed;
}

bool store_exec(const char *db, const char *sql)
{
    const char *uri = pg_store_of(db);
    if (uri != NULL) {
        char out[4096];
        return test_pg_sql(uri, sql, out, sizeof out) == 0;
    }
    return store_exec_changes(db, sql) >= 0;
}

bool store_create(const char *db, const char *schema_sql, const char *rows_sql)
{
    sqlite3 *h = NULL;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_EXCLUSIVE;
    bool good = access(db, F_OK) != 0 && sqlite3_open_v2(db, &h, flags, NULL) == SQLITE_OK &&
                sqlite3_exec(h, "BEGIN", NULL, NULL, NULL) == SQLITE_OK &&
                sqlite3_exec(h, schema_sql, NULL, NULL, NULL) == SQLITE_OK &&
                sqlite3_exec(h, rows_sql, NULL, NULL, NULL) == SQLITE_OK &&
                sqlite3_exec(h, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_close(h);
    return good && chmod(db, 0600) == 0;
}

/* Appends n bytes of text to the growing string *s of *len bytes (always NUL-ended). */
static void append(char **s, size_t *len, const char *text, size_t n)
{
    char *grown = realloc(*s, *len + n + 1);
    if (grown == NULL)
        return;
    memcpy(grown + *len, text, n);
    *len += n;
    grown[*len] = '\0';
    *s = grown;
}

char *store_dump(const char *db, const char *const *queries, size_t count)
{
    char *s = NULL;
    size_t len = 0;
    append(&s, &len, "", 0);
    sqlite3 *h = NULL;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(h);
        append(&s, &len, "(cannot open)", 13);
        return s;
    }
    sqlite3_busy_timeout(h, STORE_VIEW_BUSY_MS);
    for (size_t q = 0; q < count; q++) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(h, queries[q], -1, &st, NULL) != SQLITE_OK) {
            append(&s, &len, "(error)", 7);
            continue;
        }
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                const unsigned char *bytes = sqlite3_column_blob(st, c);
                int n = sqlite3_column_bytes(st, c);
                char hex[3];
                for (int i = 0; bytes != NULL && i < n; i++) {
                    sfmt(hex, sizeof hex, "%02x", bytes[i]);
                    append(&s, &len, hex, 2);
                }
                append(&s, &len, "|", 1);
            }
            append(&s, &len, "\n", 1);
        }
        sqlite3_finalize(st);
        append(&s, &len, "--\n", 3);
    }
    sqlite3_close(h);
    return s;
}
