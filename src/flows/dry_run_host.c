/* The host of a dry run (see dry_run_host.h). */
#include "flows/dry_run_host.h"

#include "base/json_js.h"
#include "base/position_search.h"
#include "flows/flow_host.h"
#include "flows/host_kinds.h"
#include "store/store.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dry_run_host {
    struct dry_run_config cfg;
    struct dry_run_call *calls; /* by position */
    size_t count, cap;
    uint32_t over_limit;
    /* A run's limits, counted as a run counts them (flow_run_usage_admit): what is kept
     * here, the listed calls' arguments and outcomes, is bounded by them too. */
    struct flow_run_usage usage;
    char stopped[512];  /* why the limit stopped the dry run ("": it did not) */
    char *stopped_text; /* the rejection every call after the stop gets */
    struct net_fetch_session *net; /* made by the first net.fetch query performed */
};

const char *dry_run_status_name(enum dry_run_status status)
{
    switch (status) {
    case DRY_RUN_PERFORMED: return "performed";
    case DRY_RUN_CAPTURED: return "captured";
    case DRY_RUN_REFUSED: return "refused";
    }
    return "unknown";
}

struct dry_run_host *dry_run_host_new(const struct dry_run_config *cfg)
{
    struct dry_run_host *h = calloc(1, sizeof *h);
    if (h == NULL)
        return NULL;
    h->cfg = *cfg;
    return h;
}

static void call_free(struct dry_run_call *c)
{
    free(c->kind);
    free(c->args);
    free(c->value);
}

void dry_run_host_free(struct dry_run_host *h)
{
    if (h == NULL)
        return;
    for (size_t i = 0; i < h->count; i++)
        call_free(&h->calls[i]);
    free(h->calls);
    free(h->stopped_text);
    net_fetch_session_free(h->net);
    free(h);
}

const struct dry_run_call *dry_run_host_calls(const struct dry_run_host *h, size_t *count)
{
    *count = h->count;
    return h->calls;
}

uint32_t dry_run_host_over_limit(const struct dry_run_host *h)
{
    return h->over_limit;
}

const char *dry_run_host_stopped(const struct dry_run_host *h)
{
    return h->stopped[0] != '\0' ? h->stopped : NULL;
}

/* The records are in position order. */
static struct dry_run_call *find_call(struct dry_run_host *h, uint32_t position)
{
    return position_search(h->calls, h->count, sizeof *h->calls,
                           offsetof(struct dry_run_call, position), position);
}

/* A new record at its place in position order (a call the driver refused without
 * asking arrives late, at delivery). NULL on no memory. */
static struct dry_run_call *add_call(struct dry_run_host *h, const struct host_call *call,
                                     enum journal_class cls)
{
    if (h->count == h->cap) {
        size_t cap = h->cap == 0 ? 32 : h->cap * 2;
        struct dry_run_call *grown = realloc(h->calls, cap * sizeof *grown);
        if (grown == NULL)
            return NULL;
        h->calls = grown;
        h->cap = cap;
    }
    size_t at = h->count;
    while (at > 0 && h->calls[at - 1].position > call->position)
        at--;
    struct dry_run_call c;
    memset(&c, 0, sizeof c);
    c.position = call->position;
    c.cls = cls;
    c.kind = strdup(call->kind);
    c.args = malloc(call->args_len + 1);
    if (c.kind == NULL || c.args == NULL) {
        call_free(&c);
        return NULL;
    }
    memcpy(c.args, call->args, call->args_len);
    c.args[call->args_len] = '\0';
    memmove(&h->calls[at + 1], &h->calls[at], (h->count - at) * sizeof *h->calls);
    h->calls[at] = c;
    h->count++;
    return &h->calls[at];
}

/* ---- answers ------------------------------------------------------------------------ */

/* What the dry run's calls are decided and performed against: the run's rows, with
 * no run of its own (flows/host_kinds.h). */
static struct host_kind_site site_of(struct dry_run_host *h)
{
    struct host_kind_site site = {h->cfg.manifest, h->cfg.catalog, h->cfg.home, h->cfg.store,
                                  h->cfg.flow_id, 0, h->cfg.deadline_at_ms, &h->net};
    return site;
}

/* kv.get, or the checks of kv.set and kv.delete (*would_change: the run would perform
 * it), on the store in a read transaction (deferred: it never takes the write lock)
 * that is rolled back whatever happens. */
