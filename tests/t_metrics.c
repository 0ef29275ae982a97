/* Prometheus metrics (docs/operations.md, "Metrics"): the text of serve/metrics_text.h
 * and its loopback HTTP endpoint, serve/metrics_http.h.
 *
 *   1. A real data home (setup, two flows installed and approved, three runs, one of
 *      them failing, all through build/<variant>/bin/ck-basal): `health --format
 *      prometheus` is parsed by a real parser (prometheus_client under /usr/bin/python3)
 *      and every value of `--json health` is in it under its documented name and
 *      labels, with nothing else; counters are typed counter, the rest gauge; the
 *      text is metrics_text over the same JSON; `--format json` and the default output
 *      are unchanged; a bad --format is a usage error (exit 2, one line).
 *   2. Crafted health objects: label values escaped per the format and read back
 *      intact by the parser; unknown fields and fields of the wrong type skipped;
 *      serve's fields (pool idle, queue depth, last run) mapped; the same object in
 *      another key order gives the same bytes.
 *   3. metrics_http on 127.0.0.1:0 and [::1]:0, fetched with curl: GET /metrics is 200
 *      with the format's content type and exactly metrics_text's bytes; another path
 *      404, another method 405, a failed render 500; a client that sent half a request
 *      and stalls does not hold up a scrape; a port in use is refused with one line.
 *   4. Every address that is not loopback (0.0.0.0, 192.0.2.1, ::, an IPv4-mapped
 *      address) is refused with a one-line reason naming loopback, and every malformed
 *      one is refused [guard: metrics loopback only]. */
#include "lib/cli_home.h"
#include "lib/harness.h"

#include "serve/metrics_http.h"
#include "serve/metrics_text.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define TIMEOUT_MS 60000
#define PYTHON "/usr/bin/python3"
#define CURL "/usr/bin/curl"
#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"


static char g_dir[PATH_MAX];
static char g_home[PATH_MAX];

/* ---- the CLI ------------------------------------------------------------------- */

/* ck-basal [--json] --home HOME args..., in the test's environment. */
static struct proc_result cli(bool json, const char *const *args)
{
    struct cli_opts opts = {.json = json, .envp = NULL};
    return cli_run(g_home, &opts, args);
}

static bool flow_add(const char *id, const char *script)
{
    char dir[PATH_MAX + 32], manifest[1024];
    sfmt(dir, sizeof dir, "%s/flow-%s", g_dir, id);
    sfmt(manifest, sizeof manifest,
         "{\"format\":1,\"id\":\"%s\",\"version\":1,\"purpose\":\"metrics test\","
         "\"trigger\":{\"manual\":true}}", id);
    return mkdir(dir, 0755) == 0 && flow_dir_write(dir, manifest, script) &&
           cli_install_approve(g_home, NULL, dir, id, 1, NULL, 0) == FLOW_ADDED;
}

/* ---- the parser ---------------------------------------------------------------- */

/* Reads the exposition on stdin with prometheus_client's parser and prints every
 * sample as JSON: family name, type, help, sample name, labels, value. Any text the
 * parser refuses makes it exit non-zero. */
static const char PARSER[] =
    "import json, sys\n"
    "from prometheus_client.parser import text_string_to_metric_families\n"
    "out = []\n"
    "for fam in text_string_to_metric_families(sys.stdin.read()):\n"
    "    for s in fam.samples:\n"
    "        out.append({'family': fam.name, 'type': fam.type, 'help': fam.documentation,\n"
    "                    'name': s.name, 'labels': s.labels, 'value': s.value})\n"
    "print(json.dumps(out))\n";

/* The samples (a JSON array), or NULL with the parser's complaint in why. */
static json_t *parse_exposition(const char *text, char *why, size_t why_cap)
{
    struct proc_result r =
        proc_run(ARGS(PYTHON, "-I", "-c", PARSER), text, strlen(text), TIMEOUT_MS);
    json_t *samples = NULL;
    if (proc_exited_with(&r, 0))
        samples = cli_output_json(&r);
    if (!json_is_array(samples)) {
        sfmt(why, why_cap, "%s", proc_describe(&r));
        json_decref(samples);
        samples = NULL;
    }
    proc_result_free(&r);
    return samples;
}

