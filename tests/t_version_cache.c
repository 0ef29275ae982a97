/* The version cache (issue 25; flows/version_cache.h) and the rules a run through serve
 * keeps with it (flows/run_driver.c, inputs_load):
 *
 *   1. the cache alone: a hit is the entry put; a second put of the same key returns
 *      the first entry; at capacity the least recently used entry leaves the table, and
 *      one still held stays readable until its release (ASan proves the frees); an
 *      entry over the byte bound is not kept;
 *   2. one serve, runs of one flow between which the registry changes; each next run
 *      sees the change although its version is cached:
 *      - the stored script changed after the first run: the cached, approved bytes run
 *        (what docs/flows.md says), not the changed ones;
 *      - the flow disabled: refused "is disabled" [guard: flows_run_approval before
 *        every cache lookup, the enabled check];
 *      - the approval's hash changed: refused [guard: the lookup is by the hash the
 *        approval names now, then the full check of a miss];
 *      - the approval removed: refused "has no approved version" [guard: as above, the
 *        approval asked at each run];
 *      - a new version approved with a new hash: it runs, not the cached one;
 *   3. a manifest naming an fs root, the root removed after a first run: the next run
 *      is refused "does not exist" [guard: names_directories, a cached manifest with
 *      roots parsed again at each run]; modules.json made world-writable under the
 *      serve: the next run is refused;
 *   4. the catalog cache alone (flows/catalog_cache.h, kept at once: settled 0): the
 *      same file is the same catalog; a file of another size, one replaced by a rename
 *      and a mode change are each loaded again and seen [guard: same_file]; a catalog
 *      loaded again leaves the one still held whole; a catalog changed less than the
 *      settled time ago is not kept [guard: settled].
 * Every wait is on an event (the CLI's reply through serve, serve's log). */
#include "flows/catalog_cache.h"
#include "flows/version_cache.h"
#include "lib/harness.h"
#include "lib/serve_home.h"
#include "lib/store_view.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TIMEOUT_MS 120000

static char g_root[PATH_MAX];

/* ---- 1. the cache alone ------------------------------------------------------------ */

static const char *hash_of(char c)
{
    static char h[4][CODE_HASH_HEX_LEN + 1];
    static int next;
    char *out = h[next++ % 4];
    memset(out, c, CODE_HASH_HEX_LEN);
    out[CODE_HASH_HEX_LEN] = '\0';
    return out;
}

static struct version_entry *put(struct version_cache *c, const char *flow, int64_t v,
                                 const char *hash, const char *script)
{
    struct flow_blob s = {strdup(script), strlen(script)};
    struct flow_blob m = {strdup("{}"), 2};
    struct manifest parsed;
    memset(&parsed, 0, sizeof parsed);
    parsed.deadline_s = (uint32_t)v;
    return version_cache_put(c, flow, v, hash, &s, &m, &parsed);
}

static void test_cache_alone(void)
{
    struct version_cache *c = version_cache_new(2, 1000);
    struct version_entry *a = c != NULL ? put(c, "a", 1, hash_of('a'), "return 'a';") : NULL;
    if (a == NULL) {
        fail("cache: a cache of capacity 2, 1000 bytes, and a first entry", "out of memory");
        version_cache_free(c);
        return;
    }
    ok(strcmp(a->script.bytes, "return 'a';") == 0 && a->manifest.deadline_s == 1,
       "cache: a put returns its entry, held, with the bytes and manifest passed");
    struct version_entry *again = version_cache_get(c, "a", 1, hash_of('a'));
    ok(again == a, "cache: a get of the same flow, version and hash is that entry");
    version_cache_release(c, again);
    ok(version_cache_get(c, "a", 1, hash_of('b')) == NULL &&
           version_cache_get(c, "a", 2, hash_of('a')) == NULL &&
           version_cache_get(c, "b", 1, hash_of('a')) == NULL,
       "cache: another hash, version or flow is a miss");
    struct version_entry *dup = put(c, "a", 1, hash_of('a'), "return 'other';");
    ok(dup == a && version_cache_count(c) == 1,
       "cache: a second put of the same key returns the first entry (the new bytes freed)");
    version_cache_release(c, dup);
    struct version_entry *b = put(c, "b", 1, hash_of('b'), "return 'b';");
    version_cache_release(c, b);
    /* a is still held (from its put) and is the least recently used: c pushes it out. */
    struct version_entry *e = put(c, "c", 1, hash_of('c'), "return 'c';");
    version_cache_release(c, e);
    ok(version_cache_count(c) == 2 && version_cache_get(c, "a", 1, hash_of('a')) == NULL,
       "cache: at capacity the least recently used entry leaves the table");
    ok(strcmp(a->script.bytes, "return 'a';") == 0,
       "cache: an entry that left the table stays whole while it is held");
    version_cache_release(c, a);
    struct version_entry *bb = version_cache_get(c, "b", 1, hash_of('b'));
    ok(bb != NULL && strcmp(bb->script.bytes, "return 'b';") == 0,
       "cache: the entries kept are still found");
    version_cache_release(c, bb);
    char big[1001];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    struct version_entry *large = put(c, "d", 1, hash_of('d'), big);
    ok(large != NULL && strlen(large->script.bytes) == 1000 &&
           version_cache_get(c, "d", 1, hash_of('d')) == NULL && version_cache_count(c) == 2,
       "cache: an entry over the byte bound is handed out and not kept; the others stay");
    version_cache_release(c, large);
    version_cache_free(c);
}

