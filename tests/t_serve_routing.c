/* While a serve runs, `flow reconcile`, `recover` and `codemode run` ask it over the
 * ops socket instead of changing the store beside it (cli/cmd_run.c, cli/cmd_codemode.c;
 * serve/daemon.c, "flow.reconcile", "recover", "codemode.run"), and `flow dry-run`,
 * which writes only its audit row, runs beside it; through the real ck-basal.
 *
 *   1. flow reconcile: two homes built alike, in each a run left in doubt by a parent
 *      killed after dispatching an unkeyed mutation. Home A has a serve (which finds the
 *      run and ends it needs_reconcile), home B none (`recover` does). `flow reconcile
 *      --observed` and `--cancel` print the same (--json, but wall_ms) in both; in A
 *      serve's log shows the decision (event=run_reconciled) and serve driving the run
 *      again (its second run_started and run_ended), the audit has one reconcile row
 *      per decision, and the unkeyed mutation ran once [guard: reconcile is routed].
 *   2. recover under load: a gate run holds the one runner of a --max-runs 1 serve (a
 *      module call blocked on a FIFO) while runs are admitted with --detach and two
 *      `recover` commands start; once both have asked, the gate opens. Both exit 0 and
 *      print a succeeded end for every run they list, which is at least every run
 *      admitted before each started; serve's log shows recover_requested
 *      twice and exactly one run_started per run (serve drove every run, once); the
 *      keyed module saw each run's call exactly once; one activation per run; the
 *      store's integrity_check is ok [guard: recover is routed]. With nothing left,
 *      `recover` through serve prints "nothing to recover", as without one.
 *   3. codemode run: human and --json output are the same through serve and without
 *      one (but wall_ms); a script on stdin and one over what a request carries (sent
 *      by its path) run through serve; serve's log shows every run ended and its store
 *      holds them [guard: codemode run is routed].
 *   4. flow dry-run beside a running serve: it changes no row of any table but one
 *      audit row, performs no mutation, and serve goes on admitting and driving runs
 *      (it is not routed: it writes nothing serve acts on).
 *   5. under load: 16 runs on a two-runner serve while 6 codemode runs and 6 dry runs
 *      start beside the admissions; then SIGKILL of serve and a restart: every run
 *      succeeded once (keyed calls, activations), every codemode run and dry-run audit
 *      row is there once, no dry run left a run, integrity_check is ok. */
#include "lib/harness.h"
#include "lib/serve_home.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TIMEOUT_MS SERVE_HOME_TIMEOUT_MS
#define FLOWS 4
#define RUNS_PER_FLOW 4
#define TOTAL_RUNS 16 /* FLOWS * RUNS_PER_FLOW, as a constant of its own type */
_Static_assert(TOTAL_RUNS == FLOWS * RUNS_PER_FLOW, "TOTAL_RUNS counts every run");

static char g_root[PATH_MAX];

struct home {
    struct test_home t;
    char keyed_log[PATH_MAX + 16];
    char plain_log[PATH_MAX + 16];
};

static void home_begin(struct home *h, const char *name)
{
    memset(h, 0, sizeof *h);
    test_home_begin(&h->t, g_root, name);
    sfmt(h->keyed_log, sizeof h->keyed_log, "%s/keyed.log", h->t.dir);
    sfmt(h->plain_log, sizeof h->plain_log, "%s/plain.log", h->t.dir);
    const char *module = harness_path("test/tools/test_module");
    char catalog[4096], path[PATH_MAX + 32];
    sfmt(catalog, sizeof catalog,
         "{\"modules\": {"
         " \"keyed\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"],"
         "   \"ops\": {\"echo\": {\"kind\": \"mutate\", \"idempotent\": true}}},"
         " \"plain\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"],"
         "   \"ops\": {\"add\": {\"kind\": \"mutate\"}}},"
         " " TEST_HOLD_MODULE_JSON "}}",
         module, h->keyed_log, module, h->plain_log, module, h->plain_log);
    sfmt(path, sizeof path, "%s/modules.json", h->t.home);
    if (!write_text_file(path, catalog, 0600))
        fail("serve routing: catalog", "%s", path);
}

