#include "flows/run_driver.h"

#include "base/error_line.h"
#include "flows/catalog_cache.h"
#include "flows/flow_host.h"
#include "flows/flows.h"
#include "flows/run_cleanup.h"
#include "flows/version_cache.h"
#include "store/call_processes.h"
#include "store/journal.h"
#include "store/store.h"
#include "host/ops_module.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void run_report_free(struct run_report *r)
{
    if (r == NULL)
        return;
    free(r->result);
    free(r->error);
    free(r->console);
    r->result = r->error = r->console = NULL;
}

/* What the run needs besides its row: the approved bytes and the parsed manifest (a
 * held entry of the version cache), and the operator's catalog (held). */
struct run_inputs {
    struct version_entry *entry;
    struct manifest resolved;        /* a manifest naming directories, parsed for this run */
    const struct manifest *manifest; /* the entry's, or resolved */
    struct catalog_hold catalog;
};

/* One of each cache per process, shared by every driver (a serve's runners and its
 * admissions): the versions are keyed by code hash, so they hold the same bytes in
 * whatever store a driver reads; the catalog by its file's path and identity. */
#define VERSION_CACHE_ENTRIES 64
#define VERSION_CACHE_BYTES (16u << 20) /* a bound on what 64 scripts of 1 MiB would hold */
static struct version_cache *shared_versions;
static struct catalog_cache *shared_catalog;
static pthread_once_t shared_once = PTHREAD_ONCE_INIT;

static void shared_make(void)
{
    shared_versions = version_cache_new(VERSION_CACHE_ENTRIES, VERSION_CACHE_BYTES);
    shared_catalog = catalog_cache_new(CATALOG_SETTLED_MS);
}

static struct version_cache *versions(void)
{
    (void)pthread_once(&shared_once, shared_make);
    return shared_versions;
}

static struct catalog_cache *catalogs(void)
{
    (void)pthread_once(&shared_once, shared_make);
    return shared_catalog;
}

static void inputs_free(struct run_inputs *in)
{
    if (in->entry != NULL)
        version_cache_release(versions(), in->entry);
    manifest_free(&in->resolved);
    if (in->catalog.held != NULL)
        catalog_cache_release(catalogs(), &in->catalog);
    memset(in, 0, sizeof *in);
}

/* A manifest's fs and git roots are real paths resolved when it is parsed, and must
 * exist then: the operator may move or remove one under a running serve. */
static bool names_directories(const struct manifest *m)
{
    return m->fs_read.count + m->fs_write.count + m->git_read.count > 0;
}

/* The cache's miss: the bytes read and verified against the approval now
 * (flows_runnable_version), parsed, and put under the hash they were verified
 * against. */
static int load_verified(struct run_driver *d, struct version_cache *cache, const char *flow,
                         int64_t *version, struct run_inputs *in, char *err, size_t err_cap)
{
    struct flow_blob script, manifest_bytes;
    char verified[CODE_HASH_HEX_LEN + 1];
    int64_t v = 0;
    if (flows_runnable_version(d->store, flow, *version, &v, &script, &manifest_bytes, verified,
                               err, err_cap) != 0)
        return -1;
    struct manifest parsed;
    char why[400];
    if (manifest_parse(manifest_bytes.bytes, manifest_bytes.len, &parsed, why, sizeof why) != 0) {
        flows_blob_free(&script);
        flows_blob_free(&manifest_bytes);
        error_line(err, err_cap, "flow '%s' version %" PRId64 ": %s", flow, v, why);
        return -1;
    }
    *version = v;
    in->entry = version_cache_put(cache, flow, v, verified, &script, &manifest_bytes, &parsed);
    if (in->entry == NULL) {
        error_line(err, err_cap, "out of memory");
        return -1;
    }
    return 0;
}

