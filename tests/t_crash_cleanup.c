/* What a crash of ck-basal leaves running or lying around, through the real binaries.
 * The module side is tests/tools/test_module: its "hold" ops announce their pids (as
 * /proc names them) on a FIFO the test reads, wait until the test closes it, and only
 * then log "effect ..." (a grandchild that left the group logs "late grandchild").
 *
 *   1. SIGKILL of the parent while a module program that started a grandchild (which
 *      left the program's group and session) is running: both are gone, the effect
 *      never comes, and the process was recorded with its call before the program
 *      ran; recover then marks the call in doubt and reconcile settles it, one effect
 *      in all [guard module-parent-death, module-pid-namespace].
 *   2. a module program that clears its parent-death signal (a program may; one that
 *      is set-user-ID loses it too) outlives the parent: `recover` refuses to resume
 *      the run while it runs (exit 1, one line, nothing changed), and resumes it once
 *      it has ended [guard recover-waits-for-call-process].
 *   3. the same for a mutation in doubt: recover marks it in doubt, `flow reconcile`
 *      refuses every decision while the program runs (exit 1, one line, nothing
 *      changed); once it ended (and applied its effect) --observed settles the run,
 *      and the effect happened exactly once [guard reconcile-waits-for-call-process].
 *   4. a store at schema version 1 is migrated to 2 (the call_processes table), its
 *      data kept.
 *   5. a worker busy in an endless script with an hour of CPU budget ends when its
 *      parent (`ck-basal exec`) is SIGKILLed [guard worker-parent-death].
 *   6. a crash at the rename of an fs.write (a seccomp filter kills ck-basal at
 *      renameat) leaves its temporary file, named by the call's key; `recover`
 *      removes it, and only it: another run's temporary and a symbolic link named
 *      like ours stay, the link's target untouched, and nothing outside the write
 *      roots is removed when the call's directory now leads out of them [guard
 *      recover-removes-own-temporaries]. */
#include "lib/cli_home.h"
#include "lib/harness.h"
#include "lib/serve_home.h"
#include "lib/store_view.h"

#include "store/store_schema.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 60000
/* The safety net for a process that must end at once: generous for a loaded machine. */
#define GONE_WITHIN_MS 20000


static char g_root[PATH_MAX];

struct scenario {
    struct test_home t; /* dir, home, db */
    char out[PATH_MAX];     /* write root */
    char outside[PATH_MAX]; /* no root */
    char log[PATH_MAX];     /* the module's effects */
    char fifo[PATH_MAX];
};

static struct scenario S;

static char *const NO_ENV[] = {NULL};

static struct proc_result cli(bool json, const char *const *args)
{
    return cli_home(S.t.home, json, args);
}

#define CATALOG                                                                          \
    "{\"modules\": {\"hold\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"],"         \
    " \"timeout_ms\": 120000, \"ops\": {\"hold_mutation\": {\"kind\": \"mutate\"},"        \
    " \"hold_query\": {\"kind\": \"query\"}}}}}"

static void scenario_begin(const char *name)
{
    memset(&S, 0, sizeof S);
    test_home_paths(&S.t, g_root, name);
    sfmt(S.out, sizeof S.out, "%s/out", S.t.dir);
    sfmt(S.outside, sizeof S.outside, "%s/outside", S.t.dir);
    sfmt(S.log, sizeof S.log, "%s/effects.log", S.t.dir);
    sfmt(S.fifo, sizeof S.fifo, "%s/hold.fifo", S.t.dir);
    mkdir_or_fail(S.out, "crash cleanup: mkdir");
    mkdir_or_fail(S.outside, "crash cleanup: mkdir");
    cli_home_setup_or_fail(S.t.home, "crash cleanup: setup", CATALOG,
                           harness_path("test/tools/test_module"), S.log);
}

/* Writes, installs and approves flow id with script and the grants every scenario
 * uses. */
