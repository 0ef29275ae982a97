/* Schedule math: when a scheduled flow fires next. Pure computation on a parsed
 * schedule and the system's zoneinfo; no store, no clock, no process state (the time
 * zone is read from its TZif file, never through setenv("TZ")/localtime_r, which are
 * not safe in the multi-threaded daemon).
 *
 * CRON: five fields separated by single spaces: minute (0-59), hour (0-23), day of
 * month (1-31), month (1-12 or JAN-DEC), day of week (0-7 or SUN-SAT; 0 and 7 are both
 * Sunday). Names are case-insensitive. Each field is a comma list of `*`, `*`/STEP,
 * N, N-M and N-M/STEP (N <= M, STEP 1..field maximum). If both day fields are
 * restricted (neither starts with `*`), a day matches when EITHER matches; otherwise
 * both must. Cron fires at minute resolution (seconds 0) of local wall-clock time in
 * the schedule's zone. A day-of-month list that can never occur in the chosen months
 * (`0 0 30 2 *`) is refused at parse time.
 *
 * INTERVAL: every `seconds` (1..SCHEDULE_INTERVAL_MAX_S) after an anchor instant the
 * caller gives (the approval time): the fires are anchor + k*seconds for k >= 1, so the
 * first fire is one interval after the anchor. Time zones do not affect intervals.
 *
 * DST (cron only; the rule is "a local time fires at the first instant the wall clock
 * reaches it"):
 *   - a local time inside a spring-forward gap (it never shows on the clock) fires
 *     once, at the first instant after the gap: with 02:00 -> 03:00, "30 2 * * *" fires
 *     at 03:00 local, and every gap minute of "* * * * *" collapses into that one fire;
 *   - a local time that occurs twice in a fall-back overlap fires once, at its first
 *     occurrence; the repeated wall-clock interval does not fire again.
 *
 * TIME ZONES: an IANA name ("UTC", "Europe/Berlin"): 1..ZONEINFO_NAME_MAX bytes of
 * [A-Za-z0-9_+-/], no leading '/', no "..", no empty component. "UTC" is built in; any
 * other name is read from ZONEINFO_DIR (flows/zoneinfo.h). A zone that is missing, not
 * a TZif file, or uses leap seconds ("right/...") is refused.
 *
 * Errors are one line naming the part at fault, e.g.
 *   "cron: minute field '61': out of range 0-59"
 *   "tz 'Mars/Olympus': unknown time zone (no such file in /usr/share/zoneinfo)"
 */
#ifndef BASAL_FLOWS_SCHEDULE_H
#define BASAL_FLOWS_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flows/zoneinfo.h"

#define SCHEDULE_CRON_MAX 128
/* How far ahead schedule_next looks, in local days after the first: the longest wait
 * any accepted expression can have for its next day, so that it always finds one.
 *   - Both day fields restricted (either may match), or the weekday field alone: a
 *     matching day within a year. The day of month alone: within eight years (29 Feb
 *     2096, then 29 Feb 2104: 2100 is no leap year); a date that never exists is
 *     refused at parse.
 *   - A day field starting with '*' makes both decide: one of the dates AND one of the
 *     weekdays. Such a field holds its first value, day 1 or Sunday. With the weekday
 *     field starting with '*' the rarest day is 29 Feb on a Sunday (day of month 29,
 *     month 2, day of week '*' with step 7): every 28 years within a century, but 40
 *     years across a century year that is no leap year (2088, then 2128: 14609 days).
 *     With the day of month starting with '*', day 1 of a month on a given weekday
 *     recurs within 12 years (4382 days).
 * 14609 days is also the longest gap between two days of any one (month, day,
 * weekday), and the Gregorian calendar repeats every 400 years (146097 days, exactly
 * 20871 weeks), so over one cycle is over all time: tests/t_schedule.c recomputes it
 * by walking a cycle. */
#define SCHEDULE_SEARCH_DAYS 14609
#define SCHEDULE_INTERVAL_MAX_S (5LL * 366 * 86400)

enum schedule_kind { SCHEDULE_CRON = 1, SCHEDULE_INTERVAL = 2 };

struct schedule {
    enum schedule_kind kind;
    /* cron: bit n set = value n allowed */
    uint64_t minutes;   /* 0..59 */
    uint32_t hours;     /* 0..23 */
    uint32_t mdays;     /* 1..31 */
    uint16_t months;    /* 1..12 */
    uint8_t wdays;      /* 0..6, Sunday 0 */
    bool mday_restricted, wday_restricted;
    struct zoneinfo *zone;   /* cron: owned; NULL only for an interval */
    /* interval */
    int64_t interval_s, anchor_unix_s;
};

/* Parses a cron expression in zone tz (NULL means "UTC") into *out. Returns 0, or -1
 * with one line in err and *out left empty (nothing to free). On success the caller
 * owns *out and releases it with schedule_free. */
int schedule_parse_cron(const char *expr, const char *tz, struct schedule *out, char *err,
                        size_t err_cap);

/* An interval schedule of seconds anchored at anchor_unix_s. Returns 0, or -1 with one
 * line in err. Owns nothing, but schedule_free is harmless on it. */
int schedule_interval(int64_t seconds, int64_t anchor_unix_s, struct schedule *out,
                      char *err, size_t err_cap);

void schedule_free(struct schedule *s);

/* The first fire instant strictly after after_unix_s, into *next. Returns 0 when
 * found (always, for a cron expression parsing accepted: see SCHEDULE_SEARCH_DAYS;
 * the search skips the months the expression leaves out); 1 when none was found
 * within SCHEDULE_SEARCH_DAYS (the caller shows "never"; *next untouched); -1 if
 * after_unix_s is outside the supported range (years 1900..9000) or the arithmetic
 * would overflow. */
int schedule_next(const struct schedule *s, int64_t after_unix_s, int64_t *next);

#endif