/* ---- what the exposition must hold: the documented mapping, kept apart from the
 * code under test ----------------------------------------------------------------- */

static void expect(json_t *list, const char *name, json_t *labels, double value)
{
    json_array_append_new(list, json_pack("{s:s, s:o, s:f}", "name", name, "labels",
                                          labels != NULL ? labels : json_object(), "value",
                                          value));
}

static void expect_each(json_t *list, const char *name, json_t *obj, const char *flow,
                        const char *label)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        if (!json_is_integer(v))
            continue;
        json_t *labels = flow != NULL ? json_pack("{s:s, s:s}", "flow", flow, label, key)
                                      : json_pack("{s:s}", label, key);
        expect(list, name, labels, (double)json_integer_value(v));
    }
}

static json_t *expected_samples(json_t *h)
{
    static const char *const COUNTERS[] = {"spawned", "retired", "killed", "crashed",
                                           "respawned", "refused_welcomes", "spawn_failures"};
    static const char *const POOL[][2] = {{"live", "basal_pool_live_workers"},
                                          {"spares", "basal_pool_spare_workers"},
                                          {"busy", "basal_pool_busy_workers"},
                                          {"bound", "basal_pool_bound_workers"},
                                          {"idle", "basal_pool_idle_workers"}};
    json_t *list = json_array();
    char name[128];
    for (size_t i = 0; i < sizeof COUNTERS / sizeof COUNTERS[0]; i++) {
        json_t *v = json_object_get(json_object_get(h, "counters"), COUNTERS[i]);
        sfmt(name, sizeof name, "basal_worker_%s_total", COUNTERS[i]);
        if (json_is_integer(v))
            expect(list, name, NULL, (double)json_integer_value(v));
    }
    const json_t *conf = json_object_get(h, "worker_confinement");
    if (json_is_integer(json_object_get(conf, "sigsys_deaths")))
        expect(list, "basal_worker_sigsys_deaths_total", NULL,
               (double)json_integer_value(json_object_get(conf, "sigsys_deaths")));
    if (json_is_string(json_object_get(conf, "os")) &&
        json_is_string(json_object_get(conf, "landlock")))
        expect(list, "basal_worker_confinement_info",
               json_pack("{s:O, s:O}", "os", json_object_get(conf, "os"), "landlock",
                         json_object_get(conf, "landlock")),
               1);
    json_t *dropped = json_object_get(json_object_get(h, "counters"), "flow_counts_dropped");
    if (json_is_integer(dropped))
        expect(list, "basal_flow_counts_dropped_total", NULL, (double)json_integer_value(dropped));
    expect_each(list, "basal_activations_total", json_object_get(h, "runs"), NULL, "outcome");
    expect_each(list, "basal_budget_exhaustions_total", json_object_get(h, "budget_exhaustions"),
                NULL, "budget");
    expect_each(list, "basal_runs", json_object_get(h, "run_states"), NULL, "state");
    for (size_t i = 0; i < sizeof POOL / sizeof POOL[0]; i++) {
        json_t *v = json_object_get(json_object_get(h, "pool"), POOL[i][0]);
        if (json_is_integer(v))
            expect(list, POOL[i][1], NULL, (double)json_integer_value(v));
    }
    const char *id;
    json_t *f;
    json_object_foreach(json_object_get(h, "flows"), id, f) {
        expect_each(list, "basal_flow_activations_total", json_object_get(f, "runs"), id,
                    "outcome");
        expect_each(list, "basal_flow_runs", json_object_get(f, "run_states"), id, "state");
        expect_each(list, "basal_flow_budget_exhaustions_total",
                    json_object_get(f, "budget_exhaustions"), id, "budget");
        static const char *const WORKERS[] = {"spawned", "retired", "killed", "crashed",
                                              "sigsys_deaths"};
        for (size_t i = 0; i < sizeof WORKERS / sizeof WORKERS[0]; i++) {
            json_t *v = json_object_get(json_object_get(f, "workers"), WORKERS[i]);
            sfmt(name, sizeof name, "basal_flow_worker_%s_total", WORKERS[i]);
            if (json_is_integer(v))
                expect(list, name, json_pack("{s:s}", "flow", id), (double)json_integer_value(v));
        }
        json_t *q = json_object_get(f, "queue_depth");
        if (json_is_integer(q))
            expect(list, "basal_flow_queue_depth", json_pack("{s:s}", "flow", id),
                   (double)json_integer_value(q));
        json_t *last = json_object_get(f, "last_run");
        json_t *run = json_object_get(last, "run");
        json_t *state = json_object_get(last, "state");
        json_t *ended = json_object_get(last, "ended_at_ms");
        if (json_is_integer(run))
            expect(list, "basal_flow_last_run_id", json_pack("{s:s}", "flow", id),
                   (double)json_integer_value(run));
        if (json_is_string(state))
            expect(list, "basal_flow_last_run_info",
                   json_pack("{s:s, s:O}", "flow", id, "state", state), 1);
        if (json_is_integer(ended))
            expect(list, "basal_flow_last_run_end_timestamp_seconds",
                   json_pack("{s:s}", "flow", id), (double)json_integer_value(ended) / 1000.0);
    }
    return list;
}

