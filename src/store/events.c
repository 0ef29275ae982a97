#include "store/events.h"

#include "base/error_line.h"
#include "store/sql.h"
#include "store/store_internal.h"
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool events_id_valid(const char *id)
{
    size_t n = 0;
    for (; id[n] != '\0'; n++) {
        char c = id[n];
        bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '-';
        if (!safe || n >= EVENT_ID_MAX)
            return false;
    }
    return n >= 1;
}

void events_trigger_id(int64_t seq, char *out, size_t cap)
{
    snprintf(out, cap, "event:%" PRId64, seq);
}

static int read_row(struct sql_stmt *st, void *elem)
{
    struct event_row *r = elem;
    memset(r, 0, sizeof *r);
    r->seq = sql_column_int64(st, 0);
    sql_column_copy(st, 1, r->module, sizeof r->module);
    sql_column_copy(st, 2, r->name, sizeof r->name);
    r->version = sql_column_int64(st, 3);
    sql_column_copy(st, 4, r->event_id, sizeof r->event_id);
    const char *state = sql_column_text(st, 6);
    r->delivered = state != NULL && strcmp(state, "delivered") == 0;
    return sql_column_dup(st, 5, &r->payload, NULL);
}

static void drop_row(void *elem)
{
    free(((struct event_row *)elem)->payload);
}

#define EVENT_COLUMNS "seq, module, name, version, event_id, payload, state"

/* An event's key as ?1-?4: module, name, version, event_id. */
static void bind_key(struct sql_stmt *st, const char *module, const char *name, int64_t version,
                     const char *event_id)
{
    sql_bind_text(st, 1, module);
    sql_bind_text(st, 2, name);
    sql_bind_int64(st, 3, version);
    sql_bind_text(st, 4, event_id);
}

int events_record(struct store *s, const char *module, const char *name, int64_t version,
                  const char *event_id, const char *payload, struct event_row *row,
                  bool *is_new, char *err, size_t err_cap)
{
    memset(row, 0, sizeof *row);
    *is_new = false;
    struct sql_db *db = store_db(s);
    if (store_begin_txn(s, err, err_cap) != 0)
        return -1;
    struct sql_stmt *st;
    int rc = sql_prepare(db, "INSERT INTO events (module, name, version, event_id, payload,"
                             " emitted_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
                             " ON CONFLICT (module, name, version, event_id) DO NOTHING",
                         &st, err, err_cap);
    if (rc == 0) {
        bind_key(st, module, name, version, event_id);
        sql_bind_text(st, 5, payload);
        sql_bind_int64(st, 6, sql_now_ms());
        rc = sql_run(db, st, err, err_cap);
        *is_new = rc == 0 && sql_changes(db) == 1;
    }
    struct event_row *rows = NULL;
    size_t count = 0;
    if (rc == 0)
        rc = sql_prepare(db, "SELECT " EVENT_COLUMNS " FROM events WHERE module = ?1 AND"
                             " name = ?2 AND version = ?3 AND event_id = ?4",
                         &st, err, err_cap);
    if (rc == 0) {
        bind_key(st, module, name, version, event_id);
        rc = sql_collect(db, st, sizeof *rows, read_row, drop_row, (void **)&rows, &count, err,
                         err_cap);
        if (rc == 0 && count != 1)
            rc = error_line(err, err_cap, "store: the event just recorded is not there");
    }
    rc = store_end_txn(s, rc, err, err_cap);
    if (rc != 0 || rows == NULL || count != 1) {
        events_rows_free(rows, count);
        return rc != 0 ? rc
                       : error_line(err, err_cap, "store: the event just recorded is not there");
    }
    *row = rows[0]; /* its payload moves to the caller */
    free(rows);
    return 0;
}

int events_pending(struct store *s, struct event_row **rows, size_t *count, char *err,
                   size_t err_cap)
{
    return sql_select_all(store_db(s),
                          "SELECT " EVENT_COLUMNS " FROM events WHERE state = 'pending'"
                          " ORDER BY seq",
                          sizeof **rows, read_row, drop_row, (void **)rows, count, err, err_cap);
}

int events_mark_delivered(struct store *s, int64_t seq, char *err, size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "UPDATE events SET state = 'delivered', delivered_at = ?2"
                        " WHERE seq = ?1 AND state = 'pending'",
                    &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, seq);
    sql_bind_int64(st, 2, sql_now_ms());
    return sql_run(db, st, err, err_cap);
}

void events_rows_free(struct event_row *rows, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(rows[i].payload);
    free(rows);
}
