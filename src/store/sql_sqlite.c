#include "store/sql_sqlite.h"

#include "store/sql_backend.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sqlite_db {
    struct sql_db base;
    sqlite3 *db;
};

struct sqlite_stmt {
    struct sql_stmt base;
    sqlite3_stmt *st;
};

/* Prepared statements kept between uses, by connection and SQL text address (the
 * callers pass string literals). Compiling a statement costs more than running the
 * small ones a host call makes, so the journal's per-call path reuses them. One cache
 * per thread: a connection is used and closed only by the thread that opened it
 * (ck-basal serve gives each of its threads a connection of its own). A runner thread
 * uses more than 64 distinct statements. */
#define SQL_CACHE_SLOTS 128

struct cached {
    const struct sqlite_db *db;
    const char *sql;
    struct sqlite_stmt stmt;
    bool busy;
};

static _Thread_local struct cached g_cache[SQL_CACHE_SLOTS];

static sqlite3 *handle(struct sql_db *db) { return ((struct sqlite_db *)db)->db; }
static sqlite3_stmt *statement(struct sql_stmt *st) { return ((struct sqlite_stmt *)st)->st; }

static struct cached *slot_of(const struct sql_stmt *st)
{
    for (size_t i = 0; i < SQL_CACHE_SLOTS; i++)
        if (&g_cache[i].stmt.base == st)
            return &g_cache[i];
    return NULL;
}

static int lite_prepare(struct sql_db *base, const char *sql, struct sql_stmt **out)
{
    struct sqlite_db *db = (struct sqlite_db *)base;
    struct cached *free_slot = NULL;
    for (size_t i = 0; i < SQL_CACHE_SLOTS; i++) {
        struct cached *c = &g_cache[i];
        if (c->db == db && c->sql == sql && !c->busy) {
            c->busy = true;
            *out = &c->stmt.base;
            return 0;
        }
        if (c->db == NULL && free_slot == NULL)
            free_slot = c;
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v3(db->db, sql, -1, free_slot != NULL ? SQLITE_PREPARE_PERSISTENT : 0,
                           &st, NULL) != SQLITE_OK)
        return -1;
    if (free_slot != NULL) {
        *free_slot = (struct cached){db, sql, {{base}, st}, true};
        *out = &free_slot->stmt.base;
        return 0;
    }
    struct sqlite_stmt *own = malloc(sizeof *own);
    if (own == NULL) {
        sqlite3_finalize(st);
        return -1;
    }
    *own = (struct sqlite_stmt){{base}, st};
    *out = &own->base;
    return 0;
}

static void lite_release(struct sql_stmt *st)
{
    struct cached *c = slot_of(st);
    if (c != NULL) {
        sqlite3_reset(c->stmt.st);
        sqlite3_clear_bindings(c->stmt.st);
        c->busy = false;
        return;
    }
    sqlite3_finalize(statement(st));
    free(st);
}

static void lite_cache_drop(struct sql_db *db)
{
    for (size_t i = 0; i < SQL_CACHE_SLOTS; i++) {
        if (g_cache[i].db == (struct sqlite_db *)db) {
            sqlite3_finalize(g_cache[i].stmt.st);
            memset(&g_cache[i], 0, sizeof g_cache[i]);
        }
    }
}

static void lite_bind_text(struct sql_stmt *st, int i, const char *text, size_t len)
{
    sqlite3_bind_text64(statement(st), i, text, len, SQLITE_STATIC, SQLITE_UTF8);
}

static void lite_bind_blob(struct sql_stmt *st, int i, const void *bytes, size_t len)
{
    sqlite3_bind_blob64(statement(st), i, bytes, len, SQLITE_STATIC);
}

static void lite_bind_int64(struct sql_stmt *st, int i, int64_t value)
{
    sqlite3_bind_int64(statement(st), i, value);
}

static void lite_bind_null(struct sql_stmt *st, int i) { sqlite3_bind_null(statement(st), i); }

static enum sql_step lite_step(struct sql_stmt *st)
{
    switch (sqlite3_step(statement(st))) {
    case SQLITE_ROW:
        return SQL_ROW;
    case SQLITE_DONE:
        return SQL_DONE;
    default:
        return SQL_ERROR;
    }
}

static bool lite_column_is_null(struct sql_stmt *st, int i)
{
    return sqlite3_column_type(statement(st), i) == SQLITE_NULL;
}

static int64_t lite_column_int64(struct sql_stmt *st, int i)
{
    return sqlite3_column_int64(statement(st), i);
}

static const char *lite_column_text(struct sql_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(statement(st), i);
}

static const void *lite_column_blob(struct sql_stmt *st, int i, size_t *len)
{
    const void *bytes = sqlite3_column_blob(statement(st), i);
    *len = (size_t)sqlite3_column_bytes(statement(st), i);
    return bytes;
}

static int64_t lite_changes(struct sql_db *db) { return sqlite3_changes64(handle(db)); }

static int lite_exec(struct sql_db *db, const char *sql)
{
    return sqlite3_exec(handle(db), sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

static bool lite_disk_full(struct sql_db *db)
{
    int code = sqlite3_extended_errcode(handle(db));
    if ((code & 0xff) == SQLITE_FULL)
        return true;
    /* Out of space outside SQLite's own writes (extending -shm, creating -wal) comes
     * back as an I/O error or a failed open; the errno under it says which. */
    if ((code & 0xff) != SQLITE_IOERR && (code & 0xff) != SQLITE_CANTOPEN)
        return false;
    int os = sqlite3_system_errno(handle(db));
    return os == ENOSPC || os == EDQUOT;
}

static const char *lite_error_text(struct sql_db *db, char *buf, size_t cap)
{
    if (lite_disk_full(db))
        snprintf(buf, cap, "the disk is full (%s; %s)",
                 sqlite3_system_errno(handle(db)) == EDQUOT ? "disk quota exceeded"
                                                            : "no space left on the device",
                 sqlite3_errmsg(handle(db)));
    else
        snprintf(buf, cap, "%s", sqlite3_errmsg(handle(db)));
    return buf;
}

static const struct sql_backend SQLITE_BACKEND = {
    .name = "sqlite",
    .prepare = lite_prepare,
    .release = lite_release,
    .bind_text = lite_bind_text,
    .bind_blob = lite_bind_blob,
    .bind_int64 = lite_bind_int64,
    .bind_null = lite_bind_null,
    .step = lite_step,
    .column_is_null = lite_column_is_null,
    .column_int64 = lite_column_int64,
    .column_text = lite_column_text,
    .column_blob = lite_column_blob,
    .changes = lite_changes,
    .exec = lite_exec,
    .error_text = lite_error_text,
    .disk_full = lite_disk_full,
    .cache_drop = lite_cache_drop,
};

struct sql_db *sql_sqlite_adopt(sqlite3 *db)
{
    struct sqlite_db *w = malloc(sizeof *w);
    if (w == NULL)
        return NULL;
    *w = (struct sqlite_db){{&SQLITE_BACKEND}, db};
    return &w->base;
}

void sql_sqlite_release(struct sql_db *db)
{
    if (db == NULL)
        return;
    lite_cache_drop(db);
    free(db);
}

sqlite3 *sql_sqlite_handle(struct sql_db *db) { return handle(db); }
