#include "flows/flow_host.h"

#include "base/clock.h"
#include "store/audit.h"
#include "store/call_processes.h"
#include "base/error_line.h"
#include "base/json_js.h"
#include "store/runs.h"
#include "store/store.h"
#include "store/waits.h"
#include "base/test_hooks.h"
#include "flows/host_kinds.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STOP_MAX 512
/* How far past the activation's deadline a module timeout the deadline caused is due. */
#define HOLD_PAST_DEADLINE_MS (24LL * 3600 * 1000)

/* A journaled row the script has not been delivered yet (from the run's journal). */
struct open_row {
    struct journal_entry entry;
    bool called; /* the script called this position again */
};

/* A delivery whose order is not written yet. */
struct delivery {
    uint32_t position;
    enum proto_settlement settlement;
    char *value;
    int64_t order;
    struct journal_entry *unjournaled; /* a driver-made settlement the host never saw */
};

/* The audit row of a query performed and allowed whose outcome waits for its delivery
 * (journal_around): written with the next transaction, as the delivery orders are. */
struct owed_audit {
    uint32_t position;
    char *kind;
};

struct flow_host {
    struct flow_host_config cfg;
    struct open_row *open;
    size_t open_count;
    uint8_t *journaled; /* by position: a row exists */
    size_t journaled_cap;
    struct delivery *deliveries;
    size_t delivery_count, delivery_cap;
    size_t flushed; /* deliveries written by the open transaction, kept until it commits */
    struct owed_audit *audits;
    size_t audit_count, audit_cap;
    size_t audits_flushed; /* as flushed, for audits */
    char stopped[STOP_MAX];
    enum flow_host_stop stop_kind;
    struct flow_run_usage usage; /* journal rows of the run, their bytes */
    /* The call just performed was a module cut short by the activation's deadline: its
     * timeout is the deadline's, so the driver holds it past the deadline (the
     * activation then ends as "deadline") instead of handing it to the script. */
    bool cut_by_deadline;
    struct net_fetch_session *net; /* made at the first net.fetch; keeps connections */
};

/* ---- bookkeeping ------------------------------------------------------------------ */

static int mark_journaled(struct flow_host *fh, uint32_t position)
{
    if (position >= fh->journaled_cap) {
        size_t cap = fh->journaled_cap == 0 ? 256 : fh->journaled_cap;
        while (cap <= position)
            cap *= 2;
        uint8_t *grown = realloc(fh->journaled, cap);
        if (grown == NULL)
            return -1;
        memset(grown + fh->journaled_cap, 0, cap - fh->journaled_cap);
        fh->journaled = grown;
        fh->journaled_cap = cap;
    }
    fh->journaled[position] = 1;
    return 0;
}

static bool is_journaled(const struct flow_host *fh, uint32_t position)
{
    return position < fh->journaled_cap && fh->journaled[position] != 0;
}

static struct open_row *find_open(struct flow_host *fh, uint32_t position)
{
    for (size_t i = 0; i < fh->open_count; i++)
        if (fh->open[i].entry.position == position)
            return &fh->open[i];
    return NULL;
}

static char *dup_or_null(const char *s)
{
    return s != NULL ? strdup(s) : NULL;
}

static int copy_entry(struct journal_entry *to, const struct journal_entry *from)
{
    *to = *from;
    to->kind = strdup(from->kind);
    to->args = malloc(from->args_len + 1);
    to->value = dup_or_null(from->value);
    to->destination = dup_or_null(from->destination);
    if (to->kind == NULL || to->args == NULL || (from->value != NULL && to->value == NULL) ||
        (from->destination != NULL && to->destination == NULL)) {
        journal_entry_free(to);
        return -1;
    }
    memcpy(to->args, from->args, from->args_len + 1);
    return 0;
}