static bool same_value(double got, double want)
{
    return fabs(got - want) <= 1e-6 * fmax(1.0, fabs(want));
}

/* Every expected sample is parsed exactly once with its value, and nothing else is
 * there. False with the first difference in why. */
static bool samples_match(json_t *parsed, json_t *expected, char *why,
                          size_t why_cap)
{
    size_t i;
    json_t *e;
    json_array_foreach(expected, i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        int found = 0;
        double got = 0;
        size_t j;
        json_t *s;
        json_array_foreach(parsed, j, s) {
            if (strcmp(json_string_value(json_object_get(s, "name")), name) == 0 &&
                json_equal(json_object_get(s, "labels"), json_object_get(e, "labels"))) {
                found++;
                got = json_number_value(json_object_get(s, "value"));
            }
        }
        double want = json_number_value(json_object_get(e, "value"));
        if (found != 1 || !same_value(got, want)) {
            char *labels = json_dumps(json_object_get(e, "labels"), JSON_COMPACT);
            sfmt(why, why_cap, "%s%s: found %d time(s), value %g, expected once with %g", name,
                 labels != NULL ? labels : "", found, got, want);
            free(labels);
            return false;
        }
    }
    if (json_array_size(parsed) != json_array_size(expected)) {
        sfmt(why, why_cap, "%zu samples parsed, %zu expected (a sample with no health field)",
             json_array_size(parsed), json_array_size(expected));
        return false;
    }
    return true;
}

/* Counters (every *_total sample) in families of type counter, every other sample in
 * a gauge family, each with a help text. */
static bool types_right(json_t *parsed, char *why, size_t why_cap)
{
    size_t i;
    json_t *s;
    json_array_foreach(parsed, i, s) {
        const char *name = json_string_value(json_object_get(s, "name"));
        const char *type = json_string_value(json_object_get(s, "type"));
        const char *help = json_string_value(json_object_get(s, "help"));
        size_t len = strlen(name);
        bool counter = len > 6 && strcmp(name + len - 6, "_total") == 0;
        if (strcmp(type, counter ? "counter" : "gauge") != 0 || help == NULL ||
            help[0] == '\0' || strncmp(name, "basal_", 6) != 0) {
            sfmt(why, why_cap, "%s: type %s, help '%s'", name, type, help != NULL ? help : "");
            return false;
        }
    }
    return true;
}

/* ---- 1. a real data home ------------------------------------------------------------ */

static json_t *g_health; /* `--json health` of the real home */

