/* The flow registry (basal.md sections 6 and 8): `ck-basal flow install |
 * approve | list | disable | enable` driven through the real binary with --home in a
 * temp dir, and flows_runnable through the store API.
 *   - install prints id, version and the code hash computed over the exact files;
 *   - approve with the right hash records the approval and list shows it; a wrong,
 *     malformed hash, an unknown version or flow, an already approved version and a
 *     pending row altered in the store are refused;
 *   - an install whose version is not above every stored version is refused;
 *   - every bad input (malformed, oversized, duplicate key, unknown field manifest;
 *     oversized or non-UTF-8 script; non-UTF-8 manifest; missing files) is refused with
 *     one line on stderr and exit 1 (2 for usage), and a dump of every row of flows,
 *     flow_versions and approvals is the same before and after [guard: bad input
 *     changes nothing];
 *   - disable/enable toggle the list;
 *   - flows_runnable refuses an unknown, unapproved or disabled flow and one whose
 *     stored manifest was altered by one byte after approval, and accepts the
 *     approved one [guard: code hash rechecked before a run]. */
#include "lib/cli_home.h"
#include "lib/harness.h"
#include "lib/store_view.h"

#include "flows/code_hash.h"
#include "flows/flows.h"
#include "flows/manifest.h"
#include "store/store.h"
#include "proto/message.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TIMEOUT_MS 20000
#define SCRIPT "const main = async () => 1;\nreturn await main();\n"

static char g_root[256];
static char g_home[PATH_MAX];
static char g_db[PATH_MAX];

static bool one_line(const char *text)
{
    size_t len = strlen(text);
    return len > 0 && text[len - 1] == '\n' && memchr(text, '\n', len - 1) == NULL;
}

/* ck-basal [--json] --home HOME args... (args NULL-terminated), in the test's environment. */
static struct proc_result run_cli(bool json, const char *const *args)
{
    struct cli_opts opts = {.json = json, .envp = NULL, .timeout_ms = TIMEOUT_MS};
    return cli_run(g_home, &opts, args);
}

static bool write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return false;
    bool ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

/* Makes g_root/name with flow.js and manifest.json (either NULL: not written). */
static const char *flow_dir(const char *name, const void *script, size_t script_len,
                            const void *manifest, size_t manifest_len)
{
    static char bufs[8][PATH_MAX];
    static int next;
    char *dir = bufs[next++ % 8];
    char p[PATH_MAX + 32];
    sfmt(dir, PATH_MAX, "%s/%s", g_root, name);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        fail("flows: make a flow directory", "%s: %s", dir, strerror(errno));
    if (script != NULL) {
        sfmt(p, sizeof p, "%s/flow.js", dir);
        if (!write_bytes(p, script, script_len))
            fail("flows: write flow.js", "%s", p);
    }
    if (manifest != NULL) {
        sfmt(p, sizeof p, "%s/manifest.json", dir);
        if (!write_bytes(p, manifest, manifest_len))
            fail("flows: write manifest.json", "%s", p);
    }
    return dir;
}

static const char *manifest_text(const char *id, int version)
{
    static char bufs[4][512];
    static int next;
    char *b = bufs[next++ % 4];
    sfmt(b, 512, "{\"format\":1,\"id\":\"%s\",\"version\":%d,\"purpose\":\"p\","
                 "\"trigger\":{\"manual\":true}}\n", id, version);
    return b;
}

static const char *good_dir(const char *name, const char *id, int version)
{
    const char *m = manifest_text(id, version);
    return flow_dir(name, SCRIPT, strlen(SCRIPT), m, strlen(m));
}

static void hash_of(const char *script, const char *manifest, char out[CODE_HASH_HEX_LEN + 1])
{
    if (code_hash_hex(script, strlen(script), manifest, strlen(manifest), out) != 0)
        out[0] = '\0';
}

/* Every row of flows, flow_versions and approvals, every column (blobs in hex). */
static char *dump_rows(void)
{
    static const char *const SQL[] = {
        "SELECT * FROM flows ORDER BY id",
        "SELECT * FROM flow_versions ORDER BY flow_id, version",
        "SELECT * FROM approvals ORDER BY flow_id, version",
    };
    return store_dump(g_db, SQL, sizeof SQL / sizeof SQL[0]);
}

