#include "store/audit.h"

#include "store/sql.h"
#include "store/store_internal.h"
#include "store/store.h"

int audit_append(struct store *s, const struct audit_row *row, char *err, size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "INSERT INTO audit (at, flow_id, run_id, codemode_run_id, position,"
                        " kind, decision, reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, sql_now_ms());
    sql_bind_text(st, 2, row->flow);
    if (row->run_id >= 0)
        sql_bind_int64(st, 3, row->run_id);
    if (row->codemode_run_id >= 0)
        sql_bind_int64(st, 4, row->codemode_run_id);
    if (row->position >= 0)
        sql_bind_int64(st, 5, row->position);
    sql_bind_text(st, 6, row->kind);
    sql_bind_text(st, 7, row->allowed ? "allowed" : "refused");
    sql_bind_text(st, 8, row->reason);
    return sql_run(db, st, err, err_cap);
}

int audit_record(struct store *s, const char *flow, int64_t run_id, int64_t position,
                 const char *kind, bool allowed, const char *reason, char *err,
                 size_t err_cap)
{
    struct audit_row row = {flow, run_id, -1, position, kind, allowed, reason};
    return audit_append(s, &row, err, err_cap);
}