static void test_real_home(void)
{
    struct proc_result r = cli(false, ARGS("setup"));
    bool ready = ok(proc_exited_with(&r, 0), "real home: setup");
    proc_result_free(&r);
    ready = ready && ok(flow_add("good-flow", "return 1;\n"), "real home: flow good-flow "
                                                              "installed and approved");
    ready = ready && ok(flow_add("bad_flow", "throw new Error('boom');\n"),
                        "real home: flow bad_flow installed and approved");
    if (!ready)
        return;
    r = cli(false, ARGS("run", "good-flow"));
    bool ran = proc_exited_with(&r, 0);
    proc_result_free(&r);
    r = cli(false, ARGS("run", "good-flow"));
    ran = ran && proc_exited_with(&r, 0);
    proc_result_free(&r);
    r = cli(false, ARGS("run", "bad_flow"));
    ran = ran && r.exited && r.exit_code == 1;
    proc_result_free(&r);
    ok(ran, "real home: two runs of good-flow succeeded, the run of bad_flow failed");

    r = cli(true, ARGS("health"));
    g_health = proc_exited_with(&r, 0) ? cli_output_json(&r) : NULL;
    proc_result_free(&r);
    if (!check(json_is_object(g_health), "real home: --json health is a JSON object", "%s",
               "not JSON"))
        return;

    r = cli(false, ARGS("health", "--format", "prometheus"));
    if (!check(proc_exited_with(&r, 0) && r.err_len == 0,
               "health --format prometheus: exit 0, nothing on stderr", "%s",
               proc_describe(&r))) {
        proc_result_free(&r);
        return;
    }
    char why[512] = "";
    json_t *parsed = parse_exposition(r.out, why, sizeof why);
    check(parsed != NULL, "health --format prometheus: prometheus_client's parser reads it",
          "%s", why);
    json_t *expected = expected_samples(g_health);
    check(json_array_size(expected) > 30, "real home: the health has the fields mapped",
          "%zu expected samples", json_array_size(expected));
    if (parsed != NULL) {
        check(samples_match(parsed, expected, why, sizeof why),
              "health --format prometheus: every value of --json health under its documented "
              "name and labels, and nothing else", "%s", why);
        check(types_right(parsed, why, sizeof why),
              "health --format prometheus: _total families typed counter, the rest gauge, "
              "each with help and the basal_ prefix", "%s", why);
    }
    /* The figures are the runs just made, not merely the same as --json. */
    json_t *flows = json_object_get(g_health, "flows");
    check(json_integer_value(json_object_get(json_object_get(json_object_get(flows, "good-flow"),
                                                             "runs"), "completed")) == 2 &&
              json_integer_value(json_object_get(
                  json_object_get(json_object_get(flows, "bad_flow"), "run_states"),
                  "failed")) == 1,
          "real home: the health counts the runs made (good-flow 2 completed, bad_flow 1 failed)",
          "%s", "other figures");

    char err[256] = "";
    char *text = metrics_text(g_health, err, sizeof err);
    check(text != NULL && strcmp(text, r.out) == 0,
          "health --format prometheus: the same bytes as metrics_text over --json health",
          "%s", text == NULL ? err : "texts differ");
    free(text);
    json_decref(expected);
    json_decref(parsed);
    proc_result_free(&r);

    r = cli(true, ARGS("health", "--format", "json"));
    json_t *as_json = proc_exited_with(&r, 0) ? cli_output_json(&r) : NULL;
    check(json_equal(as_json, g_health), "health --format json: the same as without --format",
          "%s", proc_describe(&r));
    json_decref(as_json);
    proc_result_free(&r);
    r = cli(false, ARGS("health"));
    json_t *indented = proc_exited_with(&r, 0) ? cli_output_json(&r) : NULL;
    check(json_equal(indented, g_health) && strchr(r.out, '\n') != strrchr(r.out, '\n'),
          "health (no option): indented JSON, as before", "%s", proc_describe(&r));
    json_decref(indented);
    proc_result_free(&r);

    static const char *const BAD[][3] = {{"--format", "xml", NULL},
                                         {"--format=openmetrics", NULL, NULL},
                                         {"--format", NULL, NULL},
                                         {"--format=", NULL, NULL}};
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        r = cli(false, ARGS("health", BAD[i][0], BAD[i][1]));
        char name[160];
        sfmt(name, sizeof name, "health %s%s%s: usage error, exit 2 with one line, no output",
             BAD[i][0], BAD[i][1] != NULL ? " " : "", BAD[i][1] != NULL ? BAD[i][1] : "");
        check(proc_exited_with(&r, 2) && r.out_len == 0 && r.err_len > 0 &&
                  strchr(r.err, '\n') == r.err + r.err_len - 1 &&
                  strncmp(r.err, "ck-basal health: ", 17) == 0,
              name, "%s", proc_describe(&r));
        proc_result_free(&r);
    }
}

