/* Values between a flow and the parent, end to end through the real ck-basal (a data
 * home per scenario, the flow installed and approved with the CLI, `run --json`):
 *
 *   1. numbers: every number JavaScript can put in JSON round-trips through kv.set and
 *      kv.get (1e19, -1e21, the largest and smallest doubles, -0, 2**53+2, ...), kv
 *      stores exactly the JSON the script wrote, and a run's result of 1e19 is shown as
 *      that number [guard: js-numbers-round-trip]. kv.set("k", 1e19) used to fail
 *      invalid_arguments: jansson refused the integer text 10000000000000000000.
 *   2. the result's toJSON: host calls made while the worker serializes the returned
 *      value (a toJSON, here) are refused inside the worker (HostError "closed") and
 *      never reach the parent: the run succeeds, and the journal, kv and the module's
 *      log show no trace of them [guard: no-host-call-after-result]. They used to be
 *      performed and journaled, and left pending in a succeeded run. */
#include "lib/cli_home.h"
#include "lib/harness.h"
#include "lib/store_view.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_root[PATH_MAX];

/* The current scenario's paths. */
static struct {
    char dir[PATH_MAX];
    char home[PATH_MAX];
    char db[PATH_MAX];
    char module_log[PATH_MAX];
} S;

/* ck-basal --json --home HOME args... */
static struct proc_result cli(const char *const *args)
{
    return cli_home(S.home, true, args);
}


/* A fresh data home with a catalog of one module (tests/tools/test_module, which logs
 * every request it gets). */
static bool scenario_begin(const char *name)
{
    memset(&S, 0, sizeof S);
    sfmt(S.dir, sizeof S.dir, "%s/%s", g_root, name);
    sfmt(S.home, sizeof S.home, "%s/home", S.dir);
    sfmt(S.db, sizeof S.db, "%s/basal.db", S.home);
    sfmt(S.module_log, sizeof S.module_log, "%s/module.log", S.dir);
    if (mkdir(S.dir, 0755) != 0)
        return false;
    char catalog[4096], why[1024];
    sfmt(catalog, sizeof catalog,
         "{\"modules\": {\"plain\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"],"
         " \"ops\": {\"echo\": {\"kind\": \"query\"}}}}}",
         harness_path("test/tools/test_module"), S.module_log);
    bool ok = cli_home_setup(S.home, catalog, why, sizeof why);
    if (!ok)
        fprintf(stderr, "  %s\n", why);
    return ok;
}

/* Writes flow.js and its manifest, installs and approves the flow. */
static bool flow_add(const char *id, const char *script, const char *grants)
{
    char dir[PATH_MAX + 32], manifest[1024];
    sfmt(dir, sizeof dir, "%s/flow-%s", S.dir, id);
    sfmt(manifest, sizeof manifest,
         "{\"format\":1,\"id\":\"%s\",\"version\":1,\"purpose\":\"test\","
         "\"trigger\":{\"manual\":true}%s%s}",
         id, grants[0] != '\0' ? "," : "", grants);
    return mkdir(dir, 0755) == 0 && flow_dir_write(dir, manifest, script) &&
           cli_install_approve(S.home, HARNESS_EMPTY_ENV, dir, id, 1, NULL, 0) == FLOW_ADDED;
}

/* `run ID --json`: the printed object (NULL if none), and the raw output for details. */
static json_t *run_flow(const char *id, char *detail, size_t cap)
{
    struct proc_result r = cli(ARGS("run", id));
    json_t *v = cli_output_json(&r);
    snprintf(detail, cap, "%s; out %.700s; err %.300s", proc_describe(&r), r.out, r.err);
    proc_result_free(&r);
    return v;
}

/* flow_add, then run_flow into *run; false (after "not ok - ID: flow installed and
 * approved") when the flow could not be added. */
static bool add_and_run(const char *id, const char *script, const char *grants, json_t **run,
                        char *detail, size_t cap)
{
    if (!flow_add(id, script, grants)) {
        char name[128];
        sfmt(name, sizeof name, "%s: flow installed and approved", id);
        fail(name, "in %s", S.dir);
        return false;
    }
    *run = run_flow(id, detail, cap);
    return true;
}

/* ---- 1. numbers ---------------------------------------------------------------------- */

/* Each value, and its JSON as JavaScript writes it (JSON.stringify). */
static const struct {
    const char *key, *js, *json;
} NUMBERS[] = {
    {"big", "1e19", "10000000000000000000"},
    {"neg_huge", "-1e21", "-1e+21"},
    {"max", "1.7976931348623157e308", "1.7976931348623157e+308"},
    {"min", "5e-324", "5e-324"},
    {"neg_zero", "-0", "0"},
    {"above_2_53", "2 ** 53 + 2", "9007199254740994"},
    {"max_int64_ish", "2 ** 63", "9223372036854776000"},
    {"below_min_int64", "-(2 ** 64)", "-18446744073709552000"},
    {"tenth", "0.1", "0.1"},
    {"third", "1 / 3", "0.3333333333333333"},
    {"five", "5", "5"},
    {"mixed", "{a: [1e19, 5, -0.5], b: 2 ** 53 + 2}",
     "{\"a\":[10000000000000000000,5,-0.5],\"b\":9007199254740994}"},
    /* Brackets, commas and escaped quotes inside strings: the stored text is still cut
     * at the value's own end. */
    {"strings", "['a\"]\\\\', {'}': '[,'}, 1e19]",
     "[\"a\\\"]\\\\\",{\"}\":\"[,\"},10000000000000000000]"},
};