static int inputs_load(struct run_driver *d, const char *flow, int64_t want,
                       int64_t *version, struct run_inputs *in, char *err, size_t err_cap)
{
    memset(in, 0, sizeof *in);
    struct version_cache *cache = versions();
    if (cache == NULL || catalogs() == NULL) {
        error_line(err, err_cap, "out of memory");
        return -1;
    }
    /* Asked every time, cached or not: enabled, and the approval's version and hash. */
    char approved[CODE_HASH_HEX_LEN + 1];
    if (flows_run_approval(d->store, flow, want, version, approved, err, err_cap) != 0)
        return -1;
    in->entry = version_cache_get(cache, flow, *version, approved);
    bool hit = in->entry != NULL;
    if (!hit && load_verified(d, cache, flow, version, in, err, err_cap) != 0)
        return -1;
    in->manifest = &in->entry->manifest;
    if (hit && names_directories(in->manifest)) {
        char why[400];
        if (manifest_parse(in->entry->manifest_bytes.bytes, in->entry->manifest_bytes.len,
                           &in->resolved, why, sizeof why) != 0) {
            error_line(err, err_cap, "flow '%s' version %" PRId64 ": %s", flow, *version, why);
            inputs_free(in);
            return -1;
        }
        in->manifest = &in->resolved;
    }
    if (catalog_cache_get(catalogs(), d->home, &in->catalog, err, err_cap) != 0) {
        inputs_free(in);
        return -1;
    }
    return 0;
}

/* A journaled mutation without a key and without an outcome, or one already marked
 * unknown: the first such row, or NULL. */
static const struct journal_entry *in_doubt(const struct journal_entry *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct journal_entry *e = &rows[i];
        /* A waiting call's module has it (store/waits.h): not in doubt. */
        if (e->state == JOURNAL_UNKNOWN ||
            (e->state == JOURNAL_PENDING && !e->has_outcome && !e->waiting &&
             e->cls == JOURNAL_MUTATION))
            return e;
    }
    return NULL;
}

static int set_error(struct run_report *rep, const char *text)
{
    free(rep->error);
    rep->error = strdup(text);
    return rep->error != NULL ? 0 : -1;
}

/* Ends the activation without a worker: state and error, optionally marking a
 * position unknown first, in one fenced transaction. */
static int end_without_worker(struct run_driver *d, const struct run_row *run,
                              int64_t generation, int64_t seq, enum run_state state,
                              const char *why, const struct journal_entry *unknown,
                              struct run_report *rep, char *err, size_t err_cap)
{
    struct store *s = d->store;
    if (store_begin_txn(s, err, err_cap) != 0)
        return -1;
    int rc = unknown != NULL ? journal_mark_unknown(s, run->id, unknown->position, err, err_cap) : 0;
    if (rc == 0)
        rc = runs_set_state(s, run->id, generation, state, NULL, why, err, err_cap);
    if (rc == 0)
        rc = runs_end_activation(s, run->id, seq, run_state_name(state), 0, err, err_cap);
    if (store_end_txn(s, rc, err, err_cap) != 0)
        return -1;
    rep->state = state;
    return set_error(rep, why) == 0 ? 0 : error_line(err, err_cap, "out of memory");
}

/* what: why the call at e is in doubt (NULL: an unkeyed mutation's). */
static int to_reconcile(struct run_driver *d, const struct run_row *run, int64_t generation,
                        int64_t seq, const struct journal_entry *e, const char *what,
                        struct run_report *rep, char *err, size_t err_cap)
{
    char why[1024];
    snprintf(why, sizeof why, "position %u (%s, %.400s) may or may not have taken effect:"
             " ck-basal flow reconcile %" PRId64 " %u --observed JSON | --not-applied |"
             " --cancel", (unsigned)e->position, e->kind,
             what != NULL ? what : "a mutation without an idempotency key", run->id,
             (unsigned)e->position);
    return end_without_worker(d, run, generation, seq, RUN_NEEDS_RECONCILE, why, e, rep, err,
                              err_cap);
}