#define GRANTS                                                                           \
    "{\"manual\":true},\"ops\":[{\"module\":\"keyed\",\"op\":\"echo\"},"                 \
    "{\"module\":\"plain\",\"op\":\"add\"}]"

/* Position 2 is the unkeyed mutation. */
static const char *DOUBT_FLOW =
    "const c = (await kv.get('c')) ?? 0;\n"
    "await kv.set('c', c + 1);\n"
    "const u = await ops.call('plain', 'add', {a: 20, b: 22});\n"
    "return {c, u};\n";

static const char *WORK_FLOW =
    "const n = trigger.n;\n"
    "await ops.call('keyed', 'echo', {n});\n"
    "let x = 0; for (let i = 0; i < (trigger.spin || 2000000); i++) x += i;\n"
    "await kv.set('last', n);\n"
    "return n;\n";

static struct proc_result cli(const struct home *h, bool json, const char *const *args)
{
    return test_home_cli(&h->t, json, args);
}

/* `run FLOW` with the parent killed at the test hook's boundary. */
static bool run_killed_at(const struct home *h, const char *flow, const char *at)
{
    char env_kill[128];
    sfmt(env_kill, sizeof env_kill, "BASAL_TEST_KILL_AT=%s", at);
    char *const env[] = {env_kill, NULL};
    struct cli_opts opts = {.envp = env, .timeout_ms = TIMEOUT_MS};
    struct proc_result r = cli_run(h->t.home, &opts, ARGS("run", flow));
    bool killed = died_by_signal(&r, SIGKILL);
    proc_result_free(&r);
    return killed;
}

/* Admits run i of the load (`run workN --detach` with trigger {"n": i}, the flows
 * taken in turn); true if serve admitted it. */
static bool admit_work_run(const struct home *h, int i)
{
    char id[16], trigger[32];
    sfmt(id, sizeof id, "work%d", i % FLOWS);
    sfmt(trigger, sizeof trigger, "{\"n\":%d}", i);
    struct proc_result r = cli(h, false, ARGS("run", id, "--detach", "--trigger", trigger));
    bool admitted = proc_exited_with(&r, 0);
    proc_result_free(&r);
    return admitted;
}

/* ---- 1. flow reconcile ------------------------------------------------------------- */

/* Both flows of h left with a run in doubt (run 1 of "doubt", run 2 of "doubt2"). */
static bool doubt_home(struct home *h, const char *name)
{
    home_begin(h, name);
    return test_home_flow(&h->t, "doubt", 1, GRANTS, DOUBT_FLOW) &&
           test_home_flow(&h->t, "doubt2", 1, GRANTS, DOUBT_FLOW) &&
           run_killed_at(h, "doubt", "after_dispatch:2") &&
           run_killed_at(h, "doubt2", "after_dispatch:2");
}