/* True if sql changed exactly one row. */
static bool sql_exec(const char *sql)
{
    return store_exec_changes(g_db, sql) == 1;
}

/* Runs args, expects exit code and a single stderr line containing want, and that the
 * stored rows are unchanged. */
static void refused_case(const char *name, int code, const char *want, const char *const *args)
{
    char *before = dump_rows();
    struct proc_result r = run_cli(false, args);
    char *after = dump_rows();
    char label[256];
    sfmt(label, sizeof label, "%s: exit %d, one line naming the problem", name, code);
    check(proc_exited_with(&r, code) && one_line(r.err) && strstr(r.err, want) != NULL &&
              r.out_len == 0,
          label, "%s; stderr \"%s\"; want \"%s\"", proc_describe(&r), r.err, want);
    sfmt(label, sizeof label, "%s: nothing stored changed [guard: bad input changes nothing]",
         name);
    check(before != NULL && after != NULL && strcmp(before, after) == 0, label,
          "rows differ");
    free(before);
    free(after);
    proc_result_free(&r);
}

/* The JSON array of flow list --json; NULL on failure. */
static json_t *list_json(void)
{
    const char *args[] = {"flow", "list", NULL};
    struct proc_result r = run_cli(true, args);
    json_t *a = proc_exited_with(&r, 0) ? cli_output_json(&r) : NULL;
    proc_result_free(&r);
    return a;
}

static json_t *list_entry(json_t *a, const char *id)
{
    size_t i;
    json_t *o;
    json_array_foreach(a, i, o) {
        if (strcmp(json_str_of(o, "id"), id) == 0)
            return o;
    }
    return NULL;
}

static char g_alpha_hash[CODE_HASH_HEX_LEN + 1];

