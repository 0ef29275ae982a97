/* ck-basal flow dry-run through the real binaries (docs/operations.md, "Dry runs"). A
 * data home with a module catalog (tests/tools/test_module, which logs every request
 * it receives), a read root holding a file, a write root holding a file, and a flow
 * that would change everything it can: kv set and delete, fs writes, a sink, a
 * mutating module op; besides reads and calls a run would refuse.
 *
 *   1. a dry run of the directory and of the installed (pending) version: every call
 *      listed with its class and status (reads performed, mutations captured as
 *      HostError dry_run, refusals refused), the reads real (kv and files), and
 *      nothing changed anywhere: the file tree, the sink, the module's log, the kv,
 *      runs, journal and every other table; one audit row [guard: the dry-run host
 *      performs no mutation];
 *   2. --allow-queries performs the query op (in the module's log), never the mutate
 *      op; fixtures answer the mutations they match; a net.fetch GET is a query
 *      (performed only with --allow-queries), a POST is captured;
 *   3. the refusals are the ones a real run meets: the same codes and messages as the
 *      journal of a real run of the same calls [guard: the run's own grant check],
 *      kv's limits included (a value over 64 KiB, a key over 256 bytes) [guard: kv's
 *      checks before a kv change is captured];
 *   4. a run's limits hold: past 10 000 host calls or 64 MiB of journal the dry run
 *      fails with the error the run of the same script fails with, calls past the
 *      limit counted once each [guard: a dry run has a run's limits];
 *   5. bad input exits non-zero with one line and changes nothing. */
#include "lib/cli_home.h"
#include "lib/harness.h"
#include "lib/store_view.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>



static char g_root[256];
static char g_home[PATH_MAX], g_db[PATH_MAX], g_log[PATH_MAX], g_data[PATH_MAX],
    g_out[PATH_MAX], g_flow[PATH_MAX], g_refuse[PATH_MAX];

static struct proc_result cli(bool json, const char *const *args)
{
    return cli_home(g_home, json, args);
}

/* ---- what "nothing changed" means -------------------------------------------------------- */

struct text {
    char *buf;
    size_t len;
};

__attribute__((format(printf, 2, 3))) static void add(struct text *t, const char *fmt, ...)
{
    char piece[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(piece, sizeof piece, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t k = (size_t)n < sizeof piece ? (size_t)n : sizeof piece - 1;
    char *grown = realloc(t->buf, t->len + k + 1);
    if (grown == NULL)
        return;
    memcpy(grown + t->len, piece, k);
    t->len += k;
    grown[t->len] = '\0';
    t->buf = grown;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Every entry below dir with its mode, size and (for files) bytes. */
static void add_tree(struct text *t, const char *dir)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, by_name);
    if (n < 0) {
        add(t, "%s: absent\n", dir);
        return;
    }
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0 && strncmp(name, "basal.db", 8) != 0) {
            char path[PATH_MAX + 256];
            sfmt(path, sizeof path, "%s/%s", dir, name);
            struct stat st;
            if (lstat(path, &st) == 0) {
                add(t, "%s %o %lld\n", path, (unsigned)st.st_mode, (long long)st.st_size);
                if (S_ISDIR(st.st_mode)) {
                    add_tree(t, path);
                } else if (S_ISREG(st.st_mode)) {
                    char *bytes = read_text_file(path);
                    add(t, "  %s\n", bytes != NULL ? bytes : "(unreadable)");
                    free(bytes);
                }
            }
        }
        free(names[i]);
    }
    free(names);
}

/* The world a flow could change: the roots, the data home's files (sinks, catalogs),
 * the module's log and every table of the store but the audit log. */
