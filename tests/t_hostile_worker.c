/* The parent against a subverted worker: code execution inside the confined worker,
 * played by tests/tools/evil_worker (it confines itself with the real worker's
 * sequence, so the parent accepts it, then writes whatever its script says). Every
 * check drives the real test-build ck-basal (`run`, `recover`, `cancel`, `exec`),
 * which starts the attacker through BASAL_TEST_WORKER. Each names the guard it proves.
 *
 *   1. frames that keep arriving do not hold off the wall deadline; an async HostCall
 *      flood is refused at the outstanding-calls and -bytes caps, and the parent's
 *      memory stays bounded [guard: clock read after every frame; outstanding caps].
 *   2. a Blocked naming a position twice, or sent while already blocked, is refused
 *      at once; a Blocked naming 60 000 outstanding calls is served [guard: Blocked
 *      linear in its frame].
 *   3. a forged Finished(suspended) fails the flow run (no LongRunning was sent), and
 *      `ck-basal cancel` ends a run in any unfinished state, audited, unless a live
 *      process owns it [guard: no run state is a dead end].
 *   4. a kind that is not a host-call name (empty) is a protocol error before any
 *      SQL; a store that refuses what the worker sent fails the run instead of leaving
 *      it running; `recover` then has nothing left to fail on [guard: worker fields
 *      validated; unrecordable call ends the run].
 *   5. calls refused before a host (arguments over max_value_bytes, or not JSON) count
 *      against the run's journal limit and are audited [guard: every journaled row
 *      counts].
 *   6. a completed value that is not JSON fails the run (not stored as succeeded); a
 *      value JSON.stringify really writes (a lone surrogate's escape) still completes
 *      [guard: completed value is JSON].
 *   7. frames written after Finished retire the worker: the next activation is not
 *      handed a forged Finished [guard: bytes after Finished retire the worker].
 * Bounds asserted on time are generous (several times the budget): they tell "stops
 * at the deadline" from "runs until the flood ends", never measure speed. */
#include "lib/cli_home.h"
#include "lib/harness.h"
#include "lib/store_view.h"

#include "base/json_text.h"
#include "flows/flow_host.h"
#include "host/test_host.h"
#include "supervisor/activation.h"
#include "supervisor/worker_check.h"

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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 120000


static char g_root[PATH_MAX];
static char g_home[PATH_MAX];
static char g_db[PATH_MAX];
static int g_scripts;

/* The attacker's script as a worker the parent can start: a wrapper that runs
 * evil_worker with it (the parent adds --landlock=POLICY). Returns the wrapper's path
 * (static storage, one of a ring of 8). */
static const char *attacker(const char *script)
{
    static char wrappers[8][PATH_MAX];
    char *wrapper = wrappers[g_scripts % 8];
    char path[PATH_MAX], text[PATH_MAX * 2 + 64];
    int n = ++g_scripts;
    sfmt(path, sizeof path, "%s/attack-%d.evil", g_root, n);
    sfmt(wrapper, PATH_MAX, "%s/attack-%d.sh", g_root, n);
    sfmt(text, sizeof text, "#!/bin/sh\nexec '%s' '--script=%s' \"$@\"\n",
         harness_path("test/tools/evil_worker"), path);
    if (!write_text_file(path, script, 0600) || !write_text_file(wrapper, text, 0700))
        fail("hostile: write the attacker's script", "%s", path);
    return wrapper;
}

/* ---- running ck-basal ------------------------------------------------------------ */

struct cli_out {
    bool exited;
    int exit_code;
    char *out; /* stdout, NUL-terminated */
    long maxrss_kib; /* the parent's peak resident set (its own, not its worker's) */
};

static void cli_out_free(struct cli_out *o)
{
    free(o->out);
    o->out = NULL;
}

/* ck-basal [--json] --home HOME args..., with BASAL_TEST_WORKER=worker when worker
 * is set. stderr is discarded; stdout is kept. Waits on a pidfd (60 s safety net)
 * and collects the parent's rusage with wait4. */
