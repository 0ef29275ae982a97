/* The worker pool (src/supervisor/pool.c) in process, with the real test-build worker (and
 * fake_worker for refused Welcomes), a test host, and an injected clock for idle
 * retirement and backoff. Reuse and replacement are proven by worker pids. */
#include "supervisor/pool.h"
#include "host/test_host.h"
#include "lib/harness.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static long long fake_now = 1000000;

static long long fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

static struct test_host *the_host;

static struct pool *new_pool(const char *worker, unsigned spares, unsigned max_size)
{
    static struct pool_config cfg;
    pool_config_defaults(&cfg);
    cfg.worker_path = worker;
    cfg.spares = spares;
    cfg.max_size = max_size;
    cfg.clock_ms = fake_clock;
    return pool_new(&cfg);
}

/* Runs `script` for flow; returns the serving pid (0 if none) and the status. */
static pid_t run_compiling(struct pool *pool, const char *flow, enum pool_use use,
                           const char *script, bool compile_only, enum activation_status *status)
{
    struct activation_request req;
    memset(&req, 0, sizeof req);
    activation_request_defaults(&req, use == POOL_USE_CODEMODE || use == POOL_USE_CODEMODE_CHECK
                                          ? PROTO_PROFILE_CODEMODE
                                          : PROTO_PROFILE_FLOW);
    req.compile_only = compile_only;
    req.script = script;
    req.script_len = strlen(script);
    req.deadline_ms = 10000;
    struct host host = test_host_interface(the_host);
    struct activation_outcome out;
    pool_run(pool, flow, use, &req, &host, &out);
    if (status != NULL)
        *status = out.status;
    if (out.status != ACTIVATION_COMPLETED && out.status != ACTIVATION_NO_WORKER)
        harness_note("run of %s: %s (%s)", flow, activation_status_name(out.status),
                     out.detail != NULL ? out.detail : "");
    pid_t pid = out.pid;
    activation_outcome_free(&out);
    return pid;
}

static pid_t run(struct pool *pool, const char *flow, enum pool_use use, const char *script,
                 enum activation_status *status)
{
    return run_compiling(pool, flow, use, script, false, status);
}

/* Waits (on a pidfd, not a sleep) until pid has exited, without reaping it: the
 * pool, its parent, must find out by itself. */
static bool wait_exited(pid_t pid)
{
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0)
        return false;
    struct pollfd p = {pidfd, POLLIN, 0};
    bool exited = poll(&p, 1, 5000) == 1;
    close(pidfd);
    return exited;
}

static bool alive(pid_t pid)
{
    return pid > 0 && kill(pid, 0) == 0;
}

static void test_spares_and_binding(const char *worker)
{
    struct pool *pool = new_pool(worker, 2, 16);
    pool_maintain(pool);
    const struct health *h = pool_health(pool);
    check(h->live == 2 && h->spares == 2 && h->bound == 0 && h->spawned == 2,
          "pool: maintain starts two warm spares, greeted and checked, unbound",
          "live %u spares %u bound %u spawned %llu", h->live, h->spares, h->bound, h->spawned);

    enum activation_status st;
    pid_t a1 = run(pool, "alpha", POOL_USE_FLOW, "return 1", &st);
    h = pool_health(pool);
    check(st == ACTIVATION_COMPLETED && a1 > 0 && h->bound == 1 && h->spares == 1 &&
              h->spawned == 2 && pool_flow_worker(pool, "alpha") == a1,
          "pool: a flow's first run takes a warm spare and binds it (no cold start)",
          "status %s, bound %u spares %u spawned %llu", activation_status_name(st), h->bound,
          h->spares, h->spawned);

    pid_t a2 = run(pool, "alpha", POOL_USE_FLOW, "return 2", &st);
    check(st == ACTIVATION_COMPLETED && a2 == a1,
          "pool: the flow's next run reuses its bound worker (same pid)", "%d then %d", (int)a1,
          (int)a2);

    pid_t b1 = run(pool, "beta", POOL_USE_FLOW, "return 3", &st);
    check(st == ACTIVATION_COMPLETED && b1 > 0 && b1 != a1 &&
              pool_flow_worker(pool, "alpha") == a1 && pool_flow_worker(pool, "beta") == b1,
          "pool: another flow never gets a worker bound to the first [guard bound-to-one-flow]",
          "alpha %d beta %d", (int)a1, (int)b1);

    pool_maintain(pool);
    h = pool_health(pool);
    check(h->live == 4 && h->spares == 2 && h->bound == 2,
          "pool: maintain refills the spares after they were bound", "live %u spares %u bound %u",
          h->live, h->spares, h->bound);

    /* Dry runs and codemode: single use. */
    pid_t d1 = run(pool, "alpha", POOL_USE_DRY_RUN, "return 4", &st);
    pid_t d2 = run(pool, "alpha", POOL_USE_DRY_RUN, "return 5", &st);
    check(st == ACTIVATION_COMPLETED && d1 > 0 && d2 > 0 && d1 != d2 && d1 != a1 && !alive(d1),
          "pool: dry runs use single-use workers, never the flow's own", "%d, %d (alpha %d)",
          (int)d1, (int)d2, (int)a1);
    pid_t c1 = run(pool, "alpha", POOL_USE_CODEMODE, "return 6", &st);
    pid_t c2 = run(pool, "alpha", POOL_USE_CODEMODE, "return 7", &st);
    check(st == ACTIVATION_COMPLETED && c1 > 0 && c2 > 0 && c1 != c2 && !alive(c1) &&
              pool_flow_worker(pool, "alpha") == a1,
          "pool: codemode uses a fresh single-use worker per run", "%d, %d", (int)c1, (int)c2);

    /* Idle retirement, checked whenever the pool is used. */
    fake_now += 10LL * 60 * 1000;
    pid_t a3 = run(pool, "alpha", POOL_USE_FLOW, "return 8", &st);
    check(st == ACTIVATION_COMPLETED && a3 > 0 && a3 != a1 && !alive(a1) && !alive(b1),
          "pool: workers idle for 10 minutes are retired at the next use [guard idle-retire]",
          "alpha was %d now %d; beta %d alive %d", (int)a1, (int)a3, (int)b1, alive(b1));
    h = pool_health(pool);
    check(h->retired >= 4 && h->crashed == 0 && h->sigsys_deaths == 0,
          "health: idle and single-use retirements are counted as retired",
          "retired %llu crashed %llu", h->retired, h->crashed);
    pool_free(pool);
}