static void test_reconcile(void)
{
    struct home a, b;
    bool built = doubt_home(&a, "reconcile-a") && doubt_home(&b, "reconcile-b");
    if (!check(built, "serve routing: two homes with runs in doubt (parent killed)", "%s",
               "see stderr"))
        return;
    struct proc_result r = cli(&b, true, ARGS("recover"));
    check(strstr(r.out, "needs_reconcile") != NULL,
          "serve routing: without serve, recover leaves the runs needs_reconcile", "%s: %.400s",
          proc_describe(&r), r.out);
    proc_result_free(&r);

    struct test_serve s;
    if (!test_serve_start(&s, &a.t, NULL, NULL)) {
        fail("serve routing: serve starts", "%.400s", s.log);
        return;
    }
    bool found = test_serve_wait_log(&s, "event=run_ended run=1 flow=doubt state=needs_reconcile",
                                     TIMEOUT_MS) &&
                 test_serve_wait_log(&s, "event=run_ended run=2 flow=doubt2 "
                                         "state=needs_reconcile", TIMEOUT_MS);
    check(found, "serve routing: serve ends the dead parent's runs needs_reconcile", "%.600s",
          s.log);

    static const char *const OBSERVED[] = {"flow", "reconcile", "1", "2", "--observed", "42", NULL};
    static const char *const CANCEL[] = {"flow", "reconcile", "2", "2", "--cancel", NULL};
    struct proc_result via = cli(&a, true, OBSERVED), direct = cli(&b, true, OBSERVED);
    cli_output_drop_wall(via.out);
    cli_output_drop_wall(direct.out);
    check(proc_exited_with(&via, 0) && proc_exited_with(&direct, 0) &&
              strcmp(via.out, direct.out) == 0 && strstr(via.out, "\"succeeded\"") != NULL &&
              strstr(via.out, "\"u\":42") != NULL,
          "serve routing: reconcile --observed through serve prints what it prints without one",
          "via serve: %s %s%s; without: %s %s%s", proc_describe(&via), via.out, via.err,
          proc_describe(&direct), direct.out, direct.err);
    proc_result_free(&via);
    proc_result_free(&direct);
    via = cli(&a, false, CANCEL);
    direct = cli(&b, false, CANCEL);
    check(proc_exited_with(&via, 0) && proc_exited_with(&direct, 0) &&
              strcmp(via.out, direct.out) == 0 && strcmp(via.out, "run 2 cancelled\n") == 0,
          "serve routing: reconcile --cancel through serve prints what it prints without one",
          "via serve: %s %s%s; without: %s %s%s", proc_describe(&via), via.out, via.err,
          proc_describe(&direct), direct.out, direct.err);
    proc_result_free(&via);
    proc_result_free(&direct);

    /* Serve logged the cancel before it answered: every line before it is there. */
    (void)test_serve_wait_log(&s, "event=run_reconciled run=2 position=2 decision=cancel",
                              TIMEOUT_MS);
    check(test_serve_log_count(&s, "event=run_reconciled run=1 position=2 decision=observed") == 1 &&
              test_serve_log_count(&s, "event=run_reconciled run=2 position=2 decision=cancel") == 1 &&
              test_serve_log_count(&s, "event=run_started run=1 ") == 2 &&
              test_serve_log_count(&s, "event=run_ended run=1 flow=doubt state=succeeded") == 1 &&
              test_serve_log_count(&s, "event=run_started run=2 ") == 1,
          "serve routing: serve settled both runs and drove the reconciled one again [guard: "
          "reconcile is routed through serve]", "%.1500s", s.log);
    check(test_home_sql(&a.t, "SELECT count(*) FROM audit WHERE kind = 'reconcile'") == 2,
          "serve routing: one audit row per decision", "%lld",
          test_home_sql(&a.t, "SELECT count(*) FROM audit WHERE kind = 'reconcile'"));
    check(file_line_count(a.plain_log) == 2,
          "serve routing: each unkeyed mutation ran once (once per run, none again)",
          "%lld calls", file_line_count(a.plain_log));
    check(test_home_sql(&a.t, "SELECT count(*) FROM runs WHERE id = 1 AND state = 'succeeded'") ==
                  1 &&
              test_home_sql(&a.t, "SELECT count(*) FROM runs WHERE id = 2 AND state = 'cancelled'") ==
                  1,
          "serve routing: the store says succeeded and cancelled", "%s", "see the runs table");
    r = cli(&a, false, ARGS("flow", "reconcile", "1", "2", "--cancel"));
    check(proc_exited_with(&r, 1) && strstr(r.err, "not needs_reconcile") != NULL,
          "serve routing: a reconcile serve refuses is one line and exit 1", "%s: %s",
          proc_describe(&r), r.err);
    proc_result_free(&r);
    check(test_serve_stop(&s) == 0, "serve routing: serve stops", "%.300s", s.log);
}

/* ---- 2. recover under load ----------------------------------------------------------- */

/* The runs a recover's --json output shows, all succeeded: their count, or -1. */
static int succeeded_lines(const char *out)
{
    int n = 0;
    for (const char *line = out; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
        json_t *o = json_loadb(line, len, 0, NULL);
        const char *state = json_string_value(json_object_get(o, "state"));
        bool good = state != NULL && strcmp(state, "succeeded") == 0;
        json_decref(o);
        if (!good)
            return -1;
        n++;
        line = end != NULL ? end + 1 : NULL;
    }
    return n;
}