static struct cli_out cli(const char *worker, bool json, const char *const *args)
{
    struct cli_out o = {false, -1, NULL, 0};
    const char *argv[32];
    cli_argv(argv, 32, NULL, json, g_home, args);
    char entry[PATH_MAX + 32];
    sfmt(entry, sizeof entry, "BASAL_TEST_WORKER=%s", worker != NULL ? worker : "");
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0)
        return o;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (dup2(out[1], 1) < 0 || null < 0 || dup2(null, 2) < 0)
            _exit(127);
        signal(SIGPIPE, SIG_DFL);
        char *envp[] = {worker != NULL ? entry : NULL, NULL};
        execve(argv[0], (char *const *)(void *)argv, envp);
        _exit(127);
    }
    close(out[1]);
    if (pid < 0) {
        close(out[0]);
        return o;
    }
    size_t len = 0, cap = 4096;
    o.out = malloc(cap);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long waited = (now.tv_sec - start.tv_sec) * 1000LL + (now.tv_nsec - start.tv_nsec) / 1000000;
        struct pollfd p = {out[0], POLLIN, 0};
        if (waited >= TIMEOUT_MS || poll(&p, 1, (int)(TIMEOUT_MS - waited)) == 0) {
            kill(pid, SIGKILL); /* the safety net: report what came */
            break;
        }
        if (len + 4096 > cap) {
            cap *= 2;
            char *grown = realloc(o.out, cap);
            if (grown == NULL)
                break;
            o.out = grown;
        }
        ssize_t got = read(out[0], o.out + len, 4096);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        len += (size_t)got;
    }
    close(out[0]);
    o.out[len] = '\0';
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
    }
    o.exited = WIFEXITED(status);
    o.exit_code = o.exited ? WEXITSTATUS(status) : -1;
    o.maxrss_kib = ru.ru_maxrss;
    return o;
}


/* The first line of stdout as JSON (NULL if it is not). */
static json_t *first_json(const struct cli_out *o)
{
    if (o->out == NULL)
        return NULL;
    size_t line = strcspn(o->out, "\n");
    return json_loadb(o->out, line, JSON_DECODE_ANY, NULL);
}

static const char *str_of(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s != NULL ? s : "";
}

