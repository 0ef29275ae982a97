/* Events and admission rate limits under serve (issue 12, items 3 and 4; docs/triggers.md),
 * driven through the real binaries on scratch data homes:
 *
 *   1. the rate window logic itself (serve/admission_rate.h): N pass, the N+1th is
 *      refused, a new window admits again, 3 saturated windows in a row disable, a calm
 *      window breaks the streak, a released slot is given back;
 *   2. event emit with a serve: one run per listening enabled flow (two listening, one
 *      listening to another version, one disabled, one not listening), the payload as
 *      the trigger; the same id again admits nothing new (duplicates reported);
 *   3. the backlog bound: an event beyond a flow's backlog is refused with the reason,
 *      the CLI exits 1 naming the flow, nothing stored for it;
 *   4. event emit without a serve: recorded pending, delivered by the next serve once;
 *      a restart delivers nothing again; a SIGKILL between the admissions and marking
 *      the event delivered re-delivers at the next start and admits nothing twice;
 *   5. rate limits with serve's test clock: N admissions pass, the next is refused with
 *      the reason, a new window admits again; 3 saturated windows in a row disable the
 *      flow, with the reason in flow list (human and --json), the audit, health and the
 *      log; flow enable clears it; 2 saturated windows, a calm one, 2 more: not disabled;
 *   6. bad input to event emit: one line, exit 2, nothing stored; the same checks
 *      applied by serve to a raw request.
 * Readiness and progress are read from serve's log lines, never waited for by time. */
#include "lib/harness.h"
#include "lib/serve_home.h"
#include "serve/admission_rate.h"
#include "serve/ops_client.h"

#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 120000
/* A window start of the test clock (a multiple of 60 s). */
#define CLOCK_T0 1800000000000LL
#define MINUTE 60000LL

static char g_root[PATH_MAX];

static struct proc_result cli_in(const struct test_home *h, bool json, const char *const *args)
{
    return test_home_cli(h, json, args);
}

static void home_begin(struct test_home *h, const char *name)
{
    test_home_begin(h, g_root, name);
}

static const char *ECHO_FLOW = "return trigger;\n";
/* Holds the only runner until its CPU budget ends it (or serve stops). */
static const char *HOG_FLOW = "for (;;) {}\n";

/* Installs and approves flow id with trigger (a JSON object's text); disabled unless
 * enabled. */
static bool flow_add(const struct test_home *h, const char *id, const char *trigger,
                     const char *script, bool enabled)
{
    bool good = test_home_flow(h, id, 1, trigger, script);
    if (good && !enabled) {
        struct proc_result r = cli_in(h, false, ARGS("flow", "disable", id));
        good = proc_exited_with(&r, 0);
        proc_result_free(&r);
    }
    return good;
}

static long long sql_number(const struct test_home *h, const char *sql)
{
    return test_home_sql(h, sql);
}

/* ---- a serve process (tests/lib/serve_home.h) ------------------------------------- */

static bool serve_start(struct test_serve *s, const struct test_home *h, const char *const *extra)
{
    return test_serve_start(s, h, extra, NULL);
}

/* One raw request to h's serve; the reply object (json_decref it) or NULL. */
static json_t *ops_request(const struct test_home *h, const char *cmd, json_t *args)
{
    int fd;
    char err[256];
    if (ops_client_connect(h->home, &fd, err, sizeof err) != 1) {
        json_decref(args);
        return NULL;
    }
    json_t *request = json_pack("{s:s, s:o}", "cmd", cmd, "args", args);
    void *reply = NULL;
    if (ops_client_call(fd, request, &reply, TIMEOUT_MS, err, sizeof err) != 0)
        reply = NULL;
    json_decref(request);
    return reply;
}

/* The number of single-line stderr: true when text is exactly one line. */
static bool one_line(const char *text)
{
    size_t n = strlen(text);
    return n > 0 && strchr(text, '\n') == text + n - 1;
}

/* ---- 1. the window logic ---------------------------------------------------------- */