/* ---- 2 and 3. through one serve ----------------------------------------------------- */

/* `run ID` through serve: its --json output (caller frees) or NULL, and the stderr. */
static json_t *run_flow(const struct test_home *h, const char *id, char *err, size_t err_cap)
{
    struct proc_result r = test_home_cli(h, true, ARGS("run", id));
    json_t *j = r.exited && r.exit_code == 0 ? cli_output_json(&r) : NULL;
    sfmt(err, err_cap, "exit %d: %s", r.exit_code, r.err);
    proc_result_free(&r);
    return j;
}

static void expect_result(const struct test_home *h, const char *id, long long want,
                          const char *name)
{
    char err[2048];
    json_t *j = run_flow(h, id, err, sizeof err);
    json_t *result = json_object_get(j, "result");
    check(j != NULL && strcmp(json_str_of(j, "state"), "succeeded") == 0 &&
              json_is_integer(result) && json_integer_value(result) == want,
          name, "%s; %s", json_dumped(j), err);
    json_decref(j);
}

static void expect_refused(const struct test_home *h, const char *id, const char *needle,
                           const char *name)
{
    long long runs = test_home_sql(h, "SELECT count(*) FROM runs");
    struct proc_result r = test_home_cli(h, false, ARGS("run", id));
    check(proc_exited_with(&r, 1) && strstr(r.err, needle) != NULL &&
              test_home_sql(h, "SELECT count(*) FROM runs") == runs,
          name, "%s; stderr %s", proc_describe(&r), r.err);
    proc_result_free(&r);
}

static void cli_ok(const struct test_home *h, const char *const *args, const char *name)
{
    struct proc_result r = test_home_cli(h, false, args);
    check(proc_exited_with(&r, 0), name, "%s; stderr %s", proc_describe(&r), r.err);
    proc_result_free(&r);
}

static void test_through_serve(void)
{
    struct test_home h;
    test_home_begin(&h, g_root, "serve");
    char root[PATH_MAX + 16], trigger[PATH_MAX + 128];
    sfmt(root, sizeof root, "%s/root", h.dir);
    mkdir_or_fail(root, "cache: the fs root");
    sfmt(trigger, sizeof trigger, "{\"manual\":true},\"fs\":{\"read\":[\"%s\"]}", root);
    bool made = test_home_flow(&h, "vc", 1, "{\"manual\":true}", "return 1;\n") &&
                test_home_flow(&h, "rooted", 1, trigger, "return 7;\n");
    struct test_serve s;
    if (!check(made && test_serve_start(&s, &h, NULL, NULL), "cache: two flows and a serve",
               "%.300s", s.log))
        return;

    expect_result(&h, "vc", 1, "cache: the first run of vc succeeds (its version now cached)");
    ok(store_exec_changes(h.db, "UPDATE flow_versions SET script = CAST('return 2;' AS BLOB)"
                                " WHERE flow_id = 'vc'") == 1,
       "cache: tamper: vc's stored script changed with sqlite3");
    expect_result(&h, "vc", 1,
                  "cache: the next run runs the cached, approved bytes, not the changed ones");

    cli_ok(&h, ARGS("flow", "disable", "vc"), "cache: flow disable vc");
    expect_refused(&h, "vc", "is disabled",
                   "cache: disabled, a cached version is refused [guard: flows_run_approval]");
    cli_ok(&h, ARGS("flow", "enable", "vc"), "cache: flow enable vc");
    expect_result(&h, "vc", 1, "cache: enabled again, it runs");

    char *hash = store_text(h.db, "SELECT code_hash FROM approvals WHERE flow_id = 'vc'");
    ok(store_exec_changes(h.db, "UPDATE approvals SET code_hash = '" "0000000000000000000000"
                                "000000000000000000000000000000000000000000' WHERE flow_id"
                                " = 'vc'") == 1,
       "cache: tamper: vc's approval names another hash");
    expect_refused(&h, "vc", "not the approved one",
                   "cache: the approval's hash changed, a cached version is refused [guard: "
                   "the lookup by the approval's hash]");
    char sql[256];
    sfmt(sql, sizeof sql, "UPDATE approvals SET code_hash = '%s' WHERE flow_id = 'vc'",
         hash != NULL ? hash : "");
    ok(hash != NULL && store_exec_changes(h.db, sql) == 1, "cache: the approval's hash put back");
    free(hash);
    expect_result(&h, "vc", 1, "cache: the approval as it was, the cached version runs");

    ok(store_exec_changes(h.db, "DELETE FROM approvals WHERE flow_id = 'vc'") == 1,
       "cache: tamper: vc's approval removed");
    expect_refused(&h, "vc", "has no approved version",
                   "cache: the approval removed, a cached version is refused [guard: the "
                   "approval asked at each run]");
    ok(test_home_flow(&h, "vc", 2, "{\"manual\":true}", "return 3;\n"),
       "cache: vc version 2 installed and approved (a new hash) under the running serve");
    expect_result(&h, "vc", 3, "cache: re-approved with a new hash, the new version runs");

    expect_result(&h, "rooted", 7, "cache: the first run of a flow with an fs root succeeds");
    ok(rmdir(root) == 0, "cache: its root removed");
    expect_refused(&h, "rooted", "does not exist",
                   "cache: its root gone, the next run is refused [guard: names_directories: a "
                   "cached manifest with roots parsed again]");

    char catalog[PATH_MAX + 32];
    sfmt(catalog, sizeof catalog, "%s/modules.json", h.home);
    ok(write_text_file(catalog, "{\"modules\": {}}", 0600), "cache: an empty modules.json");
    expect_result(&h, "vc", 3, "cache: a run with the catalog succeeds");
    ok(chmod(catalog, 0666) == 0, "cache: modules.json made world-writable");
    expect_refused(&h, "vc", "world-writable",
                   "cache: the catalog's mode changed under serve, the next run is refused");
    check_int_eq(test_serve_stop(&s), 0, "cache: serve stops cleanly");
}

