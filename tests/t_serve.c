/* ck-basal serve, driven as an operator and systemd drive it (issue 11; serve/daemon.h):
 *
 *   1. one serve per data home: a second one refuses with one line naming the first
 *      [guard: serve lock];
 *   2. `run` through a serve prints what it prints without one (both homes built the same
 *      way), and `runs`, `journal`, `health` print the same with the serve up and down
 *      [guard: one rendering for both paths];
 *   3. 50 runs across 10 flows admitted at once (run --detach through the socket) all
 *      end; a flow's activations never overlap (activation rows); different flows' did
 *      [guard: one run per flow at a time; runner threads];
 *   4. SIGKILL of serve in the middle of runs of several flows, then a new serve: every
 *      run ends succeeded, each keyed module effect seen at most twice and always with
 *      one key, kv holds each run's value [guard: recovery at start];
 *   5. SIGTERM with a run in flight: serve exits 0 (within the grace when it is 0 s,
 *      leaving the run to the next start, which finishes it; after the run when the grace
 *      allows) [guard: SIGTERM grace]; with runs of many flows in flight, none of them
 *      loses its worker [guard: runners outlive the pool's workers];
 *   6. every health figure serve reports equals what the store says once it stopped;
 *      READY=1 and STOPPING=1 reach NOTIFY_SOCKET; --metrics serves the Prometheus text
 *      (curl, prometheus_client's parser); a peer of another uid is refused, logged and
 *      audited [guard: SO_PEERCRED on the daemon's socket];
 *   7. bad options are usage errors; `run --detach` without a serve is refused; a run
 *      beyond the flow's backlog is refused with the reason and nothing stored.
 * Readiness is read from serve's own log line (event=ready), never waited for by time. */
#include "lib/harness.h"
#include "lib/serve_home.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 120000

static char g_root[PATH_MAX];

struct home {
    struct test_home t;
    char keyed_log[PATH_MAX + 16];
};

static struct proc_result cli_in(const struct home *h, bool json, const char *const *args)
{
    return test_home_cli(&h->t, json, args);
}

static void home_begin(struct home *h, const char *name)
{
    memset(h, 0, sizeof *h);
    test_home_begin(&h->t, g_root, name);
    sfmt(h->keyed_log, sizeof h->keyed_log, "%s/keyed.log", h->t.dir);
    char catalog[2048], path[PATH_MAX + 32];
    sfmt(catalog, sizeof catalog,
         "{\"modules\": {\"keyed\": {\"program\": \"%s\", \"args\": [\"--log\", \"%s\"],"
         " \"ops\": {\"echo\": {\"kind\": \"mutate\", \"idempotent\": true}}}}}",
         harness_path("test/tools/test_module"), h->keyed_log);
    sfmt(path, sizeof path, "%s/modules.json", h->t.home);
    if (!write_text_file(path, catalog, 0600))
        fail("serve: catalog", "%s", path);
}

/* A flow that calls the keyed module, burns some CPU (so runs last long enough to
 * overlap and to be caught in flight), writes kv and returns its trigger's n. */
static const char *WORK_FLOW =
    "const n = trigger.n;\n"
    "await ops.call('keyed', 'echo', {n});\n"
    "let x = 0; for (let i = 0; i < (trigger.spin || 300000); i++) x += i;\n"
    "await kv.set('last', n);\n"
    "return n;\n";

static bool flow_add(const struct home *h, const char *id, const char *script)
{
    return test_home_flow(&h->t, id, 1,
                          "{\"manual\":true},\"ops\":[{\"module\":\"keyed\",\"op\":\"echo\"}]",
                          script);
}

static long long sql_number(const struct home *h, const char *sql)
{
    return test_home_sql(&h->t, sql);
}

/* ---- a serve process (tests/lib/serve_home.h) ------------------------------------- */

static bool serve_start(struct test_serve *s, const struct home *h, const char *const *extra)
{
    return test_serve_start(s, &h->t, extra, NULL);
}

/* ---- the checks ------------------------------------------------------------------ */

static void test_one_per_home(void)
{
    struct home h;
    home_begin(&h, "lock");
    struct test_serve s;
    bool up = serve_start(&s, &h, NULL);
    ok(up, "serve: starts on a data home and logs event=ready");
    struct proc_result second = cli_in(&h, false, ARGS("serve"));
    char pid_text[32];
    sfmt(pid_text, sizeof pid_text, "(pid %d)", (int)s.p.pid);
    check(proc_exited_with(&second, 1) && strstr(second.err, "already running") != NULL &&
              strstr(second.err, pid_text) != NULL,
          "serve: a second serve on the same home refuses with one line naming the live one "
          "[guard: serve lock]",
          "%s: %s", proc_describe(&second), second.err);
    proc_result_free(&second);
    kill(s.p.pid, SIGTERM);
    int code = test_serve_end(&s, TIMEOUT_MS);
    check(code == 0 && strstr(s.log, "event=stopped") != NULL,
          "serve: SIGTERM with nothing running: exit 0 after event=stopped", "exit %d; log %.400s",
          code, s.log);
}