static void test_rate_logic(void)
{
    struct admission_rate r = {2, NULL, 0};
    int64_t t = CLOCK_T0;
    bool pass = admission_rate_take(&r, "f", t) == ADMISSION_RATE_ALLOW &&
                admission_rate_take(&r, "f", t + 1) == ADMISSION_RATE_ALLOW;
    check(pass && admission_rate_take(&r, "f", t + 2) == ADMISSION_RATE_REFUSE,
          "rate logic: N admissions pass, the N+1th is refused [guard: admission limit]",
          "pass %d", pass);
    check(admission_rate_take(&r, "g", t + 3) == ADMISSION_RATE_ALLOW,
          "rate logic: the limit is per flow", "another flow refused");
    admission_rate_release(&r, "g", t + 3);
    check(admission_rate_take(&r, "g", t + 4) == ADMISSION_RATE_ALLOW &&
              admission_rate_take(&r, "g", t + 5) == ADMISSION_RATE_ALLOW &&
              admission_rate_take(&r, "g", t + 6) == ADMISSION_RATE_REFUSE,
          "rate logic: a released slot (admission that did not happen) is given back", "-");
    /* f: saturated in window 0; window 1 saturated; window 2: the refusal disables. */
    check(admission_rate_take(&r, "f", t + MINUTE) == ADMISSION_RATE_ALLOW,
          "rate logic: a new window admits again [guard: fixed window]", "refused");
    (void)admission_rate_take(&r, "f", t + MINUTE);
    enum admission_rate_verdict second = admission_rate_take(&r, "f", t + MINUTE + 1);
    (void)admission_rate_take(&r, "f", t + 2 * MINUTE);
    (void)admission_rate_take(&r, "f", t + 2 * MINUTE);
    enum admission_rate_verdict third = admission_rate_take(&r, "f", t + 2 * MINUTE + 5);
    enum admission_rate_verdict again = admission_rate_take(&r, "f", t + 2 * MINUTE + 6);
    check(second == ADMISSION_RATE_REFUSE && third == ADMISSION_RATE_DISABLE &&
              again == ADMISSION_RATE_REFUSE,
          "rate logic: the refusal that completes 3 saturated windows in a row disables, once "
          "[guard: auto-disable streak]",
          "second %d third %d again %d", second, third, again);
    /* h: saturated, saturated, calm, saturated, saturated: never disabled. */
    enum admission_rate_verdict worst = ADMISSION_RATE_ALLOW;
    for (int w = 0; w < 5; w++) {
        int64_t at = t + (10 + w) * MINUTE;
        int tries = w == 2 ? 1 : 3;
        for (int i = 0; i < tries; i++) {
            enum admission_rate_verdict v = admission_rate_take(&r, "h", at);
            if (v > worst)
                worst = v;
        }
    }
    check(worst == ADMISSION_RATE_REFUSE,
          "rate logic: 2 saturated windows, a calm one, 2 more: not disabled [guard: streak "
          "broken by a calm window]",
          "worst verdict %d", worst);
    /* A gap (a window with no admission at all) breaks the streak too. */
    for (int i = 0; i < 3; i++)
        (void)admission_rate_take(&r, "k", t + 20 * MINUTE);
    for (int i = 0; i < 3; i++)
        (void)admission_rate_take(&r, "k", t + 21 * MINUTE);
    enum admission_rate_verdict after_gap = ADMISSION_RATE_ALLOW;
    for (int i = 0; i < 3; i++)
        after_gap = admission_rate_take(&r, "k", t + 23 * MINUTE);
    check(after_gap == ADMISSION_RATE_REFUSE,
          "rate logic: a window without admissions breaks the streak", "verdict %d", after_gap);
    admission_rate_free(&r);
}

/* ---- 2 and 3. events with a serve ------------------------------------------------- */

#define LISTEN_PUSH_1 "{\"events\":[{\"module\":\"git\",\"name\":\"push\",\"version\":1}]}"
#define LISTEN_PUSH_2 "{\"events\":[{\"module\":\"git\",\"name\":\"push\",\"version\":2}]}"
#define LISTEN_TWO                                                                          \
    "{\"events\":[{\"module\":\"mail\",\"name\":\"in\",\"version\":1},"                     \
    "{\"module\":\"git\",\"name\":\"push\",\"version\":1}]}"
#define MANUAL "{\"manual\":true}"

