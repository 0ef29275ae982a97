/* Schedules fire flows under serve (issue 12; serve/scheduler.h, docs/triggers.md),
 * driven through a downtime by the test clock (BASAL_TEST_CLOCK_MS and the ops command
 * test.clock, test builds only):
 *
 *   1. the test clock and the kill point exist in the test build and not in the release
 *      binary [guard: test-only clock absent from the release build];
 *   2. after ten minutes of downtime, "* * * * *" flows fire exactly: skip = the one
 *      on-time instant; once = one catch-up run for the last missed instant (naming
 *      since when) plus the on-time one; each with each_cap 3 = the last three missed
 *      plus the on-time one [guard: missed policies]; an instant 30 s late is on time
 *      [guard: the 60 s grace]; nothing fires before its instant;
 *   3. SIGKILL between a fire's admission and moving the schedule on, then a restart at
 *      the same instant: the admitted run is found again, nothing fires twice
 *      [guard: the trigger id names the instant];
 *   4. an interval counts from the approval; a disabled flow's schedule row goes and
 *      nothing fires for it; `flow schedule ID --count N` and `flow list` show the
 *      next fires in the flow's zone and in UTC.
 * The runs are counted in the store once test.clock has returned (it waits for a whole
 * look of the scheduler), never after a sleep. */
#include "lib/harness.h"
#include "lib/serve_home.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS SERVE_HOME_TIMEOUT_MS
#define EVERY_MINUTE_FLOW "return trigger;\n"

static char g_root[PATH_MAX];

static long long real_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void iso(long long unix_s, char out[32])
{
    time_t t = (time_t)unix_s;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static long long runs_of(const struct test_home *h, const char *flow)
{
    char sql[256];
    sfmt(sql, sizeof sql, "SELECT count(*) FROM runs WHERE flow_id = '%s'", flow);
    return test_home_sql(h, sql);
}

static bool has_run(const struct test_home *h, const char *flow, long long at_s)
{
    char sql[256], at[32];
    iso(at_s, at);
    sfmt(sql, sizeof sql,
         "SELECT count(*) FROM runs WHERE flow_id = '%s' AND trigger_id = 'schedule:%s'", flow,
         at);
    return test_home_sql(h, sql) == 1;
}

static long long next_fire_s(const struct test_home *h, const char *flow)
{
    char sql[256];
    sfmt(sql, sizeof sql, "SELECT next_fire / 1000 FROM schedules WHERE flow_id = '%s'", flow);
    return test_home_sql(h, sql);
}

static const char *clock_env(long long ms, char buf[64])
{
    sfmt(buf, 64, "BASAL_TEST_CLOCK_MS=%lld", ms);
    return buf;
}

/* ---- 1. the release binary -------------------------------------------------------- */

static bool binary_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return false;
    bool found = false;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        char *all = size > 0 ? malloc((size_t)size) : NULL;
        if (all != NULL && fseek(f, 0, SEEK_SET) == 0 &&
            fread(all, 1, (size_t)size, f) == (size_t)size)
            found = memmem(all, (size_t)size, needle, strlen(needle)) != NULL;
        free(all);
    }
    fclose(f);
    return found;
}

static void test_release_has_no_clock(void)
{
    static const char *const names[] = {"BASAL_TEST_CLOCK_MS", "test.clock",
                                        "after_schedule_admit"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char name[160];
        sfmt(name, sizeof name, "triggers: the test build holds '%s' (control)", names[i]);
        check(binary_has(harness_test_parent(), names[i]), name, "%s", "not found");
        sfmt(name, sizeof name,
             "triggers: the release ck-basal does not hold '%s' [guard: test-only clock "
             "absent from the release build]",
             names[i]);
        check(!binary_has(harness_release_parent(), names[i]), name, "%s", "found");
    }
}

/* ---- 2 and 3. a downtime ---------------------------------------------------------- */