struct flow_host *flow_host_new(const struct flow_host_config *cfg)
{
    struct flow_host *fh = calloc(1, sizeof *fh);
    if (fh == NULL)
        return NULL;
    fh->cfg = *cfg;
    fh->open = calloc(cfg->journal_count + 1, sizeof *fh->open);
    if (fh->open == NULL) {
        free(fh);
        return NULL;
    }
    for (size_t i = 0; i < cfg->journal_count; i++) {
        const struct journal_entry *e = &cfg->journal[i];
        if (mark_journaled(fh, e->position) != 0) {
            flow_host_free(fh);
            return NULL;
        }
        fh->usage.calls++;
        fh->usage.journal_bytes += e->args_len + (e->value != NULL ? strlen(e->value) : 0);
        if (e->state == JOURNAL_SETTLED)
            continue; /* delivered: the worker replays it from the prefix */
        if (copy_entry(&fh->open[fh->open_count].entry, e) != 0) {
            flow_host_free(fh);
            return NULL;
        }
        fh->open_count++;
    }
    return fh;
}

static void delivery_free(struct delivery *d)
{
    free(d->value);
    if (d->unjournaled != NULL) {
        journal_entry_free(d->unjournaled);
        free(d->unjournaled);
    }
}

void flow_host_free(struct flow_host *fh)
{
    if (fh == NULL)
        return;
    for (size_t i = 0; i < fh->open_count; i++)
        journal_entry_free(&fh->open[i].entry);
    free(fh->open);
    for (size_t i = 0; i < fh->delivery_count; i++)
        delivery_free(&fh->deliveries[i]);
    free(fh->deliveries);
    for (size_t i = 0; i < fh->audit_count; i++)
        free(fh->audits[i].kind);
    free(fh->audits);
    free(fh->journaled);
    net_fetch_session_free(fh->net);
    free(fh);
}

__attribute__((format(printf, 3, 4))) static void stop(struct flow_host *fh,
                                                       enum flow_host_stop kind,
                                                       const char *fmt, ...)
{
    if (fh->stop_kind != FLOW_HOST_RUNNING)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fh->stopped, sizeof fh->stopped, fmt, ap);
    va_end(ap);
    fh->stop_kind = kind;
}

const char *flow_host_stopped(const struct flow_host *fh, enum flow_host_stop *kind)
{
    if (kind != NULL)
        *kind = fh->stop_kind;
    return fh->stop_kind != FLOW_HOST_RUNNING ? fh->stopped : NULL;
}

/* The code a call gets once the host has stopped. */
static const char *stopped_code(const struct flow_host *fh)
{
    return fh->stop_kind == FLOW_HOST_NONDETERMINISM ? HOST_CODE_NONDETERMINISM
           : fh->stop_kind == FLOW_HOST_LIMIT         ? HOST_CODE_TOO_LARGE
                                                      : HOST_CODE_IO_ERROR;
}

bool flow_host_unreached(const struct flow_host *fh, char *buf, size_t cap)
{
    for (size_t i = 0; i < fh->open_count; i++) {
        const struct open_row *o = &fh->open[i];
        if (!o->called) {
            snprintf(buf, cap, "the journal records position %u (%s) that the script did not"
                     " reach", (unsigned)o->entry.position, o->entry.kind);
            return true;
        }
    }
    return false;
}

/* ---- deciding ------------------------------------------------------------------------ */

/* What the run's calls are decided and performed against (flows/host_kinds.h). */
static struct host_kind_site site_of(struct flow_host *fh)
{
    struct host_kind_site site = {fh->cfg.manifest, fh->cfg.catalog, fh->cfg.home,
                                  fh->cfg.store, fh->cfg.flow_id, fh->cfg.run_id,
                                  fh->cfg.deadline_at_ms, &fh->net};
    return site;
}

/* Decides a call by its row (args NULL: not a JSON array, refused before any grant).
 * Free c with host_kind_call_free. */
static void decide(struct flow_host *fh, const struct host_call *call, const json_t *args,
                   struct host_kind_call *c)
{
    struct host_kind_site site = site_of(fh);
    c->name = call->kind;
    c->args = args;
    c->args_text = call->args;
    c->args_len = call->args_len;
    c->position = call->position;
    host_kind_decide(&site, c);
}

/* ---- transactions ----------------------------------------------------------------- */

/* Writes the delivery orders not yet written, in the open transaction. They are
 * dropped from memory only once it commits (committed()): a rollback keeps them. */