static char *snapshot(void)
{
    struct text t = {NULL, 0};
    add(&t, "%s", "");
    add_tree(&t, g_data);
    add_tree(&t, g_out);
    add_tree(&t, g_home);
    char *log = read_text_file(g_log);
    add(&t, "log: %s\n", log != NULL ? log : "(none)");
    free(log);
    static const char *const TABLES[] = {
        "flows", "flow_versions", "approvals", "runs", "journal", "mailbox", "activations",
        "kv", "health_counters", "codemode_runs", "codemode_calls",
    };
    enum { TABLE_COUNT = sizeof TABLES / sizeof TABLES[0] };
    char queries[TABLE_COUNT][128];
    const char *query_list[TABLE_COUNT];
    for (size_t i = 0; i < TABLE_COUNT; i++) {
        sfmt(queries[i], sizeof queries[i], "SELECT * FROM %s ORDER BY 1, 2", TABLES[i]);
        query_list[i] = queries[i];
    }
    char *rows = store_dump(g_db, query_list, TABLE_COUNT);
    add(&t, "store:\n%s", rows != NULL ? rows : "(cannot open)\n");
    free(rows);
    return t.buf;
}

static long long audit_rows(const char *where)
{
    char sql[256];
    sfmt(sql, sizeof sql, "SELECT count(*) FROM audit WHERE %s", where);
    return store_number(g_db, sql);
}

/* Reports the first line where two snapshots differ. */
static void check_unchanged(const char *before, const char *after, const char *name)
{
    if (before != NULL && after != NULL && strcmp(before, after) == 0) {
        check(true, name, "%s", "");
        return;
    }
    size_t i = 0;
    while (before != NULL && after != NULL && before[i] != '\0' && before[i] == after[i])
        i++;
    size_t start = i;
    while (start > 0 && before[start - 1] != '\n')
        start--;
    fail(name, "differs at: before '%.160s' after '%.160s'", before != NULL ? before + start : "",
         after != NULL ? after + start : "");
}

/* ---- setup ------------------------------------------------------------------------------- */

#define MODULES                                                                           \
    "{\"modules\": {\"tickets\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"],"      \
    " \"ops\": {\"echo\": {\"kind\": \"query\"}, \"add\": {\"kind\": \"mutate\"}}}}}"

static const char *MUTATING_FLOW =
    "const seen = {};\n"
    "async function t(name, f) {\n"
    "  try { seen[name] = {ok: await f()}; } catch (e) { seen[name] = {err: e.data.code}; }\n"
    "}\n"
    "await t('kv_get', () => kv.get('count'));\n"
    "await t('kv_set', () => kv.set('count', 99));\n"
    "await t('kv_delete', () => kv.delete('count'));\n"
    "await t('read', () => fs.read(DATA + '/in.txt'));\n"
    "await t('list', () => fs.list(DATA));\n"
    "await t('write', () => fs.write(OUT + '/existing.txt', 'new'));\n"
    "await t('write_new', () => fs.write(OUT + '/fresh.txt', 'new'));\n"
    "await t('write_ro', () => fs.write(DATA + '/x.txt', 'new'));\n"
    "await t('emit', () => sink.emit('events', {a: 1}));\n"
    "await t('emit_other', () => sink.emit('other', {a: 1}));\n"
    "await t('query', () => ops.call('tickets', 'echo', {q: 1}));\n"
    "await t('mutate', () => ops.call('tickets', 'add', {a: 1, b: 2}));\n"
    "await t('op_other', () => ops.call('tickets', 'nope', {}));\n"
    "await t('net', () => net.fetch('https://example.com/'));\n"
    "seen.now = typeof now();\n"
    "return seen;\n";

/* kind and status of each call of MUTATING_FLOW, by position. */
static const char *const WANT_CALLS[][2] = {
    {"kv.get", "performed"},   {"kv.set", "captured"},    {"kv.delete", "captured"},
    {"fs.read", "performed"},  {"fs.list", "performed"},  {"fs.write", "captured"},
    {"fs.write", "captured"},  {"fs.write", "refused"},   {"sink.emit", "captured"},
    {"sink.emit", "refused"},  {"ops.call", "captured"},  {"ops.call", "captured"},
    {"ops.call", "refused"},   {"net.fetch", "refused"},  {"now", "performed"},
};
#define WANT_COUNT (sizeof WANT_CALLS / sizeof WANT_CALLS[0])

