/* Schedule math (src/flows/schedule.c, src/flows/zoneinfo.c): cron and interval next
 * fire instants across time zones and every DST gap and overlap of 2026 in
 * America/New_York, Europe/Berlin and Australia/Lord_Howe (a 30-minute shift), plus
 * Asia/Kathmandu (+05:45) and UTC.
 *
 * Each table case is (expr, zone, after, expected next). The expected instant is
 * checked three ways: the table, the C module, and an independent brute force in
 * Python's zoneinfo (tests/tools/schedule_oracle.py run by /usr/bin/python3, which walks
 * UTC minutes and fires a local time when the wall clock first reaches it). A case
 * passes only when all three agree. The DST rules proven ([guard: ...] in the names):
 * a gap time fires once at the first instant after the gap; an overlap time fires once,
 * at its first occurrence; with both day fields restricted either one matches.
 *
 * The search reaches every accepted expression: its horizon is the longest wait any
 * can have (Python recomputes it over a 400-year cycle), and through ck-basal, without
 * a serve, `flow schedule` lists fires decades apart (29 Feb on a Sunday: 2032, 2060,
 * 2088, 2128) exactly as the oracle walks to them, while `flow list` shows the same
 * first fire, never one already passed. */
#include "lib/harness.h"
#include "lib/serve_home.h"
#include "lib/store_view.h"

#include "flows/schedule.h"
#include "flows/zoneinfo.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct cron_case {
    const char *expr, *zone, *after, *expected, *what;
};

