/* Small helpers shared by the modules that own tables in the store: prepare a
 * statement or describe the connection's last error as one line, and the wall clock
 * in the store's unit (Unix milliseconds). */
#ifndef BASAL_STORE_SQL_H
#define BASAL_STORE_SQL_H

#include "proto/message.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Prepares sql on db into *st, reusing the statement compiled at an earlier call with
 * the same db and the same sql pointer (pass string literals). Release it with
 * sql_release, never sqlite3_finalize. Returns 0, or -1 with *st NULL and "store:
 * <sqlite's message>" in err. */
int sql_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, char *err, size_t err_cap);

/* Resets a statement from sql_prepare for its next use (or finalizes one that was not
 * kept). NULL is fine. */
void sql_release(sqlite3_stmt *st);

/* Finalizes every statement kept for db; store_close calls it before closing. */
void sql_cache_drop(const sqlite3 *db);

/* True if the connection's last error was a lack of space: SQLITE_FULL, or an I/O
 * error or failed open whose errno was ENOSPC or EDQUOT (SQLite reports a full disk
 * met while extending -shm or creating -wal as "disk I/O error"). */
bool sql_disk_full(sqlite3 *db);

/* The connection's last error as text, in buf: "the disk is full (no space left on
 * the device; <sqlite's message>)" when sql_disk_full, else SQLite's message. */
const char *sql_error_text(sqlite3 *db, char *buf, size_t cap);

/* Writes "store: <sql_error_text>" into err and returns -1. */
int sql_fail(sqlite3 *db, char *err, size_t err_cap);

/* Steps a statement from sql_prepare that returns no rows to its end and releases it.
 * Returns 0, or -1 with the reason in err. */
int sql_run(sqlite3 *db, sqlite3_stmt *st, char *err, size_t err_cap);

/* Steps a statement from sql_prepare that returns at most one row: 1 when it stands on
 * the row (read its columns, then sql_release), 0 when there is none, -1 with the
 * reason in err. The caller releases the statement in every case. */
int sql_step_row(sqlite3 *db, sqlite3_stmt *st, char *err, size_t err_cap);

/* Column i as a malloc'd NUL-terminated copy (NULL for SQL NULL); *len (if not NULL)
 * gets its byte length. Returns -1 on no memory, else 0. */
int sql_column_dup(sqlite3_stmt *st, int i, char **out, size_t *len);

/* Column i as text into out[cap], cut to fit ("" for SQL NULL). */
void sql_column_copy(sqlite3_stmt *st, int i, char *out, size_t cap);

/* Steps st (from sql_prepare) to its end and releases it, turning each row into one
 * element of elem_size bytes with read(st, elem): 0 keeps it, 1 skips the row, -1
 * means no memory. The elements go into a malloc'd array (*rows, *count; NULL and 0
 * when there are none). On failure every kept element is passed to drop (may be NULL),
 * nothing is returned, and err says why. Returns 0 or -1. */
int sql_collect(sqlite3 *db, sqlite3_stmt *st, size_t elem_size,
                int (*read)(sqlite3_stmt *st, void *elem), void (*drop)(void *elem), void **rows,
                size_t *count, char *err, size_t err_cap);

/* sql_collect over a statement without parameters, prepared from sql here. */
int sql_select_all(sqlite3 *db, const char *sql, size_t elem_size,
                   int (*read)(sqlite3_stmt *st, void *elem), void (*drop)(void *elem),
                   void **rows, size_t *count, char *err, size_t err_cap);

/* sql_collect over a statement whose one parameter, ?1, is id (a run's rows), prepared
 * from sql here. */
int sql_select_by_id(sqlite3 *db, const char *sql, int64_t id, size_t elem_size,
                     int (*read)(sqlite3_stmt *st, void *elem), void (*drop)(void *elem),
                     void **rows, size_t *count, char *err, size_t err_cap);

/* A settlement as the store's settlement columns hold it (journal, mailbox,
 * codemode_calls), and back: the schema's CHECK admits only "fulfilled" and
 * "rejected", so any other text reads as rejected. */
const char *sql_settlement_name(enum proto_settlement settlement);
enum proto_settlement sql_settlement_parse(const char *name);

/* CLOCK_REALTIME in milliseconds since the epoch. */
int64_t sql_now_ms(void);

/* The database's schema version (PRAGMA user_version) into *version: 0, or -1
 * (sqlite3_errmsg says why). */
int sql_user_version(sqlite3 *db, int *version);

#endif