/* A flow directory; extra: more manifest members (",\"net\":...") or "". */
static bool write_flow_with(const char *dir, const char *id, const char *extra, const char *body)
{
    char manifest[4096];
    sfmt(manifest, sizeof manifest,
         "{\"format\":1,\"id\":\"%s\",\"version\":1,\"purpose\":\"dry run test\","
         "\"trigger\":{\"manual\":true},"
         "\"ops\":[{\"module\":\"tickets\",\"op\":\"echo\"},{\"module\":\"tickets\",\"op\":\"add\"}],"
         "\"fs\":{\"read\":[\"%s\"],\"write\":[\"%s\"]},\"sinks\":[\"events\"]%s}",
         id, g_data, g_out, extra);
    size_t cap = strlen(body) + 2 * (size_t)PATH_MAX + 64;
    char *script = malloc(cap);
    if (script == NULL)
        return false;
    sfmt(script, cap, "const DATA = '%s', OUT = '%s';\n%s", g_data, g_out, body);
    bool ok = flow_dir_write(dir, manifest, script);
    free(script);
    return ok;
}

static bool write_flow(const char *dir, const char *id, const char *body)
{
    return write_flow_with(dir, id, "", body);
}

static bool setup(void)
{
    sfmt(g_home, sizeof g_home, "%s/home", g_root);
    sfmt(g_db, sizeof g_db, "%s/basal.db", g_home);
    sfmt(g_log, sizeof g_log, "%s/effects.log", g_root);
    sfmt(g_data, sizeof g_data, "%s/data", g_root);
    sfmt(g_out, sizeof g_out, "%s/out", g_root);
    sfmt(g_flow, sizeof g_flow, "%s/flow-mut", g_root);
    sfmt(g_refuse, sizeof g_refuse, "%s/flow-refuse", g_root);
    char path[PATH_MAX + 32], text[4096];
    if (mkdir(g_data, 0755) != 0 || mkdir(g_out, 0755) != 0)
        return false;
    sfmt(path, sizeof path, "%s/in.txt", g_data);
    if (!write_text_file(path, "hello", 0644))
        return false;
    sfmt(path, sizeof path, "%s/existing.txt", g_out);
    if (!write_text_file(path, "old", 0644))
        return false;
    struct proc_result r = cli(false, ARGS("setup"));
    bool ok = proc_exited_with(&r, 0);
    proc_result_free(&r);
    sfmt(text, sizeof text, MODULES, harness_path("test/tools/test_module"), g_log);
    sfmt(path, sizeof path, "%s/modules.json", g_home);
    if (!ok || !write_text_file(path, text, 0600) || !write_flow(g_flow, "mut", MUTATING_FLOW))
        return false;
    /* Installed, not approved; with a kv value the dry run must read and keep. */
    r = cli(false, ARGS("flow", "install", g_flow));
    ok = proc_exited_with(&r, 0);
    proc_result_free(&r);
    return ok && store_exec(g_db, "INSERT INTO kv (flow_id, key, value) VALUES ('mut', 'count', '5')");
}

/* ---- 1. nothing changes, every call listed ---------------------------------------------- */

static void check_calls(const json_t *report, const char *label)
{
    const json_t *calls = json_object_get(report, "calls");
    bool all = json_array_size(calls) == WANT_COUNT;
    char detail[512] = "";
    for (size_t i = 0; all && i < WANT_COUNT; i++) {
        const json_t *c = json_array_get(calls, i);
        all = json_integer_value(json_object_get(c, "position")) == (json_int_t)i &&
              strcmp(json_str_of(c, "kind"), WANT_CALLS[i][0]) == 0 &&
              strcmp(json_str_of(c, "status"), WANT_CALLS[i][1]) == 0 &&
              json_is_object(json_object_get(c, "outcome"));
        if (!all)
            sfmt(detail, sizeof detail, "position %zu: %s %s, expected %s %s", i,
                 json_str_of(c, "kind"), json_str_of(c, "status"), WANT_CALLS[i][0], WANT_CALLS[i][1]);
    }
    char name[160];
    sfmt(name, sizeof name, "dry run (%s): every call listed in order with its status", label);
    check(all, name, "%zu calls; %s", json_array_size(calls), detail);
}

