/* Sinks the operator made module ops (modules.json "sinks", docs/operations.md "The
 * module catalog"), through the real ck-basal: every scenario has its own data home
 * whose catalog makes the sink "audit" the idempotent op keyed.echo and "alerts" the
 * unkeyed op plain.echo of tests/tools/test_module (which logs "op key args" for every
 * request before it answers); "events" stays the JSON-lines file.
 *
 *   1. sink.emit('audit', item) reaches the module with the item as args and the
 *      journal row's idempotency key, fulfils with the module's result, is journaled
 *      keyed_mutation, and writes no sinks/audit.jsonl; 'alerts' is journaled
 *      mutation; 'events' still appends to its file [guard: sink_effect's module
 *      branch; sink_grant's class from the op].
 *   2. SIGKILL of the parent between the emit's journal commit and its outcome, then
 *      `recover`: the unkeyed sink's op was called at most once and the run waits in
 *      needs_reconcile (never sent again); the keyed sink's op sees the same key again
 *      and the run succeeds; once the outcome is in the mailbox neither is called again
 *      [guard: sink_grant's class from the op: journaled keyed_mutation the unkeyed
 *      emit is resent, a second call].
 *   2b. the catalog edited between that crash and the resume, so the keyed sink's emit
 *      would now go to its file: recover puts the run in needs_reconcile instead of
 *      writing the file, nothing is sent anywhere, and reconcile --not-applied makes the
 *      call afresh [guard: flow_host_changed_since's destination check].
 *   3. a catalog whose sinks name an unknown module, an unknown op, a query op, or carry
 *      an unknown field is refused at load: `run` exits 1 with one line naming the
 *      field, and nothing is stored [guard: parse_sink's checks].
 *   4. a sink the manifest does not grant is denied even when the catalog makes it a
 *      module op, and the module is never called [guard: sink_grant's manifest check].
 *   5. `flow dry-run` lists the emit captured and never calls the module, with and
 *      without --allow-queries [guard: sink.emit's dry-run column, capture]. */
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
#include <sys/stat.h>
#include <unistd.h>

#define TIMEOUT_MS 60000

static char g_root[PATH_MAX];

struct scenario {
    struct test_home t;
    char log_keyed[PATH_MAX];
    char log_plain[PATH_MAX];
};

static struct scenario S;

static char *const NO_ENV[] = {NULL};

static struct proc_result cli_env(bool json, char *const *envp, const char *const *args)
{
    struct cli_opts opts = {.json = json, .envp = envp, .timeout_ms = TIMEOUT_MS};
    return cli_run(S.t.home, &opts, args);
}

/* The modules every scenario has; printf arguments: program, keyed log, program, plain
 * log. */
#define MODULES                                                                          \
    "\"modules\": {"                                                                     \
    " \"keyed\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"],"                   \
    "   \"ops\": {\"echo\": {\"kind\": \"mutate\", \"idempotent\": true}}},"             \
    " \"plain\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"],"                   \
    "   \"ops\": {\"echo\": {\"kind\": \"mutate\"}, \"look\": {\"kind\": \"query\"}}}}"

#define SINKS                                                                            \
    "\"sinks\": {\"audit\": {\"module\": \"keyed\", \"op\": \"echo\"},"                  \
    " \"alerts\": {\"module\": \"plain\", \"op\": \"echo\"}}"

/* The catalog with sinks_json (a "sinks" member, or "" for none) after the modules. */
static bool catalog_write(const char *sinks_json)
{
    const char *module = harness_path("test/tools/test_module");
    char text[4096], path[PATH_MAX + 32];
    sfmt(text, sizeof text, "{" MODULES "%s%s}", module, S.log_keyed, module, S.log_plain,
         sinks_json[0] != '\0' ? ", " : "", sinks_json);
    sfmt(path, sizeof path, "%s/modules.json", S.t.home);
    return write_text_file(path, text, 0600);
}

static void scenario_begin(const char *name)
{
    memset(&S, 0, sizeof S);
    test_home_paths(&S.t, g_root, name);
    sfmt(S.log_keyed, sizeof S.log_keyed, "%s/keyed.log", S.t.dir);
    sfmt(S.log_plain, sizeof S.log_plain, "%s/plain.log", S.t.dir);
    char why[1024];
    if (!check(cli_home_setup(S.t.home, NULL, why, sizeof why), "module sinks: setup", "%s", why))
        return;
    ok(catalog_write(SINKS), "module sinks: the catalog written");
}

