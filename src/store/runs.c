#include "store/runs.h"

#include "base/error_line.h"
#include "base/process_identity.h"
#include "store/audit.h"
#include "store/sql.h"
#include "store/store_internal.h"
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static const char *const STATE_NAMES[] = {
    [RUN_PENDING] = "pending",          [RUN_RUNNING] = "running",
    [RUN_SUSPENDED] = "suspended",      [RUN_NEEDS_RECONCILE] = "needs_reconcile",
    [RUN_SUCCEEDED] = "succeeded",      [RUN_FAILED] = "failed",
    [RUN_CANCELLED] = "cancelled",
};

const char *run_state_name(enum run_state state)
{
    if ((unsigned)state < sizeof STATE_NAMES / sizeof STATE_NAMES[0])
        return STATE_NAMES[state];
    return "unknown";
}

static enum run_state state_parse(const char *name)
{
    for (unsigned i = 0; i < sizeof STATE_NAMES / sizeof STATE_NAMES[0]; i++)
        if (name != NULL && strcmp(name, STATE_NAMES[i]) == 0)
            return (enum run_state)i;
    return RUN_FAILED; /* the schema's CHECK admits no other name */
}

bool run_state_is_end(enum run_state state)
{
    return state == RUN_SUCCEEDED || state == RUN_FAILED || state == RUN_CANCELLED;
}

void run_row_free(struct run_row *r)
{
    if (r == NULL)
        return;
    free(r->trigger);
    free(r->result);
    free(r->error);
    r->trigger = r->result = r->error = NULL;
}

/* ---- owners ----------------------------------------------------------------------- */

/* This process's identity, read from /proc once per thread and process (every claim
 * names its owner; a fork's child has another pid, so it reads its own). */
static _Thread_local struct process_identity self_identity;

void runs_owner_self(char out[RUN_OWNER_MAX + 1])
{
    pid_t pid = getpid();
    if (self_identity.pid != pid || self_identity.start_ticks == 0) {
        struct process_identity me = {pid, 0};
        if (process_identity_of(pid, &me) != 0)
            me.start_ticks = 0; /* an owner no one can match: never taken for alive */
        self_identity = me;
    }
    snprintf(out, RUN_OWNER_MAX + 1, "pid:%ld:%llu", (long)self_identity.pid,
             self_identity.start_ticks);
}

bool runs_owner_alive(const char *owner)
{
    if (owner == NULL || strncmp(owner, "pid:", 4) != 0)
        return false;
    char *end;
    long pid = strtol(owner + 4, &end, 10);
    if (end == owner + 4 || *end != ':' || pid <= 0)
        return false;
    const char *start_text = end + 1;
    unsigned long long start = strtoull(start_text, &end, 10);
    if (end == start_text || *end != '\0' || start == 0)
        return false;
    if ((pid_t)pid == getpid()) { /* this process, or one before it with its pid: gone */
        char self[RUN_OWNER_MAX + 1];
        runs_owner_self(self);
        return strcmp(owner, self) == 0;
    }
    /* A process /proc cannot tell about may still run: alive, so no one takes over. */
    struct process_identity owner_id = {(pid_t)pid, start};
    return process_identity_presence(&owner_id) != PROCESS_GONE;
}

/* ---- reading ---------------------------------------------------------------------- */

#define RUN_COLUMNS                                                                      \
    "id, flow_id, version, trigger_id, trigger, state, owner, generation, result, error," \
    " created_at, updated_at, suspended_ms"

static int row_read(struct sql_stmt *st, struct run_row *r)
{
    memset(r, 0, sizeof *r);
    r->id = sql_column_int64(st, 0);
    sql_column_copy(st, 1, r->flow_id, sizeof r->flow_id);
    r->version = sql_column_int64(st, 2);
    sql_column_copy(st, 3, r->trigger_id, sizeof r->trigger_id);
    r->state = state_parse(sql_column_text(st, 5));
    sql_column_copy(st, 6, r->owner, sizeof r->owner);
    r->generation = sql_column_int64(st, 7);
    r->created_at = sql_column_int64(st, 10);
    r->updated_at = sql_column_int64(st, 11);
    r->suspended_ms = sql_column_int64(st, 12);
    if (sql_column_dup(st, 4, &r->trigger, NULL) != 0 ||
        sql_column_dup(st, 8, &r->result, NULL) != 0 ||
        sql_column_dup(st, 9, &r->error, NULL) != 0) {
        run_row_free(r);
        return -1;
    }
    return 0;
}

