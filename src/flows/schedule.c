/* Cron and interval schedules: parsing and the next fire instant (flows/schedule.h). */
#include "flows/schedule.h"

#include "base/error_line.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Years 1900..9000: far inside int64 arithmetic and the calendar helpers. */
#define AFTER_MIN (-2208988800LL)
#define AFTER_MAX (221845392000LL)

struct cron_field {
    const char *name;
    unsigned min, max;
    const char *const *names; /* NULL or names for min.. in order */
};

static const char *const MONTH_NAMES[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                          "JUL", "AUG", "SEP", "OCT", "NOV", "DEC", NULL};
static const char *const WEEKDAY_NAMES[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT",
                                            NULL};

static const struct cron_field FIELDS[5] = {
    {"minute", 0, 59, NULL},
    {"hour", 0, 23, NULL},
    {"day-of-month", 1, 31, NULL},
    {"month", 1, 12, MONTH_NAMES},
    {"day-of-week", 0, 7, WEEKDAY_NAMES},
};

/* One value: 1-2 digits, or (month and weekday fields) a three-letter name. Returns the
 * length consumed, or 0 if none. */
static size_t parse_value(const struct cron_field *f, const char *s, size_t len,
                          unsigned *out) {
    if (len >= 1 && s[0] >= '0' && s[0] <= '9') {
        size_t n = 1;
        unsigned v = (unsigned)(s[0] - '0');
        if (len >= 2 && s[1] >= '0' && s[1] <= '9') {
            v = v * 10 + (unsigned)(s[1] - '0');
            n = 2;
        }
        if (n < len && s[n] >= '0' && s[n] <= '9') return 0; /* three digits */
        *out = v;
        return n;
    }
    if (f->names && len >= 3) {
        for (unsigned i = 0; f->names[i]; i++) {
            if (strncasecmp(s, f->names[i], 3) == 0) {
                *out = f->min + i;
                return 3;
            }
        }
    }
    return 0;
}

/* Parses one field's text [s, s+len) into a bit set. */
static int parse_field(const struct cron_field *f, const char *s, size_t len, uint64_t *bits,
                       char *err, size_t err_cap) {
    *bits = 0;
    int shown = (int)len;
    size_t i = 0;
    for (;;) {
        size_t item_end = i;
        while (item_end < len && s[item_end] != ',') item_end++;
        const char *item = s + i;
        size_t item_len = item_end - i;
        if (item_len == 0)
            return error_line(err, err_cap, "cron: %s field '%.*s': empty list entry", f->name,
                              shown, s);
        unsigned lo, hi, step = 1;
        size_t k;
        if (item[0] == '*') {
            lo = f->min;
            hi = f->max;
            k = 1;
        } else {
            k = parse_value(f, item, item_len, &lo);
            if (k == 0)
                return error_line(err, err_cap,
                                  "cron: %s field '%.*s': expected a number%s, '*' or a list",
                                  f->name, shown, s, f->names ? " or name" : "");
            hi = lo;
            if (k < item_len && item[k] == '-') {
                size_t k2 = parse_value(f, item + k + 1, item_len - k - 1, &hi);
                if (k2 == 0)
                    return error_line(err, err_cap,
                                      "cron: %s field '%.*s': range needs an end value",
                                      f->name, shown, s);
                k += 1 + k2;
            }
            if (lo < f->min || lo > f->max || hi < f->min || hi > f->max)
                return error_line(err, err_cap, "cron: %s field '%.*s': out of range %u-%u",
                                  f->name, shown, s, f->min, f->max);
            if (lo > hi)
                return error_line(err, err_cap,
                                  "cron: %s field '%.*s': range start %u is after its end %u",
                                  f->name, shown, s, lo, hi);
        }
        if (k < item_len && item[k] == '/') {
            size_t k2 = 0;
            const char *st = item + k + 1;
            size_t st_len = item_len - k - 1;
            if (st_len >= 1 && st[0] >= '0' && st[0] <= '9') {
                step = (unsigned)(st[0] - '0');
                k2 = 1;
                if (st_len >= 2 && st[1] >= '0' && st[1] <= '9') {
                    step = step * 10 + (unsigned)(st[1] - '0');
                    k2 = 2;
                }
            }
            if (k2 == 0 || k2 != st_len || step < 1 || step > f->max)
                return error_line(err, err_cap, "cron: %s field '%.*s': step must be 1-%u",
                                  f->name, shown, s, f->max);
            if (item[0] != '*' && lo == hi && memchr(item, '-', k) == NULL)
                return error_line(err, err_cap,
                                  "cron: %s field '%.*s': a step needs '*' or a range", f->name,
                                  shown, s);
            k += 1 + k2;
        }
        if (k != item_len)
            return error_line(err, err_cap, "cron: %s field '%.*s': unexpected '%c'", f->name,
                              shown, s, item[k]);
        for (unsigned v = lo; v <= hi; v += step) *bits |= 1ULL << v;
        if (item_end == len) break;
        i = item_end + 1;
    }
    return 0;
}