static void test_same_output_both_ways(void)
{
    struct home a, b;
    home_begin(&a, "both-a");
    home_begin(&b, "both-b");
    bool flows = flow_add(&a, "hello", WORK_FLOW) && flow_add(&b, "hello", WORK_FLOW);
    ok(flows, "serve: two homes built the same way");
    struct test_serve s;
    if (!serve_start(&s, &a, NULL)) {
        fail("serve: starts for the output comparison", "%.400s", s.log);
        return;
    }
    const char *const human[] = {"run", "hello", "--trigger", "{\"n\":7,\"spin\":10}",
                                 "--trigger-id", "same", NULL};
    struct proc_result via = cli_in(&a, false, human);
    struct proc_result direct = cli_in(&b, false, human);
    check(proc_exited_with(&via, 0) && proc_exited_with(&direct, 0) &&
              strcmp(via.out, direct.out) == 0 && strstr(via.out, "succeeded") != NULL,
          "serve: run through a serve prints what run without one prints (human)",
          "through serve: %s %s%s; without: %s %s", proc_describe(&via), via.out, via.err,
          proc_describe(&direct), direct.out);
    proc_result_free(&via);
    proc_result_free(&direct);
    const char *const json_run[] = {"run", "hello", "--trigger", "{\"n\":8,\"spin\":10}",
                                    "--trigger-id", "same-json", NULL};
    via = cli_in(&a, true, json_run);
    direct = cli_in(&b, true, json_run);
    cli_output_drop_wall(via.out);
    cli_output_drop_wall(direct.out);
    check(proc_exited_with(&via, 0) && proc_exited_with(&direct, 0) &&
              strcmp(via.out, direct.out) == 0,
          "serve: run --json through a serve prints what it prints without one (but wall_ms)",
          "through serve: %s; without: %s", via.out, direct.out);
    proc_result_free(&via);
    proc_result_free(&direct);

    /* The same home, serve up then down: the views must not differ by a byte. */
    static const char *const VIEWS[][4] = {
        {"runs", NULL}, {"journal", "1", NULL}, {"flow", "list", NULL}};
    struct proc_result up[3][2];
    for (int v = 0; v < 3; v++)
        for (int j = 0; j < 2; j++)
            up[v][j] = cli_in(&a, j == 1, VIEWS[v]);
    kill(s.p.pid, SIGTERM);
    int code = test_serve_end(&s, TIMEOUT_MS);
    ok(code == 0, "serve: stops with exit 0 on SIGTERM");
    for (int v = 0; v < 3; v++) {
        for (int j = 0; j < 2; j++) {
            struct proc_result down = cli_in(&a, j == 1, VIEWS[v]);
            char name[200];
            sfmt(name, sizeof name,
                 "serve: `%s%s%s` prints the same through the serve and on the store [guard: "
                 "one rendering for both paths]",
                 j == 1 ? "--json " : "", VIEWS[v][0], VIEWS[v][1] != NULL ? " ..." : "");
            check(proc_exited_with(&up[v][j], 0) && proc_exited_with(&down, 0) &&
                      strcmp(up[v][j].out, down.out) == 0,
                  name, "up: %s %.300s%.200s; down: %.300s", proc_describe(&up[v][j]),
                  up[v][j].out, up[v][j].err, down.out);
            proc_result_free(&down);
            proc_result_free(&up[v][j]);
        }
    }
}

#define FLOWS 10
#define RUNS_PER_FLOW 5