static bool flow_add(const char *id, const char *script)
{
    char dir[PATH_MAX + 32], manifest[4096], why[1024] = "cannot write the flow";
    sfmt(dir, sizeof dir, "%s/flow-%s", S.t.dir, id);
    sfmt(manifest, sizeof manifest,
         "{\"format\":1,\"id\":\"%s\",\"version\":1,\"purpose\":\"test\","
         "\"trigger\":{\"manual\":true},\"ops\":[{\"module\":\"hold\",\"op\":\"hold_mutation\"},"
         "{\"module\":\"hold\",\"op\":\"hold_query\"}],\"fs\":{\"write\":[\"%s\"]}}",
         id, S.out);
    bool good = flow_dir_write(dir, manifest, script) &&
                cli_install_approve(S.t.home, HARNESS_EMPTY_ENV, dir, id, 1, why, sizeof why) ==
                    FLOW_ADDED;
    return check(good, "crash cleanup: flow installed and approved", "flow %s: %s", id, why);
}

/* ---- store views ------------------------------------------------------------------ */

static char *sql_text(const char *sql)
{
    return store_text(S.t.db, sql);
}

static long long sql_number(const char *sql)
{
    char *text = sql_text(sql);
    long long v = text != NULL ? strtoll(text, NULL, 10) : -1;
    free(text);
    return v;
}

/* Every row a decision could change, as text. */
static char *dump_runs(void)
{
    return sql_text("SELECT (SELECT group_concat(id || state || generation || coalesce(owner, '')"
                    " || coalesce(error, ''), ';') FROM runs) || '|' || (SELECT group_concat("
                    "position || state, ';') FROM journal) || '|' || (SELECT count(*) FROM"
                    " mailbox) || '|' || (SELECT count(*) FROM audit) || '|' || (SELECT count(*)"
                    " FROM activations) || '|' || (SELECT count(*) FROM call_processes)");
}

static long long lines_starting(const char *path, const char *prefix)
{
    char *text = read_text_file(path);
    long long n = 0;
    size_t len = strlen(prefix);
    for (const char *line = text; line != NULL && *line != '\0';) {
        if (strncmp(line, prefix, len) == 0)
            n++;
        const char *nl = strchr(line, '\n');
        line = nl != NULL ? nl + 1 : NULL;
    }
    free(text);
    return n;
}

static const char *state_in(const char *json_text)
{
    static char state[32];
    json_t *v = json_loads(json_text, 0, NULL);
    const char *s = json_string_value(json_object_get(v, "state"));
    snprintf(state, sizeof state, "%s", s != NULL ? s : "(none)");
    json_decref(v);
    return state;
}

/* One line on stderr (ending in its only newline) and nothing on stdout. */
static bool one_line_error(const struct proc_result *r)
{
    const char *nl = strchr(r->err, '\n');
    return nl != NULL && nl[1] == '\0' && r->out_len == 0;
}

/* ---- processes -------------------------------------------------------------------- */

static int pidfd_of(pid_t pid)
{
    return pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
}