static int flush(struct flow_host *fh, char *err, size_t err_cap)
{
    struct store *s = fh->cfg.store;
    fh->flushed = 0;
    fh->audits_flushed = 0;
    for (size_t i = 0; i < fh->audit_count; i++)
        if (audit_record(s, fh->cfg.flow_id, fh->cfg.run_id, fh->audits[i].position,
                         fh->audits[i].kind, true, NULL, err, err_cap) != 0)
            return -1;
    fh->audits_flushed = fh->audit_count;
    for (size_t i = 0; i < fh->delivery_count; i++) {
        struct delivery *d = &fh->deliveries[i];
        if (d->unjournaled != NULL &&
            (journal_insert(s, fh->cfg.run_id, d->unjournaled, err, err_cap) != 0 ||
             audit_record(s, fh->cfg.flow_id, fh->cfg.run_id, d->position,
                          d->unjournaled->kind, false, d->value, err, err_cap) != 0))
            return -1;
        if (journal_deliver(s, fh->cfg.run_id, d->position, d->settlement, d->value, d->order,
                            err, err_cap) != 0)
            return -1;
    }
    fh->flushed = fh->delivery_count;
    return 0;
}

static void committed(struct flow_host *fh)
{
    if (fh->audits_flushed > 0) {
        for (size_t i = 0; i < fh->audits_flushed; i++)
            free(fh->audits[i].kind);
        memmove(fh->audits, fh->audits + fh->audits_flushed,
                (fh->audit_count - fh->audits_flushed) * sizeof *fh->audits);
        fh->audit_count -= fh->audits_flushed;
        fh->audits_flushed = 0;
    }
    if (fh->flushed == 0)
        return;
    for (size_t i = 0; i < fh->flushed; i++)
        delivery_free(&fh->deliveries[i]);
    memmove(fh->deliveries, fh->deliveries + fh->flushed,
            (fh->delivery_count - fh->flushed) * sizeof *fh->deliveries);
    fh->delivery_count -= fh->flushed;
    fh->flushed = 0;
}

int flow_host_flush(struct flow_host *fh, char *err, size_t err_cap)
{
    return flush(fh, err, err_cap);
}

/* BEGIN IMMEDIATE, the fence and the pending delivery orders. A transaction whose
 * commit need not wait for the disk (unsynced) is one the next commit that waits
 * takes to disk with it. */
static int txn_open(struct flow_host *fh, bool unsynced, char *err, size_t err_cap)
{
    struct store *s = fh->cfg.store;
    if ((unsynced ? store_begin_txn_unsynced(s, err, err_cap)
                  : store_begin_txn(s, err, err_cap)) != 0)
        return -1;
    if (runs_fence(s, fh->cfg.run_id, fh->cfg.generation, err, err_cap) != 0 ||
        flush(fh, err, err_cap) != 0) {
        store_rollback(s);
        return -1;
    }
    return 0;
}

static int txn_commit(struct flow_host *fh, uint32_t position, char *err, size_t err_cap)
{
    test_hook_boundary(TEST_BOUNDARY_BEFORE_JOURNAL_COMMIT, position);
    if (store_end_txn(fh->cfg.store, 0, err, err_cap) != 0)
        return -1;
    committed(fh);
    return 0;
}

/* The host stops at a store error or a lost claim: the call is answered io_error and
 * nothing more is journaled. */
static int fail_call(struct flow_host *fh, const char *err, struct host_settlement *out)
{
    stop(fh, FLOW_HOST_BROKEN, "%s", err);
    return host_reject(out, HOST_CODE_IO_ERROR, "the journal could not record the call: %s", err);
}

/* The store refused what the worker sent (a statement failed inside the open, fenced
 * transaction): the run is this process's and the store answers, so the run ends
 * failed instead of staying running for a recover that would fail the same way. */
static int fail_record(struct flow_host *fh, const struct journal_entry *e, const char *err,
                       struct host_settlement *out)
{
    stop(fh, FLOW_HOST_UNRECORDED, "the store refused to record position %u (%.80s): %s",
         (unsigned)e->position, e->kind, err);
    return host_reject(out, HOST_CODE_IO_ERROR, "the journal could not record the call: %s", err);
}

/* ---- performing ------------------------------------------------------------------- */

/* An ops.call's module process, recorded before the program may run
 * (store/call_processes.h): recover and reconcile wait for it. */
