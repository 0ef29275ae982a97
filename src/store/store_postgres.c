/* The PostgreSQL engine of the store (store/store_engine.h): a database named by a
 * libpq connection URI (store_use), on the connection of store/sql_postgres.h.
 *
 * Locking. Every write transaction of every process and node takes one advisory lock
 * of the whole database (WRITE_LOCK) right after its BEGIN, held to its end: one
 * writer at a time, and it sees everything committed before it began, which is what
 * SQLite's BEGIN IMMEDIATE gives the store's modules. Their logic (read, decide, write
 * in one transaction) therefore stays correct here unchanged, at READ COMMITTED.
 * This is a first, correct step: finer locking (rows claimed with FOR UPDATE SKIP
 * LOCKED, issue 26) comes later and will let writers of different runs overlap. */
#include "store/store_engine.h"

#include "base/error_line.h"
#include "store/sql.h"
#include "store/sql_postgres.h"
#include "store/store.h"
#include "store/store_schema.h"
#include "store/store_schema_postgres.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(STORE_SCHEMA_POSTGRES_BASE <= STORE_SCHEMA_VERSION,
               "the PostgreSQL schema cannot be newer than the store's");

/* Advisory lock keys (one 64-bit key space per database): "basa" and a number. */
/* Held by an open's schema check and migrations: one process creates the schema. */
#define SCHEMA_LOCK "7089074148906893313" /* 0x6261736100000001 */
/* Held by every write transaction (see the top of this file). */
#define WRITE_LOCK "7089074148906893314" /* 0x6261736100000002 */
/* Held (shared) for its life by every process that drives runs (store_hold_driver),
 * all of one host; pg_locks
 * shows an advisory key as classid (its high 32 bits) and objid (its low 32). */
#define DRIVER_LOCK "7089074148906893315" /* 0x6261736100000003 */
#define DRIVER_LOCK_CLASSID "1650553697"
#define DRIVER_LOCK_OBJID "3"

struct pg_store {
    struct store base;
    char level[16]; /* synchronous_commit as open left it: what benchmark_sync_off restores */
};

static struct pg_store *pgs(struct store *s) { return (struct pg_store *)s; }

static const char *pg_errmsg(struct store *b)
{
    return sql_error_text(b->db, b->error_text, sizeof b->error_text);
}

/* One statement of the store's own, prepared once per connection and kept (every
 * transaction pays for these): 0, or -1 with the reason in the connection's error. */
static int run_kept(struct store *s, const char *sql)
{
    struct sql_stmt *st;
    if (sql_prepare(s->db, sql, &st, NULL, 0) != 0)
        return -1;
    enum sql_step rc = sql_step(st);
    sql_release(st);
    return rc == SQL_ERROR ? -1 : 0;
}

/* ---- open: the schema ----------------------------------------------------------------- */

/* Reads the first column of sql's one row as text into out (and as a number into
 * *number, may be NULL): 1, 0 when there is no row (or it is NULL), -1 on failure. */
static int query_one(struct store *s, const char *sql, char *out, size_t cap, int *number)
{
    struct sql_stmt *st;
    if (sql_prepare(s->db, sql, &st, NULL, 0) != 0)
        return -1;
    int rc = -1;
    switch (sql_step(st)) {
    case SQL_ROW:
        rc = sql_column_is_null(st, 0) ? 0 : 1;
        if (rc == 1 && out != NULL)
            sql_column_copy(st, 0, out, cap);
        if (rc == 1 && number != NULL)
            *number = (int)sql_column_int64(st, 0);
        break;
    case SQL_DONE:
        rc = 0;
        break;
    case SQL_ERROR:
        break;
    }
    sql_release(st);
    return rc;
}