static void test_recover_under_load(void)
{
    struct home h;
    home_begin(&h, "recover");
    /* The gate: the one run that holds serve's only runner (test_module's hold op) until
     * the test closes the FIFO's read end, so that runs are certainly waiting when the
     * recovers ask, however fast the machine. */
    int fifo_fd = test_home_held_flow(&h.t, "gate", "{\"manual\":true}", "0");
    bool flows = fifo_fd >= 0;
    for (int f = 0; f < FLOWS && flows; f++) {
        char id[16];
        sfmt(id, sizeof id, "work%d", f);
        flows = test_home_flow(&h.t, id, 1, GRANTS, WORK_FLOW);
    }
    if (!check(flows, "serve routing: flows for the load", "%s", "see stderr"))
        return;
    struct test_serve s;
    /* One runner, runs slower than admissions: runs wait while the recovers ask. */
    if (!test_serve_start(&s, &h.t, ARGS("--max-runs", "1"), NULL)) {
        fail("serve routing: serve starts for the load", "%.400s", s.log);
        return;
    }
    const char *recover_argv[CLI_MAX_ARGS + 6];
    cli_argv(recover_argv, sizeof recover_argv / sizeof recover_argv[0], NULL, true, h.t.home,
             ARGS("recover"));
    struct proc recovers[2];
    bool started[2] = {false, false};
    int admitted = 0, listed = 0;
    struct proc_result gated = cli(&h, false, ARGS("run", "gate", "--detach"));
    check(proc_exited_with(&gated, 0) && hold_line_read(fifo_fd, TIMEOUT_MS),
          "serve routing: the gate run holds serve's one runner", "%s: %s",
          proc_describe(&gated), gated.err);
    proc_result_free(&gated);
    for (int i = 0; i < TOTAL_RUNS; i++) {
        admitted += admit_work_run(&h, i);
        /* Two recovers join while runs are still being admitted and driven. */
        int which = i == 2 * FLOWS ? 0 : i == 3 * FLOWS ? 1 : -1;
        if (which >= 0)
            started[which] = proc_start(&recovers[which], recover_argv, NULL) == 0;
    }
    check_int_eq(admitted, TOTAL_RUNS, "serve routing: every run admitted (--detach)");
    check(test_serve_wait_log_count(&s, "event=recover_requested", 2, TIMEOUT_MS),
          "serve routing: both recovers asked serve while the gate held", "%.800s", s.log);
    close(fifo_fd); /* the gate opens: the held call returns and the runs go on */
    for (int k = 0; k < 2; k++) {
        if (!started[k]) {
            fail("serve routing: a recover starts", "%d", k);
            continue;
        }
        struct proc_result r = proc_finish(&recovers[k], NULL, 0, TIMEOUT_MS);
        int n = succeeded_lines(r.out);
        char name[120];
        sfmt(name, sizeof name, "serve routing: recover %d through a busy serve ends 0 with every run it "
             "lists succeeded", k + 1);
        check(proc_exited_with(&r, 0) && n >= 0, name, "%s: %d lines: %.600s%.300s",
              proc_describe(&r), n, r.out, r.err);
        listed += n > 0 ? n : 0;
        proc_result_free(&r);
    }
    /* Each recover listed at least the runs admitted before it started (the gate is
     * running under serve, a live owner, so it is not recover's to list). */
    check(listed >= (2 * FLOWS + 1) + (3 * FLOWS + 1),
          "serve routing: the recovers found the waiting runs", "%d", listed);
    bool all_ended = true;
    for (int run = 1; run <= TOTAL_RUNS + 1 && all_ended; run++) { /* + 1: the gate */
        char needle[64];
        sfmt(needle, sizeof needle, "event=run_ended run=%d ", run);
        all_ended = test_serve_wait_log(&s, needle, TIMEOUT_MS);
    }
    check(all_ended, "serve routing: serve ended every run", "%.800s", s.log);
    bool once = test_serve_log_count(&s, "event=recover_requested") == 2;
    for (int run = 1; run <= TOTAL_RUNS + 1 && once; run++) {
        char needle[64];
        sfmt(needle, sizeof needle, "event=run_started run=%d ", run);
        once = test_serve_log_count(&s, needle) == 1;
    }
    check(once,
          "serve routing: both recovers asked serve, and serve drove every run exactly once "
          "[guard: recover is routed through serve]", "%.2000s", s.log);
    check_int_eq(file_line_count(h.keyed_log), TOTAL_RUNS,
                 "serve routing: the keyed module saw each run's call once");
    check_int_eq(test_home_sql(&h.t, "SELECT count(DISTINCT json_extract(trigger, '$.n')) FROM runs"
                                     " WHERE state = 'succeeded'"),
                 TOTAL_RUNS, "serve routing: every run succeeded, none lost");
    check_int_eq(test_home_sql(&h.t, "SELECT count(*) FROM activations"), TOTAL_RUNS + 1,
                 "serve routing: one activation per run (the gate's too), none repeated");
    check_int_eq(test_home_sql(&h.t, "SELECT count(*) FROM pragma_integrity_check"
                                     " WHERE integrity_check = 'ok'"),
                 1, "serve routing: the store's integrity_check is ok");

    struct proc_result via = cli(&h, false, ARGS("recover"));
    check(proc_exited_with(&via, 0) && strcmp(via.out, "nothing to recover\n") == 0,
          "serve routing: recover through serve with nothing left prints what it prints "
          "without one", "%s: %s%s", proc_describe(&via), via.out, via.err);
    proc_result_free(&via);
    check(test_serve_stop(&s) == 0, "serve routing: serve stops after the load", "%.300s", s.log);
    struct proc_result direct = cli(&h, false, ARGS("recover"));
    check(proc_exited_with(&direct, 0) && strcmp(direct.out, "nothing to recover\n") == 0,
          "serve routing: without serve, recover with nothing left says so", "%s: %s%s",
          proc_describe(&direct), direct.out, direct.err);
    proc_result_free(&direct);
}