static bool add_listeners(const struct test_home *h)
{
    return flow_add(h, "alpha", LISTEN_PUSH_1, ECHO_FLOW, true) &&
           flow_add(h, "beta", LISTEN_TWO, ECHO_FLOW, true) &&
           flow_add(h, "gamma", LISTEN_PUSH_2, ECHO_FLOW, true) &&
           flow_add(h, "delta", LISTEN_PUSH_1, ECHO_FLOW, false) &&
           flow_add(h, "epsilon", MANUAL, ECHO_FLOW, true);
}

static long long runs_of(const struct test_home *h, const char *flow)
{
    char sql[256];
    sfmt(sql, sizeof sql, "SELECT count(*) FROM runs WHERE flow_id = '%s'", flow);
    return sql_number(h, sql);
}

static void test_emit_with_serve(void)
{
    struct test_home h;
    home_begin(&h, "emit");
    if (!ok(add_listeners(&h), "events: five flows installed (two listening, one to v2, one "
                               "disabled, one manual)"))
        return;
    struct test_serve s;
    if (!ok(serve_start(&s, &h, NULL), "events: serve starts"))
        return;
    struct proc_result r = cli_in(&h, true, ARGS("event", "emit", "git", "push", "1", "--id",
                                                 "push-1", "--payload", "{\"ref\":\"main\"}"));
    json_t *data = cli_output_json(&r);
    size_t admitted = json_array_size(json_object_get(data, "runs"));
    check(proc_exited_with(&r, 0) && admitted == 2 && runs_of(&h, "alpha") == 1 &&
              runs_of(&h, "beta") == 1 && runs_of(&h, "gamma") == 0 &&
              runs_of(&h, "delta") == 0 && runs_of(&h, "epsilon") == 0,
          "events: one run per enabled flow listening to (module, name, version); none for "
          "another version, a disabled flow or a flow not listening [guard: event targets]",
          "%s: %s %s; alpha %lld beta %lld gamma %lld delta %lld epsilon %lld",
          proc_describe(&r), r.out, r.err, runs_of(&h, "alpha"), runs_of(&h, "beta"),
          runs_of(&h, "gamma"), runs_of(&h, "delta"), runs_of(&h, "epsilon"));
    json_decref(data);
    proc_result_free(&r);
    check(sql_number(&h, "SELECT count(*) FROM runs WHERE trigger = '{\"ref\":\"main\"}' AND"
                         " trigger_id = 'event:1'") == 2 &&
              sql_number(&h, "SELECT count(*) FROM events WHERE state = 'delivered'") == 1,
          "events: the payload is each run's trigger, the trigger id names the event, the "
          "event is marked delivered",
          "%lld runs with the payload", sql_number(&h, "SELECT count(*) FROM runs WHERE trigger"
                                                       " = '{\"ref\":\"main\"}'"));

    r = cli_in(&h, false, ARGS("event", "emit", "git", "push", "1", "--id", "push-1", "--payload",
                               "{\"ref\":\"other\"}"));
    check(proc_exited_with(&r, 0) && strstr(r.out, "2 duplicate(s)") != NULL &&
              sql_number(&h, "SELECT count(*) FROM runs") == 2 &&
              sql_number(&h, "SELECT count(*) FROM events") == 1,
          "events: the same id again admits no new run, reported as duplicates [guard: event "
          "id dedupes per flow]",
          "%s: %s %s; %lld runs", proc_describe(&r), r.out, r.err,
          sql_number(&h, "SELECT count(*) FROM runs"));
    proc_result_free(&r);

    r = cli_in(&h, false, ARGS("event", "emit", "git", "push", "2"));
    check(proc_exited_with(&r, 0) && runs_of(&h, "gamma") == 1 &&
              sql_number(&h, "SELECT count(*) FROM runs") == 3 &&
              sql_number(&h, "SELECT length(event_id) FROM events WHERE version = 2") == 32,
          "events: version 2 reaches only the flow listening to version 2; the default id is "
          "32 random hex digits",
          "%s: %s %s", proc_describe(&r), r.out, r.err);
    proc_result_free(&r);
    /* The same id under another name is another event: the trigger id holds the seq. */
    r = cli_in(&h, false, ARGS("event", "emit", "mail", "in", "1", "--id", "push-1"));
    check(proc_exited_with(&r, 0) && runs_of(&h, "beta") == 2,
          "events: one id under two event names is two events for a flow listening to both",
          "%s: %s %s; beta %lld", proc_describe(&r), r.out, r.err, runs_of(&h, "beta"));
    proc_result_free(&r);
    check(test_serve_stop(&s) == 0, "events: serve exits 0 after the emit checks", "log %.400s",
          s.log);
}