static void test_downtime(void)
{
    struct test_home h;
    test_home_begin(&h, g_root, "downtime");
    bool made =
        test_home_flow(&h, "skip", 1, "{\"schedule\":{\"cron\":\"* * * * *\",\"missed\":\"skip\"}}",
                       EVERY_MINUTE_FLOW) &&
        test_home_flow(&h, "once", 1, "{\"schedule\":{\"cron\":\"* * * * *\",\"missed\":\"once\"}}",
                       EVERY_MINUTE_FLOW) &&
        test_home_flow(&h, "each", 1,
                       "{\"schedule\":{\"cron\":\"* * * * *\",\"missed\":\"each\",\"each_cap\":3}}",
                       EVERY_MINUTE_FLOW) &&
        test_home_flow(&h, "a-killed", 1,
                       "{\"schedule\":{\"cron\":\"* * * * *\",\"missed\":\"once\"}}",
                       EVERY_MINUTE_FLOW);
    if (!check(made, "triggers: four scheduled flows installed and approved", "%s", "no"))
        return;
    long long approved_ms = real_now_ms();
    /* The first fire is the first whole minute after the approval. */
    long long first = (approved_ms / 1000 / 60 + 1) * 60;
    char env_buf[64];

    /* Up at the approval: nothing is due. */
    const char *env_kill[] = {clock_env(approved_ms, env_buf),
                              "BASAL_TEST_KILL_AT=after_schedule_admit:1", NULL};
    struct test_serve s;
    const char *env_up[] = {clock_env(approved_ms, env_buf), NULL};
    if (!check(test_serve_start(&s, &h, NULL, env_up), "triggers: serve starts on a test clock",
               "%s", s.log))
        return;
    check(test_serve_clock(&h, approved_ms), "triggers: test.clock answers", "%s", "no");
    long long nf = next_fire_s(&h, "once");
    check(nf == first, "triggers: a schedule's first fire is the first instant after approval",
          "next_fire %lld, want %lld", nf, first);
    check(runs_of(&h, "skip") + runs_of(&h, "once") + runs_of(&h, "each") == 0,
          "triggers: nothing fires before its instant", "%s", "runs found");
    kill(s.p.pid, SIGTERM);
    check_int_eq(test_serve_end(&s, TIMEOUT_MS), 0, "triggers: serve stops for the downtime");

    /* Ten and a half minutes later: instants first..first+600 are due; the last is 30 s
     * late (on time), the ten before it were missed. The first look admits the
     * "a-killed" flow's first fire and dies there (flows are looked at by id: "a-killed" first). */
    long long back_ms = (first + 630) * 1000;
    env_kill[0] = clock_env(back_ms, env_buf);
    struct test_serve k;
    bool started = test_serve_start(&k, &h, NULL, env_kill);
    int code = test_serve_end(&k, TIMEOUT_MS);
    (void)started;
    check(code == 128 + SIGKILL,
          "triggers: serve dies at the kill point after a scheduled admission",
          "exit %d; log %s", code, k.log);
    long long killed_runs = runs_of(&h, "a-killed");
    check(killed_runs == 1 && next_fire_s(&h, "a-killed") == first,
          "triggers: killed between admission and schedule update: one run stored, schedule "
          "not moved on",
          "runs %lld, next_fire %lld (want %lld)", killed_runs, next_fire_s(&h, "a-killed"), first);

    const char *env_back[] = {clock_env(back_ms, env_buf), NULL};
    if (!check(test_serve_start(&s, &h, NULL, env_back),
               "triggers: serve starts again after the downtime", "%s", s.log))
        return;
    check(test_serve_clock(&h, back_ms), "triggers: the look after the downtime", "%s", "no");

    check(runs_of(&h, "skip") == 1 && has_run(&h, "skip", first + 600),
          "triggers: missed skip: only the on-time instant (30 s late) fires [guard: missed "
          "policies; the 60 s grace]",
          "%lld runs", runs_of(&h, "skip"));
    check(runs_of(&h, "once") == 2 && has_run(&h, "once", first + 540) &&
              has_run(&h, "once", first + 600),
          "triggers: missed once: one run for the ten missed instants plus the on-time one "
          "[guard: missed policies]",
          "%lld runs", runs_of(&h, "once"));
    char since[32], sql[512];
    iso(first, since);
    sfmt(sql, sizeof sql,
         "SELECT count(*) FROM runs WHERE flow_id = 'once' AND json_extract(trigger, "
         "'$.missed_since') = '%s' AND json_extract(trigger, '$.fire') = 'once'",
         since);
    check(test_home_sql(&h, sql) == 1,
          "triggers: the catch-up run's trigger says since when instants were missed", "%s",
          "no such run");
    check(runs_of(&h, "each") == 4 && has_run(&h, "each", first + 420) &&
              has_run(&h, "each", first + 480) && has_run(&h, "each", first + 540) &&
              has_run(&h, "each", first + 600),
          "triggers: missed each, each_cap 3: the last three missed instants plus the on-time "
          "one [guard: missed policies]",
          "%lld runs", runs_of(&h, "each"));
    check(runs_of(&h, "a-killed") == 2 && has_run(&h, "a-killed", first + 540) &&
              has_run(&h, "a-killed", first + 600),
          "triggers: after the SIGKILL the same instants are planned again and nothing fires "
          "twice [guard: the trigger id names the instant]",
          "%lld runs", runs_of(&h, "a-killed"));
    check(test_serve_wait_log(&s, "fire=admitted_before", TIMEOUT_MS),
          "triggers: the restarted serve logs the instant it found admitted", "%s", s.log);
    check(next_fire_s(&h, "each") == first + 660,
          "triggers: the schedule moved on to the first instant after now", "next %lld want %lld",
          next_fire_s(&h, "each"), first + 660);

    /* Disabling a flow removes its row; nothing fires for it any more. */
    struct proc_result r = test_home_cli(&h, false, ARGS("flow", "disable", "skip"));
    check(proc_exited_with(&r, 0), "triggers: flow disable through the socket", "%s", r.err);
    proc_result_free(&r);
    check(test_serve_clock(&h, (first + 700) * 1000), "triggers: the clock moves on", "%s", "no");
    check(test_home_sql(&h, "SELECT count(*) FROM schedules WHERE flow_id = 'skip'") == 0 &&
              runs_of(&h, "skip") == 1,
          "triggers: a disabled flow has no schedule and fires nothing", "rows %lld runs %lld",
          test_home_sql(&h, "SELECT count(*) FROM schedules WHERE flow_id = 'skip'"),
          runs_of(&h, "skip"));
    kill(s.p.pid, SIGTERM);
    check_int_eq(test_serve_end(&s, TIMEOUT_MS), 0, "triggers: serve stops");
}

