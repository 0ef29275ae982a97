/* The data home and the store (basal.md sections 1, 6 and 8).
 *
 * Drives the real binary (`ck-basal --home DIR setup`) and the store API:
 *   - setup creates the data home and its missing parents 0700, basal.db 0600 (and
 *     -wal/-shm 0600 when present) [guard: owner-only data home];
 *   - an existing wider home (0755) is narrowed to 0700 and the output says so;
 *   - a home that is a symbolic link is refused, nothing made behind it [guard: no
 *     symlinked data home];
 *   - setup twice is idempotent; the default home follows XDG_DATA_HOME, then HOME,
 *     and neither is a clear refusal;
 *   - WAL, synchronous=FULL and foreign keys are in force; health counters persist;
 *     a rolled-back transaction leaves nothing;
 *   - a store whose user_version is above the build's is refused by the API and by
 *     setup with one line naming both versions, and its version is left unchanged
 *     [guard: newer store refused];
 *   - setup --json parses and names the kernel's Landlock ABI and seccomp answer. */
#include "lib/cli_home.h"
#include "lib/harness.h"
#include "lib/store_view.h"

#include "store/datahome.h"
#include "store/flow_registry.h"
#include "supervisor/kernel_facts.h"
#include "store/store.h"
#include "store/store_schema.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TIMEOUT_MS 20000

static char g_root[256];

static const char *tmp_path(const char *rel)
{
    static char bufs[8][PATH_MAX];
    static int next;
    char *b = bufs[next++ % 8];
    if ((size_t)snprintf(b, PATH_MAX, "%s/%s", g_root, rel) >= PATH_MAX)
        b[0] = '\0';
    return b;
}

static int mode_of(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

static struct proc_result setup_env(const char *home, bool json, char *const *envp)
{
    struct cli_opts opts = {.json = json, .envp = envp, .timeout_ms = TIMEOUT_MS};
    return cli_run(home, &opts, ARGS("setup"));
}

static struct proc_result setup(const char *home, bool json)
{
    return setup_env(home, json, NULL);
}

static bool one_line(const char *text)
{
    size_t len = strlen(text);
    return len > 0 && text[len - 1] == '\n' && memchr(text, '\n', len - 1) == NULL;
}

static int user_version_of(const char *db_path)
{
    return (int)store_number(db_path, "PRAGMA user_version");
}

static void check_files_owner_only(const char *home, const char *label)
{
    char name[256], p[PATH_MAX];
    snprintf(name, sizeof name, "%s: data home is 0700 [guard: owner-only data home]", label);
    check(mode_of(home) == 0700, name, "mode %04o", (unsigned)mode_of(home));
    snprintf(p, sizeof p, "%s/basal.db", home);
    snprintf(name, sizeof name, "%s: basal.db is 0600", label);
    check(mode_of(p) == 0600, name, "mode %04o", (unsigned)mode_of(p));
    static const char *const SUFFIX[] = {"-wal", "-shm"};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/basal.db%s", home, SUFFIX[i]);
        int m = mode_of(p);
        snprintf(name, sizeof name, "%s: basal.db%s is 0600 if present", label, SUFFIX[i]);
        check(m == -1 || m == 0600, name, "mode %04o", (unsigned)m);
    }
}

static void test_fresh_and_idempotent(void)
{
    const char *home = tmp_path("fresh/cortexkit/basal");
    struct proc_result r = setup(home, false);
    if (check(proc_exited_with(&r, 0), "setup: fresh home exits 0", "%s", proc_describe(&r))) {
        char line[PATH_MAX + 32];
        snprintf(line, sizeof line, "data home: %s", home);
        check(output_has_line(r.out, line), "setup: output names the data home", "%s", r.out);
        check(strstr(r.out, "owner-only") != NULL, "setup: output says owner-only", "%s", r.out);
        char version[64];
        snprintf(version, sizeof version, "schema version %d", STORE_SCHEMA_VERSION);
        check(strstr(r.out, version) != NULL, "setup: output names the schema version", "%s",
              r.out);
        check(strstr(r.out, "KILL_PROCESS") != NULL && strstr(r.out, "Landlock") != NULL,
              "setup: output says what the kernel offers", "%s", r.out);
    }
    proc_result_free(&r);
    check_files_owner_only(home, "setup fresh");
    check(mode_of(tmp_path("fresh/cortexkit")) == 0700, "setup: created parent is 0700",
          "mode %04o", (unsigned)mode_of(tmp_path("fresh/cortexkit")));

    r = setup(home, false);
    check(proc_exited_with(&r, 0) && strstr(r.out, "up to date") != NULL &&
              strstr(r.out, "narrowed") == NULL,
          "setup: twice is idempotent (exit 0, up to date, nothing narrowed)", "%s / %s",
          proc_describe(&r), r.out);
    proc_result_free(&r);
    check_files_owner_only(home, "setup twice");
    char db[PATH_MAX];
    snprintf(db, sizeof db, "%s/basal.db", home);
    check_int_eq(user_version_of(db), STORE_SCHEMA_VERSION, "setup twice: user_version is the build's");
}

