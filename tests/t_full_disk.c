/* A full disk, made for real: a small tmpfs filled to its last page. Needs root (to
 * mount) and fails, never skips, without it. The test first moves into a mount
 * namespace of its own, so its mounts vanish with it whatever happens.
 *
 *   1. a store on a full disk: opening it (SQLite must create and extend -shm) and
 *      writing to it (the WAL cannot grow) are refused with a line that says the disk
 *      is full, not "not a readable SQLite database: disk I/O error"; once space is
 *      freed the store works, nothing lost [guard store-says-disk-full].
 *   2. a sink on a full disk: an emit whose line the disk cuts short is rejected
 *      io_error ("the disk is full") and cut back off, so the file keeps whole lines
 *      only; the next emit, once there is space, is a line of its own and every line
 *      of the file is JSON [guard sink-cuts-short-write]. */
#include "lib/cli_home.h"
#include "lib/harness.h"
#include "lib/store_view.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <sched.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TIMEOUT_MS 60000

static char g_root[PATH_MAX];
static char *const NO_ENV[] = {NULL};

static struct proc_result cli(const char *home, char *const *envp, const char *const *args)
{
    struct cli_opts opts = {.json = true, .envp = envp, .timeout_ms = TIMEOUT_MS};
    return cli_run(home, &opts, args);
}

/* Mounts a tmpfs of size_kib at dir (created 0700 if missing): the test's own. */
static bool mount_small_disk(const char *dir, unsigned size_kib)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return false;
    char options[64];
    sfmt(options, sizeof options, "size=%uk,mode=0700", size_kib);
    return mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, options) == 0;
}

/* Fills the file system holding dir to its last page with dir/filler. */
static bool fill_disk(const char *dir, char *filler, size_t cap)
{
    sfmt(filler, cap, "%s/filler", dir);
    int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    static char chunk[4096];
    memset(chunk, 'f', sizeof chunk);
    int err = 0;
    for (;;) {
        ssize_t n = write(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err = errno;
            break;
        }
    }
    close(fd);
    return err == ENOSPC;
}

/* Writes, installs and approves a flow; its files live on the big disk. */
static bool flow_files(const char *dir, const char *id, const char *script, const char *grants)
{
    char path[PATH_MAX + 64], manifest[1024];
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return false;
    sfmt(manifest, sizeof manifest,
         "{\"format\":1,\"id\":\"%s\",\"version\":1,\"purpose\":\"test\","
         "\"trigger\":{\"manual\":true}%s}", id, grants);
    sfmt(path, sizeof path, "%s/flow.js", dir);
    bool good = write_text_file(path, script, 0644);
    sfmt(path, sizeof path, "%s/manifest.json", dir);
    return good && write_text_file(path, manifest, 0644);
}

static bool flow_add(const char *home, const char *dir, const char *id)
{
    return cli_install_approve(home, NO_ENV, dir, id, 1, NULL, 0) == FLOW_ADDED;
}

/* One line on stderr (its only newline at the end) and nothing on stdout. */
static bool one_line_error(const struct proc_result *r)
{
    const char *nl = strchr(r->err, '\n');
    return nl != NULL && nl[1] == '\0' && r->out_len == 0;
}

/* ---- 1. the store --------------------------------------------------------------- */