static void admit_many(const struct home *h, int base, int spin)
{
    /* All at once: 50 clients on the socket together. */
    struct proc procs[FLOWS * RUNS_PER_FLOW];
    char triggers[FLOWS * RUNS_PER_FLOW][64], flows[FLOWS][16];
    int started = 0;
    for (int f = 0; f < FLOWS; f++)
        sfmt(flows[f], sizeof flows[f], "f%d", f);
    for (int i = 0; i < FLOWS * RUNS_PER_FLOW; i++) {
        sfmt(triggers[i], sizeof triggers[i], "{\"n\":%d,\"spin\":%d}", base + i, spin);
        const char *argv[CLI_MAX_ARGS + 6];
        cli_argv(argv, sizeof argv / sizeof argv[0], NULL, false, h->t.home,
                 ARGS("run", flows[i % FLOWS], "--trigger", triggers[i], "--detach"));
        struct proc_opts opts = {false, PROC_PIPE, PROC_PIPE, PROC_PIPE, NULL};
        if (proc_start(&procs[i], argv, &opts) == 0)
            started++;
        else
            procs[i].pid = -1;
    }
    int admitted = 0;
    char first_bad[400] = "";
    for (int i = 0; i < FLOWS * RUNS_PER_FLOW; i++) {
        if (procs[i].pid < 0)
            continue;
        struct proc_result r = proc_finish(&procs[i], NULL, 0, TIMEOUT_MS);
        if (proc_exited_with(&r, 0))
            admitted++;
        else if (first_bad[0] == '\0')
            sfmt(first_bad, sizeof first_bad, "%s: %s", proc_describe(&r), r.err);
        proc_result_free(&r);
    }
    check(admitted == FLOWS * RUNS_PER_FLOW,
          "serve: 50 runs across 10 flows admitted at once through the socket (run --detach)",
          "%d of %d admitted (%d started); first refusal: %s", admitted, FLOWS * RUNS_PER_FLOW,
          started, first_bad);
}

/* flow drain on every flow: returns when its runs have ended. */
static bool drain_all(const struct home *h)
{
    bool good = true;
    for (int f = 0; f < FLOWS; f++) {
        char id[16];
        sfmt(id, sizeof id, "f%d", f);
        struct proc_result r = cli_in(h, false, ARGS("flow", "drain", id));
        if (!proc_exited_with(&r, 0)) {
            fprintf(stderr, "  drain %s: %s %s\n", id, proc_describe(&r), r.err);
            good = false;
        }
        proc_result_free(&r);
        r = cli_in(h, false, ARGS("flow", "enable", id));
        proc_result_free(&r);
    }
    return good;
}

static void test_concurrency(void)
{
    struct home h;
    home_begin(&h, "many");
    bool flows = true;
    for (int f = 0; f < FLOWS; f++) {
        char id[16];
        sfmt(id, sizeof id, "f%d", f);
        flows = flows && flow_add(&h, id, WORK_FLOW);
    }
    ok(flows, "serve: 10 flows installed and approved");
    struct test_serve s;
    if (!serve_start(&s, &h, ARGS("--max-runs", "4"))) {
        fail("serve: starts for the concurrency check", "%.400s", s.log);
        return;
    }
    admit_many(&h, 0, 300000);
    bool drained = drain_all(&h);
    ok(drained, "serve: flow drain returns for every flow once its runs ended");
    long long succeeded = sql_number(&h, "SELECT count(*) FROM runs WHERE state = 'succeeded'");
    check(succeeded == (long long)FLOWS * RUNS_PER_FLOW, "serve: all 50 runs end succeeded",
          "%lld succeeded; log %.600s", succeeded, s.log);
    long long overlap_same = sql_number(
        &h, "SELECT count(*) FROM activations a JOIN runs ra ON ra.id = a.run_id,"
            " activations b JOIN runs rb ON rb.id = b.run_id"
            " WHERE ra.flow_id = rb.flow_id AND a.rowid < b.rowid"
            " AND a.started_at < b.ended_at AND b.started_at < a.ended_at");
    check(overlap_same == 0,
          "serve: a flow's activations never overlap (activation rows) [guard: one run per "
          "flow at a time]",
          "%lld overlapping pairs", overlap_same);
    long long overlap_other = sql_number(
        &h, "SELECT count(*) FROM activations a JOIN runs ra ON ra.id = a.run_id,"
            " activations b JOIN runs rb ON rb.id = b.run_id"
            " WHERE ra.flow_id <> rb.flow_id AND a.rowid < b.rowid"
            " AND a.started_at < b.ended_at AND b.started_at < a.ended_at");
    check(overlap_other > 0,
          "serve: activations of different flows did overlap [guard: runner threads]",
          "%lld overlapping pairs of different flows", overlap_other);
    long long order_breaks = sql_number(
        &h, "SELECT count(*) FROM activations a JOIN runs ra ON ra.id = a.run_id,"
            " activations b JOIN runs rb ON rb.id = b.run_id"
            " WHERE ra.flow_id = rb.flow_id AND ra.id < rb.id AND a.started_at > b.started_at");
    check(order_breaks == 0, "serve: a flow's runs start in admission order",
          "%lld pairs out of order", order_breaks);

    /* Health the daemon reports, then what the store says once it stopped. */
    struct proc_result live = cli_in(&h, true, ARGS("health"));
    kill(s.p.pid, SIGTERM);
    int code = test_serve_end(&s, TIMEOUT_MS);
    ok(code == 0, "serve: exit 0 on SIGTERM after the concurrency check");
    struct proc_result after = cli_in(&h, true, ARGS("health"));
    json_t *a = cli_output_json(&live), *b = cli_output_json(&after);
    json_t *live_pool = json_object_get(a, "pool");
    bool pool_ok = json_is_object(live_pool) && json_object_get(live_pool, "idle") != NULL;
    if (a != NULL && b != NULL) {
        json_object_del(a, "pool");
        json_object_del(b, "pool");
    }
    check(a != NULL && b != NULL && json_equal(a, b) && pool_ok,
          "serve: every health figure serve reports (runs by state, activations by outcome, "
          "queue depth and last run per flow, worker counters; all but the live pool gauges) "
          "equals what the store says after it stopped; serve adds the pool's idle gauge",
          "live %.500s; after %.500s", live.out, after.out);
    json_decref(a);
    json_decref(b);
    proc_result_free(&live);
    proc_result_free(&after);
}

