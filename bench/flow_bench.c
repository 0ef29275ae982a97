/* The flow benchmarks (make bench; bench/run.sh runs this after
 * basal_bench and writes both tables into docs/benchmarks.md). In one process run,
 * interleaved sample by sample so that drift touches both alike:
 *
 *   durable kv.set        a run of a flow making N awaited kv.set calls through the
 *                         real run driver, flow host and store (synchronous=FULL), less
 *                         a run making none, over N: one host call end to end, journal
 *                         row and kv change committed before the script sees it
 *   bare SQLite commit    the reference: one INSERT OR REPLACE per transaction into a
 *                         table of a separate database in the same directory, WAL,
 *                         synchronous=FULL, as the store opens it
 *   kv.set, fsync off     the same runs with the store's connection switched to
 *                         synchronous=OFF by this program (a benchmark-only setting:
 *                         the product has no way to ask for it)
 *   resume of 1000 calls  run_drive of a run whose journal holds 1000 delivered calls
 *                         (copied from a finished run), from the claim to the end
 *                         state committed: with a warm spare worker, and cold (the
 *                         spawn of the worker included, as in a fresh recover)
 *
 * Nothing passes or fails; the goals are printed beside the numbers. */
#include "store/datahome.h"
#include "flows/flows.h"
#include "supervisor/pool.h"
#include "flows/run_driver.h"
#include "store/runs.h"
#include "store/store.h"

#include "lib/bench_flows.h"
#include "lib/bench_stats.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KV_CALLS 50u
#define KV_ITERS 60
#define COMMIT_PER_ITER 20
#define RESUME_CALLS 1000u
#define RESUME_ITERS 40

static double g_scale = 1.0;

static size_t iters(size_t base)
{
    double n = (double)base * g_scale;
    return n < 3 ? 3 : (size_t)n;
}

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "flow_bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* ---- flows ------------------------------------------------------------------------- */

static char g_home[PATH_MAX];
static struct store *g_store;

static void flow_add(const char *id, const char *script)
{
    char err[512];
    if (bench_flow_add(g_store, id, script, err, sizeof err) != 0)
        die("flow %s: %s", id, err);
}

static char *loop_script(const char *call, unsigned n)
{
    char *s = malloc(256);
    if (s == NULL)
        die("out of memory");
    snprintf(s, 256, "for (let i = 0; i < %u; i++) await %s; return %u;", n, call, n);
    return s;
}

/* Admits and drives one run of flow; returns its wall time in µs. */
static double timed_run(struct run_driver *d, const char *flow, int64_t *run_id)
{
    char err[1024];
    int64_t id = 0;
    struct run_claim claim;
    struct run_report rep;
    double t0 = now_us();
    if (runs_admit_claimed(g_store, flow, 1, NULL, NULL, &id, &claim, err, sizeof err) != 0)
        die("admit %s: %s", flow, err);
    int rc = run_drive_claimed(d, id, &claim, &rep, err, sizeof err);
    double t = now_us() - t0;
    if (rc != 0 || rep.state != RUN_SUCCEEDED)
        die("run of %s: %s", flow, rc != 0 ? err : (rep.error != NULL ? rep.error : "failed"));
    run_report_free(&rep);
    if (run_id != NULL)
        *run_id = id;
    return t;
}

/* ---- the bare SQLite reference ----------------------------------------------------- */

static sqlite3 *g_ref;

static void ref_open(void)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/reference.db", g_home);
    if (sqlite3_open(path, &g_ref) != SQLITE_OK ||
        sqlite3_exec(g_ref, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                            "CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;",
                     NULL, NULL, NULL) != SQLITE_OK)
        die("reference database: %s", sqlite3_errmsg(g_ref));
}

