#include "store/schedules.h"

#include "base/error_line.h"
#include "store/sql.h"
#include "store/store_internal.h"

#include <stdio.h>
#include <string.h>

#define COLUMNS "flow_id, version, spec, anchor, next_fire"

static int row_read(sqlite3_stmt *st, void *elem)
{
    struct schedule_row *r = elem;
    memset(r, 0, sizeof *r);
    snprintf(r->flow_id, sizeof r->flow_id, "%s", (const char *)sqlite3_column_text(st, 0));
    r->version = sqlite3_column_int64(st, 1);
    snprintf(r->spec, sizeof r->spec, "%s", (const char *)sqlite3_column_text(st, 2));
    r->anchor_ms = sqlite3_column_int64(st, 3);
    r->has_next = sqlite3_column_type(st, 4) != SQLITE_NULL;
    r->next_fire_ms = r->has_next ? sqlite3_column_int64(st, 4) : 0;
    return 0;
}

int schedules_list(struct store *s, struct schedule_row **rows, size_t *count, char *err,
                   size_t err_cap)
{
    return sql_select_all(store_db(s), "SELECT " COLUMNS " FROM schedules ORDER BY flow_id",
                          sizeof **rows, row_read, NULL, (void **)rows, count, err, err_cap);
}

int schedules_get(struct store *s, const char *flow, struct schedule_row *out, char *err,
                  size_t err_cap)
{
    sqlite3_stmt *st;
    if (sql_prepare(store_db(s), "SELECT " COLUMNS " FROM schedules WHERE flow_id = ?1", &st, err,
                    err_cap) != 0)
        return -1;
    sqlite3_bind_text(st, 1, flow, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        row_read(st, out);
    sql_release(st);
    if (rc == SQLITE_ROW)
        return 1;
    return rc == SQLITE_DONE ? 0 : sql_fail(store_db(s), err, err_cap);
}

/* Runs one statement with flow bound as ?1 in its own transaction; bind adds the rest. */
static int write_one(struct store *s, const char *sql, const char *flow,
                     void (*bind)(sqlite3_stmt *st, const void *ctx), const void *ctx, char *err,
                     size_t err_cap)
{
    if (store_begin_txn(s, err, err_cap) != 0)
        return -1;
    sqlite3_stmt *st;
    int rc = sql_prepare(store_db(s), sql, &st, err, err_cap);
    if (rc == 0) {
        sqlite3_bind_text(st, 1, flow, -1, SQLITE_TRANSIENT);
        if (bind != NULL)
            bind(st, ctx);
        rc = sql_run(store_db(s), st, err, err_cap);
    }
    return store_end_txn(s, rc, err, err_cap);
}

static void bind_row(sqlite3_stmt *st, const void *ctx)
{
    const struct schedule_row *r = ctx;
    sqlite3_bind_int64(st, 2, r->version);
    sqlite3_bind_text(st, 3, r->spec, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, r->anchor_ms);
    if (r->has_next)
        sqlite3_bind_int64(st, 5, r->next_fire_ms);
    else
        sqlite3_bind_null(st, 5);
    sqlite3_bind_int64(st, 6, sql_now_ms());
}

int schedules_put(struct store *s, const struct schedule_row *row, char *err, size_t err_cap)
{
    return write_one(s,
                     "INSERT INTO schedules (" COLUMNS ", updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
                     " ON CONFLICT (flow_id) DO UPDATE SET version = ?2, spec = ?3, anchor = ?4,"
                     " next_fire = ?5, updated_at = ?6",
                     row->flow_id, bind_row, row, err, err_cap);
}

struct next_args {
    bool has_next;
    int64_t next_fire_ms;
};

static void bind_next(sqlite3_stmt *st, const void *ctx)
{
    const struct next_args *a = ctx;
    if (a->has_next)
        sqlite3_bind_int64(st, 2, a->next_fire_ms);
    else
        sqlite3_bind_null(st, 2);
    sqlite3_bind_int64(st, 3, sql_now_ms());
}

int schedules_set_next(struct store *s, const char *flow, bool has_next, int64_t next_fire_ms,
                       char *err, size_t err_cap)
{
    struct next_args a = {has_next, next_fire_ms};
    return write_one(s, "UPDATE schedules SET next_fire = ?2, updated_at = ?3 WHERE flow_id = ?1",
                     flow, bind_next, &a, err, err_cap);
}

int schedules_delete(struct store *s, const char *flow, char *err, size_t err_cap)
{
    return write_one(s, "DELETE FROM schedules WHERE flow_id = ?1", flow, NULL, NULL, err,
                     err_cap);
}
