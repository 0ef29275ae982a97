#include "flows/scheduled_flows.h"

#include "base/error_line.h"
#include "flows/flows.h"
#include "store/sql.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SELECT_SCHEDULED                                                                       \
    "SELECT f.id, a.version, a.approved_at, coalesce(f.enabled_at, 0), v.manifest, f.enabled"  \
    " FROM flows f"                                                                            \
    " JOIN approvals a ON a.flow_id = f.id"                                                    \
    "  AND a.version = (SELECT max(version) FROM approvals WHERE flow_id = f.id)"              \
    " JOIN flow_versions v ON v.flow_id = a.flow_id AND v.version = a.version"

/* Fills f from a row of SELECT_SCHEDULED. 1 when it is scheduled, 0 when its trigger is
 * not a schedule, -1 with err when the manifest cannot be used. */
static int from_row(sqlite3_stmt *st, struct scheduled_flow *f, char *err, size_t err_cap)
{
    memset(f, 0, sizeof *f);
    snprintf(f->flow_id, sizeof f->flow_id, "%s", (const char *)sqlite3_column_text(st, 0));
    f->version = sqlite3_column_int64(st, 1);
    f->approved_at_ms = sqlite3_column_int64(st, 2);
    f->enabled_at_ms = sqlite3_column_int64(st, 3);
    struct manifest m;
    char why[512];
    if (manifest_parse(sqlite3_column_blob(st, 4), (size_t)sqlite3_column_bytes(st, 4), &m, why,
                       sizeof why) != 0)
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

/* The reuse slot holding the flow of this row unchanged, or NULL. */
static struct scheduled_flow *reusable(sqlite3_stmt *st, struct scheduled_flow *reuse,
                                       size_t reuse_count)
{
    const char *id = (const char *)sqlite3_column_text(st, 0);
    for (size_t i = 0; i < reuse_count; i++) {
        struct scheduled_flow *r = &reuse[i];
        if (r->flow_id[0] != '\0' && strcmp(r->flow_id, id) == 0 &&
            r->version == sqlite3_column_int64(st, 1) &&
            r->approved_at_ms == sqlite3_column_int64(st, 2) &&
            r->enabled_at_ms == sqlite3_column_int64(st, 3))
            return r;
    }
    return NULL;
}

int scheduled_flows_reload(struct store *s, struct scheduled_flow *reuse, size_t reuse_count,
                           struct scheduled_flow **out, size_t *count,
                           void (*skipped)(void *ctx, const char *flow, const char *why),
                           void *ctx, char *err, size_t err_cap)
{
    *out = NULL;
    *count = 0;
    sqlite3_stmt *st;
    if (sql_prepare(store_db(s), SELECT_SCHEDULED " WHERE f.enabled = 1 ORDER BY f.id", &st, err,
                    err_cap) != 0)
        return -1;
    struct scheduled_flow *flows = NULL;
    size_t n = 0, cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            size_t grown_cap = cap ? cap * 2 : 16;
            struct scheduled_flow *grown = realloc(flows, grown_cap * sizeof *grown);
            if (grown == NULL) {
                sql_release(st);
                scheduled_flows_free(flows, n);
                return error_line(err, err_cap, "out of memory");
            }
            flows = grown;
            cap = grown_cap;
        }
        char why[600];
        struct scheduled_flow *same = reusable(st, reuse, reuse_count);
        if (same != NULL) {
            flows[n++] = *same;
            memset(same, 0, sizeof *same); /* moved */
            continue;
        }
        int got = from_row(st, &flows[n], why, sizeof why);
        if (got == 1)
            n++;
        else if (got < 0 && skipped != NULL)
            skipped(ctx, (const char *)sqlite3_column_text(st, 0), why);
    }
    sql_release(st);
    if (rc != SQLITE_DONE) {
        scheduled_flows_free(flows, n);
        return sql_fail(store_db(s), err, err_cap);
    }
    *out = flows;
    *count = n;
    return 0;
}

int scheduled_flow_of(struct store *s, const char *id, struct scheduled_flow *out, char *err,
                      size_t err_cap)
{
    memset(out, 0, sizeof *out);
    if (!flow_id_valid(id))
        return error_line(err, err_cap, "unknown flow '%.80s' (not a flow id)", id), 0;
    sqlite3_stmt *st;
    if (sql_prepare(store_db(s), SELECT_SCHEDULED " WHERE f.id = ?1", &st, err, err_cap) != 0)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    int got;
    if (rc == SQLITE_ROW && sqlite3_column_int(st, 5) == 0) {
        got = 0;
        error_line(err, err_cap, "flow '%s' is disabled: it does not fire (flow enable %s)", id,
                   id);
    } else if (rc == SQLITE_ROW) {
        char why[600];
        got = from_row(st, out, why, sizeof why);
        if (got < 0)
            error_line(err, err_cap, "flow '%s': %s", id, why);
        else if (got == 0)
            error_line(err, err_cap, "flow '%s' has no schedule (its trigger is not "
                                     "trigger.schedule)", id);
    } else if (rc == SQLITE_DONE) {
        int known = flows_known(s, id, err, err_cap);
        got = known < 0 ? -1 : 0;
        if (known == 0)
            error_line(err, err_cap, "unknown flow '%s'", id);
        else if (known == 1)
            error_line(err, err_cap, "flow '%s' has no approved version: it does not fire", id);
    } else {
        got = sql_fail(store_db(s), err, err_cap);
    }
    sql_release(st);
    return got;
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
