#include "store/sql.h"

#include "base/error_line.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Prepared statements kept between uses, by connection and SQL text address (the
 * callers pass string literals). Compiling a statement costs more than running the
 * small ones a host call makes, so the journal's per-call path reuses them. One cache
 * per thread: a connection is used and closed only by the thread that opened it
 * (ck-basal serve gives each of its threads a connection of its own). */
#define SQL_CACHE_SLOTS 128

struct cached {
    sqlite3 *db;
    const char *sql;
    sqlite3_stmt *st;
    bool busy;
};

static _Thread_local struct cached g_cache[SQL_CACHE_SLOTS];

int sql_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, char *err, size_t err_cap)
{
    struct cached *free_slot = NULL;
    for (size_t i = 0; i < SQL_CACHE_SLOTS; i++) {
        struct cached *c = &g_cache[i];
        if (c->db == db && c->sql == sql && !c->busy) {
            c->busy = true;
            *st = c->st;
            return 0;
        }
        if (c->db == NULL && free_slot == NULL)
            free_slot = c;
    }
    if (sqlite3_prepare_v3(db, sql, -1, free_slot != NULL ? SQLITE_PREPARE_PERSISTENT : 0, st,
                           NULL) != SQLITE_OK) {
        *st = NULL;
        return sql_fail(db, err, err_cap);
    }
    if (free_slot != NULL)
        *free_slot = (struct cached){db, sql, *st, true};
    return 0;
}

void sql_release(sqlite3_stmt *st)
{
    if (st == NULL)
        return;
    for (size_t i = 0; i < SQL_CACHE_SLOTS; i++) {
        if (g_cache[i].st == st) {
            sqlite3_reset(st);
            sqlite3_clear_bindings(st);
            g_cache[i].busy = false;
            return;
        }
    }
    sqlite3_finalize(st);
}

void sql_cache_drop(const sqlite3 *db)
{
    for (size_t i = 0; i < SQL_CACHE_SLOTS; i++) {
        if (g_cache[i].db == db) {
            sqlite3_finalize(g_cache[i].st);
            memset(&g_cache[i], 0, sizeof g_cache[i]);
        }
    }
}

bool sql_disk_full(sqlite3 *db)
{
    int code = sqlite3_extended_errcode(db);
    if ((code & 0xff) == SQLITE_FULL)
        return true;
    /* Out of space outside SQLite's own writes (extending -shm, creating -wal) comes
     * back as an I/O error or a failed open; the errno under it says which. */
    if ((code & 0xff) != SQLITE_IOERR && (code & 0xff) != SQLITE_CANTOPEN)
        return false;
    int os = sqlite3_system_errno(db);
    return os == ENOSPC || os == EDQUOT;
}

const char *sql_error_text(sqlite3 *db, char *buf, size_t cap)
{
    if (sql_disk_full(db))
        snprintf(buf, cap, "the disk is full (%s; %s)",
                 sqlite3_system_errno(db) == EDQUOT ? "disk quota exceeded"
                                                    : "no space left on the device",
                 sqlite3_errmsg(db));
    else
        snprintf(buf, cap, "%s", sqlite3_errmsg(db));
    return buf;
}

int sql_fail(sqlite3 *db, char *err, size_t err_cap)
{
    char text[384];
    return error_line(err, err_cap, "store: %s", sql_error_text(db, text, sizeof text));
}

int sql_run(sqlite3 *db, sqlite3_stmt *st, char *err, size_t err_cap)
{
    int rc = sqlite3_step(st);
    int ret = rc == SQLITE_DONE ? 0 : sql_fail(db, err, err_cap);
    sql_release(st);
    return ret;
}

int sql_step_row(sqlite3 *db, sqlite3_stmt *st, char *err, size_t err_cap)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        return 1;
    return rc == SQLITE_DONE ? 0 : sql_fail(db, err, err_cap);
}

int sql_collect(sqlite3 *db, sqlite3_stmt *st, size_t elem_size,
                int (*read)(sqlite3_stmt *st, void *elem), void (*drop)(void *elem), void **rows,
                size_t *count, char *err, size_t err_cap)
{
    *rows = NULL;
    *count = 0;
    char *list = NULL;
    size_t n = 0, cap = 0;
    int rc;
    int ret = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            size_t ncap = cap == 0 ? 16 : cap * 2;
            char *grown = realloc(list, ncap * elem_size);
            if (grown == NULL) {
                ret = error_line(err, err_cap, "out of memory");
                break;
            }
            list = grown;
            cap = ncap;
        }
        int got = read(st, list + n * elem_size);
        if (got < 0) {
            ret = error_line(err, err_cap, "out of memory");
            break;
        }
        if (got == 0)
            n++;
    }
    if (ret == 0 && rc != SQLITE_ROW && rc != SQLITE_DONE)
        ret = sql_fail(db, err, err_cap);
    sql_release(st);
    if (ret != 0) {
        for (size_t i = 0; drop != NULL && i < n; i++)
            drop(list + i * elem_size);
        free(list);
        return -1;
    }
    *rows = list;
    *count = n;
    return 0;
}

void sql_column_copy(sqlite3_stmt *st, int i, char *out, size_t cap)
{
    const char *text = (const char *)sqlite3_column_text(st, i);
    snprintf(out, cap, "%s", text != NULL ? text : "");
}

int sql_column_dup(sqlite3_stmt *st, int i, char **out, size_t *len)
{
    *out = NULL;
    if (len != NULL)
        *len = 0;
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return 0;
    const void *bytes = sqlite3_column_blob(st, i);
    size_t n = (size_t)sqlite3_column_bytes(st, i);
    char *copy = malloc(n + 1);
    if (copy == NULL)
        return -1;
    if (n > 0)
        memcpy(copy, bytes, n);
    copy[n] = '\0';
    *out = copy;
    if (len != NULL)
        *len = n;
    return 0;
}

int64_t sql_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sql_user_version(sqlite3 *db, int *version)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        *version = sqlite3_column_int(st, 0);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

int sql_select_all(sqlite3 *db, const char *sql, size_t elem_size,
                   int (*read)(sqlite3_stmt *st, void *elem), void (*drop)(void *elem),
                   void **rows, size_t *count, char *err, size_t err_cap)
{
    *rows = NULL;
    *count = 0;
    sqlite3_stmt *st;
    if (sql_prepare(db, sql, &st, err, err_cap) != 0)
        return -1;
    return sql_collect(db, st, elem_size, read, drop, rows, count, err, err_cap);
}

int sql_select_by_id(sqlite3 *db, const char *sql, int64_t id, size_t elem_size,
                     int (*read)(sqlite3_stmt *st, void *elem), void (*drop)(void *elem),
                     void **rows, size_t *count, char *err, size_t err_cap)
{
    *rows = NULL;
    *count = 0;
    sqlite3_stmt *st;
    if (sql_prepare(db, sql, &st, err, err_cap) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, id);
    return sql_collect(db, st, elem_size, read, drop, rows, count, err, err_cap);
}

const char *sql_settlement_name(enum proto_settlement settlement)
{
    return settlement == PROTO_SETTLEMENT_FULFILLED ? "fulfilled" : "rejected";
}

enum proto_settlement sql_settlement_parse(const char *name)
{
    return name != NULL && strcmp(name, "fulfilled") == 0 ? PROTO_SETTLEMENT_FULFILLED
                                                          : PROTO_SETTLEMENT_REJECTED;
}