/* The migrations after the version in force, in the open's transaction. */
static int migrate(struct store *s, char *err, size_t cap)
{
    for (int v = s->version + 1; v <= STORE_SCHEMA_VERSION; v++) {
        const char *sql = store_schema_postgres_migration(v);
        if (sql == NULL)
            return error_line(err, cap, "store %s: this build has no PostgreSQL migration to schema "
                              "version %d", s->path, v);
        char bump[64];
        snprintf(bump, sizeof bump, "UPDATE basal_schema SET version = %d", v);
        if (sql_exec(s->db, sql) != 0 || sql_exec(s->db, bump) != 0)
            return error_line(err, cap, "store %s: migration to schema version %d failed: %s",
                              s->path, v, pg_errmsg(s));
        s->version = v;
    }
    return 0;
}

/* Creates the schema in an empty database, or checks and migrates the one there, in
 * one transaction under SCHEMA_LOCK: nodes opening a new database at once create it
 * once, and a refused or failed open changes nothing. */
static int prepare_schema(struct pg_store *ps, char *err, size_t cap)
{
    struct store *s = &ps->base;
    if (sql_exec(s->db, "BEGIN ISOLATION LEVEL READ COMMITTED") != 0 ||
        sql_exec(s->db, "SELECT pg_advisory_xact_lock(" SCHEMA_LOCK ")") != 0)
        return error_line(err, cap, "store %s: cannot start the schema's transaction: %s", s->path,
                          pg_errmsg(s));
    int rc = -1;
    char exists[8] = "";
    if (query_one(s, "SELECT to_regclass('basal_schema') IS NOT NULL", exists, sizeof exists,
                  NULL) != 1) {
        error_line(err, cap, "store %s: cannot look for the schema: %s", s->path, pg_errmsg(s));
        goto done;
    }
    if (strcmp(exists, "1") != 0) {
        if (sql_exec(s->db, store_schema_postgres_create()) != 0) {
            error_line(err, cap, "store %s: cannot create the schema: %s", s->path, pg_errmsg(s));
            goto done;
        }
        s->created = true;
        s->version_at_open = 0;
        s->version = STORE_SCHEMA_POSTGRES_BASE;
    } else {
        int found = 0;
        int got = query_one(s, "SELECT max(version) FROM basal_schema", NULL, 0, &found);
        if (got != 1) {
            error_line(err, cap, "store %s: cannot read its schema version: %s", s->path,
                       got == 0 ? "basal_schema is empty" : pg_errmsg(s));
            goto done;
        }
        s->version = s->version_at_open = found;
        if (found > STORE_SCHEMA_VERSION) {
            error_line(err, cap, "store %s has schema version %d, newer than this build's %d: use a "
                       "newer ck-basal", s->path, found, STORE_SCHEMA_VERSION);
            goto done;
        }
        if (found < STORE_SCHEMA_POSTGRES_BASE) {
            error_line(err, cap, "store %s has schema version %d, older than any PostgreSQL schema "
                       "(%d): refused", s->path, found, STORE_SCHEMA_POSTGRES_BASE);
            goto done;
        }
    }
    if (migrate(s, err, cap) != 0)
        goto done;
    if (sql_exec(s->db, "COMMIT") != 0) {
        error_line(err, cap, "store %s: the schema's transaction failed to commit: %s", s->path,
                   pg_errmsg(s));
        goto done;
    }
    return 0;
done:
    (void)sql_exec(s->db, "ROLLBACK");
    return rc;
}

/* Commits wait for their WAL flush (store.h): a session whose server, database or
 * role says synchronous_commit = off is set back to on; any other level (local,
 * remote_write, remote_apply) flushes locally too and stays. */
static int keep_durable(struct pg_store *ps, char *err, size_t cap)
{
    struct store *s = &ps->base;
    char level[16] = "";
    if (query_one(s, "SELECT current_setting('synchronous_commit')", level, sizeof level, NULL) != 1)
        return error_line(err, cap, "store %s: cannot read synchronous_commit: %s", s->path,
                          pg_errmsg(s));
    static const char *const KNOWN[] = {"on", "local", "remote_write", "remote_apply"};
    snprintf(ps->level, sizeof ps->level, "on");
    for (size_t i = 0; i < sizeof KNOWN / sizeof KNOWN[0]; i++)
        if (strcmp(level, KNOWN[i]) == 0)
            snprintf(ps->level, sizeof ps->level, "%s", KNOWN[i]);
    if (strcmp(level, ps->level) != 0 && sql_exec(s->db, "SET synchronous_commit = on") != 0)
        return error_line(err, cap, "store %s: cannot set synchronous_commit = on: %s", s->path,
                          pg_errmsg(s));
    return 0;
}