struct module_start {
    struct flow_host *fh;
    uint32_t position;
    struct process_identity process;
    bool recorded;
};

static int record_module_process(void *ctx, const struct process_identity *process, char *err,
                                 size_t err_cap)
{
    struct module_start *ms = ctx;
    struct flow_host *fh = ms->fh;
    if (txn_open(fh, false, err, err_cap) != 0)
        return -1;
    if (call_process_record(fh->cfg.store, fh->cfg.run_id, ms->position, process, err,
                            err_cap) != 0) {
        store_rollback(fh->cfg.store);
        return -1;
    }
    if (store_end_txn(fh->cfg.store, 0, err, err_cap) != 0)
        return -1;
    committed(fh);
    ms->process = *process;
    ms->recorded = true;
    return 0;
}

/* Performs a granted call that leaves the journal's transaction, by its row: for an
 * ops.call the module's process is recorded before the program runs, and forgotten
 * once it was reaped. */
static int perform(struct flow_host *fh, struct host_kind_call *c, const struct journal_entry *e,
                   bool resend, struct host_settlement *out)
{
    struct module_start ms = {fh, e->position, {0, 0}, false};
    struct ops_process_hook hook = {record_module_process, &ms};
    struct host_kind_site site = site_of(fh);
    c->key = e->key;
    c->resend = resend;
    c->module_hook = &hook;
    int rc = host_kind_perform(&site, c, out);
    c->module_hook = NULL;
    fh->cut_by_deadline = c->cut_by_deadline;
    if (ms.recorded) { /* reaped: nothing of it runs any more (a failure leaves a stale row) */
        char err[256];
        (void)call_process_forget(fh->cfg.store, fh->cfg.run_id, e->position, &ms.process, err,
                                  sizeof err);
    }
    return rc;
}

/* One transaction: row, (kv change), outcome, audit. For sync, local and refusals. */
static int journal_at_once(struct flow_host *fh, const struct journal_entry *e,
                           struct host_kind_call *d, struct host_settlement *out)
{
    char err[512] = "";
    struct store *s = fh->cfg.store;
    /* The rows of a call made again after a crash (journal_class_made_again) need not
     * wait for the disk; a refusal's row and audit are on disk before the script
     * hears of it. */
    if (txn_open(fh, !d->refused && journal_class_made_again(e->cls), err, sizeof err) != 0)
        return fail_call(fh, err, out);
    int rc;
    struct host_kind_site site = site_of(fh);
    rc = host_kind_perform(&site, d, out); /* a refusal, sync, or kv in this transaction */
    if (rc != 0)
        snprintf(err, sizeof err, "%s", d->err);
    if (rc != 0 || journal_insert(s, fh->cfg.run_id, e, err, sizeof err) != 0 ||
        journal_mailbox_put(s, fh->cfg.run_id, e->position, out->settlement, out->value, err,
                            sizeof err) != 0 ||
        audit_record(s, fh->cfg.flow_id, fh->cfg.run_id, e->position, e->kind, !d->refused,
                     d->refused ? d->reason : NULL, err, sizeof err) != 0) {
        if (rc != 0 && err[0] == '\0')
            snprintf(err, sizeof err, "out of memory");
        store_rollback(s);
        host_settlement_free(out);
        return fail_record(fh, e, err, out);
    }
    if (txn_commit(fh, e->position, err, sizeof err) != 0) {
        host_settlement_free(out);
        return fail_call(fh, err, out);
    }
    test_hook_boundary(TEST_BOUNDARY_AFTER_JOURNAL_COMMIT, e->position);
    test_hook_boundary(TEST_BOUNDARY_AFTER_OUTCOME_COMMIT, e->position);
    return mark_journaled(fh, e->position);
}

static int owe_audit(struct flow_host *fh, const struct journal_entry *e)
{
    if (fh->audit_count == fh->audit_cap) {
        size_t cap = fh->audit_cap == 0 ? 8 : fh->audit_cap * 2;
        struct owed_audit *grown = realloc(fh->audits, cap * sizeof *grown);
        if (grown == NULL)
            return -1;
        fh->audits = grown;
        fh->audit_cap = cap;
    }
    struct owed_audit *a = &fh->audits[fh->audit_count];
    a->position = e->position;
    a->kind = strdup(e->kind);
    if (a->kind == NULL)
        return -1;
    fh->audit_count++;
    return 0;
}