static void test_backlog(void)
{
    struct test_home h;
    home_begin(&h, "backlog");
    if (!ok(flow_add(&h, "hog", MANUAL, HOG_FLOW, true) &&
                flow_add(&h, "busy", LISTEN_PUSH_1, ECHO_FLOW, true),
            "events: flows for the backlog check"))
        return;
    struct test_serve s;
    if (!ok(serve_start(&s, &h, ARGS("--backlog", "1", "--max-runs", "1", "--grace-seconds", "0")),
            "events: serve starts with --backlog 1 --max-runs 1"))
        return;
    /* The hog holds the only runner, so busy's runs wait. */
    struct proc_result r = cli_in(&h, false, ARGS("run", "hog", "--detach"));
    proc_result_free(&r);
    bool hogging = test_serve_wait_log(&s, "event=run_started run=1 flow=hog", TIMEOUT_MS);
    r = cli_in(&h, false, ARGS("event", "emit", "git", "push", "1", "--id", "b1"));
    bool first = proc_exited_with(&r, 0);
    proc_result_free(&r);
    r = cli_in(&h, false, ARGS("event", "emit", "git", "push", "1", "--id", "b2"));
    check(hogging && first && proc_exited_with(&r, 1) && strstr(r.err, "busy") != NULL &&
              strstr(r.err, "backlog") != NULL && runs_of(&h, "busy") == 1,
          "events: an event beyond the flow's backlog is refused with the reason, the CLI "
          "exits 1 naming the flow, nothing stored [guard: bounded backlog for events]",
          "hog running %d, first %d; second %s: %s; busy runs %lld", hogging, first,
          proc_describe(&r), r.err, runs_of(&h, "busy"));
    proc_result_free(&r);
    int code = test_serve_stop(&s);
    ok(code == 0, "events: serve exits 0 after the backlog check");
}

/* ---- 4. without a serve, and the crash between admission and delivered ---------- */

static void test_emit_without_serve(void)
{
    struct test_home h;
    home_begin(&h, "offline");
    if (!ok(add_listeners(&h), "events: flows for the offline checks"))
        return;
    struct proc_result r = cli_in(&h, false, ARGS("event", "emit", "git", "push", "1", "--id",
                                                  "off-1", "--payload", "{\"n\":1}"));
    check(proc_exited_with(&r, 0) && strstr(r.out, "recorded; the next serve delivers it") &&
              sql_number(&h, "SELECT count(*) FROM events WHERE state = 'pending'") == 1 &&
              sql_number(&h, "SELECT count(*) FROM runs") == 0,
          "events: without a serve the event is recorded pending, no run admitted", "%s: %s %s",
          proc_describe(&r), r.out, r.err);
    proc_result_free(&r);
    r = cli_in(&h, false, ARGS("event", "emit", "git", "push", "1", "--id", "off-1"));
    check(proc_exited_with(&r, 0) && sql_number(&h, "SELECT count(*) FROM events") == 1,
          "events: the same id again without a serve is still one event", "%s: %s",
          proc_describe(&r), r.err);
    proc_result_free(&r);

    struct test_serve s;
    bool up = serve_start(&s, &h, NULL);
    check(up && strstr(s.log, "event=event_delivered event=1") != NULL &&
              runs_of(&h, "alpha") == 1 && runs_of(&h, "beta") == 1 &&
              sql_number(&h, "SELECT count(*) FROM runs") == 2 &&
              sql_number(&h, "SELECT count(*) FROM events WHERE state = 'delivered'") == 1,
          "events: the next serve delivers the pending event at start, one run per listening "
          "flow [guard: pending events delivered at start]",
          "up %d; %lld runs; log %.600s", up, sql_number(&h, "SELECT count(*) FROM runs"),
          s.log);
    ok(up && test_serve_stop(&s) == 0, "events: serve exits 0 after delivering at start");
    up = serve_start(&s, &h, NULL);
    check(up && strstr(s.log, "event=event_delivered") == NULL &&
              sql_number(&h, "SELECT count(*) FROM runs") == 2,
          "events: a restart delivers nothing again", "%lld runs; log %.600s",
          sql_number(&h, "SELECT count(*) FROM runs"), s.log);
    ok(up && test_serve_stop(&s) == 0, "events: serve exits 0 after the restart");
}

