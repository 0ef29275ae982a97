/* Long-running calls waiting for their completion (see waits.h). */
#include "store/waits.h"

#include "store/sql.h"
#include "store/store_internal.h"
#include "store/store.h"

#include <string.h>

int waits_insert(struct store *s, int64_t run_id, uint32_t position, const char *key,
                 int64_t deadline_at, const char *completion_module,
                 const char *completion_event, char *err, size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "INSERT INTO waits (run_id, position, idempotency_key, started_at,"
                        " deadline_at, completion_module, completion_event)"
                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", &st, err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 6, completion_event != NULL ? completion_module : NULL);
    sql_bind_text(st, 7, completion_module != NULL ? completion_event : NULL);
    sql_bind_int64(st, 1, run_id);
    sql_bind_int64(st, 2, position);
    sql_bind_text(st, 3, key);
    sql_bind_int64(st, 4, sql_now_ms());
    sql_bind_int64(st, 5, deadline_at);
    return sql_run(db, st, err, err_cap);
}

#define WAIT_COLUMNS                                                                     \
    "run_id, position, idempotency_key, started_at, deadline_at, completion_module,"    \
    " completion_event"

static int wait_read(struct sql_stmt *st, void *elem)
{
    struct wait_row *w = elem;
    memset(w, 0, sizeof *w);
    w->run_id = sql_column_int64(st, 0);
    w->position = (uint32_t)sql_column_int64(st, 1);
    sql_column_copy(st, 2, w->key, sizeof w->key);
    w->started_at = sql_column_int64(st, 3);
    w->deadline_at = sql_column_int64(st, 4);
    sql_column_copy(st, 5, w->completion_module, sizeof w->completion_module);
    sql_column_copy(st, 6, w->completion_event, sizeof w->completion_event);
    return 0;
}

static int find_one(struct sql_db *db, struct sql_stmt *st, struct wait_row *out, char *err,
                    size_t err_cap)
{
    int found = sql_step_row(db, st, err, err_cap);
    if (found == 1)
        (void)wait_read(st, out);
    sql_release(st);
    return found;
}

int waits_find_key(struct store *s, const char *key, struct wait_row *out, char *err,
                   size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "SELECT " WAIT_COLUMNS " FROM waits WHERE idempotency_key = ?1", &st,
                    err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, key);
    return find_one(db, st, out, err, err_cap);
}

int waits_find(struct store *s, int64_t run_id, uint32_t position, struct wait_row *out,
               char *err, size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "SELECT " WAIT_COLUMNS " FROM waits WHERE run_id = ?1 AND position = ?2",
                    &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, run_id);
    sql_bind_int64(st, 2, position);
    return find_one(db, st, out, err, err_cap);
}

int waits_delete(struct store *s, int64_t run_id, uint32_t position, char *err,
                 size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "DELETE FROM waits WHERE run_id = ?1 AND position = ?2", &st, err,
                    err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, run_id);
    sql_bind_int64(st, 2, position);
    return sql_run(db, st, err, err_cap);
}

int waits_due(struct store *s, int64_t now, size_t max, struct wait_row **rows, size_t *count,
              char *err, size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "SELECT " WAIT_COLUMNS " FROM waits WHERE deadline_at <= ?1"
                        " ORDER BY deadline_at, run_id, position LIMIT ?2", &st, err,
                    err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, now);
    sql_bind_int64(st, 2, (int64_t)max);
    void *list = NULL;
    int rc = sql_collect(db, st, sizeof **rows, wait_read, NULL, &list, count, err, err_cap);
    *rows = list;
    return rc;
}

int waits_next_deadline(struct store *s, int64_t *at, char *err, size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "SELECT min(deadline_at) FROM waits", &st, err, err_cap) != 0)
        return -1;
    int found = sql_step_row(db, st, err, err_cap);
    if (found == 1 && !sql_column_is_null(st, 0))
        *at = sql_column_int64(st, 0);
    else if (found == 1)
        found = 0;
    sql_release(st);
    return found;
}
