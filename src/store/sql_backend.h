/* What a database engine provides to store/sql.h: one table of functions per engine
 * (SQLite: store/sql_sqlite.c; PostgreSQL: store/sql_postgres.c). store/sql.c calls
 * through the table of the connection a statement belongs to; nothing else does.
 *
 * A connection (struct sql_db) and a statement (struct sql_stmt) are the first member
 * of the engine's own structs, so the engine casts them back. Contracts are sql.h's:
 * each function here is the engine's half of the sql_* function of the same name. */
#ifndef BASAL_STORE_SQL_BACKEND_H
#define BASAL_STORE_SQL_BACKEND_H

#include "store/sql.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sql_backend {
    const char *name; /* "sqlite", "postgresql" */
    int (*prepare)(struct sql_db *db, const char *sql, struct sql_stmt **st);
    void (*release)(struct sql_stmt *st);
    void (*bind_text)(struct sql_stmt *st, int i, const char *text, size_t len);
    void (*bind_blob)(struct sql_stmt *st, int i, const void *bytes, size_t len);
    void (*bind_int64)(struct sql_stmt *st, int i, int64_t value);
    void (*bind_null)(struct sql_stmt *st, int i);
    enum sql_step (*step)(struct sql_stmt *st);
    bool (*column_is_null)(struct sql_stmt *st, int i);
    int64_t (*column_int64)(struct sql_stmt *st, int i);
    const char *(*column_text)(struct sql_stmt *st, int i);
    const void *(*column_blob)(struct sql_stmt *st, int i, size_t *len);
    int64_t (*changes)(struct sql_db *db);
    /* Runs sql (one or more statements, no parameters, no rows wanted): 0 or -1. */
    int (*exec)(struct sql_db *db, const char *sql);
    /* The last error as text into buf (a full disk said so, sql_disk_full). */
    const char *(*error_text)(struct sql_db *db, char *buf, size_t cap);
    bool (*disk_full)(struct sql_db *db);
    void (*cache_drop)(struct sql_db *db);
};

struct sql_db {
    const struct sql_backend *backend;
};

struct sql_stmt {
    struct sql_db *db;
};

#endif