/* Keyed log: per n, at most two lines, one key. */
static bool keyed_effects_ok(const struct home *h, int from, int count, char *why, size_t cap)
{
    char *text = read_text_file(h->keyed_log);
    if (text == NULL) {
        snprintf(why, cap, "no keyed log");
        return false;
    }
    int seen[FLOWS * RUNS_PER_FLOW];
    char keys[FLOWS * RUNS_PER_FLOW][96];
    memset(seen, 0, sizeof seen);
    memset(keys, 0, sizeof keys);
    bool good = true;
    char op[32], key[96];
    int logged_n;
    for (char *cursor = text; test_effect_log_next(&cursor, op, key, &logged_n);) {
        int n = logged_n - from;
        if (n < 0 || n >= count)
            continue;
        if (seen[n]++ == 0)
            snprintf(keys[n], sizeof keys[n], "%s", key);
        else if (strcmp(keys[n], key) != 0) {
            snprintf(why, cap, "n=%d seen with keys %s and %s", n + from, keys[n], key);
            good = false;
        }
    }
    for (int n = 0; n < count && good; n++) {
        if (seen[n] < 1 || seen[n] > 2) {
            snprintf(why, cap, "n=%d seen %d times", n + from, seen[n]);
            good = false;
        }
    }
    free(text);
    return good;
}

static void test_sigkill_and_restart(void)
{
    struct home h;
    home_begin(&h, "kill");
    bool flows = true;
    for (int f = 0; f < FLOWS; f++) {
        char id[16];
        sfmt(id, sizeof id, "f%d", f);
        flows = flows && flow_add(&h, id, WORK_FLOW);
    }
    ok(flows, "serve: 10 flows for the SIGKILL check");
    struct test_serve s;
    if (!serve_start(&s, &h, ARGS("--max-runs", "4"))) {
        fail("serve: starts for the SIGKILL check", "%.400s", s.log);
        return;
    }
    admit_many(&h, 1000, 3000000);
    /* In the middle of runs: several have started, not all have ended. */
    bool mid = test_serve_wait_log(&s, "event=run_started", TIMEOUT_MS);
    kill(s.p.pid, SIGKILL);
    (void)test_serve_end(&s, TIMEOUT_MS);
    long long ended_before =
        sql_number(&h, "SELECT count(*) FROM runs WHERE state = 'succeeded'");
    long long running = sql_number(&h, "SELECT count(*) FROM runs WHERE state = 'running'");
    check(mid && ended_before < (long long)FLOWS * RUNS_PER_FLOW && running > 0,
          "serve: SIGKILLed while runs of several flows were running",
          "%lld succeeded, %lld running at the kill", ended_before, running);
    struct test_serve again;
    if (!serve_start(&again, &h, ARGS("--max-runs", "4"))) {
        fail("serve: a new serve starts after the SIGKILL", "%.400s", again.log);
        return;
    }
    bool drained = drain_all(&h);
    long long succeeded = sql_number(&h, "SELECT count(*) FROM runs WHERE state = 'succeeded'");
    char why[200] = "";
    bool effects = keyed_effects_ok(&h, 1000, FLOWS * RUNS_PER_FLOW, why, sizeof why);
    check(drained && succeeded == (long long)FLOWS * RUNS_PER_FLOW && effects,
          "serve: after the SIGKILL the next serve ends every run succeeded, each keyed effect "
          "seen at most twice and with one key [guard: recovery at start]",
          "drained %d, %lld succeeded, effects: %s; log %.400s", drained, succeeded, why,
          again.log);
    long long kv_ok = sql_number(&h, "SELECT count(*) FROM kv WHERE key = 'last'");
    check(kv_ok == FLOWS, "serve: kv holds each flow's last value after the restart",
          "%lld flows with kv 'last'", kv_ok);
    kill(again.p.pid, SIGTERM);
    ok(test_serve_end(&again, TIMEOUT_MS) == 0, "serve: the restarted serve stops with exit 0");
}

