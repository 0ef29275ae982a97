/* Long-running calls and suspended runs (basal.md section 3, LongRunning and
 * Finished(suspended); docs/flows.md "Long-running calls"), through the real ck-basal and
 * its worker. The catalog's module "approvals" is tests/tools/test_module, whose op
 * ops "accept*" answer {"accepted": true} only when the request says "long_running": true
 * (it logs "OP KEY ARGS" for every request it gets):
 *   accept           mutate, idempotent, long_running                   (keyed)
 *   accept_unkeyed   mutate, long_running                               (unkeyed)
 *   accept_brief     mutate, idempotent, long_running, completion_timeout_s 2
 *
 *   1. A run awaiting approvals.accept suspends (no worker, no process held, a waits row);
 *      serve is stopped and started twice and the run stays suspended, the module asked
 *      once; `flow complete KEY REPLY` resumes it on the third serve, which finishes it
 *      with the module's result; the module saw one request in all [guards: the
 *      request's long_running and the accepted reply (ops_module); the flow host's wait
 *      (record_wait) and its resume answer without a resend (call_again's waiting
 *      check); the driver's LongRunning and Finished(suspended) (activation.c);
 *      flow.complete's wake].
 *   1b. Two calls awaited at once: one completion resumes the run, which suspends again on
 *      the other (never asked again); the second, a rejection, ends it.
 *   1c. approvals.accept_event names completion_event "decided": the module's event
 *      approvals/decided whose id is the call's key completes it through serve's event
 *      delivery; the same key in an event of another name or module does not [guard:
 *      long_running_complete_by_event's match].
 *   2. approvals.accept_brief is never completed: the scheduler rejects it "timeout" after its
 *      2 s and the run resumes and succeeds with what the script made of the rejection,
 *      although its manifest's deadline is 1 s: the time suspended is not counted
 *      [guards: long_running_expire in serve's scheduler; run_time_left's
 *      suspended_ms].
 *   3. Without a serve: `run` ends suspended; `flow reconcile RUN 0 --observed JSON`
 *      settles the waiting call and drives the run to succeeded; the module was asked
 *      once [guard: reconcile's waiting branch].
 *   4. SIGKILL of the parent right after the module accepted (before the wait is
 *      recorded) and right after the wait's commit, then `recover`: keyed, the call is
 *      resent with its key once / never, and the run suspends; unkeyed, it goes to
 *      needs_reconcile / suspends (a recorded wait is not in doubt) [guards: call_again's
 *      waiting check; in_doubt's waiting exception].
 *   5. Refusals, each one line, exit 1, nothing changed: a completion with an unknown
 *      key, one that is not a module's reply, a second completion of the same call; a
 *      catalog with completion_timeout_s on an op that is not long_running, and one whose
 *      sink is a long-running op [guards: long_running_complete's checks, parse_op,
 *      parse_sink]. */
#include "lib/cli_home.h"
#include "lib/harness.h"
#include "lib/serve_home.h"
#include "lib/store_view.h"

#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TIMEOUT_MS 60000

static char g_root[PATH_MAX];

struct scenario {
    struct test_home t;
    char log[PATH_MAX + 16];
};

static struct scenario S;

static char *const NO_ENV[] = {NULL};

#define CATALOG                                                                            \
    "{\"modules\": {\"approvals\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"],"   \
    " \"ops\": {\"accept\": {\"kind\": \"mutate\", \"idempotent\": true,"                  \
    "  \"long_running\": true},"                                                         \
    " \"accept_unkeyed\": {\"kind\": \"mutate\", \"long_running\": true},"                \
    " \"accept_brief\": {\"kind\": \"mutate\", \"idempotent\": true, \"long_running\": true,"    \
    "  \"completion_timeout_s\": 2},"                                                       \
    " \"accept_event\": {\"kind\": \"mutate\", \"idempotent\": true, \"long_running\": true,"    \
    "  \"completion_event\": \"decided\"}}}}%s}"

static bool catalog_write(const char *more)
{
    char text[4096], path[PATH_MAX + 32];
    sfmt(text, sizeof text, CATALOG, harness_path("test/tools/test_module"), S.log, more);
    sfmt(path, sizeof path, "%s/modules.json", S.t.home);
    return write_text_file(path, text, 0600);
}