static void check_seen(const json_t *report, const char *label)
{
    json_t *want = json_loads(
        "{\"kv_get\": {\"ok\": 5}, \"kv_set\": {\"err\": \"dry_run\"},"
        " \"kv_delete\": {\"err\": \"dry_run\"}, \"read\": {\"ok\": \"hello\"},"
        " \"list\": {\"ok\": [{\"name\": \"in.txt\", \"type\": \"file\"}]},"
        " \"write\": {\"err\": \"dry_run\"}, \"write_new\": {\"err\": \"dry_run\"},"
        " \"write_ro\": {\"err\": \"denied\"}, \"emit\": {\"err\": \"dry_run\"},"
        " \"emit_other\": {\"err\": \"denied\"}, \"query\": {\"err\": \"dry_run\"},"
        " \"mutate\": {\"err\": \"dry_run\"}, \"op_other\": {\"err\": \"denied\"},"
        " \"net\": {\"err\": \"denied\"}, \"now\": \"number\"}", 0, NULL);
    const json_t *result = json_object_get(report, "result");
    char name[160];
    sfmt(name, sizeof name, "dry run (%s): reads are real (kv 5, the file), mutations reject"
         " dry_run, refusals keep their codes", label);
    char *got = json_dumps(result, JSON_COMPACT);
    check(json_equal(result, want), name, "%s", got != NULL ? got : "(none)");
    free(got);
    json_decref(want);
}

static void test_nothing_changes(void)
{
    char *before = snapshot();
    long long audits = audit_rows("1");
    struct proc_result r = cli(true, ARGS("flow", "dry-run", g_flow));
    json_t *report = cli_output_json(&r);
    check(proc_exited_with(&r, 0) && strcmp(json_str_of(report, "outcome"), "completed") == 0 &&
              strcmp(json_str_of(report, "source"), "directory") == 0,
          "dry run (directory): completes", "%s %s", proc_describe(&r), r.err);
    check_calls(report, "directory");
    check_seen(report, "directory");
    json_decref(report);
    proc_result_free(&r);
    char *after = snapshot();
    check_unchanged(before, after,
                    "dry run (directory): nothing changed: files, sink, module log, kv, runs,"
                    " journal [guard: the dry-run host performs no mutation]");
    free(after);
    check_int_eq(audit_rows("1"), audits + 1, "dry run (directory): one audit row, no more");
    check_int_eq(audit_rows("kind = 'flow.dry_run' AND flow_id = 'mut' AND run_id IS NULL"
                            " AND reason LIKE 'dry run of version 1 (from a directory%'"),
                 1, "dry run (directory): the audit row names the flow and the version");

    r = cli(true, ARGS("flow", "dry-run", "mut", "--version", "1"));
    report = cli_output_json(&r);
    check(proc_exited_with(&r, 0) && strcmp(json_str_of(report, "source"), "store") == 0 &&
              json_is_false(json_object_get(report, "approved")),
          "dry run (installed version, not approved): completes", "%s %s", proc_describe(&r),
          r.err);
    check_calls(report, "installed version");
    check_seen(report, "installed version");
    json_decref(report);
    proc_result_free(&r);
    after = snapshot();
    check_unchanged(before, after, "dry run (installed version): nothing changed");
    free(after);

    r = cli(false, ARGS("flow", "dry-run", "mut", "--version", "1"));
    check(proc_exited_with(&r, 0) &&
              output_has_line_prefix(r.out, "dry run of flow mut version 1 (not approved,") &&
              output_has_line_prefix(r.out, "POS   KIND         CLASS") &&
              output_has_line_prefix(r.out, "1     kv.set       local           captured") &&
              output_has_line_prefix(r.out, "7     fs.write     keyed_mutation  refused") &&
              output_has_line(r.out, "15 calls: 4 performed (reads), 7 captured (0 from"
                                     " fixtures), 4 refused; nothing was changed"),
          "dry run (human): the table of calls and the tally", "%s", r.out);
    proc_result_free(&r);
    free(before);
}

/* ---- 2. --allow-queries and fixtures ------------------------------------------------------ */