static void test_narrow(void)
{
    const char *home = tmp_path("wide");
    if (mkdir(home, 0755) != 0 || chmod(home, 0755) != 0) {
        fail("setup: narrow a 0755 home", "mkdir: %s", strerror(errno));
        return;
    }
    struct proc_result r = setup(home, false);
    check(proc_exited_with(&r, 0) && strstr(r.out, "narrowed from 0755") != NULL,
          "setup: a 0755 home is narrowed and the output says so", "%s / %s",
          proc_describe(&r), r.out);
    proc_result_free(&r);
    check_files_owner_only(home, "setup narrowed");

    /* The same through --json. */
    const char *home2 = tmp_path("wide2");
    if (mkdir(home2, 0750) != 0 || chmod(home2, 0750) != 0) {
        fail("setup --json: narrow a 0750 home", "mkdir: %s", strerror(errno));
        return;
    }
    r = setup(home2, true);
    json_t *o = proc_exited_with(&r, 0) ? cli_output_json(&r) : NULL;
    json_t *h = json_object_get(o, "data_home");
    check(json_is_true(json_object_get(h, "narrowed")) &&
              strcmp(json_string_value(json_object_get(h, "narrowed_from")) != NULL
                         ? json_string_value(json_object_get(h, "narrowed_from"))
                         : "",
                     "0750") == 0 &&
              mode_of(home2) == 0700,
          "setup --json: a 0750 home is narrowed to 0700 and reported", "%s / %s",
          proc_describe(&r), r.out);
    json_decref(o);
    proc_result_free(&r);
}

static void test_symlink(void)
{
    const char *target = tmp_path("real");
    const char *link = tmp_path("link");
    if (mkdir(target, 0700) != 0 || symlink(target, link) != 0) {
        fail("setup: symlinked home refused", "setup: %s", strerror(errno));
        return;
    }
    struct proc_result r = setup(link, false);
    check(proc_exited_with(&r, 1) && one_line(r.err) && strstr(r.err, "symbolic link") != NULL,
          "setup: a symlinked home is refused with one line [guard: no symlinked data home]",
          "%s / %s", proc_describe(&r), r.err);
    proc_result_free(&r);
    char db[PATH_MAX];
    snprintf(db, sizeof db, "%s/basal.db", target);
    check(access(db, F_OK) != 0, "setup: nothing made behind a symlinked home", "%s exists", db);

    /* The API refuses it too, without create. */
    char err[512] = "";
    check(datahome_prepare(link, false, NULL, err, sizeof err) == -1 &&
              strstr(err, "symbolic link") != NULL,
          "datahome_prepare: symlink refused", "%s", err);
}

static void test_default_home(void)
{
    char xdg[PATH_MAX + 32], home[PATH_MAX + 32];
    snprintf(xdg, sizeof xdg, "XDG_DATA_HOME=%s", tmp_path("xdg"));
    snprintf(home, sizeof home, "HOME=%s", tmp_path("home"));
    char *env_xdg[] = {xdg, home, NULL};
    struct proc_result r = setup_env(NULL, false, env_xdg);
    check(proc_exited_with(&r, 0) && mode_of(tmp_path("xdg/cortexkit/basal/basal.db")) == 0600,
          "setup: default home is $XDG_DATA_HOME/cortexkit/basal", "%s", proc_describe(&r));
    proc_result_free(&r);

    char *env_home[] = {home, NULL};
    r = setup_env(NULL, false, env_home);
    check(proc_exited_with(&r, 0) &&
              mode_of(tmp_path("home/.local/share/cortexkit/basal/basal.db")) == 0600,
          "setup: without XDG_DATA_HOME the home is ~/.local/share/cortexkit/basal", "%s",
          proc_describe(&r));
    proc_result_free(&r);

    r = setup_env(NULL, false, HARNESS_EMPTY_ENV);
    check(proc_exited_with(&r, 1) && one_line(r.err) && strstr(r.err, "--home") != NULL,
          "setup: neither XDG_DATA_HOME nor HOME is refused with one line", "%s / %s",
          proc_describe(&r), r.err);
    proc_result_free(&r);
}