static int row_read_elem(struct sql_stmt *st, void *elem)
{
    return row_read(st, elem);
}

static void row_drop(void *elem)
{
    run_row_free(elem);
}

int runs_get(struct store *s, int64_t id, struct run_row *out, char *err, size_t err_cap)
{
    memset(out, 0, sizeof *out);
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "SELECT " RUN_COLUMNS " FROM runs WHERE id = ?1", &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, id);
    int ret = sql_step_row(db, st, err, err_cap);
    if (ret == 1 && row_read(st, out) != 0)
        ret = error_line(err, err_cap, "out of memory");
    sql_release(st);
    return ret;
}

int runs_list(struct store *s, const char *flow, struct run_row **rows, size_t *count,
              char *err, size_t err_cap)
{
    *rows = NULL;
    *count = 0;
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "SELECT " RUN_COLUMNS " FROM runs WHERE ?1 IS NULL OR flow_id = ?1"
                        " ORDER BY id", &st, err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, flow);
    void *list;
    if (sql_collect(db, st, sizeof **rows, row_read_elem, row_drop, &list, count, err,
                    err_cap) != 0)
        return -1;
    *rows = list;
    return 0;
}

/* A running run whose owner is alive is not recover's: skipped. */
static int recoverable_read(struct sql_stmt *st, void *elem)
{
    const char *state = sql_column_text(st, 1);
    const char *owner = sql_column_text(st, 2);
    if (state != NULL && strcmp(state, "running") == 0 && runs_owner_alive(owner))
        return 1;
    *(int64_t *)elem = sql_column_int64(st, 0);
    return 0;
}

int runs_recoverable(struct store *s, int64_t **ids, size_t *count, char *err, size_t err_cap)
{
    if (store_hold_driver(s, err, err_cap) != 0)
        return -1;
    return sql_select_all(store_db(s), "SELECT id, state, owner FROM runs WHERE state IN"
                          " ('pending', 'running') ORDER BY id", sizeof **ids, recoverable_read,
                          NULL, (void **)ids, count, err, err_cap);
}

/* ---- admission -------------------------------------------------------------------- */

static int random_trigger_id(char out[RUN_TRIGGER_ID_MAX + 1])
{
    unsigned char bytes[16];
    if (getrandom(bytes, sizeof bytes, 0) != (ssize_t)sizeof bytes)
        return -1;
    int at = snprintf(out, RUN_TRIGGER_ID_MAX + 1, "manual-");
    for (size_t i = 0; i < sizeof bytes; i++)
        at += snprintf(out + at, RUN_TRIGGER_ID_MAX + 1 - (size_t)at, "%02x", bytes[i]);
    return 0;
}