/* True once the process behind pidfd has ended (within timeout_ms). */
static bool ends_within(int pidfd, int timeout_ms)
{
    if (pidfd < 0)
        return false;
    struct pollfd p = {pidfd, POLLIN, 0};
    int rc;
    while ((rc = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR) {
    }
    return rc == 1;
}

/* Kills what a failed check left running (through its pidfd: never another pid). */
static void kill_left(int *pidfd)
{
    if (*pidfd >= 0) {
        (void)syscall(SYS_pidfd_send_signal, *pidfd, SIGKILL, NULL, 0);
        close(*pidfd);
        *pidfd = -1;
    }
}

/* A run of flow started while the test reads the FIFO: the module's "hold P G" line
 * is read into *program and *grandchild (0 if none). The FIFO's read end stays open
 * in *fifo_fd: closing it lets the module go on. */
struct held {
    struct proc parent;
    int fifo_fd;
    pid_t program, grandchild;
    int program_fd, grandchild_fd; /* pidfds */
};

static bool start_held(const char *flow, struct held *h)
{
    memset(h, 0, sizeof *h);
    h->fifo_fd = h->program_fd = h->grandchild_fd = -1;
    if (mkfifo(S.fifo, 0600) != 0 && errno != EEXIST)
        return false;
    h->fifo_fd = open(S.fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    const char *argv[24];
    cli_argv(argv, sizeof argv / sizeof argv[0], NULL, true, S.t.home, ARGS("run", flow));
    struct proc_opts opts = {.use_fds = false, .envp = NO_ENV};
    if (h->fifo_fd < 0 || proc_start(&h->parent, argv, &opts) != 0)
        return false;
    char line[128];
    long program = 0, grandchild = -1;
    if (fd_read_line(h->fifo_fd, line, sizeof line, TIMEOUT_MS) && strncmp(line, "hold ", 5) == 0) {
        char *end = NULL;
        program = strtol(line + 5, &end, 10);
        if (end != NULL && *end == ' ')
            grandchild = strtol(end + 1, &end, 10);
    }
    if (program <= 1 || grandchild < 0) {
        proc_kill(&h->parent);
        return false;
    }
    h->program = (pid_t)program;
    h->grandchild = (pid_t)grandchild;
    h->program_fd = pidfd_of(h->program);
    h->grandchild_fd = pidfd_of(h->grandchild);
    return h->program_fd >= 0;
}

/* SIGKILLs the parent and reaps it: true if it died by that signal. */
static bool kill_parent(struct held *h)
{
    (void)kill(h->parent.pid, SIGKILL);
    struct proc_result r = proc_finish(&h->parent, NULL, 0, TIMEOUT_MS);
    bool killed = died_by_signal(&r, SIGKILL);
    proc_result_free(&r);
    return killed;
}

static void release(struct held *h)
{
    if (h->fifo_fd >= 0)
        close(h->fifo_fd);
    h->fifo_fd = -1;
}

static void held_end(struct held *h)
{
    release(h);
    kill_left(&h->program_fd);
    kill_left(&h->grandchild_fd);
}

static char *hold_script(const char *op, const char *options)
{
    char *s = NULL;
    if (asprintf(&s, "return await ops.call('hold', '%s', {fifo: '%s'%s});\n", op, S.fifo,
                 options) < 0)
        return NULL;
    return s;
}

/* ---- 1. the program and its grandchild die with the parent ----------------------- */

static void test_module_dies_with_parent(void)
{
    scenario_begin("dies-with-parent");
    char *script = hold_script("hold_mutation", ", grandchild: true");
    bool added = script != NULL && flow_add("dies", script);
    free(script);
    if (!added)
        return;
    struct held h;
    if (!ok(start_held("dies", &h) && h.grandchild > 1 && h.grandchild_fd >= 0,
            "module dies: the program and its grandchild announce themselves")) {
        held_end(&h);
        return;
    }
    check_int_eq(sql_number("SELECT pid FROM call_processes WHERE run_id = 1 AND position = 0"),
                 h.program, "module dies: the program's process is recorded with its call"
                 " before it ran [guard call-process-recorded]");
    ok(kill_parent(&h), "module dies: the parent died by SIGKILL while the program ran");
    check(ends_within(h.program_fd, GONE_WITHIN_MS),
          "module dies: the program ends with its parent [guard module-parent-death]",
          "pid %ld still running %d ms after the parent's death", (long)h.program,
          GONE_WITHIN_MS);
    check(ends_within(h.grandchild_fd, GONE_WITHIN_MS),
          "module dies: its grandchild, in another group and session, ends with it [guard"
          " module-pid-namespace]",
          "pid %ld still running %d ms after the parent's death", (long)h.grandchild,
          GONE_WITHIN_MS);
    release(&h); /* would let a survivor apply its effect now */
    check_int_eq(lines_starting(S.log, "effect") + lines_starting(S.log, "late"), 0,
                 "module dies: neither applied its effect, ever");
    held_end(&h);

    struct proc_result r = cli(true, ARGS("recover"));
    check_str_eq(state_in(r.out), "needs_reconcile",
                 "module dies: recover marks the call in doubt (its process is gone)");
    proc_result_free(&r);
    r = cli(true, ARGS("flow", "reconcile", "1", "0", "--not-applied"));
    check_str_eq(state_in(r.out), "succeeded",
                 "module dies: reconcile --not-applied resumes and the run succeeds");
    proc_result_free(&r);
    check_int_eq(lines_starting(S.log, "effect"), 1, "module dies: one effect in all");
}

/* ---- 2. recover waits for a program that outlived the parent ---------------------- */

static void test_recover_waits(void)
{
    scenario_begin("recover-waits");
    char *script = hold_script("hold_query", ", outlive: true");
    bool added = script != NULL && flow_add("waits", script);
    free(script);
    if (!added)
        return;
    struct held h;
    if (!ok(start_held("waits", &h), "recover waits: the program announces itself")) {
        held_end(&h);
        return;
    }
    ok(kill_parent(&h), "recover waits: the parent died by SIGKILL while the program ran");
    if (!ok(!ends_within(h.program_fd, 0),
            "recover waits: a program that cleared its parent-death signal outlives the"
            " parent (the kernel lets it)")) {
        held_end(&h);
        return;
    }
    char *before = dump_runs();
    struct proc_result r = cli(true, ARGS("recover"));
    check(proc_exited_with(&r, 1) && one_line_error(&r) &&
              strstr(r.err, "position 0") != NULL && strstr(r.err, "still running") != NULL,
          "recover waits: recover refuses to resume the run while its program runs, in one"
          " line [guard recover-waits-for-call-process]",
          "%s: out '%s' err '%s'", proc_describe(&r), r.out, r.err);
    proc_result_free(&r);
    char *after = dump_runs();
    check_str_eq(after, before, "recover waits: the refusal changed nothing stored");
    free(before);
    free(after);

    release(&h);
    ok(ends_within(h.program_fd, GONE_WITHIN_MS),
       "recover waits: the program, let go, ends by itself");
    r = cli(true, ARGS("recover"));
    check(proc_exited_with(&r, 0) && strcmp(state_in(r.out), "succeeded") == 0,
          "recover waits: once it has ended, recover resumes the run to success", "%s: %s %s",
          proc_describe(&r), r.out, r.err);
    proc_result_free(&r);
    held_end(&h);
}

/* ---- 3. reconcile waits for the program of a call in doubt ------------------------ */

static void test_reconcile_waits(void)
{
    scenario_begin("reconcile-waits");
    char *script = hold_script("hold_mutation", ", outlive: true");
    bool added = script != NULL && flow_add("settle", script);
    free(script);
    if (!added)
        return;
    struct held h;
    if (!ok(start_held("settle", &h), "reconcile waits: the program announces itself")) {
        held_end(&h);
        return;
    }
    ok(kill_parent(&h), "reconcile waits: the parent died by SIGKILL while the program ran");
    if (!ok(!ends_within(h.program_fd, 0),
            "reconcile waits: the program that cleared its parent-death signal outlives the"
            " parent")) {
        held_end(&h);
        return;
    }
    struct proc_result r = cli(true, ARGS("recover"));
    check(proc_exited_with(&r, 1) && strcmp(state_in(r.out), "needs_reconcile") == 0,
          "reconcile waits: recover marks the call in doubt (it decides nothing)", "%s: %s %s",
          proc_describe(&r), r.out, r.err);
    proc_result_free(&r);

    static const char *const DECISIONS[][2] = {
        {"--not-applied", NULL}, {"--observed", "\"held\""}, {"--cancel", NULL}};
    for (size_t i = 0; i < 3; i++) {
        char *before = dump_runs();
        r = DECISIONS[i][1] != NULL
                ? cli(true, ARGS("flow", "reconcile", "1", "0", DECISIONS[i][0], DECISIONS[i][1]))
                : cli(true, ARGS("flow", "reconcile", "1", "0", DECISIONS[i][0]));
        char name[200];
        sfmt(name, sizeof name, "reconcile waits: reconcile %s is refused in one line while the"
             " program runs [guard reconcile-waits-for-call-process]", DECISIONS[i][0]);
        check(proc_exited_with(&r, 1) && one_line_error(&r) &&
                  strstr(r.err, "still running") != NULL,
              name, "%s: out '%s' err '%s'", proc_describe(&r), r.out, r.err);
        proc_result_free(&r);
        char *after = dump_runs();
        sfmt(name, sizeof name, "reconcile waits: the refused %s changed nothing stored",
             DECISIONS[i][0]);
        check_str_eq(after, before, name);
        free(before);
        free(after);
    }
    check_int_eq(lines_starting(S.log, "effect"), 0,
                 "reconcile waits: no effect yet while the program holds");

    release(&h);
    ok(ends_within(h.program_fd, GONE_WITHIN_MS),
       "reconcile waits: the program, let go, ends by itself");
    check_int_eq(lines_starting(S.log, "effect"), 1,
                 "reconcile waits: its late effect came (what the operator now observes)");
    r = cli(true, ARGS("flow", "reconcile", "1", "0", "--observed", "\"held\""));
    check(proc_exited_with(&r, 0) && strcmp(state_in(r.out), "succeeded") == 0,
          "reconcile waits: once it has ended, --observed settles the run", "%s: %s %s",
          proc_describe(&r), r.out, r.err);
    proc_result_free(&r);
    check_int_eq(lines_starting(S.log, "effect"), 1,
                 "reconcile waits: the mutation took effect exactly once");
    held_end(&h);
}

/* ---- 4. migration from schema version 1 ------------------------------------------- */

static void test_migration(void)
{
    scenario_begin("migration");
    /* A store as a build of schema version 1 left it, with a flow in it. */
    sfmt(S.t.home, sizeof S.t.home, "%s/old-home", S.t.dir);
    sfmt(S.t.db, sizeof S.t.db, "%s/basal.db", S.t.home);
    bool made = mkdir(S.t.home, 0700) == 0;
    made = made && store_create(S.t.db, store_schema_migration(1),
                                "INSERT INTO flows (id, created_at) VALUES ('old', 1);"
                                "PRAGMA user_version = 1;");
    if (!ok(made, "migration: a version-1 store is made"))
        return;
    struct proc_result r = cli(true, ARGS("setup"));
    json_t *v = cli_output_json(&r);
    json_t *store = json_object_get(v, "store");
    check(proc_exited_with(&r, 0) &&
              json_integer_value(json_object_get(store, "schema_version")) ==
                  STORE_SCHEMA_VERSION &&
              json_integer_value(json_object_get(store, "schema_version_before")) == 1,
          "migration: setup takes the store from version 1 to the newest", "%s: %s %s",
          proc_describe(&r), r.out, r.err);
    json_decref(v);
    proc_result_free(&r);
    check_int_eq(sql_number("SELECT count(*) FROM sqlite_master WHERE name = 'call_processes'"),
                 1, "migration: the call_processes table exists");
    char *flow = sql_text("SELECT id FROM flows");
    check_str_eq(flow, "old", "migration: the data of version 1 is kept");
    free(flow);
}

/* ---- 5. a busy worker ends with its parent ---------------------------------------- */

/* Field n (1-based, n > 2) of /proc/pid/stat as a number; -1 if unreadable. */
static long long stat_field(pid_t pid, int n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    char *text = read_text_file(path);
    const char *p = text != NULL ? strrchr(text, ')') : NULL;
    for (int field = 2; p != NULL && field < n; field++) {
        p = strchr(p + 1, ' ');
    }
    long long v = p != NULL ? strtoll(p + 1, NULL, 10) : -1;
    free(text);
    return v;
}

/* A child of parent that has used at least min_ticks of CPU, or 0. */
static pid_t busy_child(pid_t parent, long long min_ticks)
{
    DIR *d = opendir("/proc");
    pid_t found = 0;
    const struct dirent *e;
    while (d != NULL && found == 0 && (e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end != '\0' || pid <= 0 || stat_field((pid_t)pid, 4) != parent)
            continue;
        if (stat_field((pid_t)pid, 14) + stat_field((pid_t)pid, 15) >= min_ticks)
            found = (pid_t)pid;
    }
    if (d != NULL)
        closedir(d);
    return found;
}

static void test_worker_dies_with_parent(void)
{
    const char *spin = harness_tmp_file("spin.js", "for (;;) {}\n");
    const char *argv[] = {harness_test_parent(), "exec", spin, "--cpu-ms", "3600000",
                          "--deadline-ms", "3600000", NULL};
    struct proc_opts opts = {.use_fds = false, .envp = NO_ENV};
    struct proc p;
    if (!ok(proc_start(&p, argv, &opts) == 0, "worker dies: ck-basal exec starts"))
        return;
    /* The worker running the script is the child that burns CPU: half a second of it,
     * far more than a worker's start-up. Looks at /proc between waits on the parent's
     * pidfd (which ends the wait at once if the parent exits). */
    long long min_ticks = sysconf(_SC_CLK_TCK) / 2;
    pid_t worker = 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        worker = busy_child(p.pid, min_ticks);
        if (worker == 0) {
            struct pollfd pf = {p.pidfd, POLLIN, 0};
            if (poll(&pf, 1, 20) > 0)
                break;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (worker == 0 && (now.tv_sec - t0.tv_sec) * 1000LL < TIMEOUT_MS);
    int worker_fd = pidfd_of(worker);
    if (!ok(worker_fd >= 0, "worker dies: a worker runs the endless script")) {
        proc_kill(&p);
        return;
    }
    (void)kill(p.pid, SIGKILL);
    struct proc_result r = proc_finish(&p, NULL, 0, TIMEOUT_MS);
    ok(died_by_signal(&r, SIGKILL), "worker dies: the parent died by SIGKILL");
    proc_result_free(&r);
    check(ends_within(worker_fd, GONE_WITHIN_MS),
          "worker dies: the busy worker (an hour of CPU budget left) ends with its parent"
          " [guard worker-parent-death]",
          "worker %ld still running %d ms after the parent's death", (long)worker,
          GONE_WITHIN_MS);
    kill_left(&worker_fd);
}

/* ---- 6. an interrupted fs.write's temporary file ---------------------------------- */

/* The names in dir starting with prefix, counted; *regular those that are files. */
static int names_with_prefix(const char *dir, const char *prefix, int *regular)
{
    DIR *d = opendir(dir);
    int n = 0;
    *regular = 0;
    const struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        n++;
        char path[PATH_MAX + 256];
        struct stat st;
        sfmt(path, sizeof path, "%s/%s", dir, e->d_name);
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
            (*regular)++;
    }
    if (d != NULL)
        closedir(d);
    return n;
}

/* Runs flow under launch, killed by seccomp at its first rename. */
static bool run_killed_at_rename(const char *flow)
{
    const struct cli_opts opts = {
        .envp = NO_ENV, .timeout_ms = TIMEOUT_MS,
        .prefix = ARGS(harness_launcher(), "--inject=renameat:KILL", "--inject=renameat2:KILL",
                       "--inject=rename:KILL", "--")};
    struct proc_result r = cli_run(S.t.home, &opts, ARGS("run", flow));
    bool killed = died_by_signal(&r, SIGSYS);
    if (!killed)
        fprintf(stderr, "  %s: %s\n", proc_describe(&r), r.err);
    proc_result_free(&r);
    return killed;
}

static void test_temporaries_removed(void)
{
    scenario_begin("temporaries");
    char script[PATH_MAX + 128];
    sfmt(script, sizeof script, "await fs.write('%s/a.txt', 'hello'); return 1;\n", S.out);
    if (!flow_add("tmp", script))
        return;
    if (!ok(run_killed_at_rename("tmp"), "temporaries: ck-basal dies at the rename of fs.write"))
        return;
    char *key = sql_text("SELECT idempotency_key FROM journal WHERE run_id = 1 AND position = 0");
    char ours[128];
    sfmt(ours, sizeof ours, ".basal-tmp-%s-", key != NULL ? key : "?");
    free(key);
    int regular = 0;
    check(names_with_prefix(S.out, ours, &regular) == 1 && regular == 1,
          "temporaries: the interrupted fs.write left one temporary file named by its call's key",
          "prefix %s", ours);
    /* Beside it: another run's temporary, and a link named like ours (fs.write never
     * makes one) leading to a file outside the roots. */
    char path[PATH_MAX + 256], target[PATH_MAX + 32];
    static const char OTHER[] =
        ".basal-tmp-00000000000000000000000000000000000000000000000000000000000000aa-"
        "0123456789abcdef";
    sfmt(path, sizeof path, "%s/%s", S.out, OTHER);
    bool planted = write_text_file(path, "another run's", 0644);
    sfmt(target, sizeof target, "%s/target.txt", S.outside);
    planted = planted && write_text_file(target, "keep me", 0644);
    sfmt(path, sizeof path, "%s/%sfedcba9876543210", S.out, ours);
    planted = planted && symlink(target, path) == 0;
    if (!ok(planted, "temporaries: another run's temporary and a link are planted"))
        return;

    struct proc_result r = cli(true, ARGS("recover"));
    check(proc_exited_with(&r, 0) && strcmp(state_in(r.out), "succeeded") == 0,
          "temporaries: recover resumes the run to success", "%s: %s %s", proc_describe(&r),
          r.out, r.err);
    proc_result_free(&r);
    int total = names_with_prefix(S.out, ours, &regular);
    check(regular == 0 && total == 1,
          "temporaries: recover removed the run's own temporary file and left the link"
          " [guard recover-removes-own-temporaries]",
          "%d names, %d files with prefix %s", total, regular, ours);
    char *other = read_text_file(path); /* through the link: the target */
    check_str_eq(other, "keep me", "temporaries: the link's target is untouched");
    free(other);
    sfmt(path, sizeof path, "%s/%s", S.out, OTHER);
    check(access(path, F_OK) == 0, "temporaries: another run's temporary file stays", "%s",
          path);
    sfmt(path, sizeof path, "%s/a.txt", S.out);
    char *written = read_text_file(path);
    check_str_eq(written, "hello", "temporaries: the resent fs.write wrote the file");
    free(written);
}

/* The call's directory now leads out of the write roots: nothing there is removed. */
static void test_temporaries_outside_roots(void)
{
    scenario_begin("temporaries-outside");
    char sub[PATH_MAX + 16], script[PATH_MAX + 128];
    sfmt(sub, sizeof sub, "%s/sub", S.out);
    mkdir_or_fail(sub, "crash cleanup: mkdir");
    sfmt(script, sizeof script, "await fs.write('%s/a.txt', 'hello'); return 1;\n", sub);
    if (!flow_add("away", script))
        return;
    if (!ok(run_killed_at_rename("away"), "outside roots: ck-basal dies at the rename"))
        return;
    char *key = sql_text("SELECT idempotency_key FROM journal WHERE run_id = 1 AND position = 0");
    char name[128], moved[PATH_MAX + 16], planted[PATH_MAX + 160];
    sfmt(name, sizeof name, ".basal-tmp-%s-0123456789abcdef", key != NULL ? key : "?");
    free(key);
    /* sub is replaced by a link out of the roots, where a file named like the call's
     * temporary lies. */
    sfmt(moved, sizeof moved, "%s/sub-was", S.out);
    sfmt(planted, sizeof planted, "%s/%s", S.outside, name);
    bool ready = rename(sub, moved) == 0 && symlink(S.outside, sub) == 0 &&
                 write_text_file(planted, "not basal's to remove", 0644);
    if (!ok(ready, "outside roots: the call's directory now leads outside the roots"))
        return;
    struct proc_result r = cli(true, ARGS("recover"));
    proc_result_free(&r);
    check(access(planted, F_OK) == 0,
          "outside roots: recover removes nothing outside the write roots [guard"
          " recover-removes-own-temporaries]",
          "%s was removed", planted);
}

int main(void)
{
    if (!require_parent_and_module("ck-basal", "test_module") ||
        !require_binary(harness_launcher(), "launch") ||
        !harness_tmpdir_copy("crash-cleanup", g_root, sizeof g_root))
        return harness_finish();
    test_module_dies_with_parent();
    test_recover_waits();
    test_reconcile_waits();
    test_migration();
    test_worker_dies_with_parent();
    test_temporaries_removed();
    test_temporaries_outside_roots();
    harness_remove_tree(g_root);
    return harness_finish();
}
