/* Codemode runs on the store (see codemode_store.h). */
#include "store/codemode_store.h"

#include "base/error_line.h"
#include "store/audit.h"
#include "store/journal.h"
#include "store/runs.h"
#include "store/sql.h"
#include "store/store_internal.h"
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const STATE_NAMES[] = {
    [CODEMODE_RUNNING] = "running",
    [CODEMODE_SUCCEEDED] = "succeeded",
    [CODEMODE_FAILED] = "failed",
};

const char *codemode_run_state_name(enum codemode_run_state state)
{
    if ((unsigned)state < sizeof STATE_NAMES / sizeof STATE_NAMES[0])
        return STATE_NAMES[state];
    return "unknown";
}

static enum codemode_run_state state_parse(const char *name)
{
    for (unsigned i = 0; i < sizeof STATE_NAMES / sizeof STATE_NAMES[0]; i++)
        if (name != NULL && strcmp(name, STATE_NAMES[i]) == 0)
            return (enum codemode_run_state)i;
    return CODEMODE_FAILED; /* the schema's CHECK admits no other name */
}

void codemode_run_ref(int64_t id, char out[24])
{
    snprintf(out, 24, "%c%" PRId64, CODEMODE_RUN_PREFIX, id);
}

bool codemode_run_ref_parse(const char *text, int64_t *id)
{
    if (text == NULL || text[0] != CODEMODE_RUN_PREFIX)
        return false;
    const char *digits = text + 1;
    size_t n = strlen(digits);
    if (n == 0 || n > 18 || digits[0] == '0')
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (digits[i] < '0' || digits[i] > '9')
            return false;
        v = v * 10 + (digits[i] - '0');
    }
    *id = v;
    return true;
}

int codemode_call_key(int64_t run_id, uint32_t position, char out[65])
{
    /* A tag no flow key uses, then the numbers, each ended by a byte they never hold. */
    char bytes[96];
    int n = snprintf(bytes, sizeof bytes, "basal.codemode-key.v1%c%" PRId64 "\n%" PRIu32, '\0',
                     run_id, position);
    if (n < 0 || (size_t)n >= sizeof bytes)
        return -1;
    return journal_digest(bytes, (size_t)n, out);
}

/* ---- runs ------------------------------------------------------------------------ */

int codemode_run_begin(struct store *s, const struct codemode_run_start *start, int64_t *id,
                       char *err, size_t err_cap)
{
    char digest[65], owner[RUN_OWNER_MAX + 1];
    if (store_hold_driver(s, err, err_cap) != 0)
        return -1;
    if (journal_digest(start->script, start->script_len, digest) != 0)
        return error_line(err, err_cap, "SHA-256: libcrypto failed");
    runs_owner_self(owner);
    struct sql_db *db = store_db(s);
    if (store_begin_txn(s, err, err_cap) != 0)
        return -1;
    struct sql_stmt *st;
    int rc = sql_prepare(db, "INSERT INTO codemode_runs (script_name, script, script_sha256,"
                             " input, state, owner, created_at, updated_at)"
                             " VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?6) RETURNING id", &st, err,
                         err_cap);
    if (rc == 0) {
        int64_t now = sql_now_ms();
        sql_bind_text(st, 1, start->script_name);
        sql_bind_blob(st, 2, start->script, start->script_len);
        sql_bind_text(st, 3, digest);
        sql_bind_text(st, 4, start->input);
        sql_bind_text(st, 5, owner);
        sql_bind_int64(st, 6, now);
        rc = sql_step_row(db, st, err, err_cap);
        if (rc == 1)
            *id = sql_column_int64(st, 0);
        sql_release(st);
        rc = rc == 1 ? 0 : rc == 0 ? error_line(err, err_cap, "store: the run was not added") : -1;
    }
    return store_end_txn(s, rc, err, err_cap);
}

