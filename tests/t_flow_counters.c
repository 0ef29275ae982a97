/* Per-flow health counters (docs/operations.md, "Health" and "Metrics"), through the
 * real binaries: a serve of the test build runs four flows, then `health` and /metrics
 * are read.
 *
 *   1. A flow whose script exhausts its CPU budget and one that exhausts its memory
 *      budget each show that kind under their own flow only, and the totals by kind
 *      are their sum [guard: budget counted under its flow: health_count_budget and
 *      the store's flow.<id>.budget_exhausted.<kind> rows].
 *   2. A flow whose script makes a forbidden system call (the worker's test hook,
 *      killed by SIGSYS) counts one SIGSYS death under its flow and none under the
 *      others [guard: SIGSYS death counted under its flow: health_record_death's
 *      flow, the pool's counted_flow].
 *   3. Each flow's workers: one spawned for each flow; the budget flows' workers are
 *      retired (killed by policy), the crashed and the calm ones are not [guard: the
 *      pool counts spawned and retired under the worker's flow].
 *   4. The counters survive a restart of serve: the second serve reports the same,
 *      and a run in it adds to what the first stored [guard: per-flow worker counts
 *      persisted at the run's end, health_store_add_flows].
 *   5. /metrics (serve --metrics) carries the counters with flow labels, and a flow id
 *      holding a backslash, a double quote and a line feed (a store row written by
 *      hand, as a store edited outside basal could hold) is escaped per the exposition
 *      format [guard: Prometheus label escaping, write_label_value]; `health` without
 *      --json writes such ids with their terminal controls escaped, a direction
 *      control (U+202E, which jansson writes raw) as \u202e [guard: json_out].
 *   6. The pool's flow table is bounded: with its limit at 1024 flows, a 1025th flow's
 *      counts go to the totals and flow_counts_dropped (its activation and its budget:
 *      two), not to a new entry [guard: HEALTH_POOL_FLOW_LIMIT in health_flow_entry];
 *      counts a failed write gives back add to those counted since. */
#include "lib/cli_home.h"
#include "lib/harness.h"
#include "lib/serve_home.h"
#include "lib/store_view.h"

#include "supervisor/health.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMEOUT_MS 120000

static char g_root[PATH_MAX];

/* Installs and approves flow id (version 1, manual trigger) with limits_json. */
static bool flow_with_limits(const struct test_home *h, const char *id, const char *limits_json,
                             const char *script)
{
    char dir[PATH_MAX + 48], manifest[1024], why[1024] = "";
    sfmt(dir, sizeof dir, "%s/flow-%s", h->dir, id);
    sfmt(manifest, sizeof manifest,
         "{\"format\":1,\"id\":\"%s\",\"version\":1,\"purpose\":\"counters test\","
         "\"trigger\":{\"manual\":true},\"limits\":%s}",
         id, limits_json);
    bool added = flow_dir_write(dir, manifest, script) &&
                 cli_install_approve(h->home, NULL, dir, id, 1, why, sizeof why) == FLOW_ADDED;
    return check(added, "counters: flow installed and approved", "%s: %s", id, why);
}

/* `run ID` through the serve; its exit code. */
static int run_flow(const struct test_home *h, const char *id)
{
    struct proc_result r = test_home_cli(h, false, ARGS("run", id));
    int code = r.exited ? r.exit_code : -1;
    proc_result_free(&r);
    return code;
}

/* `--json health` (through the serve when one runs), or NULL. */
static json_t *health(const struct test_home *h)
{
    struct proc_result r = test_home_cli(h, true, ARGS("health"));
    json_t *j = proc_exited_with(&r, 0) ? cli_output_json(&r) : NULL;
    proc_result_free(&r);
    return j;
}