static void test_sigterm(void)
{
    struct home h;
    home_begin(&h, "term");
    ok(flow_add(&h, "slow", WORK_FLOW), "serve: a slow flow for the SIGTERM check");
    /* Grace 0: the run in flight is left to the next start. */
    struct test_serve s;
    if (!serve_start(&s, &h, ARGS("--grace-seconds", "0"))) {
        fail("serve: starts for the SIGTERM check", "%.400s", s.log);
        return;
    }
    struct proc_result r =
        cli_in(&h, false, ARGS("run", "slow", "--trigger", "{\"n\":1,\"spin\":30000000}", "--detach"));
    ok(proc_exited_with(&r, 0), "serve: run --detach admits the run and returns");
    proc_result_free(&r);
    bool in_flight = test_serve_wait_log(&s, "event=run_started", TIMEOUT_MS);
    kill(s.p.pid, SIGTERM);
    int code = test_serve_end(&s, TIMEOUT_MS);
    /* Running, or still pending if the stop came before its claim was committed. */
    long long running =
        sql_number(&h, "SELECT count(*) FROM runs WHERE state IN ('running', 'pending')");
    check(in_flight && code == 0 && strstr(s.log, "left_running=1") != NULL && running == 1,
          "serve: SIGTERM with a run in flight and no grace: exit 0 at once, the run left "
          "unfinished for the next start [guard: SIGTERM grace]",
          "exit %d, %lld unfinished; log %.500s", code, running, s.log);
    /* The next start finishes it; this time the grace is long enough. */
    struct test_serve again;
    if (!serve_start(&again, &h, ARGS("--grace-seconds", "120"))) {
        fail("serve: restarts after SIGTERM", "%.400s", again.log);
        return;
    }
    bool resumed = test_serve_wait_log(&again, "event=run_started", TIMEOUT_MS);
    kill(again.p.pid, SIGTERM);
    code = test_serve_end(&again, TIMEOUT_MS);
    long long succeeded = sql_number(&h, "SELECT count(*) FROM runs WHERE state = 'succeeded'");
    check(resumed && code == 0 && succeeded == 1 && strstr(again.log, "left_running=0") != NULL,
          "serve: the next start resumes the run; SIGTERM within the grace waits for it and "
          "exits 0 with the run succeeded",
          "exit %d, %lld succeeded; log %.500s", code, succeeded, again.log);
}

/* SIGTERM while a runner drives a run on a worker another runner forked: the kernel
 * sends a worker's parent-death signal when the THREAD that forked it ends, so a runner
 * that ended at the stop while idle killed that worker under the run. With 8 runners,
 * no spares (every worker forked by a runner) and the flow's worker warmed by earlier
 * runs, the long run lands on another runner than the forking one 7 times in 8; three
 * rounds. The run must end completed within the grace. */
static void test_sigterm_busy(void)
{
    struct home h;
    home_begin(&h, "term-busy");
    ok(flow_add(&h, "warm", WORK_FLOW), "serve: a flow for the busy SIGTERM check");
    int clean = 0, rounds = 0;
    char detail[600] = "";
    for (int round = 0; round < 3; round++) {
        struct test_serve s;
        if (!serve_start(&s, &h, ARGS("--max-runs", "8", "--spares", "0", "--grace-seconds", "120")))
            break;
        rounds++;
        for (int i = 0; i < 3; i++) {
            char trig[64];
            sfmt(trig, sizeof trig, "{\"n\":%d,\"spin\":10}", 3000 + round * 10 + i);
            struct proc_result r = cli_in(&h, false, ARGS("run", "warm", "--trigger", trig));
            proc_result_free(&r);
        }
        struct proc_result r = cli_in(&h, true, ARGS("run", "warm", "--trigger",
                                                     "{\"n\":1,\"spin\":20000000}", "--detach"));
        json_t *d = cli_output_json(&r);
        char started[64];
        sfmt(started, sizeof started, "event=run_started run=%lld ",
             (long long)json_integer_value(json_object_get(d, "run")));
        json_decref(d);
        proc_result_free(&r);
        bool in_flight = test_serve_wait_log(&s, started, TIMEOUT_MS);
        kill(s.p.pid, SIGTERM);
        int code = test_serve_end(&s, TIMEOUT_MS);
        long long bad = sql_number(&h, "SELECT count(*) FROM activations WHERE outcome <> 'completed'");
        if (in_flight && code == 0 && bad == 0 && strstr(s.log, "left_running=0") != NULL)
            clean++;
        else if (detail[0] == '\0')
            sfmt(detail, sizeof detail, "round %d: exit %d, %lld activations not completed; log %.400s",
                 round, code, bad, s.log);
    }
    check(rounds == 3 && clean == 3,
          "serve: SIGTERM while a run uses a worker another runner forked: the run completes "
          "within the grace and serve exits 0 (3 rounds) [guard: runners outlive the pool's "
          "workers]",
          "%d of %d rounds clean; %s", clean, rounds, detail);
}

