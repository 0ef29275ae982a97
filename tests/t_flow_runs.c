/* Flow runs end to end through the real ck-basal (basal.md sections 6-8): durable
 * effects, refusals before running, grant checks, crash recovery at every boundary of
 * a call, replay and bad input, numbered below. Every scenario has its own data home in a temp
 * dir, installs and approves its flow with the CLI, and drives runs with `run`,
 * `recover` and `flow reconcile`; the module side is tests/tools/test_module, which
 * logs every request it receives (op, idempotency key, args) before answering.
 *
 *   1. a flow using kv, fs, ops and a sink runs to its end; `journal` shows every call
 *      in order, with its class, outcome and strictly increasing delivery orders; the
 *      module saw the key; the sink file (0600 in a 0700 directory) has the line.
 *   2. an unapproved flow, a disabled one, one whose approval records another hash and
 *      one whose stored manifest changed by a byte after approval are refused before
 *      any script runs: no run row, no worker spawned, no module call [guard: runnable
 *      check before a run].
 *   3. each grant check refuses (op not in the manifest, op not in the catalog, path
 *      outside the roots, a link out of a root, a `..` escape, a write under a
 *      read-only root, a sink not granted); the script catches each by e.data.code,
 *      the refusal is journaled as a rejection and audited "refused"; a granted
 *      control in the same flow succeeds [guard: grant checks].
 *   4. SIGKILL of the parent at each named boundary of a kv write, a keyed mutation and
 *      an unkeyed mutation, then `recover`: the unkeyed module call happens at most
 *      once, the keyed one is seen at most twice and always with the same key, kv holds
 *      one execution's state, and the run ends succeeded, or needs_reconcile when the
 *      unkeyed call is in doubt, which each reconcile decision settles [guard: resume
 *      by class; the test-only kill hook is absent from the release binary].
 *   5. a journal altered to record other calls (kind, arguments) makes the resumed run
 *      fail as nondeterminism, for delivered and undelivered positions; a
 *      Promise.race whose recorded winner is the later position gets that winner on
 *      replay [guard: replay follows the journal's delivery order].
 *   6. bad input for run, journal, reconcile and runs exits non-zero with one line and
 *      changes nothing stored. */
#include "lib/cli_home.h"
#include "lib/harness.h"
#include "lib/serve_home.h"
#include "lib/store_view.h"

#include "base/clock.h"
#include "flows/flow_host.h"
#include "store/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <jansson.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TIMEOUT_MS 60000

/* check() with a fixed detail: the name says what was expected. */

static char g_root[PATH_MAX];

/* The current scenario's paths. */
struct scenario {
    struct test_home t; /* dir, home, db */
    char data[PATH_MAX];  /* read root */
    char out[PATH_MAX];   /* write root */
    char ro[PATH_MAX];    /* another read root (never writable) */
    char outside[PATH_MAX];
    char log_keyed[PATH_MAX];
    char log_plain[PATH_MAX];
};

static struct scenario S;

/* ck-basal [--json] --home HOME args... with an optional environment. */
static struct proc_result cli_env(bool json, char *const *envp, const char *const *args)
{
    struct cli_opts opts = {.json = json, .envp = envp, .timeout_ms = TIMEOUT_MS};
    return cli_run(S.t.home, &opts, args);
}

static char *const NO_ENV[] = {NULL};

static struct proc_result cli(bool json, const char *const *args)
{
    return cli_env(json, NO_ENV, args);
}


/* Runs a command that must succeed and returns its stdout as JSON (NULL on failure). */
static json_t *cli_json(const char *what, const char *const *args)
{
    struct proc_result r = cli(true, args);
    json_t *v = NULL;
    if (ok(proc_exited_with(&r, 0), what))
        v = cli_output_json(&r);
    else
        fprintf(stderr, "  %s\n  stderr: %s\n", proc_describe(&r), r.err);
    proc_result_free(&r);
    return v;
}

#define CATALOG                                                                        \
    "{\"modules\": {"                                                                  \
    " \"keyed\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"],"                     \
    "   \"ops\": {\"echo\": {\"kind\": \"mutate\", \"idempotent\": true}}},"               \
    " \"plain\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"],"                     \
    "   \"ops\": {\"add\": {\"kind\": \"mutate\"}, \"echo\": {\"kind\": \"query\"},"          \
    "    \"sleep\": {\"kind\": \"query\"}}}}}"

/* A fresh data home with the catalog, roots and logs. */
static void scenario_begin(const char *name)
{
    memset(&S, 0, sizeof S);
    test_home_paths(&S.t, g_root, name);
    sfmt(S.data, sizeof S.data, "%s/data", S.t.dir);
    sfmt(S.out, sizeof S.out, "%s/out", S.t.dir);
    sfmt(S.ro, sizeof S.ro, "%s/ro", S.t.dir);
    sfmt(S.outside, sizeof S.outside, "%s/outside", S.t.dir);
    sfmt(S.log_keyed, sizeof S.log_keyed, "%s/keyed.log", S.t.dir);
    sfmt(S.log_plain, sizeof S.log_plain, "%s/plain.log", S.t.dir);
    mkdir_or_fail(S.data, "flow runs: mkdir");
    mkdir_or_fail(S.out, "flow runs: mkdir");
    mkdir_or_fail(S.ro, "flow runs: mkdir");
    mkdir_or_fail(S.outside, "flow runs: mkdir");
    const char *module = harness_path("test/tools/test_module");
    cli_home_setup_or_fail(S.t.home, "flow runs: setup", CATALOG, module, S.log_keyed, module,
                           S.log_plain);
}

/* Writes the flow's files, installs and approves it. */
static bool flow_add(const char *id, const char *script, const char *grants)
{
    char dir[PATH_MAX + 32], manifest[4096], why[1024];
    sfmt(dir, sizeof dir, "%s/flow-%s", S.t.dir, id);
    mkdir_or_fail(dir, "flow runs: mkdir");
    sfmt(manifest, sizeof manifest,
         "{\"format\":1,\"id\":\"%s\",\"version\":1,\"purpose\":\"test\","
         "\"trigger\":{\"manual\":true}%s%s}", id, grants[0] != '\0' ? "," : "", grants);
    if (!flow_dir_write(dir, manifest, script))
        return false;
    enum flow_added step = cli_install_approve(S.t.home, NO_ENV, dir, id, 1, why, sizeof why);
    if (!check(step != FLOW_INSTALL_FAILED, "flow install", "%s", why))
        return false;
    return check(step == FLOW_ADDED, "flow approve", "%s", why);
}

/* The grants most flows use. */
static const char *grants_all(void)
{
    static char g[4096];
    sfmt(g, sizeof g,
         "\"ops\":[{\"module\":\"keyed\",\"op\":\"echo\"},{\"module\":\"plain\",\"op\":\"add\"},"
         "{\"module\":\"plain\",\"op\":\"echo\"},{\"module\":\"plain\",\"op\":\"missing\"},"
         "{\"module\":\"plain\",\"op\":\"sleep\"}],"
         "\"fs\":{\"read\":[\"%s\",\"%s\"],\"write\":[\"%s\"]},\"sinks\":[\"events\"]",
         S.data, S.ro, S.out);
    return g;
}