/* ---- 2. crafted health objects ---------------------------------------------------- */

static void test_label_escaping(void)
{
    const char *flow = "we\"ird\\id\nline2";
    const char *state = "st\"ate\\";
    json_t *h = json_pack("{s:{s:{s:{s:i}, s:{s:I, s:s, s:I}}}}", "flows", flow, "run_states",
                          state, 4, "last_run", "run", (json_int_t)9, "state", state,
                          "ended_at_ms", (json_int_t)1700000000123LL);
    char err[256] = "";
    char *text = metrics_text(h, err, sizeof err);
    if (text == NULL) {
        fail("label escaping: metrics_text renders the crafted object", "%s", err);
        json_decref(h);
        return;
    }
    check(strstr(text, "basal_flow_runs{flow=\"we\\\"ird\\\\id\\nline2\",state=\"st\\\"ate\\\\\"} 4\n")
              != NULL,
          "label escaping: backslash, double quote and line feed escaped in label values",
          "%s", text);
    char why[512] = "";
    json_t *parsed = parse_exposition(text, why, sizeof why);
    json_t *expected = expected_samples(h);
    check(parsed != NULL && samples_match(parsed, expected, why, sizeof why),
          "label escaping: the parser reads the flow id and state back byte for byte", "%s",
          why);
    check(strstr(text, "basal_flow_last_run_end_timestamp_seconds{flow=\"we\\\"ird\\\\id\\nline2\"} "
                       "1700000000.123\n") != NULL,
          "last run: the end time in exact decimal seconds", "%s", text);
    json_decref(parsed);
    json_decref(expected);
    free(text);
    json_decref(h);
}

static void test_unknown_fields_skipped(void)
{
    json_t *h = json_loads(
        "{\"counters\": {\"spawned\": 5, \"mystery\": 7, \"killed\": \"two\", \"retired\": 1.5},"
        " \"pool\": {\"live\": \"3\", \"idle\": 2, \"busy\": null},"
        " \"mystery_top\": {\"a\": 1}, \"runs\": [1, 2],"
        " \"worker_confinement\": {\"os\": \"linux\"},"
        " \"flows\": {\"f\": {\"surprise\": 1, \"queue_depth\": 3, \"last_run\": null,"
        "                    \"runs\": {\"completed\": 1, \"odd\": \"x\"}},"
        "            \"g\": 12}}",
        0, NULL);
    char err[256] = "";
    char *text = metrics_text(h, err, sizeof err);
    const char *want =
        "# HELP basal_worker_spawned_total Worker processes started.\n"
        "# TYPE basal_worker_spawned_total counter\n"
        "basal_worker_spawned_total 5\n";
    check(text != NULL && strncmp(text, want, strlen(want)) == 0,
          "unknown fields: the first family is the known counter, whole", "%s",
          text != NULL ? text : err);
    char why[512] = "";
    json_t *parsed = text != NULL ? parse_exposition(text, why, sizeof why) : NULL;
    json_t *expected = json_array();
    expect(expected, "basal_worker_spawned_total", NULL, 5);
    expect(expected, "basal_pool_idle_workers", NULL, 2);
    expect(expected, "basal_flow_activations_total",
           json_pack("{s:s, s:s}", "flow", "f", "outcome", "completed"), 1);
    expect(expected, "basal_flow_queue_depth", json_pack("{s:s}", "flow", "f"), 3);
    check(parsed != NULL && samples_match(parsed, expected, why, sizeof why),
          "unknown fields and fields of the wrong type are skipped; serve's pool idle and "
          "queue depth are mapped", "%s", why);
    json_decref(parsed);
    json_decref(expected);
    free(text);
    json_decref(h);

    json_t *not_object = json_array();
    text = metrics_text(not_object, err, sizeof err);
    check(text == NULL && err[0] != '\0', "a health that is not an object is refused", "%s",
          text != NULL ? text : "no reason");
    free(text);
    json_decref(not_object);
}