static void test_store_on_full_disk(void)
{
    char disk[PATH_MAX], home[PATH_MAX + 16], db_path[PATH_MAX + 32], filler[PATH_MAX + 16];
    sfmt(disk, sizeof disk, "%s/store-disk", g_root);
    sfmt(home, sizeof home, "%s/home", disk);
    sfmt(db_path, sizeof db_path, "%s/basal.db", home);
    if (!ok(mount_small_disk(disk, 2048), "full disk: a 2 MiB tmpfs for the store"))
        return;
    struct proc_result r = cli(home, NO_ENV, ARGS("setup"));
    bool set_up = ok(proc_exited_with(&r, 0), "full disk: setup on the small disk");
    proc_result_free(&r);
    if (!set_up)
        return;
    char flow_dir[PATH_MAX + 16], wal[PATH_MAX + 48], shm[PATH_MAX + 48];
    sfmt(flow_dir, sizeof flow_dir, "%s/flow-w", g_root);
    /* The store's own close leaves its WAL and -shm (no checkpoint at close): a connection
     * of SQLite's defaults checkpoints and, as the last one, removes both, so the next
     * open must make -shm again on the full disk. */
    sfmt(wal, sizeof wal, "%s-wal", db_path);
    sfmt(shm, sizeof shm, "%s-shm", db_path);
    if (!ok(store_exec(db_path, "PRAGMA wal_checkpoint(TRUNCATE)") && access(wal, F_OK) != 0 &&
                access(shm, F_OK) != 0,
            "full disk: the store checkpointed, no -wal or -shm left beside it"))
        return;
    if (!ok(flow_files(flow_dir, "w", "return 1;\n", "") && fill_disk(disk, filler, sizeof filler),
            "full disk: the disk is filled to its last page"))
        return;

    /* Opening: SQLite must make and extend -shm, which the disk refuses. */
    r = cli(home, NO_ENV, ARGS("runs"));
    check(proc_exited_with(&r, 1) && one_line_error(&r) &&
              strstr(r.err, "the disk is full") != NULL &&
              strstr(r.err, "not a readable SQLite database") == NULL,
          "full disk: opening the store says the disk is full, in one line [guard"
          " store-says-disk-full]",
          "%s: %s", proc_describe(&r), r.err);
    proc_result_free(&r);

    /* Writing: with a reader holding the store open, -shm exists and opening works;
     * the write then finds no room for the WAL to grow. */
    sqlite3 *reader = NULL;
    sqlite3_stmt *st = NULL;
    bool held = false;
    if (unlink(filler) == 0 &&
        sqlite3_open_v2(db_path, &reader, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(reader, "SELECT count(*) FROM flows", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        sqlite3_finalize(st);
        st = NULL;
        held = fill_disk(disk, filler, sizeof filler);
    }
    sqlite3_finalize(st);
    if (ok(held, "full disk: a reader holds the store open and the disk is full again")) {
        r = cli(home, NO_ENV, ARGS("flow", "install", flow_dir));
        check(proc_exited_with(&r, 1) && one_line_error(&r) &&
                  strstr(r.err, "the disk is full") != NULL,
              "full disk: a write to the store says the disk is full, in one line [guard"
              " store-says-disk-full]",
              "%s: %s", proc_describe(&r), r.err);
        proc_result_free(&r);
    }
    sqlite3_close(reader);

    /* Space again: the store works and nothing was lost or half-written. */
    (void)unlink(filler);
    ok(flow_add(home, flow_dir, "w"), "full disk: with space freed, the flow installs");
    r = cli(home, NO_ENV, ARGS("run", "w"));
    check(proc_exited_with(&r, 0), "full disk: with space freed, a run succeeds", "%s: %s",
          proc_describe(&r), r.err);
    proc_result_free(&r);
}

/* ---- 2. a sink -------------------------------------------------------------------- */

/* True if text holds only whole lines (ending in a newline) that are each JSON; the
 * number of lines into *count. */
static bool whole_json_lines(const char *text, int *count)
{
    *count = 0;
    if (text == NULL)
        return false;
    size_t len = strlen(text);
    if (len > 0 && text[len - 1] != '\n')
        return false;
    for (const char *line = text; *line != '\0';) {
        const char *nl = strchr(line, '\n');
        json_t *v = json_loadb(line, (size_t)(nl - line), 0, NULL);
        bool good = json_is_object(v);
        json_decref(v);
        if (!good)
            return false;
        (*count)++;
        line = nl + 1;
    }
    return true;
}

static const char *SINK_FLOW =
    "let failed = null;\n"
    "try { await sink.emit('events', {n: 2, pad: 'x'.repeat(20000)}); }\n"
    "catch (e) { failed = e.data.code + ': ' + e.message; }\n"
    "await sink.emit('events', {n: 3});\n"
    "return failed;\n";

static void test_sink_on_full_disk(void)
{
    char home[PATH_MAX], sinks[PATH_MAX + 16], file[PATH_MAX + 32], filler[PATH_MAX + 16];
    sfmt(home, sizeof home, "%s/sink-home", g_root);
    sfmt(sinks, sizeof sinks, "%s/sinks", home);
    sfmt(file, sizeof file, "%s/events.jsonl", sinks);
    struct proc_result r = cli(home, NO_ENV, ARGS("setup"));
    proc_result_free(&r);
    char flow_dir[PATH_MAX + 16];
    sfmt(flow_dir, sizeof flow_dir, "%s/flow-emit", g_root);
    /* The sinks directory is a small disk of its own; the store stays on the big one. */
    if (!ok(flow_files(flow_dir, "emit", SINK_FLOW, ",\"sinks\":[\"events\"]") &&
                flow_add(home, flow_dir, "emit") && mount_small_disk(sinks, 256),
            "sink full: a 256 KiB tmpfs as the sinks directory"))
        return;
    /* An earlier line, then no page left: the next line fits only in what is left of
     * the file's last page, so the disk cuts its write short. */
    static const char FIRST[] = "{\"n\":1}\n";
    if (!ok(write_text_file(file, FIRST, 0600) && fill_disk(sinks, filler, sizeof filler),
            "sink full: the sink holds a line and the disk is full"))
        return;
    char *const env[] = {"BASAL_TEST_STOP_AT=after_outcome_commit:0", NULL};
    const struct cli_opts opts = {.json = true, .envp = env};
    struct proc p;
    int status = 0;
    if (!ok(cli_start(&p, home, &opts, ARGS("run", "emit")) == 0 && waitpid(p.pid, &status, WUNTRACED) == p.pid &&
                WIFSTOPPED(status),
            "sink full: the run stops after the failed emit's outcome")) {
        proc_kill(&p);
        return;
    }
    char *text = read_text_file(file);
    size_t kept = text != NULL ? strlen(text) : 0;
    check(text != NULL && strcmp(text, FIRST) == 0,
          "sink full: the line the disk cut short is cut back off [guard sink-cuts-short-write]",
          "%zu bytes, ending in '%c' instead of the first line alone", kept,
          kept > 0 ? text[kept - 1] : '-');
    free(text);
    (void)unlink(filler);
    kill(p.pid, SIGCONT);
    r = proc_finish(&p, NULL, 0, TIMEOUT_MS);
    json_t *v = cli_output_json(&r);
    const char *result = json_string_value(json_object_get(v, "result"));
    check(proc_exited_with(&r, 0) && result != NULL && strstr(result, "io_error") != NULL &&
              strstr(result, "the disk is full") != NULL,
          "sink full: the emit is rejected io_error saying the disk is full", "%s: %s %s",
          proc_describe(&r), r.out, r.err);
    json_decref(v);
    proc_result_free(&r);
    text = read_text_file(file);
    int lines = 0;
    check(whole_json_lines(text, &lines) && lines == 2,
          "sink full: the next emit is a line of its own; every line is JSON [guard"
          " sink-cuts-short-write]",
          "%d whole JSON lines before the first bad one, %zu bytes", lines,
          text != NULL ? strlen(text) : 0);
    free(text);
}

int main(void)
{
    if (!require_binary(harness_test_parent(), "ck-basal"))
        return harness_finish();
    if (!check(geteuid() == 0, "full disk: runs as root (it mounts tmpfs)", "euid %u",
               (unsigned)geteuid()))
        return harness_finish();
    /* Mounts private to this test, gone with it. */
    if (!check(unshare(CLONE_NEWNS) == 0 && mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0,
               "full disk: a mount namespace of the test's own", "%s", strerror(errno)))
        return harness_finish();
    if (!harness_tmpdir_copy("full-disk", g_root, sizeof g_root))
        return harness_finish();
    test_store_on_full_disk();
    test_sink_on_full_disk();
    char disk[PATH_MAX + 16];
    sfmt(disk, sizeof disk, "%s/store-disk", g_root);
    (void)umount2(disk, MNT_DETACH);
    sfmt(disk, sizeof disk, "%s/sink-home/sinks", g_root);
    (void)umount2(disk, MNT_DETACH);
    harness_remove_tree(g_root);
    return harness_finish();
}