static void test_install_and_approve(void)
{
    const char *dir = good_dir("alpha1", "alpha", 1);
    hash_of(SCRIPT, manifest_text("alpha", 1), g_alpha_hash);
    const char *args[] = {"flow", "install", dir, NULL};
    struct proc_result r = run_cli(false, args);
    char want[1024];
    sfmt(want, sizeof want,
         "installed flow alpha version 1 (pending approval)\ncode hash %s\n"
         "approve with: ck-basal flow approve alpha --version 1 --code-hash %s\n",
         g_alpha_hash, g_alpha_hash);
    check(proc_exited_with(&r, 0) && strcmp(r.out, want) == 0,
          "install: prints id, version and the code hash over the exact files", "%s / %s",
          proc_describe(&r), r.out);
    proc_result_free(&r);

    /* --json, for another flow. */
    const char *bdir = good_dir("beta1", "beta", 1);
    char bhash[CODE_HASH_HEX_LEN + 1];
    hash_of(SCRIPT, manifest_text("beta", 1), bhash);
    const char *bargs[] = {"flow", "install", bdir, NULL};
    r = run_cli(true, bargs);
    json_t *o = proc_exited_with(&r, 0) ? cli_output_json(&r) : NULL;
    check(strcmp(json_str_of(o, "id"), "beta") == 0 &&
              json_integer_value(json_object_get(o, "version")) == 1 &&
              strcmp(json_str_of(o, "code_hash"), bhash) == 0,
          "install --json: an object with id, version and code hash", "%s / %s",
          proc_describe(&r), r.out);
    json_decref(o);
    proc_result_free(&r);

    json_t *a = list_json();
    json_t *e = list_entry(a, "alpha");
    check(e != NULL && json_is_true(json_object_get(e, "enabled")) &&
              json_integer_value(json_object_get(e, "latest_version")) == 1 &&
              json_is_null(json_object_get(e, "approved_version")),
          "list: a new flow is enabled, latest 1, nothing approved", "%s",
          a != NULL ? "entry wrong" : "no list");
    json_decref(a);

    /* Refusals of approve. */
    char wrong[CODE_HASH_HEX_LEN + 1];
    memcpy(wrong, g_alpha_hash, sizeof wrong);
    wrong[0] = wrong[0] == '0' ? '1' : '0';
    const char *a1[] = {"flow", "approve", "alpha", "--version", "1", "--code-hash", wrong, NULL};
    refused_case("approve with a wrong hash", 1, "does not match", a1);
    const char *a2[] = {"flow", "approve", "alpha", "--version", "2", "--code-hash", g_alpha_hash,
                        NULL};
    refused_case("approve an unknown version", 1, "no version 2", a2);
    const char *a3[] = {"flow", "approve", "nosuch", "--version", "1", "--code-hash",
                        g_alpha_hash, NULL};
    refused_case("approve an unknown flow", 1, "unknown flow 'nosuch'", a3);
    char upper[CODE_HASH_HEX_LEN + 1];
    for (size_t i = 0; i <= CODE_HASH_HEX_LEN; i++)
        upper[i] = (char)(g_alpha_hash[i] >= 'a' && g_alpha_hash[i] <= 'f'
                              ? g_alpha_hash[i] - 'a' + 'A'
                              : g_alpha_hash[i]);
    const char *a4[] = {"flow", "approve", "alpha", "--version", "1", "--code-hash", "abc123",
                        NULL};
    refused_case("approve with a malformed (short) hash", 1, "--code-hash", a4);
    if (strcmp(upper, g_alpha_hash) != 0) {
        const char *a5[] = {"flow", "approve", "alpha", "--version", "1", "--code-hash", upper,
                            NULL};
        refused_case("approve with an uppercase hash", 1, "--code-hash", a5);
    }
    const char *a6[] = {"flow", "approve", "alpha", "--version", "1", NULL};
    refused_case("approve without --code-hash", 2, "--code-hash", a6);
    const char *a7[] = {"flow", "approve", "alpha", "--code-hash", g_alpha_hash, NULL};
    refused_case("approve without --version", 2, "--version", a7);
    const char *a8[] = {"flow", "approve", "alpha", "--version", "x1", "--code-hash",
                        g_alpha_hash, NULL};
    refused_case("approve with a non-numeric version", 2, "--version", a8);

    /* The right hash. */
    const char *ok[] = {"flow", "approve", "alpha", "--version", "1", "--code-hash",
                        g_alpha_hash, NULL};
    r = run_cli(false, ok);
    check(proc_exited_with(&r, 0) && strstr(r.out, "approved flow alpha version 1") != NULL,
          "approve: the right hash is accepted", "%s / %s", proc_describe(&r), r.out);
    proc_result_free(&r);
    a = list_json();
    e = list_entry(a, "alpha");
    check(e != NULL && json_integer_value(json_object_get(e, "approved_version")) == 1 &&
              strcmp(json_str_of(e, "approved_code_hash"), g_alpha_hash) == 0,
          "list --json: alpha shows approved version 1 with its hash", "entry %s",
          e != NULL ? "wrong" : "missing");
    json_decref(a);
    const char *lh[] = {"flow", "list", NULL};
    r = run_cli(false, lh);
    char row[256], short_hash[13];
    snprintf(short_hash, sizeof short_hash, "%.12s", g_alpha_hash);
    sfmt(row, sizeof row, "alpha                    yes      1       1        %s -", short_hash);
    size_t widest = 0;
    for (const char *line = r.out; *line != '\0';) {
        size_t len = strcspn(line, "\n");
        widest = len > widest ? len : widest;
        line += len + (line[len] == '\n');
    }
    check(proc_exited_with(&r, 0) &&
              output_has_line_prefix(r.out, "ID                       ENABLED  LATEST  APPROVED CODE HASH    NEXT FIRE") &&
              output_has_line_prefix(r.out, row) && strstr(r.out, g_alpha_hash) == NULL && widest < 100,
          "list: the human table shows alpha approved, 12 hex digits of its hash, one header per column, "
          "under 100 columns", "%s / %s", proc_describe(&r), r.out);
    proc_result_free(&r);
    /* flow show: one flow, the hashes whole; --json is flow list --json's entry. */
    const char *show[] = {"flow", "show", "alpha", NULL};
    r = run_cli(false, show);
    char want_hash[128];
    sfmt(want_hash, sizeof want_hash, "approved code hash  %s", g_alpha_hash);
    check(proc_exited_with(&r, 0) && output_has_line_prefix(r.out, "flow                alpha") &&
              output_has_line_prefix(r.out, want_hash) &&
              output_has_line_prefix(r.out, "approved version    1") &&
              output_has_line_prefix(r.out, "latest version      1 (approved)"),
          "show: alpha with its version and whole approved hash", "%s / %s", proc_describe(&r), r.out);
    proc_result_free(&r);
    r = run_cli(true, show);
    json_t *shown = proc_exited_with(&r, 0) ? cli_output_json(&r) : NULL;
    a = list_json();
    check(shown != NULL && json_equal(shown, list_entry(a, "alpha")),
          "show --json: the same object as alpha's entry of list --json", "%s / %s", proc_describe(&r), r.out);
    json_decref(shown);
    json_decref(a);
    proc_result_free(&r);
    const char *show_none[] = {"flow", "show", "nosuch", NULL};
    refused_case("show an unknown flow", 1, "unknown flow 'nosuch'", show_none);
    const char *show_bare[] = {"flow", "show", NULL};
    refused_case("show without an id", 2, "show takes one flow id", show_bare);
    refused_case("approve an already approved version", 1, "already approved", ok);

    /* Versions must rise. */
    const char *again[] = {"flow", "install", dir, NULL};
    refused_case("install of the approved version again", 1, "not above", again);
    const char *bagain[] = {"flow", "install", bdir, NULL};
    refused_case("install of a pending version again", 1, "not above", bagain);
}

