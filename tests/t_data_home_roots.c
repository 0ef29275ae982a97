/* fs roots that are never granted, through the real ck-basal (host/fs_builtin.h,
 * fs_root_allowed): a flow granted a root that holds the data home could rewrite the
 * module catalog (modules.json) and have the next run start any program as the
 * operator; roots on /proc or /sys would show the parent's own environment and memory.
 *
 *   1. `flow install` refuses a manifest whose fs.read, fs.write or git.read root is
 *      the data home, lies inside it, holds it (also through a symbolic link), is "/"
 *      for writing, or lies under /proc or /sys: exit 1, one line on stderr naming the
 *      field, the root and the reason, nothing on stdout, nothing stored. Control: the
 *      same flow with ordinary roots installs [guard data-home-roots at install].
 *   2. `flow approve` checks again: a root replaced by a link to the data home after
 *      install is refused, and the version stays pending [guard data-home-roots at
 *      approve].
 *   3. every fs call checks again: a flow approved with an ordinary write root, whose
 *      data home the operator later moved under that root, cannot write the module
 *      catalog there; the call is denied naming the root and the reason, the run ends
 *      with the script's own result, and nothing is written. Control: before the move
 *      the same write root works [guard data-home-roots at every call]. */
#include "lib/cli_home.h"
#include "lib/harness.h"
#include "lib/store_view.h"

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

static char g_dir[PATH_MAX / 2]; /* this test's directory, resolved */
static char g_home[PATH_MAX + 16]; /* the data home of the current step */

static bool make_dir(const char *path)
{
    if (mkdir(path, 0755) == 0 || errno == EEXIST)
        return true;
    fail("data home roots: mkdir", "%s: %s", path, strerror(errno));
    return false;
}

/* ck-basal [--json] --home g_home args... */
static struct proc_result cli(bool json, const char *const *args)
{
    return cli_home(g_home, json, args);
}

/* One number from the store of g_home; -1 if it cannot be read. */
static long long sql_number(const char *sql)
{
    char db[PATH_MAX + 16];
    sfmt(db, sizeof db, "%s/basal.db", g_home);
    return store_number(db, sql);
}

static bool setup_home(const char *home)
{
    snprintf(g_home, sizeof g_home, "%s", home);
    struct proc_result r = cli(false, ARGS("setup"));
    bool ok = check(proc_exited_with(&r, 0), "data home roots: setup", "%s", proc_describe(&r));
    proc_result_free(&r);
    return ok;
}

/* A flow directory dir holding script and a manifest with the given grants. */
static bool write_flow(const char *dir, const char *id, const char *grants, const char *script)
{
    char manifest[8192];
    sfmt(manifest, sizeof manifest,
         "{\"format\":1,\"id\":\"%s\",\"version\":1,\"purpose\":\"test\","
         "\"trigger\":{\"manual\":true},%s}", id, grants);
    return make_dir(dir) && flow_dir_write(dir, manifest, script);
}

/* Installs and approves dir; false after a failed check. */
static bool install_and_approve(const char *dir, const char *id, const char *what)
{
    char name[200], why[1024];
    enum flow_added step = cli_install_approve(g_home, HARNESS_EMPTY_ENV, dir, id, 1, why, sizeof why);
    sfmt(name, sizeof name, "%s: install", what);
    if (!check(step != FLOW_INSTALL_FAILED, name, "%s", why))
        return false;
    sfmt(name, sizeof name, "%s: approve", what);
    return check(step == FLOW_ADDED, name, "%s", why);
}

/* stderr is exactly one line containing every needle. */
static bool one_line_with(const char *err, const char *a, const char *b)
{
    const char *nl = strchr(err, '\n');
    return nl != NULL && nl[1] == '\0' && strstr(err, a) != NULL && strstr(err, b) != NULL;
}

/* ---- 1. install ---------------------------------------------------------------------- */

static void expect_install_refused(const char *grants, const char *field_and_root,
                                   const char *reason, const char *what)
{
    char dir[PATH_MAX], name[300];
    sfmt(dir, sizeof dir, "%s/refused-flow", g_dir);
    if (!write_flow(dir, "refused", grants, "return 1;\n"))
        return;
    long long before = sql_number("SELECT count(*) FROM flow_versions");
    struct proc_result r = cli(false, ARGS("flow", "install", dir));
    sfmt(name, sizeof name,
         "install: %s refused with one line naming the root and the reason "
         "[guard data-home-roots at install]", what);
    check(proc_exited_with(&r, 1) && r.out_len == 0 &&
              one_line_with(r.err, field_and_root, reason),
          name, "%s; stderr \"%s\" (want \"%s\" and \"%s\")", proc_describe(&r), r.err,
          field_and_root, reason);
    proc_result_free(&r);
    sfmt(name, sizeof name, "install: %s stores nothing", what);
    check(before == 0 && sql_number("SELECT count(*) FROM flow_versions") == 0 &&
              sql_number("SELECT count(*) FROM flows") == 0,
          name, "flow_versions %lld before, %lld after; flows %lld", before,
          sql_number("SELECT count(*) FROM flow_versions"),
          sql_number("SELECT count(*) FROM flows"));
}