int codemode_run_finish(struct store *s, int64_t id, const struct codemode_run_end *end,
                        char *err, size_t err_cap)
{
    struct sql_db *db = store_db(s);
    if (store_begin_txn(s, err, err_cap) != 0)
        return -1;
    struct sql_stmt *st;
    int rc = sql_prepare(db, "UPDATE codemode_runs SET state = ?2, outcome = ?3, result = ?4,"
                             " error = ?5, console = ?6, console_truncated = ?7,"
                             " tool_calls = ?8, over_limit_calls = ?9, worker_pid = ?10,"
                             " wall_ms = ?11, updated_at = ?12"
                             " WHERE id = ?1 AND state = 'running'", &st, err, err_cap);
    if (rc == 0) {
        sql_bind_int64(st, 1, id);
        sql_bind_text(st, 2, codemode_run_state_name(end->state));
        sql_bind_text(st, 3, end->outcome);
        if (end->result != NULL)
            sql_bind_blob(st, 4, end->result, strlen(end->result));
        sql_bind_text(st, 5, end->error);
        if (end->console != NULL)
            sql_bind_blob(st, 6, end->console, strlen(end->console));
        sql_bind_int64(st, 7, end->console_truncated ? 1 : 0);
        sql_bind_int64(st, 8, end->tool_calls);
        sql_bind_int64(st, 9, end->over_limit_calls);
        if (end->worker_pid > 0)
            sql_bind_int64(st, 10, end->worker_pid);
        sql_bind_int64(st, 11, end->wall_ms);
        sql_bind_int64(st, 12, sql_now_ms());
        rc = sql_run(db, st, err, err_cap);
    }
    if (rc == 0 && sql_changes(db) != 1)
        rc = error_line(err, err_cap, "codemode run c%" PRId64 " is not running", id);
    return store_end_txn(s, rc, err, err_cap);
}

/* A running run whose owner is alive is not abandoned: skipped. */
static int abandoned_read(struct sql_stmt *st, void *elem)
{
    const char *owner = sql_column_text(st, 1);
    if (runs_owner_alive(owner))
        return 1;
    *(int64_t *)elem = sql_column_int64(st, 0);
    return 0;
}

int codemode_runs_abandon(struct store *s, int *count, char *err, size_t err_cap)
{
    if (count != NULL)
        *count = 0;
    struct sql_db *db = store_db(s);
    if (store_hold_driver(s, err, err_cap) != 0 || store_begin_txn(s, err, err_cap) != 0)
        return -1;
    struct sql_stmt *st;
    void *list = NULL;
    size_t n = 0;
    int rc = sql_prepare(db, "SELECT id, owner FROM codemode_runs WHERE state = 'running'", &st,
                         err, err_cap);
    if (rc == 0)
        rc = sql_collect(db, st, sizeof(int64_t), abandoned_read, NULL, &list, &n, err, err_cap);
    const int64_t *ids = list;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = sql_prepare(db, "UPDATE codemode_runs SET state = 'failed', error = ?2,"
                             " updated_at = ?3 WHERE id = ?1 AND state = 'running'", &st, err,
                         err_cap);
        if (rc != 0)
            break;
        sql_bind_int64(st, 1, ids[i]);
        sql_bind_text(st, 2, "abandoned: the process running it ended before the run did");
        sql_bind_int64(st, 3, sql_now_ms());
        rc = sql_run(db, st, err, err_cap);
    }
    free(list);
    if (store_end_txn(s, rc, err, err_cap) != 0)
        return -1;
    if (count != NULL)
        *count = (int)n;
    return 0;
}

/* ---- calls and audit ---------------------------------------------------------------- */

void codemode_call_free(struct codemode_call *c)
{
    if (c == NULL)
        return;
    free(c->kind);
    free(c->tool);
    free(c->module);
    free(c->op);
    free(c->args);
    free(c->value);
    memset(c, 0, sizeof *c);
}

int codemode_audit(struct store *s, int64_t run_id, int64_t position, const char *kind,
                   bool allowed, const char *reason, char *err, size_t err_cap)
{
    struct audit_row row = {NULL, -1, run_id, position, kind, allowed, reason};
    return audit_append(s, &row, err, err_cap);
}