/* Local time of each expected instant in the comment. */
static const struct cron_case CASES[] = {
    {"*/15 * * * *", "UTC", "2026-01-01T00:00:00Z", "2026-01-01T00:15:00Z", "every 15 minutes"}, /* Thu 2026-01-01 00:15 +0000 */
    {"0 0 1 1 *", "UTC", "2026-06-15T12:00:00Z", "2027-01-01T00:00:00Z", "new year"}, /* Fri 2027-01-01 00:00 +0000 */
    {"0 0 29 2 *", "UTC", "2027-03-01T00:00:00Z", "2028-02-29T00:00:00Z", "29 Feb waits for the leap year"}, /* Tue 2028-02-29 00:00 +0000 */
    {"30 12 * * MON-FRI", "UTC", "2026-01-02T13:00:00Z", "2026-01-05T12:30:00Z", "weekday names skip the weekend"}, /* Mon 2026-01-05 12:30 +0000 */
    {"0 9 1,15 * MON", "UTC", "2026-01-02T00:00:00Z", "2026-01-05T09:00:00Z", "either rule: Monday before the 15th"}, /* Mon 2026-01-05 09:00 +0000 */
    {"0 9 13 * FRI", "UTC", "2026-02-01T00:00:00Z", "2026-02-06T09:00:00Z", "either rule: Friday before the 13th"}, /* Fri 2026-02-06 09:00 +0000 */
    {"0 9 */10 * *", "UTC", "2026-01-21T09:00:00Z", "2026-01-31T09:00:00Z", "day step 1,11,21,31"}, /* Sat 2026-01-31 09:00 +0000 */
    {"0 0 * * 7", "UTC", "2026-01-01T00:00:00Z", "2026-01-04T00:00:00Z", "7 is Sunday"}, /* Sun 2026-01-04 00:00 +0000 */
    {"0 0 * * 0", "UTC", "2026-01-01T00:00:00Z", "2026-01-04T00:00:00Z", "0 is Sunday"}, /* Sun 2026-01-04 00:00 +0000 */
    {"5 4 * jan,Jul sun", "UTC", "2026-02-01T00:00:00Z", "2026-07-05T04:05:00Z", "lower/mixed case names"}, /* Sun 2026-07-05 04:05 +0000 */
    {"1-10/2 * * * *", "UTC", "2026-01-01T12:03:00Z", "2026-01-01T12:05:00Z", "range with step"}, /* Thu 2026-01-01 12:05 +0000 */
    {"59 23 31 12 *", "UTC", "2026-12-31T23:59:00Z", "2027-12-31T23:59:00Z", "strictly after: a year later"}, /* Fri 2027-12-31 23:59 +0000 */
    {"* * * * *", "UTC", "2026-01-01T00:00:30Z", "2026-01-01T00:01:00Z", "mid-minute after"}, /* Thu 2026-01-01 00:01 +0000 */
    {"0 12 * * *", "UTC", "2026-01-01T12:00:00Z", "2026-01-02T12:00:00Z", "exactly at a fire: the next day"}, /* Fri 2026-01-02 12:00 +0000 */
    {"0 0 * * SAT,sun", "UTC", "2026-01-01T00:00:00Z", "2026-01-03T00:00:00Z", "weekend list"}, /* Sat 2026-01-03 00:00 +0000 */
    {"0 0 * * 5-7", "UTC", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "7 ends a weekday range as Sunday"}, /* Sun 2026-01-04 00:00 +0000 */
    {"0 9 */2 * MON", "UTC", "2026-01-01T00:00:00Z", "2026-01-05T09:00:00Z", "day field starting with '*': both must match"}, /* Mon 2026-01-05 09:00 +0000 */
    {"0-5 0 * * *", "UTC", "2026-01-01T00:05:00Z", "2026-01-02T00:00:00Z", "end of a range: the next day"}, /* Fri 2026-01-02 00:00 +0000 */
    {"30 2 * * *", "America/New_York", "2026-03-08T05:00:00Z", "2026-03-08T07:00:00Z", "gap: 02:30 fires at 03:00 EDT"}, /* Sun 2026-03-08 03:00 -0400 */
    {"30 2 * * *", "America/New_York", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z", "after the gap fire: next day 02:30 EDT"}, /* Mon 2026-03-09 02:30 -0400 */
    {"*/15 * * * *", "America/New_York", "2026-03-08T06:45:00Z", "2026-03-08T07:00:00Z", "gap minutes collapse into one fire"}, /* Sun 2026-03-08 03:00 -0400 */
    {"*/15 * * * *", "America/New_York", "2026-03-08T07:00:00Z", "2026-03-08T07:15:00Z", "after the collapsed fire: 03:15 EDT"}, /* Sun 2026-03-08 03:15 -0400 */
    {"0 2 * * *", "America/New_York", "2026-03-08T05:00:00Z", "2026-03-08T07:00:00Z", "gap start 02:00 fires at 03:00"}, /* Sun 2026-03-08 03:00 -0400 */
    {"0 3 * * *", "America/New_York", "2026-03-08T05:00:00Z", "2026-03-08T07:00:00Z", "03:00 EDT itself"}, /* Sun 2026-03-08 03:00 -0400 */
    {"59 1 * * *", "America/New_York", "2026-03-08T05:00:00Z", "2026-03-08T06:59:00Z", "last minute before the gap"}, /* Sun 2026-03-08 01:59 -0500 */
    {"30 1 * * *", "America/New_York", "2026-11-01T04:00:00Z", "2026-11-01T05:30:00Z", "overlap: first occurrence (EDT)"}, /* Sun 2026-11-01 01:30 -0400 */
    {"30 1 * * *", "America/New_York", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z", "overlap: second occurrence skipped"}, /* Mon 2026-11-02 01:30 -0500 */
    {"*/20 * * * *", "America/New_York", "2026-11-01T05:40:00Z", "2026-11-01T07:00:00Z", "repeated hour does not fire again"}, /* Sun 2026-11-01 02:00 -0500 */
    {"*/20 * * * *", "America/New_York", "2026-11-01T06:10:00Z", "2026-11-01T07:00:00Z", "inside the repeated hour: next is 02:00 EST"}, /* Sun 2026-11-01 02:00 -0500 */
    {"0 1 * * *", "America/New_York", "2026-11-01T05:00:00Z", "2026-11-02T06:00:00Z", "01:00 fired at EDT: not again at EST"}, /* Mon 2026-11-02 01:00 -0500 */
    {"0 9 * * 1-5", "America/New_York", "2026-06-05T14:00:00Z", "2026-06-08T13:00:00Z", "Friday to Monday"}, /* Mon 2026-06-08 09:00 -0400 */
    {"0 0 * * *", "America/New_York", "2026-10-31T05:00:00Z", "2026-11-01T04:00:00Z", "midnight before the fall-back"}, /* Sun 2026-11-01 00:00 -0400 */
    {"0 12 * * *", "America/New_York", "2026-11-01T04:00:00Z", "2026-11-01T17:00:00Z", "noon after the fall-back (EST)"}, /* Sun 2026-11-01 12:00 -0500 */
    {"0 0 1 * SUN", "America/New_York", "2026-02-02T00:00:00Z", "2026-02-08T05:00:00Z", "either rule: Sunday first"}, /* Sun 2026-02-08 00:00 -0500 */
    {"0 1-3 * * *", "America/New_York", "2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z", "hour range across fall-back: 01:00 EDT"}, /* Sun 2026-11-01 01:00 -0400 */
    {"0 1-3 * * *", "America/New_York", "2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z", "hour range across fall-back: 02:00 EST"}, /* Sun 2026-11-01 02:00 -0500 */
    {"0 1-3 * * *", "America/New_York", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z", "hour range across fall-back: 03:00 EST"}, /* Sun 2026-11-01 03:00 -0500 */
    {"0 2 8 3 *", "America/New_York", "2026-03-08T07:00:00Z", "2027-03-08T07:00:00Z", "next year's 8 Mar is before DST"}, /* Mon 2027-03-08 02:00 -0500 */
    {"30 2 * * *", "Europe/Berlin", "2026-03-28T23:00:00Z", "2026-03-29T01:00:00Z", "gap: 02:30 fires at 03:00 CEST"}, /* Sun 2026-03-29 03:00 +0200 */
    {"0 2 29 3 *", "Europe/Berlin", "2026-03-01T00:00:00Z", "2026-03-29T01:00:00Z", "a date-specific gap time"}, /* Sun 2026-03-29 03:00 +0200 */
    {"* 2 * * *", "Europe/Berlin", "2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "a whole gap hour: one fire"}, /* Sun 2026-03-29 03:00 +0200 */
    {"* 2 * * *", "Europe/Berlin", "2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", "after the gap: next day 02:00 CEST"}, /* Mon 2026-03-30 02:00 +0200 */
    {"45 1 * * *", "Europe/Berlin", "2026-03-29T00:00:00Z", "2026-03-29T00:45:00Z", "before the gap"}, /* Sun 2026-03-29 01:45 +0100 */
    {"59 2 * * *", "Europe/Berlin", "2026-03-29T00:59:00Z", "2026-03-29T01:00:00Z", "gap end minute"}, /* Sun 2026-03-29 03:00 +0200 */
    {"30 2 * * *", "Europe/Berlin", "2026-10-24T22:00:00Z", "2026-10-25T00:30:00Z", "overlap: first occurrence (CEST)"}, /* Sun 2026-10-25 02:30 +0200 */
    {"30 2 * * *", "Europe/Berlin", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z", "overlap: second occurrence skipped"}, /* Mon 2026-10-26 02:30 +0100 */
    {"0,30 2 * * SUN", "Europe/Berlin", "2026-10-25T00:15:00Z", "2026-10-25T00:30:00Z", "overlap: 02:30 CEST"}, /* Sun 2026-10-25 02:30 +0200 */
    {"0,30 2 * * SUN", "Europe/Berlin", "2026-10-25T00:30:00Z", "2026-11-01T01:00:00Z", "overlap: CET repeats skipped, next Sunday"}, /* Sun 2026-11-01 02:00 +0100 */
    {"0 3 * * *", "Europe/Berlin", "2026-10-25T00:30:00Z", "2026-10-25T02:00:00Z", "03:00 CET after the overlap"}, /* Sun 2026-10-25 03:00 +0100 */
    {"15 10 * * mon-fri", "Europe/Berlin", "2026-07-03T09:00:00Z", "2026-07-06T08:15:00Z", "Friday to Monday in summer"}, /* Mon 2026-07-06 10:15 +0200 */
    {"0 0 1 * *", "Europe/Berlin", "2026-03-15T00:00:00Z", "2026-03-31T22:00:00Z", "first of the month in CEST"}, /* Wed 2026-04-01 00:00 +0200 */
    {"0 12 31 * *", "Europe/Berlin", "2026-04-01T00:00:00Z", "2026-05-31T10:00:00Z", "31st skips April"}, /* Sun 2026-05-31 12:00 +0200 */
    {"45 1 * * *", "Australia/Lord_Howe", "2026-04-04T13:00:00Z", "2026-04-04T14:45:00Z", "overlap (30 min): first occurrence +11"}, /* Sun 2026-04-05 01:45 +1100 */
    {"45 1 * * *", "Australia/Lord_Howe", "2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z", "overlap: +10:30 repeat skipped"}, /* Mon 2026-04-06 01:45 +1030 */
    {"*/10 * * * *", "Australia/Lord_Howe", "2026-04-04T14:55:00Z", "2026-04-04T15:30:00Z", "repeated half hour does not fire"}, /* Sun 2026-04-05 02:00 +1030 */
    {"0 2 * * *", "Australia/Lord_Howe", "2026-04-04T13:00:00Z", "2026-04-04T15:30:00Z", "02:00 only once, after the overlap"}, /* Sun 2026-04-05 02:00 +1030 */
    {"30 1 * * *", "Australia/Lord_Howe", "2026-04-04T14:00:00Z", "2026-04-04T14:30:00Z", "overlap start 01:30 +11"}, /* Sun 2026-04-05 01:30 +1100 */
    {"30 1 * * *", "Australia/Lord_Howe", "2026-04-04T14:30:00Z", "2026-04-05T15:00:00Z", "overlap start repeated: next day"}, /* Mon 2026-04-06 01:30 +1030 */
    {"15 2 * * *", "Australia/Lord_Howe", "2026-10-03T13:30:00Z", "2026-10-03T15:30:00Z", "gap (30 min): 02:15 fires at 02:30 +11"}, /* Sun 2026-10-04 02:30 +1100 */
    {"0,15,30,45 2 * * *", "Australia/Lord_Howe", "2026-10-03T15:00:00Z", "2026-10-03T15:30:00Z", "gap minutes collapse"}, /* Sun 2026-10-04 02:30 +1100 */
    {"0,15,30,45 2 * * *", "Australia/Lord_Howe", "2026-10-03T15:30:00Z", "2026-10-03T15:45:00Z", "after the gap: 02:45 +11"}, /* Sun 2026-10-04 02:45 +1100 */
    {"59 1 * * *", "Australia/Lord_Howe", "2026-10-03T13:30:00Z", "2026-10-03T15:29:00Z", "last minute before the gap"}, /* Sun 2026-10-04 01:59 +1030 */
    {"30 2 4 10 *", "Australia/Lord_Howe", "2026-10-01T00:00:00Z", "2026-10-03T15:30:00Z", "02:30 is the gap end itself"}, /* Sun 2026-10-04 02:30 +1100 */
    {"0 12 * * *", "Australia/Lord_Howe", "2026-06-01T00:00:00Z", "2026-06-01T01:30:00Z", "winter noon +10:30"}, /* Mon 2026-06-01 12:00 +1030 */
    {"0 0 * * *", "Asia/Kathmandu", "2026-01-01T00:00:00Z", "2026-01-01T18:15:00Z", "midnight +05:45"}, /* Fri 2026-01-02 00:00 +0545 */
    {"30 9 * * 1-5", "Asia/Kathmandu", "2026-01-02T04:00:00Z", "2026-01-05T03:45:00Z", "Friday to Monday +05:45"}, /* Mon 2026-01-05 09:30 +0545 */
    {"*/15 * * * *", "Asia/Kathmandu", "2026-05-05T10:00:00Z", "2026-05-05T10:15:00Z", "quarter hours at +05:45"}, /* Tue 2026-05-05 16:00 +0545 */
    {"0 6 1 jan *", "Asia/Kathmandu", "2026-01-01T00:00:00Z", "2026-01-01T00:15:00Z", "new year morning"}, /* Thu 2026-01-01 06:00 +0545 */
    {"0 * * * *", "Asia/Kathmandu", "2026-05-05T10:16:00Z", "2026-05-05T11:15:00Z", "local full hours are :15 UTC"}, /* Tue 2026-05-05 17:00 +0545 */
    /* A day field starting with '*': both must match, years apart. */
    {"0 0 */7 10 SUN", "UTC", "2028-10-29T00:00:00Z", "2034-10-01T00:00:00Z", "1 Oct on a Sunday, six years on"}, /* Sun 2034-10-01 00:00 +0000 */
    {"0 0 */7 10 SUN", "UTC", "2034-10-29T00:00:00Z", "2045-10-01T00:00:00Z", "1 Oct on a Sunday, eleven years on"}, /* Sun 2045-10-01 00:00 +0000 */
    {"0 0 29 2 */7", "UTC", "2032-02-29T00:00:00Z", "2060-02-29T00:00:00Z", "29 Feb on a Sunday, 28 years on"}, /* Sun 2060-02-29 00:00 +0000 */
    {"0 0 29 2 */7", "America/New_York", "2088-02-29T05:00:00Z", "2128-02-29T05:00:00Z", "29 Feb on a Sunday across 2100: the longest wait"}, /* Sun 2128-02-29 00:00 -0500 */
    {"0 0 */7 11 SUN", "America/New_York", "2026-12-03T00:00:00Z", "2037-11-01T04:00:00Z", "1 Nov on a Sunday in New York"}, /* Sun 2037-11-01 00:00 -0400 */
};

#define CASE_COUNT (sizeof CASES / sizeof CASES[0])

static int64_t utc(const char *iso) {
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (end == NULL || *end != '\0') {
        fail("table timestamp parses", "'%s'", iso);
        return 0;
    }
    return (int64_t)timegm(&tm);
}

static int64_t c_next(const struct cron_case *c, char *err, size_t err_cap) {
    struct schedule s;
    if (schedule_parse_cron(c->expr, c->zone, &s, err, err_cap) != 0) return -1;
    int64_t next = -1;
    int rc = schedule_next(&s, utc(c->after), &next);
    schedule_free(&s);
    if (rc != 0) {
        snprintf(err, err_cap, "schedule_next returned %d", rc);
        return -1;
    }
    return next;
}

/* The Python oracle's output for input (its lines, see the script); NULL (a failed
 * check named what) if it did not run. */
static char *oracle_answer(const char *input, const char *what) {
    const char *argv[] = {"/usr/bin/python3", harness_path("../tests/tools/schedule_oracle.py"),
                          NULL};
    struct proc_result r = proc_run(argv, input, strlen(input), 600000);
    char name[160];
    snprintf(name, sizeof name, "python zoneinfo oracle runs over %s", what);
    char *out = check(proc_exited_with(&r, 0), name, "%s %s", proc_describe(&r), r.err)
                    ? strdup(r.out)
                    : NULL;
    proc_result_free(&r);
    return out;
}

/* Runs the Python oracle over the whole table; fills oracle[i] (or -1). */
static bool run_oracle(int64_t *oracle) {
    size_t cap = CASE_COUNT * 200, len = 0;
    char *input = malloc(cap);
    if (!input) return false;
    for (size_t i = 0; i < CASE_COUNT; i++)
        len += (size_t)snprintf(input + len, cap - len, "%s\t%s\t%lld\n", CASES[i].expr,
                                CASES[i].zone, (long long)utc(CASES[i].after));
    char *out = oracle_answer(input, "the table");
    free(input);
    bool ok = out != NULL;
    const char *at = out;
    for (size_t i = 0; i < CASE_COUNT; i++) {
        oracle[i] = -1;
        if (!ok || !at || !*at) continue;
        char *end = NULL;
        long long v = strtoll(at, &end, 10);
        if (end != at && *end == '\n') oracle[i] = v;
        at = strchr(at, '\n');
        if (at) at++;
    }
    free(out);
    return ok;
}

static void check_table(void) {
    check(CASE_COUNT >= 60, "table has at least 60 cases", "%zu", CASE_COUNT);
    static int64_t oracle[CASE_COUNT];
    run_oracle(oracle);
    for (size_t i = 0; i < CASE_COUNT; i++) {
        const struct cron_case *c = &CASES[i];
        char err[256] = "";
        int64_t want = utc(c->expected);
        int64_t got = c_next(c, err, sizeof err);
        char name[320];
        snprintf(name, sizeof name, "cron '%s' %s after %s -> %s (%s) [guard: table = C = python]",
                 c->expr, c->zone, c->after, c->expected, c->what);
        check(got == want && oracle[i] == want, name, "table %lld, C %lld%s%s, python %lld",
              (long long)want, (long long)got, err[0] ? " " : "", err, (long long)oracle[i]);
    }
}

static void check_refusal(const char *expr, const char *tz, const char *want_err) {
    struct schedule s;
    char err[256] = "";
    int rc = schedule_parse_cron(expr, tz, &s, err, sizeof err);
    char name[256];
    snprintf(name, sizeof name, "refused: cron '%s' tz '%s'", expr, tz ? tz : "(default)");
    check(rc == -1 && strcmp(err, want_err) == 0 && strchr(err, '\n') == NULL, name,
          "rc %d, err '%s', want '%s'", rc, err, want_err);
    if (rc == 0) schedule_free(&s);
}

static void check_refusals(void) {
    check_refusal("61 * * * *", NULL, "cron: minute field '61': out of range 0-59");
    check_refusal("* 24 * * *", NULL, "cron: hour field '24': out of range 0-23");
    check_refusal("* * 0 * *", NULL, "cron: day-of-month field '0': out of range 1-31");
    check_refusal("* * * 13 *", NULL, "cron: month field '13': out of range 1-12");
    check_refusal("* * * * 8", NULL, "cron: day-of-week field '8': out of range 0-7");
    check_refusal("* * * FOO *", NULL,
                  "cron: month field 'FOO': expected a number or name, '*' or a list");
    check_refusal("* * * * MON-FOO", NULL,
                  "cron: day-of-week field 'MON-FOO': range needs an end value");
    check_refusal("*/0 * * * *", NULL, "cron: minute field '*/0': step must be 1-59");
    check_refusal("*/60 * * * *", NULL, "cron: minute field '*/60': step must be 1-59");
    check_refusal("5/15 * * * *", NULL, "cron: minute field '5/15': a step needs '*' or a range");
    check_refusal("10-5 * * * *", NULL,
                  "cron: minute field '10-5': range start 10 is after its end 5");
    check_refusal("1,,2 * * * *", NULL, "cron: minute field '1,,2': empty list entry");
    check_refusal("100 * * * *", NULL,
                  "cron: minute field '100': expected a number, '*' or a list");
    check_refusal("0 0 30 2 *", NULL,
                  "cron: day-of-month field '30': never occurs in month field '2'");
    check_refusal("0 0 31 4,6,9,11 *", NULL,
                  "cron: day-of-month field '31': never occurs in month field '4,6,9,11'");
    const char *bad_shapes[] = {"* * * *", "* * * * * *", " * * * * *", "* * * * * ", "*  * * * *",
                                ""};
    for (size_t i = 0; i < sizeof bad_shapes / sizeof bad_shapes[0]; i++) {
        char want[256];
        snprintf(want, sizeof want,
                 "cron: '%s': needs five fields separated by single spaces (minute hour "
                 "day-of-month month day-of-week)",
                 bad_shapes[i]);
        check_refusal(bad_shapes[i], NULL, want);
    }
    check_refusal("@daily * * * *", NULL,
                  "cron: minute field '@daily': expected a number, '*' or a list");
    /* zones */
    check_refusal("0 0 * * *", "Mars/Olympus",
                  "tz 'Mars/Olympus': unknown time zone (no such file in /usr/share/zoneinfo)");
    check_refusal("0 0 * * *", "../etc/passwd",
                  "tz '../etc/passwd': invalid time zone name (only A-Z a-z 0-9 _ + - /)");
    check_refusal("0 0 * * *", "/etc/localtime",
                  "tz '/etc/localtime': invalid time zone name (leading '/' or empty component)");
    check_refusal("0 0 * * *", "Europe//Berlin",
                  "tz 'Europe//Berlin': invalid time zone name (leading '/' or empty component)");
    check_refusal("0 0 * * *", "", "tz: empty time zone name");
    check_refusal("0 0 * * *", "Europe",
                  "tz 'Europe': unknown time zone (/usr/share/zoneinfo/Europe is not a zone file)");
    check_refusal("0 0 * * *", "right/UTC",
                  "tz 'right/UTC': unknown time zone (leap-second zones are not supported)");
    check_refusal("0 0 * * *", "Europe/Berlin x",
                  "tz 'Europe/Berlin x': invalid time zone name (only A-Z a-z 0-9 _ + - /)");
}

static void check_interval(void) {
    struct schedule s;
    char err[256] = "";
    int64_t anchor = utc("2026-03-08T06:30:00Z"), next = 0;
    if (!check(schedule_interval(3600, anchor, &s, err, sizeof err) == 0,
               "interval: 3600 s accepted", "%s", err))
        return;
    struct {
        int64_t after, want;
        const char *name;
    } cases[] = {
        {anchor, anchor + 3600, "interval: at the anchor -> one interval later"},
        {anchor - 86400, anchor + 3600, "interval: before the anchor -> the first fire anchor+1"},
        {anchor + 3599, anchor + 3600, "interval: just before a fire -> that fire"},
        {anchor + 3600, anchor + 7200, "interval: exactly at a fire -> strictly after"},
        {anchor + 10LL * 3600 + 1, anchor + 11LL * 3600,
         "interval: anchored k*interval, not rounded to the hour or shifted by DST"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        next = 0;
        int rc = schedule_next(&s, cases[i].after, &next);
        check(rc == 0 && next == cases[i].want, cases[i].name, "rc %d next %lld want %lld", rc,
              (long long)next, (long long)cases[i].want);
    }
    schedule_free(&s);
    check(schedule_interval(7, 1000, &s, err, sizeof err) == 0 &&
              schedule_next(&s, 1000 + 7 * 5 + 3, &next) == 0 && next == 1000 + 7 * 6,
          "interval: 7 s anchored at 1000", "next %lld", (long long)next);
    check(schedule_interval(0, 0, &s, err, sizeof err) == -1 &&
              strcmp(err, "interval: 0 s: out of range 1-158112000 s") == 0,
          "refused: interval 0", "%s", err);
    check(schedule_interval(-5, 0, &s, err, sizeof err) == -1 &&
              strcmp(err, "interval: -5 s: out of range 1-158112000 s") == 0,
          "refused: negative interval", "%s", err);
}

/* Cases the oracle would take too long to brute-force (years of minutes). */
static void check_long_horizon(void) {
    struct schedule s;
    char err[256] = "";
    int64_t next = 0;
    if (!check(schedule_parse_cron("0 0 29 2 *", "Europe/Berlin", &s, err, sizeof err) == 0,
               "29 Feb accepted", "%s", err))
        return;
    /* 2100 is not a leap year: after 29 Feb 2096 the next is 29 Feb 2104 (Berlin CET). */
    int rc = schedule_next(&s, utc("2096-03-01T00:00:00Z"), &next);
    check(rc == 0 && next == utc("2104-02-28T23:00:00Z"),
          "29 Feb after 2096 is 2104 (2100 is no leap year; search bound covers it)",
          "rc %d next %lld", rc, (long long)next);
    rc = schedule_next(&s, -5000000000LL, &next);
    check(rc == -1, "after outside years 1900-9000 refused", "rc %d", rc);
    schedule_free(&s);
    /* Past the last transition in the file, the POSIX footer decides (2040 in NY). */
    check(schedule_parse_cron("30 2 * * *", "America/New_York", &s, err, sizeof err) == 0,
          "New York parsed", "%s", err);
    rc = schedule_next(&s, utc("2040-03-11T05:00:00Z"), &next);
    check(rc == 0 && next == utc("2040-03-11T07:00:00Z"),
          "2040 gap from the TZ footer rule: 02:30 fires at 03:00 EDT", "rc %d next %lld", rc,
          (long long)next);
    schedule_free(&s);
    check(schedule_parse_cron("30 1 * * *", "America/New_York", &s, err, sizeof err) == 0,
          "New York parsed again", "%s", err);
    rc = schedule_next(&s, utc("2040-11-04T05:30:00Z"), &next);
    check(rc == 0 && next == utc("2040-11-05T06:30:00Z"),
          "2040 overlap from the TZ footer rule: 01:30 EST repeat skipped, next day",
          "rc %d next %lld", rc, (long long)next);
    schedule_free(&s);
}

/* The search horizon is the longest wait any accepted expression can have, as Python
 * computes it over a whole 400-year cycle: every (month, day, weekday) recurs within
 * it, and 29 Feb on a Sunday (an expression accepts no rarer day) waits exactly that. */
static void check_horizon(void) {
    char *out = oracle_answer("gaps\n", "the calendar's gaps");
    long long longest = 0, sundays = 0;
    char *end = out;
    if (out != NULL) {
        longest = strtoll(out, &end, 10);
        sundays = strtoll(end, &end, 10);
    }
    bool read = out != NULL && end != out && *end == '\n';
    check(read && longest == SCHEDULE_SEARCH_DAYS && sundays == SCHEDULE_SEARCH_DAYS,
          "the search horizon is the longest wait between two days of one (month, day,"
          " weekday), that of 29 Feb on a Sunday [guard: SCHEDULE_SEARCH_DAYS]",
          "python: %lld and %lld days, SCHEDULE_SEARCH_DAYS %d", longest, sundays,
          SCHEDULE_SEARCH_DAYS);
    free(out);
}

/* ---- through ck-basal: flow schedule and flow list ---------------------------------- */

static const char *FLOW_SCRIPT = "return 1;\n";

static const struct {
    const char *id, *cron, *zone;
    int count;
} LISTED[] = {
    {"oct", "0 0 */7 10 SUN", "UTC", 12},          /* 2028 x5, 2034 x5, 2045 ... */
    {"feb", "0 0 29 2 */7", "UTC", 4},             /* 2032, 2060, 2088, 2128 */
    {"nov", "0 0 */7 11 SUN", "America/New_York", 3},
    {"hourly", "0 * * * *", "UTC", 3},             /* approved two days ago */
};
#define LISTED_COUNT (sizeof LISTED / sizeof LISTED[0])

/* The oracle's next `count` fires of each flow after now_s, one line per flow. */
static char *oracle_from(int64_t now_s) {
    char input[2048];
    size_t len = 0;
    for (size_t i = 0; i < LISTED_COUNT; i++)
        len += (size_t)snprintf(input + len, sizeof input - len, "%s\t%s\t%lld\t%d\n",
                                LISTED[i].cron, LISTED[i].zone, (long long)now_s,
                                LISTED[i].count);
    return oracle_answer(input, "the listed flows");
}

/* Line i of text (static buffer). */
static const char *line_of(const char *text, size_t i) {
    static char buf[1024];
    buf[0] = '\0';
    for (const char *at = text; at != NULL && *at != '\0'; i--) {
        const char *end = strchr(at, '\n');
        size_t n = end != NULL ? (size_t)(end - at) : strlen(at);
        if (i == 0) {
            snprintf(buf, sizeof buf, "%.*s", (int)n, at);
            break;
        }
        at = end != NULL ? end + 1 : NULL;
    }
    return buf;
}

/* The unix instants of `flow schedule ID --count N --json`, space-separated. */
static void listed_fires(const struct test_home *h, size_t i, char *out, size_t cap) {
    char count[16];
    snprintf(count, sizeof count, "%d", LISTED[i].count);
    struct proc_result r =
        test_home_cli(h, true, ARGS("flow", "schedule", LISTED[i].id, "--count", count));
    json_t *o = cli_output_json(&r);
    size_t k;
    json_t *f;
    size_t len = 0;
    out[0] = '\0';
    json_array_foreach (json_object_get(o, "fires"), k, f) {
        if (len < cap)
            len += (size_t)snprintf(out + len, cap - len, "%s%lld", k > 0 ? " " : "",
                                    (long long)json_integer_value(json_object_get(f, "unix")));
    }
    if (!proc_exited_with(&r, 0))
        snprintf(out, cap, "(%s: %s)", proc_describe(&r), r.err);
    json_decref(o);
    proc_result_free(&r);
}

/* Without a serve, flow schedule and flow list show fires years apart exactly as
 * Python's zoneinfo finds them by walking days, and by one rule: a next fire already
 * passed (a flow approved two days ago, no serve since) is not shown; both go on from
 * now. */
static void check_listing(const char *root) {
    struct test_home h;
    test_home_begin(&h, root, "listing");
    bool made = true;
    for (size_t i = 0; i < LISTED_COUNT; i++) {
        char trigger[256];
        snprintf(trigger, sizeof trigger, "{\"schedule\":{\"cron\":\"%s\",\"tz\":\"%s\"}}",
                 LISTED[i].cron, LISTED[i].zone);
        made = made && test_home_flow(&h, LISTED[i].id, 1, trigger, FLOW_SCRIPT);
    }
    made = made && store_exec_changes(h.db, "UPDATE approvals SET approved_at = approved_at -"
                                            " 2 * 86400000 WHERE flow_id = 'hourly'") == 1;
    if (!check(made, "listing: four scheduled flows approved (one two days ago)", "%s", "no"))
        return;
    int64_t before = (int64_t)time(NULL);
    char got[LISTED_COUNT][512];
    for (size_t i = 0; i < LISTED_COUNT; i++)
        listed_fires(&h, i, got[i], sizeof got[i]);
    struct proc_result list = test_home_cli(&h, true, ARGS("flow", "list"));
    struct proc_result human = test_home_cli(&h, false, ARGS("flow", "schedule", "nov"));
    int64_t after = (int64_t)time(NULL);
    /* The hourly flow's next fire moves with the clock: the answer from either end. */
    char *want_before = oracle_from(before);
    char *want_after = after != before ? oracle_from(after) : NULL;
    json_t *flows = cli_output_json(&list);
    for (size_t i = 0; i < LISTED_COUNT; i++) {
        char want[1024];
        snprintf(want, sizeof want, "%s", line_of(want_before, i));
        if (want_after != NULL && strcmp(got[i], want) != 0)
            snprintf(want, sizeof want, "%s", line_of(want_after, i));
        char name[256];
        snprintf(name, sizeof name, "listing: flow schedule %s ('%s' %s) lists python's next %d"
                 " fires [guard: the next-fire search reaches every accepted expression]",
                 LISTED[i].id, LISTED[i].cron, LISTED[i].zone, LISTED[i].count);
        check(want_before != NULL && strcmp(got[i], want) == 0, name, "listed %s, python %s",
              got[i], want);
        long long next = -1;
        size_t k;
        json_t *f;
        json_array_foreach (flows, k, f)
            if (strcmp(json_string_value(json_object_get(f, "id")), LISTED[i].id) == 0)
                next = json_integer_value(json_object_get(json_object_get(f, "next_fire"), "unix"));
        snprintf(name, sizeof name, "listing: flow list shows %s's next fire as flow schedule's"
                 " first, after now [guard: one rule for both]", LISTED[i].id);
        check(next > before && next == strtoll(got[i], NULL, 10), name, "flow list %lld, flow"
              " schedule %s, now %lld", next, got[i], (long long)before);
    }
    /* The human listing names python's first fire of nov (2037), not "never". */
    time_t first = (time_t)strtoll(line_of(want_before, 2), NULL, 10);
    struct tm tm;
    char first_utc[40] = "(none)";
    if (want_before != NULL && gmtime_r(&first, &tm) != NULL)
        strftime(first_utc, sizeof first_utc, "%Y-%m-%dT%H:%M:%SZ", &tm);
    check(proc_exited_with(&human, 0) && strstr(human.out, first_utc) != NULL &&
              strstr(human.out, "never fires") == NULL,
          "listing: flow schedule nov (human) lists python's first fire, not 'never'",
          "want %s: %s", first_utc, human.out);
    json_decref(flows);
    free(want_before);
    free(want_after);
    proc_result_free(&list);
    proc_result_free(&human);
}

int main(void) {
    check_table();
    check_refusals();
    check_interval();
    check_long_horizon();
    check_horizon();
    const char *root = harness_tmpdir("schedule");
    if (root != NULL && require_binary(harness_test_parent(), "schedule: ck-basal"))
        check_listing(root);
    return harness_finish();
}