static void test_crash_before_delivered(void)
{
    struct test_home h;
    home_begin(&h, "crash");
    if (!ok(add_listeners(&h), "events: flows for the crash check"))
        return;
    struct proc_result r = cli_in(&h, false, ARGS("event", "emit", "git", "push", "1", "--id",
                                                  "crash-1"));
    proc_result_free(&r);
    setenv("BASAL_TEST_KILL_AT", "event_admitted:1", 1);
    struct test_serve s;
    bool up = serve_start(&s, &h, NULL);
    unsetenv("BASAL_TEST_KILL_AT");
    int code = test_serve_end(&s, TIMEOUT_MS);
    long long runs = sql_number(&h, "SELECT count(*) FROM runs");
    long long pending = sql_number(&h, "SELECT count(*) FROM events WHERE state = 'pending'");
    check(!up && code == 128 + SIGKILL && runs == 2 && pending == 1,
          "events: serve killed after the admissions, before marking the event delivered: "
          "both runs stored, the event still pending",
          "up %d exit %d runs %lld pending %lld; log %.400s", up, code, runs, pending, s.log);
    up = serve_start(&s, &h, NULL);
    bool settled = up && test_serve_wait_log(&s, "event=event_delivered event=1", TIMEOUT_MS);
    check(settled && sql_number(&h, "SELECT count(*) FROM runs") == 2 &&
              runs_of(&h, "alpha") == 1 && runs_of(&h, "beta") == 1 &&
              sql_number(&h, "SELECT count(*) FROM events WHERE state = 'delivered'") == 1,
          "events: the next start re-delivers it and admits nothing twice [guard: trigger-id "
          "dedupe makes re-delivery harmless]",
          "%lld runs; log %.600s", sql_number(&h, "SELECT count(*) FROM runs"), s.log);
    ok(up && test_serve_stop(&s) == 0, "events: serve exits 0 after the crash check");
}

/* ---- 5. rate limits with the test clock ------------------------------------------- */

/* Admits `tries` manual runs of flow; returns how many were admitted, and the last
 * refusal's stderr in why. */
static int burst(const struct test_home *h, const char *flow, int tries, char *why, size_t cap)
{
    int admitted = 0;
    if (why != NULL)
        why[0] = '\0';
    for (int i = 0; i < tries; i++) {
        struct proc_result r = cli_in(h, false, ARGS("run", flow, "--detach"));
        if (proc_exited_with(&r, 0))
            admitted++;
        else if (why != NULL)
            sfmt(why, cap, "%s", r.err);
        proc_result_free(&r);
    }
    return admitted;
}

