#include "store/schedules.h"

#include "base/error_line.h"
#include "store/sql.h"
#include "store/store_internal.h"

#include <stdio.h>
#include <string.h>

#define COLUMNS "flow_id, version, spec, anchor, next_fire"

static int row_read(struct sql_stmt *st, void *elem)
{
    struct schedule_row *r = elem;
    memset(r, 0, sizeof *r);
    snprintf(r->flow_id, sizeof r->flow_id, "%s", sql_column_text(st, 0));
    r->version = sql_column_int64(st, 1);
    snprintf(r->spec, sizeof r->spec, "%s", sql_column_text(st, 2));
    r->anchor_ms = sql_column_int64(st, 3);
    r->has_next = !sql_column_is_null(st, 4);
    r->next_fire_ms = r->has_next ? sql_column_int64(st, 4) : 0;
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
    struct sql_stmt *st;
    if (sql_prepare(store_db(s), "SELECT " COLUMNS " FROM schedules WHERE flow_id = ?1", &st, err,
                    err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, flow);
    int rc = sql_step(st);
    if (rc == SQL_ROW)
        row_read(st, out);
    sql_release(st);
    if (rc == SQL_ROW)
        return 1;
    return rc == SQL_DONE ? 0 : sql_fail(store_db(s), err, err_cap);
}

/* Runs one statement with flow bound as ?1 in its own transaction; bind adds the rest. */
static int write_one(struct store *s, const char *sql, const char *flow,
                     void (*bind)(struct sql_stmt *st, const void *ctx), const void *ctx, char *err,
                     size_t err_cap)
{
    if (store_begin_txn(s, err, err_cap) != 0)
        return -1;
    struct sql_stmt *st;
    int rc = sql_prepare(store_db(s), sql, &st, err, err_cap);
    if (rc == 0) {
        sql_bind_text(st, 1, flow);
        if (bind != NULL)
            bind(st, ctx);
        rc = sql_run(store_db(s), st, err, err_cap);
    }
    return store_end_txn(s, rc, err, err_cap);
}

static void bind_row(struct sql_stmt *st, const void *ctx)
{
    const struct schedule_row *r = ctx;
    sql_bind_int64(st, 2, r->version);
    sql_bind_text(st, 3, r->spec);
    sql_bind_int64(st, 4, r->anchor_ms);
    if (r->has_next)
        sql_bind_int64(st, 5, r->next_fire_ms);
    else
        sql_bind_null(st, 5);
    sql_bind_int64(st, 6, sql_now_ms());
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

static void bind_next(struct sql_stmt *st, const void *ctx)
{
    const struct next_args *a = ctx;
    if (a->has_next)
        sql_bind_int64(st, 2, a->next_fire_ms);
    else
        sql_bind_null(st, 2);
    sql_bind_int64(st, 3, sql_now_ms());
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