static bool scenario_begin(const char *name)
{
    memset(&S, 0, sizeof S);
    test_home_begin(&S.t, g_root, name);
    sfmt(S.log, sizeof S.log, "%s/module.log", S.t.dir);
    return check(catalog_write(""), "long-running: the catalog written", "%s", S.t.home);
}

/* A manual flow granting approvals.OP whose script is script; deadline_s 0: default. */
static bool flow_add(const char *id, const char *op, int deadline_s, const char *script)
{
    char trigger[256];
    if (deadline_s > 0)
        sfmt(trigger, sizeof trigger, "{\"manual\":true},\"deadline\":\"%ds\","
             "\"ops\":[{\"module\":\"approvals\",\"op\":\"%s\"}]", deadline_s, op);
    else
        sfmt(trigger, sizeof trigger, "{\"manual\":true},"
             "\"ops\":[{\"module\":\"approvals\",\"op\":\"%s\"}]", op);
    return test_home_flow(&S.t, id, 1, trigger, script);
}

static struct proc_result cli(bool json, char *const *envp, const char *const *args)
{
    struct cli_opts opts = {.json = json, .envp = envp, .timeout_ms = TIMEOUT_MS};
    return cli_run(S.t.home, &opts, args);
}

static char *sql_text(const char *sql)
{
    return store_text(S.t.db, sql);
}

static long long sql_number(const char *sql)
{
    return test_home_sql(&S.t, sql);
}

/* The module log's lines (every request the module got). */
static long long module_requests(void)
{
    char *text = read_text_file(S.log);
    long long n = 0;
    for (const char *p = text; p != NULL && *p != '\0'; p++)
        n += *p == '\n';
    free(text);
    return n;
}

/* `run ID --json`: its JSON (NULL when none); *killed if the CLI died by SIGKILL. */
static json_t *run_flow(const char *id, char *const *envp, bool *killed)
{
    struct proc_result r = cli(true, envp, ARGS("run", id));
    if (killed != NULL)
        *killed = died_by_signal(&r, SIGKILL);
    json_t *v = cli_output_json(&r);
    if (v == NULL && (killed == NULL || !*killed))
        fprintf(stderr, "  run %s: %s\n  stderr: %s\n", id, proc_describe(&r), r.err);
    proc_result_free(&r);
    return v;
}

static const char *state_of(const json_t *run)
{
    return json_string_value(json_object_get(run, "state"));
}

/* The script: one long-running call to approvals.OP whose args make test_module accept
 * it, then its result. */
#define AWAIT_SCRIPT(op)                                                                   \
    "const r = await ops.call('approvals', '" op "', {ticket: 7});\nreturn {r};\n"

/* ---- 1. suspended across two restarts, completed by the module ------------------------ */