static bool cron_day_matches(const struct schedule *s, unsigned mday, unsigned wday) {
    bool m = (s->mdays >> mday) & 1U;
    bool w = (s->wdays >> wday) & 1U;
    if (s->mday_restricted && s->wday_restricted) return m || w;
    return m && w;
}

int schedule_parse_cron(const char *expr, const char *tz, struct schedule *out, char *err,
                        size_t err_cap) {
    memset(out, 0, sizeof *out);
    size_t len = strnlen(expr, SCHEDULE_CRON_MAX + 1);
    if (len > SCHEDULE_CRON_MAX)
        return error_line(err, err_cap, "cron: longer than %d bytes", SCHEDULE_CRON_MAX);
    const char *starts[5];
    size_t lens[5];
    size_t n = 0, pos = 0;
    bool shape_ok = len > 0;
    while (shape_ok && pos < len) {
        size_t e = pos;
        while (e < len && expr[e] != ' ') e++;
        /* an empty field is a leading, trailing or doubled space */
        if (e == pos || n == 5 || (e < len && e + 1 == len)) {
            shape_ok = false;
            break;
        }
        starts[n] = expr + pos;
        lens[n] = e - pos;
        n++;
        pos = e < len ? e + 1 : e;
    }
    if (!shape_ok || n != 5)
        return error_line(err, err_cap,
                          "cron: '%s': needs five fields separated by single spaces "
                          "(minute hour day-of-month month day-of-week)",
                          expr);
    uint64_t bits[5];
    for (size_t i = 0; i < 5; i++)
        if (parse_field(&FIELDS[i], starts[i], lens[i], &bits[i], err, err_cap) != 0)
            return -1;
    struct schedule s = {.kind = SCHEDULE_CRON};
    s.minutes = bits[0];
    s.hours = (uint32_t)bits[1];
    s.mdays = (uint32_t)bits[2];
    s.months = (uint16_t)bits[3];
    s.wdays = (uint8_t)((bits[4] | (bits[4] >> 7)) & 0x7f); /* 7 is Sunday too */
    s.mday_restricted = starts[2][0] != '*';
    s.wday_restricted = starts[4][0] != '*';
    if (s.mday_restricted && !s.wday_restricted) {
        /* Only the day of month decides: refuse a date that never exists (30 Feb). 2000
         * is a leap year, so 29 Feb counts as existing. */
        bool possible = false;
        for (unsigned m = 1; m <= 12 && !possible; m++)
            if ((s.months >> m) & 1U)
                for (unsigned d = 1; d <= zoneinfo_month_days(2000, m); d++)
                    if ((s.mdays >> d) & 1U) possible = true;
        if (!possible)
            return error_line(err, err_cap,
                              "cron: day-of-month field '%.*s': never occurs in month field "
                              "'%.*s'",
                              (int)lens[2], starts[2], (int)lens[3], starts[3]);
    }
    if (zoneinfo_load(tz ? tz : "UTC", &s.zone, err, err_cap) != 0) return -1;
    *out = s;
    return 0;
}

int schedule_interval(int64_t seconds, int64_t anchor_unix_s, struct schedule *out, char *err,
                      size_t err_cap) {
    memset(out, 0, sizeof *out);
    if (seconds < 1 || seconds > SCHEDULE_INTERVAL_MAX_S)
        return error_line(err, err_cap, "interval: %lld s: out of range 1-%lld s",
                          (long long)seconds, (long long)SCHEDULE_INTERVAL_MAX_S);
    if (anchor_unix_s < AFTER_MIN || anchor_unix_s > AFTER_MAX)
        return error_line(err, err_cap, "interval: anchor %lld: outside years 1900-9000",
                          (long long)anchor_unix_s);
    out->kind = SCHEDULE_INTERVAL;
    out->interval_s = seconds;
    out->anchor_unix_s = anchor_unix_s;
    return 0;
}