/* A long-running op's module accepted the call: transaction 2 records that it waits
 * for its completion (store/waits.h), synced, as the module has it now. Lost with the
 * process before this commit, the row has neither outcome nor wait and is what any
 * call of its class is after a crash: resent with its key, or in doubt. */
static int record_wait(struct flow_host *fh, const struct journal_entry *e,
                       const struct host_kind_call *d, struct host_settlement *out)
{
    char err[512] = "";
    struct store *s = fh->cfg.store;
    test_hook_boundary(TEST_BOUNDARY_AFTER_DISPATCH, e->position);
    int64_t deadline_at = store_now_ms() + (int64_t)d->completion_timeout_s * 1000;
    if (txn_open(fh, false, err, sizeof err) != 0)
        return fail_call(fh, err, out);
    const char *event = d->completion_event;
    if (waits_insert(s, fh->cfg.run_id, e->position, e->key, deadline_at,
                     event != NULL ? d->module->name : NULL, event, err, sizeof err) != 0) {
        store_rollback(s);
        return fail_call(fh, err, out);
    }
    if (store_end_txn(s, 0, err, sizeof err) != 0)
        return fail_call(fh, err, out);
    committed(fh);
    test_hook_boundary(TEST_BOUNDARY_AFTER_OUTCOME_COMMIT, e->position);
    return HOST_CALL_LONG_RUNNING;
}

/* Transaction 1 (row, unless resending), the call, transaction 2 (outcome, audit).
 * A query that was allowed and is delivered now has no transaction 2: its outcome is
 * written with its delivery order (flush), its audit row (audit_after) owed until
 * then. Lost with the process, the row has no outcome and is resent on resume, as a
 * query is (docs/flows.md, "Durability"). */
static int journal_around(struct flow_host *fh, const struct journal_entry *e,
                          struct host_kind_call *d, bool resend, struct host_settlement *out)
{
    char err[512] = "";
    struct store *s = fh->cfg.store;
    /* A row whose effect still decides (fs's path rules) is audited after it. */
    bool audit_after = d->kind != NULL && d->kind->audit_after;
    bool made_again = journal_class_made_again(e->cls); /* a query: see journal_at_once */
    if (!resend) {
        if (txn_open(fh, made_again, err, sizeof err) != 0)
            return fail_call(fh, err, out);
        if (journal_insert(s, fh->cfg.run_id, e, err, sizeof err) != 0 ||
            (!audit_after && audit_record(s, fh->cfg.flow_id, fh->cfg.run_id, e->position,
                                          e->kind, true, NULL, err, sizeof err) != 0)) {
            store_rollback(s);
            return fail_record(fh, e, err, out);
        }
        if (txn_commit(fh, e->position, err, sizeof err) != 0)
            return fail_call(fh, err, out);
        if (mark_journaled(fh, e->position) != 0)
            return -1;
    }
    test_hook_boundary(TEST_BOUNDARY_AFTER_JOURNAL_COMMIT, e->position);
    int performed = perform(fh, d, e, resend, out);
    if (performed == HOST_CALL_LONG_RUNNING)
        return record_wait(fh, e, d, out);
    if (performed != 0)
        return -1;
    test_hook_boundary(TEST_BOUNDARY_AFTER_DISPATCH, e->position);
    char code[64];
    host_settlement_code(out, code, sizeof code);
    bool refused = strcmp(code, HOST_CODE_DENIED) == 0;
    if (made_again && !resend && !refused && !fh->cut_by_deadline) {
        if (audit_after && owe_audit(fh, e) != 0) {
            host_settlement_free(out);
            return fail_call(fh, "out of memory", out);
        }
        return 0;
    }
    if (txn_open(fh, made_again && !refused, err, sizeof err) != 0) {
        host_settlement_free(out);
        return fail_call(fh, err, out);
    }
    if (journal_mailbox_put(s, fh->cfg.run_id, e->position, out->settlement, out->value, err,
                            sizeof err) != 0 ||
        ((audit_after || resend) &&
         audit_record(s, fh->cfg.flow_id, fh->cfg.run_id, e->position, e->kind, !refused,
                      refused ? out->value : (resend ? "resent after a crash" : NULL), err,
                      sizeof err) != 0)) {
        /* The outcome is the host's, not the worker's: the run stays for recover. */
        store_rollback(s);
        host_settlement_free(out);
        return fail_call(fh, err, out);
    }
    if (store_end_txn(s, 0, err, sizeof err) != 0) {
        host_settlement_free(out);
        return fail_call(fh, err, out);
    }
    committed(fh);
    test_hook_boundary(TEST_BOUNDARY_AFTER_OUTCOME_COMMIT, e->position);
    return 0;
}