/* ---- store views ------------------------------------------------------------------ */

static long long sql_number(const char *sql)
{
    return store_number(S.t.db, sql);
}

static char *sql_text(const char *sql)
{
    return store_text(S.t.db, sql);
}

static bool sql_exec(const char *sql)
{
    return store_exec(S.t.db, sql);
}

/* Every row of the tables a run writes, as text. */
static char *dump_runs(void)
{
    return sql_text("SELECT (SELECT group_concat(id || state || generation, ';') FROM runs) || '|'"
                    " || (SELECT count(*) FROM journal) || '|' || (SELECT count(*) FROM mailbox)"
                    " || '|' || coalesce((SELECT group_concat(key || value, ';') FROM kv), '')"
                    " || '|' || (SELECT count(*) FROM activations)");
}

/* The run's result (a JSON object) from `run --json`, with the exit code. */
struct run_out {
    int exit_code;
    bool killed;
    json_t *json;
};

static struct run_out run_flow(const char *const *args, char *const *envp)
{
    struct proc_result r = cli_env(true, envp, args);
    struct run_out o = {r.exited ? r.exit_code : -1, died_by_signal(&r, SIGKILL), NULL};
    o.json = cli_output_json(&r);
    if (o.json == NULL && !o.killed)
        fprintf(stderr, "  %s: %s\n  stderr: %s\n", args[0], proc_describe(&r), r.err);
    proc_result_free(&r);
    return o;
}

static const char *state_of(const json_t *run)
{
    const char *s = json_string_value(json_object_get(run, "state"));
    return s != NULL ? s : "(none)";
}

/* ---- 1. a full flow --------------------------------------------------------------- */

static const char *FULL_FLOW =
    "const n = (await kv.get('count')) ?? 0;\n"
    "await kv.set('count', n + 1);\n"
    "const text = await fs.read(DATA + '/in.txt');\n"
    "const listed = await fs.list(DATA);\n"
    "await fs.write(OUT + '/out.txt', text.toUpperCase());\n"
    "const sum = await ops.call('plain', 'add', {a: 2, b: 3});\n"
    "const echoed = await ops.call('keyed', 'echo', {n});\n"
    "await sink.emit('events', {n, sum});\n"
    "return {n, text, names: listed.map(e => e.name), sum, echoed, t: typeof now()};\n";

static char *with_paths(const char *body)
{
    char *s = malloc(strlen(body) + (size_t)4 * PATH_MAX);
    if (s != NULL)
        snprintf(s, strlen(body) + (size_t)4 * PATH_MAX, "const DATA = '%s', OUT = '%s', RO = '%s', OUTSIDE = '%s';\n%s", S.data,
                S.out, S.ro, S.outside, body);
    return s;
}

static void test_full_flow(void)
{
    scenario_begin("full");
    char path[PATH_MAX + 32];
    sfmt(path, sizeof path, "%s/in.txt", S.data);
    write_text_file(path, "hello", 0644);
    char *script = with_paths(FULL_FLOW);
    if (!ok(flow_add("full", script, grants_all()), "full flow: install and approve")) {
        free(script);
        return;
    }
    free(script);
    struct run_out o = run_flow(ARGS("run", "full"), NO_ENV);
    check_int_eq(o.exit_code, 0, "full flow: run exits 0");
    check_str_eq(state_of(o.json), "succeeded", "full flow: succeeded");
    json_t *res = json_object_get(o.json, "result");
    check_str_eq(json_string_value(json_object_get(res, "text")), "hello", "full flow: fs.read");
    check_int_eq(json_integer_value(json_object_get(res, "sum")), 5, "full flow: ops.call add");
    check_str_eq(json_string_value(json_array_get(json_object_get(res, "names"), 0)), "in.txt",
                 "full flow: fs.list");
    check_str_eq(json_string_value(json_object_get(res, "t")), "number", "full flow: now()");
    json_decref(o.json);
    char *written = NULL;
    sfmt(path, sizeof path, "%s/out.txt", S.out);
    written = read_text_file(path);
    check_str_eq(written, "HELLO", "full flow: fs.write wrote the file");
    free(written);

    json_t *j = cli_json("full flow: journal", ARGS("journal", "1"));
    json_t *calls = json_object_get(j, "calls");
    static const char *const KINDS[] = {"kv.get", "kv.set", "fs.read", "fs.list", "fs.write",
                                        "ops.call", "ops.call", "sink.emit", "now"};
    static const char *const CLASSES[] = {"local", "local", "query", "query", "keyed_mutation",
                                          "mutation", "keyed_mutation", "keyed_mutation", "sync"};
    check_int_eq((long long)json_array_size(calls), 9, "full flow: journal has every call");
    long long last_order = 0;
    bool in_order = true, all_settled = true;
    for (size_t i = 0; i < json_array_size(calls) && i < 9; i++) {
        json_t *c = json_array_get(calls, i);
        char what[96];
        sfmt(what, sizeof what, "full flow: journal position %zu is %s", i, KINDS[i]);
        check_str_eq(json_string_value(json_object_get(c, "kind")), KINDS[i], what);
        sfmt(what, sizeof what, "full flow: journal position %zu class %s", i, CLASSES[i]);
        check_str_eq(json_string_value(json_object_get(c, "class")), CLASSES[i], what);
        in_order = in_order && json_integer_value(json_object_get(c, "position")) == (long long)i;
        long long order = json_integer_value(json_object_get(c, "delivery_order"));
        in_order = in_order && order > last_order;
        last_order = order;
        all_settled = all_settled &&
                      strcmp(json_string_value(json_object_get(c, "state")), "settled") == 0 &&
                      json_object_get(json_object_get(c, "outcome"), "fulfilled") != NULL;
    }
    ok(in_order, "full flow: positions in order, delivery orders strictly increasing");
    ok(all_settled, "full flow: every call settled and fulfilled");
    json_t *add = json_array_get(calls, 5);
    check_int_eq(json_integer_value(json_object_get(json_object_get(add, "outcome"), "fulfilled")),
                 5, "full flow: the journal holds the module's answer");
    const char *key = json_string_value(json_object_get(json_array_get(calls, 6),
                                                        "idempotency_key"));
    char *klog = read_text_file(S.log_keyed);
    ok(key != NULL && klog != NULL && strstr(klog, key) != NULL,
          "full flow: the keyed module received the journal's idempotency key");
    free(klog);
    json_decref(j);

    sfmt(path, sizeof path, "%s/sinks/events.jsonl", S.t.home);
    check_int_eq(file_line_count(path), 1, "full flow: the sink has one line");
    struct stat st;
    ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "full flow: sink file is 0600");
    sfmt(path, sizeof path, "%s/sinks", S.t.home);
    ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0700, "full flow: sinks dir is 0700");
    ok(stat(S.t.db, &st) == 0 && (st.st_mode & 0777) == 0600, "full flow: store is 0600");
    check_int_eq(sql_number("SELECT count(*) FROM audit WHERE run_id = 1 AND decision = 'allowed'"),
                 9, "full flow: every call audited allowed");

    /* A second run sees the first one's kv. */
    o = run_flow(ARGS("run", "full"), NO_ENV);
    check_int_eq(json_integer_value(json_object_get(json_object_get(o.json, "result"), "n")), 1,
                 "full flow: the second run reads the kv the first wrote");
    json_decref(o.json);

    json_t *runs = cli_json("full flow: runs", ARGS("runs", "full"));
    check_int_eq((long long)json_array_size(runs), 2, "full flow: runs lists both");
    json_decref(runs);
    json_t *health = cli_json("full flow: health", ARGS("health"));
    check_int_eq(json_integer_value(json_object_get(json_object_get(health, "run_states"),
                                                    "succeeded")),
                 2, "full flow: health counts the succeeded runs from the store");
    ok(json_integer_value(json_object_get(json_object_get(health, "counters"), "spawned")) >= 2,
          "full flow: health keeps the spawned counter across processes");
    json_decref(health);
}