static void test_restarts(void)
{
    if (!scenario_begin("restarts") || !flow_add("approve", "accept", 0, AWAIT_SCRIPT("accept")))
        return;
    struct test_serve s;
    if (!check(test_serve_start(&s, &S.t, NULL, NULL), "restarts: serve starts", "%s", s.log))
        return;
    struct proc_result r = cli(true, NO_ENV, ARGS("run", "approve"));
    json_t *run = cli_output_json(&r);
    check_str_eq(state_of(run), "suspended",
                 "restarts: the run awaiting a long-running call ends its activation suspended");
    json_decref(run);
    proc_result_free(&r);
    check_int_eq(sql_number("SELECT count(*) FROM waits WHERE run_id = 1 AND position = 0"), 1,
                 "restarts: the call waits for its completion (a waits row)");
    check_int_eq(sql_number("SELECT count(*) FROM call_processes"), 0,
                 "restarts: no module process is held while it waits");
    check_int_eq(module_requests(), 1, "restarts: the module got the request once");
    char *logged = read_text_file(S.log);
    ok(logged != NULL && strstr(logged, "accept ") == logged,
       "restarts: the module was told the op is long-running (it accepted)");
    free(logged);
    check_int_eq(test_serve_stop(&s), 0, "restarts: the first serve stops cleanly");

    for (int i = 0; i < 2; i++) {
        char what[128];
        struct test_serve again;
        sfmt(what, sizeof what, "restarts: serve %d starts", i + 2);
        if (!check(test_serve_start(&again, &S.t, NULL, NULL), what, "%s", again.log))
            return;
        char *state = sql_text("SELECT state FROM runs WHERE id = 1");
        sfmt(what, sizeof what, "restarts: on serve %d the run is still suspended", i + 2);
        check_str_eq(state, "suspended", what);
        free(state);
        sfmt(what, sizeof what, "restarts: serve %d stops cleanly", i + 2);
        check_int_eq(test_serve_stop(&again), 0, what);
    }
    check_int_eq(module_requests(), 1, "restarts: two restarts asked the module nothing more");

    if (!check(test_serve_start(&s, &S.t, NULL, NULL), "restarts: serve 4 starts", "%s", s.log))
        return;
    char *key = sql_text("SELECT idempotency_key FROM journal WHERE run_id = 1 AND position = 0");
    r = cli(true, NO_ENV, ARGS("flow", "complete", key != NULL ? key : "?",
                                 "{\"result\": {\"approved\": true, \"by\": \"ana\"}}"));
    json_t *done = cli_output_json(&r);
    check(r.exit_code == 0 && json_is_true(json_object_get(done, "resumed")),
          "restarts: flow complete KEY REPLY is taken and the suspended run resumes",
          "%s / %s", r.out, r.err);
    json_decref(done);
    proc_result_free(&r);
    free(key);
    check(test_serve_wait_log(&s, "state=succeeded", TIMEOUT_MS),
          "restarts: the resumed run ends succeeded on the serve that was running", "%s", s.log);
    char *result = sql_text("SELECT result FROM runs WHERE id = 1");
    check_str_eq(result, "{\"r\":{\"approved\":true,\"by\":\"ana\"}}",
                 "restarts: the script received the module's completion as the call's value");
    free(result);
    check_int_eq(module_requests(), 1, "restarts: the module saw one request in all");
    check_int_eq(sql_number("SELECT count(*) FROM waits"), 0, "restarts: nothing waits any more");
    check_int_eq(sql_number("SELECT count(*) FROM activations WHERE run_id = 1"), 2,
                 "restarts: two activations: the one that suspended and the resume");
    check_int_eq(test_serve_stop(&s), 0, "restarts: the last serve stops cleanly");
}

/* ---- 1b. two long-running calls at once ---------------------------------------------- */

static void test_two_at_once(void)
{
    const char *script =
        "const [a, b] = await Promise.all([ops.call('approvals', 'accept', {n: 1}),\n"
        "                                  ops.call('approvals', 'accept', {n: 2})]);\n"
        "return {a, b};\n";
    if (!scenario_begin("two") || !flow_add("two", "accept", 0, script))
        return;
    json_t *run = run_flow("two", NO_ENV, NULL);
    check_str_eq(state_of(run), "suspended", "two: a run awaiting two long-running calls suspends");
    json_decref(run);
    check_int_eq(sql_number("SELECT count(*) FROM waits WHERE run_id = 1"), 2,
                 "two: both calls wait");
    char *key0 = sql_text("SELECT idempotency_key FROM journal WHERE run_id = 1 AND position = 0");
    char *key1 = sql_text("SELECT idempotency_key FROM journal WHERE run_id = 1 AND position = 1");
    struct proc_result r = cli(false, NO_ENV, ARGS("flow", "complete", key1 != NULL ? key1 : "?",
                                                   "{\"result\": \"second\"}"));
    check_int_eq(r.exit_code, 0, "two: the second call's completion is taken first");
    proc_result_free(&r);
    r = cli(true, NO_ENV, ARGS("recover"));
    proc_result_free(&r);
    char *state = sql_text("SELECT state FROM runs WHERE id = 1");
    check_str_eq(state, "suspended",
                 "two: resumed with one completion, the run suspends again on the other");
    free(state);
    check_int_eq(sql_number("SELECT count(*) FROM waits WHERE run_id = 1 AND position = 0"), 1,
                 "two: the first call still waits, the second does not");
    r = cli(false, NO_ENV, ARGS("flow", "complete", key0 != NULL ? key0 : "?",
                                "{\"error\": {\"code\": \"refused\", \"message\": \"no\"}}"));
    check_int_eq(r.exit_code, 0, "two: the first call's completion (a rejection) is taken");
    proc_result_free(&r);
    r = cli(true, NO_ENV, ARGS("recover"));
    proc_result_free(&r);
    state = sql_text("SELECT state || ':' || coalesce(error, '') FROM runs WHERE id = 1");
    ok(state != NULL && strncmp(state, "failed:", 7) == 0 && strstr(state, "no") != NULL,
       "two: resumed with both, Promise.all rejects with the module's error and the run fails");
    free(state);
    check_int_eq(module_requests(), 2, "two: the module got each call once");
    free(key0);
    free(key1);
}