static int kv_read(struct dry_run_host *h, struct host_kind_call *c, struct host_settlement *out,
                   bool *would_change)
{
    char err[512] = "";
    struct store *s = h->cfg.store;
    struct host_kind_site site = site_of(h);
    if (store_begin_read(s, err, sizeof err) != 0)
        return host_reject(out, HOST_CODE_IO_ERROR, "%s", err);
    int rc = c->kind->check == NULL
                 ? host_kind_perform(&site, c, out)
                 : c->kind->check(&site, c, out, would_change, err, sizeof err);
    if (rc != 0 && err[0] == '\0')
        snprintf(err, sizeof err, "%s", c->err);
    store_end_read(s);
    if (rc != 0)
        return host_reject(out, HOST_CODE_IO_ERROR, "%s", err[0] != '\0' ? err : "kv failed");
    return 0;
}

/* A call that is not performed: a fixture's answer, else HostError dry_run. */
static int capture(const struct dry_run_host *h, const struct host_call *call,
                   const json_t *args, struct dry_run_call *rec, struct host_settlement *out)
{
    rec->status = DRY_RUN_CAPTURED;
    int found = dry_run_fixture_answer(h->cfg.fixtures, call->position, call->kind, args, out);
    if (found < 0)
        return -1;
    if (found > 0) {
        rec->from_fixture = true;
        return 0;
    }
    return host_reject(out, HOST_CODE_DRY_RUN, "dry run: %.80s is not performed and no fixture"
                       " answers it (--fixtures FILE gives one)", call->kind);
}

static bool rejected_with(const struct host_settlement *s, const char *code)
{
    if (s->settlement != PROTO_SETTLEMENT_REJECTED || s->value == NULL)
        return false;
    json_t *v = json_loads(s->value, 0, NULL);
    const char *c = json_string_value(json_object_get(v, "code"));
    bool same = c != NULL && strcmp(c, code) == 0;
    json_decref(v);
    return same;
}

/* Every check of a call that changes something (kv.set, kv.delete, fs.write): one a
 * run would refuse is refused, one it would perform is captured. */
static int check_then_capture(struct dry_run_host *h, const struct host_call *call,
                              struct host_kind_call *c, struct dry_run_call *rec,
                              struct host_settlement *out)
{
    bool would_change = false;
    int rc;
    if (c->cls == JOURNAL_LOCAL) {
        rc = kv_read(h, c, out, &would_change);
    } else {
        char err[512] = "";
        struct host_kind_site site = site_of(h);
        rc = c->kind->check(&site, c, out, &would_change, err, sizeof err);
    }
    if (rc != 0)
        return -1;
    if (!would_change) {
        rec->status = DRY_RUN_REFUSED;
        return 0;
    }
    return capture(h, call, c->args, rec, out);
}

/* A query performed by its row as a run performs it, or a change performed within the
 * store's read transaction (kv.get). */
static int perform(struct dry_run_host *h, struct host_kind_call *c, struct dry_run_call *rec,
                   struct host_settlement *out)
{
    bool unused = false;
    if (c->cls == JOURNAL_LOCAL)
        return kv_read(h, c, out, &unused);
    struct host_kind_site site = site_of(h);
    if (host_kind_perform(&site, c, out) != 0)
        return -1;
    if (rejected_with(out, HOST_CODE_DENIED)) /* fs's path rules: a run's refusal */
        rec->status = DRY_RUN_REFUSED;
    return 0;
}

static int answer(struct dry_run_host *h, const struct host_call *call, struct host_kind_call *c,
                  struct dry_run_call *rec, struct host_settlement *out)
{
    if (c->refused) {
        rec->status = DRY_RUN_REFUSED;
        return host_reject(out, c->code, "%s", c->reason);
    }
    rec->status = DRY_RUN_PERFORMED;
    char key[JOURNAL_KEY_HEX + 1];
    switch (c->kind->dry_run) {
    case HOST_KIND_DRY_PERFORM:
        return perform(h, c, rec, out);
    case HOST_KIND_DRY_CHECK:
        return check_then_capture(h, call, c, rec, out);
    case HOST_KIND_DRY_QUERY:
        /* Performed only when asked, and only a query (the grant decided its class). */
        if (c->cls != JOURNAL_QUERY || !h->cfg.allow_queries)
            break;
        if (c->long_running) /* its completion would come after the dry run ended */
            break;
        if (journal_idempotency_key(h->cfg.flow_id, 0, h->cfg.trigger_id, call->position,
                                    key) != 0)
            return -1;
        c->key = key;
        return perform(h, c, rec, out);
    case HOST_KIND_DRY_CAPTURE:
    case HOST_KIND_DRY_UNSUPPORTED: /* refused by the decision: not reached */
        break;
    }
    return capture(h, call, c->args, rec, out);
}