/* ---- 4. the catalog cache alone ------------------------------------------------------ */

static const char *module_json(const char *name, const char *pad)
{
    static char text[512];
    sfmt(text, sizeof text, "{\"modules\": {\"%s\": {\"program\": \"/bin/true\"%s,"
         " \"ops\": {\"q\": {\"kind\": \"query\"}}}}}", name, pad);
    return text;
}

static bool names_module(const struct catalog_hold *hold, const char *name)
{
    return hold->catalog != NULL && hold->catalog->count == 1 &&
           strcmp(hold->catalog->modules[0].name, name) == 0;
}

static void test_catalog_alone(void)
{
    char home[PATH_MAX], path[PATH_MAX + 32], other[PATH_MAX + 32], err[512];
    sfmt(home, sizeof home, "%s/catalog-home", g_root);
    mkdir_or_fail(home, "catalog: a home");
    sfmt(path, sizeof path, "%s/modules.json", home);
    sfmt(other, sizeof other, "%s/modules.json.new", home);
    struct catalog_cache *c = catalog_cache_new(0);
    if (!ok(c != NULL && write_text_file(path, module_json("a", ""), 0600),
            "catalog: a cache and a catalog naming module a"))
        return;
    struct catalog_hold first, again, next;
    ok(catalog_cache_get(c, home, &first, err, sizeof err) == 0 && names_module(&first, "a"),
       "catalog: the first get loads module a");
    ok(catalog_cache_get(c, home, &again, err, sizeof err) == 0 && again.held == first.held,
       "catalog: the same file again is the catalog kept");
    catalog_cache_release(c, &again);

    ok(write_text_file(path, module_json("b", ", \"timeout_ms\": 100"), 0600),
       "catalog: rewritten in place, module b, another size");
    ok(catalog_cache_get(c, home, &next, err, sizeof err) == 0 && names_module(&next, "b"),
       "catalog: a file of another size is loaded again [guard: same_file]");
    ok(names_module(&first, "a"), "catalog: the catalog still held before is whole");
    catalog_cache_release(c, &first);
    catalog_cache_release(c, &next);

    ok(write_text_file(other, module_json("c", ", \"timeout_ms\": 100"), 0600) &&
           rename(other, path) == 0,
       "catalog: replaced by a rename, module c, the same size");
    ok(catalog_cache_get(c, home, &next, err, sizeof err) == 0 && names_module(&next, "c"),
       "catalog: a file replaced by a rename is loaded again [guard: same_file]");
    catalog_cache_release(c, &next);

    ok(chmod(path, 0666) == 0, "catalog: made world-writable");
    check(catalog_cache_get(c, home, &next, err, sizeof err) == -1 &&
              strstr(err, "world-writable") != NULL && next.catalog == NULL,
          "catalog: a mode change is seen (mode, ctime), the load refused [guard: same_file]",
          "%s", err);
    catalog_cache_free(c);

    struct catalog_cache *slow = catalog_cache_new(3600LL * 1000);
    ok(slow != NULL && chmod(path, 0600) == 0, "catalog: a cache keeping only an hour-old file");
    bool loaded = slow != NULL && catalog_cache_get(slow, home, &first, err, sizeof err) == 0 &&
                  catalog_cache_get(slow, home, &again, err, sizeof err) == 0;
    ok(loaded && names_module(&again, "c") && again.held != first.held,
       "catalog: a file changed less than the settled time ago is loaded at each get "
       "[guard: settled]");
    if (loaded) {
        catalog_cache_release(slow, &first);
        catalog_cache_release(slow, &again);
    }
    catalog_cache_free(slow);
}

int main(void)
{
    test_cache_alone();
    if (!require_binary(harness_test_parent(), "cache: the test build"))
        return harness_finish();
    sfmt(g_root, sizeof g_root, "%s", harness_tmpdir("version_cache"));
    test_through_serve();
    test_catalog_alone();
    harness_remove_tmpdir();
    return harness_finish();
}