/* A codemode run's compile check and its run share one fresh worker, which nothing
 * else may take. */
static void test_codemode_check(const char *worker)
{
    struct pool *pool = new_pool(worker, 0, 16);
    enum activation_status st = ACTIVATION_NO_WORKER;
    pid_t checked = run_compiling(pool, "cm", POOL_USE_CODEMODE_CHECK, "return 1", true, &st);
    const struct health *h = pool_health(pool);
    check(st == ACTIVATION_COMPLETED && checked > 0 && alive(checked) && h->spawned == 1,
          "pool: a codemode check compiles on a fresh worker and keeps it", "status %s pid %d",
          activation_status_name(st), (int)checked);
    pid_t flow = run(pool, "cm", POOL_USE_FLOW, "return 2", &st);
    pid_t spare = run(pool, "other", POOL_USE_DRY_RUN, "return 3", &st);
    check(flow > 0 && flow != checked && spare > 0 && spare != checked && alive(checked),
          "pool: a flow of the run's name and a dry run never get the checked worker "
          "[guard codemode-check-private]",
          "checked %d, flow %d, dry run %d", (int)checked, (int)flow, (int)spare);
    pid_t ran = run(pool, "cm", POOL_USE_CODEMODE, "return 4", &st);
    check(st == ACTIVATION_COMPLETED && ran == checked && !alive(checked),
          "pool: the codemode run takes the worker that checked it, then retires it "
          "[guard codemode-one-worker]",
          "checked %d ran %d (%s)", (int)checked, (int)ran, activation_status_name(st));
    pid_t fresh = run(pool, "cm", POOL_USE_CODEMODE, "return 5", &st);
    check(st == ACTIVATION_COMPLETED && fresh > 0 && fresh != checked,
          "pool: a second codemode run of the name starts a fresh worker", "%d then %d",
          (int)checked, (int)fresh);

    pid_t bad = run_compiling(pool, "cm", POOL_USE_CODEMODE_CHECK, "return (", true, &st);
    check(st == ACTIVATION_FAILED && bad > 0 && !alive(bad),
          "pool: a check that does not compile kills its worker [guard codemode-check-failed]",
          "status %s pid %d alive %d", activation_status_name(st), (int)bad, bad > 0 && alive(bad));
    run_compiling(pool, "cm", POOL_USE_CODEMODE_CHECK, "return 6", false, &st);
    check(st == ACTIVATION_NO_WORKER,
          "pool: a codemode check that would run its script is refused "
          "[guard codemode-check-compile-only]",
          "status %s", activation_status_name(st));
    pid_t unused = run_compiling(pool, "cm", POOL_USE_CODEMODE_CHECK, "return 7", true, &st);
    pool_release_flow(pool, "cm");
    check(unused > 0 && !alive(unused),
          "pool: releasing the run's name ends a checked worker whose run never came",
          "pid %d", (int)unused);
    pool_free(pool);
}