/* ---- 2. refused before any script runs ------------------------------------------- */

static const char *MARK_FLOW = "await ops.call('plain', 'add', {a: 1, b: 1}); return 1;\n";

static void expect_refused_run(const char *id, const char *needle, const char *what)
{
    char *before = dump_runs();
    long long log_before = file_line_count(S.log_plain);
    long long spawned = sql_number("SELECT coalesce((SELECT value FROM health_counters WHERE"
                                   " name = 'spawned'), 0)");
    struct proc_result r = cli(false, ARGS("run", id));
    char name[160];
    sfmt(name, sizeof name, "%s: run exits 1", what);
    ok(proc_exited_with(&r, 1), name);
    sfmt(name, sizeof name, "%s: one line naming the reason", what);
    const char *nl = strchr(r.err, '\n');
    ok(strstr(r.err, needle) != NULL && nl != NULL && nl[1] == '\0', name);
    if (strstr(r.err, needle) == NULL)
        fprintf(stderr, "  stderr: %s", r.err);
    proc_result_free(&r);
    char *after = dump_runs();
    sfmt(name, sizeof name, "%s: nothing stored (no run, no journal)", what);
    check_str_eq(after, before, name);
    sfmt(name, sizeof name, "%s: no script ran (no module call, no worker)", what);
    ok(file_line_count(S.log_plain) == log_before &&
              sql_number("SELECT coalesce((SELECT value FROM health_counters WHERE"
                         " name = 'spawned'), 0)") == spawned, name);
    free(before);
    free(after);
}

static void test_refused_before_running(void)
{
    scenario_begin("refused");
    /* Control: the approved flow runs and calls the module. */
    if (!ok(flow_add("ok", MARK_FLOW, grants_all()), "refusals: control flow approved"))
        return;
    struct run_out o = run_flow(ARGS("run", "ok"), NO_ENV);
    check_str_eq(state_of(o.json), "succeeded", "refusals: control run succeeds");
    check_int_eq(file_line_count(S.log_plain), 1, "refusals: control run called the module");
    json_decref(o.json);

    /* Unapproved: installed, never approved. */
    char dir[PATH_MAX + 32], path[PATH_MAX + 64], manifest[4096];
    sfmt(dir, sizeof dir, "%s/flow-unapproved", S.t.dir);
    mkdir_or_fail(dir, "flow runs: mkdir");
    sfmt(path, sizeof path, "%s/flow.js", dir);
    write_text_file(path, MARK_FLOW, 0644);
    sfmt(manifest, sizeof manifest, "{\"format\":1,\"id\":\"unapproved\",\"version\":1,"
         "\"purpose\":\"t\",\"trigger\":{\"manual\":true},%s}", grants_all());
    sfmt(path, sizeof path, "%s/manifest.json", dir);
    write_text_file(path, manifest, 0644);
    json_decref(cli_json("refusals: install unapproved", ARGS("flow", "install", dir)));
    expect_refused_run("unapproved", "has no approved version", "unapproved flow");

    /* Disabled. */
    if (flow_add("off", MARK_FLOW, grants_all())) {
        struct proc_result r = cli(false, ARGS("flow", "disable", "off"));
        proc_result_free(&r);
        expect_refused_run("off", "is disabled", "disabled flow");
    }
    /* The approval records another hash than the version's. */
    if (flow_add("otherhash", MARK_FLOW, grants_all())) {
        sql_exec("UPDATE approvals SET code_hash = '" "0000000000000000000000000000000000000000"
                 "000000000000000000000000' WHERE flow_id = 'otherhash'");
        expect_refused_run("otherhash", "not the approved one", "approved hash mismatch");
    }
    /* One byte of the stored manifest changed after approval. */
    if (flow_add("tampered", MARK_FLOW, grants_all())) {
        sql_exec("UPDATE flow_versions SET manifest = CAST(replace(CAST(manifest AS TEXT),"
                 " '\"purpose\":\"test\"', '\"purpose\":\"tesT\"') AS BLOB)"
                 " WHERE flow_id = 'tampered'");
        expect_refused_run("tampered", "hash to", "manifest changed after approval");
    }
    expect_refused_run("nosuchflow", "unknown flow", "unknown flow");
}

/* ---- 3. grant checks ---------------------------------------------------------------- */

static const char *GRANT_FLOW =
    "async function code(p) { try { await p; return 'ok'; }"
    " catch (e) { return e.name + ':' + (e.data && e.data.code); } }\n"
    "return {\n"
    "  granted: await code(ops.call('plain', 'echo', {x: 1})),\n"
    "  notInManifest: await code(ops.call('keyed', 'nope', {})),\n"
    "  notInCatalog: await code(ops.call('plain', 'missing', {})),\n"
    "  outside: await code(fs.read(OUTSIDE + '/secret.txt')),\n"
    "  linkOut: await code(fs.read(DATA + '/link-out/secret.txt')),\n"
    "  linkIn: await code(fs.read(DATA + '/link-in')),\n"
    "  dotdot: await code(fs.read(DATA + '/../outside/secret.txt')),\n"
    "  readOnly: await code(fs.write(RO + '/x.txt', 'no')),\n"
    "  writeOk: await code(fs.write(OUT + '/x.txt', 'yes')),\n"
    "  sink: await code(sink.emit('other', 1)),\n"
    "  fetch: await code(net.fetch('https://example.com/', {})),\n"
    "};\n";