/* ---- a busy flow ---------------------------------------------------------------------- */

static void test_busy_flow(void)
{
    struct test_home h;
    test_home_begin(&h, g_root, "busy");
    int fifo_fd = test_home_hold_catalog(&h)
                      ? test_home_held_flow(&h, "busy",
                                            "{\"schedule\":{\"cron\":\"* * * * *\",\"missed\":\"once\"}}",
                                            "trigger")
                      : -1;
    if (!check(fifo_fd >= 0, "triggers: a flow whose run holds until the test lets it go", "%s",
               "no"))
        return;
    long long first = (real_now_ms() / 1000 / 60 + 1) * 60;
    char env_buf[64];
    const char *env[] = {clock_env(first * 1000, env_buf), NULL};
    struct test_serve s;
    if (!check(test_serve_start(&s, &h, NULL, env),
               "triggers: serve starts at the first instant", "%s", s.log))
        return;
    check(test_serve_clock(&h, first * 1000) && hold_line_read(fifo_fd, TIMEOUT_MS),
          "triggers: the on-time fire's run is running (holding)", "%s", s.log);
    check(test_serve_clock(&h, (first + 60) * 1000) && runs_of(&h, "busy") == 1,
          "triggers: a fire due while the flow's run is unfinished waits [guard: a busy flow is "
          "held]",
          "%lld runs", runs_of(&h, "busy"));
    check(test_serve_clock(&h, (first + 200) * 1000) && runs_of(&h, "busy") == 1,
          "triggers: still held three instants later", "%lld runs", runs_of(&h, "busy"));
    /* Letting the run end: the held instants fire by the rule, at the same clock. */
    close(fifo_fd);
    char want[96], at[32];
    iso(first + 180, at);
    sfmt(want, sizeof want, "scheduled_at=%s fire=on_time", at);
    check(test_serve_wait_log(&s, want, TIMEOUT_MS),
          "triggers: the held flow fires when its run ends", "%s", s.log);
    check(test_serve_clock(&h, (first + 200) * 1000) && runs_of(&h, "busy") == 3 &&
              has_run(&h, "busy", first + 120) && has_run(&h, "busy", first + 180),
          "triggers: after the wait, the missed instants fire once (the last, 1st+120) and "
          "the on-time one (1st+180)",
          "%lld runs", runs_of(&h, "busy"));
    kill(s.p.pid, SIGTERM);
    check_int_eq(test_serve_end(&s, TIMEOUT_MS), 0, "triggers: serve stops");
}

/* ---- 4. flow schedule and flow list ---------------------------------------------- */