/* True when this process has no child left, reaped or not (pool_free's promise). */
static bool no_child_left(void)
{
    return waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD;
}

/* A worker started ahead (pool_launch) is greeted and checked by the run that takes it. */
static void test_launch_ahead(const char *worker)
{
    struct pool *pool = new_pool(worker, 0, 16);
    pool_launch(pool, POOL_USE_FLOW);
    pool_launch(pool, POOL_USE_FLOW); /* at most one pending */
    enum activation_status st = ACTIVATION_NO_WORKER;
    pid_t pid = run(pool, "zeta", POOL_USE_FLOW, "return 1", &st);
    const struct health *h = pool_health(pool);
    check(st == ACTIVATION_COMPLETED && pid > 0 && h->spawned == 1 && h->live == 1,
          "pool: a run takes the worker started ahead (one start in all)",
          "status %s spawned %llu live %u", activation_status_name(st), h->spawned, h->live);
    pool_free(pool);

    pool = new_pool(worker, 0, 16);
    pool_launch(pool, POOL_USE_FLOW);
    pool_free(pool);
    check(no_child_left(), "pool: freeing the pool kills a worker started ahead that no run took",
          "a child is still there");

    const char *fake = harness_path("test/tools/fake_worker");
    if (!require_binary(fake, "pool: fake_worker tool present"))
        return;
    pool = new_pool(fake, 0, 16);
    pool_launch(pool, POOL_USE_FLOW);
    run(pool, "zeta", POOL_USE_FLOW, "return 1", &st);
    h = pool_health(pool);
    check(st == ACTIVATION_NO_WORKER && h->spawned == 1 && h->refused_welcomes == 1 &&
              h->live == 0 && no_child_left(),
          "pool: a worker started ahead whose kernel view is not confined is refused and "
          "killed before any script [guard launch-ahead-checked]",
          "status %s spawned %llu refused %llu live %u", activation_status_name(st), h->spawned,
          h->refused_welcomes, h->live);
    pool_free(pool);
}

static void test_activation_limit(const char *worker)
{
    struct pool *pool = new_pool(worker, 0, 16);
    enum activation_status st = ACTIVATION_COMPLETED;
    pid_t first = run(pool, "gamma", POOL_USE_FLOW, "return 0", &st);
    bool same = st == ACTIVATION_COMPLETED && first > 0;
    int n = 1;
    for (; n < 256 && same; n++)
        same = run(pool, "gamma", POOL_USE_FLOW, "return 0", &st) == first &&
               st == ACTIVATION_COMPLETED;
    pid_t after = run(pool, "gamma", POOL_USE_FLOW, "return 0", &st);
    check(same && n == 256 && after > 0 && after != first && !alive(first),
          "pool: a worker serves 256 activations, then is retired and replaced "
          "[guard retire-after-256]",
          "same for %d runs; first %d, 257th %d", n, (int)first, (int)after);
    const struct health *h = pool_health(pool);
    check(h->retired == 1 && h->respawned == 1,
          "health: the retirement counts as retired, its replacement as respawned",
          "retired %llu respawned %llu", h->retired, h->respawned);
    pool_free(pool);
}

static void test_max_size(const char *worker)
{
    struct pool *pool = new_pool(worker, 0, 2);
    enum activation_status st;
    pid_t a = run(pool, "a", POOL_USE_FLOW, "return 1", &st);
    fake_now += 1;
    pid_t b = run(pool, "b", POOL_USE_FLOW, "return 1", &st);
    fake_now += 1;
    pid_t c = run(pool, "c", POOL_USE_FLOW, "return 1", &st);
    const struct health *h = pool_health(pool);
    check(st == ACTIVATION_COMPLETED && h->live == 2 && !alive(a) && alive(b) && alive(c) &&
              pool_flow_worker(pool, "a") == 0,
          "pool: at its maximum size the pool retires the idle worker unused longest "
          "[guard max-size]",
          "live %u; a %d alive %d, b alive %d, c alive %d", h->live, (int)a, alive(a), alive(b),
          alive(c));
    pool_free(pool);
}