static void test_install(void)
{
    char home[PATH_MAX], inside[PATH_MAX + 8], link[PATH_MAX], ok_read[PATH_MAX],
        ok_write[PATH_MAX], grants[4 * PATH_MAX], want[2 * PATH_MAX];
    sfmt(home, sizeof home, "%s/install-home", g_dir);
    if (!setup_home(home))
        return;
    sfmt(inside, sizeof inside, "%s/inside", home);
    sfmt(link, sizeof link, "%s/link-to-home", g_dir);
    sfmt(ok_read, sizeof ok_read, "%s/notes", g_dir);
    sfmt(ok_write, sizeof ok_write, "%s/out", g_dir);
    if (!make_dir(inside) || !make_dir(ok_read) || !make_dir(ok_write))
        return;
    if (symlink(home, link) != 0) {
        fail("install: setup link", "%s", strerror(errno));
        return;
    }

    sfmt(grants, sizeof grants, "\"fs\":{\"read\":[\"%s\"],\"write\":[\"%s\"]}", ok_read, g_dir);
    sfmt(want, sizeof want, "manifest.fs.write[0]: '%s'", g_dir);
    expect_install_refused(grants, want, "contains basal's data home",
                           "a write root holding the data home");
    sfmt(grants, sizeof grants, "\"fs\":{\"read\":[\"%s\"]}", home);
    sfmt(want, sizeof want, "manifest.fs.read[0]: '%s'", home);
    expect_install_refused(grants, want, "is basal's data home", "the data home as a read root");
    sfmt(grants, sizeof grants, "\"fs\":{\"read\":[\"%s\",\"%s\"]}", ok_read, inside);
    sfmt(want, sizeof want, "manifest.fs.read[1]: '%s'", inside);
    expect_install_refused(grants, want, "lies inside basal's data home",
                           "a read root inside the data home");
    sfmt(grants, sizeof grants, "\"fs\":{\"read\":[\"%s\"]}", link);
    sfmt(want, sizeof want, "manifest.fs.read[0]: '%s'", home);
    expect_install_refused(grants, want, "is basal's data home",
                           "a read root that is a link to the data home");
    expect_install_refused("\"fs\":{\"write\":[\"/\"]}", "manifest.fs.write[0]: '/'",
                           "whole file system", "'/' as a write root");
    expect_install_refused("\"fs\":{\"read\":[\"/\"]}", "manifest.fs.read[0]: '/'",
                           "contains basal's data home", "'/' as a read root");
    expect_install_refused("\"fs\":{\"read\":[\"/proc/self\"]}", "manifest.fs.read[0]: '/proc/",
                           "lies under /proc", "a read root under /proc");
    expect_install_refused("\"fs\":{\"read\":[\"/sys/kernel\"]}",
                           "manifest.fs.read[0]: '/sys/kernel'", "lies under /sys",
                           "a read root under /sys");
    sfmt(grants, sizeof grants, "\"git\":{\"read\":[\"%s\"]}", g_dir);
    sfmt(want, sizeof want, "manifest.git.read[0]: '%s'", g_dir);
    expect_install_refused(grants, want, "contains basal's data home",
                           "a git.read root holding the data home");

    char dir[PATH_MAX];
    sfmt(dir, sizeof dir, "%s/fine-flow", g_dir);
    sfmt(grants, sizeof grants, "\"fs\":{\"read\":[\"%s\"],\"write\":[\"%s\"]}", ok_read,
         ok_write);
    if (write_flow(dir, "fine", grants, "return 1;\n"))
        install_and_approve(dir, "fine", "install: ordinary roots (control)");
}

/* ---- 2. approve ---------------------------------------------------------------------- */

static void test_approve(void)
{
    char home[PATH_MAX], root[PATH_MAX], dir[PATH_MAX], grants[2 * PATH_MAX];
    sfmt(home, sizeof home, "%s/approve-home", g_dir);
    sfmt(root, sizeof root, "%s/approve-root", g_dir);
    sfmt(dir, sizeof dir, "%s/approve-flow", g_dir);
    if (!setup_home(home) || !make_dir(root))
        return;
    sfmt(grants, sizeof grants, "\"fs\":{\"read\":[\"%s\"]}", root);
    if (!write_flow(dir, "later", grants, "return 1;\n"))
        return;
    struct proc_result r = cli(true, ARGS("flow", "install", dir));
    json_t *in = proc_exited_with(&r, 0) ? cli_output_json(&r) : NULL;
    char hash[80] = "";
    if (json_string_value(json_object_get(in, "code_hash")) != NULL)
        sfmt(hash, sizeof hash, "%s", json_string_value(json_object_get(in, "code_hash")));
    check(hash[0] != '\0', "approve: an ordinary read root installs (control)", "%s: %s",
          proc_describe(&r), r.err);
    json_decref(in);
    proc_result_free(&r);
    /* After install, the root becomes a link to the data home. */
    if (rmdir(root) != 0 || symlink(home, root) != 0) {
        fail("approve: setup relink", "%s", strerror(errno));
        return;
    }
    r = cli(false, ARGS("flow", "approve", "later", "--version", "1", "--code-hash", hash));
    char want[PATH_MAX];
    sfmt(want, sizeof want, "manifest.fs.read[0]: '%s'", home);
    check(proc_exited_with(&r, 1) && r.out_len == 0 &&
              one_line_with(r.err, want, "is basal's data home"),
          "approve: a root relinked to the data home since install is refused "
          "[guard data-home-roots at approve]",
          "%s; stderr \"%s\"", proc_describe(&r), r.err);
    proc_result_free(&r);
    check(sql_number("SELECT count(*) FROM flow_versions WHERE state = 'pending'") == 1 &&
              sql_number("SELECT count(*) FROM approvals") == 0,
          "approve: the refused version stays pending, no approval stored", "pending %lld",
          sql_number("SELECT count(*) FROM flow_versions WHERE state = 'pending'"));
}

