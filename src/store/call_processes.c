/* Processes of calls in flight (see call_processes.h). */
#include "store/call_processes.h"

#include "base/error_line.h"
#include "store/sql.h"
#include "store/store_internal.h"
#include "store/store.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int call_process_record(struct store *s, int64_t run_id, uint32_t position,
                        const struct process_identity *process, char *err, size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "INSERT INTO call_processes (run_id, position, pid, start_ticks,"
                        " started_at) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (run_id, position)"
                        " DO UPDATE SET pid = excluded.pid, start_ticks = excluded.start_ticks,"
                        " started_at = excluded.started_at", &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, run_id);
    sql_bind_int64(st, 2, position);
    sql_bind_int64(st, 3, process->pid);
    sql_bind_int64(st, 4, (int64_t)process->start_ticks);
    sql_bind_int64(st, 5, sql_now_ms());
    return sql_run(db, st, err, err_cap);
}

int call_process_forget(struct store *s, int64_t run_id, uint32_t position,
                        const struct process_identity *process, char *err, size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "DELETE FROM call_processes WHERE run_id = ?1 AND position = ?2 AND"
                        " pid = ?3 AND start_ticks = ?4", &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, run_id);
    sql_bind_int64(st, 2, position);
    sql_bind_int64(st, 3, process->pid);
    sql_bind_int64(st, 4, (int64_t)process->start_ticks);
    return sql_run(db, st, err, err_cap);
}

int call_process_running(struct store *s, int64_t run_id, bool skip_in_doubt,
                         struct call_process *out, char *err, size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    /* In doubt: an unkeyed mutation without an outcome (pending with nothing in the
     * mailbox, or already marked unknown). */
    if (sql_prepare(db, "SELECT p.position, p.pid, p.start_ticks, j.class = 'mutation' AND"
                        " (j.state = 'unknown' OR (j.state = 'pending' AND m.run_id IS NULL))"
                        " FROM call_processes p JOIN journal j ON j.run_id = p.run_id AND"
                        " j.position = p.position LEFT JOIN mailbox m ON m.run_id = p.run_id AND"
                        " m.position = p.position WHERE p.run_id = ?1 ORDER BY p.position",
                    &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, run_id);
    int found = 0, step = SQL_DONE;
    while (found == 0 && (step = sql_step(st)) == SQL_ROW) {
        if (skip_in_doubt && (int)sql_column_int64(st, 3) != 0)
            continue;
        struct call_process p;
        memset(&p, 0, sizeof p);
        p.position = (uint32_t)sql_column_int64(st, 0);
        p.process.pid = (pid_t)sql_column_int64(st, 1);
        p.process.start_ticks = (unsigned long long)sql_column_int64(st, 2);
        p.presence = process_identity_presence(&p.process);
        if (p.presence != PROCESS_GONE) {
            *out = p;
            found = 1;
        }
    }
    if (found == 0 && step != SQL_DONE) {
        sql_fail(db, err, err_cap);
        found = -1;
    }
    sql_release(st);
    return found;
}

void call_process_describe(const struct call_process *p, char *buf, size_t cap)
{
    if (p->presence == PROCESS_PRESENT)
        snprintf(buf, cap, "the module program of position %u (pid %ld) is still running",
                 (unsigned)p->position, (long)p->process.pid);
    else
        snprintf(buf, cap, "the module program of position %u (pid %ld) may still be running:"
                 " /proc cannot tell", (unsigned)p->position, (long)p->process.pid);
}