/* ---- the host interface ----------------------------------------------------------- */

static int fill_entry(const struct flow_host *fh, const struct host_call *call,
                      enum journal_class cls, const char *destination, struct journal_entry *e)
{
    memset(e, 0, sizeof *e);
    e->position = call->position;
    e->kind = strdup(call->kind);
    e->args = malloc(call->args_len + 1);
    e->args_len = call->args_len;
    e->cls = cls;
    e->delivery_order = -1;
    e->destination = destination != NULL && destination[0] != '\0' ? strdup(destination) : NULL;
    if (e->kind == NULL || e->args == NULL ||
        (destination != NULL && destination[0] != '\0' && e->destination == NULL)) {
        journal_entry_free(e);
        return -1;
    }
    memcpy(e->args, call->args, call->args_len);
    e->args[call->args_len] = '\0';
    if (journal_digest(call->args, call->args_len, e->digest) != 0 ||
        journal_idempotency_key(fh->cfg.flow_id, fh->cfg.run_id, fh->cfg.trigger_id,
                                call->position, e->key) != 0)
        return -1;
    return 0;
}

/* A position the journal already holds without a delivery: compare, then answer from
 * the mailbox or perform again by class. */
static int call_again(struct flow_host *fh, struct open_row *o, const struct host_call *call,
                      const json_t *args, struct host_settlement *out)
{
    o->called = true;
    const struct journal_entry *j = &o->entry;
    char digest[JOURNAL_DIGEST_HEX + 1];
    if (strcmp(j->kind, call->kind) != 0) {
        stop(fh, FLOW_HOST_NONDETERMINISM,
             "position %u: the script called %.80s where the journal records %.80s",
             (unsigned)call->position, call->kind, j->kind);
        return host_reject(out, HOST_CODE_NONDETERMINISM, "%s", fh->stopped);
    }
    if (journal_digest(call->args, call->args_len, digest) != 0)
        return -1;
    if (strcmp(digest, j->digest) != 0) {
        stop(fh, FLOW_HOST_NONDETERMINISM,
             "position %u: %.80s called with arguments whose SHA-256 differs from the journal's",
             (unsigned)call->position, call->kind);
        return host_reject(out, HOST_CODE_NONDETERMINISM, "%s", fh->stopped);
    }
    if (j->has_outcome) { /* in the mailbox: never performed twice */
        out->settlement = j->settlement;
        out->value = strdup(j->value != NULL ? j->value : "null");
        return out->value != NULL ? 0 : -1;
    }
    if (j->waiting) /* its module has it and completes it later: never sent again */
        return HOST_CALL_LONG_RUNNING;
    struct host_kind_call d;
    decide(fh, call, args, &d);
    /* A row whose effect decides with its grant (fs: the path as it resolves now) is
     * resent even when the decision now refuses it: the refusal is its outcome. */
    bool refusal_is_outcome = d.refused && d.kind != NULL && d.kind->audit_after;
    int rc;
    if ((d.refused && !refusal_is_outcome) || j->cls == JOURNAL_SYNC || j->cls == JOURNAL_LOCAL ||
        j->cls == JOURNAL_MUTATION || j->state == JOURNAL_UNKNOWN) {
        /* Refusals, sync and local calls commit their row and outcome together, so they
         * are never without an outcome (a sync call lost before its commit is simply
         * asked again as a new call, a kv change re-applied); an unkeyed mutation in
         * doubt is the driver's to stop before any worker runs. */
        stop(fh, FLOW_HOST_BROKEN, "position %u (%s) is in doubt and cannot be performed again",
             (unsigned)call->position, call->kind);
        rc = host_reject(out, HOST_CODE_IO_ERROR, "%s", fh->stopped);
    } else {
        rc = journal_around(fh, j, &d, true, out);
    }
    host_kind_call_free(&d);
    return rc;
}