static void test_serve_fields_and_order(void)
{
    const char *one =
        "{\"pool\": {\"live\": 4, \"spares\": 2, \"busy\": 1, \"bound\": 2, \"idle\": 3},"
        " \"flows\": {\"zeta\": {\"queue_depth\": 0, \"last_run\": {\"run\": 12, \"state\": "
        "\"failed\", \"ended_at_ms\": 5}}, \"alpha\": {\"queue_depth\": 7, \"last_run\": "
        "{\"run\": 3, \"state\": \"running\", \"ended_at_ms\": null}, \"run_states\": "
        "{\"running\": 1, \"pending\": 7}}},"
        " \"runs\": {\"failed\": 1, \"completed\": 2}}";
    /* The same content, every object's keys in another order. */
    const char *two =
        "{\"runs\": {\"completed\": 2, \"failed\": 1},"
        " \"flows\": {\"alpha\": {\"run_states\": {\"pending\": 7, \"running\": 1}, "
        "\"last_run\": {\"ended_at_ms\": null, \"state\": \"running\", \"run\": 3}, "
        "\"queue_depth\": 7}, \"zeta\": {\"last_run\": {\"ended_at_ms\": 5, \"state\": "
        "\"failed\", \"run\": 12}, \"queue_depth\": 0}},"
        " \"pool\": {\"idle\": 3, \"bound\": 2, \"busy\": 1, \"spares\": 2, \"live\": 4}}";
    json_t *a = json_loads(one, 0, NULL), *b = json_loads(two, 0, NULL);
    char err[256] = "";
    char *ta = metrics_text(a, err, sizeof err), *tb = metrics_text(b, err, sizeof err);
    check(ta != NULL && tb != NULL && strcmp(ta, tb) == 0,
          "deterministic: the same health in another key order gives the same bytes", "%s",
          err);
    char why[512] = "";
    json_t *parsed = ta != NULL ? parse_exposition(ta, why, sizeof why) : NULL;
    json_t *expected = expected_samples(a);
    check(parsed != NULL && samples_match(parsed, expected, why, sizeof why),
          "serve's fields: pool idle, queue depth, last run id, state and end (none for a "
          "run not ended)", "%s", why);
    check(ta != NULL && strstr(ta, "{flow=\"alpha\"} 7\n") != NULL &&
              strstr(ta, "{flow=\"alpha\"} 7\n") < strstr(ta, "{flow=\"zeta\"} 0\n") &&
              strstr(ta, "\"zeta\"} 0.005\n") != NULL,
          "deterministic: flows in order of their ids; 5 ms is 0.005 s", "%s",
          ta != NULL ? ta : "");
    json_decref(parsed);
    json_decref(expected);
    free(ta);
    free(tb);
    json_decref(a);
    json_decref(b);
}

/* ---- 3. the HTTP endpoint ----------------------------------------------------------- */

struct render_ctx {
    const json_t *health;
    atomic_bool fail; /* read on the server's thread */
};

static char *render(void *ctx)
{
    const struct render_ctx *rc = ctx;
    if (atomic_load(&rc->fail))
        return NULL;
    char err[256];
    return metrics_text(rc->health, err, sizeof err);
}

/* curl: body on stdout, "CODE CONTENT-TYPE" as the last line of stderr. */
struct fetch {
    struct proc_result r;
    int code;
    char content_type[128];
};

static struct fetch fetch(const char *method, const char *url)
{
    struct fetch f;
    memset(&f, 0, sizeof f);
    f.r = proc_run(ARGS(CURL, "-sS", "-g", "--noproxy", "*", "--max-time", "30", "-X", method,
                        "-o", "-", "-w", "%{stderr}\n%{http_code} %{content_type}", url),
                   NULL, 0, TIMEOUT_MS);
    const char *last = strrchr(f.r.err, '\n');
    if (proc_exited_with(&f.r, 0) && last != NULL) {
        f.code = (int)strtol(last + 1, NULL, 10);
        const char *space = strchr(last + 1, ' ');
        sfmt(f.content_type, sizeof f.content_type, "%s", space != NULL ? space + 1 : "");
    }
    return f;
}

