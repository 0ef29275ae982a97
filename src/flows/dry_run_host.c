/* The host of a dry run (see dry_run_host.h). */
#include "flows/dry_run_host.h"

#include "base/clock.h"
#include "base/json_js.h"
#include "flows/flow_host.h"
#include "host/fs_builtin.h"
#include "host/git_builtin.h"
#include "host/net_fetch.h"
#include "store/kv_store.h"
#include "store/store.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

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
    const char *const *read_roots;
    const char *const *write_roots;
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
    h->read_roots = (const char *const *)cfg->manifest->fs_read.items;
    h->write_roots = (const char *const *)cfg->manifest->fs_write.items;
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
    size_t lo = 0, hi = h->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h->calls[mid].position < position)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < h->count && h->calls[lo].position == position ? &h->calls[lo] : NULL;
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

static int do_sync(const char *kind, struct host_settlement *out)
{
    char text[40];
    if (strcmp(kind, "now") == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(text, sizeof text, "%lld", (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
        return host_fulfil_text(out, text);
    }
    uint64_t bits;
    if (getrandom(&bits, sizeof bits, 0) != (ssize_t)sizeof bits)
        return host_reject(out, HOST_CODE_IO_ERROR, "random: getrandom failed");
    snprintf(text, sizeof text, "%.17g", (double)(bits >> 11) * 0x1.0p-53);
    return host_fulfil_text(out, text);
}

/* kv.get, or the checks of kv.set and kv.delete (*would_change: the run would perform
 * it), on the store in a read transaction (deferred: it never takes the write lock)
 * that is rolled back whatever happens. */
static int kv_read(const struct dry_run_host *h, const struct host_call *call, const json_t *args,
                   struct host_settlement *out, bool *would_change)
{
    char err[512] = "";
    struct store *s = h->cfg.store;
    if (store_begin_read(s, err, sizeof err) != 0)
        return host_reject(out, HOST_CODE_IO_ERROR, "%s", err);
    int rc = strcmp(call->kind, "kv.get") == 0
                 ? kv_store_call(s, h->cfg.flow_id, call->kind, args, NULL, 0, out, err,
                                 sizeof err)
                 : kv_store_check(s, h->cfg.flow_id, call->kind, args, call->args,
                                  call->args_len, out, would_change, err, sizeof err);
    store_end_read(s);
    if (rc != 0)
        return host_reject(out, HOST_CODE_IO_ERROR, "%s", err[0] != '\0' ? err : "kv failed");
    return 0;
}

/* A query op of a module, performed (allow_queries). */
static int module_query(const struct dry_run_host *h, const struct flow_grant *g,
                        const json_t *args, uint32_t position, struct host_settlement *out)
{
    if (g->module == NULL) /* the grant check sets it for every granted ops.call */
        return host_reject(out, HOST_CODE_DENIED, "ops.call: no module was decided");
    struct ops_module module = *g->module;
    if (h->cfg.deadline_at_ms > 0) {
        long long left = h->cfg.deadline_at_ms - monotonic_ms();
        if (left <= 0)
            return host_reject(out, HOST_CODE_TIMEOUT, "ops.call %s.%s: the activation's wall"
                               " deadline has passed", module.name, g->op);
        if (left < (long long)module.timeout_ms)
            module.timeout_ms = (uint32_t)left;
    }
    char key[JOURNAL_KEY_HEX + 1];
    if (journal_idempotency_key(h->cfg.flow_id, 0, h->cfg.trigger_id, position, key) != 0)
        return -1;
    const json_t *inner = json_array_get(args, 2);
    char *text = inner != NULL ? json_dumps(inner, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("null");
    if (text == NULL)
        return -1;
    int rc = ops_module_invoke(&module, g->op, text, key, NULL, out);
    free(text);
    return rc;
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

static int answer(struct dry_run_host *h, const struct host_call *call, const json_t *args,
                  const struct flow_grant *g, struct dry_run_call *rec,
                  struct host_settlement *out)
{
    const char *kind = call->kind;
    if (g->refused) {
        rec->status = DRY_RUN_REFUSED;
        return host_reject(out, g->code, "%s", g->reason);
    }
    rec->status = DRY_RUN_PERFORMED;
    if (host_kind_is_sync(kind))
        return do_sync(kind, out);
    bool would_change = false;
    if (strcmp(kind, "kv.get") == 0)
        return kv_read(h, call, args, out, &would_change);
    if (kv_store_handles(kind)) { /* a kv.set or kv.delete a run would refuse is refused */
        if (kv_read(h, call, args, out, &would_change) != 0)
            return -1;
        if (!would_change) {
            rec->status = DRY_RUN_REFUSED;
            return 0;
        }
        return capture(h, call, args, rec, out);
    }
    if (strcmp(kind, "sink.emit") == 0)
        return capture(h, call, args, rec, out);
    struct fs_grants grants = {h->read_roots, h->cfg.manifest->fs_read.count, h->write_roots,
                               h->cfg.manifest->fs_write.count, h->cfg.home, NULL};
    if (fs_builtin_is_write(kind)) {
        bool would_write = false;
        if (fs_builtin_check_write(&grants, args, out, &would_write) != 0)
            return -1;
        if (!would_write) {
            rec->status = DRY_RUN_REFUSED;
            return 0;
        }
        return capture(h, call, args, rec, out);
    }
    if (fs_builtin_handles(kind)) {
        if (fs_builtin_call(&grants, kind, args, out) != 0)
            return -1;
        if (rejected_with(out, HOST_CODE_DENIED)) /* the path rules: a run's refusal */
            rec->status = DRY_RUN_REFUSED;
        return 0;
    }
    if (strcmp(kind, "ops.call") == 0 && g->cls == JOURNAL_QUERY && h->cfg.allow_queries)
        return module_query(h, g, args, call->position, out);
    /* net GET/HEAD and git reads are queries too: performed only when asked. */
    if (strcmp(kind, "net.fetch") == 0 && g->cls == JOURNAL_QUERY && h->cfg.allow_queries) {
        if (h->net == NULL && (h->net = net_fetch_session_new()) == NULL)
            return host_reject(out, HOST_CODE_IO_ERROR, "net.fetch: libcurl could not be set up");
        struct net_grant items[MANIFEST_MAX_LIST];
        struct net_grants net = flow_host_net_grants(h->cfg.manifest, items);
        return net_fetch_call(h->net, &net, args, NULL, h->cfg.deadline_at_ms, out);
    }
    if (git_builtin_handles(kind) && h->cfg.allow_queries) {
        struct git_grants git = flow_host_git_grants(h->cfg.manifest);
        return git_builtin_call(&git, kind, args, h->cfg.deadline_at_ms, out);
    }
    return capture(h, call, args, rec, out);
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
    struct flow_grant g;
    memset(&g, 0, sizeof g);
    if (!json_is_array(args)) {
        g.refused = true;
        g.cls = JOURNAL_QUERY;
        snprintf(g.code, sizeof g.code, "%s", HOST_CODE_INVALID_ARGUMENTS);
        snprintf(g.reason, sizeof g.reason, "%.80s: arguments are not a JSON array", call->kind);
    } else {
        flow_host_grant(h->cfg.manifest, h->cfg.catalog, call->kind, args, &g);
    }
    struct dry_run_call *rec = add_call(h, call, g.cls);
    int rc = rec != NULL ? answer(h, call, args, &g, rec, out) : -1;
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
};

struct host dry_run_host_interface(struct dry_run_host *h)
{
    struct host iface = {&DRY_RUN_HOST_OPS, h};
    return iface;
}