static void test_rate_limit(void)
{
    struct test_home h;
    home_begin(&h, "rate");
    if (!ok(flow_add(&h, "noisy", MANUAL, ECHO_FLOW, true) &&
                flow_add(&h, "calm", MANUAL, ECHO_FLOW, true),
            "rate: flows installed"))
        return;
    char t0[32];
    sfmt(t0, sizeof t0, "%lld", CLOCK_T0);
    setenv("BASAL_TEST_CLOCK_MS", t0, 1);
    struct test_serve s;
    bool up = serve_start(&s, &h, ARGS("--rate-limit", "2"));
    unsetenv("BASAL_TEST_CLOCK_MS");
    if (!ok(up, "rate: serve starts with a fixed test clock and --rate-limit 2"))
        return;
    char why[1024];
    int got = burst(&h, "noisy", 3, why, sizeof why);
    check(got == 2 && strstr(why, "rate limit") != NULL && one_line(why) &&
              runs_of(&h, "noisy") == 2,
          "rate: 2 admissions pass, the 3rd is refused with the reason, nothing stored "
          "[guard: admission rate limit in daemon_admit]",
          "admitted %d; %s; %lld runs", got, why, runs_of(&h, "noisy"));
    /* An event is an admission like any other. */
    ok(flow_add(&h, "hears", LISTEN_PUSH_1, ECHO_FLOW, true), "rate: a listening flow");
    (void)burst(&h, "hears", 2, NULL, 0);
    struct proc_result r = cli_in(&h, false, ARGS("event", "emit", "git", "push", "1"));
    check(proc_exited_with(&r, 1) && strstr(r.err, "rate limit") != NULL &&
              runs_of(&h, "hears") == 2,
          "rate: an event beyond the flow's rate is refused with the reason", "%s: %s",
          proc_describe(&r), r.err);
    proc_result_free(&r);

    ok(test_serve_clock(&h, CLOCK_T0 + MINUTE), "rate: the test clock moves to the next window");
    got = burst(&h, "noisy", 3, why, sizeof why);
    check(got == 2 && runs_of(&h, "noisy") == 4,
          "rate: a new window admits again (then saturates a 2nd time)", "admitted %d", got);
    ok(test_serve_clock(&h, CLOCK_T0 + 2 * MINUTE), "rate: the test clock moves to a 3rd window");
    got = burst(&h, "noisy", 3, why, sizeof why);
    (void)test_serve_wait_log(&s, "event=flow_auto_disabled flow=noisy", TIMEOUT_MS);
    r = cli_in(&h, true, ARGS("flow", "list"));
    json_t *list = cli_output_json(&r);
    const char *reason = "(none)";
    bool enabled = true;
    size_t i;
    json_t *f;
    json_array_foreach (list, i, f) {
        if (strcmp(json_str_of(f, "id"), "noisy") == 0) {
            reason = json_str_of(f, "disabled_reason");
            enabled = json_is_true(json_object_get(f, "enabled"));
        }
    }
    check(got == 2 && !enabled &&
              strstr(reason, "rate limit: saturated 3 windows in a row") != NULL,
          "rate: saturated 3 windows in a row: disabled, the reason in flow list --json "
          "[guard: auto-disable]",
          "admitted %d, enabled %d, reason %s; %s", got, enabled, reason,
          r.out);
    json_decref(list);
    proc_result_free(&r);
    r = cli_in(&h, false, ARGS("flow", "list"));
    ok(proc_exited_with(&r, 0) && strstr(r.out, "disabled by serve: rate limit") != NULL,
       "rate: flow list shows the reason to a human");
    proc_result_free(&r);
    check(sql_number(&h, "SELECT count(*) FROM audit WHERE kind = 'flow.auto_disable' AND"
                         " flow_id = 'noisy' AND reason LIKE 'rate limit:%'") == 1 &&
              strstr(s.log, "event=flow_auto_disabled flow=noisy") != NULL,
          "rate: the auto-disable is audited once and logged", "log %.400s", s.log);
    r = cli_in(&h, false, ARGS("health"));
    json_t *health = cli_output_json(&r);
    const char *health_reason = json_str_of(
        json_object_get(json_object_get(health, "flows"), "noisy"), "disabled_reason");
    check(strstr(health_reason, "rate limit") != NULL,
          "rate: health shows the flow's disabled reason", "%.400s", r.out);
    json_decref(health);
    proc_result_free(&r);

    r = cli_in(&h, false, ARGS("flow", "enable", "noisy"));
    proc_result_free(&r);
    ok(test_serve_clock(&h, CLOCK_T0 + 3 * MINUTE), "rate: the test clock moves to a 4th window");
    got = burst(&h, "noisy", 1, NULL, 0);
    check(got == 1 && sql_number(&h, "SELECT count(*) FROM flows WHERE id = 'noisy' AND"
                                     " enabled = 1 AND disabled_reason IS NULL") == 1,
          "rate: flow enable clears the reason and the flow is admitted again", "admitted %d",
          got);

    /* calm: saturated, saturated, one run, saturated, saturated: still enabled. */
    for (int w = 0; w < 5; w++) {
        ok(test_serve_clock(&h, CLOCK_T0 + (10 + w) * MINUTE), "rate: the test clock moves on");
        (void)burst(&h, "calm", w == 2 ? 1 : 3, NULL, 0);
    }
    check(sql_number(&h, "SELECT enabled FROM flows WHERE id = 'calm'") == 1 &&
              strstr(s.log, "event=flow_auto_disabled flow=calm") == NULL,
          "rate: 2 saturated windows, a calm one, 2 more: not disabled [guard: a calm window "
          "breaks the streak]",
          "enabled %lld", sql_number(&h, "SELECT enabled FROM flows WHERE id = 'calm'"));
    ok(test_serve_stop(&s) == 0, "rate: serve exits 0");
}

