/* Group commit (store/store.h, store_group_commit), on the real store module with a
 * counting VFS under SQLite: a shim registered as the default VFS that forwards every
 * call to the system's VFS and counts the syncs of each -wal file.
 *
 *   1. without group commit, each COMMIT syncs the WAL itself (synchronous=FULL);
 *   2. with it, one thread's COMMITs still each end with a WAL sync (none is left to
 *      chance) [guard: a group commit is durable when store_commit returns];
 *   3. 8 threads committing at once share syncs: fewer syncs than commits, and every
 *      commit came back after a sync that began after it [guard: shared fsyncs]. */
#include "lib/harness.h"

#include "lib/counting_vfs.h"
#include "store/store.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the checks ------------------------------------------------------------------ */

static char g_home[4096];

static bool commit_one(struct store *st, long n)
{
    char err[256];
    if (store_begin_txn(st, err, sizeof err) != 0)
        return false;
    char name[32];
    snprintf(name, sizeof name, "t.%ld", n);
    int rc = store_health_add(st, name, 1); /* inside the transaction begun above */
    return store_end_txn(st, rc, err, sizeof err) == 0;
}

#define COMMITS 40
#define THREADS 8

static atomic_long g_bad_order; /* commits that returned with no sync begun after them */

struct committer_job {
    long id;
    bool failed;
};

static void *committer(void *arg)
{
    struct committer_job *job = arg;
    long id = job->id;
    struct store *st = NULL;
    char err[256];
    if (store_open(g_home, &st, err, sizeof err) != 0 ||
        store_group_commit(st, err, sizeof err) != 0) {
        job->failed = true;
        return NULL;
    }
    long failures = 0;
    for (long i = 0; i < COMMITS; i++) {
        long starts_before = atomic_load(&counting_vfs_sync_starts);
        if (!commit_one(st, id * 1000 + i))
            failures++;
        /* A sync that began after this commit began must have begun before it returned. */
        if (atomic_load(&counting_vfs_sync_starts) <= starts_before)
            atomic_fetch_add(&g_bad_order, 1);
    }
    store_close(st);
    job->failed = failures != 0;
    return NULL;
}

int main(void)
{
    if (!counting_vfs_install()) {
        fail("group commit: the counting VFS", "could not register it");
        return harness_finish();
    }
    snprintf(g_home, sizeof g_home, "%s", harness_tmpdir("group-commit"));
    struct store *st = NULL;
    char err[256];
    if (store_open(g_home, &st, err, sizeof err) != 0) {
        fail("group commit: store_open", "%s", err);
        return harness_finish();
    }
    long before = atomic_load(&counting_vfs_wal_syncs);
    bool all = true;
    for (long i = 0; i < COMMITS; i++)
        all = commit_one(st, i) && all;
    long plain = atomic_load(&counting_vfs_wal_syncs) - before;
    check(all && plain >= COMMITS,
          "group commit control: without it every COMMIT syncs the WAL (synchronous=FULL)",
          "%ld WAL syncs for %d commits", plain, COMMITS);

    bool set = store_group_commit(st, err, sizeof err) == 0;
    before = atomic_load(&counting_vfs_wal_syncs);
    all = true;
    for (long i = 0; i < COMMITS; i++)
        all = commit_one(st, 100 + i) && all;
    long grouped = atomic_load(&counting_vfs_wal_syncs) - before;
    check(set && all && grouped == COMMITS,
          "group commit: one thread's commits each return after a WAL sync of their own "
          "[guard: a group commit is durable when store_commit returns]",
          "%ld WAL syncs for %d commits (%s)", grouped, COMMITS, set ? "set" : err);
    store_close(st);

    before = atomic_load(&counting_vfs_wal_syncs);
    pthread_t threads[THREADS];
    struct committer_job jobs[THREADS];
    for (long t = 0; t < THREADS; t++) {
        jobs[t] = (struct committer_job){t + 1, false};
        pthread_create(&threads[t], NULL, committer, &jobs[t]);
    }
    long failed = 0;
    for (long t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        failed += jobs[t].failed;
    }
    long shared = atomic_load(&counting_vfs_wal_syncs) - before;
    check(failed == 0 && shared < (long)THREADS * COMMITS && shared > 0,
          "group commit: 8 threads committing at once share WAL syncs [guard: shared fsyncs]",
          "%ld WAL syncs for %d commits; %ld threads failed", shared, THREADS * COMMITS, failed);
    check(atomic_load(&g_bad_order) == 0,
          "group commit: no commit returned before a WAL sync begun after it started",
          "%ld commits did", (long)atomic_load(&g_bad_order));
    harness_remove_tmpdir();
    return harness_finish();
}