/* ---- 3. every call ------------------------------------------------------------------- */

/* The script: writes a file into the write root, or a catalog into the data home when
 * the trigger says so, and returns what happened. */
static const char *WRITER =
    "let code = null, message = null;\n"
    "try { await fs.write(trigger.path, trigger.text); }\n"
    "catch (e) { code = e.data && e.data.code; message = e.message; }\n"
    "return {code, message};\n";

/* Runs flow "writer" with a trigger {path, text}; returns the run's JSON (or NULL). */
static json_t *run_writer(const char *path, const char *text, const char *what)
{
    char trigger[2 * PATH_MAX];
    sfmt(trigger, sizeof trigger, "{\"path\":\"%s\",\"text\":\"%s\"}", path, text);
    struct proc_result r = cli(true, ARGS("run", "writer", "--trigger", trigger));
    json_t *v = cli_output_json(&r);
    char name[200];
    sfmt(name, sizeof name, "%s: the run succeeds with the script's result", what);
    const char *state = json_string_value(json_object_get(v, "state"));
    if (!check(proc_exited_with(&r, 0) && state != NULL && strcmp(state, "succeeded") == 0, name,
               "%s; stdout %s; stderr %s", proc_describe(&r), r.out, r.err)) {
        json_decref(v);
        v = NULL;
    }
    proc_result_free(&r);
    return v;
}

static void test_every_call(void)
{
    char first_home[PATH_MAX], out[PATH_MAX], moved_home[PATH_MAX + 8], dir[PATH_MAX],
        grants[2 * PATH_MAX], path[PATH_MAX + 32];
    sfmt(first_home, sizeof first_home, "%s/call-home", g_dir);
    sfmt(out, sizeof out, "%s/call-out", g_dir);
    sfmt(moved_home, sizeof moved_home, "%s/home", out);
    sfmt(dir, sizeof dir, "%s/call-flow", g_dir);
    if (!setup_home(first_home) || !make_dir(out))
        return;
    sfmt(grants, sizeof grants, "\"fs\":{\"write\":[\"%s\"]}", out);
    if (!write_flow(dir, "writer", grants, WRITER) ||
        !install_and_approve(dir, "writer", "every call: setup"))
        return;

    sfmt(path, sizeof path, "%s/ok.txt", out);
    json_t *v = run_writer(path, "fine", "every call: control before the move");
    const json_t *result = json_object_get(v, "result");
    check(v != NULL && json_is_null(json_object_get(result, "code")) &&
              access(path, F_OK) == 0,
          "every call: the write root works before the data home moves (control)",
          "code %s, message %s", json_string_value(json_object_get(result, "code")) ?: "-",
          json_string_value(json_object_get(result, "message")) ?: "-");
    json_decref(v);

    /* The operator moves the data home under the write root and goes on using it. */
    if (rename(first_home, moved_home) != 0) {
        fail("every call: move the data home", "%s", strerror(errno));
        return;
    }
    snprintf(g_home, sizeof g_home, "%s", moved_home);
    sfmt(path, sizeof path, "%s/modules.json", moved_home);
    v = run_writer(path, "{}", "every call: after the move");
    result = json_object_get(v, "result");
    const char *code = json_string_value(json_object_get(result, "code"));
    const char *message = json_string_value(json_object_get(result, "message"));
    char want[PATH_MAX + 64];
    sfmt(want, sizeof want, "the granted write root '%s' contains basal's data home", out);
    check(code != NULL && strcmp(code, "denied") == 0 && message != NULL &&
              strstr(message, want) != NULL,
          "every call: writing the catalog into a data home moved under the write root is "
          "denied at the call [guard data-home-roots at every call]",
          "code %s, message %s (want \"%s\")", code != NULL ? code : "-",
          message != NULL ? message : "-", want);
    check(access(path, F_OK) != 0 && errno == ENOENT,
          "every call: no module catalog was written into the data home",
          "%s exists", path);
    json_decref(v);
}

int main(void)
{
    if (!require_binary(harness_test_parent(), "ck-basal"))
        return harness_finish();
    if (!harness_real_tmpdir("data-home-roots", g_dir, sizeof g_dir))
        return harness_finish();
    test_install();
    test_approve();
    test_every_call();
    harness_remove_tree(g_dir);
    return harness_finish();
}
