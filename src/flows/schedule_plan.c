/* The fires of one scheduler look (flows/schedule_plan.h). */
#include "flows/schedule_plan.h"

#include "flows/zoneinfo.h"

#include <stdio.h>
#include <string.h>

/* Where the search for the last missed instants starts: one hour before the cut-off,
 * widened eightfold until enough are found or the first missed instant is reached, so
 * a year of downtime on "* * * * *" costs a few hundred schedule_next calls, not half
 * a million. */
#define FIRST_SPAN_S 3600

/* Instants in (from_s, to_s] of s, the last `keep` of them into ring[0..keep) in order,
 * their number into *count. 0, or -1 on an arithmetic failure. */
static int collect(const struct schedule *s, int64_t from_s, int64_t to_s, size_t keep,
                   int64_t *ring, size_t *kept, int64_t *count)
{
    *kept = 0;
    *count = 0;
    int64_t at = from_s;
    for (;;) {
        int64_t next;
        int rc = schedule_next(s, at, &next);
        if (rc < 0)
            return -1;
        if (rc == 1 || next > to_s)
            return 0;
        if (keep > 0) {
            if (*kept == keep)
                memmove(ring, ring + 1, (keep - 1) * sizeof *ring);
            else
                (*kept)++;
            ring[*kept - 1] = next;
        }
        (*count)++;
        at = next;
    }
}

int schedule_plan(const struct schedule *s, enum manifest_missed missed, uint32_t each_cap,
                  int64_t next_fire_s, int64_t now_s, struct schedule_plan *out)
{
    memset(out, 0, sizeof *out);
    out->dropped_exact = true;
    if (next_fire_s > now_s) {
        out->has_next = true;
        out->next_s = next_fire_s;
        return 0;
    }
    int64_t cutoff = now_s - SCHEDULE_GRACE_S; /* an instant at or before it was missed */
    if (next_fire_s <= cutoff) {
        out->first_missed_s = next_fire_s;
        size_t want = missed == MANIFEST_MISSED_ONCE   ? 1
                      : missed == MANIFEST_MISSED_EACH ? (each_cap < MANIFEST_EACH_CAP_MAX
                                                              ? each_cap
                                                              : MANIFEST_EACH_CAP_MAX)
                                                       : 0;
        int64_t picked[MANIFEST_EACH_CAP_MAX];
        size_t kept = 0;
        int64_t counted = 0;
        bool whole = false;
        for (int64_t span = FIRST_SPAN_S;; span *= 8) {
            int64_t from = cutoff - span;
            whole = from <= next_fire_s - 1 || span > (INT64_C(1) << 40);
            if (whole)
                from = next_fire_s - 1;
            if (collect(s, from, cutoff, want, picked, &kept, &counted) != 0)
                return -1;
            if (whole || (size_t)counted >= want)
                break;
        }
        out->missed_dropped = counted - (int64_t)kept;
        out->dropped_exact = whole;
        for (size_t i = 0; i < kept; i++) {
            struct schedule_fire *f = &out->fires[out->count++];
            f->at_s = picked[i];
            f->kind = missed == MANIFEST_MISSED_ONCE ? SCHEDULE_FIRE_ONCE : SCHEDULE_FIRE_EACH;
            f->missed_since_s = missed == MANIFEST_MISSED_ONCE ? next_fire_s : picked[i];
        }
    }
    /* The on-time instants: (max(cutoff, next_fire - 1), now]. */
    int64_t from = cutoff > next_fire_s - 1 ? cutoff : next_fire_s - 1;
    int64_t on_time[SCHEDULE_GRACE_S / MANIFEST_INTERVAL_MIN_S + 2];
    size_t kept = 0;
    int64_t counted = 0;
    if (collect(s, from, now_s, sizeof on_time / sizeof on_time[0], on_time, &kept, &counted) != 0)
        return -1;
    for (size_t i = 0; i < kept; i++) {
        struct schedule_fire *f = &out->fires[out->count++];
        f->at_s = on_time[i];
        f->kind = SCHEDULE_FIRE_ON_TIME;
        f->missed_since_s = on_time[i];
    }
    int rc = schedule_next(s, now_s, &out->next_s);
    if (rc < 0)
        return -1;
    out->has_next = rc == 0;
    return 0;
}

void schedule_iso_utc(int64_t unix_s, char out[32])
{
    int64_t days = unix_s / 86400, secs = unix_s % 86400;
    if (secs < 0) {
        secs += 86400;
        days--;
    }
    int64_t year;
    unsigned month, day;
    zoneinfo_civil_from_days(days, &year, &month, &day);
    snprintf(out, 32, "%04lld-%02u-%02uT%02d:%02d:%02dZ", (long long)year, month, day,
             (int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60));
}

void schedule_iso_local(const struct schedule *s, int64_t unix_s, char out[40])
{
    int32_t offset = s->kind == SCHEDULE_CRON && s->zone != NULL ? zoneinfo_offset(s->zone, unix_s)
                                                                 : 0;
    char utc[32];
    schedule_iso_utc(unix_s + offset, utc);
    int32_t mag = offset < 0 ? -offset : offset;
    /* The UTC text of the shifted instant, its 'Z' replaced by the offset. */
    snprintf(out, 40, "%.19s%c%02d:%02d", utc, offset < 0 ? '-' : '+', (int)(mag / 3600),
             (int)(mag / 60 % 60));
}
