/* basal's flow rows of the contenders benchmark (bench/contenders/run.sh):
 * the workloads run as flows through the real run driver and store, in this process,
 * exactly as bench/flow_bench.c drives them (runs_admit_claimed + run_drive_claimed, as `ck-basal run` does, a pool with one
 * spare), with the journal on. Each sample is one run, from runs_admit_claimed to run_drive_claimed's
 * return: admission committed, claim, activation on the flow's warm worker, every host
 * call journaled and committed before its outcome is delivered, end state committed.
 *
 *   contender_flows setup HOME          prepare the data home HOME (an existing, empty,
 *                                       owner-only directory), its store, and install
 *                                       and approve the flows w1, w2, w1b, w2b (below)
 *   contender_flows run HOME FLOW N [--fsync-off]
 *                                       N runs of FLOW (w1, w2, w1b or w2b) back to back
 *                                       (after 3 not counted); one line per run: µs
 *
 * Runs of one flow execute one at a time (a second admission is refused while one is
 * pending): w1b is w1's twin, w2b w2's, for two streams at once. run.sh gives each
 * stream its own HOME too, since two processes on one store currently crash (see
 * docs/benchmarks-contenders.md).
 *
 * w1 is workload 1: `let s = 0; for (let i = 0; i < 1000; i++) s += i; return s;`.
 * w2 adds 100 awaited kv.set calls of a running count, `await kv.set("c", ++c)`: the
 * counter is held by the host (the flow's kv), 100 host calls, each journaled.
 *
 * --fsync-off switches the store's connection of this process to PRAGMA
 * synchronous=OFF (a benchmark-only setting, as bench/flow_bench.c does: the product
 * has no way to ask for it).
 *
 * When BENCH_START_AT (CLOCK_MONOTONIC, microseconds) is set, the measured runs start
 * at that time (after the warm-up), so that two processes start together; the last
 * line is then "# end T" (CLOCK_MONOTONIC µs after the last run). */
#include "store/datahome.h"
#include "flows/flows.h"
#include "supervisor/pool.h"
#include "flows/run_driver.h"
#include "store/runs.h"
#include "store/store.h"

#include "lib/bench_flows.h"
#include "lib/bench_stats.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define W1_BODY "let s = 0; for (let i = 0; i < 1000; i++) s += i;"
#define W1_SCRIPT W1_BODY " return s;"
#define W2_SCRIPT W1_BODY " let c = 0; for (let j = 0; j < 100; j++) await kv.set(\"c\", ++c); return s;"

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "contender_flows: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static void flow_add(struct store *st, const char *id, const char *script)
{
    char err[512];
    if (bench_flow_add(st, id, script, err, sizeof err) != 0)
        die("flow %s: %s", id, err);
}

/* Admits and drives one run of flow; checks its result; returns its wall time in µs. */
static double timed_run(struct run_driver *d, const char *flow, uint32_t calls)
{
    char err[1024];
    int64_t id = 0;
    struct run_report rep;
    double t0 = now_us();
    struct run_claim claim;
    if (runs_admit_claimed(d->store, flow, 1, NULL, NULL, &id, &claim, err, sizeof err) != 0)
        die("admit %s: %s", flow, err);
    int rc = run_drive_claimed(d, id, &claim, &rep, err, sizeof err);
    double t = now_us() - t0;
    if (rc != 0 || rep.state != RUN_SUCCEEDED)
        die("run of %s: %s", flow, rc != 0 ? err : (rep.error != NULL ? rep.error : "failed"));
    if (rep.result == NULL || strcmp(rep.result, "499500") != 0 || rep.host_calls != calls)
        die("run of %s: result %s, %u host calls (expected 499500, %u)", flow,
            rep.result != NULL ? rep.result : "none", rep.host_calls, calls);
    run_report_free(&rep);
    return t;
}

static void sleep_until(double t_us)
{
    for (;;) {
        double left = t_us - now_us();
        if (left <= 0)
            return;
        struct timespec ts = {(time_t)(left / 1e6), (long)((left - (double)(time_t)(left / 1e6) * 1e6) * 1e3)};
        nanosleep(&ts, NULL);
    }
}

static int usage(void)
{
    fprintf(stderr, "usage: contender_flows setup HOME | run HOME w1|w2 N [--fsync-off]\n");
    return 2;
}

int main(int argc, char **argv)
{
    char err[512];
    struct store *st = NULL;
    if (argc == 3 && strcmp(argv[1], "setup") == 0) {
        if (datahome_prepare(argv[2], false, NULL, err, sizeof err) != 0 ||
            store_open(argv[2], &st, err, sizeof err) != 0)
            die("%s", err);
        flow_add(st, "w1", W1_SCRIPT);
        flow_add(st, "w2", W2_SCRIPT);
        flow_add(st, "w1b", W1_SCRIPT);
        flow_add(st, "w2b", W2_SCRIPT);
        store_close(st);
        return 0;
    }
    if ((argc != 5 && argc != 6) || strcmp(argv[1], "run") != 0 ||
        (strncmp(argv[3], "w1", 2) != 0 && strncmp(argv[3], "w2", 2) != 0) ||
        (argc == 6 && strcmp(argv[5], "--fsync-off") != 0))
        return usage();
    const char *home = argv[2], *flow = argv[3];
    uint32_t calls = strncmp(flow, "w2", 2) == 0 ? 100u : 0u;
    long n = strtol(argv[4], NULL, 10);
    if (n < 1)
        return usage();
    if (store_open(home, &st, err, sizeof err) != 0)
        die("%s", err);
    if (argc == 6 && store_benchmark_sync_off(st, true) != 0)
        die("synchronous=OFF: %s", store_errmsg(st));

    char worker[PATH_MAX + 32], self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        die("readlink /proc/self/exe");
    self[len] = '\0';
    *strrchr(self, '/') = '\0';
    snprintf(worker, sizeof worker, "%s/../bin/ck-basal-worker", self);
    struct pool_config cfg;
    pool_config_defaults(&cfg);
    cfg.worker_path = worker;
    cfg.spares = 1;
    struct run_driver d = {st, home, pool_new(&cfg), {0}, NULL};
    if (d.pool == NULL)
        die("out of memory");

    for (int i = 0; i < 3; i++) /* warm-up: the flow's worker, the page cache, SQLite's */
        timed_run(&d, flow, calls);
    const char *start_at = getenv("BENCH_START_AT");
    if (start_at != NULL)
        sleep_until(strtod(start_at, NULL));
    for (long i = 0; i < n; i++)
        printf("%.3f\n", timed_run(&d, flow, calls));
    if (start_at != NULL)
        printf("# end %.3f\n", now_us());
    pool_free(d.pool);
    store_close(st);
    return 0;
}