static void test_numbers(void)
{
    if (!scenario_begin("numbers")) {
        fail("numbers: scenario", "setup failed in %s", S.dir);
        return;
    }
    /* The flow sets each value, reads it back and compares in JavaScript; it returns
     * the keys whose value came back different, and 1e19 beside them. */
    char script[4096] = "const vals = {\n";
    for (size_t i = 0; i < sizeof NUMBERS / sizeof NUMBERS[0]; i++) {
        size_t used = strlen(script);
        sfmt(script + used, sizeof script - used, "  %s: %s,\n", NUMBERS[i].key, NUMBERS[i].js);
    }
    size_t used = strlen(script);
    sfmt(script + used, sizeof script - used, "%s",
         "};\n"
         "const differ = [];\n"
         "for (const k of Object.keys(vals)) {\n"
         "  await kv.set(k, vals[k]);\n"
         "  const back = await kv.get(k);\n"
         "  const same = JSON.stringify(back) === JSON.stringify(vals[k]) &&\n"
         "    (typeof back !== 'number' || back === vals[k]);\n"
         "  if (!same) differ.push(k + ': ' + JSON.stringify(back));\n"
         "}\n"
         "return {differ, big: 1e19};\n");
    char detail[1200];
    json_t *run = NULL;
    if (!add_and_run("numbers", script, "", &run, detail, sizeof detail))
        return;
    json_t *result = json_object_get(run, "result");
    json_t *differ = json_object_get(result, "differ");
    json_t *big = json_object_get(result, "big");
    check(strcmp(json_str_of(run, "state"), "succeeded") == 0 && json_is_array(differ) &&
              json_array_size(differ) == 0,
          "numbers: kv.set then kv.get of 1e19, -1e21, 1.7976931348623157e308, 5e-324, -0, "
          "2**53+2, 2**63, -(2**64), 0.1, 1/3, 5 and an object of them gives back the same "
          "value in a real flow run [guard: js-numbers-round-trip]",
          "%s", detail);
    check(json_is_number(big) && json_number_value(big) == 1e19,
          "numbers: a flow result holding 1e19 is shown by run --json as that number",
          "%s", detail);
    for (size_t i = 0; i < sizeof NUMBERS / sizeof NUMBERS[0]; i++) {
        char sql[256], name[300];
        sfmt(sql, sizeof sql, "SELECT value FROM kv WHERE flow_id = 'numbers' AND key = '%s'",
             NUMBERS[i].key);
        char *stored = store_text(S.db, sql);
        sfmt(name, sizeof name,
             "numbers: kv stores %s exactly as JSON.stringify writes it (%s)", NUMBERS[i].js,
             NUMBERS[i].json);
        check(stored != NULL && strcmp(stored, NUMBERS[i].json) == 0, name, "stored %s",
              stored != NULL ? stored : "(nothing)");
        free(stored);
    }
    json_decref(run);
}

/* ---- 2. host calls while the result is serialized ---------------------------------- */

static void test_result_to_json(void)
{
    if (!scenario_begin("tojson")) {
        fail("tojson: scenario", "setup failed in %s", S.dir);
        return;
    }
    const char *script =
        "await kv.set('before', 1);\n"
        "return {\n"
        "  toJSON() {\n"
        "    const codes = [];\n"
        "    kv.set('leaked', 1).catch((e) => codes.push(e.data.code));\n"
        "    ops.call('plain', 'echo', {from: 'toJSON'}).catch((e) => codes.push(e.data.code));\n"
        "    let t;\n"
        "    try { t = now(); } catch (e) { t = e.name + ' ' + e.data.code; }\n"
        "    return {t, codes};\n"
        "  }\n"
        "};\n";
    char detail[1200];
    json_t *run = NULL;
    if (!add_and_run("tojson", script, "\"ops\":[{\"module\":\"plain\",\"op\":\"echo\"}]",
                     &run, detail, sizeof detail))
        return;
    json_t *result = json_object_get(run, "result");
    char *journal = store_text(S.db, "SELECT group_concat(position || ' ' || kind, '; ') FROM journal");
    char *kv = store_text(S.db, "SELECT group_concat(key, ',') FROM kv");
    char *audit = store_text(S.db, "SELECT count(*) FROM audit");
    char *module_log = read_text_file(S.module_log);
    check(strcmp(json_str_of(run, "state"), "succeeded") == 0 &&
              strcmp(json_string_value(json_object_get(result, "t")) != NULL
                         ? json_string_value(json_object_get(result, "t"))
                         : "",
                     "HostError closed") == 0 &&
              json_integer_value(json_object_get(run, "host_calls")) == 1 && journal != NULL &&
              strcmp(journal, "0 kv.set") == 0 && kv != NULL && strcmp(kv, "before") == 0 &&
              audit != NULL && strcmp(audit, "1") == 0 &&
              (module_log == NULL || module_log[0] == '\0'),
          "tojson: host calls made by the result's toJSON (kv.set, ops.call, now) are refused "
          "in the worker as HostError closed: the run succeeds and the journal, audit, kv and "
          "the module's log hold only the call made before the return [guard: "
          "no-host-call-after-result]",
          "%s; journal '%s'; kv '%s'; audit %s; module log '%.200s'", detail,
          journal != NULL ? journal : "", kv != NULL ? kv : "", audit != NULL ? audit : "?",
          module_log != NULL ? module_log : "");
    free(journal);
    free(kv);
    free(audit);
    free(module_log);
    json_decref(run);
}

int main(void)
{
    if (!require_parent_and_module("flow values: ck-basal test build present",
                                   "flow values: test_module") ||
        !harness_tmpdir_copy("flow-values", g_root, sizeof g_root))
        return harness_finish();
    test_numbers();
    test_result_to_json();
    harness_remove_tree(g_root);
    return harness_finish();
}