/* Writes, installs and approves a manual flow granting sinks_json (a JSON list). */
static bool flow_add(const char *id, const char *script, const char *sinks_json)
{
    char dir[PATH_MAX + 32], manifest[1024], why[1024];
    sfmt(dir, sizeof dir, "%s/flow-%s", S.t.dir, id);
    sfmt(manifest, sizeof manifest,
         "{\"format\":1,\"id\":\"%s\",\"version\":1,\"purpose\":\"test\","
         "\"trigger\":{\"manual\":true},\"sinks\":%s}", id, sinks_json);
    if (!flow_dir_write(dir, manifest, script))
        return false;
    enum flow_added step = cli_install_approve(S.t.home, NO_ENV, dir, id, 1, why, sizeof why);
    return check(step == FLOW_ADDED, "module sinks: flow install and approve", "%s", why);
}

/* `run ID` (--json) with envp: the result's JSON (NULL if none), *killed if the parent
 * died by SIGKILL. */
static json_t *run_flow(const char *id, char *const *envp, bool *killed)
{
    struct proc_result r = cli_env(true, envp, ARGS("run", id));
    if (killed != NULL)
        *killed = died_by_signal(&r, SIGKILL);
    json_t *v = cli_output_json(&r);
    if (v == NULL && (killed == NULL || !*killed))
        fprintf(stderr, "  run %s: %s\n  stderr: %s\n", id, proc_describe(&r), r.err);
    proc_result_free(&r);
    return v;
}

static char *sql_text(const char *sql)
{
    return store_text(S.t.db, sql);
}

/* The log's lines whose op is op and whose key is key (key NULL: any key). */
static long long log_lines(const char *log, const char *op, const char *key)
{
    char *text = read_text_file(log);
    long long n = 0;
    for (char *line = text, *next; line != NULL && *line != '\0'; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        char got_op[32], got_key[80];
        if (sscanf(line, "%31s %79s", got_op, got_key) == 2 && strcmp(got_op, op) == 0 &&
            (key == NULL || strcmp(got_key, key) == 0))
            n++;
    }
    free(text);
    return n;
}

/* ---- 1. an emit reaches the module --------------------------------------------------- */

static const char *EMIT_FLOW =
    "const a = await sink.emit('audit', {n: 1, text: 'hi'});\n"  /* 0 */
    "const b = await sink.emit('alerts', [2, 3]);\n"             /* 1 */
    "const c = await sink.emit('events', {n: 4});\n"             /* 2 */
    "return {a, b, bytes: c.bytes};\n";

static void test_emit_reaches_module(void)
{
    scenario_begin("emit");
    if (!flow_add("emit", EMIT_FLOW, "[\"audit\",\"alerts\",\"events\"]"))
        return;
    json_t *run = run_flow("emit", NO_ENV, NULL);
    check_str_eq(json_string_value(json_object_get(run, "state")), "succeeded",
                 "emit: the run succeeded");
    json_t *res = json_object_get(run, "result");
    json_t *want_a = json_pack("{s:i,s:s}", "n", 1, "text", "hi");
    json_t *want_b = json_pack("[i,i]", 2, 3);
    check(json_equal(json_object_get(res, "a"), want_a), "emit: the keyed sink's emit fulfils"
          " with the module's result (echo of the item)", "got %s", json_dumped(res));
    check(json_equal(json_object_get(res, "b"), want_b), "emit: the unkeyed sink's emit fulfils"
          " with the module's result", "got %s", json_dumped(res));
    ok(json_integer_value(json_object_get(res, "bytes")) > 0,
       "emit: a sink not in the catalog's sinks still appends to its file");
    json_decref(want_a);
    json_decref(want_b);
    json_decref(run);

    char *key_a = sql_text("SELECT idempotency_key FROM journal WHERE run_id = 1 AND position = 0");
    char *key_b = sql_text("SELECT idempotency_key FROM journal WHERE run_id = 1 AND position = 1");
    char *logged = read_text_file(S.log_keyed);
    char want[256];
    sfmt(want, sizeof want, "echo %s {\"n\":1,\"text\":\"hi\"}", key_a != NULL ? key_a : "?");
    ok(key_a != NULL && logged != NULL && output_has_line(logged, want),
       "emit: the keyed sink's op got the item as args and the journal row's key");
    free(logged);
    logged = read_text_file(S.log_plain);
    sfmt(want, sizeof want, "echo %s [2,3]", key_b != NULL ? key_b : "?");
    ok(key_b != NULL && logged != NULL && output_has_line(logged, want),
       "emit: the unkeyed sink's op got the item and the journal row's key");
    free(logged);
    free(key_a);
    free(key_b);

    char *classes = sql_text("SELECT group_concat(class, ',') FROM (SELECT class FROM journal"
                             " WHERE run_id = 1 ORDER BY position)");
    check_str_eq(classes, "keyed_mutation,mutation,keyed_mutation",
                 "emit: journaled by the op's class (keyed, unkeyed), the file sink keyed");
    free(classes);
    char path[PATH_MAX + 64];
    sfmt(path, sizeof path, "%s/sinks/audit.jsonl", S.t.home);
    ok(access(path, F_OK) != 0, "emit: a module sink writes no JSON-lines file");
    sfmt(path, sizeof path, "%s/sinks/events.jsonl", S.t.home);
    check_int_eq(file_line_count(path), 1, "emit: the file sink has its line");
}