/* flows.<flow>.<group>.<field> (flow NULL: <group>.<field> of the root), or -1. */
static long long number(const json_t *h, const char *flow, const char *group, const char *field)
{
    const json_t *base = flow != NULL ? json_object_get(json_object_get(h, "flows"), flow) : h;
    const json_t *v = json_object_get(json_object_get(base, group), field);
    return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

static const char *const FLOWS[] = {"cpu-hog", "heap-hog", "sys-bad", "calm"};
#define FLOW_COUNT (sizeof FLOWS / sizeof FLOWS[0])

static void check_budgets(const json_t *h)
{
    /* Per flow: {cpu, memory, stack} expected. */
    static const long long WANT[FLOW_COUNT][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 0}, {0, 0, 0}};
    static const char *const KINDS[] = {"cpu", "memory", "stack"};
    char got[512] = "";
    size_t used = 0;
    bool right = true;
    for (size_t f = 0; f < FLOW_COUNT; f++)
        for (size_t k = 0; k < 3; k++) {
            long long n = number(h, FLOWS[f], "budget_exhaustions", KINDS[k]);
            right = right && n == WANT[f][k];
            used += (size_t)snprintf(got + used, used < sizeof got ? sizeof got - used : 0,
                                     "%s.%s=%lld ", FLOWS[f], KINDS[k], n);
        }
    check(right,
          "counters: each budget exhaustion shows its kind under its own flow only (cpu "
          "under cpu-hog, memory under heap-hog) [guard: budget counted under its flow]",
          "%s", got);
    check(number(h, NULL, "budget_exhaustions", "cpu") == 1 &&
              number(h, NULL, "budget_exhaustions", "memory") == 1 &&
              number(h, NULL, "budget_exhaustions", "stack") == 0,
          "counters: the totals by kind are the flows' sum (cpu 1, memory 1, stack 0)",
          "cpu %lld memory %lld stack %lld", number(h, NULL, "budget_exhaustions", "cpu"),
          number(h, NULL, "budget_exhaustions", "memory"),
          number(h, NULL, "budget_exhaustions", "stack"));
}

/* calm_spawned: 2 after the second serve's run, one worker each serve: the stored
 * count and the new one added [guard: per-flow counters persisted]. */
static void check_workers(const json_t *h, long long calm_spawned)
{
    long long sigsys[FLOW_COUNT], spawned[FLOW_COUNT], retired[FLOW_COUNT];
    long long killed[FLOW_COUNT], crashed[FLOW_COUNT];
    for (size_t f = 0; f < FLOW_COUNT; f++) {
        sigsys[f] = number(h, FLOWS[f], "workers", "sigsys_deaths");
        spawned[f] = number(h, FLOWS[f], "workers", "spawned");
        retired[f] = number(h, FLOWS[f], "workers", "retired");
        killed[f] = number(h, FLOWS[f], "workers", "killed");
        crashed[f] = number(h, FLOWS[f], "workers", "crashed");
    }
    check(sigsys[0] == 0 && sigsys[1] == 0 && sigsys[2] == 1 && sigsys[3] == 0 &&
              number(h, NULL, "worker_confinement", "sigsys_deaths") == 1,
          "counters: the SIGSYS death counts under sys-bad only, and once overall "
          "[guard: SIGSYS death counted under its flow]",
          "cpu-hog %lld heap-hog %lld sys-bad %lld calm %lld, overall %lld", sigsys[0],
          sigsys[1], sigsys[2], sigsys[3],
          number(h, NULL, "worker_confinement", "sigsys_deaths"));
    check(spawned[0] == 1 && spawned[1] == 1 && spawned[2] == 1 && spawned[3] == calm_spawned,
          "counters: each flow counts the workers that began serving it "
          "[guard: spawned counted under the worker's flow]",
          "spawned: cpu-hog %lld heap-hog %lld sys-bad %lld calm %lld (calm: want %lld)",
          spawned[0], spawned[1], spawned[2], spawned[3], calm_spawned);
    check(retired[0] == 1 && retired[1] == 1 && retired[2] == 0 && retired[3] == 0,
          "counters: the budget flows' workers are retired, the crashed and the calm "
          "flows' are not [guard: retired counted under the worker's flow]",
          "retired: cpu-hog %lld heap-hog %lld sys-bad %lld calm %lld", retired[0],
          retired[1], retired[2], retired[3]);
    /* A budget's worker is retired by a kill (its engine state is not trusted); the
     * SIGSYS death is a crash, not a kill. */
    check(killed[0] == 1 && killed[1] == 1 && killed[2] == 0 && killed[3] == 0 &&
              crashed[0] == 0 && crashed[1] == 0 && crashed[2] == 1 && crashed[3] == 0,
          "counters: the budget flows' workers count as killed and the SIGSYS death as "
          "crashed, each under its own flow only [guard: killed and crashed counted under "
          "the worker's flow]",
          "killed: %lld %lld %lld %lld, crashed: %lld %lld %lld %lld (cpu-hog heap-hog "
          "sys-bad calm)", killed[0], killed[1], killed[2], killed[3], crashed[0], crashed[1],
          crashed[2], crashed[3]);
}

