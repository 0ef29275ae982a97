/* Batched admission (serve/admission_batch.h) on the real store, in process, with a
 * counting VFS under SQLite (tests/lib/counting_vfs.h), 16 threads each with its own
 * store connection in group commit, as serve's request threads are:
 *   1. 16 x 20 admissions at once all come back admitted, each with a run of its own
 *      in the store, in fewer write transactions (WAL write locks) than admissions
 *      [guard: admissions arriving together share one transaction and one commit];
 *   2. every admission came back after a WAL sync that began after it was asked
 *      [guard: a requester is answered only once its run is durable];
 *   3. in one batch, an admission refused (its trigger id admitted before: rc 1 with
 *      that run) or over the flow's backlog (rc -1, the reason) leaves the others
 *      admitted and stores nothing of its own [guard: a refusal is one item's]. */
#include "lib/harness.h"

#include "lib/counting_vfs.h"
#include "serve/admission_batch.h"
#include "store/datahome.h"
#include "store/runs.h"
#include "store/store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 16L
#define EACH 20L

static char g_home[4096];
static char g_db[4200];
static struct admission_batch g_batch;
static atomic_long g_early; /* admissions answered with no sync begun after the ask */

static long long db_number(const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long long v = -1;
    if (sqlite3_open_v2(g_db, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

struct job {
    int thread;
    int admitted;
    int64_t ids[EACH];
};

static void *admitter(void *arg)
{
    struct job *j = arg;
    struct store *st = NULL;
    char err[512];
    if (store_open(g_home, &st, err, sizeof err) != 0 || store_group_commit(st, err, sizeof err) != 0) {
        store_close(st);
        return NULL;
    }
    for (int i = 0; i < EACH; i++) {
        char trigger_id[64];
        snprintf(trigger_id, sizeof trigger_id, "t%d-%d", j->thread, i);
        struct run_admission a = {.flow = "f", .version = 1, .trigger_id = trigger_id,
                                  .max_waiting = 100000};
        long asked = atomic_load(&counting_vfs_sync_starts);
        admission_batch_admit(&g_batch, st, &a);
        if (atomic_load(&counting_vfs_wal_syncs) == 0 ||
            atomic_load(&counting_vfs_sync_starts) <= asked)
            atomic_fetch_add(&g_early, 1);
        if (a.rc == 0)
            j->ids[j->admitted++] = a.run_id;
    }
    store_close(st);
    return NULL;
}

static void test_many_at_once(void)
{
    long locks_before = atomic_load(&counting_vfs_write_locks);
    pthread_t threads[THREADS];
    static struct job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t] = (struct job){.thread = t};
        pthread_create(&threads[t], NULL, admitter, &jobs[t]);
    }
    int admitted = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        admitted += jobs[t].admitted;
    }
    long txns = atomic_load(&counting_vfs_write_locks) - locks_before;
    long long rows = db_number("SELECT count(DISTINCT id) FROM runs WHERE trigger_id GLOB 't*-*'");
    check(admitted == THREADS * EACH && rows == THREADS * EACH && txns > 0 &&
              txns < THREADS * EACH,
          "admission batch: 320 admissions from 16 threads at once are all stored, in fewer "
          "write transactions than admissions [guard: admissions share a transaction and a "
          "commit]",
          "%d admitted, %lld runs stored, %ld write transactions", admitted, rows, txns);
    check(atomic_load(&g_early) == 0,
          "admission batch: no admission came back before a WAL sync begun after it was "
          "asked [guard: answered once durable]",
          "%ld did", (long)atomic_load(&g_early));
}

static void test_refusals_are_one_items(void)
{
    struct store *st = NULL;
    char err[512];
    if (store_open(g_home, &st, err, sizeof err) != 0) {
        fail("admission batch: a connection for the refusals", "%s", err);
        return;
    }
    long long before = db_number("SELECT count(*) FROM runs");
    struct run_admission fresh = {.flow = "f", .version = 1, .trigger_id = "fresh-1",
                                  .max_waiting = 100000};
    struct run_admission again = {.flow = "f", .version = 1, .trigger_id = "t0-0",
                                  .max_waiting = 100000};
    struct run_admission full = {.flow = "f", .version = 1, .trigger_id = "over-backlog",
                                 .max_waiting = 1};
    struct run_admission fresh2 = {.flow = "f", .version = 1, .trigger_id = "fresh-2",
                                   .max_waiting = 100000};
    struct run_admission *items[] = {&fresh, &again, &full, &fresh2};
    int rc = runs_admit_batch(st, items, 4, err, sizeof err);
    long long after = db_number("SELECT count(*) FROM runs");
    long long first = db_number("SELECT id FROM runs WHERE trigger_id = 't0-0'");
    check(rc == 0 && fresh.rc == 0 && fresh2.rc == 0 && again.rc == 1 &&
              again.run_id == first && full.rc == -1 &&
              strstr(full.err, "backlog") != NULL && after == before + 2 &&
              db_number("SELECT count(*) FROM runs WHERE trigger_id = 'over-backlog'") == 0,
          "admission batch: a duplicate and an admission over the backlog are refused alone; "
          "the batch's others are stored [guard: a refusal is one item's]",
          "rc %d; fresh %d, again %d (run %lld, first %lld), full %d (%s), fresh2 %d; runs "
          "%lld -> %lld",
          rc, fresh.rc, again.rc, (long long)again.run_id, first, full.rc, full.err, fresh2.rc,
          before, after);
    store_close(st);
}

int main(void)
{
    if (!counting_vfs_install()) {
        fail("admission batch: the counting VFS", "could not register it");
        return harness_finish();
    }
    const char *home = harness_tmpdir("admission-batch");
    struct datahome_report rep;
    char err[512] = "";
    struct store *st = NULL;
    if (home == NULL || datahome_prepare(home, true, &rep, err, sizeof err) != 0 ||
        store_open(home, &st, err, sizeof err) != 0 || admission_batch_init(&g_batch) != 0) {
        fail("admission batch: a new store", "%s", err);
        return harness_finish();
    }
    store_close(st);
    snprintf(g_home, sizeof g_home, "%s", home);
    snprintf(g_db, sizeof g_db, "%s/basal.db", home);
    /* The flow the runs belong to (the runs' foreign key), straight into the store. */
    sqlite3 *db = NULL;
    bool made = sqlite3_open_v2(g_db, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
                sqlite3_exec(db,
                             "INSERT INTO flows (id, created_at) VALUES ('f', 0);"
                             "INSERT INTO flow_versions (flow_id, version, script, manifest,"
                             " code_hash, created_at) VALUES ('f', 1, x'', x'',"
                             " printf('%064d', 0), 0);",
                             NULL, NULL, NULL) == SQLITE_OK;
    if (!check(made, "admission batch: a flow for the runs", "%s", sqlite3_errmsg(db))) {
        sqlite3_close(db);
        return harness_finish();
    }
    sqlite3_close(db);
    test_many_at_once();
    test_refusals_are_one_items();
    harness_remove_tmpdir();
    return harness_finish();
}