static void test_queries_and_fixtures(void)
{
    char fixtures[PATH_MAX + 32];
    sfmt(fixtures, sizeof fixtures, "%s/fixtures.json", g_root);
    write_text_file(fixtures,
               "{\"fixtures\": ["
               " {\"kind\": \"ops.call\", \"args\": [\"tickets\", \"add\", {\"a\": 1, \"b\": 2}],"
               "  \"result\": 3},"
               " {\"kind\": \"sink.emit\", \"position\": 8, \"result\": {\"bytes\": 11}},"
               " {\"kind\": \"kv.set\", \"error\": {\"code\": \"too_large\", \"message\": \"m\"}}]}",
               0644);
    char *log_before = read_text_file(g_log);
    struct proc_result r = cli(true, ARGS("flow", "dry-run", g_flow, "--allow-queries",
                                          "--fixtures", fixtures));
    json_t *report = cli_output_json(&r);
    json_t *result = json_object_get(report, "result");
    json_t *want_query = json_loads("{\"ok\": {\"q\": 1}}", 0, NULL);
    json_t *want_mutate = json_loads("{\"ok\": 3}", 0, NULL);
    json_t *want_emit = json_loads("{\"ok\": {\"bytes\": 11}}", 0, NULL);
    json_t *want_set = json_loads("{\"err\": \"too_large\"}", 0, NULL);
    check(proc_exited_with(&r, 0) && json_equal(json_object_get(result, "query"), want_query),
          "allow-queries: the query op is performed and its answer seen", "%s", r.out);
    check(json_equal(json_object_get(result, "mutate"), want_mutate) &&
              json_equal(json_object_get(result, "emit"), want_emit) &&
              json_equal(json_object_get(result, "kv_set"), want_set) &&
              json_is_true(json_object_get(json_array_get(json_object_get(report, "calls"), 11),
                                           "fixture")),
          "fixtures: a matching entry answers a mutation (result or error)", "%s", r.out);
    json_decref(want_query);
    json_decref(want_mutate);
    json_decref(want_emit);
    json_decref(want_set);
    json_decref(report);
    proc_result_free(&r);
    char *log_after = read_text_file(g_log);
    const char *added = log_after != NULL ? log_after + (log_before != NULL ? strlen(log_before) : 0)
                                          : "";
    check(log_after != NULL && strncmp(added, "echo ", 5) == 0 &&
              strchr(added, '\n') == added + strlen(added) - 1 && strstr(added, "add ") == NULL,
          "allow-queries: the module ran the query once and never the mutation", "%s",
          added);
    free(log_before);
    free(log_after);
    char path[PATH_MAX + 32];
    sfmt(path, sizeof path, "%s/existing.txt", g_out);
    char *text = read_text_file(path);
    sfmt(path, sizeof path, "%s/sinks", g_home);
    struct stat st;
    check(text != NULL && strcmp(text, "old") == 0 && stat(path, &st) != 0,
          "allow-queries: still no file written, no sink", "%s", text != NULL ? text : "");
    free(text);
}

/* net.fetch as the table says: a GET or HEAD is a query (performed only with
 * --allow-queries), any other method is captured. The granted host does not resolve,
 * so a performed GET is rejected by the fetch itself, not by the dry run. */
static void test_net_fetch(void)
{
    char dir[PATH_MAX + 32];
    sfmt(dir, sizeof dir, "%s/flow-net", g_root);
    if (!write_flow_with(dir, "net", ",\"net\":{\"fetch\":[{\"host\":\"nosuch.invalid\",\"methods\":[\"GET\",\"POST\"]}]}",
                         "const seen = [];\n"
                         "for (const m of ['POST', 'GET']) {\n"
                         "  try { await net.fetch('https://nosuch.invalid/x', {method: m, body: m === 'POST' ? 'b' : undefined}); seen.push('ok'); }\n"
                         "  catch (e) { seen.push(e.data.code); }\n"
                         "}\n"
                         "return seen;\n")) {
        fail("net.fetch: flow", "%s", strerror(errno));
        return;
    }
    for (int queries = 0; queries < 2; queries++) {
        struct proc_result r = queries ? cli(true, ARGS("flow", "dry-run", dir, "--allow-queries"))
                                       : cli(true, ARGS("flow", "dry-run", dir));
        json_t *report = cli_output_json(&r);
        const json_t *calls = json_object_get(report, "calls");
        const json_t *post = json_array_get(calls, 0), *get = json_array_get(calls, 1);
        const char *get_code = json_string_value(json_object_get(
            json_object_get(json_object_get(get, "outcome"), "rejected"), "code"));
        bool right = json_array_size(calls) == 2 && strcmp(json_str_of(post, "status"), "captured") == 0 &&
                     strcmp(json_str_of(post, "class"), "mutation") == 0 &&
                     strcmp(json_str_of(get, "class"), "query") == 0 &&
                     strcmp(json_str_of(get, "status"), queries ? "performed" : "captured") == 0 &&
                     get_code != NULL && (strcmp(get_code, "dry_run") == 0) == !queries;
        check(proc_exited_with(&r, 0) && right,
              queries ? "net.fetch: with --allow-queries a GET is performed, a POST captured"
                      : "net.fetch: a POST and (without --allow-queries) a GET are captured",
              "%s %.600s", proc_describe(&r), r.out);
        json_decref(report);
        proc_result_free(&r);
    }
}

