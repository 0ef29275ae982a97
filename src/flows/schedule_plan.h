/* What a scheduled flow fires when the scheduler looks at it (docs/triggers.md,
 * "Schedules"). Pure computation on a parsed schedule: no store, no clock.
 *
 * The instants due are those from the stored next fire up to now (inclusive). One due
 * less than SCHEDULE_GRACE_S late is ON TIME and fires as usual. Older ones were MISSED
 * (serve was down, or the flow was busy with an earlier run), and the manifest's
 * `missed` decides:
 *   skip   none of them fires;
 *   once   one run for all of them, standing for the LAST missed instant (its trigger
 *          says since when instants were missed);
 *   each   one run per missed instant, the LAST each_cap of them (older ones are
 *          dropped: a catch-up serves the recent past, not a week of backlog).
 * Every fire is named by its instant, so planning the same look twice (a crash between
 * admission and moving the schedule on) names the same runs, which admission then
 * finds already admitted. */
#ifndef BASAL_FLOWS_SCHEDULE_PLAN_H
#define BASAL_FLOWS_SCHEDULE_PLAN_H

#include "flows/manifest.h"
#include "flows/schedule.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCHEDULE_GRACE_S 60
/* The fires of one look: each_cap catch-ups plus the on-time ones a 60 s grace can
 * hold (an interval is at least MANIFEST_INTERVAL_MIN_S). */
#define SCHEDULE_PLAN_MAX (MANIFEST_EACH_CAP_MAX + SCHEDULE_GRACE_S / MANIFEST_INTERVAL_MIN_S + 2)

enum schedule_fire_kind {
    SCHEDULE_FIRE_ON_TIME = 0,
    SCHEDULE_FIRE_ONCE = 1, /* catches up every missed instant since missed_since_s */
    SCHEDULE_FIRE_EACH = 2, /* catches up its own missed instant */
};

struct schedule_fire {
    int64_t at_s;           /* the instant the run stands for: its trigger id */
    enum schedule_fire_kind kind;
    int64_t missed_since_s; /* ONCE: the first missed instant; else at_s */
};

struct schedule_plan {
    struct schedule_fire fires[SCHEDULE_PLAN_MAX]; /* in instant order */
    size_t count;
    int64_t first_missed_s;   /* 0 when nothing was missed */
    int64_t missed_dropped;   /* missed instants that fire nothing (skip, or beyond each_cap) */
    bool dropped_exact;       /* false: missed_dropped is a lower bound (not all counted) */
    bool has_next;            /* false: the schedule never fires again */
    int64_t next_s;           /* the first instant after now, with has_next */
};

/* Plans the look at now_s of a schedule whose stored next fire is next_fire_s. Fills
 * *out and returns 0, or -1 if the schedule's arithmetic fails (an instant outside
 * schedule_next's range). With next_fire_s > now_s nothing is due: out->count is 0 and
 * out->next_s is next_fire_s. */
int schedule_plan(const struct schedule *s, enum manifest_missed missed, uint32_t each_cap,
                  int64_t next_fire_s, int64_t now_s, struct schedule_plan *out);

/* "2026-12-02T07:00:00Z" for unix_s (UTC). */
void schedule_iso_utc(int64_t unix_s, char out[32]);

/* unix_s as the wall clock of s's zone with its offset, "2026-12-02T08:00:00+01:00"
 * ("+00:00" for an interval, which has no zone). */
void schedule_iso_local(const struct schedule *s, int64_t unix_s, char out[40]);

#endif