static void pg_close(struct store *b)
{
    if (b == NULL)
        return;
    sql_postgres_close(b->db); /* an open transaction rolls back with the connection */
    free(b->path);
    free(b);
}

static int pg_open(const char *home, const char *uri, struct store **out, char *err,
                   size_t err_cap)
{
    (void)home; /* the data home keeps only what is per node (docs/operations.md) */
    *out = NULL;
    if (uri == NULL)
        return error_line(err, err_cap, "store: no PostgreSQL URI given");
    struct pg_store *ps = calloc(1, sizeof *ps);
    if (ps == NULL || (ps->base.path = strdup(uri)) == NULL) {
        free(ps);
        return error_line(err, err_cap, "out of memory");
    }
    ps->base.engine = &STORE_POSTGRES;
    if ((ps->base.db = sql_postgres_connect(uri, err, err_cap)) == NULL ||
        keep_durable(ps, err, err_cap) != 0 || prepare_schema(ps, err, err_cap) != 0) {
        pg_close(&ps->base);
        return -1;
    }
    *out = &ps->base;
    return 0;
}

/* ---- transactions --------------------------------------------------------------------- */

static bool pg_idle(struct store *b) { return sql_postgres_txn_status(b->db) == SQL_PG_IDLE; }

static int pg_begin(struct store *b, enum store_txn kind)
{
    /* PostgreSQL only warns at a BEGIN inside a transaction; SQLite refuses, and so
     * does the store (not nested, store.h). */
    if (!pg_idle(b)) {
        if (sql_postgres_txn_status(b->db) != SQL_PG_UNKNOWN)
            sql_postgres_set_error(b->db, "a transaction is already open on this connection");
        return -1;
    }
    if (kind == STORE_TXN_READ) /* one snapshot for all its reads */
        return run_kept(b, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    if (run_kept(b, "BEGIN ISOLATION LEVEL READ COMMITTED") != 0)
        return -1;
    /* The write lock (top of this file), then for an unsynced transaction a commit
     * that does not wait for its WAL flush. PostgreSQL's guarantee ("Asynchronous
     * Commit", in "Reliability and the Write-Ahead Log" of its manual): a crash of the
     * server may lose the most recent such commits, never corrupt the database, and
     * the state is as if they had been aborted; the WAL writer flushes them within
     * three wal_writer_delay (200 ms by default). The WAL is one sequence, so a later
     * commit that waits for its flush flushes them too: lost only together with what
     * was committed after them, as store.h says of SQLite. */
    if (run_kept(b, "SELECT pg_advisory_xact_lock(" WRITE_LOCK ")") != 0 ||
        (kind == STORE_TXN_WRITE_UNSYNCED && run_kept(b, "SET LOCAL synchronous_commit = off") != 0)) {
        char why[384];
        snprintf(why, sizeof why, "%s", pg_errmsg(b));
        (void)run_kept(b, "ROLLBACK");
        sql_postgres_set_error(b->db, why);
        return -1;
    }
    return 0;
}

static int pg_commit(struct store *b)
{
    switch (sql_postgres_txn_status(b->db)) {
    case SQL_PG_IN_TXN:
        return run_kept(b, "COMMIT");
    case SQL_PG_FAILED: {
        /* Its COMMIT would roll back and report success: a statement failed, and
         * PostgreSQL aborts the whole transaction at any failure (SQLite only that
         * statement). Say so; the caller rolls back. */
        char why[320], text[384];
        snprintf(why, sizeof why, "%s", pg_errmsg(b));
        snprintf(text, sizeof text, "the transaction was aborted by an earlier failure (%s)", why);
        sql_postgres_set_error(b->db, text);
        return -1;
    }
    case SQL_PG_IDLE:
        sql_postgres_set_error(b->db, "no transaction is open to commit");
        return -1;
    case SQL_PG_UNKNOWN:
        break;
    }
    return -1; /* the connection is lost: its error says so */
}

static int pg_rollback(struct store *b)
{
    if (pg_idle(b)) /* already ended (a failed COMMIT ends it): nothing to send */
        return 0;
    return run_kept(b, "ROLLBACK");
}

/* ---- settings ------------------------------------------------------------------------- */

static int pg_settings_get(struct store *b, struct store_settings *out, char *err,
                           size_t err_cap)
{
    memset(out, 0, sizeof *out);
    char level[16] = "";
    if (query_one(b, "SELECT current_setting('synchronous_commit')", level, sizeof level, NULL) != 1)
        return error_line(err, err_cap, "store: cannot read the connection's settings: %s",
                          pg_errmsg(b));
    snprintf(out->journal_mode, sizeof out->journal_mode, "postgresql");
    /* 2 (FULL) when a commit waits for its WAL flush: every level but off. */
    out->synchronous = strcmp(level, "off") == 0 ? 0 : 2;
    out->foreign_keys = true; /* PostgreSQL always enforces them */
    return 0;
}

/* PostgreSQL already shares WAL flushes among the commits that wait at once. */
static int pg_group_commit(struct store *b, char *err, size_t err_cap)
{
    (void)b;
    (void)err;
    (void)err_cap;
    return 0;
}

static int pg_benchmark_sync_off(struct store *b, bool off)
{
    if (off)
        return sql_exec(b->db, "SET synchronous_commit = off");
    char set[64];
    snprintf(set, sizeof set, "SET synchronous_commit = %s", pgs(b)->level);
    return sql_exec(b->db, set);
}

/* ---- the driving process --------------------------------------------------------------- */

static pthread_mutex_t driver_mu = PTHREAD_MUTEX_INITIALIZER;
/* The connection that holds DRIVER_LOCK: its own session, so that no store handle's
 * close drops it, open until the process ends (the server then drops the lock). */
static struct sql_db *driver_db;

/* The first text column of sql's first row, with ?1 bound to arg (may be NULL), into
 * out ("" if none): 0, or -1. */
static int driver_query(struct sql_db *db, const char *sql, const char *arg, char *out,
                        size_t cap)
{
    struct sql_stmt *st;
    out[0] = '\0';
    if (sql_prepare(db, sql, &st, NULL, 0) != 0)
        return -1;
    if (arg != NULL)
        sql_bind_text(st, 1, arg);
    enum sql_step rc = sql_step(st);
    if (rc == SQL_ROW && !sql_column_is_null(st, 0))
        sql_column_copy(st, 0, out, cap);
    sql_release(st);
    return rc == SQL_ERROR ? -1 : 0;
}

/* Which processes can judge each other's pids: this kernel's boot and this pid
 * namespace (containers on one kernel share the boot but not the namespace), as
 * "(host B/N)" with B the boot id's first 12 hex digits (48 random bits) and N the
 * namespace's inode, into out: 0, or -1 (then nothing may be judged). It starts the
 * session's application_name, which PostgreSQL cuts at 63 bytes. The test build may
 * pose as another host (BASAL_TEST_HOST_ID, 16 characters at most), as a second node. */
static int host_identity(char *out, size_t cap)
{
#ifdef BASAL_TEST_HOOKS
    const char *posed = getenv("BASAL_TEST_HOST_ID");
    if (posed != NULL && posed[0] != '\0') {
        snprintf(out, cap, "(host %.16s)", posed);
        return 0;
    }
#endif
    char boot[64] = "", hex[13];
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f == NULL)
        return -1;
    bool read_ok = fgets(boot, sizeof boot, f) != NULL;
    fclose(f);
    size_t n = 0;
    for (const char *p = boot; read_ok && *p != '\0' && n < sizeof hex - 1; p++)
        if (strchr("0123456789abcdef", *p) != NULL)
            hex[n++] = *p;
    hex[n] = '\0';
    struct stat ns;
    if (n < sizeof hex - 1 || stat("/proc/self/ns/pid", &ns) != 0)
        return -1;
    snprintf(out, cap, "(host %s/%llu)", hex, (unsigned long long)ns.st_ino);
    return 0;
}