/* ---- 2. a crash between journal and outcome -------------------------------------------- */

struct crash_case {
    const char *sink;     /* the sink emitted to at position 0 */
    const char *boundary; /* where the parent dies */
    const char *after;    /* the run's state after recover */
    long long calls;      /* the op's calls in all, after recover */
};

static void crash_case_run(const struct crash_case *cc)
{
    char name[128], what[256], script[256], grant[64], kill_at[96];
    sfmt(name, sizeof name, "crash %s at %s", cc->sink, cc->boundary);
    char dir[64];
    sfmt(dir, sizeof dir, "crash-%s-%s", cc->sink, cc->boundary);
    scenario_begin(dir);
    const char *log = strcmp(cc->sink, "audit") == 0 ? S.log_keyed : S.log_plain;
    sfmt(script, sizeof script, "return await sink.emit('%s', {once: true});\n", cc->sink);
    sfmt(grant, sizeof grant, "[\"%s\"]", cc->sink);
    if (!flow_add("crash", script, grant))
        return;
    sfmt(kill_at, sizeof kill_at, "BASAL_TEST_KILL_AT=%s:0", cc->boundary);
    char *const env[] = {kill_at, NULL};
    bool killed = false;
    json_decref(run_flow("crash", env, &killed));
    sfmt(what, sizeof what, "%s: the parent died by SIGKILL at the boundary", name);
    ok(killed, what);
    char *key = sql_text("SELECT idempotency_key FROM journal WHERE run_id = 1 AND position = 0");

    struct proc_result r = cli_env(true, NO_ENV, ARGS("recover"));
    proc_result_free(&r);
    char *state = sql_text("SELECT state FROM runs WHERE id = 1");
    sfmt(what, sizeof what, "%s: recover leaves the run %s", name, cc->after);
    check_str_eq(state, cc->after, what);
    free(state);
    sfmt(what, sizeof what, "%s: the op was called %lld time(s) in all, always with the row's"
         " key", name, cc->calls);
    long long all = log_lines(log, "echo", NULL);
    check(key != NULL && all == cc->calls && log_lines(log, "echo", key) == all, what,
          "%lld calls, %lld with the key %s", all, log_lines(log, "echo", key != NULL ? key : "?"),
          key != NULL ? key : "(none)");
    free(key);
}

