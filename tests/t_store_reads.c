/* What the store reads to find each flow's next run (store/runs.h runs_heads, asked by
 * every free runner of a serve), with a counting VFS under SQLite
 * (tests/lib/counting_vfs.h): the reads of a cold connection's runs_heads with two
 * pending runs, then with 20,000 ended runs beside them. The lookup reads only the
 * runs not yet ended, so the history adds no read [guard: the runs_unfinished index,
 * schema version 6]. Control: a full read of the runs table, with the same counter,
 * does read more once the history is there (the counter sees the table grow). */
#include "lib/harness.h"

#include "lib/counting_vfs.h"
#include "store/datahome.h"
#include "store/runs.h"
#include "store/store.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

static char g_db[4200];

/* Runs sql on the store's file through a connection of the test's own. */
static bool exec_on_file(const char *sql)
{
    sqlite3 *db = NULL;
    bool done = sqlite3_open_v2(g_db, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
                sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK;
    if (!done)
        fail("store reads: the test's own SQL", "%s", db != NULL ? sqlite3_errmsg(db) : "open");
    sqlite3_close(db);
    return done;
}

/* Reads (xRead calls) of runs_heads on a fresh connection: its page cache is empty. */
static long heads_reads(const char *home, size_t *found)
{
    struct store *s = NULL;
    char err[512] = "";
    *found = 0;
    if (store_open(home, &s, err, sizeof err) != 0) {
        fail("store reads: store_open", "%s", err);
        return -1;
    }
    struct run_head *heads = NULL;
    long before = atomic_load(&counting_vfs_reads);
    int rc = runs_heads(s, &heads, found, err, sizeof err);
    long reads = atomic_load(&counting_vfs_reads) - before;
    if (rc != 0)
        fail("store reads: runs_heads", "%s", err);
    free(heads);
    store_close(s);
    return rc == 0 ? reads : -1;
}

/* Reads of a count over the whole runs table on a fresh connection (the control). */
static long table_reads(void)
{
    sqlite3 *db = NULL;
    long before = atomic_load(&counting_vfs_reads);
    bool done = sqlite3_open_v2(g_db, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
                sqlite3_exec(db, "SELECT count(*) FROM runs NOT INDEXED WHERE trigger != ''",
                             NULL, NULL, NULL) == SQLITE_OK;
    long reads = atomic_load(&counting_vfs_reads) - before;
    sqlite3_close(db);
    return done ? reads : -1;
}

int main(void)
{
    if (!counting_vfs_install()) {
        fail("store reads: the counting VFS", "could not register it");
        return harness_finish();
    }
    const char *home = harness_tmpdir("store-reads");
    struct datahome_report rep;
    char err[512] = "";
    struct store *s = NULL;
    if (home == NULL || datahome_prepare(home, true, &rep, err, sizeof err) != 0 ||
        store_open(home, &s, err, sizeof err) != 0) {
        fail("store reads: a new store", "%s", err);
        return harness_finish();
    }
    store_close(s);
    snprintf(g_db, sizeof g_db, "%s/basal.db", home);

    /* Rows straight into the table: the check is about the lookup, not admission. */
    bool made = exec_on_file("PRAGMA foreign_keys = OFF;"
                             "INSERT INTO runs (flow_id, version, trigger_id, state, created_at,"
                             " updated_at) VALUES ('f1', 1, 'pending-1', 'pending', 0, 0),"
                             " ('f2', 1, 'pending-2', 'running', 0, 0);");
    size_t found_before = 0, found_after = 0;
    long heads_before = heads_reads(home, &found_before);
    long table_before = table_reads();
    made = made && exec_on_file("PRAGMA foreign_keys = OFF;"
                                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n"
                                " WHERE i < 20000)"
                                " INSERT INTO runs (flow_id, version, trigger_id, state,"
                                " created_at, updated_at) SELECT 'f' || (i % 50), 1, 'ended-' || i,"
                                " CASE i % 3 WHEN 0 THEN 'succeeded' WHEN 1 THEN 'failed'"
                                " ELSE 'cancelled' END, 0, 0 FROM n;");
    long heads_after = heads_reads(home, &found_after);
    long table_after = table_reads();

    check(made && table_before >= 0 && table_after > table_before + 100,
          "store reads control: a full read of the runs reads more with 20,000 ended runs "
          "(the counter sees the history)",
          "%ld reads before, %ld after", table_before, table_after);
    check(made && heads_before > 0 && found_before == 2 && found_after == 2 &&
              heads_after <= heads_before + 2,
          "store reads: the next-run lookup reads no more with 20,000 ended runs than with "
          "none [guard: the runs_unfinished index]",
          "%ld reads with none ended, %ld with 20,000; heads %zu then %zu", heads_before,
          heads_after, found_before, found_after);
    harness_remove_tmpdir();
    return harness_finish();
}