/* Another host's process holding DRIVER_LOCK, as its application_name says (set by
 * take_driver), into out ("" if none), printable ASCII only: a name comes from
 * another process and ends up on a terminal. A session whose name the role may not
 * read counts as another host's. 0, or -1. */
static int other_host_driver(struct sql_db *db, const char *host, char *out, size_t cap)
{
    char name[160];
    if (driver_query(db, "SELECT coalesce(a.application_name, 'a process the database role"
                         " may not see') FROM pg_locks l"
                         " JOIN pg_stat_activity a ON a.pid = l.pid"
                         " WHERE l.locktype = 'advisory' AND l.granted"
                         " AND l.classid = " DRIVER_LOCK_CLASSID
                         " AND l.objid = " DRIVER_LOCK_OBJID
                         " AND l.database = (SELECT oid FROM pg_database"
                         "   WHERE datname = current_database())"
                         " AND l.pid <> pg_backend_pid()"
                         " AND coalesce(left(a.application_name, length(?1)) <> ?1, true)"
                         " LIMIT 1",
                     host, name, sizeof name) != 0)
        return -1;
    size_t n = 0;
    for (const char *p = name; *p != '\0' && n + 1 < cap; p++, n++) {
        out[n] = *p;
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            out[n] = '?';
    }
    out[n] = '\0';
    return 0;
}