static void test_tampered_pending(void)
{
    const char *dir = good_dir("alpha2", "alpha", 2);
    char hash[CODE_HASH_HEX_LEN + 1];
    hash_of(SCRIPT, manifest_text("alpha", 2), hash);
    const char *args[] = {"flow", "install", dir, NULL};
    struct proc_result r = run_cli(false, args);
    check(proc_exited_with(&r, 0) && strstr(r.out, hash) != NULL,
          "install: version 2 above the approved 1 is accepted", "%s / %s", proc_describe(&r),
          r.out);
    proc_result_free(&r);
    const char *lower[] = {"flow", "install", good_dir("alpha1b", "alpha", 1), NULL};
    refused_case("install of version 1 below 2", 1, "not above version 2", lower);
    check(sql_exec("UPDATE flow_versions SET script = CAST('export default 2;' AS BLOB)"
                   " WHERE flow_id = 'alpha' AND version = 2"),
          "tamper: the pending script row is altered with sqlite3", "update failed");
    const char *ap[] = {"flow", "approve", "alpha", "--version", "2", "--code-hash", hash, NULL};
    refused_case("approve of a row altered in the store", 1, "altered", ap);
}

static void test_bad_inputs(void)
{
    const char *m = manifest_text("gamma", 1);
    size_t ml = strlen(m);
    struct {
        const char *name;
        const char *dirname;
        const char *script;
        const char *manifest;
        const char *want;
    } cases[] = {
        {"install: malformed manifest", "bad1", SCRIPT, "{\"format\":1,", "manifest"},
        {"install: duplicate key", "bad2", SCRIPT,
         "{\"format\":1,\"id\":\"gamma\",\"id\":\"gamma\",\"version\":1,\"purpose\":\"p\","
         "\"trigger\":{\"manual\":true}}", "manifest"},
        {"install: unknown field", "bad3", SCRIPT,
         "{\"format\":1,\"id\":\"gamma\",\"version\":1,\"purpose\":\"p\","
         "\"trigger\":{\"manual\":true},\"colour\":\"red\"}", "colour"},
        {"install: invalid UTF-8 in the script", "bad4", "export default '\xff\xfe';\n", m,
         "script"},
        {"install: invalid UTF-8 in the manifest", "bad5", SCRIPT,
         "{\"format\":1,\"id\":\"gamma\",\"version\":1,\"purpose\":\"p\xc3\x28\","
         "\"trigger\":{\"manual\":true}}", "manifest"},
        {"install: missing flow.js", "bad6", NULL, m, "flow.js"},
        {"install: missing manifest.json", "bad7", SCRIPT, NULL, "manifest"},
        {"install: empty script", "bad8", "", m, "script"},
        /* A confined worker compiles the script before anything is stored
         * [guard install-compiles]; the error names the file, line and column. */
        {"install: a script that does not compile [guard install-compiles]", "bad10",
         "const a = 1;\nlet b = ;\nreturn a;\n", m,
         "the script does not compile: syntax error: SyntaxError: unexpected token in expression"},
        {"install: a script that does not compile names file, line and column", "bad11",
         "const a = 1;\nlet b = ;\nreturn a;\n", m, "/bad11/flow.js:2:9)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t sl = cases[i].script != NULL ? strlen(cases[i].script) : 0;
        size_t mlen = cases[i].manifest != NULL ? strlen(cases[i].manifest) : 0;
        const char *dir = flow_dir(cases[i].dirname, cases[i].script, sl, cases[i].manifest, mlen);
        const char *args[] = {"flow", "install", dir, NULL};
        refused_case(cases[i].name, 1, cases[i].want, args);
    }

    /* Compiling runs none of the script: an endless loop at its top installs at once. */
    const char *loop_m = manifest_text("looping", 1);
    const char *loop_dir = flow_dir("loop", "for (;;) {}\nreturn 1;\n", 22, loop_m, strlen(loop_m));
    const char *loop_args[] = {"flow", "install", loop_dir, NULL};
    struct proc_result lr = run_cli(false, loop_args);
    check(proc_exited_with(&lr, 0) && strstr(lr.out, "installed flow looping version 1") != NULL,
          "install: the compile check runs none of the script (an endless loop installs)", "%s / %s",
          proc_describe(&lr), lr.err);
    proc_result_free(&lr);

    /* Oversized manifest: a valid document padded past 64 KiB. */
    size_t big = MANIFEST_MAX_BYTES + 1;
    char *pad = malloc(big);
    if (pad != NULL) {
        memset(pad, ' ', big);
        for (size_t i = 0; i + 1 < ml; i++) /* the document, then spaces */
            pad[i] = m[i];
        const char *dir = flow_dir("bad9", SCRIPT, strlen(SCRIPT), pad, big);
        const char *args[] = {"flow", "install", dir, NULL};
        refused_case("install: oversized manifest", 1, "bytes allowed", args);
        free(pad);
    }
    /* Oversized script: 1 MiB + 1 of a comment. */
    size_t sbig = PROTO_MAX_SCRIPT_BYTES + 1;
    char *sp = malloc(sbig);
    if (sp != NULL) {
        memset(sp, 'x', sbig);
        sp[0] = '/';
        sp[1] = '/';
        const char *dir = flow_dir("bad10", sp, sbig, m, ml);
        const char *args[] = {"flow", "install", dir, NULL};
        refused_case("install: oversized script", 1, "flow.js", args);
        free(sp);
    }
    char missing[PATH_MAX];
    sfmt(missing, sizeof missing, "%s/no-such-dir", g_root);
    const char *nodir[] = {"flow", "install", missing, NULL};
    refused_case("install: missing directory", 1, "no-such-dir", nodir);
    const char *noarg[] = {"flow", "install", NULL};
    refused_case("install: no directory given", 2, "install", noarg);
    const char *nosub[] = {"flow", NULL};
    refused_case("flow: no subcommand", 2, "subcommand", nosub);
    const char *badsub[] = {"flow", "frobnicate", NULL};
    refused_case("flow: unknown subcommand", 2, "frobnicate", badsub);
    const char *dis[] = {"flow", "disable", "nosuch", NULL};
    refused_case("disable an unknown flow", 1, "unknown flow 'nosuch'", dis);
    const char *en[] = {"flow", "enable", "nosuch", NULL};
    refused_case("enable an unknown flow", 1, "unknown flow 'nosuch'", en);
}

static void test_toggle(void)
{
    const char *dis[] = {"flow", "disable", "alpha", NULL};
    const char *en[] = {"flow", "enable", "alpha", NULL};
    const char *lh[] = {"flow", "list", NULL};
    struct proc_result r = run_cli(false, dis);
    check(proc_exited_with(&r, 0) && strcmp(r.out, "flow alpha disabled\n") == 0,
          "disable: alpha disabled", "%s / %s", proc_describe(&r), r.out);
    proc_result_free(&r);
    r = run_cli(false, lh);
    check(proc_exited_with(&r, 0) && output_has_line_prefix(r.out, "alpha                    no "),
          "list: alpha shows enabled no", "%s", r.out);
    proc_result_free(&r);
    r = run_cli(false, en);
    check(proc_exited_with(&r, 0) && strcmp(r.out, "flow alpha enabled\n") == 0,
          "enable: alpha enabled", "%s / %s", proc_describe(&r), r.out);
    proc_result_free(&r);
    r = run_cli(false, lh);
    check(proc_exited_with(&r, 0) && output_has_line_prefix(r.out, "alpha                    yes "),
          "list: alpha shows enabled yes again", "%s", r.out);
    proc_result_free(&r);
}

static void expect_runnable(struct store *st, const char *id, bool ok, const char *want,
                            const char *name)
{
    int64_t v = -1;
    struct flow_blob s, m;
    char err[512] = "";
    int rc = flows_runnable(st, id, &v, &s, &m, err, sizeof err);
    if (ok)
        check(rc == 0 && v == 1 && s.len == strlen(SCRIPT) && memcmp(s.bytes, SCRIPT, s.len) == 0,
              name, "rc %d version %lld: %s", rc, (long long)v, err);
    else
        check(rc == -1 && strstr(err, want) != NULL && strchr(err, '\n') == NULL &&
                  s.bytes == NULL && m.bytes == NULL,
              name, "rc %d: \"%s\", want \"%s\"", rc, err, want);
    flows_blob_free(&s);
    flows_blob_free(&m);
}

static void test_runnable(void)
{
    /* gamma: installed and approved, then its manifest altered by one byte. */
    const char *dir = good_dir("gamma1", "gamma", 1);
    char hash[CODE_HASH_HEX_LEN + 1];
    hash_of(SCRIPT, manifest_text("gamma", 1), hash);
    const char *in[] = {"flow", "install", dir, NULL};
    const char *ap[] = {"flow", "approve", "gamma", "--version", "1", "--code-hash", hash, NULL};
    struct proc_result r = run_cli(false, in);
    proc_result_free(&r);
    r = run_cli(false, ap);
    check(proc_exited_with(&r, 0), "runnable: gamma installed and approved", "%s",
          proc_describe(&r));
    proc_result_free(&r);

    struct store *st = NULL;
    char err[512];
    if (!check(store_open(g_home, &st, err, sizeof err) == 0, "runnable: store opens", "%s",
               err))
        return;
    expect_runnable(st, "alpha", true, "", "runnable: the approved flow is accepted");
    expect_runnable(st, "gamma", true, "", "runnable: gamma accepted before tampering");
    expect_runnable(st, "beta", false, "no approved version",
                    "runnable: an unapproved flow is refused");
    expect_runnable(st, "nosuch", false, "unknown flow", "runnable: an unknown flow is refused");
    store_close(st);

    const char *dis[] = {"flow", "disable", "alpha", NULL};
    r = run_cli(false, dis);
    proc_result_free(&r);
    check(sql_exec("UPDATE flow_versions SET manifest = CAST(replace(CAST(manifest AS TEXT),"
                   " '\"purpose\":\"p\"', '\"purpose\":\"q\"') AS BLOB)"
                   " WHERE flow_id = 'gamma' AND version = 1"),
          "tamper: gamma's approved manifest altered by one byte with sqlite3", "update failed");
    if (!check(store_open(g_home, &st, err, sizeof err) == 0, "runnable: store reopens", "%s",
               err))
        return;
    expect_runnable(st, "alpha", false, "disabled", "runnable: a disabled flow is refused");
    expect_runnable(st, "gamma", false, "not the approved",
                    "runnable: a manifest altered by one byte after approval is refused "
                    "[guard: code hash rechecked before a run]");
    store_close(st);
    const char *en[] = {"flow", "enable", "alpha", NULL};
    r = run_cli(false, en);
    proc_result_free(&r);
    if (store_open(g_home, &st, err, sizeof err) == 0) {
        expect_runnable(st, "alpha", true, "", "runnable: accepted again once re-enabled");
        store_close(st);
    }
}

int main(void)
{
    if (!require_binary(harness_test_parent(), "flows: test parent built"))
        return harness_finish();
    snprintf(g_root, sizeof g_root, "%s/t_flows.XXXXXX", harness_tmp_root());
    if (mkdtemp(g_root) == NULL) {
        fail("flows: temp directory", "%s", strerror(errno));
        return harness_finish();
    }
    sfmt(g_home, sizeof g_home, "%s/home", g_root);
    sfmt(g_db, sizeof g_db, "%s/basal.db", g_home);
    const char *setup[] = {"setup", NULL};
    struct proc_result r = run_cli(false, setup);
    bool ready = check(proc_exited_with(&r, 0), "flows: setup makes the data home", "%s",
                       proc_describe(&r));
    proc_result_free(&r);
    if (ready) {
        test_install_and_approve();
        test_tampered_pending();
        test_bad_inputs();
        test_toggle();
        test_runnable();
    }
    harness_remove_tree(g_root);
    return harness_finish();
}