/* ---- 3. codemode run ------------------------------------------------------------------ */

/* `codemode run` of script (a file of dir) in h, --json or not; stdin when script is
 * NULL (then text is piped). */
static struct proc_result codemode(const struct home *h, bool json, const char *file,
                                   const char *stdin_text)
{
    struct cli_opts opts = {.json = json, .input = stdin_text, .timeout_ms = TIMEOUT_MS};
    return cli_run(h->t.home, &opts, ARGS("codemode", "run", file != NULL ? file : "-"));
}

static void test_codemode(void)
{
    struct home a, b;
    home_begin(&a, "codemode-a");
    home_begin(&b, "codemode-b");
    char script[PATH_MAX + 32], big[PATH_MAX + 32];
    sfmt(script, sizeof script, "%s/codemode.js", g_root);
    sfmt(big, sizeof big, "%s/big.js", g_root);
    /* Over the size a request carries: it goes to serve by its path. */
    size_t pad = 200u << 10;
    char *big_text = malloc(pad + 64);
    bool built = big_text != NULL && write_text_file(script, "console.log('line one');\n"
                                                             "return {seven: 7};\n", 0644);
    if (big_text != NULL) {
        big_text[0] = '/';
        big_text[1] = '/';
        big_text[2] = ' ';
        memset(big_text + 3, 'x', pad);
        sfmt(big_text + 3 + pad, 61, "\nreturn 'big';\n");
        built = built && write_text_file(big, big_text, 0644);
    }
    free(big_text);
    if (!check(built, "serve routing: codemode scripts written", "%s", "see stderr"))
        return;
    struct test_serve s;
    if (!test_serve_start(&s, &a.t, NULL, NULL)) {
        fail("serve routing: serve starts for codemode", "%.400s", s.log);
        return;
    }
    for (int json = 0; json < 2; json++) {
        struct proc_result via = codemode(&a, json == 1, script, NULL);
        struct proc_result direct = codemode(&b, json == 1, script, NULL);
        cli_output_drop_wall(via.out);
        cli_output_drop_wall(direct.out);
        char name[160];
        sfmt(name, sizeof name, "serve routing: codemode run%s through serve prints what it prints "
             "without one", json == 1 ? " --json" : "");
        check(proc_exited_with(&via, 0) && proc_exited_with(&direct, 0) &&
                  strcmp(via.out, direct.out) == 0 && strcmp(via.err, direct.err) == 0 &&
                  strstr(via.out, "succeeded") != NULL,
              name, "via serve: %s %s%s; without: %s %s%s", proc_describe(&via), via.out,
              via.err, proc_describe(&direct), direct.out, direct.err);
        proc_result_free(&via);
        proc_result_free(&direct);
    }
    struct proc_result piped = codemode(&a, true, NULL, "return 'piped';\n");
    check(proc_exited_with(&piped, 0) && strstr(piped.out, "\"result\":\"piped\"") != NULL,
          "serve routing: codemode run of stdin through serve", "%s: %s%s", proc_describe(&piped),
          piped.out, piped.err);
    proc_result_free(&piped);
    struct proc_result large = codemode(&a, true, big, NULL);
    check(proc_exited_with(&large, 0) && strstr(large.out, "\"result\":\"big\"") != NULL,
          "serve routing: a script over what a request carries goes to serve by its path",
          "%s: %.300s%.300s", proc_describe(&large), large.out, large.err);
    proc_result_free(&large);
    (void)test_serve_wait_log(&s, "event=codemode_run_ended run=c4 ", TIMEOUT_MS);
    check(test_serve_log_count(&s, "event=codemode_run_ended") == 4 &&
              test_home_sql(&a.t, "SELECT count(*) FROM codemode_runs WHERE state = 'succeeded'") ==
                  4,
          "serve routing: serve made and stored every codemode run [guard: codemode run is "
          "routed through serve]", "%.1200s", s.log);
    check(test_serve_stop(&s) == 0, "serve routing: serve stops after codemode", "%.300s", s.log);
}