static void test_http(void)
{
    struct render_ctx ctx = {g_health, false};
    char err[256] = "";
    struct metrics_http *server = metrics_http_start("127.0.0.1:0", render, &ctx, err, sizeof err);
    if (!check(server != NULL && metrics_http_port(server) > 0,
               "http: starts on 127.0.0.1:0 and reports the port it bound", "%s", err)) {
        metrics_http_stop(server);
        return;
    }
    unsigned port = metrics_http_port(server);
    char url[128];
    char *want = metrics_text(g_health, err, sizeof err);

    sfmt(url, sizeof url, "http://127.0.0.1:%u/metrics", port);
    struct fetch f = fetch("GET", url);
    check(f.code == 200 && strcmp(f.content_type, CONTENT_TYPE) == 0,
          "http: GET /metrics answers 200 text/plain; version=0.0.4", "%d '%s' %s", f.code,
          f.content_type, proc_describe(&f.r));
    check(want != NULL && strcmp(f.r.out, want) == 0,
          "http: the body is metrics_text's bytes for the real home", "%zu bytes", f.r.out_len);
    char why[512] = "";
    json_t *parsed = parse_exposition(f.r.out, why, sizeof why);
    check(parsed != NULL && json_array_size(parsed) > 30,
          "http: prometheus_client's parser reads the scraped page", "%s", why);
    json_decref(parsed);
    proc_result_free(&f.r);

    sfmt(url, sizeof url, "http://127.0.0.1:%u/", port);
    f = fetch("GET", url);
    check(f.code == 404, "http: GET / answers 404", "%d %s", f.code, proc_describe(&f.r));
    proc_result_free(&f.r);
    sfmt(url, sizeof url, "http://127.0.0.1:%u/metrics/x", port);
    f = fetch("GET", url);
    check(f.code == 404, "http: GET /metrics/x answers 404", "%d %s", f.code, proc_describe(&f.r));
    proc_result_free(&f.r);
    sfmt(url, sizeof url, "http://127.0.0.1:%u/metrics", port);
    static const char *const METHODS[] = {"POST", "PUT", "DELETE"};
    for (size_t i = 0; i < sizeof METHODS / sizeof METHODS[0]; i++) {
        f = fetch(METHODS[i], url);
        char name[96];
        sfmt(name, sizeof name, "http: %s /metrics answers 405", METHODS[i]);
        check(f.code == 405 && f.r.out_len > 0, name, "%d %s", f.code, proc_describe(&f.r));
        proc_result_free(&f.r);
    }

    /* A client that sends half a request and stalls: a scrape is still answered. */
    int stalled = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool connected = stalled >= 0 && connect(stalled, (struct sockaddr *)&sa, sizeof sa) == 0 &&
                     fd_write_all(stalled, "GET /metr", 9, 5000) == 0;
    f = fetch("GET", url);
    check(connected && f.code == 200,
          "http: a client stalled mid-request does not hold up a scrape", "%d %s", f.code,
          proc_describe(&f.r));
    proc_result_free(&f.r);
    if (stalled >= 0)
        close(stalled);

    atomic_store(&ctx.fail, true);
    f = fetch("GET", url);
    check(f.code == 500, "http: a render that fails answers 500", "%d %s", f.code,
          proc_describe(&f.r));
    proc_result_free(&f.r);
    atomic_store(&ctx.fail, false);

    char listen[64];
    sfmt(listen, sizeof listen, "127.0.0.1:%u", port);
    err[0] = '\0';
    struct metrics_http *second = metrics_http_start(listen, render, &ctx, err, sizeof err);
    check(second == NULL && err[0] != '\0' && strchr(err, '\n') == NULL,
          "http: a port in use is refused with one line", "%s", err);
    metrics_http_stop(second);
    metrics_http_stop(server);

    err[0] = '\0';
    server = metrics_http_start("[::1]:0", render, &ctx, err, sizeof err);
    if (check(server != NULL, "http: starts on [::1]:0", "%s", err)) {
        sfmt(url, sizeof url, "http://[::1]:%u/metrics", metrics_http_port(server));
        f = fetch("GET", url);
        check(f.code == 200 && want != NULL && strcmp(f.r.out, want) == 0,
              "http: GET /metrics over [::1] answers 200 with the page", "%d %s", f.code,
              proc_describe(&f.r));
        proc_result_free(&f.r);
        metrics_http_stop(server);
    }
    free(want);
}