static void test_store_api(void)
{
    const char *home = tmp_path("api");
    char err[512] = "";
    struct datahome_report rep;
    if (!check(datahome_prepare(home, true, &rep, err, sizeof err) == 0 && rep.created,
               "datahome_prepare: creates the home", "%s", err))
        return;
    mode_t old = umask(0);
    umask(old);
    check_int_eq((long long)old, 0077, "datahome_prepare: process umask is 0077");

    struct store *s = NULL;
    if (!check(store_open(home, &s, err, sizeof err) == 0, "store_open: new store", "%s", err))
        return;
    check_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION, "store_open: schema version");
    check_int_eq(store_schema_version_at_open(s), 0, "store_open: new store was version 0");
    struct store_settings set;
    bool have_settings = store_settings_get(s, &set, err, sizeof err) == 0;
    check(have_settings && strcmp(set.journal_mode, "wal") == 0, "store: journal_mode is WAL",
          "%s", have_settings ? set.journal_mode : err);
    check(have_settings && set.synchronous == 2, "store: synchronous is FULL (2)", "%d: %s",
          set.synchronous, err);
    check(have_settings && set.foreign_keys, "store: foreign_keys is on", "%s", err);

    long long v = -1;
    check(store_health_add(s, "spawned", 3) == 0 && store_health_add(s, "spawned", 2) == 0 &&
              store_health_get(s, "spawned", &v) == 0 && v == 5,
          "store: health counter adds up", "value %lld: %s", v, store_errmsg(s));
    check(store_health_get(s, "never", &v) == 0 && v == 0, "store: an unknown counter is 0",
          "value %lld", v);
    check(store_begin(s) == 0 && store_health_add(s, "spawned", 10) == 0 &&
              store_rollback(s) == 0 && store_health_get(s, "spawned", &v) == 0 && v == 5,
          "store: a rolled-back transaction leaves nothing", "value %lld: %s", v,
          store_errmsg(s));
    /* The store's own connection enforces the foreign key (a version needs its flow). */
    check(flow_registry_add_version(s, "nope", 1, "", 0, "", 0,
                                    "0000000000000000000000000000000000000000000000000000000000000000",
                                    err, sizeof err) != 0,
          "store: foreign keys enforced (a version of an unknown flow refused)", "inserted");
    /* The trigger is in the schema: a connection of its own meets it too. */
    char db_file[PATH_MAX];
    snprintf(db_file, sizeof db_file, "%s/basal.db", home);
    check(store_exec(db_file, "INSERT INTO audit(at, kind, decision) VALUES (1, 'kv.get', 'allowed')") &&
              !store_exec(db_file, "DELETE FROM audit"),
          "store: audit is append-only", "delete succeeded (or the insert failed)");
    check_files_owner_only(home, "store API after writes");
    char wal[PATH_MAX + 8];
    snprintf(wal, sizeof wal, "%s/basal.db-wal", home);
    check(mode_of(wal) == 0600, "store: -wal exists while open and is 0600", "mode %04o",
          (unsigned)mode_of(wal));
    store_close(s);

    /* A fresh connection sees the persistent settings and the counter. */
    char db_path[PATH_MAX];
    snprintf(db_path, sizeof db_path, "%s/basal.db", home);
    char *mode = store_text(db_path, "PRAGMA journal_mode");
    char *spawned = store_text(db_path, "SELECT value FROM health_counters WHERE name='spawned'");
    check_str_eq(mode != NULL ? mode : "(error)", "wal", "store: WAL persists (fresh connection)");
    check_str_eq(spawned != NULL ? spawned : "(error)", "5",
                 "store: health counter persists across open");
    free(mode);
    free(spawned);

    if (check(store_open(home, &s, err, sizeof err) == 0, "store_open: reopen", "%s", err)) {
        check_int_eq(store_schema_version_at_open(s), STORE_SCHEMA_VERSION,
                     "store_open: reopen finds the current version (no migration)");
        store_close(s);
    }
}

