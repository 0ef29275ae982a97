#include "store/sql.h"

#include "base/error_line.h"
#include "store/sql_backend.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int sql_prepare(struct sql_db *db, const char *sql, struct sql_stmt **st, char *err,
                size_t err_cap)
{
    if (db->backend->prepare(db, sql, st) != 0 || *st == NULL) {
        *st = NULL;
        if (err != NULL)
            (void)sql_fail(db, err, err_cap);
        return -1;
    }
    return 0;
}

void sql_release(struct sql_stmt *st)
{
    if (st != NULL)
        st->db->backend->release(st);
}

void sql_cache_drop(struct sql_db *db) { db->backend->cache_drop(db); }

void sql_bind_text(struct sql_stmt *st, int i, const char *text)
{
    if (text == NULL)
        st->db->backend->bind_null(st, i);
    else
        st->db->backend->bind_text(st, i, text, strlen(text));
}

void sql_bind_text_len(struct sql_stmt *st, int i, const char *text, size_t len)
{
    if (text == NULL)
        st->db->backend->bind_null(st, i);
    else
        st->db->backend->bind_text(st, i, text, len);
}

void sql_bind_blob(struct sql_stmt *st, int i, const void *bytes, size_t len)
{
    /* A blob of no bytes is still a blob, never NULL. */
    st->db->backend->bind_blob(st, i, bytes != NULL ? bytes : "", len);
}

void sql_bind_int64(struct sql_stmt *st, int i, int64_t value)
{
    st->db->backend->bind_int64(st, i, value);
}

void sql_bind_null(struct sql_stmt *st, int i) { st->db->backend->bind_null(st, i); }

enum sql_step sql_step(struct sql_stmt *st) { return st->db->backend->step(st); }

bool sql_column_is_null(struct sql_stmt *st, int i)
{
    return st->db->backend->column_is_null(st, i);
}

int64_t sql_column_int64(struct sql_stmt *st, int i)
{
    return st->db->backend->column_int64(st, i);
}

const char *sql_column_text(struct sql_stmt *st, int i)
{
    return st->db->backend->column_text(st, i);
}

const void *sql_column_blob(struct sql_stmt *st, int i, size_t *len)
{
    return st->db->backend->column_blob(st, i, len);
}

int64_t sql_changes(struct sql_db *db) { return db->backend->changes(db); }

int sql_exec(struct sql_db *db, const char *sql) { return db->backend->exec(db, sql); }

const char *sql_engine(const struct sql_db *db) { return db->backend->name; }

const char *sql_dialect(const struct sql_db *db, const char *sqlite, const char *postgresql)
{
    return strcmp(db->backend->name, "postgresql") == 0 ? postgresql : sqlite;
}

bool sql_disk_full(struct sql_db *db) { return db->backend->disk_full(db); }

const char *sql_error_text(struct sql_db *db, char *buf, size_t cap)
{
    return db->backend->error_text(db, buf, cap);
}

int sql_fail(struct sql_db *db, char *err, size_t err_cap)
{
    char text[384];
    return error_line(err, err_cap, "store: %s", sql_error_text(db, text, sizeof text));
}

int sql_run(struct sql_db *db, struct sql_stmt *st, char *err, size_t err_cap)
{
    int ret = sql_step(st) == SQL_DONE ? 0 : sql_fail(db, err, err_cap);
    sql_release(st);
    return ret;
}

int sql_step_row(struct sql_db *db, struct sql_stmt *st, char *err, size_t err_cap)
{
    enum sql_step rc = sql_step(st);
    if (rc == SQL_ROW)
        return 1;
    return rc == SQL_DONE ? 0 : sql_fail(db, err, err_cap);
}

int sql_collect(struct sql_db *db, struct sql_stmt *st, size_t elem_size,
                int (*read)(struct sql_stmt *st, void *elem), void (*drop)(void *elem),
                void **rows, size_t *count, char *err, size_t err_cap)
{
    *rows = NULL;
    *count = 0;
    char *list = NULL;
    size_t n = 0, cap = 0;
    enum sql_step rc;
    int ret = 0;
    while ((rc = sql_step(st)) == SQL_ROW) {
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
    if (ret == 0 && rc != SQL_ROW && rc != SQL_DONE)
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

void sql_column_copy(struct sql_stmt *st, int i, char *out, size_t cap)
{
    const char *text = sql_column_text(st, i);
    snprintf(out, cap, "%s", text != NULL ? text : "");
}

int sql_column_dup(struct sql_stmt *st, int i, char **out, size_t *len)
{
    *out = NULL;
    if (len != NULL)
        *len = 0;
    if (sql_column_is_null(st, i))
        return 0;
    size_t n = 0;
    const void *bytes = sql_column_blob(st, i, &n);
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

int sql_select_all(struct sql_db *db, const char *sql, size_t elem_size,
                   int (*read)(struct sql_stmt *st, void *elem), void (*drop)(void *elem),
                   void **rows, size_t *count, char *err, size_t err_cap)
{
    *rows = NULL;
    *count = 0;
    struct sql_stmt *st;
    if (sql_prepare(db, sql, &st, err, err_cap) != 0)
        return -1;
    return sql_collect(db, st, elem_size, read, drop, rows, count, err, err_cap);
}

int sql_select_by_id(struct sql_db *db, const char *sql, int64_t id, size_t elem_size,
                     int (*read)(struct sql_stmt *st, void *elem), void (*drop)(void *elem),
                     void **rows, size_t *count, char *err, size_t err_cap)
{
    *rows = NULL;
    *count = 0;
    struct sql_stmt *st;
    if (sql_prepare(db, sql, &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, id);
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