/* ---- 4. flow dry-run beside serve ------------------------------------------------------ */

/* The store's rows outside the audit table, as one text (every table a dry run must not
 * touch), or NULL. */
static char *rows_but_audit(const struct home *h)
{
    static const char *const TABLES[] = {"flows", "flow_versions", "approvals", "runs", "journal",
                                         "mailbox", "activations", "kv", "call_processes",
                                         "codemode_runs", "codemode_calls", "events", NULL};
    char *all = NULL;
    size_t len = 0;
    for (int i = 0; TABLES[i] != NULL; i++) {
        char sql[160];
        sfmt(sql, sizeof sql, "SELECT count(*) FROM %s", TABLES[i]);
        char line[64];
        sfmt(line, sizeof line, "%s=%lld;", TABLES[i], test_home_sql(&h->t, sql));
        char *grown = realloc(all, len + strlen(line) + 1);
        if (grown == NULL) {
            free(all);
            return NULL;
        }
        all = grown;
        snprintf(all + len, strlen(line) + 1, "%s", line);
        len += strlen(line);
    }
    return all;
}

static void test_dry_run_beside(void)
{
    struct home h;
    home_begin(&h, "dry-run");
    if (!check(test_home_flow(&h.t, "work0", 1, GRANTS, WORK_FLOW),
               "serve routing: a flow to dry-run", "%s", "see stderr"))
        return;
    struct test_serve s;
    if (!test_serve_start(&s, &h.t, NULL, NULL)) {
        fail("serve routing: serve starts for the dry run", "%.400s", s.log);
        return;
    }
    struct proc_result r = cli(&h, false, ARGS("run", "work0", "--trigger", "{\"n\":1}"));
    check(proc_exited_with(&r, 0), "serve routing: a run through serve before the dry run", "%s",
          proc_describe(&r));
    proc_result_free(&r);
    char *before = rows_but_audit(&h);
    long long audit_before = test_home_sql(&h.t, "SELECT count(*) FROM audit");
    /* Its one mutation (the keyed module) is answered by a fixture, never performed. */
    char fixtures[PATH_MAX + 32];
    sfmt(fixtures, sizeof fixtures, "%s/fixtures.json", h.t.dir);
    bool written = write_text_file(fixtures,
                                   "{\"fixtures\":[{\"kind\":\"ops.call\",\"result\":{\"ok\":true}},"
                                   "{\"kind\":\"kv.set\",\"result\":true}]}",
                                   0644);
    r = cli(&h, false, ARGS("flow", "dry-run", "work0", "--version", "1", "--trigger",
                                 "{\"n\":2}", "--fixtures", fixtures));
    check(written && proc_exited_with(&r, 0) && strstr(r.out, "nothing was changed") != NULL,
          "serve routing: flow dry-run beside a running serve completes", "%s: %.400s%.300s",
          proc_describe(&r), r.out, r.err);
    proc_result_free(&r);
    char *after = rows_but_audit(&h);
    check(before != NULL && after != NULL && strcmp(before, after) == 0,
          "serve routing: the dry run changed no row of any table but the audit (so it is "
          "not routed: nothing of serve's is written)", "before %s; after %s",
          before != NULL ? before : "?", after != NULL ? after : "?");
    check_int_eq(test_home_sql(&h.t, "SELECT count(*) FROM audit") - audit_before, 1,
                 "serve routing: the dry run wrote its one audit row, beside serve");
    check_int_eq(file_line_count(h.keyed_log), 1,
                 "serve routing: the dry run performed no mutation (only the real run's)");
    free(before);
    free(after);
    r = cli(&h, false, ARGS("run", "work0", "--trigger", "{\"n\":3}"));
    check(proc_exited_with(&r, 0) && test_serve_wait_log(&s, "event=run_ended run=2 ", TIMEOUT_MS),
          "serve routing: serve goes on admitting and driving runs after the dry run", "%s: %s",
          proc_describe(&r), s.log);
    proc_result_free(&r);
    check(test_serve_stop(&s) == 0, "serve routing: serve stops after the dry run", "%.300s",
          s.log);
}

