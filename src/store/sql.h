/* The store's database statements, the same for every engine the store runs on
 * (SQLite in the data home, or PostgreSQL: store/sql_backend.h), and small helpers
 * shared by the modules that own tables in the store: prepare a statement, bind,
 * step, read columns, describe the connection's last error as one line, and the wall
 * clock in the store's unit (Unix milliseconds).
 *
 * The SQL text is one dialect both engines read: parameters ?1, ?2, ... (each number
 * used at least once), ON CONFLICT, RETURNING, coalesce; no engine-only function. */
#ifndef BASAL_STORE_SQL_H
#define BASAL_STORE_SQL_H

#include "proto/message.h"
#include "store/sql_types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Prepares sql on db into *st, reusing the statement compiled at an earlier call with
 * the same db and the same sql pointer (pass string literals). Release it with
 * sql_release. Returns 0, or -1 with *st NULL and "store: <the engine's message>" in
 * err (err may be NULL). */
int sql_prepare(struct sql_db *db, const char *sql, struct sql_stmt **st, char *err,
                size_t err_cap);

/* Resets a statement from sql_prepare for its next use. NULL is fine. */
void sql_release(struct sql_stmt *st);

/* Finalizes every statement kept for db; store_close calls it before closing. */
void sql_cache_drop(struct sql_db *db);

/* Parameters, numbered from 1. Text and bytes are not copied: they must stay valid
 * until the statement is first stepped. text NULL binds NULL. */
void sql_bind_text(struct sql_stmt *st, int i, const char *text);
void sql_bind_text_len(struct sql_stmt *st, int i, const char *text, size_t len);
void sql_bind_blob(struct sql_stmt *st, int i, const void *bytes, size_t len);
void sql_bind_int64(struct sql_stmt *st, int i, int64_t value);
void sql_bind_null(struct sql_stmt *st, int i);

/* The next row (SQL_ROW), the end (SQL_DONE), or a failure (SQL_ERROR: sql_fail says
 * why). */
enum sql_step sql_step(struct sql_stmt *st);

/* Columns of the row sql_step stands on, numbered from 0. Text is NUL-terminated and
 * valid until the next step or release; NULL for SQL NULL. A blob's bytes likewise,
 * with their count in *len. */
bool sql_column_is_null(struct sql_stmt *st, int i);
int64_t sql_column_int64(struct sql_stmt *st, int i);
const char *sql_column_text(struct sql_stmt *st, int i);
const void *sql_column_blob(struct sql_stmt *st, int i, size_t *len);

/* Rows changed by the connection's last INSERT, UPDATE or DELETE. */
int64_t sql_changes(struct sql_db *db);

/* Runs sql (statements without parameters or rows): 0, or -1 (sql_fail says why). */
int sql_exec(struct sql_db *db, const char *sql);

/* sqlite's text on SQLite, postgresql's on PostgreSQL: for the few statements the two
 * dialects cannot say alike (pass string literals; each is kept as its own statement). */
const char *sql_dialect(const struct sql_db *db, const char *sqlite, const char *postgresql);

/* The engine's name: "sqlite" or "postgresql". */
const char *sql_engine(const struct sql_db *db);

/* True if the connection's last error was a lack of space: SQLite's SQLITE_FULL, or
 * an I/O error or failed open whose errno was ENOSPC or EDQUOT (SQLite reports a full
 * disk met while extending -shm or creating -wal as "disk I/O error"); PostgreSQL's
 * class 53 (insufficient resources: disk full). */
bool sql_disk_full(struct sql_db *db);

/* The connection's last error as text, in buf: "the disk is full (...)" when
 * sql_disk_full, else the engine's message (one line). */
const char *sql_error_text(struct sql_db *db, char *buf, size_t cap);

/* Writes "store: <sql_error_text>" into err and returns -1. */
int sql_fail(struct sql_db *db, char *err, size_t err_cap);

/* Steps a statement from sql_prepare that returns no rows to its end and releases it.
 * Returns 0, or -1 with the reason in err. */
int sql_run(struct sql_db *db, struct sql_stmt *st, char *err, size_t err_cap);

/* Steps a statement from sql_prepare that returns at most one row: 1 when it stands on
 * the row (read its columns, then sql_release), 0 when there is none, -1 with the
 * reason in err. The caller releases the statement in every case. */
int sql_step_row(struct sql_db *db, struct sql_stmt *st, char *err, size_t err_cap);

/* Column i as a malloc'd NUL-terminated copy (NULL for SQL NULL); *len (if not NULL)
 * gets its byte length. Returns -1 on no memory, else 0. */
int sql_column_dup(struct sql_stmt *st, int i, char **out, size_t *len);

/* Column i as text into out[cap], cut to fit ("" for SQL NULL). */
void sql_column_copy(struct sql_stmt *st, int i, char *out, size_t cap);

/* Steps st (from sql_prepare) to its end and releases it, turning each row into one
 * element of elem_size bytes with read(st, elem): 0 keeps it, 1 skips the row, -1
 * means no memory. The elements go into a malloc'd array (*rows, *count; NULL and 0
 * when there are none). On failure every kept element is passed to drop (may be NULL),
 * nothing is returned, and err says why. Returns 0 or -1. */
int sql_collect(struct sql_db *db, struct sql_stmt *st, size_t elem_size,
                int (*read)(struct sql_stmt *st, void *elem), void (*drop)(void *elem),
                void **rows, size_t *count, char *err, size_t err_cap);

/* sql_collect over a statement without parameters, prepared from sql here. */
int sql_select_all(struct sql_db *db, const char *sql, size_t elem_size,
                   int (*read)(struct sql_stmt *st, void *elem), void (*drop)(void *elem),
                   void **rows, size_t *count, char *err, size_t err_cap);

/* sql_collect over a statement whose one parameter, ?1, is id (a run's rows), prepared
 * from sql here. */
int sql_select_by_id(struct sql_db *db, const char *sql, int64_t id, size_t elem_size,
                     int (*read)(struct sql_stmt *st, void *elem), void (*drop)(void *elem),
                     void **rows, size_t *count, char *err, size_t err_cap);

/* A settlement as the store's settlement columns hold it (journal, mailbox,
 * codemode_calls), and back: the schema's CHECK admits only "fulfilled" and
 * "rejected", so any other text reads as rejected. */
const char *sql_settlement_name(enum proto_settlement settlement);
enum proto_settlement sql_settlement_parse(const char *name);

/* CLOCK_REALTIME in milliseconds since the epoch. */
int64_t sql_now_ms(void);

#endif
