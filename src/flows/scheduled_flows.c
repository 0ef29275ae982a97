#include "flows/scheduled_flows.h"

#include "base/error_line.h"
#include "flows/flows.h"
#include "store/flow_registry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fills f from a flow at its approved version. 1 when it is scheduled, 0 when its
 * trigger is not a schedule, -1 with err when the manifest cannot be used. */
static int from_approved(const struct flow_approved *a, struct scheduled_flow *f, char *err,
                         size_t err_cap)
{
    memset(f, 0, sizeof *f);
    snprintf(f->flow_id, sizeof f->flow_id, "%s", a->id);
    f->version = a->version;
    f->approved_at_ms = a->approved_at_ms;
    f->enabled_at_ms = a->enabled_at_ms;
    struct manifest m;
    char why[512];
    if (manifest_parse(a->manifest, a->manifest_len, &m, why, sizeof why) != 0)
        return error_line(err, err_cap, "version %" PRId64 "'s stored manifest: %s", f->version,
                          why);
    int rc = 0;
    if (m.trigger.kind == MANIFEST_TRIGGER_SCHEDULE) {
        const struct manifest_schedule *ms = &m.trigger.schedule;
        f->missed = ms->missed;
        f->each_cap = ms->each_cap;
        f->anchor_ms = f->approved_at_ms > f->enabled_at_ms ? f->approved_at_ms : f->enabled_at_ms;
        snprintf(f->tz, sizeof f->tz, "%s", ms->cron != NULL ? ms->tz : "UTC");
        if (ms->cron != NULL) {
            snprintf(f->spec, sizeof f->spec, "cron %s tz %s", ms->cron, ms->tz);
            rc = schedule_parse_cron(ms->cron, ms->tz, &f->schedule, err, err_cap) == 0 ? 1 : -1;
        } else {
            snprintf(f->spec, sizeof f->spec, "interval %" PRIu32 "s", ms->interval_s);
            rc = schedule_interval(ms->interval_s, f->anchor_ms / 1000, &f->schedule, err,
                                   err_cap) == 0
                     ? 1
                     : -1;
        }
    }
    manifest_free(&m);
    return rc;
}

int scheduled_flows_load(struct store *s, struct scheduled_flow **out, size_t *count,
                         void (*skipped)(void *ctx, const char *flow, const char *why),
                         void *ctx, char *err, size_t err_cap)
{
    return scheduled_flows_reload(s, NULL, 0, out, count, skipped, ctx, err, err_cap);
}

/* The reuse slot holding this flow unchanged, or NULL. */
static struct scheduled_flow *reusable(const struct flow_approved *a,
                                       struct scheduled_flow *reuse, size_t reuse_count)
{
    for (size_t i = 0; i < reuse_count; i++) {
        struct scheduled_flow *r = &reuse[i];
        if (r->flow_id[0] != '\0' && strcmp(r->flow_id, a->id) == 0 &&
            r->version == a->version && r->approved_at_ms == a->approved_at_ms &&
            r->enabled_at_ms == a->enabled_at_ms)
            return r;
    }
    return NULL;
}

/* The list scheduled_flows_reload builds, one visited flow at a time. */
struct reload {
    struct scheduled_flow *reuse;
    size_t reuse_count;
    struct scheduled_flow *flows;
    size_t n, cap;
    void (*skipped)(void *ctx, const char *flow, const char *why);
    void *ctx;
};

static int reload_visit(void *ctx, const struct flow_approved *a, char *err, size_t err_cap)
{
    struct reload *r = ctx;
    if (r->n == r->cap) {
        size_t grown_cap = r->cap ? r->cap * 2 : 16;
        struct scheduled_flow *grown = realloc(r->flows, grown_cap * sizeof *grown);
        if (grown == NULL)
            return error_line(err, err_cap, "out of memory");
        r->flows = grown;
        r->cap = grown_cap;
    }
    struct scheduled_flow *same = reusable(a, r->reuse, r->reuse_count);
    if (same != NULL) {
        r->flows[r->n++] = *same;
        memset(same, 0, sizeof *same); /* moved */
        return 0;
    }
    char why[600];
    int got = from_approved(a, &r->flows[r->n], why, sizeof why);
    if (got == 1)
        r->n++;
    else if (got < 0 && r->skipped != NULL)
        r->skipped(r->ctx, a->id, why);
    return 0;
}