/* ---- 6. bad input ------------------------------------------------------------------ */

static void test_bad_input(void)
{
    struct test_home h;
    home_begin(&h, "bad");
    static const char *const BAD[][7] = {
        {"git", "push", "1", "--payload", "{bad", NULL, "a malformed payload"},
        {"git", "push", "1", "--payload", "[1]", NULL, "a payload that is not an object"},
        {"git", "push", "1", "--id", "a b", NULL, "an id with a space"},
        {"git", "push", "1", "--id", "", NULL, "an empty id"},
        {"git", "push", "one", NULL, NULL, NULL, "a version that is not a number"},
        {"git", "push", "0", NULL, NULL, NULL, "version 0"},
        {"git", "push", "1.5", NULL, NULL, NULL, "a fractional version"},
        {"Git", "push", "1", NULL, NULL, NULL, "a module that is not a name"},
        {"git", "push", NULL, NULL, NULL, NULL, "a missing version"},
    };
    char long_id[140];
    memset(long_id, 'a', 129);
    long_id[129] = '\0';
    for (size_t i = 0; i <= sizeof BAD / sizeof BAD[0]; i++) {
        const char *args[10] = {"event", "emit"};
        int n = 2;
        const char *what = "an id of 129 bytes";
        if (i < sizeof BAD / sizeof BAD[0]) {
            for (int k = 0; k < 5 && BAD[i][k] != NULL; k++)
                args[n++] = BAD[i][k];
            what = BAD[i][6];
        } else {
            args[n++] = "git";
            args[n++] = "push";
            args[n++] = "1";
            args[n++] = "--id";
            args[n++] = long_id;
        }
        args[n] = NULL;
        struct proc_result r = cli_in(&h, false, args);
        char name[200];
        sfmt(name, sizeof name, "events: %s is one line, exit 2, nothing stored", what);
        check(proc_exited_with(&r, 2) && one_line(r.err) &&
                  sql_number(&h, "SELECT count(*) FROM events") == 0,
              name, "%s: %s", proc_describe(&r), r.err);
        proc_result_free(&r);
    }
    /* serve checks again what it is sent. */
    struct test_serve s;
    if (!ok(serve_start(&s, &h, NULL), "events: serve starts for the raw checks"))
        return;
    json_t *reply = ops_request(&h, "event.emit",
                                json_pack("{s:s, s:s, s:i, s:s}", "module", "git", "name", "push",
                                          "version", 1, "id", "a b"));
    json_t *reply2 = ops_request(&h, "event.emit",
                                 json_pack("{s:s, s:s, s:i, s:s, s:s}", "module", "git", "name",
                                           "push", "version", 1, "id", "x", "payload", "[]"));
    check(json_integer_value(json_object_get(reply, "exit")) == 2 &&
              json_integer_value(json_object_get(reply2, "exit")) == 2 &&
              sql_number(&h, "SELECT count(*) FROM events") == 0,
          "events: serve refuses a bad id or a payload that is not an object sent raw, exit 2, "
          "nothing stored [guard: serve checks event.emit's args]",
          "-");
    json_decref(reply);
    json_decref(reply2);
    ok(test_serve_stop(&s) == 0, "events: serve exits 0 after the raw checks");
}

int main(void)
{
    if (!require_binary(harness_test_parent(), "events: the test build"))
        return harness_finish();
    sfmt(g_root, sizeof g_root, "%s", harness_tmpdir("events"));
    test_rate_logic();
    test_bad_input();
    test_emit_with_serve();
    test_emit_without_serve();
    test_crash_before_delivered();
    test_backlog();
    test_rate_limit();
    harness_remove_tmpdir();
    return harness_finish();
}