static void test_grant_checks(void)
{
    scenario_begin("grants");
    char path[PATH_MAX + 64], target[PATH_MAX + 64];
    sfmt(path, sizeof path, "%s/secret.txt", S.outside);
    write_text_file(path, "secret", 0644);
    sfmt(path, sizeof path, "%s/in.txt", S.data);
    write_text_file(path, "inside", 0644);
    sfmt(path, sizeof path, "%s/link-out", S.data);
    ok(symlink(S.outside, path) == 0, "grants: make a link out of the root");
    sfmt(path, sizeof path, "%s/link-in", S.data);
    sfmt(target, sizeof target, "%s/in.txt", S.data);
    ok(symlink(target, path) == 0, "grants: make a link inside the root");
    char *script = with_paths(GRANT_FLOW);
    bool added = flow_add("grants", script, grants_all());
    free(script);
    if (!ok(added, "grants: flow approved"))
        return;
    struct run_out o = run_flow(ARGS("run", "grants"), NO_ENV);
    check_str_eq(state_of(o.json), "succeeded", "grants: the run completes (refusals caught)");
    json_t *res = json_object_get(o.json, "result");
    static const struct {
        const char *field, *want, *what;
    } CASES[] = {
        {"granted", "ok", "control: a granted op"},
        {"notInManifest", "HostError:denied", "an op the manifest does not grant"},
        {"notInCatalog", "HostError:denied", "a granted op missing from the catalog"},
        {"outside", "HostError:denied", "a path outside every root"},
        {"linkOut", "HostError:denied", "a link leading out of a root"},
        {"linkIn", "ok", "control: a link staying inside a root"},
        {"dotdot", "HostError:denied", "a .. escape"},
        {"readOnly", "HostError:denied", "a write under a read-only root"},
        {"writeOk", "ok", "control: a write under a write root"},
        {"sink", "HostError:denied", "a sink the manifest does not grant"},
        {"fetch", "HostError:denied", "net.fetch to a host the manifest does not grant"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char what[160];
        sfmt(what, sizeof what, "grants: %s -> %s", CASES[i].what, CASES[i].want);
        check_str_eq(json_string_value(json_object_get(res, CASES[i].field)), CASES[i].want, what);
    }
    json_decref(o.json);
    check_int_eq(sql_number("SELECT count(*) FROM journal WHERE run_id = 1 AND settlement ="
                            " 'rejected' AND json_extract(CAST(value AS TEXT), '$.code') = 'denied'"),
                 8, "grants: every denial is journaled as a rejection");
    check_int_eq(sql_number("SELECT count(*) FROM audit WHERE run_id = 1 AND decision = 'refused'"),
                 8, "grants: every denial (8) is audited as refused");
    sfmt(path, sizeof path, "%s/x.txt", S.ro);
    ok(access(path, F_OK) != 0, "grants: nothing was written under the read-only root");
}

/* kv's limits (basal.md section 6) refuse inside the run, catchably, and store nothing
 * [guard: kv limits]; the values just under each limit are stored (control). */
static const char *KV_LIMITS_FLOW =
    "async function code(p) { try { await p; return 'ok'; }"
    " catch (e) { return e.name + ':' + (e.data && e.data.code); } }\n"
    "const big = 'x'.repeat(65536 - 2);\n"
    "const out = {\n"
    "  key256: await code(kv.set('k'.repeat(256), 1)),\n"
    "  key257: await code(kv.set('k'.repeat(257), 1)),\n"
    "  keyEmpty: await code(kv.set('', 1)),\n"
    "  keyNumber: await code(kv.set(5, 1)),\n"
    "  value64k: await code(kv.set('v', big)),\n"
    "  valueOver: await code(kv.set('w', big + 'x')),\n"
    "};\n"
    "let i = 0, last = 'ok';\n"
    "while (last === 'ok' && i < 40) last = await code(kv.set('fill' + i++, big));\n"
    "out.fillStoppedAt = i; out.fill = last;\n"
    "out.get = await kv.get('v') === big;\n"
    "return out;\n";

static void test_kv_limits(void)
{
    scenario_begin("kv-limits");
    if (!ok(flow_add("kvl", KV_LIMITS_FLOW, grants_all()), "kv limits: flow approved"))
        return;
    struct run_out o = run_flow(ARGS("run", "kvl"), NO_ENV);
    check_str_eq(state_of(o.json), "succeeded", "kv limits: the run completes (refusals caught)");
    json_t *res = json_object_get(o.json, "result");
    static const struct {
        const char *field, *want;
    } CASES[] = {
        {"key256", "ok"}, {"key257", "HostError:too_large"},
        {"keyEmpty", "HostError:invalid_arguments"}, {"keyNumber", "HostError:invalid_arguments"},
        {"value64k", "ok"}, {"valueOver", "HostError:too_large"}, {"fill", "HostError:too_large"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char what[128];
        sfmt(what, sizeof what, "kv limits: %s -> %s", CASES[i].field, CASES[i].want);
        check_str_eq(json_string_value(json_object_get(res, CASES[i].field)), CASES[i].want, what);
    }
    ok(json_is_true(json_object_get(res, "get")), "kv limits: the 64 KiB value reads back");
    long long total = sql_number("SELECT sum(length(CAST(key AS BLOB)) + length(CAST(value AS"
                                 " BLOB))) FROM kv WHERE flow_id = 'kvl'");
    ok(total <= 1048576 && total + 65536 + 6 > 1048576,
       "kv limits: the flow holds at most 1 MiB, filled until the next value did not fit");
    check_int_eq(sql_number("SELECT count(*) FROM kv WHERE flow_id = 'kvl' AND (key = 'w' OR"
                            " length(key) > 256)"), 0, "kv limits: refused values were not stored");
    json_decref(o.json);
}

/* A script cannot grow the journal without bound: refused calls with big arguments
 * are journaled too, so the run ends failed at the per-run journal limit [guard:
 * FLOW_RUN_MAX_JOURNAL_BYTES]; a few such calls are fine (control). */
static void test_journal_limit(void)
{
    scenario_begin("journal-limit");
    static const char *SCRIPT =
        "const big = 'x'.repeat(250000); let refused = 0;\n"
        "for (let i = 0; i < N; i++) { try { await kv.get(big); } catch (e) { refused++; } }\n"
        "return refused;\n";
    char script[512];
    sfmt(script, sizeof script, "const N = 4;\n%s", SCRIPT);
    if (!flow_add("few", script, ""))
        return;
    sfmt(script, sizeof script, "const N = 400;\n%s", SCRIPT);
    if (!flow_add("many", script, ""))
        return;
    struct run_out o = run_flow(ARGS("run", "few"), NO_ENV);
    check_str_eq(state_of(o.json), "succeeded", "journal limit: control: four big refusals are fine");
    json_decref(o.json);
    o = run_flow(ARGS("run", "many"), NO_ENV);
    const char *error = json_string_value(json_object_get(o.json, "error"));
    check_str_eq(state_of(o.json), "failed", "journal limit: 400 x 250 KB of arguments fails the run");
    check(error != NULL && strncmp(error, "limit: the run reached its limit", 32) == 0,
          "journal limit: the error names the limit", "the run's error: %s",
          error != NULL ? error : "(none)");
    json_decref(o.json);
    long long bytes = sql_number("SELECT sum(length(args)) FROM journal WHERE run_id = 2");
    ok(bytes > 0 && bytes <= (long long)FLOW_RUN_MAX_JOURNAL_BYTES,
       "journal limit: the run's journal stayed within 64 MiB");
}

/* ---- 4. crash at each boundary, then recover -------------------------------------- */

static const char *CRASH_FLOW =
    "const c = (await kv.get('c')) ?? 0;\n"                       /* 0 */
    "await kv.set('c', c + 1);\n"                                 /* 1 */
    "const k = await ops.call('keyed', 'echo', {v: 'k'});\n"      /* 2 */
    "const u = await ops.call('plain', 'add', {a: 20, b: 22});\n" /* 3 */
    "return {c, k, u};\n";

enum expect { EXPECT_SUCCEEDED, EXPECT_RECONCILE };

struct crash_case {
    const char *boundary;
    unsigned position;
    enum expect after_recover;
    long long plain_calls_at_kill; /* the unkeyed module's calls when the parent died */
};

/* Lines of the keyed log: at most two, all with one key. */
static bool keyed_log_ok(long long *count)
{
    char *text = read_text_file(S.log_keyed);
    *count = 0;
    char first_key[80] = "";
    bool same = true;
    for (char *line = text, *next; line != NULL && *line != '\0'; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        char op[32], key[80];
        if (sscanf(line, "%31s %79s", op, key) != 2)
            continue;
        if (first_key[0] == '\0')
            snprintf(first_key, sizeof first_key, "%s", key);
        same = same && strcmp(key, first_key) == 0;
        (*count)++;
    }
    free(text);
    return same && *count >= 1 && *count <= 2;
}

static void crash_case_run(const struct crash_case *cc, const char *reconcile_decision,
                           const char *observed)
{
    char name[96], what[256];
    sfmt(name, sizeof name, "crash-%s-%u%s%s", cc->boundary, cc->position,
         reconcile_decision != NULL ? "-" : "", reconcile_decision != NULL ? reconcile_decision + 2 : "");
    scenario_begin(name);
    if (!ok(flow_add("crash", CRASH_FLOW, grants_all()), "crash: flow approved"))
        return;
    char env_kill[128];
    sfmt(env_kill, sizeof env_kill, "BASAL_TEST_KILL_AT=%s:%u", cc->boundary, cc->position);
    char *const env[] = {env_kill, NULL};
    struct run_out o = run_flow(ARGS("run", "crash"), env);
    sfmt(what, sizeof what, "%s: the parent died by SIGKILL at the boundary", name);
    ok(o.killed, what);
    json_decref(o.json);
    sfmt(what, sizeof what, "%s: the run is left running", name);
    char *state = sql_text("SELECT state FROM runs WHERE id = 1");
    check_str_eq(state, "running", what);
    free(state);
    sfmt(what, sizeof what, "%s: unkeyed module calls when the parent died", name);
    check_int_eq(file_line_count(S.log_plain), cc->plain_calls_at_kill, what);

    json_t *rec = NULL;
    struct proc_result r = cli(true, ARGS("recover"));
    rec = cli_output_json(&r);
    proc_result_free(&r);
    const char *want = cc->after_recover == EXPECT_SUCCEEDED ? "succeeded" : "needs_reconcile";
    sfmt(what, sizeof what, "%s: recover ends the run %s", name, want);
    check_str_eq(state_of(rec), want, what);
    json_decref(rec);

    if (cc->after_recover == EXPECT_RECONCILE && reconcile_decision != NULL) {
        char pos[16];
        sfmt(pos, sizeof pos, "%u", cc->position);
        struct proc_result rr = observed != NULL
            ? cli(true, ARGS("flow", "reconcile", "1", pos, reconcile_decision, observed))
            : cli(true, ARGS("flow", "reconcile", "1", pos, reconcile_decision));
        json_t *after = cli_output_json(&rr);
        const char *end = strcmp(reconcile_decision, "--cancel") == 0 ? "cancelled" : "succeeded";
        sfmt(what, sizeof what, "%s: reconcile ends the run %s", name, end);
        check_str_eq(state_of(after), end, what);
        if (observed != NULL) {
            sfmt(what, sizeof what, "%s: the script received the observed result", name);
            check_int_eq(json_integer_value(json_object_get(json_object_get(after, "result"), "u")),
                         strtoll(observed, NULL, 10), what);
        }
        json_decref(after);
        proc_result_free(&rr);
    }
    char *final_state = sql_text("SELECT state FROM runs WHERE id = 1");
    bool ended_ok = final_state != NULL && strcmp(final_state, "succeeded") == 0;
    free(final_state);

    /* At most once for the unkeyed mutation: at most one call ever, exactly one if the
     * run succeeded without an operator saying it was observed. */
    long long plain = file_line_count(S.log_plain);
    sfmt(what, sizeof what, "%s: the unkeyed mutation ran at most once (%lld)", name, plain);
    ok(plain <= 1 && (!ended_ok || observed != NULL || plain == 1), what);
    long long keyed = 0;
    sfmt(what, sizeof what, "%s: the keyed mutation was seen at most twice, with one key", name);
    bool keyed_ok = keyed_log_ok(&keyed);
    ok(cc->position < 2 && plain == 0 && !ended_ok ? keyed <= 2 : keyed_ok, what);
    if (ended_ok) {
        char *kv = sql_text("SELECT value FROM kv WHERE flow_id = 'crash' AND key = 'c'");
        sfmt(what, sizeof what, "%s: kv holds one execution's state", name);
        check_str_eq(kv, "1", what);
        free(kv);
    }
}

static void test_crash_recovery(void)
{
    static const struct crash_case CASES[] = {
        /* kv.set: its row, change and outcome commit together. */
        {"before_journal_commit", 1, EXPECT_SUCCEEDED, 0},
        {"after_journal_commit", 1, EXPECT_SUCCEEDED, 0},
        {"after_delivery", 1, EXPECT_SUCCEEDED, 0},
        /* the keyed mutation: resent with its key while in doubt. */
        {"before_journal_commit", 2, EXPECT_SUCCEEDED, 0},
        {"after_journal_commit", 2, EXPECT_SUCCEEDED, 0},
        {"after_dispatch", 2, EXPECT_SUCCEEDED, 0},
        {"after_outcome_commit", 2, EXPECT_SUCCEEDED, 0},
        {"after_delivery", 2, EXPECT_SUCCEEDED, 0},
        /* the unkeyed mutation: in doubt from its journal commit to its outcome's. */
        {"before_journal_commit", 3, EXPECT_SUCCEEDED, 0},
        {"after_outcome_commit", 3, EXPECT_SUCCEEDED, 1},
        {"after_delivery", 3, EXPECT_SUCCEEDED, 1},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        crash_case_run(&CASES[i], NULL, NULL);
    /* In doubt: each operator decision. */
    static const struct crash_case DOUBT_BEFORE = {"after_journal_commit", 3, EXPECT_RECONCILE, 0};
    static const struct crash_case DOUBT_AFTER = {"after_dispatch", 3, EXPECT_RECONCILE, 1};
    crash_case_run(&DOUBT_BEFORE, "--not-applied", NULL);
    crash_case_run(&DOUBT_AFTER, "--observed", "42");
    crash_case_run(&DOUBT_AFTER, "--cancel", NULL);
}

/* The hook is a test build's only: the release binary neither contains its name nor
 * dies when asked to. */
/* True if the file at path contains needle. */
static bool file_contains(const char *path, const char *needle)
{
    char *bytes = NULL;
    size_t len = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return false;
    char buf[1 << 16];
    size_t n;
    bool found = false;
    size_t keep = strlen(needle) - 1; /* bytes carried over a chunk boundary */
    while (!found && (n = fread(buf, 1, sizeof buf, f)) > 0) {
        char *grown = realloc(bytes, len + n);
        if (grown == NULL)
            break;
        bytes = grown;
        memcpy(bytes + len, buf, n);
        len += n;
        found = memmem(bytes, len, needle, strlen(needle)) != NULL;
        if (len > keep) {
            memmove(bytes, bytes + len - keep, keep);
            len = keep;
        }
    }
    fclose(f);
    free(bytes);
    return found;
}

/* The hooks are a test build's only: the release binary neither contains their names
 * nor dies when asked to. */
static void test_hook_absent_from_release(void)
{
    static const char *const NAMES[] = {"BASAL_TEST_KILL_AT", "BASAL_TEST_STOP_AT"};
    for (size_t i = 0; i < 2; i++) {
        char what[96];
        sfmt(what, sizeof what, "test hooks: %s present in the test build (control)", NAMES[i]);
        ok(file_contains(harness_path("test/bin/ck-basal"), NAMES[i]), what);
        sfmt(what, sizeof what, "test hooks: %s absent from the release build", NAMES[i]);
        ok(!file_contains(harness_release_parent(), NAMES[i]), what);
    }

    scenario_begin("release-hook");
    if (!flow_add("crash", CRASH_FLOW, grants_all()))
        return;
    char *const env[] = {"BASAL_TEST_KILL_AT=after_journal_commit:1", NULL};
    const struct cli_opts opts = {.json = true, .envp = env, .parent = harness_release_parent(),
                                  .timeout_ms = TIMEOUT_MS};
    struct proc_result r = cli_run(S.t.home, &opts, ARGS("run", "crash"));
    ok(proc_exited_with(&r, 0) && strstr(r.out, "\"succeeded\"") != NULL,
          "kill hook: the release build ignores BASAL_TEST_KILL_AT");
    proc_result_free(&r);
}

/* ---- 5. replay ---------------------------------------------------------------------- */

static const char *REPLAY_FLOW =
    "const a = await kv.get('a');\n"                              /* 0 */
    "const b = await ops.call('plain', 'echo', {v: 'b'});\n"      /* 1 */
    "const u = await ops.call('plain', 'add', {a: 1, b: 1});\n"   /* 2 */
    "return {a, b, u};\n";

/* Kills a run of REPLAY_FLOW at boundary:position, alters the journal with sql, and
 * recovers; returns the recovered run's state. */
static char *replay_altered(const char *name, const char *kill_at, const char *sql)
{
    scenario_begin(name);
    if (!flow_add("replay", REPLAY_FLOW, grants_all()))
        return NULL;
    char env_kill[96];
    sfmt(env_kill, sizeof env_kill, "BASAL_TEST_KILL_AT=%s", kill_at);
    char *const env[] = {env_kill, NULL};
    json_decref(run_flow(ARGS("run", "replay"), env).json);
    char what[160];
    sfmt(what, sizeof what, "%s: alter the journal", name);
    ok(sql_exec(sql), what);
    struct proc_result r = cli(true, ARGS("recover"));
    json_t *rec = cli_output_json(&r);
    proc_result_free(&r);
    char *out = strdup(state_of(rec));
    const char *error = json_string_value(json_object_get(rec, "error"));
    sfmt(what, sizeof what, "%s: the error says nondeterminism", name);
    if (strcmp(out, "failed") == 0)
        ok(error != NULL && strncmp(error, "nondeterminism: ", 16) == 0, what);
    json_decref(rec);
    return out;
}

static const char *RACE_FLOW =
    "const w = await Promise.race([ops.call('plain', 'echo', 'A'),"
    " ops.call('plain', 'echo', 'B')]);\n"                        /* 0, 1 */
    "await kv.set('winner', w);\n"                               /* 2 */
    "const x = await kv.get('winner');\n"                        /* 3 */
    "return {w, x};\n";

static void test_replay(void)
{
    /* Delivered position 0 (kv.get) recorded as another kind: the worker finds it. */
    char *st = replay_altered("nd-kind", "after_delivery:1",
                              "UPDATE journal SET kind = 'kv.delete' WHERE position = 0");
    check_str_eq(st, "failed", "replay: a recorded kind the script does not call -> failed");
    free(st);
    /* Delivered position 0 recorded with other arguments. */
    char digest[JOURNAL_DIGEST_HEX + 1], sql[512];
    journal_digest("[\"z\"]", 5, digest);
    sfmt(sql, sizeof sql, "UPDATE journal SET args = CAST('[\"z\"]' AS BLOB), args_digest = '%s'"
         " WHERE position = 0", digest);
    st = replay_altered("nd-args", "after_delivery:1", sql);
    check_str_eq(st, "failed", "replay: recorded arguments the script does not pass -> failed");
    free(st);
    /* Undelivered position 1 (a query left in doubt) recorded with other arguments: the
     * parent finds it. */
    st = replay_altered("nd-open", "after_journal_commit:1",
                        "UPDATE journal SET args_digest = '00000000000000000000000000000000"
                        "00000000000000000000000000000000' WHERE position = 1");
    check_str_eq(st, "failed", "replay: an undelivered call with other arguments -> failed");
    free(st);
    /* The diverging call's rejection is not written over the row the journal holds
     * there [guard: no delivery recorded after a stop]. */
    st = sql_text("SELECT state || ' ' || coalesce(settlement, '-') FROM journal WHERE position = 1");
    check_str_eq(st, "pending -", "replay: the journaled row of the diverging position is kept");
    free(st);
    /* Control: the same crash, journal untouched, recovers. */
    st = replay_altered("nd-control", "after_journal_commit:1", "SELECT 1");
    check_str_eq(st, "succeeded", "replay: control: the untouched journal recovers");
    free(st);

    /* Promise.race: record position 1 ('B') as the winner (delivery order 1), position 0
     * second, and what followed consistently with B (the kv.set's arguments, the kv row,
     * the kv.get's outcome waiting in the mailbox); replay must give B. Replaying by
     * position instead would give A and diverge at position 2. */
    scenario_begin("race");
    if (!flow_add("race", RACE_FLOW, grants_all()))
        return;
    char *const env[] = {"BASAL_TEST_KILL_AT=after_journal_commit:3", NULL};
    json_decref(run_flow(ARGS("run", "race"), env).json);
    char *winner = sql_text("SELECT CAST(value AS TEXT) FROM journal WHERE delivery_order = 1");
    check_str_eq(winner, "\"A\"", "race: the first run's winner is position 0");
    free(winner);
    journal_digest("[\"winner\",\"B\"]", 14, digest);
    sfmt(sql, sizeof sql,
         "UPDATE journal SET delivery_order = delivery_order + 100 WHERE position IN (0, 1);"
         "UPDATE journal SET delivery_order = 1 WHERE position = 1;"
         "UPDATE journal SET delivery_order = 2 WHERE position = 0;"
         "UPDATE journal SET args = CAST('[\"winner\",\"B\"]' AS BLOB), args_digest = '%s'"
         " WHERE position = 2;"
         "UPDATE kv SET value = '\"B\"' WHERE key = 'winner';"
         "UPDATE mailbox SET value = CAST('\"B\"' AS BLOB) WHERE position = 3;", digest);
    ok(sql_exec(sql), "race: record B as the winner");
    struct proc_result r = cli(true, ARGS("recover"));
    json_t *rec = cli_output_json(&r);
    proc_result_free(&r);
    check_str_eq(state_of(rec), "succeeded", "race: the recovered run succeeds");
    json_t *res = json_object_get(rec, "result");
    check_str_eq(json_string_value(json_object_get(res, "w")), "B",
                 "race: replay gives the recorded winner, not the first position");
    check_str_eq(json_string_value(json_object_get(res, "x")), "B", "race: the live call after it agrees");
    json_decref(rec);
}

/* A run older than its manifest's deadline is not resumed [guard: run deadline]; the
 * same crash within the deadline recovers (control). */
static void test_run_deadline(void)
{
    for (int late = 0; late <= 1; late++) {
        scenario_begin(late ? "deadline-late" : "deadline-control");
        if (!flow_add("crash", CRASH_FLOW, grants_all()))
            return;
        char *const env[] = {"BASAL_TEST_KILL_AT=after_delivery:1", NULL};
        json_decref(run_flow(ARGS("run", "crash"), env).json);
        /* The default deadline is 10 minutes: admitted 11 minutes ago. */
        if (late)
            ok(sql_exec("UPDATE runs SET created_at = created_at - 660000 WHERE id = 1"),
               "deadline: age the run");
        struct proc_result r = cli(true, ARGS("recover"));
        json_t *rec = cli_output_json(&r);
        proc_result_free(&r);
        const char *error = json_string_value(json_object_get(rec, "error"));
        if (late) {
            check_str_eq(state_of(rec), "failed", "deadline: a run past its deadline fails");
            ok(error != NULL && strstr(error, "outlived its deadline of 600 s") != NULL,
               "deadline: the error names the deadline");
            check_int_eq(file_line_count(S.log_keyed), 0, "deadline: nothing more was called");
        } else {
            check_str_eq(state_of(rec), "succeeded", "deadline: control: within it, recovered");
        }
        json_decref(rec);
    }
}

/* Two processes driving runs of two flows on one data home at once: every run
 * succeeds and every write lands [guard: the store's companion files are narrowed
 * without dropping SQLite's POSIX locks; closing an ordinary descriptor of -shm did,
 * and the other process truncated the shared memory under this one (SIGBUS)]. */
static void test_two_processes(void)
{
    scenario_begin("two-processes");
    static const char *LONG = "for (let i = 0; i < 2000; i++) await kv.set('n', i); return 1;";
    static const char *SHORT = "for (let i = 0; i < 20; i++) await kv.set('m', i); return 2;";
    if (!flow_add("long", LONG, "") || !flow_add("short", SHORT, ""))
        return;
    /* One process drives a long run while others open the store, run and close. */
    struct proc p;
    const struct cli_opts opts = {.envp = NO_ENV};
    if (!ok(cli_start(&p, S.t.home, &opts, ARGS("run", "long")) == 0,
            "two processes: start the long run"))
        return;
    int short_ok = 0;
    for (int i = 0; i < 8; i++) {
        struct proc_result r = cli(false, ARGS("run", "short"));
        if (proc_exited_with(&r, 0))
            short_ok++;
        else
            fprintf(stderr, "  short run %d: %s: %s\n", i, proc_describe(&r), r.err);
        proc_result_free(&r);
    }
    struct proc_result r = proc_finish(&p, NULL, 0, TIMEOUT_MS);
    bool long_ok = proc_exited_with(&r, 0);
    if (!long_ok)
        fprintf(stderr, "  long run: %s: %s\n", proc_describe(&r), r.err);
    proc_result_free(&r);
    check_int_eq(short_ok, 8, "two processes: every short run beside the long one succeeds");
    ok(long_ok, "two processes: the long run succeeds while others open and close the store");
    check_int_eq(sql_number("SELECT count(*) FROM journal"), 2000 + 8 * 20,
                 "two processes: every call journaled");
}

/* Starts `run long` stopped (SIGSTOP by the test hook) after position 5's outcome
 * commit. Returns false if it did not stop there. */
static bool start_stopped(struct proc *p)
{
    char *const env[] = {"BASAL_TEST_STOP_AT=after_outcome_commit:5", NULL};
    const struct cli_opts opts = {.envp = env};
    if (cli_start(p, S.t.home, &opts, ARGS("run", "long")) != 0)
        return false;
    int status = 0;
    if (waitpid(p->pid, &status, WUNTRACED) != p->pid || !WIFSTOPPED(status)) {
        proc_kill(p);
        return false;
    }
    return true;
}

/* A run whose owner is alive is not recover's [guard: recover skips live owners], and
 * an owner that lost its claim writes nothing more [guard: generation fencing]. */
static void test_claims(void)
{
    scenario_begin("claims");
    static const char *LONG = "for (let i = 0; i < 50; i++) await kv.set('n', i); return 1;";
    if (!flow_add("long", LONG, ""))
        return;
    struct proc p;
    if (!ok(start_stopped(&p), "claims: the run stops at position 5 holding its claim"))
        return;
    struct proc_result r = cli(true, ARGS("recover"));
    ok(proc_exited_with(&r, 0) && r.out_len == 0, "claims: recover leaves a live owner's run alone");
    proc_result_free(&r);
    check_int_eq(sql_number("SELECT generation FROM runs WHERE id = 1"), 1,
                 "claims: the generation is still the owner's");
    kill(p.pid, SIGCONT);
    r = proc_finish(&p, NULL, 0, TIMEOUT_MS);
    ok(proc_exited_with(&r, 0), "claims: control: the owner, let go, finishes its run");
    proc_result_free(&r);

    /* Another process takes the run over (its claim bumps the generation) while the
     * first is stopped: the first must stop writing. */
    if (!ok(start_stopped(&p), "claims: a second run stops at position 5"))
        return;
    ok(sql_exec("UPDATE runs SET generation = generation + 1 WHERE id = 2"),
       "claims: another owner's claim (generation + 1)");
    long long rows = sql_number("SELECT count(*) FROM journal WHERE run_id = 2");
    kill(p.pid, SIGCONT);
    r = proc_finish(&p, NULL, 0, TIMEOUT_MS);
    ok(proc_exited_with(&r, 1) && strstr(r.err, "taken over by another process") != NULL,
       "claims: the fenced owner stops with one line saying why");
    proc_result_free(&r);
    check_int_eq(sql_number("SELECT count(*) FROM journal WHERE run_id = 2"), rows,
                 "claims: the fenced owner journaled nothing more");
    char *state = sql_text("SELECT state FROM runs WHERE id = 2");
    check_str_eq(state, "running", "claims: the fenced owner did not end the run");
    free(state);
}

/* A module program gets at most what is left of the activation's wall deadline, not
 * its catalog timeout (10 s here) [guard: module calls bounded by the deadline]. */
static void test_module_deadline(void)
{
    scenario_begin("module-deadline");
    char grants[4096];
    sfmt(grants, sizeof grants, "%s,\"deadline\":\"2s\"", grants_all());
    if (!flow_add("slow", "await ops.call('plain', 'sleep', {}); return 1;", grants))
        return;
    long long t0 = monotonic_ms();
    struct run_out o = run_flow(ARGS("run", "slow"), NO_ENV);
    long long took = monotonic_ms() - t0;
    const char *error = json_string_value(json_object_get(o.json, "error"));
    check_str_eq(state_of(o.json), "failed", "module deadline: the run fails");
    check(error != NULL && strstr(error, "deadline") != NULL, "module deadline: at its deadline",
          "the run's error: %s", error != NULL ? error : "(none)");
    ok(took < 6000, "module deadline: within the run's 2 s, not the module's 10 s");
    json_decref(o.json);
    char *tl = read_text_file(S.log_plain);
    const char *at = tl != NULL ? strstr(tl, "sleep ") : NULL;
    ok(at != NULL, "module deadline: the module was called");
    free(tl);
}

/* An uncaught runtime error of a flow names the flow's file, line and column (the
 * first frame of its stack: quickjs patch 0008), in --json's error and in the human
 * output of `run` [guard frame-columns: without the patch the location is "flow.js:3"]. */
static void test_error_location(void)
{
    scenario_begin("error-location");
    if (!flow_add("thrower", "const n = 1;\nfunction f() {\n  return n + g();\n}\n"
                             "function g() {  throw new TypeError('deep'); }\nreturn f();\n",
                  ""))
        return;
    /* A flow's script is named ID/flow.js. */
    const char *where = "script error: TypeError: deep (thrower/flow.js:5:27)";
    struct run_out o = run_flow(ARGS("run", "thrower"), NO_ENV);
    const char *error = json_string_value(json_object_get(o.json, "error"));
    check(error != NULL && strcmp(error, where) == 0,
          "error location: --json's error names the flow's file, line and column",
          "the run's error: %s; want %s", error != NULL ? error : "(none)", where);
    json_decref(o.json);
    struct proc_result r = cli(false, ARGS("run", "thrower"));
    check(proc_exited_with(&r, 1) && strstr(r.out, where) != NULL,
          "error location: the human output names the flow's file, line and column",
          "%s; out %s err %s", proc_describe(&r), r.out, r.err);
    proc_result_free(&r);
}

/* ---- 6. bad input ----------------------------------------------------------------- */

static void expect_bad(const char *const *args, int code, const char *what)
{
    char *before = dump_runs();
    struct proc_result r = cli(false, args);
    char name[200];
    sfmt(name, sizeof name, "bad input: %s exits %d with one line", what, code);
    const char *nl = strchr(r.err, '\n');
    ok(proc_exited_with(&r, code) && nl != NULL && nl[1] == '\0' && r.out_len == 0, name);
    if (!proc_exited_with(&r, code))
        fprintf(stderr, "  %s: %s", proc_describe(&r), r.err);
    proc_result_free(&r);
    char *after = dump_runs();
    sfmt(name, sizeof name, "bad input: %s changes nothing stored", what);
    check_str_eq(after, before, name);
    free(before);
    free(after);
}

static void test_bad_input(void)
{
    scenario_begin("bad");
    if (!flow_add("ok", MARK_FLOW, grants_all()))
        return;
    json_decref(run_flow(ARGS("run", "ok"), NO_ENV).json);
    char big[70000];
    memset(big, ' ', sizeof big - 3);
    big[0] = '"';
    big[sizeof big - 3] = '"';
    big[sizeof big - 2] = '\0';
    expect_bad(ARGS("run", "ok", "--trigger", "{\"a\":"), 2, "a trigger that is not JSON");
    expect_bad(ARGS("run", "ok", "--trigger", "{\"a\":1,\"a\":2}"), 2, "a trigger with a duplicate key");
    expect_bad(ARGS("run", "ok", "--trigger", big), 2, "an oversized trigger");
    expect_bad(ARGS("run", "ok", "--trigger", "\"\xff\xfe\""), 2, "a trigger of invalid UTF-8");
    expect_bad(ARGS("run", "NoSuch"), 1, "an invalid flow id");
    expect_bad(ARGS("run", "nosuch"), 1, "an unknown flow");
    expect_bad(ARGS("run"), 2, "run without a flow");
    expect_bad(ARGS("journal", "99"), 1, "an unknown run");
    expect_bad(ARGS("journal", "x"), 2, "a run id that is not a number");
    expect_bad(ARGS("flow", "reconcile", "1", "0", "--cancel"), 1,
               "reconcile of a run not in needs_reconcile");
    expect_bad(ARGS("flow", "reconcile", "99", "0", "--not-applied"), 1, "reconcile of an unknown run");
    expect_bad(ARGS("flow", "reconcile", "1", "0"), 2, "reconcile without a decision");
    expect_bad(ARGS("flow", "reconcile", "1", "0", "--observed", "{"), 2,
               "reconcile with an observed value that is not JSON");
    expect_bad(ARGS("flow", "approve", "ok", "--version", "1", "--code-hash",
                    "00000000000000000000000000000000000000000000000000000000000000ff"), 1,
               "a wrong code hash");
    expect_bad(ARGS("runs", "a", "b"), 2, "runs with two flows");
    expect_bad(ARGS("runs", "nosuch"), 1, "runs of a flow that is not installed");
    /* A catalog that does not parse refuses the run before anything is stored. */
    char path[PATH_MAX + 32];
    sfmt(path, sizeof path, "%s/modules.json", S.t.home);
    write_text_file(path, "{\"modules\": {\"x\": {\"program\": \"relative\"}}}", 0600);
    expect_bad(ARGS("run", "ok"), 1, "a malformed operator catalog");
}

int main(void)
{
    if (!require_parent_and_module("ck-basal", "test_module"))
        return harness_finish();
    snprintf(g_root, sizeof g_root, "%s", harness_tmpdir("flow-runs"));
    /* Workers must be able to run from here: the harness dir is the test's own. */
    test_full_flow();
    test_refused_before_running();
    test_grant_checks();
    test_kv_limits();
    test_journal_limit();
    test_crash_recovery();
    test_hook_absent_from_release();
    test_replay();
    test_run_deadline();
    test_two_processes();
    test_claims();
    test_module_deadline();
    test_error_location();
    test_bad_input();
    harness_remove_tree(g_root);
    return harness_finish();
}