static long long int_of(const json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

/* ---- the store ------------------------------------------------------------------- */

static long long sql_number(const char *sql)
{
    return store_number(g_db, sql);
}

static bool sql_exec(const char *sql)
{
    return store_exec(g_db, sql);
}

__attribute__((format(printf, 1, 2))) static long long sqlf(const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    return sql_number(sql);
}

/* ---- flows ----------------------------------------------------------------------- */

/* Writes, installs and approves flow id with script and the manifest's extra fields. */
static bool flow_add(const char *id, const char *script, const char *extra)
{
    char dir[PATH_MAX], manifest[1024], why[1024] = "cannot write the flow";
    sfmt(dir, sizeof dir, "%s/flow-%s", g_root, id);
    sfmt(manifest, sizeof manifest,
         "{\"format\":1,\"id\":\"%s\",\"version\":1,\"purpose\":\"test\","
         "\"trigger\":{\"manual\":true}%s%s}", id, extra[0] != '\0' ? "," : "", extra);
    bool done = flow_dir_write(dir, manifest, script) &&
                cli_install_approve(g_home, HARNESS_EMPTY_ENV, dir, id, 1, why, sizeof why) ==
                    FLOW_ADDED;
    if (!done)
        fail("hostile: install and approve a flow", "flow %s: %s", id, why);
    return done;
}

/* `run FLOW --json` with the attacker as the worker: the report (NULL if none). */
static json_t *run_flow(const char *worker, const char *flow, int *exit_code)
{
    struct cli_out o = cli(worker, true, ARGS("run", flow));
    json_t *report = first_json(&o);
    if (exit_code != NULL)
        *exit_code = o.exit_code;
    cli_out_free(&o);
    return report;
}

static bool starts_with(const char *s, const char *prefix)
{
    return s != NULL && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* `recover` leaves nothing behind: exit 0 and no report. */
static bool recover_is_clean(void)
{
    struct cli_out o = cli(NULL, true, ARGS("recover"));
    bool clean = o.exit_code == 0 && o.out != NULL && o.out[0] == '\0';
    cli_out_free(&o);
    return clean;
}

/* ---- exec ------------------------------------------------------------------------ */

static const char *g_exec_script;

/* `exec SCRIPT --json extra...` through the attacker: the first run's report. */
static json_t *exec_attack(const char *worker, const char *const *extra, struct cli_out *keep)
{
    const char *argv[16] = {"exec", g_exec_script};
    int n = 2;
    for (int i = 0; extra != NULL && extra[i] != NULL && n < 15; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    struct cli_out o = cli(worker, true, argv);
    json_t *report = first_json(&o);
    if (keep != NULL)
        *keep = o;
    else
        cli_out_free(&o);
    return report;
}

/* ---- 0. the JSON grammar check ---------------------------------------------------- */

static void test_json_text(void)
{
    static const char *const good[] = {"0", "-0.5e+3", "\"\\ud800\"", "[1,{\"a\":[true,null]}]",
                                       " {} ", "\"\\u0000\\n\\/\"", "[]", "\"\xc3\xa9\""};
    static const char *const bad[] = {"", "01", "[1,]", "{\"a\"}", "\"\\x\"", "[1] 2", "{oops",
                                      "'a'", "nul", "1.", "\"\\ud8\"", "\"a\x01\"", "[", "{\"a\":1,}"};
    bool all = true;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        all = all && json_text_valid(good[i], strlen(good[i]));
    ok(all, "json_text: accepts JSON texts, lone-surrogate escapes and NUL escapes included");
    all = true;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (json_text_valid(bad[i], strlen(bad[i]))) {
            harness_note("accepted %s", bad[i]);
            all = false;
        }
    ok(all, "json_text: refuses what is not one JSON text");
    size_t depth = 4u << 20;
    char *deep = malloc(2 * depth);
    if (deep != NULL) {
        memset(deep, '[', depth);
        memset(deep + depth, ']', depth);
        ok(json_text_valid(deep, 2 * depth) && !json_text_valid(deep, 2 * depth - 1),
           "json_text: 4 Mi levels of nesting checked without recursion");
        free(deep);
    }
}

/* ---- 1. the deadline and the outstanding caps ---------------------------------- */

static void test_deadline_under_flood(void)
{
    if (!flow_add("flood", "return 1;\n", "\"deadline\":\"1s\""))
        return;
    /* Each kv.get is a journal transaction: the parent is the slow side of the pipe,
     * which the attacker keeps full. */
    const char *w = attacker("activate\nflood 60000 kv.get [\"k\"]\nfinish completed 1\n");
    json_t *r = run_flow(w, "flood", NULL);
    long long wall = int_of(r, "wall_ms");
    harness_note("a 60000-call flood against a 1 s deadline ended after %lld ms (%lld calls)",
                 wall, int_of(r, "host_calls"));
    check(strcmp(str_of(r, "state"), "failed") == 0 && starts_with(str_of(r, "error"), "deadline"),
          "flood: a HostCall flood ends the flow run at its wall deadline [guard: clock read"
          " after every frame]", "state %s, error %s", str_of(r, "state"), str_of(r, "error"));
    check(wall > 0 && wall < 1000 + 4000,
          "flood: the deadline holds within a small bound (1 s deadline, under 5 s)",
          "ran %lld ms", wall);
    json_decref(r);
}

static void test_outstanding_caps(void)
{
    const char *w = attacker("activate\nflood 1000000 test.echo [1]\nfinish completed 1\n");
    json_t *r = exec_attack(w, ARGS("--deadline-ms", "60000"), NULL);
    check(strcmp(str_of(r, "outcome"), "protocol_error") == 0 &&
              strstr(str_of(r, "detail"), "more than 65536 host calls outstanding") != NULL &&
              int_of(r, "host_calls") == (long long)ACTIVATION_MAX_OUTSTANDING_CALLS,
          "caps: the 65537th outstanding async call is a protocol error [guard:"
          " ACTIVATION_MAX_OUTSTANDING_CALLS]", "outcome %s (%s), %lld calls",
          str_of(r, "outcome"), str_of(r, "detail"), int_of(r, "host_calls"));
    json_decref(r);

    /* 1 KiB of arguments, echoed back: about 2 KiB held per call, until the cap. */
    char script[2048];
    char kib[1100];
    memset(kib, 'a', 1024);
    kib[1024] = '\0';
    sfmt(script, sizeof script, "activate\nflood 1000000 test.echo [\"%s\"]\nfinish completed 1\n", kib);
    w = attacker(script);
    struct cli_out o;
    r = exec_attack(w, ARGS("--deadline-ms", "60000"), &o);
    harness_note("a flood of 1 KiB calls: parent peak RSS %ld KiB, %lld calls accepted",
                 o.maxrss_kib, int_of(r, "host_calls"));
    check(strcmp(str_of(r, "outcome"), "protocol_error") == 0 &&
              strstr(str_of(r, "detail"), "outstanding host calls would hold more than") != NULL,
          "caps: outstanding calls holding over 64 MiB are a protocol error [guard:"
          " ACTIVATION_MAX_OUTSTANDING_BYTES]", "outcome %s (%s)", str_of(r, "outcome"),
          str_of(r, "detail"));
    /* 64 MiB held, the 32 MiB frame buffer, and ASan's quarantine in the asan build. */
    long limit_kib = strcmp(harness_variant(), "asan") == 0 ? 1024L * 1024 : 512L * 1024;
    check(o.maxrss_kib > 0 && o.maxrss_kib < limit_kib,
          "caps: the parent's memory stays bounded under a 1 GB flood", "peak RSS %ld KiB, limit %ld",
          o.maxrss_kib, limit_kib);
    cli_out_free(&o);
    json_decref(r);
}

/* ---- 2. Blocked ------------------------------------------------------------------ */

static void test_blocked(void)
{
    const char *w = attacker("activate\nflood 60000 test.echo [1]\nblocked-dup 1000000 59999\n");
    json_t *r = exec_attack(w, ARGS("--deadline-ms", "60000"), NULL);
    check(strcmp(str_of(r, "outcome"), "protocol_error") == 0 &&
              strstr(str_of(r, "detail"), "names position 59999 twice") != NULL &&
              int_of(r, "wall_ms") < 20000,
          "blocked: a Blocked naming a position twice is refused at once [guard: Blocked"
          " linear in its frame]", "outcome %s (%s) after %lld ms", str_of(r, "outcome"),
          str_of(r, "detail"), int_of(r, "wall_ms"));
    json_decref(r);

    w = attacker("activate\ncall test.sleep [30000]\nblocked 0\nblocked 0\n");
    r = exec_attack(w, ARGS("--deadline-ms", "60000"), NULL);
    check(strcmp(str_of(r, "outcome"), "protocol_error") == 0 &&
              strstr(str_of(r, "detail"), "Blocked while already blocked") != NULL &&
              int_of(r, "wall_ms") < 20000,
          "blocked: a second Blocked while blocked is refused [guard: one Blocked at a time]",
          "outcome %s (%s) after %lld ms", str_of(r, "outcome"), str_of(r, "detail"),
          int_of(r, "wall_ms"));
    json_decref(r);

    w = attacker("activate\nflood 60000 test.echo [1]\nblocked-all\ndeliver\nfinish completed 7\n");
    r = exec_attack(w, ARGS("--deadline-ms", "60000"), NULL);
    harness_note("a Blocked naming 60000 outstanding calls: served in an activation of %lld ms",
                 int_of(r, "wall_ms"));
    check(strcmp(str_of(r, "outcome"), "completed") == 0 &&
              json_integer_value(json_object_get(r, "value")) == 7,
          "blocked: control: a Blocked naming all 60000 outstanding calls is served",
          "outcome %s (%s)", str_of(r, "outcome"), str_of(r, "detail"));
    json_decref(r);
}

/* ---- 3. a forged suspension, and cancel ------------------------------------------ */

static void test_forged_suspension(void)
{
    if (!flow_add("sus", "return 1;\n", ""))
        return;
    json_t *r = run_flow(attacker("activate\nfinish suspended\n"), "sus", NULL);
    check(strcmp(str_of(r, "state"), "failed") == 0 &&
              starts_with(str_of(r, "error"), "protocol error: Finished(suspended)"),
          "suspended: a Finished(suspended) no LongRunning asked for fails the flow run"
          " [guard: forged suspension refused]", "state %s, error %s", str_of(r, "state"),
          str_of(r, "error"));
    json_decref(r);
    r = run_flow(attacker("activate\nfinish completed 2\n"), "sus", NULL);
    ok(strcmp(str_of(r, "state"), "succeeded") == 0,
       "suspended: the flow's next run is admitted and runs");
    json_decref(r);
}

/* Runs `cancel RUN [--reason]`; returns the exit code and the report. */
static json_t *cancel(const char *run, const char *reason, int *exit_code)
{
    struct cli_out o = reason != NULL ? cli(NULL, true, ARGS("cancel", run, "--reason", reason))
                                      : cli(NULL, true, ARGS("cancel", run));
    *exit_code = o.exit_code;
    json_t *r = first_json(&o);
    cli_out_free(&o);
    return r;
}

/* This process as a run owner ("pid:<pid>:<start ticks>"), as store/runs.c writes it. */
static void owner_self(char *out, size_t cap)
{
    char *stat = read_text_file("/proc/self/stat");
    const char *p = stat != NULL ? strrchr(stat, ')') : NULL;
    for (int field = 2; field < 22 && p != NULL; field++)
        p = strchr(p + 1, ' ');
    sfmt(out, cap, "pid:%d:%llu", (int)getpid(), p != NULL ? strtoull(p + 1, NULL, 10) : 0ULL);
    free(stat);
}

static void test_cancel(void)
{
    if (!flow_add("wedge", "return 1;\n", ""))
        return;
    /* A run for each state that is not an end, made as a crash or a forged frame
     * leaves them (the store written directly: the old parent accepted a forged
     * suspension, so a store may hold one). */
    json_t *r = run_flow(attacker("activate\nfinish completed 1\n"), "wedge", NULL);
    long long id = int_of(r, "run");
    json_decref(r);
    char sql[512], idtext[32], owner[96];
    sfmt(idtext, sizeof idtext, "%lld", id);
    static const char *const states[] = {"suspended", "needs_reconcile", "pending", "running"};
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
        sfmt(sql, sizeof sql, "UPDATE runs SET state = '%s', owner = %s WHERE id = %lld", states[i],
             strcmp(states[i], "running") == 0 ? "'pid:999999999:1'" : "NULL", id);
        if (!sql_exec(sql)) {
            fail("cancel: set up the run's state", "%s", sql);
            return;
        }
        struct cli_out o = cli(NULL, false, ARGS("run", "wedge"));
        bool blocked = o.exit_code == 1;
        cli_out_free(&o);
        int code;
        json_t *c = cancel(idtext, i == 0 ? "forged suspension" : NULL, &code);
        long long audits = sqlf("SELECT count(*) FROM audit WHERE run_id = %lld AND kind ="
                                " 'cancel'", id);
        char name[200];
        sfmt(name, sizeof name, "cancel: a %s run%s is cancelled, audited, and its flow runs"
             " again [guard: no run state is a dead end]", states[i],
             strcmp(states[i], "running") == 0 ? " whose owner is gone" : "");
        bool ended = code == 0 && strcmp(str_of(c, "state"), "cancelled") == 0 &&
                     strcmp(str_of(c, "was"), states[i]) == 0 && audits == 1;
        json_decref(c);
        r = run_flow(attacker("activate\nfinish completed 1\n"), "wedge", NULL);
        check(blocked && ended && strcmp(str_of(r, "state"), "succeeded") == 0, name,
              "new run refused before: %d, cancel exit %d, audits %lld, next run %s", blocked,
              code, audits, str_of(r, "state"));
        id = int_of(r, "run");
        sfmt(idtext, sizeof idtext, "%lld", id);
        json_decref(r);
    }
    char *error =
        store_text(g_db, "SELECT error FROM runs WHERE state = 'cancelled' ORDER BY id LIMIT 1");
    check_str_eq(error, "cancelled by the operator (was suspended): forged suspension",
                 "cancel: the run's error names the operator, the state and the reason");
    free(error);

    /* The run `id` succeeded: ended runs, unknown runs and live owners are refused. */
    long long before = sql_number("SELECT count(*) FROM audit");
    int code;
    json_t *c = cancel(idtext, NULL, &code);
    ok(code == 1 && c == NULL, "cancel: a succeeded run is refused (exit 1)");
    json_decref(c);
    c = cancel("999999", NULL, &code);
    ok(code == 1 && c == NULL, "cancel: an unknown run is refused (exit 1)");
    json_decref(c);
    owner_self(owner, sizeof owner);
    sfmt(sql, sizeof sql, "UPDATE runs SET state = 'running', owner = '%s' WHERE id = %lld",
         owner, id);
    if (sql_exec(sql)) {
        c = cancel(idtext, NULL, &code);
        ok(code == 1 && c == NULL && sqlf("SELECT count(*) FROM runs WHERE id = %lld AND state ="
                                          " 'running'", id) == 1,
           "cancel: a run whose owner is alive is refused and left running [guard: a live"
           " owner ends its own run]");
        json_decref(c);
    }
    struct cli_out o = cli(NULL, false, ARGS("cancel", "x"));
    int usage1 = o.exit_code;
    cli_out_free(&o);
    o = cli(NULL, false, ARGS("cancel", idtext, "--reason", "two\nlines"));
    int usage2 = o.exit_code;
    cli_out_free(&o);
    o = cli(NULL, false, ARGS("cancel"));
    int usage3 = o.exit_code;
    cli_out_free(&o);
    ok(usage1 == 2 && usage2 == 2 && usage3 == 2 &&
           sql_number("SELECT count(*) FROM audit") == before,
       "cancel: bad arguments exit 2 and no refusal writes anything");
    sfmt(sql, sizeof sql, "UPDATE runs SET state = 'succeeded', owner = NULL WHERE id = %lld", id);
    sql_exec(sql);
}

/* ---- 4. fields a worker sends, and what the store refuses ------------------------ */

static void test_worker_fields(void)
{
    if (!flow_add("kinds", "return 1;\n", ""))
        return;
    int code;
    json_t *r = run_flow(attacker("activate\ncall (empty) []\nblocked-all\ndeliver\n"
                                  "finish completed 1\n"),
                         "kinds", &code);
    long long id = int_of(r, "run");
    check(strcmp(str_of(r, "state"), "failed") == 0 &&
              starts_with(str_of(r, "error"), "protocol error: HostCall at position 0: its kind"),
          "fields: an empty kind is a protocol error and the run fails [guard: kinds checked"
          " before SQL]", "exit %d, state %s, error %s", code, str_of(r, "state"),
          str_of(r, "error"));
    ok(sqlf("SELECT count(*) FROM journal WHERE run_id = %lld", id) == 0,
       "fields: nothing of the refused call reached the journal");
    ok(recover_is_clean(), "fields: recover has nothing left to drive");
    json_decref(r);

    r = run_flow(attacker("activate\ncall kv.get;drop [\"k\"]\nblocked-all\ndeliver\n"
                          "finish completed 1\n"),
                 "kinds", NULL);
    ok(strcmp(str_of(r, "state"), "failed") == 0 &&
           starts_with(str_of(r, "error"), "protocol error: HostCall at position 0: its kind"),
       "fields: a kind with characters no host-call name has is a protocol error");
    json_decref(r);

    /* The real worker, and a store that refuses its (valid) call. */
    if (!flow_add("refused", "await kv.get('k');\nreturn 1;\n", ""))
        return;
    if (!sql_exec("CREATE TRIGGER test_refuse BEFORE INSERT ON journal WHEN NEW.kind = 'kv.get'"
                  " BEGIN SELECT RAISE(ABORT, 'the store refuses this row'); END;")) {
        fail("fields: add the refusing trigger", "%s", g_db);
        return;
    }
    r = run_flow(NULL, "refused", &code);
    check(strcmp(str_of(r, "state"), "failed") == 0 &&
              starts_with(str_of(r, "error"), "protocol error: the store refused to record"
                                              " position 0 (kv.get)"),
          "fields: a call the store refuses to record fails the run, never leaves it running"
          " [guard: an unrecordable call ends the run]", "exit %d, state %s, error %s", code,
          str_of(r, "state"), str_of(r, "error"));
    ok(recover_is_clean(), "fields: recover does not fail on that run again");
    json_decref(r);
    sql_exec("DROP TRIGGER test_refuse");
}

/* ---- 5. refusals before a host count ---------------------------------------------- */

static void test_refusals_count(const char *flow, const char *call, int times, const char *what,
                                const char *name)
{
    char script[256];
    sfmt(script, sizeof script, "activate\nrepeat %d\n%s\nblocked-all\ndeliver\nend\n"
         "finish completed 1\n", times, call);
    if (!flow_add(flow, "return 1;\n", ""))
        return;
    json_t *r = run_flow(attacker(script), flow, NULL);
    long long id = int_of(r, "run");
    long long bytes = sqlf("SELECT coalesce(sum(length(args)), 0) FROM journal WHERE run_id ="
                           " %lld", id);
    long long rows = sqlf("SELECT count(*) FROM journal WHERE run_id = %lld", id);
    long long audited = sqlf("SELECT count(DISTINCT position) FROM audit WHERE run_id = %lld AND"
                             " decision = 'refused'", id);
    harness_note("%s: %lld rows, %lld bytes of arguments journaled", what, rows, bytes);
    check(strcmp(str_of(r, "state"), "failed") == 0 &&
              starts_with(str_of(r, "error"), "limit: the run reached its limit") &&
              bytes <= (long long)FLOW_RUN_MAX_JOURNAL_BYTES && rows > 0,
          name, "state %s, error %s, %lld bytes journaled", str_of(r, "state"),
          str_of(r, "error"), bytes);
    char audit_name[200];
    sfmt(audit_name, sizeof audit_name, "refusals: every %s row is audited refused", what);
    check(rows > 0 && audited == rows, audit_name, "%lld rows, %lld audited", rows, audited);
    json_decref(r);
}

/* ---- 6. the completed value ------------------------------------------------------- */

static void test_completed_value(void)
{
    if (!flow_add("value", "return 1;\n", ""))
        return;
    json_t *r = run_flow(attacker("activate\nfinish completed {\"a\": oops\n"), "value", NULL);
    check(strcmp(str_of(r, "state"), "failed") == 0 &&
              starts_with(str_of(r, "error"), "protocol error: Finished(completed) with a value"
                                              " that is not JSON"),
          "value: a completed value that is not JSON fails the run [guard: completed value is"
          " JSON]", "state %s, error %s", str_of(r, "state"), str_of(r, "error"));
    ok(sqlf("SELECT count(*) FROM runs WHERE id = %lld AND result IS NULL", int_of(r, "run")) == 1,
       "value: nothing of it is stored as the run's result");
    json_decref(r);

    /* The real worker: JSON.stringify writes a lone surrogate as its escape. */
    char path[PATH_MAX];
    sfmt(path, sizeof path, "%s/surrogate.js", g_root);
    write_text_file(path, "return ['\\ud800', '\\u0000'];\n", 0644);
    struct cli_out o = cli(NULL, true, ARGS("exec", path));
    r = first_json(&o);
    check(strcmp(str_of(r, "outcome"), "completed") == 0,
          "value: control: a lone surrogate's escape from the real worker still completes",
          "outcome %s (%s)", str_of(r, "outcome"), str_of(r, "detail"));
    cli_out_free(&o);
    json_decref(r);
}

/* ---- 7. frames after Finished ------------------------------------------------------ */

static void test_after_finished(void)
{
    /* One write: Finished and, behind it, a forged Finished for the next activation. */
    const char *w = attacker("activate\nfinish completed 1\nfinish completed \"stolen\"\n");
    struct cli_out o = cli(w, true, ARGS("exec", g_exec_script, g_exec_script, "--flow", "victim"));
    char *second = o.out != NULL ? strchr(o.out, '\n') : NULL;
    json_t *a = first_json(&o);
    json_t *b = second != NULL ? json_loads(second + 1, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
    char *value = b != NULL ? json_dumps(json_object_get(b, "value"), JSON_ENCODE_ANY) : NULL;
    check(json_integer_value(json_object_get(a, "value")) == 1 &&
              json_integer_value(json_object_get(b, "value")) == 1 &&
              int_of(a, "pid") != int_of(b, "pid") && int_of(a, "pid") > 0,
          "after finished: bytes after Finished retire the worker; the next activation gets a"
          " fresh one, not the forged Finished [guard: bytes after Finished retire the worker]",
          "first pid %lld, second pid %lld value %s", int_of(a, "pid"), int_of(b, "pid"),
          value != NULL ? value : "(none)");
    free(value);
    json_decref(a);
    json_decref(b);
    cli_out_free(&o);
}

/* The driver itself, in process, on the same attacker: the activation that read bytes
 * behind its Finished says so, and the worker is not kept (the pool's idle sweep is a
 * second, later look at the same bytes). */
static void test_after_finished_driver(void)
{
    const char *w = attacker("activate\nfinish completed 1\ncall test.echo [1]\n");
    struct worker_limits limits = {WORKER_FLOW_ADDRESS_SPACE, WORKER_OPEN_FILES};
    struct worker_proc proc;
    struct worker_report report;
    if (!worker_start_checked_with(w, LANDLOCK_POLICY_REQUIRED, &limits, 10000, &proc, &report)) {
        fail("after finished: the attacker is accepted", "%s", report.reason);
        return;
    }
    struct worker_conn conn;
    worker_conn_init(&conn, &proc);
    struct activation_request req;
    memset(&req, 0, sizeof req);
    activation_request_defaults(&req, PROTO_PROFILE_FLOW);
    req.script = "return 1";
    req.script_len = strlen(req.script);
    req.deadline_ms = 10000;
    struct test_host *th = test_host_new();
    struct host host = test_host_interface(th);
    struct activation_outcome out;
    activation_run(&conn, &req, &host, &out);
    check(out.status == ACTIVATION_COMPLETED && out.wrote_after_finished &&
              !activation_keeps_worker(&out),
          "after finished: the driver flags bytes read behind Finished and does not keep the"
          " worker [guard: wrote_after_finished]", "status %s, flagged %d",
          activation_status_name(out.status), out.wrote_after_finished);
    activation_outcome_free(&out);
    if (worker_conn_alive(&conn))
        (void)worker_conn_kill(&conn);
    test_host_free(th);
}

/* A section runs when no filter was given or the filter names it (comma-separated). */
static bool wanted(const char *only, const char *name)
{
    if (only == NULL)
        return true;
    size_t len = strlen(name);
    for (const char *at = only; *at != '\0';) {
        size_t word = strcspn(at, ",");
        if (word == len && strncmp(at, name, len) == 0)
            return true;
        at += word;
        if (*at == ',')
            at++;
    }
    return false;
}

int main(int argc, char **argv)
{
    if (!require_binary(harness_test_parent(), "hostile: ck-basal built") ||
        !require_binary(harness_path("test/tools/evil_worker"), "hostile: evil_worker built"))
        return harness_finish();
    if (!harness_tmpdir_copy("hostile", g_root, sizeof g_root))
        return harness_finish();
    sfmt(g_home, sizeof g_home, "%s/home", g_root);
    sfmt(g_db, sizeof g_db, "%s/basal.db", g_home);
    char script[PATH_MAX];
    sfmt(script, sizeof script, "%s/any.js", g_root);
    write_text_file(script, "return 0;\n", 0644);
    g_exec_script = script;
    struct cli_out o = cli(NULL, false, ARGS("setup"));
    if (o.exit_code != 0) {
        fail("hostile: setup", "exit %d", o.exit_code);
        cli_out_free(&o);
        return harness_finish();
    }
    cli_out_free(&o);

    /* An argument runs only the sections it names (for a reviewer reverting one fix). */
    const char *only = argc > 1 ? argv[1] : NULL;
    if (wanted(only, "json"))
        test_json_text();
    if (wanted(only, "flood"))
        test_deadline_under_flood();
    if (wanted(only, "caps"))
        test_outstanding_caps();
    if (wanted(only, "blocked"))
        test_blocked();
    if (wanted(only, "suspended"))
        test_forged_suspension();
    if (wanted(only, "cancel"))
        test_cancel();
    if (wanted(only, "fields"))
        test_worker_fields();
    if (wanted(only, "oversized"))
        test_refusals_count("oversized", "big-call 1048576 kv.get", 100, "oversized-arguments",
                            "refusals: 100 calls of 1 MiB arguments (over max_value_bytes) stop"
                            " at the run's 64 MiB journal limit [guard: driver refusals count]");
    if (wanted(only, "notjson"))
        test_refusals_count("notjson", "big-call 204800 kv.get not-json", 400, "not-JSON",
                            "refusals: 400 calls of 200 KiB that are not JSON stop at the run's"
                            " 64 MiB journal limit [guard: unparseable arguments count]");
    if (wanted(only, "value"))
        test_completed_value();
    if (wanted(only, "finished")) {
        test_after_finished();
        test_after_finished_driver();
    }
    harness_remove_tree(g_root);
    return harness_finish();
}
