/* Which flows a serve schedules, read from the store: every ENABLED flow whose highest
 * APPROVED version (the one a run would use) has a `trigger.schedule`, with that
 * schedule parsed. */
#ifndef BASAL_FLOWS_SCHEDULED_FLOWS_H
#define BASAL_FLOWS_SCHEDULED_FLOWS_H

#include "base/names.h"
#include "flows/manifest.h"
#include "flows/schedule.h"
#include "store/schedules.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct scheduled_flow {
    char flow_id[FLOW_ID_MAX + 1];
    int64_t version;                 /* the highest approved */
    char spec[SCHEDULE_SPEC_MAX + 1]; /* "cron <expr> tz <zone>" or "interval <n>s" */
    char tz[ZONEINFO_NAME_MAX + 1];  /* the cron's zone; "UTC" for an interval */
    int64_t approved_at_ms;
    int64_t enabled_at_ms;           /* 0: enabled since created */
    enum manifest_missed missed;
    uint32_t each_cap;
    struct schedule schedule;        /* an interval is anchored at anchor_ms below */
    int64_t anchor_ms;               /* max(approval, enable), unless a caller re-anchors */
};

/* Every scheduled flow, by id (*out malloc'd; release with scheduled_flows_free). A
 * stored manifest that no longer parses (or names a zone the system lost) is skipped
 * and reported through skipped (may be NULL): called with the flow id and the reason.
 * 0 or -1 (store error). */
int scheduled_flows_load(struct store *s, struct scheduled_flow **out, size_t *count,
                         void (*skipped)(void *ctx, const char *flow, const char *why),
                         void *ctx, char *err, size_t err_cap);

/* scheduled_flows_load that takes a flow from reuse[0..reuse_count) instead of parsing
 * its manifest again when its id, version, approval and enable times are the same (the
 * scheduler syncs after every change: with 1000 flows it parses one manifest, not
 * 1000). A flow taken is moved out (its reuse slot zeroed); the rest stay the caller's. */
int scheduled_flows_reload(struct store *s, struct scheduled_flow *reuse, size_t reuse_count,
                           struct scheduled_flow **out, size_t *count,
                           void (*skipped)(void *ctx, const char *flow, const char *why),
                           void *ctx, char *err, size_t err_cap);

/* One flow: 1 with *out (release with scheduled_flow_free), 0 when it is not scheduled
 * (err says why: unknown, disabled, no approved version, not a schedule trigger), -1 on
 * a store error or an unusable manifest. */
int scheduled_flow_of(struct store *s, const char *id, struct scheduled_flow *out, char *err,
                      size_t err_cap);

/* Re-anchors an interval schedule (the scheduler keeps a stored anchor). */
void scheduled_flow_anchor(struct scheduled_flow *f, int64_t anchor_ms);

/* The schedules row f should have, given the stored one (NULL if none): the stored row
 * is KEPT (true; its anchor and next fire, f re-anchored to it, the version brought up
 * to f's) while its schedule is the same and the flow was not enabled since the row
 * began: a new version with the same schedule does not restart it, a re-enabled flow
 * does not catch up its disabled time. Otherwise (false) a new row: anchored at f's
 * anchor, first fire the first instant after it (has_next false: never). */
bool scheduled_flow_row(struct scheduled_flow *f, const struct schedule_row *stored,
                        struct schedule_row *out);

void scheduled_flow_free(struct scheduled_flow *f);
void scheduled_flows_free(struct scheduled_flow *flows, size_t count);

#endif