/* ---- 3. codemode run and flow dry-run beside a busy serve -------------------------- */

#define BESIDE 6 /* of each */
#define BESIDE_PROCS ((size_t)2 * BESIDE)

static void test_busy_serve_kill(void)
{
    struct home h;
    home_begin(&h, "beside");
    bool flows = true;
    for (int f = 0; f < FLOWS && flows; f++) {
        char id[16];
        sfmt(id, sizeof id, "work%d", f);
        flows = test_home_flow(&h.t, id, 1, GRANTS, WORK_FLOW);
    }
    char script[PATH_MAX + 32];
    sfmt(script, sizeof script, "%s/codemode.js", h.t.dir);
    flows = flows && write_text_file(script, "console.log('beside');\nreturn 7;\n", 0644);
    if (!check(flows, "serve routing: flows and a codemode script for the load beside serve",
               "%s", "see stderr"))
        return;
    struct test_serve s;
    if (!test_serve_start(&s, &h.t, ARGS("--max-runs", "2"), NULL)) {
        fail("serve routing: serve starts for the load beside it", "%.400s", s.log);
        return;
    }
    char fixtures[PATH_MAX + 32];
    sfmt(fixtures, sizeof fixtures, "%s/fixtures.json", h.t.dir);
    if (!write_text_file(fixtures,
                         "{\"fixtures\":[{\"kind\":\"ops.call\",\"result\":{\"ok\":true}},"
                         "{\"kind\":\"kv.set\",\"result\":true}]}", 0644))
        fail("serve routing: fixtures", "%s", fixtures);
    const char *codemode_argv[CLI_MAX_ARGS + 6], *dry_argv[CLI_MAX_ARGS + 6];
    cli_argv(codemode_argv, sizeof codemode_argv / sizeof codemode_argv[0], NULL, true,
             h.t.home, ARGS("codemode", "run", script));
    cli_argv(dry_argv, sizeof dry_argv / sizeof dry_argv[0], NULL, true, h.t.home,
             ARGS("flow", "dry-run", "work0", "--version", "1", "--trigger", "{\"n\":-1}",
                  "--fixtures", fixtures));
    struct proc beside[BESIDE_PROCS];
    bool started[BESIDE_PROCS] = {false};
    int admitted = 0, codemode_ok = 0, dry_ok = 0;
    for (int i = 0; i < TOTAL_RUNS; i++) {
        admitted += admit_work_run(&h, i);
        /* A codemode run and a dry run start beside serve every few admissions, while
         * serve's runners commit. */
        if (i % 2 == 0 && i / 2 < BESIDE) {
            size_t k = (size_t)i / 2;
            started[2 * k] = proc_start(&beside[2 * k], codemode_argv, NULL) == 0;
            started[2 * k + 1] = proc_start(&beside[2 * k + 1], dry_argv, NULL) == 0;
        }
    }
    for (size_t k = 0; k < BESIDE_PROCS; k++) {
        if (!started[k])
            continue;
        struct proc_result r = proc_finish(&beside[k], NULL, 0, TIMEOUT_MS);
        bool good = proc_exited_with(&r, 0);
        if (!good)
            fprintf(stderr, "  beside %zu: %s %.300s%.300s\n", k, proc_describe(&r), r.out, r.err);
        if (k % 2 == 0)
            codemode_ok += good && strstr(r.out, "\"succeeded\"") != NULL;
        else
            dry_ok += good;
        proc_result_free(&r);
    }
    check_int_eq(admitted, TOTAL_RUNS, "serve routing: beside: every run admitted");
    check_int_eq(codemode_ok, BESIDE, "serve routing: beside: every codemode run succeeded");
    check_int_eq(dry_ok, BESIDE, "serve routing: beside: every dry run completed");
    bool all_ended = true;
    for (int run = 1; run <= TOTAL_RUNS && all_ended; run++) {
        char needle[64];
        sfmt(needle, sizeof needle, "event=run_ended run=%d ", run);
        all_ended = test_serve_wait_log(&s, needle, TIMEOUT_MS);
    }
    check(all_ended, "serve routing: beside: serve ended every run", "%.800s", s.log);
    /* The hard end: what serve acknowledged must be on disk, not in a lost WAL. */
    kill(s.p.pid, SIGKILL);
    (void)test_serve_end(&s, TIMEOUT_MS);
    struct test_serve again;
    bool restarted = test_serve_start(&again, &h.t, NULL, NULL);
    check(restarted && strstr(again.log, "recovering=0") != NULL,
          "serve routing: beside: after SIGKILL, a new serve finds nothing to recover",
          "%.400s", again.log);
    check_int_eq(test_home_sql(&h.t, "SELECT count(DISTINCT json_extract(trigger, '$.n')) FROM runs"
                                     " WHERE state = 'succeeded'"),
                 TOTAL_RUNS, "serve routing: beside: every run succeeded, none lost");
    check_int_eq(file_line_count(h.keyed_log), TOTAL_RUNS,
                 "serve routing: beside: the keyed module saw each run's call once");
    check_int_eq(test_home_sql(&h.t, "SELECT count(*) FROM activations"), TOTAL_RUNS,
                 "serve routing: beside: one activation per run, none repeated");
    check_int_eq(test_home_sql(&h.t, "SELECT count(*) FROM codemode_runs WHERE state = 'succeeded'"),
                 BESIDE, "serve routing: beside: every codemode run is stored, once");
    check_int_eq(test_home_sql(&h.t, "SELECT count(*) FROM audit WHERE kind = 'flow.dry_run'"),
                 BESIDE, "serve routing: beside: every dry run left its one audit row");
    check_int_eq(test_home_sql(&h.t, "SELECT count(*) FROM runs WHERE json_extract(trigger, '$.n')"
                                     " = -1"),
                 0, "serve routing: beside: no dry run left a run");
    check_int_eq(test_home_sql(&h.t, "SELECT count(*) FROM pragma_integrity_check"
                                     " WHERE integrity_check = 'ok'"),
                 1, "serve routing: beside: the store's integrity_check is ok");
    if (restarted)
        check(test_serve_stop(&again) == 0, "serve routing: beside: the second serve stops",
              "%.300s", again.log);
}

int main(void)
{
    if (!require_binary(harness_test_parent(), "serve routing: the test build"))
        return harness_finish();
    sfmt(g_root, sizeof g_root, "%s", harness_tmpdir("serve-routing"));
    test_reconcile();
    test_recover_under_load();
    test_codemode();
    test_dry_run_beside();
    test_busy_serve_kill();
    harness_remove_tmpdir();
    return harness_finish();
}