/* ---- 3. a run's refusals ------------------------------------------------------------------ */

static const char *REFUSING_FLOW =
    "const out = [];\n"
    "for (const f of [() => fs.write(DATA + '/x.txt', 'n'), () => fs.read('/etc/passwd'),\n"
    "                 () => sink.emit('other', 1), () => ops.call('tickets', 'nope', {}),\n"
    "                 () => net.fetch('https://example.com/'), () => git.log('/tmp', {}),\n"
    "                 () => ops.call(5, 'x', {}), () => kv.set('k', 'x'.repeat(70000)),\n"
    "                 () => kv.delete('k'.repeat(300))]) {\n"
    "  try { out.push(await f()); } catch (e) { out.push(e.data.code); }\n"
    "}\n"
    "return out;\n";

static void test_same_refusals(void)
{
    if (!write_flow(g_refuse, "refuse", REFUSING_FLOW)) {
        fail("refusals: flow", "%s", strerror(errno));
        return;
    }
    struct proc_result r = cli(true, ARGS("flow", "dry-run", g_refuse));
    json_t *dry = cli_output_json(&r);
    proc_result_free(&r);
    /* The same calls in a real run (each refused, so the run changes nothing either). */
    r = cli(true, ARGS("flow", "install", g_refuse));
    json_t *in = cli_output_json(&r);
    proc_result_free(&r);
    r = cli(false, ARGS("flow", "approve", "refuse", "--version", "1", "--code-hash",
                        json_str_of(in, "code_hash")));
    proc_result_free(&r);
    json_decref(in);
    r = cli(true, ARGS("run", "refuse"));
    json_t *run = cli_output_json(&r);
    char run_id[24];
    sfmt(run_id, sizeof run_id, "%lld", (long long)json_integer_value(json_object_get(run, "run")));
    proc_result_free(&r);
    r = cli(true, ARGS("journal", run_id));
    json_t *journal = cli_output_json(&r);
    proc_result_free(&r);
    const json_t *dry_calls = json_object_get(dry, "calls");
    const json_t *run_calls = json_object_get(journal, "calls");
    bool same = json_array_size(dry_calls) == 9 && json_array_size(run_calls) == 9;
    char detail[1024] = "";
    for (size_t i = 0; same && i < 9; i++) {
        const json_t *d = json_array_get(dry_calls, i), *j = json_array_get(run_calls, i);
        const json_t *dv = json_object_get(json_object_get(d, "outcome"), "rejected");
        const json_t *jv = json_object_get(json_object_get(j, "outcome"), "rejected");
        same = dv != NULL && json_equal(dv, jv) && strcmp(json_str_of(d, "status"), "refused") == 0 &&
               strcmp(json_str_of(d, "class"), json_str_of(j, "class")) == 0;
        if (!same) {
            char *a = json_dumps(d, JSON_COMPACT), *b = json_dumps(j, JSON_COMPACT);
            sfmt(detail, sizeof detail, "position %zu: dry %s, run %s", i, a != NULL ? a : "",
                 b != NULL ? b : "");
            free(a);
            free(b);
        }
    }
    check(same, "refusals: each is refused as a real run refuses it (code, message, class)"
          " [guard: the run's own grant check] [guard: kv's checks before a kv change is"
          " captured]", "%zu / %zu calls; %s",
          json_array_size(dry_calls), json_array_size(run_calls), detail);
    json_decref(dry);
    json_decref(run);
    json_decref(journal);
}