/* ---- 4. loopback only ------------------------------------------------------------- */

static void test_listen_refused(void)
{
    static const char *const NOT_LOOPBACK[] = {
        "0.0.0.0:0",        "192.0.2.1:9",          "[::]:0",        "10.0.0.1:9100",
        "[::ffff:127.0.0.1]:0", "128.0.0.1:0",      "126.255.255.255:0", "[fe80::1]:0",
        "[::2]:0",
    };
    static const char *const MALFORMED[] = {
        "",           "::",            "127.0.0.1",      "127.0.0.1:",  "127.0.0.1:65536",
        "127.0.0.1:-1", "127.0.0.1:+80", "127.0.0.1:80x", "127.1:0",     "0x7f.0.0.1:0",
        "localhost:9100", "[::1]",     "[::1]9100",      "[::1:0",      "::1:0",
        " 127.0.0.1:0", "127.0.0.1:0 ", "127.0.0.1:123456", "[::1%lo]:0", "127.0.0.1:0:1",
    };
    struct render_ctx ctx = {g_health, false};
    for (size_t i = 0; i < sizeof NOT_LOOPBACK / sizeof NOT_LOOPBACK[0]; i++) {
        char err[256] = "", name[160];
        struct metrics_http *s = metrics_http_start(NOT_LOOPBACK[i], render, &ctx, err, sizeof err);
        sfmt(name, sizeof name, "listen '%s' refused as not loopback [guard: metrics loopback only]",
             NOT_LOOPBACK[i]);
        check(s == NULL && strstr(err, "not loopback") != NULL && strchr(err, '\n') == NULL,
              name, "%s", s != NULL ? "it started" : err);
        metrics_http_stop(s);
    }
    for (size_t i = 0; i < sizeof MALFORMED / sizeof MALFORMED[0]; i++) {
        char err[256] = "", name[160];
        struct metrics_http *s = metrics_http_start(MALFORMED[i], render, &ctx, err, sizeof err);
        sfmt(name, sizeof name, "listen '%s' refused as malformed [guard: metrics loopback only]",
             MALFORMED[i]);
        check(s == NULL && err[0] != '\0' && strstr(err, "not loopback") == NULL &&
                  strchr(err, '\n') == NULL,
              name, "%s", s != NULL ? "it started" : err);
        metrics_http_stop(s);
    }
    /* Within 127.0.0.0/8, any address is loopback. */
    char err[256] = "";
    struct metrics_http *s = metrics_http_start("127.0.0.2:0", render, &ctx, err, sizeof err);
    check(s != NULL, "listen 127.0.0.2:0 accepted (127.0.0.0/8 is loopback)", "%s", err);
    metrics_http_stop(s);
}

int main(void)
{
    if (!require_binary(harness_test_parent(), "ck-basal") || !require_binary(PYTHON, "python3") ||
        !require_binary(CURL, "curl"))
        return harness_finish();
    if (!harness_tmpdir_copy("metrics", g_dir, sizeof g_dir))
        return harness_finish();
    sfmt(g_home, sizeof g_home, "%s/home", g_dir);
    test_real_home();
    test_label_escaping();
    test_unknown_fields_skipped();
    test_serve_fields_and_order();
    if (g_health != NULL) {
        test_http();
        test_listen_refused();
    } else {
        fail("http", "%s", "no real health to serve (the data home steps failed)");
    }
    json_decref(g_health);
    harness_remove_tree(g_dir);
    return harness_finish();
}