/* ---- 1c. completed by the module's event --------------------------------------------- */

static void test_event(void)
{
    if (!scenario_begin("event") ||
        !flow_add("decide", "accept_event", 0, AWAIT_SCRIPT("accept_event")))
        return;
    struct test_serve s;
    if (!check(test_serve_start(&s, &S.t, NULL, NULL), "event: serve starts", "%s", s.log))
        return;
    struct proc_result r = cli(true, NO_ENV, ARGS("run", "decide"));
    json_t *run = cli_output_json(&r);
    check_str_eq(state_of(run), "suspended", "event: the run suspends");
    json_decref(run);
    proc_result_free(&r);
    char *key = sql_text("SELECT idempotency_key FROM journal WHERE run_id = 1 AND position = 0");
    const char *k = key != NULL ? key : "x";
    /* Controls: the right key from an event the op is not completed by. */
    r = cli(false, NO_ENV, ARGS("event", "emit", "approvals", "other", "1", "--id", k,
                                "--payload", "{\"result\": 1}"));
    proc_result_free(&r);
    r = cli(false, NO_ENV, ARGS("event", "emit", "tickets", "decided", "1", "--id", k,
                                "--payload", "{\"result\": 2}"));
    proc_result_free(&r);
    char *state = sql_text("SELECT state FROM runs WHERE id = 1");
    check_str_eq(state, "suspended", "event: an event of another name, or of another module,"
                 " with the call's key completes nothing");
    free(state);
    r = cli(true, NO_ENV, ARGS("event", "emit", "approvals", "decided", "1", "--id", k,
                               "--payload", "{\"result\": {\"ok\": true}}"));
    json_t *v = cli_output_json(&r);
    check(json_array_size(json_object_get(v, "completed")) == 1,
          "event: the op's completion_event with the call's key as its id completes the call",
          "%s / %s", r.out, r.err);
    json_decref(v);
    proc_result_free(&r);
    check(test_serve_wait_log(&s, "state=succeeded", TIMEOUT_MS),
          "event: the run resumes and succeeds", "%s", s.log);
    char *result = sql_text("SELECT result FROM runs WHERE id = 1");
    check_str_eq(result, "{\"r\":{\"ok\":true}}", "event: the event's payload was the reply");
    free(result);
    free(key);
    check_int_eq(module_requests(), 1, "event: the module was asked once");
    check_int_eq(test_serve_stop(&s), 0, "event: serve stops cleanly");
}

/* ---- 2. the completion's timeout, not counted against the run's deadline -------------- */

static void test_timeout(void)
{
    if (!scenario_begin("timeout"))
        return;
    const char *script =
        "try { await ops.call('approvals', 'accept_brief', {ticket: 8}); return 'done'; }\n"
        "catch (e) { return e.data.code; }\n";
    if (!flow_add("brief", "accept_brief", 1, script))
        return;
    struct test_serve s;
    if (!check(test_serve_start(&s, &S.t, NULL, NULL), "timeout: serve starts", "%s", s.log))
        return;
    struct proc_result r = cli(true, NO_ENV, ARGS("run", "brief"));
    json_t *run = cli_output_json(&r);
    check_str_eq(state_of(run), "suspended", "timeout: the run suspends");
    json_decref(run);
    proc_result_free(&r);
    check(test_serve_wait_log(&s, "event=long_running_timed_out", TIMEOUT_MS),
          "timeout: serve's scheduler rejects the call once its completion_timeout_s passed",
          "%s", s.log);
    check(test_serve_wait_log(&s, "state=succeeded", TIMEOUT_MS),
          "timeout: the run resumes and ends succeeded although its deadline is 1 s (2 s were"
          " spent suspended)", "%s", s.log);
    char *result = sql_text("SELECT result FROM runs WHERE id = 1");
    check_str_eq(result, "\"timeout\"", "timeout: the script caught HostError timeout");
    free(result);
    check_int_eq(module_requests(), 1, "timeout: the module was asked once");
    check_int_eq(test_serve_stop(&s), 0, "timeout: serve stops cleanly");
}

/* ---- 3. the operator's reconcile, without a serve ------------------------------------- */