/* Binds a datagram socket for serve's sd_notify messages. */
static int notify_socket(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    sfmt(a.sun_path, sizeof a.sun_path, "%s", path);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Reads datagrams until one holds needle (safety bound: TIMEOUT_MS). */
static bool notify_wait(int fd, const char *needle, char *seen, size_t cap)
{
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, TIMEOUT_MS) <= 0)
            return false;
        char msg[512];
        ssize_t n = recv(fd, msg, sizeof msg - 1, 0);
        if (n <= 0)
            return false;
        msg[n] = '\0';
        size_t len = strlen(seen);
        snprintf(seen + len, cap - len, "[%s]", msg);
        if (strstr(msg, needle) != NULL)
            return true;
    }
}

/* A peer of another uid on the real daemon: refused, logged and audited. The home and
 * the socket are opened up on purpose (0711, 0666) so that the other uid can reach the
 * socket at all and the peer-credential check is what is tested. */
static bool other_uid_request(const char *sock, char *out, size_t cap)
{
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return false;
    pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
            setresuid(65534, 65534, 65534) != 0)
            _exit(3);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un a;
        memset(&a, 0, sizeof a);
        a.sun_family = AF_UNIX;
        sfmt(a.sun_path, sizeof a.sun_path, "%s", sock);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
            _exit(4);
        const char *req = "{\"cmd\":\"runs\",\"args\":{}}\n";
        signal(SIGPIPE, SIG_IGN); /* the server may close before the request is written */
        if (write(fd, req, strlen(req)) < 0 && errno != EPIPE && errno != ECONNRESET)
            _exit(5);
        char buf[512];
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0 && write(pipefd[1], buf, (size_t)n) != n)
            _exit(6);
        _exit(0);
    }
    close(pipefd[1]);
    ssize_t n = read(pipefd[0], out, cap - 1);
    out[n > 0 ? n : 0] = '\0';
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void test_notify_metrics_peer(void)
{
    struct home h;
    home_begin(&h, "notify");
    ok(flow_add(&h, "m", WORK_FLOW), "serve: a flow for the notify and metrics checks");
    char notify_path[PATH_MAX + 16], seen[2048] = "";
    sfmt(notify_path, sizeof notify_path, "%s/notify.sock", h.t.dir);
    int nfd = notify_socket(notify_path);
    setenv("NOTIFY_SOCKET", notify_path, 1);
    struct test_serve s;
    bool up = serve_start(&s, &h, ARGS("--metrics", "127.0.0.1:0"));
    unsetenv("NOTIFY_SOCKET");
    if (!up) {
        fail("serve: starts with --metrics", "%.400s", s.log);
        return;
    }
    check(nfd >= 0 && notify_wait(nfd, "READY=1", seen, sizeof seen),
          "serve: tells systemd READY=1 (NOTIFY_SOCKET) once it admits runs", "seen %s", seen);

    struct proc_result r = cli_in(&h, false, ARGS("run", "m", "--trigger", "{\"n\":1,\"spin\":10}"));
    proc_result_free(&r);
    const char *at = strstr(s.log, "event=metrics_listening");
    const char *port = at != NULL ? strstr(at, "port=") : NULL;
    char url[128] = "";
    if (port != NULL)
        sfmt(url, sizeof url, "http://127.0.0.1:%ld/metrics", strtol(port + 5, NULL, 10));
    const char *curl[] = {"/usr/bin/curl", "-sS", "--max-time", "30", url, NULL};
    struct proc_result page = proc_run(curl, NULL, 0, TIMEOUT_MS);
    check(port != NULL && proc_exited_with(&page, 0) &&
              strstr(page.out, "basal_flow_runs{flow=\"m\",state=\"succeeded\"} 1") != NULL &&
              strstr(page.out, "basal_pool_idle_workers") != NULL,
          "serve --metrics 127.0.0.1:0: curl gets the Prometheus text with the flow's run and "
          "the live pool gauges",
          "%s: %.300s", proc_describe(&page), page.out);
    const char *parse[] = {"/usr/bin/python3", "-c",
                           "import sys\nfrom prometheus_client.parser import "
                           "text_string_to_metric_families as p\n"
                           "print(len(list(p(sys.stdin.read()))))",
                           NULL};
    struct proc_result parsed = proc_run(parse, page.out, strlen(page.out), TIMEOUT_MS);
    check(proc_exited_with(&parsed, 0) && strtol(parsed.out, NULL, 10) > 10,
          "serve: its /metrics page parses with prometheus_client's parser",
          "%s: %s %s", proc_describe(&parsed), parsed.out, parsed.err);
    proc_result_free(&parsed);
    proc_result_free(&page);

    char sock[PATH_MAX + 16], reply[512];
    sfmt(sock, sizeof sock, "%s/ops.sock", h.t.home);
    struct stat root_st;
    bool opened = stat(g_root, &root_st) == 0 && chmod(g_root, 0711) == 0 &&
                  chmod(h.t.dir, 0711) == 0 && chmod(h.t.home, 0711) == 0 && chmod(sock, 0666) == 0;
    bool ran = opened && other_uid_request(sock, reply, sizeof reply);
    (void)chmod(sock, 0600);
    (void)chmod(h.t.home, 0700);
    (void)chmod(g_root, root_st.st_mode & 07777);
    bool logged = test_serve_wait_log(&s, "event=ops_refused peer_uid=65534", TIMEOUT_MS);
    long long audited = sql_number(&h, "SELECT count(*) FROM audit WHERE kind = 'ops_refused'"
                                       " AND decision = 'refused' AND reason LIKE '%65534%'");
    check(geteuid() == 0 && ran && strstr(reply, "\"ok\":true") == NULL && logged && audited == 1,
          "serve: a peer of another uid is refused unanswered, logged (event=ops_refused) and "
          "audited [guard: SO_PEERCRED on the daemon's socket]",
          "euid %d, ran %d, reply '%s', logged %d, audit rows %lld", (int)geteuid(), ran, reply,
          logged, audited);

    /* A peer that sends half a request and stalls holds up no one; one over the size
     * bound is refused (on the real daemon; t_ops_socket has the module's own checks). */
    int stalled = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    sfmt(a.sun_path, sizeof a.sun_path, "%s", sock);
    bool half = stalled >= 0 && connect(stalled, (struct sockaddr *)&a, sizeof a) == 0 &&
                write(stalled, "{\"cmd\":\"ru", 10) == 10;
    struct proc_result other = cli_in(&h, true, ARGS("runs"));
    check(half && proc_exited_with(&other, 0) && strstr(other.out, "\"flow\":\"m\"") != NULL,
          "serve: a peer that sent half a request and stalls holds up no one: runs is answered "
          "meanwhile [guard: a poll loop reads requests, a thread answers each]",
          "half %d; %s %.200s", half, proc_describe(&other), other.err);
    proc_result_free(&other);
    size_t big_len = (300u << 10) + 2;
    char *big = malloc(big_len);
    int bigfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    char big_reply[512] = "";
    if (big != NULL && bigfd >= 0 && connect(bigfd, (struct sockaddr *)&a, sizeof a) == 0) {
        memset(big, ' ', big_len);
        big[big_len - 1] = '\n';
        signal(SIGPIPE, SIG_IGN);
        (void)fd_write_all(bigfd, big, big_len, 5000); /* the server may stop reading */
        struct pollfd p = {bigfd, POLLIN, 0};
        if (poll(&p, 1, TIMEOUT_MS) > 0) {
            ssize_t n = read(bigfd, big_reply, sizeof big_reply - 1);
            big_reply[n > 0 ? n : 0] = '\0';
        }
    }
    bool big_logged = test_serve_wait_log(&s, "reason=\"request over 262144 bytes\"", TIMEOUT_MS);
    check(strstr(big_reply, "\"ok\":true") == NULL && big_logged,
          "serve: a request over the size bound (300 KiB) is refused and logged [guard: request "
          "size bound]",
          "reply '%.200s'; log %.600s", big_reply, s.log);
    free(big);
    if (bigfd >= 0)
        close(bigfd);

    /* A run whose trigger is over 64 KiB, inside a request under the socket's bound:
     * the daemon applies --trigger's rule itself, whatever the client checked. */
    long long runs_before = sql_number(&h, "SELECT count(*) FROM runs");
    size_t trig_len = 70000;
    char *req = malloc(trig_len + 200);
    int tfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    char trig_reply[512] = "";
    if (req != NULL && tfd >= 0 && connect(tfd, (struct sockaddr *)&a, sizeof a) == 0) {
        int head = snprintf(req, trig_len + 200,
                          "{\"cmd\":\"run\",\"args\":{\"flow\":\"m\",\"detach\":true,"
                          "\"trigger\":\"[\\\"");
        memset(req + head, 'x', trig_len);
        snprintf(req + head + trig_len, 200 - (size_t)head, "\\\"]\"}}\n");
        (void)fd_write_all(tfd, req, strlen(req), 5000);
        struct pollfd p = {tfd, POLLIN, 0};
        if (poll(&p, 1, TIMEOUT_MS) > 0) {
            ssize_t n = read(tfd, trig_reply, sizeof trig_reply - 1);
            trig_reply[n > 0 ? n : 0] = '\0';
        }
    }
    check(strstr(trig_reply, "\"exit\":2") != NULL && strstr(trig_reply, "over 65536") != NULL &&
              sql_number(&h, "SELECT count(*) FROM runs") == runs_before,
          "serve: a run request whose trigger is over 64 KiB is refused as the CLI refuses "
          "--trigger, nothing stored [guard: the daemon checks the trigger itself]",
          "reply '%.300s'", trig_reply);
    free(req);
    if (tfd >= 0)
        close(tfd);
    if (stalled >= 0)
        close(stalled);

    kill(s.p.pid, SIGTERM);
    bool stopping = nfd >= 0 && notify_wait(nfd, "STOPPING=1", seen, sizeof seen);
    int code = test_serve_end(&s, TIMEOUT_MS);
    check(stopping && code == 0, "serve: tells systemd STOPPING=1 on SIGTERM, then exits 0",
          "seen %s; exit %d", seen, code);
    if (nfd >= 0)
        close(nfd);
}