/* The run's end state from the activation and the host. */
static enum run_state end_state(const struct activation_outcome *out, struct flow_host *fh,
                                char *error, size_t cap)
{
    error[0] = '\0';
    enum flow_host_stop kind;
    const char *stopped = flow_host_stopped(fh, &kind);
    char unreached[300];
    if (stopped != NULL) {
        snprintf(error, cap, "%s: %s",
                 kind == FLOW_HOST_LIMIT        ? "limit"
                 : kind == FLOW_HOST_UNRECORDED ? "protocol error"
                                                : "nondeterminism",
                 stopped);
        return RUN_FAILED;
    }
    bool ended_by_itself = out->status == ACTIVATION_COMPLETED ||
                           (out->status == ACTIVATION_FAILED && out->failure_kind != NULL &&
                            strcmp(out->failure_kind, "script_error") == 0);
    if (ended_by_itself && flow_host_unreached(fh, unreached, sizeof unreached)) {
        snprintf(error, cap, "nondeterminism: %s", unreached);
        return RUN_FAILED;
    }
    if (out->status == ACTIVATION_COMPLETED)
        return RUN_SUCCEEDED;
    if (out->status == ACTIVATION_SUSPENDED)
        return RUN_SUSPENDED;
    if (out->status == ACTIVATION_FAILED && out->failure_kind != NULL &&
        strcmp(out->failure_kind, "nondeterminism") == 0) {
        snprintf(error, cap, "nondeterminism: %s", out->detail != NULL ? out->detail : "");
        return RUN_FAILED;
    }
    activation_describe(out, error, cap);
    return RUN_FAILED;
}

static int finish(struct run_driver *d, const struct run_row *run, int64_t generation,
                  int64_t seq, struct flow_host *fh, const struct activation_outcome *out,
                  struct run_report *rep, char *err, size_t err_cap)
{
    char error[1024];
    enum run_state state = end_state(out, fh, error, sizeof error);
    if (out->status == ACTIVATION_NO_WORKER)
        state = RUN_PENDING; /* nothing ran: recover tries again */
    bool suspending = state == RUN_SUSPENDED;
    /* The pool's counters are copied before the transaction: the pool's lock is held
     * while a worker starts (milliseconds), and no writer of the store may wait on it
     * while holding the store's write lock. Only the scalar counters are read. */
    pool_lock(d->pool);
    struct health counters = *pool_health(d->pool);
    pool_unlock(d->pool);
    /* The per-flow worker counts since the last writer took them: every flow's, not
     * only this run's, so a flow's retirements are stored even if it never runs again. */
    struct health_flow *flow_counts;
    size_t flow_count;
    pool_take_flow_counts(d->pool, &flow_counts, &flow_count);
    struct store *s = d->store;
    if (store_begin_txn(s, err, err_cap) != 0) {
        pool_give_back_flow_counts(d->pool, flow_counts, flow_count);
        return -1;
    }
    int rc = runs_fence(s, run->id, generation, err, err_cap);
    if (rc == 0)
        rc = flow_host_flush(fh, err, err_cap);
    /* A completion that came while the run still ran (store/waits.h) is in the mailbox,
     * undelivered: the run is resumed at once instead of waiting for it. */
    if (rc == 0 && suspending) {
        int undelivered = journal_has_undelivered(s, run->id, err, err_cap);
        rc = undelivered < 0 ? -1 : 0;
        if (undelivered > 0)
            state = RUN_PENDING;
    }
    if (rc == 0)
        rc = runs_set_state(s, run->id, generation, state,
                            state == RUN_SUCCEEDED ? out->value : NULL,
                            error[0] != '\0' ? error : NULL, err, err_cap);
    if (rc == 0)
        rc = runs_end_activation(s, run->id, seq, activation_status_name(out->status),
                                 (long)out->pid, err, err_cap);
    if (rc == 0)
        rc = health_store_add(s, &counters, d->shared_mark != NULL ? d->shared_mark : &d->mark,
                              run->flow_id, out);
    if (rc == 0)
        rc = health_store_add_flows(s, flow_counts, flow_count);
    if (rc != 0 && err[0] == '\0')
        error_line(err, err_cap, "store: %s", store_errmsg(s));
    if (store_end_txn(s, rc, err, err_cap) != 0) {
        pool_give_back_flow_counts(d->pool, flow_counts, flow_count);
        return -1;
    }
    health_flows_free(flow_counts, flow_count);
    rep->state = state;
    if (state == RUN_SUCCEEDED && out->value != NULL) {
        rep->result = strdup(out->value);
        if (rep->result == NULL)
            return error_line(err, err_cap, "out of memory");
    }
    if (error[0] != '\0' && set_error(rep, error) != 0)
        return error_line(err, err_cap, "out of memory");
    return 0;
}