static void test_crash(void)
{
    static const struct crash_case CASES[] = {
        /* unkeyed: in doubt once it may have left, never sent again */
        {"alerts", "after_journal_commit", "needs_reconcile", 0},
        {"alerts", "after_dispatch", "needs_reconcile", 1},
        {"alerts", "after_outcome_commit", "succeeded", 1},
        /* keyed: sent again with its key while in doubt */
        {"audit", "after_journal_commit", "succeeded", 1},
        {"audit", "after_dispatch", "succeeded", 2},
        {"audit", "after_outcome_commit", "succeeded", 1},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        crash_case_run(&CASES[i]);
}

/* ---- 2b. the catalog edited between the crash and the resume ----------------------------- */

/* The parent dies right after the call's journal commit; the operator then rewrites the
 * catalog (catalog_after, MODULES' printf shape with its own tail); recover must not
 * send the row where the new catalog points. */
static void changed_case_run(const char *name, const char *script, const char *grant,
                             const char *catalog_after, const char *why_part)
{
    char dir[64], what[256];
    sfmt(dir, sizeof dir, "changed-%s", name);
    scenario_begin(dir);
    if (!flow_add("changed", script, grant))
        return;
    char *const env[] = {"BASAL_TEST_KILL_AT=after_journal_commit:0", NULL};
    bool killed = false;
    json_decref(run_flow("changed", env, &killed));
    sfmt(what, sizeof what, "changed %s: the parent died by SIGKILL after the journal commit",
         name);
    ok(killed, what);
    if (!catalog_write(catalog_after))
        return;
    struct proc_result r = cli_env(true, NO_ENV, ARGS("recover"));
    proc_result_free(&r);
    char *state = sql_text("SELECT state || ': ' || coalesce(error, '') FROM runs WHERE id = 1");
    sfmt(what, sizeof what, "changed %s: recover puts the run in needs_reconcile, naming what"
         " changed [guard: flow_host_changed_since]", name);
    check(state != NULL && strncmp(state, "needs_reconcile: ", 17) == 0 &&
              strstr(state, why_part) != NULL, what, "%s", state != NULL ? state : "(none)");
    free(state);
    sfmt(what, sizeof what, "changed %s: the call was never sent, to either destination", name);
    check_int_eq(log_lines(S.log_keyed, "echo", NULL) + log_lines(S.log_plain, "echo", NULL) +
                     log_lines(S.log_plain, "look", NULL), 0, what);
    char path[PATH_MAX + 64];
    sfmt(path, sizeof path, "%s/sinks/audit.jsonl", S.t.home);
    sfmt(what, sizeof what, "changed %s: no sink file was written", name);
    ok(access(path, F_OK) != 0, what);
    r = cli_env(true, NO_ENV, ARGS("flow", "reconcile", "1", "0", "--not-applied"));
    proc_result_free(&r);
    state = sql_text("SELECT state FROM runs WHERE id = 1");
    sfmt(what, sizeof what, "changed %s: reconcile --not-applied is the operator's exit: the"
         " call is made afresh under the new catalog", name);
    check_str_eq(state, "succeeded", what);
    free(state);
}

static void test_catalog_changed(void)
{
    /* a module sink made the file again: a keyed emit in doubt must not be written there */
    changed_case_run("sink-to-file", "return await sink.emit('audit', {n: 1});\n", "[\"audit\"]",
                     "\"sinks\": {\"alerts\": {\"module\": \"plain\", \"op\": \"echo\"}}",
                     "it would now go to the sink file, journaled for the sink module keyed op"
                     " echo");
    /* the sink made another module's op without "idempotent": its class changed */
    changed_case_run("sink-class", "return await sink.emit('audit', {n: 2});\n", "[\"audit\"]",
                     "\"sinks\": {\"audit\": {\"module\": \"plain\", \"op\": \"echo\"}}",
                     "it would now be a mutation, journaled as a keyed_mutation");
}

/* ---- 3. a sinks section refused at load ------------------------------------------------- */

static void test_refused_at_load(void)
{
    static const struct {
        const char *what;
        const char *sinks;
        const char *err; /* what the one line says */
    } CASES[] = {
        {"an unknown module", "\"sinks\": {\"audit\": {\"module\": \"nosuch\", \"op\": \"echo\"}}",
         "modules.json: sinks.audit.module: no module nosuch"},
        {"an unknown op", "\"sinks\": {\"audit\": {\"module\": \"plain\", \"op\": \"nosuch\"}}",
         "modules.json: sinks.audit.op: module plain has no op nosuch"},
        {"a query op", "\"sinks\": {\"audit\": {\"module\": \"plain\", \"op\": \"look\"}}",
         "modules.json: sinks.audit.op: plain.look is a query; a sink's op must be \"mutate\""},
        {"an unknown field",
         "\"sinks\": {\"audit\": {\"module\": \"keyed\", \"op\": \"echo\", \"file\": \"x\"}}",
         "sinks.audit"},
        {"a missing op", "\"sinks\": {\"audit\": {\"module\": \"keyed\"}}",
         "modules.json: sinks.audit.op: missing"},
    };
    scenario_begin("load");
    if (!flow_add("quiet", "return 1;\n", "[\"audit\"]"))
        return;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char what[256];
        if (!catalog_write(CASES[i].sinks))
            continue;
        struct proc_result r = cli_env(false, NO_ENV, ARGS("run", "quiet"));
        const char *nl = strchr(r.err, '\n');
        sfmt(what, sizeof what, "load: %s in sinks: run exits 1 with one line naming it",
             CASES[i].what);
        check(proc_exited_with(&r, 1) && nl != NULL && nl[1] == '\0' &&
                  strstr(r.err, CASES[i].err) != NULL,
              what, "%s: %s", proc_describe(&r), r.err);
        proc_result_free(&r);
        sfmt(what, sizeof what, "load: %s in sinks: no run stored", CASES[i].what);
        check_int_eq(store_number(S.t.db, "SELECT count(*) FROM runs"), 0, what);
    }
    /* The same flow runs once the sinks section is right: the refusal was the section's. */
    ok(catalog_write(SINKS), "load: the catalog written right");
    json_t *run = run_flow("quiet", NO_ENV, NULL);
    check_str_eq(json_string_value(json_object_get(run, "state")), "succeeded",
                 "load: the flow runs with a right sinks section");
    json_decref(run);
}