void schedule_free(struct schedule *s) {
    if (!s) return;
    zoneinfo_free(s->zone);
    s->zone = NULL;
}

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* The wall clock at instant t. */
static int64_t wall(const struct zoneinfo *z, int64_t t) { return t + zoneinfo_offset(z, t); }

/* The first instant at which the wall clock reaches local time L: its only occurrence,
 * its first occurrence in an overlap, or (L inside a gap) the instant the gap ends.
 * Returns 0, or -1 if the zone's offsets around L are too irregular to resolve (more
 * than one transition within two days). */
static int first_instant_reaching(const struct zoneinfo *z, int64_t L, int64_t *out) {
    const int64_t two_days = 2LL * 86400;
    const int32_t offsets[3] = {zoneinfo_offset(z, L - two_days), zoneinfo_offset(z, L),
                                zoneinfo_offset(z, L + two_days)};
    bool found = false;
    int64_t best = 0;
    for (int i = 0; i < 3; i++) {
        int64_t t = L - offsets[i];
        if (zoneinfo_offset(z, t) == offsets[i] && (!found || t < best)) {
            best = t;
            found = true;
        }
    }
    if (found) {
        *out = best;
        return 0;
    }
    /* A gap: the wall clock jumps over L between lo and hi; find the jump. */
    int32_t omin = offsets[0], omax = offsets[0];
    for (int i = 1; i < 3; i++) {
        if (offsets[i] < omin) omin = offsets[i];
        if (offsets[i] > omax) omax = offsets[i];
    }
    int64_t lo = L - omax, hi = L - omin;
    if (wall(z, lo) >= L || wall(z, hi) < L) return -1;
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (wall(z, mid) >= L)
            hi = mid;
        else
            lo = mid;
    }
    *out = hi;
    return 0;
}

static int cron_next(const struct schedule *s, int64_t after, int64_t *next) {
    /* A local time L fires at the first instant the wall clock reaches it, so only
     * L > wall(after) can fire after `after`; such an L can still have been reached
     * before `after` (a repeated hour), hence the check on each candidate. The instant
     * grows with L, so the first candidate past `after` is the answer. */
    int64_t first_local = floor_div(wall(s->zone, after), 60) * 60 + 60;
    int64_t first_day = floor_div(first_local, 86400);
    for (int64_t d = first_day; d <= first_day + SCHEDULE_SEARCH_DAYS; d++) {
        int64_t year;
        unsigned month, mday;
        zoneinfo_civil_from_days(d, &year, &month, &mday);
        if (!((s->months >> month) & 1U)) {
            d += zoneinfo_month_days(year, month) - mday; /* to the month's last day */
            continue;
        }
        if (!cron_day_matches(s, mday, zoneinfo_weekday(d)))
            continue;
        for (unsigned h = 0; h < 24; h++) {
            if (!((s->hours >> h) & 1U)) continue;
            for (unsigned m = 0; m < 60; m++) {
                if (!((s->minutes >> m) & 1ULL)) continue;
                int64_t L = d * 86400 + (int64_t)h * 3600 + (int64_t)m * 60;
                if (L < first_local) continue;
                int64_t t;
                if (first_instant_reaching(s->zone, L, &t) != 0) return -1;
                if (t > after) {
                    *next = t;
                    return 0;
                }
            }
        }
    }
    return 1;
}

int schedule_next(const struct schedule *s, int64_t after_unix_s, int64_t *next) {
    if (after_unix_s < AFTER_MIN || after_unix_s > AFTER_MAX) return -1;
    if (s->kind == SCHEDULE_INTERVAL) {
        if (s->interval_s < 1) return -1;
        int64_t k = after_unix_s < s->anchor_unix_s
                        ? 1
                        : (after_unix_s - s->anchor_unix_s) / s->interval_s + 1;
        int64_t fire;
        if (__builtin_mul_overflow(k, s->interval_s, &fire) ||
            __builtin_add_overflow(fire, s->anchor_unix_s, &fire))
            return -1;
        *next = fire;
        return 0;
    }
    if (s->kind != SCHEDULE_CRON || !s->zone) return -1;
    return cron_next(s, after_unix_s, next);
}