/* What is left of the run's deadline (manifest "deadline", from its admission, not
 * counting the time it spent suspended), ms. */
static long long run_time_left(const struct run_row *run, const struct run_inputs *in)
{
    return (long long)in->manifest->deadline_s * 1000 -
           (store_now_ms() - run->created_at - run->suspended_ms);
}

static void request_for(const struct run_row *run, int64_t seq, const struct run_inputs *in,
                        const struct proto_recorded_entry *prefix, size_t prefix_count,
                        struct activation_request *req)
{
    memset(req, 0, sizeof *req);
    activation_request_defaults(req, PROTO_PROFILE_FLOW);
    req->activation_id = ((uint64_t)run->id << 16) | ((uint64_t)seq & 0xffff);
    req->script = in->entry->script.bytes;
    req->script_len = in->entry->script.len;
    req->trigger = run->trigger;
    req->budgets = in->manifest->limits;
    /* Each activation has the profile's wall deadline, and none outlives the run's. */
    long long left = run_time_left(run, in);
    if (left < req->deadline_ms)
        req->deadline_ms = left;
    req->prefix = prefix;
    req->prefix_count = prefix_count;
}

static int activate(struct run_driver *d, const struct run_row *run, int64_t generation,
                    int64_t seq, const struct run_inputs *in, struct journal_entry *rows,
                    size_t row_count, struct run_report *rep, char *err, size_t err_cap)
{
    struct proto_recorded_entry *prefix = NULL;
    size_t prefix_count = 0;
    if (journal_prefix(rows, row_count, &prefix, &prefix_count) != 0)
        return error_line(err, err_cap, "run %" PRId64 ": the journal holds a malformed digest",
                          run->id);
    struct activation_request req;
    request_for(run, seq, in, prefix, prefix_count, &req);
    char script_name[FLOW_ID_MAX + 16]; /* what errors call the script: FLOW/flow.js */
    snprintf(script_name, sizeof script_name, "%s/flow.js", run->flow_id);
    req.script_name = script_name;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    /* Taken before the worker is: never later than the driver's own deadline. */
    long long deadline_at = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000 + req.deadline_ms;
    struct flow_host_config cfg = {d->store, d->home, run->flow_id, run->id, run->trigger_id,
                                   generation, in->manifest, in->catalog.catalog, rows, row_count,
                                   deadline_at};
    struct flow_host *fh = flow_host_new(&cfg);
    if (fh == NULL) {
        free(prefix);
        return error_line(err, err_cap, "out of memory");
    }
    struct host host = flow_host_interface(fh);
    struct activation_outcome out;
    pool_run(d->pool, run->flow_id, POOL_USE_FLOW, &req, &host, &out);
    rep->host_calls = out.host_calls;
    rep->replayed = (uint32_t)prefix_count;
    rep->wall_ms = out.wall_ms;
    if (out.console != NULL)
        rep->console = strdup(out.console);
    int rc;
    enum flow_host_stop kind;
    const char *stopped = flow_host_stopped(fh, &kind);
    /* A host that stopped serving the run leaves its worker nothing to do: it is
     * killed now, not kept bound to the flow until it idles out. */
    if (stopped != NULL)
        pool_release_flow(d->pool, run->flow_id);
    if (stopped != NULL && kind == FLOW_HOST_BROKEN)
        rc = error_line(err, err_cap, "run %" PRId64 " stopped: %s", run->id, stopped);
    else
        rc = finish(d, run, generation, seq, fh, &out, rep, err, err_cap);
    activation_outcome_free(&out);
    flow_host_free(fh);
    free(prefix);
    return rc;
}

/* A process of one of the run's calls that may still run: its effect may still come,
 * so the run is not resumed and nothing is changed (store/call_processes.h). A
 * mutation in doubt is let through: it only goes to needs_reconcile, without a
 * worker, and flow reconcile waits for its process. */
