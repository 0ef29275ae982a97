#include "flows/flow_host.h"

#include "base/clock.h"
#include "store/audit.h"
#include "store/call_processes.h"
#include "base/error_line.h"
#include "base/json_js.h"
#include "store/kv_store.h"
#include "store/runs.h"
#include "store/store.h"
#include "base/test_hooks.h"
#include "host/fs_builtin.h"
#include "host/git_builtin.h"
#include "host/net_fetch.h"
#include "host/sink.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

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

struct flow_host {
    struct flow_host_config cfg;
    struct open_row *open;
    size_t open_count;
    uint8_t *journaled; /* by position: a row exists */
    size_t journaled_cap;
    struct delivery *deliveries;
    size_t delivery_count, delivery_cap;
    size_t flushed; /* deliveries written by the open transaction, kept until it commits */
    char stopped[STOP_MAX];
    enum flow_host_stop stop_kind;
    struct flow_run_usage usage; /* journal rows of the run, their bytes */
    /* The call just performed was a module cut short by the activation's deadline: its
     * timeout is the deadline's, so the driver holds it past the deadline (the
     * activation then ends as "deadline") instead of handing it to the script. */
    bool cut_by_deadline;
    const char *const *read_roots;
    const char *const *write_roots;
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
    if (to->kind == NULL || to->args == NULL || (from->value != NULL && to->value == NULL)) {
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
    fh->read_roots = (const char *const *)cfg->manifest->fs_read.items;
    fh->write_roots = (const char *const *)cfg->manifest->fs_write.items;
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

/* ---- classes and grants ----------------------------------------------------------- */

static bool is_kind(const char *kind, const char *name)
{
    return strcmp(kind, name) == 0;
}

/* The class a kind has before its arguments are looked at. */
static enum journal_class base_class(const char *kind)
{
    if (is_kind(kind, "now") || is_kind(kind, "random"))
        return JOURNAL_SYNC;
    if (kv_store_handles(kind))
        return JOURNAL_LOCAL;
    if (is_kind(kind, "fs.write") || is_kind(kind, "sink.emit"))
        return JOURNAL_KEYED_MUTATION;
    return JOURNAL_QUERY;
}

/* What a new call is, after the grant check. */
struct decision {
    enum journal_class cls;
    bool refused;           /* denied or unsupported: answered without performing */
    char code[32];
    char reason[512];
    const struct ops_module *module; /* ops.call */
    const char *op;
};

static const char *string_at(const json_t *args, size_t i)
{
    const json_t *v = json_array_get(args, i);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

__attribute__((format(printf, 3, 4))) static void refuse(struct decision *d, const char *code,
                                                         const char *fmt, ...)
{
    d->refused = true;
    snprintf(d->code, sizeof d->code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->reason, sizeof d->reason, fmt, ap);
    va_end(ap);
}

static void decide_ops(const struct flow_host *fh, const json_t *args, struct decision *d)
{
    const char *module = string_at(args, 0), *op = string_at(args, 1);
    if (module == NULL || op == NULL) {
        refuse(d, HOST_CODE_INVALID_ARGUMENTS, "ops.call(module, op, args): module and op must"
               " be strings");
        return;
    }
    const struct manifest *m = fh->cfg.manifest;
    bool granted = false;
    for (size_t i = 0; i < m->op_count && !granted; i++)
        granted = strcmp(m->ops[i].module, module) == 0 && strcmp(m->ops[i].op, op) == 0;
    if (!granted) {
        refuse(d, HOST_CODE_DENIED, "ops.call %.80s.%.80s is not granted by the manifest",
               module, op);
        return;
    }
    const struct ops_op *entry = ops_catalog_find(fh->cfg.catalog, module, op, &d->module);
    if (entry == NULL) {
        refuse(d, HOST_CODE_DENIED, "ops.call %.80s.%.80s: the operator's catalog (%s) has no"
               " such op", module, op, OPS_CATALOG_FILE);
        return;
    }
    d->op = entry->name;
    d->cls = !entry->mutate ? JOURNAL_QUERY
             : entry->idempotent ? JOURNAL_KEYED_MUTATION : JOURNAL_MUTATION;
}

static void decide_sink(const struct flow_host *fh, const json_t *args, struct decision *d)
{
    const char *name = string_at(args, 0);
    if (name == NULL || json_array_size(args) != 2) {
        refuse(d, HOST_CODE_INVALID_ARGUMENTS, "sink.emit(name, item): name must be a string"
               " and item a JSON value");
        return;
    }
    const struct manifest_strings *sinks = &fh->cfg.manifest->sinks;
    for (size_t i = 0; i < sinks->count; i++)
        if (strcmp(sinks->items[i], name) == 0)
            return;
    refuse(d, HOST_CODE_DENIED, "sink '%.80s' is not granted by the manifest", name);
}

/* The manifest's net.fetch grants, as host/net_fetch.h takes them (into items, which
 * has room for MANIFEST_MAX_LIST). */
_Static_assert((unsigned)NET_METHOD_GET == (unsigned)MANIFEST_METHOD_GET &&
                   (unsigned)NET_METHOD_HEAD == (unsigned)MANIFEST_METHOD_HEAD &&
                   (unsigned)NET_METHOD_POST == (unsigned)MANIFEST_METHOD_POST &&
                   (unsigned)NET_METHOD_PUT == (unsigned)MANIFEST_METHOD_PUT &&
                   (unsigned)NET_METHOD_PATCH == (unsigned)MANIFEST_METHOD_PATCH &&
                   (unsigned)NET_METHOD_DELETE == (unsigned)MANIFEST_METHOD_DELETE,
               "net.fetch method bits differ from the manifest's");
struct net_grants flow_host_net_grants(const struct manifest *m, struct net_grant *items)
{
    size_t n = m->fetch_count;
    if (n > MANIFEST_MAX_LIST) /* the parser allows no more */
        n = MANIFEST_MAX_LIST;
    for (size_t i = 0; i < n; i++)
        items[i] = (struct net_grant){m->fetch[i].host, m->fetch[i].methods, m->fetch[i].idempotent};
    struct net_grants g = {items, n};
    return g;
}

struct git_grants flow_host_git_grants(const struct manifest *m)
{
    struct git_grants g = {(const char *const *)m->git_read.items, m->git_read.count};
    return g;
}

static void decide_net(const struct flow_host *fh, const json_t *args, struct decision *d)
{
    struct net_grant items[MANIFEST_MAX_LIST];
    struct net_grants grants = flow_host_net_grants(fh->cfg.manifest, items);
    enum net_fetch_class cls;
    if (net_fetch_decide(&grants, args, &cls, d->code, sizeof d->code, d->reason,
                         sizeof d->reason) != 0) {
        d->refused = true;
        return;
    }
    d->cls = cls == NET_FETCH_QUERY ? JOURNAL_QUERY
             : cls == NET_FETCH_KEYED ? JOURNAL_KEYED_MUTATION : JOURNAL_MUTATION;
}

/* args NULL: the arguments are not a JSON array, refused before any grant check. */
static void decide(const struct flow_host *fh, const char *kind, const json_t *args,
                   struct decision *d)
{
    memset(d, 0, sizeof *d);
    d->cls = base_class(kind);
    if (args == NULL) {
        refuse(d, HOST_CODE_INVALID_ARGUMENTS, "%.80s: arguments are not a JSON array", kind);
        return;
    }
    const struct manifest *m = fh->cfg.manifest;
    if (d->cls == JOURNAL_SYNC || d->cls == JOURNAL_LOCAL)
        return;
    if (fs_builtin_handles(kind)) {
        if (m->fs_read.count + m->fs_write.count == 0)
            refuse(d, HOST_CODE_DENIED, "%s: the manifest grants no fs roots", kind);
        return;
    }
    if (is_kind(kind, "ops.call")) {
        decide_ops(fh, args, d);
        return;
    }
    if (is_kind(kind, "sink.emit")) {
        decide_sink(fh, args, d);
        return;
    }
    if (is_kind(kind, "net.fetch")) {
        decide_net(fh, args, d);
        return;
    }
    if (git_builtin_handles(kind)) {
        struct git_grants grants = flow_host_git_grants(m);
        d->refused = git_builtin_check(&grants, kind, args, d->code, sizeof d->code, d->reason,
                                       sizeof d->reason) != 0;
        return;
    }
    refuse(d, HOST_CODE_UNSUPPORTED, "%.80s is not available in this build of basal", kind);
}

/* ---- transactions ----------------------------------------------------------------- */

/* Writes the delivery orders not yet written, in the open transaction. They are
 * dropped from memory only once it commits (committed()): a rollback keeps them. */
static int flush(struct flow_host *fh, char *err, size_t err_cap)
{
    struct store *s = fh->cfg.store;
    fh->flushed = 0;
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

/* BEGIN IMMEDIATE, the fence and the pending delivery orders. */
static int txn_open(struct flow_host *fh, char *err, size_t err_cap)
{
    struct store *s = fh->cfg.store;
    if (store_begin_txn(s, err, err_cap) != 0)
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

static int do_sync(const char *kind, struct host_settlement *out)
{
    if (is_kind(kind, "now")) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        char text[32];
        snprintf(text, sizeof text, "%lld", (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
        return host_fulfil_text(out, text);
    }
    uint64_t bits;
    if (getrandom(&bits, sizeof bits, 0) != (ssize_t)sizeof bits)
        return host_reject(out, HOST_CODE_IO_ERROR, "random: getrandom failed");
    char text[40];
    /* 53 random bits as a double in [0, 1), printed exactly. */
    snprintf(text, sizeof text, "%.17g", (double)(bits >> 11) * 0x1.0p-53);
    return host_fulfil_text(out, text);
}

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
    if (txn_open(fh, err, err_cap) != 0)
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

/* The code of a rejection's JSON, into code (empty if none). */
static void rejection_code(const struct host_settlement *s, char *code, size_t cap)
{
    code[0] = '\0';
    if (s->settlement != PROTO_SETTLEMENT_REJECTED || s->value == NULL)
        return;
    json_t *v = json_loads(s->value, 0, NULL);
    const char *c = json_string_value(json_object_get(v, "code"));
    snprintf(code, cap, "%s", c != NULL ? c : "");
    json_decref(v);
}

static int do_ops(struct flow_host *fh, const struct decision *d, const json_t *args,
                  uint32_t position, const char *key, struct host_settlement *out)
{
    if (d->module == NULL) /* decide() sets it for every granted ops.call */
        return host_reject(out, HOST_CODE_DENIED, "ops.call: no module was decided");
    /* The module gets the catalog's time, cut to what is left of the activation's. */
    struct ops_module module = *d->module;
    if (fh->cfg.deadline_at_ms > 0) {
        long long left = fh->cfg.deadline_at_ms - monotonic_ms();
        if (left <= 0)
            return host_reject(out, HOST_CODE_TIMEOUT, "ops.call %s.%s: the activation's wall"
                               " deadline has passed", module.name, d->op);
        if (left < (long long)module.timeout_ms)
            module.timeout_ms = (uint32_t)left;
    }
    bool cut = module.timeout_ms < d->module->timeout_ms;
    const json_t *inner = json_array_get(args, 2);
    char *text = inner != NULL ? json_dumps(inner, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("null");
    if (text == NULL)
        return -1;
    struct module_start ms = {fh, position, {0, 0}, false};
    struct ops_process_hook hook = {record_module_process, &ms};
    int rc = ops_module_invoke(&module, d->op, text, key, &hook, out);
    free(text);
    if (rc == 0 && cut) {
        char code[64];
        rejection_code(out, code, sizeof code);
        fh->cut_by_deadline = strcmp(code, HOST_CODE_TIMEOUT) == 0;
    }
    if (ms.recorded) { /* reaped: nothing of it runs any more (a failure leaves a stale row) */
        char err[256];
        (void)call_process_forget(fh->cfg.store, fh->cfg.run_id, position, &ms.process, err,
                                  sizeof err);
    }
    return rc;
}

static int do_sink(const struct flow_host *fh, const json_t *args, uint32_t position,
                   const char *key, bool resend, struct host_settlement *out)
{
    const char *name = string_at(args, 0);
    if (resend) {
        int found = sink_contains_key(fh->cfg.home, name, key);
        if (found < 0)
            return host_reject(out, HOST_CODE_IO_ERROR, "sink '%s': cannot read it back", name);
        if (found > 0) /* the line was written before the crash */
            return host_fulfil_text(out, "{\"bytes\":0,\"already_written\":true}");
    }
    char *item = json_dumps(json_array_get(args, 1), JSON_COMPACT | JSON_ENCODE_ANY);
    if (item == NULL)
        return -1;
    struct sink_record rec = {fh->cfg.flow_id, fh->cfg.run_id, position, key, item};
    int rc = sink_append(fh->cfg.home, name, &rec, out);
    free(item);
    return rc;
}

static int do_net(struct flow_host *fh, const json_t *args, const char *key,
                  struct host_settlement *out)
{
    if (fh->net == NULL && (fh->net = net_fetch_session_new()) == NULL)
        return host_reject(out, HOST_CODE_IO_ERROR, "net.fetch: libcurl could not be set up");
    struct net_grant items[MANIFEST_MAX_LIST];
    struct net_grants grants = flow_host_net_grants(fh->cfg.manifest, items);
    return net_fetch_call(fh->net, &grants, args, key, fh->cfg.deadline_at_ms, out);
}

/* Performs a granted call that leaves the journal's transaction (fs, ops, sink, net,
 * git). */
static int perform(struct flow_host *fh, const char *kind, const struct decision *d,
                   const json_t *args, uint32_t position, const char *key, bool resend,
                   struct host_settlement *out)
{
    if (fs_builtin_handles(kind)) {
        struct fs_grants grants = {fh->read_roots, fh->cfg.manifest->fs_read.count,
                                   fh->write_roots, fh->cfg.manifest->fs_write.count,
                                   fh->cfg.home, key};
        return fs_builtin_call(&grants, kind, args, out);
    }
    if (is_kind(kind, "ops.call"))
        return do_ops(fh, d, args, position, key, out);
    if (is_kind(kind, "net.fetch"))
        return do_net(fh, args, key, out);
    if (git_builtin_handles(kind)) {
        struct git_grants grants = flow_host_git_grants(fh->cfg.manifest);
        return git_builtin_call(&grants, kind, args, fh->cfg.deadline_at_ms, out);
    }
    return do_sink(fh, args, position, key, resend, out);
}

/* One transaction: row, (kv change), outcome, audit. For sync, local and refusals. */
static int journal_at_once(struct flow_host *fh, const struct journal_entry *e,
                           const struct decision *d, const json_t *args,
                           struct host_settlement *out)
{
    char err[512] = "";
    struct store *s = fh->cfg.store;
    if (txn_open(fh, err, sizeof err) != 0)
        return fail_call(fh, err, out);
    int rc;
    if (d->refused)
        rc = host_reject(out, d->code, "%s", d->reason);
    else if (d->cls == JOURNAL_SYNC)
        rc = do_sync(e->kind, out);
    else
        rc = kv_store_call(s, fh->cfg.flow_id, e->kind, args, e->args, e->args_len, out, err,
                           sizeof err);
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

/* Transaction 1 (row, unless resending), the call, transaction 2 (outcome, audit). */
static int journal_around(struct flow_host *fh, const struct journal_entry *e,
                          const struct decision *d, const json_t *args, bool resend,
                          struct host_settlement *out)
{
    char err[512] = "";
    struct store *s = fh->cfg.store;
    /* fs decides inside the operation (the path rules); the others were decided. */
    bool audit_after = fs_builtin_handles(e->kind);
    if (!resend) {
        if (txn_open(fh, err, sizeof err) != 0)
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
    if (perform(fh, e->kind, d, args, e->position, e->key, resend, out) != 0)
        return -1;
    test_hook_boundary(TEST_BOUNDARY_AFTER_DISPATCH, e->position);
    char code[64];
    rejection_code(out, code, sizeof code);
    bool refused = strcmp(code, HOST_CODE_DENIED) == 0;
    if (txn_open(fh, err, sizeof err) != 0) {
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
                      enum journal_class cls, struct journal_entry *e)
{
    memset(e, 0, sizeof *e);
    e->position = call->position;
    e->kind = strdup(call->kind);
    e->args = malloc(call->args_len + 1);
    e->args_len = call->args_len;
    e->cls = cls;
    e->delivery_order = -1;
    if (e->kind == NULL || e->args == NULL) {
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
    struct decision d;
    decide(fh, call->kind, args, &d);
    if (d.refused || j->cls == JOURNAL_SYNC || j->cls == JOURNAL_LOCAL ||
        j->cls == JOURNAL_MUTATION || j->state == JOURNAL_UNKNOWN) {
        /* Refusals, sync and local calls commit their row and outcome together, so they
         * are never without an outcome (a sync call lost before its commit is simply
         * asked again as a new call, a kv change re-applied); an unkeyed mutation in
         * doubt is the driver's to stop before any worker runs. */
        stop(fh, FLOW_HOST_BROKEN, "position %u (%s) is in doubt and cannot be performed again",
             (unsigned)call->position, call->kind);
        return host_reject(out, HOST_CODE_IO_ERROR, "%s", fh->stopped);
    }
    return journal_around(fh, j, &d, args, true, out);
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
        struct decision d;
        decide(fh, call->kind, args, &d);
        struct journal_entry e;
        if (fill_entry(fh, call, d.cls, &e) != 0)
            rc = -1;
        else if (d.refused || d.cls == JOURNAL_SYNC || d.cls == JOURNAL_LOCAL)
            rc = journal_at_once(fh, &e, &d, args, out);
        else
            rc = journal_around(fh, &e, &d, args, false, out);
        journal_entry_free(&e);
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
             fill_entry(fh, call, base_class(call->kind), d->unjournaled) == 0 &&
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
};

struct host flow_host_interface(struct flow_host *fh)
{
    struct host h = {&FLOW_HOST_OPS, fh};
    return h;
}

void flow_host_grant(const struct manifest *manifest, const struct ops_catalog *catalog,
                     const char *kind, const void *args, struct flow_grant *out)
{
    /* decide() reads only the manifest and the catalog of its host. */
    struct flow_host fh;
    memset(&fh, 0, sizeof fh);
    fh.cfg.manifest = manifest;
    fh.cfg.catalog = catalog;
    struct decision d;
    decide(&fh, kind, (const json_t *)args, &d);
    memset(out, 0, sizeof *out);
    out->cls = d.cls;
    out->refused = d.refused;
    snprintf(out->code, sizeof out->code, "%s", d.code);
    snprintf(out->reason, sizeof out->reason, "%s", d.reason);
    out->module = d.module;
    out->op = d.op;
}