static void test_reconcile(void)
{
    if (!scenario_begin("reconcile") || !flow_add("approve", "accept", 0, AWAIT_SCRIPT("accept")))
        return;
    json_t *run = run_flow("approve", NO_ENV, NULL);
    check_str_eq(state_of(run), "suspended", "reconcile: `run` without a serve ends suspended");
    json_decref(run);
    struct proc_result r = cli(true, NO_ENV, ARGS("flow", "reconcile", "1", "0", "--observed",
                                                  "{\"approved\": false}"));
    json_t *v = cli_output_json(&r);
    check_str_eq(state_of(v), "succeeded",
                 "reconcile: --observed on the waiting call drives the run to its end");
    json_decref(v);
    proc_result_free(&r);
    char *result = sql_text("SELECT result FROM runs WHERE id = 1");
    check_str_eq(result, "{\"r\":{\"approved\":false}}",
                 "reconcile: the script received the observed value");
    free(result);
    check_int_eq(module_requests(), 1, "reconcile: the module was asked once");
    char *audit = sql_text("SELECT reason FROM audit WHERE kind = 'complete'");
    check_str_eq(audit, "long-running call observed by the operator",
                 "reconcile: audited as the operator's completion");
    free(audit);
}

/* ---- 4. crashes around the module's acceptance ---------------------------------------- */

struct crash_case {
    const char *op;       /* approvals.accept (keyed) or approvals.accept_unkeyed */
    const char *boundary; /* where the parent dies */
    const char *after;    /* the run's state after recover */
    long long requests;   /* the module's requests in all */
};

static void crash_case_run(const struct crash_case *cc)
{
    char name[128], what[256], dir[64], kill_at[96];
    sfmt(name, sizeof name, "crash %s at %s", cc->op, cc->boundary);
    sfmt(dir, sizeof dir, "crash-%s-%s", cc->op, cc->boundary);
    if (!scenario_begin(dir))
        return;
    char script[256];
    sfmt(script, sizeof script,
         "const r = await ops.call('approvals', '%s', {ticket: 9});\nreturn {r};\n", cc->op);
    if (!flow_add("crash", cc->op, 0, script))
        return;
    sfmt(kill_at, sizeof kill_at, "BASAL_TEST_KILL_AT=%s:0", cc->boundary);
    char *const env[] = {kill_at, NULL};
    bool killed = false;
    json_decref(run_flow("crash", env, &killed));
    sfmt(what, sizeof what, "%s: the parent died by SIGKILL at the boundary", name);
    ok(killed, what);
    char *key = sql_text("SELECT idempotency_key FROM journal WHERE run_id = 1 AND position = 0");
    struct proc_result r = cli(true, NO_ENV, ARGS("recover"));
    proc_result_free(&r);
    char *state = sql_text("SELECT state FROM runs WHERE id = 1");
    sfmt(what, sizeof what, "%s: recover leaves the run %s", name, cc->after);
    check_str_eq(state, cc->after, what);
    free(state);
    sfmt(what, sizeof what, "%s: the module got %lld request(s) in all", name, cc->requests);
    check_int_eq(module_requests(), cc->requests, what);
    char *logged = read_text_file(S.log);
    long long with_key = 0;
    for (const char *p = logged; key != NULL && p != NULL && (p = strstr(p, key)) != NULL; p++)
        with_key++;
    sfmt(what, sizeof what, "%s: every request carried the journal row's key", name);
    check_int_eq(with_key, cc->requests, what);
    free(logged);
    free(key);
}