/* What changed in row's decision (into why), or false if nothing did. */
static bool row_changed(const struct flow_host_config *cfg, const struct journal_entry *row,
                        char *why, size_t cap)
{
    json_t *args = json_js_loadb(row->args, row->args_len, 0, NULL);
    if (!json_is_array(args)) {
        json_decref(args);
        args = NULL;
    }
    struct net_fetch_session *net = NULL; /* decide only: no request leaves */
    struct host_kind_site site = {cfg->manifest, cfg->catalog, cfg->home, cfg->store,
                                  cfg->flow_id, cfg->run_id, 0, &net};
    struct host_kind_call c;
    memset(&c, 0, sizeof c);
    c.name = row->kind;
    c.args = args;
    c.args_text = row->args;
    c.args_len = row->args_len;
    c.position = row->position;
    host_kind_decide(&site, &c);
    char destination[JOURNAL_DESTINATION_MAX];
    host_kind_destination(&c, destination, sizeof destination);
    const char *was = row->destination != NULL ? row->destination : "";
    /* fs's refusal on a resend is its outcome (the path changed): not a change here. */
    bool refusal_is_outcome = c.refused && c.kind != NULL && c.kind->audit_after;
    bool changed = true;
    if (c.refused && !refusal_is_outcome)
        snprintf(why, cap, "it is now refused (%s: %.200s)", c.code, c.reason);
    else if (!c.refused && c.cls != row->cls)
        snprintf(why, cap, "it would now be a %s, journaled as a %s (the catalog changed)",
                 journal_class_name(c.cls), journal_class_name(row->cls));
    else if (!c.refused && strcmp(destination, was) != 0)
        snprintf(why, cap, "it would now go to the %s, journaled for the %s (the catalog"
                 " changed)", destination[0] != '\0' ? destination : "call's arguments",
                 was[0] != '\0' ? was : "call's arguments");
    else
        changed = false;
    host_kind_call_free(&c);
    json_decref(args);
    return changed;
}

const struct journal_entry *flow_host_changed_since(const struct flow_host_config *cfg,
                                                    const struct journal_entry *rows,
                                                    size_t count, char *why, size_t cap)
{
    for (size_t i = 0; i < count; i++) {
        const struct journal_entry *e = &rows[i];
        if (e->state != JOURNAL_PENDING || e->has_outcome || e->waiting ||
            (e->cls != JOURNAL_QUERY && e->cls != JOURNAL_KEYED_MUTATION))
            continue;
        if (row_changed(cfg, e, why, cap))
            return e;
    }
    return NULL;
}

static int flow_host_call(void *self, const struct host_call *call, struct host_settlement *out,
                          long long *delay_ms)
{
    struct flow_host *fh = self;
    *delay_ms = 0;
    fh->cut_by_deadline = false;
    if (fh->stop_kind != FLOW_HOST_RUNNING)
        return host_reject(out, stopped_code(fh), "%s", fh->stopped);
    /* Arguments that are not a JSON array are a refusal like any other: journaled,
     * counted against the run's limits and audited (decide() with NULL args). */
    json_t *args = json_js_loadb(call->args, call->args_len, 0, NULL); /* 1e19 too */
    if (!json_is_array(args)) {
        json_decref(args);
        args = NULL;
    }
    int rc;
    char why[STOP_MAX];
    struct open_row *o = find_open(fh, call->position);
    if (o != NULL) {
        rc = call_again(fh, o, call, args, out);
    } else if (!flow_run_usage_admit(&fh->usage, call->args_len, call, why, sizeof why)) {
        stop(fh, FLOW_HOST_LIMIT, "%s", why);
        rc = host_reject(out, HOST_CODE_TOO_LARGE, "%s", fh->stopped);
    } else {
        struct host_kind_call d;
        decide(fh, call, args, &d);
        struct journal_entry e;
        char destination[JOURNAL_DESTINATION_MAX];
        host_kind_destination(&d, destination, sizeof destination);
        if (fill_entry(fh, call, d.cls, destination, &e) != 0)
            rc = -1;
        else if (d.refused || d.cls == JOURNAL_SYNC || d.cls == JOURNAL_LOCAL)
            rc = journal_at_once(fh, &e, &d, out);
        else
            rc = journal_around(fh, &e, &d, false, out);
        journal_entry_free(&e);
        host_kind_call_free(&d);
        if (rc == 0 && out->value != NULL)
            fh->usage.journal_bytes += strlen(out->value);
    }
    json_decref(args);
    if (rc == 0 && fh->cut_by_deadline) /* due a day after the deadline: never released */
        *delay_ms = fh->cfg.deadline_at_ms - monotonic_ms() + HOLD_PAST_DEADLINE_MS;
    return rc;
}