static void test_schedule_listing(void)
{
    struct test_home h;
    test_home_begin(&h, g_root, "listing");
    long long before_ms = real_now_ms();
    bool made =
        test_home_flow(&h, "berlin", 1,
                       "{\"schedule\":{\"cron\":\"30 9 * * mon-fri\",\"tz\":\"Europe/Berlin\"}}",
                       EVERY_MINUTE_FLOW) &&
        test_home_flow(&h, "ticker", 1, "{\"schedule\":{\"interval\":\"10m\"}}",
                       EVERY_MINUTE_FLOW) &&
        test_home_flow(&h, "by-hand", 1, "{\"manual\":true}", EVERY_MINUTE_FLOW);
    long long after_ms = real_now_ms();
    if (!check(made, "triggers: listing flows installed", "%s", "no"))
        return;
    struct proc_result r =
        test_home_cli(&h, true, ARGS("flow", "schedule", "berlin", "--count", "4"));
    json_t *o = cli_output_json(&r);
    json_t *fires = json_object_get(o, "fires");
    bool shape = proc_exited_with(&r, 0) && json_array_size(fires) == 4;
    bool all_right = shape;
    size_t i;
    json_t *f;
    json_array_foreach (fires, i, f) {
        const char *local = json_string_value(json_object_get(f, "local"));
        const char *utc = json_string_value(json_object_get(f, "utc"));
        long long unix_s = json_integer_value(json_object_get(f, "unix"));
        char want_utc[32];
        iso(unix_s, want_utc);
        /* Berlin is +01:00 or +02:00; the local wall clock is 09:30 on a weekday. */
        time_t t = (time_t)unix_s;
        struct tm tm;
        gmtime_r(&t, &tm);
        bool ok_one = local != NULL && utc != NULL && strcmp(utc, want_utc) == 0 &&
                      strstr(local, "T09:30:00+0") != NULL && tm.tm_min == 30 &&
                      (tm.tm_hour == 8 || tm.tm_hour == 7) && tm.tm_wday >= 1 && tm.tm_wday <= 5;
        all_right = all_right && ok_one;
    }
    check(all_right, "triggers: flow schedule --count 4 lists weekday 09:30 Berlin fires with UTC",
          "%s %s", proc_describe(&r), r.out);
    json_decref(o);
    proc_result_free(&r);

    r = test_home_cli(&h, true, ARGS("flow", "schedule", "ticker", "--count", "2"));
    o = cli_output_json(&r);
    fires = json_object_get(o, "fires");
    long long first = json_integer_value(json_object_get(json_array_get(fires, 0), "unix"));
    long long second = json_integer_value(json_object_get(json_array_get(fires, 1), "unix"));
    check(proc_exited_with(&r, 0) && first >= before_ms / 1000 + 600 &&
              first <= after_ms / 1000 + 600 && second == first + 600,
          "triggers: an interval counts from the approval (first fire approval + 10m)",
          "%s %s", proc_describe(&r), r.out);
    json_decref(o);
    proc_result_free(&r);

    r = test_home_cli(&h, false, ARGS("flow", "list"));
    check(proc_exited_with(&r, 0) && strstr(r.out, "NEXT FIRE") != NULL &&
              strstr(r.out, "Europe/Berlin (") != NULL && strstr(r.out, "+0") != NULL,
          "triggers: flow list shows the next fire in the flow's zone and in UTC", "%s", r.out);
    proc_result_free(&r);
    r = test_home_cli(&h, true, ARGS("flow", "list"));
    o = cli_output_json(&r);
    bool manual_null = false, berlin_set = false;
    json_array_foreach (o, i, f) {
        const char *id = json_string_value(json_object_get(f, "id"));
        json_t *next = json_object_get(f, "next_fire");
        if (id != NULL && strcmp(id, "by-hand") == 0)
            manual_null = json_is_null(next);
        if (id != NULL && strcmp(id, "berlin") == 0)
            berlin_set = json_is_string(json_object_get(next, "utc")) &&
                         json_is_string(json_object_get(next, "local"));
    }
    check(manual_null && berlin_set,
          "triggers: flow list --json: next_fire for a schedule, null for a manual flow", "%s",
          r.out);
    json_decref(o);
    proc_result_free(&r);

    static const struct {
        const char *args[6];
        int code;
        const char *want, *name;
    } bad[] = {
        {{"flow", "schedule", "by-hand", NULL}, 1, "has no schedule",
         "triggers: flow schedule of a manual flow says it has no schedule"},
        {{"flow", "schedule", "nosuch", NULL}, 1, "unknown flow 'nosuch'",
         "triggers: flow schedule of an unknown flow is refused"},
        {{"flow", "schedule", "berlin", "--count", "0"}, 2, "--count takes a whole number",
         "triggers: flow schedule --count 0 is a usage error"},
        {{"flow", "schedule", NULL}, 2, "schedule needs a flow id",
         "triggers: flow schedule without an id is a usage error"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        r = test_home_cli(&h, false, bad[k].args);
        check(proc_exited_with(&r, bad[k].code) && strstr(r.err, bad[k].want) != NULL &&
                  strchr(r.err, '\n') == strrchr(r.err, '\n'),
              bad[k].name, "%s: %s", proc_describe(&r), r.err);
        proc_result_free(&r);
    }
}

int main(void)
{
    if (!require_binary(harness_test_parent(), "triggers: the test build") ||
        !require_binary(harness_release_parent(), "triggers: the release build"))
        return harness_finish();
    sfmt(g_root, sizeof g_root, "%s", harness_tmpdir("triggers"));
    test_release_has_no_clock();
    test_downtime();
    test_busy_flow();
    test_schedule_listing();
    harness_remove_tmpdir();
    return harness_finish();
}