/* ---- 4. a run's limits -------------------------------------------------------------------- */

/* The run of an installed, approved flow (--json), its report. */
static json_t *real_run(const char *dir)
{
    struct proc_result r = cli(true, ARGS("flow", "install", dir));
    json_t *in = cli_output_json(&r);
    proc_result_free(&r);
    r = cli(false, ARGS("flow", "approve", json_str_of(in, "id"), "--version", "1", "--code-hash",
                        json_str_of(in, "code_hash")));
    proc_result_free(&r);
    r = cli(true, ARGS("run", json_str_of(in, "id")));
    json_t *run = cli_output_json(&r);
    proc_result_free(&r);
    json_decref(in);
    return run;
}

/* A dry run ends as a run of the same script ends when it passes a per-run limit:
 * failed, with the run's own error, whatever the script made of the refusals; calls
 * past the limit are counted once each. json: read the --json report (else the human
 * output, which cuts every listed value: 64 MiB of arguments stay out of the test). */
static void check_limit(const char *id, const char *body, const char *what, bool json,
                        long long want_listed, long long want_over)
{
    char dir[PATH_MAX + 32];
    sfmt(dir, sizeof dir, "%s/flow-%s", g_root, id);
    /* The most CPU a flow may have: the calls must all be made on a loaded machine and
     * under the sanitizers (the default second ran out there after the limit, so fewer
     * calls were counted over it). */
    if (!write_flow_with(dir, id, ",\"limits\":{\"cpu_ms\":60000}", body)) {
        fail(what, "flow: %s", strerror(errno));
        return;
    }
    struct proc_result r = cli(json, ARGS("flow", "dry-run", dir));
    json_t *run = real_run(dir);
    const char *want = json_str_of(run, "error");
    char name[256];
    bool failed = false, same = false, counted = false;
    if (json) {
        json_t *dry = cli_output_json(&r);
        failed = strcmp(json_str_of(dry, "outcome"), "failed") == 0 &&
                 json_is_null(json_object_get(dry, "result"));
        same = strcmp(json_str_of(dry, "error"), want) == 0;
        counted = json_array_size(json_object_get(dry, "calls")) == (size_t)want_listed &&
                  json_integer_value(json_object_get(dry, "over_limit_calls")) == want_over;
        json_decref(dry);
    } else {
        char line[512];
        const char *end = strchr(r.out, '\n');
        failed = end != NULL && end - r.out > 8 && strncmp(end - 8, ": failed", 8) == 0;
        sfmt(line, sizeof line, "error: %s", want);
        same = output_has_line(r.out, line);
        sfmt(line, sizeof line, "%lld calls: ", want_listed);
        const char *tally = strstr(r.out, line);
        sfmt(line, sizeof line, ", %lld more over the run's limit; nothing was changed\n",
             want_over);
        counted = tally != NULL && strstr(tally, line) != NULL;
    }
    sfmt(name, sizeof name, "limits: %s: the dry run fails as the run fails, with its error"
         " [guard: a dry run has a run's limits]", what);
    check(proc_exited_with(&r, 1) && strcmp(json_str_of(run, "state"), "failed") == 0 &&
              strncmp(want, "limit: the run reached its limit", 32) == 0 && failed && same,
          name, "%s; the run: %s %s; dry run: %.300s", proc_describe(&r), json_str_of(run, "state"),
          want, r.out);
    sfmt(name, sizeof name, "limits: %s: %lld calls listed, %lld over the limit counted once"
         " each", what, want_listed, want_over);
    check(counted, name, "%.200s ... %.300s", r.out,
          r.out_len > 300 ? r.out + r.out_len - 300 : r.out);
    proc_result_free(&r);
    json_decref(run);
}