static void test_idle_deaths(const char *worker)
{
    struct pool *pool = new_pool(worker, 0, 16);
    enum activation_status st;
    pid_t a = run(pool, "delta", POOL_USE_FLOW, "return 1", &st);
    /* Someone SIGKILLs the idle worker: a crash, but not a SIGSYS death. */
    kill(a, SIGKILL);
    bool dead = wait_exited(a);
    pid_t a2 = run(pool, "delta", POOL_USE_FLOW, "return 1", &st);
    const struct health *h = pool_health(pool);
    check(dead && st == ACTIVATION_COMPLETED && a2 > 0 && a2 != a && h->crashed == 1 &&
              h->sigsys_deaths == 0,
          "pool: an idle worker that died is noticed and replaced; SIGKILL is not a SIGSYS "
          "death [guard sigsys-deaths-only-sigsys]",
          "pid %d then %d, crashed %llu sigsys %llu", (int)a, (int)a2, h->crashed,
          h->sigsys_deaths);
    kill(a2, SIGSYS);
    dead = wait_exited(a2);
    pid_t a3 = run(pool, "delta", POOL_USE_FLOW, "return 1", &st);
    h = pool_health(pool);
    check(dead && st == ACTIVATION_COMPLETED && a3 != a2 && h->crashed == 2 &&
              h->sigsys_deaths == 1,
          "health: a worker that died by SIGSYS counts in sigsys_deaths",
          "crashed %llu sigsys %llu", h->crashed, h->sigsys_deaths);
    pool_free(pool);
}

static void test_refused_and_backoff(void)
{
    const char *fake = harness_path("test/tools/fake_worker");
    if (!require_binary(fake, "pool: fake_worker tool present"))
        return;
    struct pool *pool = new_pool(fake, 0, 16);
    enum activation_status st;
    run(pool, "eps", POOL_USE_FLOW, "return 1", &st);
    const struct health *h = pool_health(pool);
    check(st == ACTIVATION_NO_WORKER && h->spawned == 1 && h->refused_welcomes == 1 &&
              h->spawn_failures == 1 && h->killed == 1 && h->live == 0,
          "pool: a worker whose kernel view is not confined is refused and killed before any "
          "script; counted in refused_welcomes [guard welcome-checked]",
          "status %s spawned %llu refused %llu failures %llu killed %llu",
          activation_status_name(st), h->spawned, h->refused_welcomes, h->spawn_failures,
          h->killed);

    run(pool, "eps", POOL_USE_FLOW, "return 1", &st);
    h = pool_health(pool);
    check(st == ACTIVATION_NO_WORKER && h->spawned == 1,
          "pool: after a failed start the next start backs off (no new process) "
          "[guard spawn-backoff]",
          "spawned %llu", h->spawned);

    fake_now += 250; /* the first backoff: 250 ms */
    run(pool, "eps", POOL_USE_FLOW, "return 1", &st);
    h = pool_health(pool);
    bool second_try = h->spawned == 2 && h->refused_welcomes == 2;
    fake_now += 250; /* the second backoff is 500 ms: not over yet */
    run(pool, "eps", POOL_USE_FLOW, "return 1", &st);
    bool still_waiting = pool_health(pool)->spawned == 2;
    fake_now += 250;
    run(pool, "eps", POOL_USE_FLOW, "return 1", &st);
    h = pool_health(pool);
    check(second_try && still_waiting && h->spawned == 3,
          "pool: the backoff doubles after each failed start (250 ms, then 500 ms)",
          "second try %d, still waiting %d, spawned %llu", second_try, still_waiting, h->spawned);
    for (int i = 0; i < 20; i++) {
        fake_now += 60000;
        run(pool, "eps", POOL_USE_FLOW, "return 1", &st);
    }
    unsigned long long before = pool_health(pool)->spawned;
    fake_now += 29999;
    run(pool, "eps", POOL_USE_FLOW, "return 1", &st);
    bool capped_wait = pool_health(pool)->spawned == before;
    fake_now += 1;
    run(pool, "eps", POOL_USE_FLOW, "return 1", &st);
    check(capped_wait && pool_health(pool)->spawned == before + 1,
          "pool: the backoff is capped at 30 s", "spawned %llu -> %llu", before,
          pool_health(pool)->spawned);
    pool_free(pool);

    pool = new_pool("/nonexistent/ck-basal-worker", 0, 16);
    run(pool, "eps", POOL_USE_FLOW, "return 1", &st);
    h = pool_health(pool);
    check(st == ACTIVATION_NO_WORKER && h->spawned == 0 && h->spawn_failures == 1 &&
              h->refused_welcomes == 0,
          "pool: a worker that cannot be started is a spawn failure, not a refused Welcome",
          "spawned %llu failures %llu refused %llu", h->spawned, h->spawn_failures,
          h->refused_welcomes);
    pool_free(pool);
}

int main(void)
{
    the_host = test_host_new();
    const char *worker = harness_test_worker();
    if (require_binary(worker, "pool: ck-basal-worker test build present")) {
        test_spares_and_binding(worker);
        test_codemode_check(worker);
        test_launch_ahead(worker);
        test_activation_limit(worker);
        test_max_size(worker);
        test_idle_deaths(worker);
    }
    test_refused_and_backoff();
    test_host_free(the_host);
    return harness_finish();
}