int scheduled_flows_reload(struct store *s, struct scheduled_flow *reuse, size_t reuse_count,
                           struct scheduled_flow **out, size_t *count,
                           void (*skipped)(void *ctx, const char *flow, const char *why),
                           void *ctx, char *err, size_t err_cap)
{
    *out = NULL;
    *count = 0;
    struct reload r = {reuse, reuse_count, NULL, 0, 0, skipped, ctx};
    if (flow_registry_each_approved(s, reload_visit, &r, err, err_cap) != 0) {
        scheduled_flows_free(r.flows, r.n);
        return -1;
    }
    *out = r.flows;
    *count = r.n;
    return 0;
}

/* The one flow scheduled_flow_of asks for: what the visit found. */
struct one_flow {
    struct scheduled_flow *out;
    int got; /* 1 scheduled, 0 not (err says why), -1 an unusable manifest */
};

static int one_visit(void *ctx, const struct flow_approved *a, char *err, size_t err_cap)
{
    struct one_flow *o = ctx;
    if (!a->enabled) {
        o->got = 0;
        error_line(err, err_cap, "flow '%s' is disabled: it does not fire (flow enable %s)",
                   a->id, a->id);
        return 0;
    }
    char why[600];
    o->got = from_approved(a, o->out, why, sizeof why);
    if (o->got < 0)
        error_line(err, err_cap, "flow '%s': %s", a->id, why);
    else if (o->got == 0)
        error_line(err, err_cap, "flow '%s' has no schedule (its trigger is not "
                                 "trigger.schedule)", a->id);
    return 0;
}

int scheduled_flow_of(struct store *s, const char *id, struct scheduled_flow *out, char *err,
                      size_t err_cap)
{
    memset(out, 0, sizeof *out);
    if (!flow_id_valid(id))
        return error_line(err, err_cap, "unknown flow '%.80s' (not a flow id)", id), 0;
    struct one_flow o = {out, 0};
    int found = flow_registry_approved_of(s, id, one_visit, &o, err, err_cap);
    if (found < 0)
        return -1;
    if (found == 1)
        return o.got;
    int known = flows_known(s, id, err, err_cap);
    if (known == 0)
        error_line(err, err_cap, "unknown flow '%s'", id);
    else if (known == 1)
        error_line(err, err_cap, "flow '%s' has no approved version: it does not fire", id);
    return known < 0 ? -1 : 0;
}

void scheduled_flow_anchor(struct scheduled_flow *f, int64_t anchor_ms)
{
    f->anchor_ms = anchor_ms;
    if (f->schedule.kind == SCHEDULE_INTERVAL)
        f->schedule.anchor_unix_s = anchor_ms / 1000;
}

bool scheduled_flow_row(struct scheduled_flow *f, const struct schedule_row *stored,
                        struct schedule_row *out)
{
    if (stored != NULL && strcmp(stored->spec, f->spec) == 0 &&
        f->enabled_at_ms <= stored->anchor_ms) {
        *out = *stored;
        out->version = f->version;
        scheduled_flow_anchor(f, stored->anchor_ms);
        return true;
    }
    memset(out, 0, sizeof *out);
    snprintf(out->flow_id, sizeof out->flow_id, "%s", f->flow_id);
    out->version = f->version;
    snprintf(out->spec, sizeof out->spec, "%s", f->spec);
    out->anchor_ms = f->anchor_ms;
    int64_t next_s = 0;
    out->has_next = schedule_next(&f->schedule, f->anchor_ms / 1000, &next_s) == 0;
    out->next_fire_ms = out->has_next ? next_s * 1000 : 0;
    return false;
}

void scheduled_flow_free(struct scheduled_flow *f)
{
    if (f != NULL)
        schedule_free(&f->schedule);
}

void scheduled_flows_free(struct scheduled_flow *flows, size_t count)
{
    for (size_t i = 0; i < count; i++)
        scheduled_flow_free(&flows[i]);
    free(flows);
}