static int refuse_while_calls_run(struct store *s, int64_t id, char *err, size_t err_cap)
{
    struct call_process p;
    int found = call_process_running(s, id, true, &p, err, err_cap);
    if (found <= 0)
        return found;
    char what[200];
    call_process_describe(&p, what, sizeof what);
    return error_line(err, err_cap, "%s: the run is resumed once it has ended (ck-basal"
                      " recover)", what);
}

int run_preflight(struct run_driver *d, const char *flow, int64_t *version, char *err,
                  size_t err_cap)
{
    struct run_inputs in;
    if (inputs_load(d, flow, 0, version, &in, err, err_cap) != 0)
        return -1;
    inputs_free(&in);
    return 0;
}

static int drive(struct run_driver *d, int64_t id, const struct run_claim *claim,
                 struct run_report *rep, char *err, size_t err_cap)
{
    memset(rep, 0, sizeof *rep);
    rep->run_id = id;
    struct run_row run;
    int found = runs_get(d->store, id, &run, err, err_cap);
    if (found <= 0)
        return found == 0 ? error_line(err, err_cap, "unknown run %" PRId64, id) : -1;
    snprintf(rep->flow_id, sizeof rep->flow_id, "%s", run.flow_id);
    rep->state = run.state;
    struct run_inputs in;
    int64_t version = 0;
    if (inputs_load(d, run.flow_id, run.version, &version, &in, err, err_cap) != 0) {
        run_row_free(&run);
        return -1;
    }
    int64_t generation = claim != NULL ? claim->generation : 0;
    int64_t seq = claim != NULL ? claim->activation_seq : 0;
    int rc = claim != NULL ? 0 : refuse_while_calls_run(d->store, id, err, err_cap);
    if (rc == 0 && claim == NULL)
        rc = runs_claim(d->store, id, &generation, &seq, err, err_cap);
    struct journal_entry *rows = NULL;
    size_t row_count = 0;
    if (rc == 0) {
        rep->state = RUN_RUNNING;
        rc = journal_load(d->store, id, &rows, &row_count, err, err_cap);
    }
    if (rc == 0) {
        (void)run_cleanup_temporaries(in.manifest, d->home, rows, row_count);
        const struct journal_entry *doubt = in_doubt(rows, row_count);
        char why[128], changed_why[600];
        /* A call sent again goes where the operator's catalog says now: only if that is
         * where it went (flow_host_changed_since). */
        struct flow_host_config now = {d->store, d->home, run.flow_id, id, run.trigger_id,
                                       generation, in.manifest, in.catalog.catalog, rows,
                                       row_count, 0};
        const struct journal_entry *changed =
            doubt == NULL ? flow_host_changed_since(&now, rows, row_count, changed_why,
                                                    sizeof changed_why)
                          : NULL;
        if (doubt != NULL) {
            rc = to_reconcile(d, &run, generation, seq, doubt, NULL, rep, err, err_cap);
        } else if (changed != NULL) {
            rc = to_reconcile(d, &run, generation, seq, changed, changed_why, rep, err, err_cap);
        } else if (run_time_left(&run, &in) <= 0) {
            snprintf(why, sizeof why, "deadline: the run outlived its deadline of %u s",
                     (unsigned)in.manifest->deadline_s);
            rc = end_without_worker(d, &run, generation, seq, RUN_FAILED, why, NULL, rep, err,
                                    err_cap);
        } else
            rc = activate(d, &run, generation, seq, &in, rows, row_count, rep, err, err_cap);
    }
    journal_entries_free(rows, row_count);
    inputs_free(&in);
    run_row_free(&run);
    return rc;
}

int run_drive(struct run_driver *d, int64_t id, struct run_report *rep, char *err,
              size_t err_cap)
{
    return drive(d, id, NULL, rep, err, err_cap);
}

int run_drive_claimed(struct run_driver *d, int64_t id, const struct run_claim *claim,
                      struct run_report *rep, char *err, size_t err_cap)
{
    return drive(d, id, claim, rep, err, err_cap);
}