static void test_crash(void)
{
    static const struct crash_case CASES[] = {
        /* keyed: resent with its key while the wait was not recorded, never after */
        {"accept", "after_dispatch", "suspended", 2},
        {"accept", "after_outcome_commit", "suspended", 1},
        /* unkeyed: in doubt until the wait is recorded; a recorded wait is not */
        {"accept_unkeyed", "after_dispatch", "needs_reconcile", 1},
        {"accept_unkeyed", "after_outcome_commit", "suspended", 1},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        crash_case_run(&CASES[i]);
}

/* ---- 5. refusals --------------------------------------------------------------------- */

static void test_refusals(void)
{
    if (!scenario_begin("refusals") || !flow_add("approve", "accept", 0, AWAIT_SCRIPT("accept")))
        return;
    json_decref(run_flow("approve", NO_ENV, NULL));
    char *key = sql_text("SELECT idempotency_key FROM journal WHERE run_id = 1 AND position = 0");
    if (key == NULL) {
        ok(false, "refusals: the call was journaled");
        return;
    }
    const char *unknown = "0000000000000000000000000000000000000000000000000000000000000000";
    const struct cli_refusal rows[] = {
        {"refusals: a completion with a key no call waits with",
         ARGS("flow", "complete", unknown, "{\"result\": 1}"), 1, "no long-running call waits"},
        {"refusals: a key that is not 64 hex digits",
         ARGS("flow", "complete", "ABC", "{\"result\": 1}"), 1, "idempotency key"},
        {"refusals: a completion that is not a module's reply",
         ARGS("flow", "complete", key, "{\"approved\": true}"), 1, "must be a module's reply"},
        {"refusals: an error reply with a bad code",
         ARGS("flow", "complete", key, "{\"error\": {\"code\": \"Bad!\", \"message\": \"x\"}}"), 1,
         "must be a module's reply"},
        {"refusals: a completion without its reply", ARGS("flow", "complete", key), 2,
         "usage: ck-basal flow complete KEY REPLY"},
    };
    cli_expect_refusals(S.t.home, rows, sizeof rows / sizeof rows[0]);
    check_int_eq(sql_number("SELECT count(*) FROM mailbox"), 0,
                 "refusals: no refused completion reached the mailbox");
    char *state = sql_text("SELECT state FROM runs WHERE id = 1");
    check_str_eq(state, "suspended", "refusals: the run is still suspended");
    free(state);

    struct proc_result r = cli(false, NO_ENV, ARGS("flow", "complete", key, "{\"result\": 2}"));
    check_int_eq(r.exit_code, 0, "refusals: the first good completion is taken");
    proc_result_free(&r);
    const struct cli_refusal again[] = {
        {"refusals: the same call completed twice", ARGS("flow", "complete", key, "{\"result\": 3}"),
         1, "no long-running call waits"},
    };
    cli_expect_refusals(S.t.home, again, 1);
    char *value = sql_text("SELECT value FROM mailbox WHERE run_id = 1 AND position = 0");
    check_str_eq(value, "2", "refusals: the second completion changed nothing");
    free(value);
    free(key);

    /* The catalog's own checks, each refusing the whole catalog at the next run. */
    static const struct {
        const char *more, *err;
    } CATALOGS[] = {
        {", \"sinks\": {\"asks\": {\"module\": \"approvals\", \"op\": \"accept\"}}",
         "is long_running; a sink's op must answer at once"},
    };
    for (size_t i = 0; i < sizeof CATALOGS / sizeof CATALOGS[0]; i++) {
        if (!catalog_write(CATALOGS[i].more))
            return;
        r = cli(false, NO_ENV, ARGS("run", "approve", "--trigger-id", "second"));
        check(r.exit_code == 1 && strstr(r.err, CATALOGS[i].err) != NULL,
              "refusals: a sink naming a long-running op refuses the catalog", "%s", r.err);
        proc_result_free(&r);
    }
    char text[4096], path[PATH_MAX + 32];
    sfmt(text, sizeof text,
         "{\"modules\": {\"approvals\": {\"program\": \"%s\", \"ops\": {\"accept\":"
         " {\"kind\": \"mutate\", \"completion_timeout_s\": 5}}}}}",
         harness_path("test/tools/test_module"));
    sfmt(path, sizeof path, "%s/modules.json", S.t.home);
    if (!write_text_file(path, text, 0600))
        return;
    r = cli(false, NO_ENV, ARGS("run", "approve", "--trigger-id", "third"));
    check(r.exit_code == 1 && strstr(r.err, "only a \"long_running\": true op has one") != NULL,
          "refusals: completion_timeout_s on an op that is not long_running refuses the catalog",
          "%s", r.err);
    proc_result_free(&r);
    check_int_eq(sql_number("SELECT count(*) FROM runs"), 1,
                 "refusals: no refused run was admitted");
}

int main(void)
{
    if (!require_parent_and_module("ck-basal", "test_module"))
        return harness_finish();
    snprintf(g_root, sizeof g_root, "%s", harness_tmpdir("long-running"));
    test_restarts();
    test_two_at_once();
    test_event();
    test_timeout();
    test_reconcile();
    test_crash();
    test_refusals();
    harness_remove_tree(g_root);
    return harness_finish();
}