/* A call past the run's limits: refused too_large as a run refuses it, once stopped
 * every later call too, and counted, not listed. */
static int refuse_over_limit(struct dry_run_host *h, struct host_settlement *out)
{
    h->over_limit++;
    if (h->stopped_text == NULL) {
        if (host_reject(out, HOST_CODE_TOO_LARGE, "%s", h->stopped) != 0)
            return -1;
        h->stopped_text = strdup(out->value);
        return 0;
    }
    out->settlement = PROTO_SETTLEMENT_REJECTED;
    out->value = strdup(h->stopped_text);
    return out->value != NULL ? 0 : -1;
}

static int dry_run_call(void *self, const struct host_call *call, struct host_settlement *out,
                        long long *delay_ms)
{
    struct dry_run_host *h = self;
    *delay_ms = 0;
    if (h->stopped[0] != '\0' ||
        !flow_run_usage_admit(&h->usage, call->args_len, call, h->stopped, sizeof h->stopped))
        return refuse_over_limit(h, out);
    json_t *args = json_js_loadb(call->args, call->args_len, 0, NULL); /* 1e19 too */
    struct host_kind_call c = {.name = call->kind, .args = json_is_array(args) ? args : NULL,
                               .args_text = call->args, .args_len = call->args_len,
                               .position = call->position};
    struct host_kind_site site = site_of(h);
    host_kind_decide(&site, &c); /* exactly as a run decides it */
    if (c.args == NULL) /* listed as a query, whatever its kind */
        c.cls = JOURNAL_QUERY;
    struct dry_run_call *rec = add_call(h, call, c.cls);
    int rc = rec != NULL ? answer(h, call, &c, rec, out) : -1;
    host_kind_call_free(&c);
    json_decref(args);
    if (rc == 0 && rec != NULL && out->value != NULL) { /* until a delivery says otherwise */
        rec->settlement = out->settlement;
        rec->value = strdup(out->value);
        h->usage.journal_bytes += strlen(out->value); /* as a run journals the outcome */
    }
    return rc;
}

/* What the script saw is what is listed: the driver may have put its own rejection
 * (a result over max_value_bytes) in place of the answer, or answered a call it never
 * asked about (arguments over max_value_bytes), which a run journals at delivery,
 * counted against its limits. */
static void dry_run_delivered(void *self, const struct host_call *call,
                              const struct host_settlement *seen, uint32_t delivery_order)
{
    (void)delivery_order;
    struct dry_run_host *h = self;
    const char *value = seen->value != NULL ? seen->value : "null";
    struct dry_run_call *rec = find_call(h, call->position);
    if (rec == NULL) {
        /* Not listed: refused here for the limit (counted then: it got the stop's very
         * rejection), or never asked. */
        if (h->stopped_text != NULL && strcmp(value, h->stopped_text) == 0)
            return;
        if (h->stopped[0] != '\0' ||
            !flow_run_usage_admit(&h->usage, call->args_len + strlen(value), call, h->stopped,
                                  sizeof h->stopped)) {
            h->over_limit++;
            return;
        }
        if ((rec = add_call(h, call, JOURNAL_QUERY)) == NULL)
            return; /* out of memory: the listing misses this call */
        rec->status = DRY_RUN_REFUSED;
    }
    char *copy = strdup(value);
    if (copy == NULL)
        return;
    free(rec->value);
    rec->value = copy;
    rec->settlement = seen->settlement;
}

static const struct host_ops DRY_RUN_HOST_OPS = {
    .call = dry_run_call,
    .delivered = dry_run_delivered,
    .is_sync = host_kinds_is_sync_op,
};

struct host dry_run_host_interface(struct dry_run_host *h)
{
    struct host iface = {&DRY_RUN_HOST_OPS, h};
    return iface;
}