/* Every driving process holds DRIVER_LOCK shared and names its host in its session's
 * application_name; a process that finds a holder of another host refuses. Two
 * processes of different hosts that start at once each see the other (each takes the
 * lock before it looks), so at worst both refuse. */
static int take_driver(struct store *b, char *err, size_t cap)
{
    char host[128], me[256], got[8], other[160];
    if (host_identity(host, sizeof host) != 0)
        return error_line(err, cap, "store: this host's identity (its boot id and pid"
                                    " namespace) cannot be read, so no run's owner can be"
                                    " judged: refusing to drive runs");
    struct sql_db *db = sql_postgres_connect(b->path, err, cap);
    if (db == NULL)
        return -1;
    char name[64] = "";
    if (gethostname(name, sizeof name - 1) != 0)
        snprintf(name, sizeof name, "?");
    snprintf(me, sizeof me, "%s ck-basal pid %ld on %s", host, (long)getpid(), name);
    if (driver_query(db, "SELECT set_config('application_name', ?1, false)", me, got,
                     sizeof got) != 0 ||
        driver_query(db, "SELECT pg_try_advisory_lock_shared(" DRIVER_LOCK ")::text", NULL,
                     got, sizeof got) != 0 ||
        other_host_driver(db, host, other, sizeof other) != 0) {
        char why[256];
        error_line(err, cap, "store: taking the driving lock: %s",
                   sql_error_text(db, why, sizeof why));
        sql_postgres_close(db);
        return -1;
    }
    if (strcmp(got, "true") != 0 || other[0] != '\0') {
        sql_postgres_close(db);
        return error_line(err, cap,
                          "store: a process on another host drives the runs of this"
                          " PostgreSQL store (%s); one driving host at a time for now"
                          " (docs/operations.md)",
                          other[0] != '\0' ? other : "an exclusive holder");
    }
    driver_db = db;
    return 0;
}

static int pg_hold_driver(struct store *b, char *err, size_t err_cap)
{
    pthread_mutex_lock(&driver_mu);
    int rc = driver_db != NULL ? 0 : take_driver(b, err, err_cap);
    pthread_mutex_unlock(&driver_mu);
    return rc;
}

const struct store_engine STORE_POSTGRES = {
    .name = "postgresql",
    .open = pg_open,
    .close = pg_close,
    .idle = pg_idle,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .errmsg = pg_errmsg,
    .settings_get = pg_settings_get,
    .group_commit = pg_group_commit,
    .benchmark_sync_off = pg_benchmark_sync_off,
    .hold_driver = pg_hold_driver,
};