static void test_bad_input(void)
{
    struct home h;
    home_begin(&h, "bad");
    ok(flow_add(&h, "one", WORK_FLOW), "serve: a flow for the bad-input checks");
    static const char *const BAD[][3] = {{"--max-runs", "0", NULL},
                                         {"--backlog", "x", NULL},
                                         {"--grace-seconds", "-1", NULL},
                                         {"--nonsense", NULL, NULL}};
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        const char *args[5] = {"serve", BAD[i][0], BAD[i][1], NULL, NULL};
        struct proc_result r = cli_in(&h, false, args);
        char name[160];
        sfmt(name, sizeof name, "serve: %s %s is a usage error with one line", BAD[i][0],
             BAD[i][1] != NULL ? BAD[i][1] : "");
        check(proc_exited_with(&r, 2) && strchr(r.err, '\n') == r.err + strlen(r.err) - 1, name,
              "%s: %s", proc_describe(&r), r.err);
        proc_result_free(&r);
    }
    struct proc_result r = cli_in(&h, false, ARGS("run", "one", "--detach"));
    check(proc_exited_with(&r, 2) && strstr(r.err, "needs a running serve") != NULL &&
              sql_number(&h, "SELECT count(*) FROM runs") == 0,
          "serve: run --detach without a serve is refused and stores nothing", "%s: %s",
          proc_describe(&r), r.err);
    proc_result_free(&r);

    /* Backlog 1: a running run, one waiting, the third refused. */
    struct test_serve s;
    if (!serve_start(&s, &h, ARGS("--backlog", "1", "--max-runs", "1"))) {
        fail("serve: starts for the backlog check", "%.400s", s.log);
        return;
    }
    r = cli_in(&h, false, ARGS("run", "one", "--trigger", "{\"n\":1,\"spin\":30000000}", "--detach"));
    proc_result_free(&r);
    (void)test_serve_wait_log(&s, "event=run_started", TIMEOUT_MS);
    r = cli_in(&h, false, ARGS("run", "one", "--trigger", "{\"n\":2,\"spin\":10}", "--detach"));
    bool second = proc_exited_with(&r, 0);
    proc_result_free(&r);
    r = cli_in(&h, false, ARGS("run", "one", "--trigger", "{\"n\":3,\"spin\":10}", "--detach"));
    long long stored = sql_number(&h, "SELECT count(*) FROM runs");
    check(second && proc_exited_with(&r, 1) && strstr(r.err, "backlog") != NULL && stored == 2,
          "serve: a run beyond the flow's backlog is refused with the reason, nothing stored "
          "[guard: bounded backlog]",
          "second admitted %d; third %s: %s; %lld runs stored", second, proc_describe(&r), r.err,
          stored);
    proc_result_free(&r);
    kill(s.p.pid, SIGTERM);
    ok(test_serve_end(&s, TIMEOUT_MS) == 0, "serve: exit 0 after the backlog check");
}

int main(void)
{
    if (!require_binary(harness_test_parent(), "serve: the test build"))
        return harness_finish();
    sfmt(g_root, sizeof g_root, "%s", harness_tmpdir("serve"));
    test_one_per_home();
    test_bad_input();
    test_same_output_both_ways();
    test_sigterm();
    test_notify_metrics_peer();
    test_concurrency();
    test_sigterm_busy();
    test_sigkill_and_restart();
    harness_remove_tmpdir();
    return harness_finish();
}