/* ---- 4. the manifest's grant ------------------------------------------------------------- */

static void test_grant(void)
{
    scenario_begin("grant");
    if (!flow_add("ungranted",
                  "try { await sink.emit('audit', 1); return 'sent'; }\n"
                  "catch (e) { return e.data.code; }\n",
                  "[\"alerts\"]"))
        return;
    json_t *run = run_flow("ungranted", NO_ENV, NULL);
    check_str_eq(json_string_value(json_object_get(run, "result")), "denied",
                 "grant: a module sink the manifest does not grant is denied");
    json_decref(run);
    ok(access(S.log_keyed, F_OK) != 0, "grant: the module was never called");
}

/* ---- 5. dry run -------------------------------------------------------------------------- */

static void test_dry_run(void)
{
    scenario_begin("dry");
    char dir[PATH_MAX + 32], manifest[512];
    sfmt(dir, sizeof dir, "%s/flow-dry", S.t.dir);
    sfmt(manifest, sizeof manifest,
         "{\"format\":1,\"id\":\"dry\",\"version\":1,\"purpose\":\"test\","
         "\"trigger\":{\"manual\":true},\"sinks\":[\"audit\",\"alerts\"]}");
    if (!ok(flow_dir_write(dir, manifest,
                           "try { await sink.emit('audit', 1); } catch (e) {}\n"
                           "try { await sink.emit('alerts', 2); } catch (e) {}\n"
                           "return 0;\n"),
            "dry: the flow written"))
        return;
    for (int queries = 0; queries < 2; queries++) {
        struct proc_result r = queries ? cli_env(true, NO_ENV, ARGS("flow", "dry-run", dir,
                                                                    "--allow-queries"))
                                       : cli_env(true, NO_ENV, ARGS("flow", "dry-run", dir));
        json_t *report = cli_output_json(&r);
        const json_t *calls = json_object_get(report, "calls");
        const json_t *a = json_array_get(calls, 0), *b = json_array_get(calls, 1);
        char what[160];
        sfmt(what, sizeof what, "dry%s: both emits listed captured, by their op's class",
             queries ? " --allow-queries" : "");
        check(json_array_size(calls) == 2 && strcmp(json_str_of(a, "status"), "captured") == 0 &&
                  strcmp(json_str_of(b, "status"), "captured") == 0 &&
                  strcmp(json_str_of(a, "class"), "keyed_mutation") == 0 &&
                  strcmp(json_str_of(b, "class"), "mutation") == 0,
              what, "%s: %s%s", proc_describe(&r), r.out, r.err);
        json_decref(report);
        proc_result_free(&r);
    }
    ok(access(S.log_keyed, F_OK) != 0 && access(S.log_plain, F_OK) != 0,
       "dry: the modules were never called");
}

int main(void)
{
    if (!require_parent_and_module("ck-basal", "test_module"))
        return harness_finish();
    snprintf(g_root, sizeof g_root, "%s", harness_tmpdir("module-sinks"));
    test_emit_reaches_module();
    test_crash();
    test_catalog_changed();
    test_refused_at_load();
    test_grant();
    test_dry_run();
    harness_remove_tree(g_root);
    return harness_finish();
}