static void flow_host_delivered(void *self, const struct host_call *call,
                                const struct host_settlement *seen, uint32_t delivery_order)
{
    struct flow_host *fh = self;
    /* After a stop nothing more is written: in particular not the rejection the
     * driver delivers for a diverging call, over the row the journal holds there. */
    if (fh->stop_kind != FLOW_HOST_RUNNING)
        return;
    if (fh->delivery_count == fh->delivery_cap) {
        size_t cap = fh->delivery_cap == 0 ? 16 : fh->delivery_cap * 2;
        struct delivery *grown = realloc(fh->deliveries, cap * sizeof *grown);
        if (grown == NULL) {
            stop(fh, FLOW_HOST_BROKEN, "out of memory recording a delivery");
            return;
        }
        fh->deliveries = grown;
        fh->delivery_cap = cap;
    }
    struct delivery *d = &fh->deliveries[fh->delivery_count];
    memset(d, 0, sizeof *d);
    d->position = call->position;
    d->settlement = seen->settlement;
    d->order = delivery_order;
    d->value = strdup(seen->value);
    bool ok = d->value != NULL;
    if (ok && !is_journaled(fh, call->position)) {
        /* The driver answered without asking (too large, the call limit): journal the
         * call with what the worker saw, so a resume replays it. The row counts against
         * the run's limits like every other, and is audited as refused (flush). */
        char why[STOP_MAX];
        if (!flow_run_usage_admit(&fh->usage, call->args_len + strlen(seen->value), call, why,
                                  sizeof why)) {
            delivery_free(d);
            stop(fh, FLOW_HOST_LIMIT, "%s", why);
            return;
        }
        d->unjournaled = calloc(1, sizeof *d->unjournaled);
        ok = d->unjournaled != NULL &&
             fill_entry(fh, call, host_kind_class(call->kind), NULL, d->unjournaled) == 0 &&
             mark_journaled(fh, call->position) == 0;
    }
    if (!ok) {
        delivery_free(d);
        stop(fh, FLOW_HOST_BROKEN, "out of memory recording a delivery");
        return;
    }
    fh->delivery_count++;
    test_hook_boundary(TEST_BOUNDARY_AFTER_DELIVERY, call->position);
}

bool flow_run_usage_admit(struct flow_run_usage *u, uint64_t bytes, const struct host_call *call,
                          char *why, size_t why_cap)
{
    if (u->calls + 1 > FLOW_RUN_MAX_HOST_CALLS ||
        u->journal_bytes + bytes > FLOW_RUN_MAX_JOURNAL_BYTES) {
        snprintf(why, why_cap, "the run reached its limit of %u host calls or %u bytes of"
                 " journal (at position %u, %.80s)", FLOW_RUN_MAX_HOST_CALLS,
                 FLOW_RUN_MAX_JOURNAL_BYTES, (unsigned)call->position, call->kind);
        return false;
    }
    u->calls++;
    u->journal_bytes += bytes;
    return true;
}

static const struct host_ops FLOW_HOST_OPS = {
    .call = flow_host_call,
    .delivered = flow_host_delivered,
    .is_sync = host_kinds_is_sync_op,
};

struct host flow_host_interface(struct flow_host *fh)
{
    struct host h = {&FLOW_HOST_OPS, fh};
    return h;
}