int codemode_call_record(struct store *s, int64_t run_id, const struct codemode_call_entry *c,
                         const char *reason, char *err, size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "INSERT INTO codemode_calls (run_id, position, kind, tool, module, op,"
                        " class, args, args_digest, idempotency_key, decision, state,"
                        " settlement, value, created_at, settled_at)"
                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
                        " ?15, ?16)", &st, err, err_cap) != 0)
        return -1;
    int64_t now = sql_now_ms();
    sql_bind_int64(st, 1, run_id);
    sql_bind_int64(st, 2, c->position);
    sql_bind_text(st, 3, c->kind);
    sql_bind_text(st, 4, c->tool);
    sql_bind_text(st, 5, c->module);
    sql_bind_text(st, 6, c->op);
    if (c->has_class)
        sql_bind_text(st, 7, c->mutation ? "mutation" : "query");
    sql_bind_blob(st, 8, c->args, c->args_len);
    sql_bind_text(st, 9, c->digest);
    if (c->key[0] != '\0')
        sql_bind_text(st, 10, c->key);
    sql_bind_text(st, 11, c->allowed ? "allowed" : "refused");
    sql_bind_text(st, 12, c->settled ? "settled" : "pending");
    if (c->settled) {
        sql_bind_text(st, 13, sql_settlement_name(c->settlement));
        if (c->value != NULL)
            sql_bind_blob(st, 14, c->value, strlen(c->value));
        sql_bind_int64(st, 16, now);
    }
    sql_bind_int64(st, 15, now);
    if (sql_run(db, st, err, err_cap) != 0)
        return -1;
    return codemode_audit(s, run_id, c->position, c->kind, c->allowed, reason, err, err_cap);
}

int codemode_call_settle(struct store *s, int64_t run_id, uint32_t position,
                         enum proto_settlement settlement, const char *value, char *err,
                         size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "UPDATE codemode_calls SET state = 'settled', settlement = ?3,"
                        " value = ?4, settled_at = ?5"
                        " WHERE run_id = ?1 AND position = ?2 AND state = 'pending'", &st, err,
                    err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, run_id);
    sql_bind_int64(st, 2, position);
    sql_bind_text(st, 3, sql_settlement_name(settlement));
    if (value != NULL)
        sql_bind_blob(st, 4, value, strlen(value));
    sql_bind_int64(st, 5, sql_now_ms());
    if (sql_run(db, st, err, err_cap) != 0)
        return -1;
    if (sql_changes(db) != 1)
        return error_line(err, err_cap, "codemode run c%" PRId64 ": no pending call at %u",
                          run_id, (unsigned)position);
    return 0;
}

/* ---- reading ------------------------------------------------------------------------ */

#define RUN_COLUMNS                                                                          \
    "id, script_name, script_sha256, input, state, owner, outcome, result, error, console," \
    " console_truncated, tool_calls, over_limit_calls, worker_pid, wall_ms, created_at,"   \
    " updated_at"

void codemode_run_row_free(struct codemode_run_row *r)
{
    if (r == NULL)
        return;
    free(r->script_name);
    free(r->input);
    free(r->outcome);
    free(r->result);
    free(r->error);
    free(r->console);
    memset(r, 0, sizeof *r);
}