static void test_newer_store(void)
{
    const char *home = tmp_path("newer");
    struct proc_result r = setup(home, false);
    bool ok = proc_exited_with(&r, 0);
    proc_result_free(&r);
    if (!check(ok, "newer store: setup", "setup failed"))
        return;
    char db_path[PATH_MAX];
    snprintf(db_path, sizeof db_path, "%s/basal.db", home);
    int future = STORE_SCHEMA_VERSION + 98;
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", future);
    ok = store_exec(db_path, sql);
    if (!check(ok, "newer store: bump user_version", "sqlite failed"))
        return;

    char err[512] = "", want_a[32], want_b[64];
    snprintf(want_a, sizeof want_a, "schema version %d", future);
    snprintf(want_b, sizeof want_b, "newer than this build's %d", STORE_SCHEMA_VERSION);
    struct store *s = NULL;
    int rc = store_open(home, &s, err, sizeof err);
    check(rc == -1 && s == NULL && strstr(err, want_a) != NULL && strstr(err, want_b) != NULL &&
              strchr(err, '\n') == NULL,
          "store_open: a newer store is refused naming both versions [guard: newer store "
          "refused]",
          "rc %d: %s", rc, err);
    check_int_eq(user_version_of(db_path), future, "store_open: newer store's version unchanged");

    r = setup(home, false);
    check(proc_exited_with(&r, 1) && one_line(r.err) && strstr(r.err, want_a) != NULL &&
              strstr(r.err, want_b) != NULL,
          "setup: a newer store is refused with one line naming both versions", "%s / %s",
          proc_describe(&r), r.err);
    proc_result_free(&r);
    check_int_eq(user_version_of(db_path), future, "setup: newer store's version unchanged");
}

static void test_json(void)
{
    const char *home = tmp_path("json");
    struct proc_result r = setup(home, true);
    json_t *o = proc_exited_with(&r, 0) ? cli_output_json(&r) : NULL;
    if (check(json_is_object(o), "setup --json: output is one JSON object", "%s / %s",
              proc_describe(&r), r.out)) {
        json_t *k = json_object_get(o, "kernel");
        int abi = kernel_landlock_abi();
        json_t *ja = json_object_get(k, "landlock_abi");
        check(abi >= 0 ? json_is_integer(ja) && json_integer_value(ja) == abi : json_is_null(ja),
              "setup --json: landlock_abi equals the kernel's", "kernel %d, output %s", abi,
              r.out);
        check(json_is_boolean(json_object_get(k, "seccomp_kill_process")) &&
                  json_is_true(json_object_get(k, "seccomp_kill_process")) ==
                      (kernel_has_seccomp_kill_process() == 1),
              "setup --json: seccomp_kill_process equals the kernel's", "%s", r.out);
        json_t *st = json_object_get(o, "store");
        check(json_integer_value(json_object_get(st, "schema_version")) == STORE_SCHEMA_VERSION,
              "setup --json: names the schema version", "%s", r.out);
        const char *p = json_string_value(json_object_get(json_object_get(o, "data_home"), "path"));
        check(p != NULL && strcmp(p, home) == 0, "setup --json: names the data home", "%s",
              r.out);
    }
    json_decref(o);
    proc_result_free(&r);
}

int main(void)
{
    if (!require_binary(harness_test_parent(), "store: test parent built"))
        return harness_finish();
    snprintf(g_root, sizeof g_root, "%s/t_store.XXXXXX", harness_tmp_root());
    if (mkdtemp(g_root) == NULL) {
        fail("store: temp directory", "%s", strerror(errno));
        return harness_finish();
    }
    test_fresh_and_idempotent();
    test_narrow();
    test_symlink();
    test_default_home();
    test_store_api();
    test_newer_store();
    test_json();
    harness_remove_tree(g_root);
    return harness_finish();
}