/* One durable commit of one small row; µs. */
static double ref_commit(unsigned i)
{
    sqlite3_stmt *st;
    double t0 = now_us();
    if (sqlite3_exec(g_ref, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(g_ref, "INSERT OR REPLACE INTO kv VALUES (?1, ?2)", -1, &st, NULL) !=
            SQLITE_OK)
        die("reference: %s", sqlite3_errmsg(g_ref));
    char key[32];
    snprintf(key, sizeof key, "k%u", i % KV_CALLS);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, (int)i);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE || sqlite3_exec(g_ref, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        die("reference: %s", sqlite3_errmsg(g_ref));
    return now_us() - t0;
}

/* ---- resume ------------------------------------------------------------------------ */

/* A new pending run of flow whose journal is a copy of run `from`'s. */
static int64_t copy_run(const char *flow, int64_t from)
{
    char err[512];
    int64_t id = 0;
    if (runs_admit(g_store, flow, 1, NULL, NULL, &id, err, sizeof err) != 0)
        die("admit copy: %s", err);
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO journal (run_id, position, kind, args, args_digest, idempotency_key,"
             " class, state, settlement, value, delivery_order, created_at, settled_at)"
             " SELECT %lld, position, kind, args, args_digest, idempotency_key, class, state,"
             " settlement, value, delivery_order, created_at, settled_at FROM journal"
             " WHERE run_id = %lld", (long long)id, (long long)from);
    /* A connection of the benchmark's own: the store's interface has no way to forge a
     * journal, as it should not. */
    char path[sizeof g_home + 16];
    snprintf(path, sizeof path, "%s/basal.db", g_home);
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
        sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        die("copy journal: %s", sqlite3_errmsg(db));
    sqlite3_close(db);
    return id;
}

static double timed_resume(struct run_driver *d, const char *flow, int64_t from)
{
    int64_t id = copy_run(flow, from);
    char err[1024];
    struct run_report rep;
    double t0 = now_us();
    int rc = run_drive(d, id, &rep, err, sizeof err);
    double t = now_us() - t0;
    if (rc != 0 || rep.state != RUN_SUCCEEDED || rep.replayed != RESUME_CALLS || rep.host_calls != 0)
        die("resume: %s (replayed %u, live %u)", rc != 0 ? err : (rep.error ? rep.error : "failed"),
            rep.replayed, rep.host_calls);
    run_report_free(&rep);
    return t;
}

/* ---- main -------------------------------------------------------------------------- */

static void ratio_text(double x, double ref, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.2fx", ref > 0 ? x / ref : 0.0);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc)
            g_scale = strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--worker") == 0 && i + 1 < argc)
            i++; /* basal_bench's option: the pool finds the worker beside this program */
        else
            die("usage: flow_bench [--scale X]");
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(g_home, sizeof g_home, "%s/basal-flow-bench-XXXXXX", tmp != NULL ? tmp : "/var/tmp");
    if (mkdtemp(g_home) == NULL)
        die("mkdtemp: %s", strerror(errno));
    char err[512];
    if (datahome_prepare(g_home, false, NULL, err, sizeof err) != 0 ||
        store_open(g_home, &g_store, err, sizeof err) != 0)
        die("%s", err);
    ref_open();

    char *kv_n = loop_script("kv.set('k' + i, i)", KV_CALLS);
    char *kv_0 = loop_script("kv.set('k' + i, i)", 0);
    char *gets = loop_script("kv.get('k')", RESUME_CALLS);
    flow_add("kvn", kv_n);
    flow_add("kv0", kv_0);
    flow_add("resume", gets);

    char worker[PATH_MAX + 32], self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        die("readlink /proc/self/exe");
    self[n] = '\0';
    *strrchr(self, '/') = '\0';
    snprintf(worker, sizeof worker, "%s/../bin/ck-basal-worker", self);
    struct pool_config warm_cfg, cold_cfg;
    pool_config_defaults(&warm_cfg);
    warm_cfg.worker_path = worker;
    warm_cfg.spares = 1;
    cold_cfg = warm_cfg;
    cold_cfg.spares = 0;
    struct run_driver warm = {g_store, g_home, pool_new(&warm_cfg), {0}, NULL};
    struct run_driver cold = {g_store, g_home, pool_new(&cold_cfg), {0}, NULL};
    if (warm.pool == NULL || cold.pool == NULL)
        die("out of memory");

    /* Warm-up: workers bound to each flow, the page cache, SQLite's. */
    for (int i = 0; i < 3; i++) {
        timed_run(&warm, "kvn", NULL);
        timed_run(&warm, "kv0", NULL);
        ref_commit((unsigned)i);
    }
    int64_t source = 0;
    timed_run(&warm, "resume", &source);

    struct samples t_n = {0}, t_0 = {0}, t_n_off = {0}, t_0_off = {0}, commit = {0};
    struct samples resume_warm = {0}, resume_cold = {0};
    size_t kv_iters = iters(KV_ITERS);
    fprintf(stderr, "flow_bench: durable kv.set (%zu runs of %u calls)...\n", kv_iters, KV_CALLS);
    for (size_t i = 0; i < kv_iters; i++) {
        push(&t_n, timed_run(&warm, "kvn", NULL));
        push(&t_0, timed_run(&warm, "kv0", NULL));
        for (unsigned k = 0; k < COMMIT_PER_ITER; k++)
            push(&commit, ref_commit((unsigned)(i * COMMIT_PER_ITER + k)));
    }
    /* The benchmark-only setting: the store's connection without fsync. */
    store_benchmark_sync_off(g_store, true);
    for (size_t i = 0; i < kv_iters; i++) {
        push(&t_n_off, timed_run(&warm, "kvn", NULL));
        push(&t_0_off, timed_run(&warm, "kv0", NULL));
    }
    store_benchmark_sync_off(g_store, false);

    size_t resume_iters = iters(RESUME_ITERS);
    fprintf(stderr, "flow_bench: resume of %u calls (%zu warm, %zu cold)...\n", RESUME_CALLS,
            resume_iters, resume_iters);
    for (size_t i = 0; i < resume_iters; i++) {
        pool_maintain(warm.pool); /* the spare is ready before the clock starts */
        push(&resume_warm, timed_resume(&warm, "resume", source));
        push(&resume_cold, timed_resume(&cold, "resume", source));
    }

    struct samples per_call = {0}, per_call_off = {0};
    per_call_of(&t_n, &t_0, KV_CALLS, &per_call);
    per_call_of(&t_n_off, &t_0_off, KV_CALLS, &per_call_off);
    struct stats s_commit = summarize(&commit), s_call = summarize(&per_call);
    struct stats s_off = summarize(&per_call_off);
    struct stats s_rw = summarize(&resume_warm), s_rc = summarize(&resume_cold);

    printf("| benchmark | n | median | p95 | min | ratio (medians) | goal | met |\n");
    printf("|---|---:|---:|---:|---:|---:|---|---|\n");
    char ratio[32];
    row("bare SQLite commit, synchronous=FULL (reference)", TIME, &s_commit, "1.00x", "", "");
    ratio_text(s_call.median, s_commit.median, ratio, sizeof ratio);
    row("durable kv.set end to end (per call)", TIME, &s_call, ratio, "<= 1.5x the commit",
        verdict(s_call.median <= 1.5 * s_commit.median, s_call.p95 <= 1.5 * s_commit.p95));
    ratio_text(s_off.median, s_commit.median, ratio, sizeof ratio);
    row("kv.set per call, store fsync off (benchmark-only)", TIME, &s_off, ratio, "", "");
    row("resume of 1000 journaled calls, warm spare", TIME, &s_rw, "", "< 20 ms",
        verdict(s_rw.median < 20000, s_rw.p95 < 20000));
    row("resume of 1000 journaled calls, cold (spawn included)", TIME, &s_rc, "", "< 20 ms",
        verdict(s_rc.median < 20000, s_rc.p95 < 20000));
    printf("\nPer-call kv.set samples: (run of %u kv.set - median run of 0) / %u, each run"
           " through run_drive (claim, activation on the flow's warm worker, end state).\n",
           KV_CALLS, KV_CALLS);

    pool_free(warm.pool);
    pool_free(cold.pool);
    free(kv_n);
    free(kv_0);
    free(gets);
    free(t_n.v), free(t_0.v), free(t_n_off.v), free(t_0_off.v), free(commit.v);
    free(resume_warm.v), free(resume_cold.v), free(per_call.v), free(per_call_off.v);
    sqlite3_close(g_ref);
    store_close(g_store);
    nftw(g_home, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    return 0;
}