/* An unfinished run of flow, as "run N is STATE", or "" if none. */
static int unfinished_run(struct sql_db *db, const char *flow, char *what, size_t cap, char *err,
                          size_t err_cap)
{
    what[0] = '\0';
    struct sql_stmt *st;
    if (sql_prepare(db, "SELECT id, state FROM runs WHERE flow_id = ?1 AND state NOT IN"
                        " ('succeeded', 'failed', 'cancelled') ORDER BY id LIMIT 1",
                    &st, err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, flow);
    int found = sql_step_row(db, st, err, err_cap);
    if (found == 1)
        snprintf(what, cap, "run %" PRId64 " is %s", (int64_t)sql_column_int64(st, 0),
                 sql_column_text(st, 1));
    sql_release(st);
    return found < 0 ? -1 : 0;
}

int runs_unfinished(struct store *s, const char *flow, char *what, size_t what_cap, char *err,
                    size_t err_cap)
{
    return unfinished_run(store_db(s), flow, what, what_cap, err, err_cap);
}

/* The runs of flow waiting to start (pending). */
static int waiting_runs(struct sql_db *db, const char *flow, int64_t *count, char *err, size_t err_cap)
{
    struct sql_stmt *st;
    if (sql_prepare(db, "SELECT count(*) FROM runs WHERE flow_id = ?1 AND state = 'pending'", &st,
                    err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, flow);
    int rc = sql_step(st);
    *count = rc == SQL_ROW ? sql_column_int64(st, 0) : 0;
    sql_release(st);
    return rc == SQL_ROW ? 0 : sql_fail(db, err, err_cap);
}

/* max_waiting 0: refused while any run of the flow is unfinished (a run driven by the
 * admitting process); else refused when max_waiting runs of it already wait (serve). */
/* The run of flow admitted with trigger_id: 1 with *run_id, 0 if none, -1 on error. */
static int admitted_before(struct sql_db *db, const char *flow, const char *trigger_id, int64_t *run_id,
                           char *err, size_t err_cap)
{
    struct sql_stmt *st;
    if (sql_prepare(db, "SELECT id FROM runs WHERE flow_id = ?1 AND trigger_id = ?2", &st, err,
                    err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, flow);
    sql_bind_text(st, 2, trigger_id);
    int found = sql_step_row(db, st, err, err_cap);
    if (found == 1)
        *run_id = sql_column_int64(st, 0);
    sql_release(st);
    return found;
}

/* A duplicate trigger id is reported before the backlog: a trigger that fires again
 * (a schedule after a crash, an event sent twice) finds its run, full backlog or not.
 * *refused tells a refusal (admitted before, backlog full, a run unfinished: found
 * before anything was written) from the store's error. */
static int admit_in_txn(struct sql_db *db, const char *flow, int64_t version, const char *trigger,
                        const char *trigger_id, unsigned max_waiting, int64_t *run_id,
                        bool *duplicate, bool *refused, char *err, size_t err_cap)
{
    *refused = false;
    int before = admitted_before(db, flow, trigger_id, run_id, err, err_cap);
    if (before != 0) {
        *duplicate = before == 1;
        *refused = before == 1;
        return before == 1 ? error_line(err, err_cap,
                                        "flow '%s': trigger id '%s' was already admitted", flow,
                                        trigger_id)
                           : -1;
    }
    if (max_waiting > 0) {
        int64_t waiting;
        if (waiting_runs(db, flow, &waiting, err, err_cap) != 0)
            return -1;
        *refused = waiting >= max_waiting;
        if (*refused)
            return error_line(err, err_cap,
                              "flow '%s': %" PRId64 " runs are already waiting, the most its "
                              "backlog holds (serve --backlog)", flow, waiting);
    } else {
        char what[96];
        if (unfinished_run(db, flow, what, sizeof what, err, err_cap) != 0)
            return -1;
        *refused = what[0] != '\0';
        if (*refused)
            return error_line(err, err_cap,
                              "flow '%s': %s (runs of a flow execute one at a time; finish it "
                              "with ck-basal recover, flow reconcile or cancel)", flow, what);
    }
    struct sql_stmt *st;
    if (sql_prepare(db, "INSERT INTO runs (flow_id, version, trigger_id, trigger, state,"
                        " created_at, updated_at) VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?5)"
                        " ON CONFLICT (flow_id, trigger_id) DO NOTHING RETURNING id",
                    &st, err, err_cap) != 0)
        return -1;
    sql_bind_text(st, 1, flow);
    sql_bind_int64(st, 2, version);
    sql_bind_text(st, 3, trigger_id);
    sql_bind_text(st, 4, trigger != NULL ? trigger : "{}");
    sql_bind_int64(st, 5, sql_now_ms());
    int found = sql_step_row(db, st, err, err_cap);
    if (found == 1)
        *run_id = sql_column_int64(st, 0);
    sql_release(st);
    if (found < 0)
        return -1;
    if (found == 0) {
        *refused = true; /* DO NOTHING: nothing was written */
        return error_line(err, err_cap, "flow '%s': trigger id '%s' was already admitted", flow,
                          trigger_id);
    }
    return 0;
}

static int claim_in_txn(struct store *s, int64_t id, int64_t *generation, int64_t *seq,
                        char *err, size_t err_cap);

/* Admits, and claims too when claim is not NULL, in one transaction. */
static int admit(struct store *s, const char *flow, int64_t version, const char *trigger,
                 const char *trigger_id, unsigned max_waiting, int64_t *run_id,
                 struct run_claim *claim, bool *duplicate, char *err, size_t err_cap)
{
    *duplicate = false;
    char generated[RUN_TRIGGER_ID_MAX + 1];
    if (trigger_id == NULL) {
        if (random_trigger_id(generated) != 0)
            return error_line(err, err_cap, "getrandom failed");
        trigger_id = generated;
    }
    if (store_begin_txn(s, err, err_cap) != 0)
        return -1;
    bool refused;
    int rc = admit_in_txn(store_db(s), flow, version, trigger, trigger_id, max_waiting, run_id,
                          duplicate, &refused, err, err_cap);
    if (rc == 0 && claim != NULL)
        rc = claim_in_txn(s, *run_id, &claim->generation, &claim->activation_seq, err, err_cap);
    return store_end_txn(s, rc, err, err_cap);
}

int runs_admit_batch(struct store *s, struct run_admission *const *items, size_t count,
                     char *err, size_t err_cap)
{
    char generated[RUN_TRIGGER_ID_MAX + 1];
    int rc = store_begin_txn(s, err, err_cap);
    bool open = rc == 0;
    for (size_t i = 0; i < count && rc == 0; i++) {
        struct run_admission *a = items[i];
        const char *trigger_id = a->trigger_id;
        if (trigger_id == NULL) {
            rc = random_trigger_id(generated) == 0 ? 0 : error_line(err, err_cap, "getrandom failed");
            trigger_id = generated;
        }
        bool duplicate = false, refused = false;
        a->err[0] = '\0';
        if (rc == 0)
            a->rc = admit_in_txn(store_db(s), a->flow, a->version, a->trigger, trigger_id,
                                 a->max_waiting > 0 ? a->max_waiting : 1, &a->run_id, &duplicate,
                                 &refused, a->err, sizeof a->err);
        if (rc == 0 && a->rc != 0 && duplicate)
            a->rc = 1;
        /* A refusal left nothing to undo; the store's error ends the whole batch. */
        if (rc == 0 && a->rc != 0 && !refused)
            rc = error_line(err, err_cap, "%s", a->err);
    }
    if (open && store_end_txn(s, rc, err, err_cap) == 0)
        return 0;
    for (size_t i = 0; i < count; i++) {
        items[i]->rc = -1;
        snprintf(items[i]->err, sizeof items[i]->err, "%s", err);
    }
    return -1;
}

int runs_admit(struct store *s, const char *flow, int64_t version, const char *trigger,
               const char *trigger_id, int64_t *run_id, char *err, size_t err_cap)
{
    bool duplicate;
    return admit(s, flow, version, trigger, trigger_id, 0, run_id, NULL, &duplicate, err, err_cap);
}

int runs_admit_queued(struct store *s, const char *flow, int64_t version, const char *trigger,
                      const char *trigger_id, unsigned max_waiting, int64_t *run_id, char *err,
                      size_t err_cap)
{
    bool duplicate;
    int rc = admit(s, flow, version, trigger, trigger_id, max_waiting > 0 ? max_waiting : 1,
                   run_id, NULL, &duplicate, err, err_cap);
    return rc != 0 && duplicate ? 1 : rc;
}

static int head_read(struct sql_stmt *st, void *elem)
{
    struct run_head *h = elem;
    h->id = sql_column_int64(st, 0);
    snprintf(h->flow_id, sizeof h->flow_id, "%s", sql_column_text(st, 1));
    h->state = state_parse(sql_column_text(st, 2));
    const char *owner = sql_column_text(st, 3);
    snprintf(h->owner, sizeof h->owner, "%s", owner != NULL ? owner : "");
    return 0;
}

int runs_heads(struct store *s, struct run_head **heads, size_t *count, char *err, size_t err_cap)
{
    return sql_select_all(store_db(s), "SELECT id, flow_id, state, owner FROM runs WHERE id IN"
                          " (SELECT min(id) FROM runs WHERE state NOT IN ('succeeded', 'failed',"
                          " 'cancelled') GROUP BY flow_id) ORDER BY id", sizeof **heads,
                          head_read, NULL, (void **)heads, count, err, err_cap);
}

int runs_admit_claimed(struct store *s, const char *flow, int64_t version, const char *trigger,
                       const char *trigger_id, int64_t *run_id, struct run_claim *claim,
                       char *err, size_t err_cap)
{
    bool duplicate;
    return admit(s, flow, version, trigger, trigger_id, 0, run_id, claim, &duplicate, err, err_cap);
}

/* ---- claims and fenced writes ----------------------------------------------------- */

/* Run id's row, or -1 with "unknown run N" (or the store's error) in err. */
static int known_run(struct store *s, int64_t id, struct run_row *r, char *err, size_t err_cap)
{
    int found = runs_get(s, id, r, err, err_cap);
    if (found == 0)
        return error_line(err, err_cap, "unknown run %" PRId64, id);
    return found < 0 ? -1 : 0;
}

static int claim_in_txn(struct store *s, int64_t id, int64_t *generation, int64_t *seq,
                        char *err, size_t err_cap)
{
    struct run_row r;
    if (store_hold_driver(s, err, err_cap) != 0 || known_run(s, id, &r, err, err_cap) != 0)
        return -1;
    int ret = 0;
    if (r.state == RUN_RUNNING && runs_owner_alive(r.owner))
        ret = error_line(err, err_cap, "run %" PRId64 " is being driven by live process %s", id,
                         r.owner);
    else if (r.state != RUN_PENDING && r.state != RUN_RUNNING)
        ret = error_line(err, err_cap, "run %" PRId64 " is %s, not pending or running", id,
                         run_state_name(r.state));
    int64_t next = r.generation + 1;
    run_row_free(&r);
    if (ret != 0)
        return -1;
    struct sql_db *db = store_db(s);
    char owner[RUN_OWNER_MAX + 1];
    runs_owner_self(owner);
    struct sql_stmt *st;
    if (sql_prepare(db, "UPDATE runs SET state = 'running', owner = ?2, generation = ?3,"
                        " updated_at = ?4 WHERE id = ?1", &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, id);
    sql_bind_text(st, 2, owner);
    sql_bind_int64(st, 3, next);
    sql_bind_int64(st, 4, sql_now_ms());
    if (sql_run(db, st, err, err_cap) != 0)
        return -1;
    if (sql_prepare(db, "INSERT INTO activations (run_id, seq, started_at) VALUES (?1,"
                        " (SELECT coalesce(max(seq), 0) + 1 FROM activations WHERE run_id = ?1),"
                        " ?2) RETURNING seq", &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, id);
    sql_bind_int64(st, 2, sql_now_ms());
    int rc = sql_step(st);
    if (rc == SQL_ROW)
        *seq = sql_column_int64(st, 0);
    sql_release(st);
    if (rc != SQL_ROW)
        return sql_fail(db, err, err_cap);
    *generation = next;
    return 0;
}

int runs_claim(struct store *s, int64_t id, int64_t *generation, int64_t *activation_seq,
               char *err, size_t err_cap)
{
    if (store_begin_txn(s, err, err_cap) != 0)
        return -1;
    return store_end_txn(s, claim_in_txn(s, id, generation, activation_seq, err, err_cap), err,
                         err_cap);
}

int runs_fence(struct store *s, int64_t id, int64_t generation, char *err, size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "SELECT generation FROM runs WHERE id = ?1", &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, id);
    int found = sql_step_row(db, st, err, err_cap);
    int64_t now = found == 1 ? sql_column_int64(st, 0) : -1;
    sql_release(st);
    if (found < 0)
        return -1;
    if (now != generation)
        return error_line(err, err_cap, "run %" PRId64 " was taken over by another process", id);
    return 0;
}

int runs_set_state(struct store *s, int64_t id, int64_t generation, enum run_state state,
                   const char *result, const char *error, char *err, size_t err_cap)
{
    if (runs_fence(s, id, generation, err, err_cap) != 0)
        return -1;
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "UPDATE runs SET state = ?2, result = ?3, error = ?4, updated_at = ?5,"
                        " owner = CASE WHEN ?2 = 'running' THEN owner END WHERE id = ?1",
                    &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, id);
    sql_bind_text(st, 2, run_state_name(state));
    if (result != NULL)
        sql_bind_blob(st, 3, result, strlen(result));
    sql_bind_text(st, 4, error);
    sql_bind_int64(st, 5, sql_now_ms());
    return sql_run(db, st, err, err_cap);
}

int runs_wake(struct store *s, int64_t id, bool *woken, char *err, size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    /* updated_at is when it was suspended: nothing else writes a suspended run. */
    if (sql_prepare(db, "UPDATE runs SET state = 'pending', owner = NULL, suspended_ms ="
                        " suspended_ms + CASE WHEN ?2 > updated_at THEN ?2 - updated_at ELSE 0 END,"
                        " updated_at = ?2"
                        " WHERE id = ?1 AND state = 'suspended'", &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, id);
    sql_bind_int64(st, 2, sql_now_ms());
    if (sql_run(db, st, err, err_cap) != 0)
        return -1;
    if (woken != NULL)
        *woken = sql_changes(db) == 1;
    return 0;
}

int runs_end_activation(struct store *s, int64_t id, int64_t seq, const char *outcome,
                        long pid, char *err, size_t err_cap)
{
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "UPDATE activations SET outcome = ?3, worker_pid = ?4, ended_at = ?5"
                        " WHERE run_id = ?1 AND seq = ?2", &st, err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, id);
    sql_bind_int64(st, 2, seq);
    sql_bind_text(st, 3, outcome);
    if (pid > 0)
        sql_bind_int64(st, 4, pid);
    sql_bind_int64(st, 5, sql_now_ms());
    return sql_run(db, st, err, err_cap);
}

/* ---- the operator's cancel ------------------------------------------------------- */

static int cancel_in_txn(struct store *s, int64_t id, const char *reason, enum run_state *was,
                         char *err, size_t err_cap)
{
    struct run_row r;
    if (known_run(s, id, &r, err, err_cap) != 0)
        return -1;
    *was = r.state;
    int ret = 0;
    if (run_state_is_end(r.state))
        ret = error_line(err, err_cap, "run %" PRId64 " has already ended: %s", id,
                         run_state_name(r.state));
    else if (r.state == RUN_RUNNING && runs_owner_alive(r.owner))
        ret = error_line(err, err_cap, "run %" PRId64 " is being driven by live process %s;"
                         " it ends the run itself (stop that process first to cancel it)", id,
                         r.owner);
    char flow[sizeof r.flow_id];
    snprintf(flow, sizeof flow, "%s", r.flow_id);
    run_row_free(&r);
    if (ret != 0)
        return -1;
    char why[RUN_CANCEL_REASON_MAX + 96];
    snprintf(why, sizeof why, "cancelled by the operator (was %s)%s%s", run_state_name(*was),
             reason != NULL ? ": " : "", reason != NULL ? reason : "");
    struct sql_db *db = store_db(s);
    struct sql_stmt *st;
    if (sql_prepare(db, "UPDATE runs SET state = 'cancelled', error = ?2, owner = NULL,"
                        " generation = generation + 1, updated_at = ?3 WHERE id = ?1", &st,
                    err, err_cap) != 0)
        return -1;
    sql_bind_int64(st, 1, id);
    sql_bind_text(st, 2, why);
    sql_bind_int64(st, 3, sql_now_ms());
    if (sql_run(db, st, err, err_cap) != 0)
        return -1;
    return audit_record(s, flow, id, -1, "cancel", true, why, err, err_cap);
}

int runs_cancel(struct store *s, int64_t id, const char *reason, enum run_state *was,
                char *err, size_t err_cap)
{
    *was = RUN_PENDING;
    if (store_hold_driver(s, err, err_cap) != 0 || store_begin_txn(s, err, err_cap) != 0)
        return -1;
    return store_end_txn(s, cancel_in_txn(s, id, reason, was, err, err_cap), err, err_cap);
}