static int run_read(struct sql_stmt *st, void *elem)
{
    struct codemode_run_row *r = elem;
    memset(r, 0, sizeof *r);
    r->id = sql_column_int64(st, 0);
    sql_column_copy(st, 2, r->script_sha256, sizeof r->script_sha256);
    r->state = state_parse(sql_column_text(st, 4));
    sql_column_copy(st, 5, r->owner, sizeof r->owner);
    r->console_truncated = (int)sql_column_int64(st, 10) != 0;
    r->tool_calls = sql_column_int64(st, 11);
    r->over_limit_calls = sql_column_int64(st, 12);
    r->worker_pid = sql_column_int64(st, 13);
    r->wall_ms = sql_column_is_null(st, 14) ? -1 : sql_column_int64(st, 14);
    r->created_at = sql_column_int64(st, 15);
    r->updated_at = sql_column_int64(st, 16);
    if (sql_column_dup(st, 1, &r->script_name, NULL) != 0 ||
        sql_column_dup(st, 3, &r->input, NULL) != 0 ||
        sql_column_dup(st, 6, &r->outcome, NULL) != 0 ||
        sql_column_dup(st, 7, &r->result, NULL) != 0 ||
        sql_column_dup(st, 8, &r->error, NULL) != 0 ||
        sql_column_dup(st, 9, &r->console, NULL) != 0) {
        codemode_run_row_free(r);
        return -1;
    }
    return 0;
}

static void run_drop(void *elem)
{
    codemode_run_row_free(elem);
}

int codemode_run_get(struct store *s, int64_t id, struct codemode_run_row *out, char *err,
                     size_t err_cap)
{
    memset(out, 0, sizeof *out);
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "SELECT " RUN_COLUMNS " FROM codemode_runs WHERE id = ?1", &st, err,
                    err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, id);
    int rc = sql_step(st);
    int ret = 0;
    if (rc == SQL_ROW)
        ret = run_read(st, out) == 0 ? 1 : error_line(err, err_cap, "out of memory");
    else if (rc != SQL_DONE)
        ret = sql_fail(db, err, err_cap);
    sql_release(st);
    return ret;
}

int codemode_runs_list(struct store *s, struct codemode_run_row **rows, size_t *count,
                       char *err, size_t err_cap)
{
    void *list;
    int rc = sql_select_all(store_db(s), "SELECT " RUN_COLUMNS " FROM codemode_runs ORDER BY id",
                            sizeof **rows, run_read, run_drop, &list, count, err, err_cap);
    *rows = list; /* NULL when rc is -1 */
    return rc;
}

static int call_read(struct sql_stmt *st, void *elem)
{
    struct codemode_call *c = elem;
    memset(c, 0, sizeof *c);
    c->position = (uint32_t)sql_column_int64(st, 0);
    const char *cls = sql_column_text(st, 6);
    c->has_class = cls != NULL;
    c->mutation = cls != NULL && strcmp(cls, "mutation") == 0;
    sql_column_copy(st, 8, c->digest, sizeof c->digest);
    sql_column_copy(st, 9, c->key, sizeof c->key);
    const char *decision = sql_column_text(st, 10);
    c->allowed = decision != NULL && strcmp(decision, "allowed") == 0;
    const char *state = sql_column_text(st, 11);
    c->settled = state != NULL && strcmp(state, "settled") == 0;
    c->settlement = sql_settlement_parse(sql_column_text(st, 12));
    if (sql_column_dup(st, 1, &c->kind, NULL) != 0 || sql_column_dup(st, 2, &c->tool, NULL) != 0 ||
        sql_column_dup(st, 3, &c->module, NULL) != 0 || sql_column_dup(st, 4, &c->op, NULL) != 0 ||
        sql_column_dup(st, 5, &c->args, &c->args_len) != 0 ||
        sql_column_dup(st, 13, &c->value, NULL) != 0) {
        codemode_call_free(c);
        return -1;
    }
    return 0;
}

static void call_drop(void *elem)
{
    codemode_call_free(elem);
}

int codemode_calls_load(struct store *s, int64_t id, struct codemode_call **rows,
                        size_t *count, char *err, size_t err_cap)
{
    void *list;
    int rc = sql_select_by_id(store_db(s),
                              "SELECT position, kind, tool, module, op, args, class, NULL,"
                              " args_digest, idempotency_key, decision, state, settlement,"
                              " value FROM codemode_calls WHERE run_id = ?1 ORDER BY position",
                              id, sizeof **rows, call_read, call_drop, &list, count, err,
                              err_cap);
    *rows = list; /* NULL when rc is -1 */
    return rc;
}