static void test_run_limits(void)
{
    /* 10 000 host calls, then 11 more: the 10 001st stops it. */
    check_limit("calls",
                "let refused = 0;\n"
                "for (let i = 0; i < 10011; i++) { try { now(); } catch (e) { refused++; } }\n"
                "return refused;\n",
                "10 011 host calls", true, 10000, 11);
    /* 250 KB of arguments a call (a key kv refuses): 64 MiB of journal after 268. */
    check_limit("journal",
                "const big = 'x'.repeat(250000); let refused = 0;\n"
                "for (let i = 0; i < 300; i++) { try { await kv.get(big); } catch (e) { refused++; } }\n"
                "return refused;\n",
                "300 calls of 250 KB", false, 268, 32);
    /* Control: the same calls, few enough, complete. */
    char dir[PATH_MAX + 32];
    sfmt(dir, sizeof dir, "%s/flow-few", g_root);
    write_flow(dir, "few", "const big = 'x'.repeat(250000); let refused = 0;\n"
               "for (let i = 0; i < 4; i++) { try { await kv.get(big); } catch (e) { refused++; } }\n"
               "return refused;\n");
    struct proc_result r = cli(true, ARGS("flow", "dry-run", dir));
    json_t *dry = cli_output_json(&r);
    check(proc_exited_with(&r, 0) && strcmp(json_str_of(dry, "outcome"), "completed") == 0 &&
              json_integer_value(json_object_get(dry, "result")) == 4 &&
              json_integer_value(json_object_get(dry, "over_limit_calls")) == 0,
          "limits: control: four such calls complete", "%s %s", proc_describe(&r), r.out);
    json_decref(dry);
    proc_result_free(&r);
}

/* ---- 5. bad input ------------------------------------------------------------------------- */

static void test_bad_input(void)
{
    char fixtures[PATH_MAX + 32];
    sfmt(fixtures, sizeof fixtures, "%s/bad-fixtures.json", g_root);
    write_text_file(fixtures, "{\"fixtures\": [{\"kind\": \"ops.call\", \"reslt\": 1}]}", 0644);
    char *before = snapshot();
    long long audits = audit_rows("1");
    const struct cli_refusal cases[] = {
        {"bad input: no target is usage", ARGS("flow", "dry-run"), 2, "needs a directory"},
        {"bad input: an unknown flow", ARGS("flow", "dry-run", "nosuch", "--version", "1"), 1,
         "unknown flow 'nosuch'"},
        {"bad input: a version not installed", ARGS("flow", "dry-run", "mut", "--version", "9"), 1,
         "flow 'mut' has no version 9"},
        {"bad input: a version that is not a number is usage",
         ARGS("flow", "dry-run", "mut", "--version", "x"), 2, "--version 'x' is not a version"},
        {"bad input: a directory that does not exist",
         ARGS("flow", "dry-run", "/nonexistent/flow"), 1, "/nonexistent/flow"},
        {"bad input: --trigger that is not JSON is usage",
         ARGS("flow", "dry-run", "mut", "--version", "1", "--trigger", "{"), 2,
         "--trigger is not JSON"},
        {"bad input: fixtures with an unknown field name it by path",
         ARGS("flow", "dry-run", "mut", "--version", "1", "--fixtures", fixtures), 1,
         "fixtures: fixtures[0].reslt: unknown field"},
        {"bad input: an unknown option is usage", ARGS("flow", "dry-run", "mut", "--approve"), 2,
         "unknown option '--approve'"},
    };
    cli_expect_refusals(g_home, cases, sizeof cases / sizeof cases[0]);
    char *after = snapshot();
    check_unchanged(before, after, "bad input: nothing changed");
    free(after);
    free(before);
    check_int_eq(audit_rows("1"), audits, "bad input: no audit row either");
}

int main(void)
{
    if (!require_parent_and_module("dry run: ck-basal", "dry run: test_module") ||
        !harness_tmpdir_copy("dry-run", g_root, sizeof g_root))
        return harness_finish();
    if (ok(setup(), "dry run: data home, roots, module catalog and an installed flow")) {
        test_nothing_changes();
        test_queries_and_fixtures();
        test_net_fetch();
        test_same_refusals();
        test_bad_input();
        test_run_limits(); /* last: its runs fill the store's journal */
    }
    harness_remove_tree(g_root);
    return harness_finish();
}