/* A flow's per-flow counters as one JSON text, to compare two healths. */
static char *flow_counts(const json_t *h, const char *flow)
{
    json_t *f = json_object_get(json_object_get(h, "flows"), flow);
    json_t *part = json_pack("{s:O?, s:O?, s:O?}", "runs", json_object_get(f, "runs"),
                             "budget_exhaustions", json_object_get(f, "budget_exhaustions"),
                             "workers", json_object_get(f, "workers"));
    char *text = json_dumps(part, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(part);
    return text;
}

/* GET /metrics of the serve whose log names its port; the body, or NULL. */
static char *fetch_metrics(const struct test_serve *s)
{
    const char *at = strstr(s->log, "event=metrics_listening");
    const char *port = at != NULL ? strstr(at, "port=") : NULL;
    if (port == NULL)
        return NULL;
    char url[128];
    sfmt(url, sizeof url, "http://127.0.0.1:%ld/metrics", strtol(port + 5, NULL, 10));
    const char *curl[] = {"/usr/bin/curl", "-sS", "--max-time", "30", url, NULL};
    struct proc_result page = proc_run(curl, NULL, 0, TIMEOUT_MS);
    char *body = proc_exited_with(&page, 0) ? strdup(page.out) : NULL;
    proc_result_free(&page);
    return body;
}

static void check_metrics(const struct test_home *h, const struct test_serve *s)
{
    /* A flow id no manifest allows, as a store edited by hand could hold. */
    bool planted = store_exec_changes(h->db, "INSERT INTO health_counters(name, value) VALUES"
                                             " ('flow.we\"ird\\id' || char(10) || 'x.spawned', 3),"
                                             " ('flow.rtl' || char(8238) || 'x.retired', 2)") == 2;
    check(planted, "metrics: health rows with odd flow ids written into the store", "%s",
          h->db);
    char *page = fetch_metrics(s);
    if (page == NULL) {
        fail("metrics: serve's /metrics answers", "%.300s", s->log);
        return;
    }
    static const char *const LINES[] = {
        "basal_flow_budget_exhaustions_total{flow=\"cpu-hog\",budget=\"cpu\"} 1",
        "basal_flow_budget_exhaustions_total{flow=\"cpu-hog\",budget=\"memory\"} 0",
        "basal_flow_budget_exhaustions_total{flow=\"heap-hog\",budget=\"memory\"} 1",
        "basal_budget_exhaustions_total{budget=\"cpu\"} 1",
        "basal_flow_worker_sigsys_deaths_total{flow=\"sys-bad\"} 1",
        "basal_flow_worker_sigsys_deaths_total{flow=\"calm\"} 0",
        "basal_flow_worker_spawned_total{flow=\"sys-bad\"} 1",
        "basal_flow_worker_retired_total{flow=\"cpu-hog\"} 1",
        "basal_flow_counts_dropped_total 0",
    };
    for (size_t i = 0; i < sizeof LINES / sizeof LINES[0]; i++) {
        char name[256];
        sfmt(name, sizeof name, "metrics: /metrics has %s", LINES[i]);
        check(output_has_line(page, LINES[i]), name, "%.2000s", page);
    }
    check(output_has_line(page, "basal_flow_worker_spawned_total{flow=\"we\\\"ird\\\\id\\nx\"} 3"),
          "metrics: a flow label's backslash, double quote and line feed are escaped "
          "[guard: Prometheus label escaping]",
          "%.3000s", page);
    const char *parse[] = {"/usr/bin/python3", "-c",
                           "import sys\nfrom prometheus_client.parser import "
                           "text_string_to_metric_families as p\n"
                           "print([s.labels['flow'] for f in p(sys.stdin.read()) for s in "
                           "f.samples if f.name == 'basal_flow_worker_spawned' and "
                           "s.value == 3][0] == 'we\"ird\\\\id\\nx')",
                           NULL};
    struct proc_result parsed = proc_run(parse, page, strlen(page), TIMEOUT_MS);
    check(proc_exited_with(&parsed, 0) && strcmp(parsed.out, "True\n") == 0,
          "metrics: prometheus_client reads the escaped flow id back byte for byte",
          "%s: %s %s", proc_describe(&parsed), parsed.out, parsed.err);
    proc_result_free(&parsed);
    free(page);

    /* U+202E in UTF-8, as bytes: a literal holding it is what the check refuses. */
    static const char RAW_RLO[] = {(char)0xe2, (char)0x80, (char)0xae, '\0'};
    struct proc_result r = test_home_cli(h, false, ARGS("health"));
    check(proc_exited_with(&r, 0) && strstr(r.out, "\"we\\\"ird\\\\id\\nx\": {") != NULL &&
              strstr(r.out, "\"rtl\\u202ex\": {") != NULL && strstr(r.out, RAW_RLO) == NULL,
          "health: the terminal form writes odd flow ids escaped (a direction control as "
          "\\u202e, never raw) [guard: json_out re-escaping]",
          "%s", proc_describe(&r));
    proc_result_free(&r);
}

static void test_serve_counters(void)
{
    struct test_home h;
    test_home_begin(&h, g_root, "serve");
    bool ready =
        flow_with_limits(&h, "cpu-hog", "{\"cpu_ms\":50}", "for (;;) {}\n") &&
        flow_with_limits(&h, "heap-hog", "{\"heap_bytes\":2097152}",
                         "const keep = [];\n"
                         "for (let i = 0; i < 512; i++) keep.push(new Uint8Array(1 << 16));\n"
                         "return keep.length;\n") &&
        flow_with_limits(&h, "sys-bad", "{\"cpu_ms\":10000}",
                         "__basalTestForbiddenSyscall();\nreturn 'survived';\n") &&
        flow_with_limits(&h, "calm", "{\"cpu_ms\":10000}", "return 1;\n");
    if (!ready)
        return;
    struct test_serve s;
    if (!check(test_serve_start(&s, &h, ARGS("--metrics", "127.0.0.1:0"), NULL),
               "counters: serve starts", "%.400s", s.log))
        return;
    int codes[FLOW_COUNT];
    for (size_t f = 0; f < FLOW_COUNT; f++)
        codes[f] = run_flow(&h, FLOWS[f]);
    check(codes[0] == 1 && codes[1] == 1 && codes[2] == 1 && codes[3] == 0,
          "counters: the budget and SIGSYS runs fail, the calm one succeeds", "exit %d %d %d %d",
          codes[0], codes[1], codes[2], codes[3]);
    json_t *first = health(&h);
    if (check(json_is_object(first), "counters: --json health from the serve", "not JSON")) {
        check_budgets(first);
        check_workers(first, 1);
    }
    int stopped = test_serve_stop(&s);
    check(stopped == 0, "counters: serve stops", "exit %d", stopped);

    /* A second serve on the same store. */
    if (!check(test_serve_start(&s, &h, ARGS("--metrics", "127.0.0.1:0"), NULL),
               "counters: serve starts again", "%.400s", s.log)) {
        json_decref(first);
        return;
    }
    json_t *again = health(&h);
    bool same = json_is_object(first) && json_is_object(again);
    char which[128] = "";
    for (size_t f = 0; same && f < FLOW_COUNT; f++) {
        char *a = flow_counts(first, FLOWS[f]), *b = flow_counts(again, FLOWS[f]);
        same = a != NULL && b != NULL && strcmp(a, b) == 0;
        if (!same)
            sfmt(which, sizeof which, "%s: %.50s vs %.50s", FLOWS[f], a, b);
        free(a);
        free(b);
    }
    check(same, "counters: the restarted serve reports each flow's counters as stored "
                "[guard: per-flow counters persisted]", "%s", which);
    check(run_flow(&h, "calm") == 0, "counters: calm runs in the second serve", "%s", "");
    json_t *after = health(&h);
    if (check(json_is_object(after), "counters: health after the second serve's run", "not JSON")) {
        check_workers(after, 2);
        check_budgets(after);
        check(number(after, "calm", "runs", "completed") == 2,
              "counters: calm's activations add across the restart (2 completed) "
              "[guard: per-flow counters persisted]", "%lld",
              number(after, "calm", "runs", "completed"));
    }
    check_metrics(&h, &s);
    json_decref(first);
    json_decref(again);
    json_decref(after);
    stopped = test_serve_stop(&s);
    check(stopped == 0, "counters: the second serve stops", "exit %d", stopped);
}

static void test_pool_flow_limit(void)
{
    struct health h;
    health_init(&h, LANDLOCK_POLICY_REQUIRED);
    h.flow_limit = HEALTH_POOL_FLOW_LIMIT;
    struct activation_outcome out = {.status = ACTIVATION_BUDGET_EXHAUSTED,
                                     .budget = PROTO_BUDGET_CPU};
    char id[32];
    for (unsigned i = 0; i <= HEALTH_POOL_FLOW_LIMIT; i++) {
        sfmt(id, sizeof id, "flow-%u", i);
        health_record_run(&h, id, &out);
    }
    check(h.flow_count == HEALTH_POOL_FLOW_LIMIT && h.flow_counts_dropped == 2 &&
              h.runs[ACTIVATION_BUDGET_EXHAUSTED] == HEALTH_POOL_FLOW_LIMIT + 1 &&
              h.budgets[PROTO_BUDGET_CPU] == HEALTH_POOL_FLOW_LIMIT + 1,
          "pool flow table: the flow past the limit counts in the totals and in "
          "flow_counts_dropped, not in a new entry [guard: HEALTH_POOL_FLOW_LIMIT]",
          "flows %zu dropped %llu runs %llu cpu %llu", h.flow_count, h.flow_counts_dropped,
          h.runs[ACTIVATION_BUDGET_EXHAUSTED], h.budgets[PROTO_BUDGET_CPU]);
    health_record_run(&h, "flow-0", &out);
    check(h.flows[0].budgets[PROTO_BUDGET_CPU] == 2 && h.flow_counts_dropped == 2,
          "pool flow table: a flow already in it still counts when it is full", "%llu",
          h.flows[0].budgets[PROTO_BUDGET_CPU]);
    struct health_flow *taken;
    size_t n;
    health_take_flows(&h, &taken, &n);
    check(n == HEALTH_POOL_FLOW_LIMIT && h.flow_count == 0 &&
              health_flow_entry(&h, "new-flow") != NULL,
          "pool flow table: taking the counts empties it, so new flows fit again", "%zu", n);
    /* A write that failed gives them back: added to what was counted meanwhile. */
    health_record_run(&h, "flow-0", &out);
    health_give_back_flows(&h, taken, n);
    const struct health_flow *f0 = NULL;
    for (size_t i = 0; i < h.flow_count; i++)
        if (strcmp(h.flows[i].id, "flow-0") == 0)
            f0 = &h.flows[i];
    check(f0 != NULL && f0->budgets[PROTO_BUDGET_CPU] == 3 &&
              f0->runs[ACTIVATION_BUDGET_EXHAUSTED] == 3,
          "pool flow table: counts given back after a failed write add to the new ones",
          "%llu", f0 != NULL ? f0->budgets[PROTO_BUDGET_CPU] : 0ULL);
    health_free(&h);
}

int main(void)
{
    if (!require_binary(harness_test_parent(), "counters: the test build"))
        return harness_finish();
    sfmt(g_root, sizeof g_root, "%s", harness_tmpdir("flow_counters"));
    test_pool_flow_limit();
    test_serve_counters();
    harness_remove_tmpdir();
    return harness_finish();
}
