/* The SQLite engine of the store (store/store_engine.h): basal.db in the data home. */
#include "store/store_engine.h"

#include "base/error_line.h"
#include "store/sql.h"
#include "store/sql_sqlite.h"
#include "store/store_schema.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct sqlite_store {
    struct store base;
    sqlite3 *db;
    bool group_commit;  /* store_group_commit: COMMIT does not sync; the group sync does */
    bool unsynced;      /* the last commit's group sync failed */
    bool writing;       /* holds g_writer (group commit: a write transaction is open) */
    bool unsynced_txn;  /* the open transaction began by store_begin_txn_unsynced */
    bool level_lowered; /* synchronous=NORMAL for it, not yet FULL again */
    bool benchmark_off; /* store_benchmark_sync_off: the level is the benchmark's */
    bool companions_narrowed; /* -wal/-shm chmod'ed after a write */
};

static struct sqlite_store *lite(struct store *s) { return (struct sqlite_store *)s; }

/* chmod 0600 of the file an O_PATH descriptor names (fchmod refuses O_PATH; its
 * /proc/self/fd link does not follow a symbolic link, it names the open file). */
static int narrow_opened(int path_fd)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", path_fd);
    return chmod(link, 0600);
}

/* Creates the database file owner-only (or checks an existing one): a regular file,
 * not a link, owned by this user, narrowed to 0600.
 *
 * Approach: an existing file is only ever looked at through an O_PATH descriptor. SQLite
 * holds POSIX locks on basal.db while a connection of this process is open (serve opens
 * the store again for every ops request), and closing ANY ordinary descriptor of the file
 * drops every POSIX lock the process holds on it: another process then believes it is
 * the last connection, checkpoints and deletes -wal and -shm under us, and commits are
 * lost. The kernel skips the lock removal when an O_PATH file is closed (FMODE_PATH;
 * tests/t_store_locks.c shows it on this kernel). A new file is created with O_EXCL and
 * closed at once: its inode did not exist before, so no connection holds a lock on it. */
static int prepare_file(const char *path, bool *created, char *err, size_t cap)
{
    *created = false;
    int made = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (made >= 0) {
        *created = true;
        close(made);
    } else if (errno != EEXIST) {
        return error_line(err, cap, "cannot create store %s: %s", path, strerror(errno));
    }
    int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return error_line(err, cap, "cannot open store %s: %s", path, strerror(errno));
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0)
        rc = error_line(err, cap, "cannot inspect store %s: %s", path, strerror(errno));
    else if (S_ISLNK(st.st_mode))
        rc = error_line(err, cap, "store %s is a symbolic link: refused", path);
    else if (!S_ISREG(st.st_mode))
        rc = error_line(err, cap, "store %s is not a regular file", path);
    else if (st.st_uid != geteuid())
        rc = error_line(err, cap, "store %s is not owned by this user: refused", path);
    else if ((st.st_mode & 07777) != 0600 && narrow_opened(fd) != 0)
        rc = error_line(err, cap, "cannot narrow store %s to 0600: %s", path, strerror(errno));
    close(fd); /* O_PATH: leaves this process's locks on the file alone */
    if (rc != 0 && *created)
        unlink(path);
    return rc;
}

/* chmod 0600 of path-wal and path-shm if they exist (never through a link).
 *
 * Only through O_PATH descriptors, for the reason prepare_file gives: SQLite holds POSIX
 * locks on -shm too, and another process that sees it unlocked truncates it under our
 * mapping (SIGBUS) and the WAL index breaks. */
static void narrow_companions(struct sqlite_store *s)
{
    static const char *const SUFFIX[] = {"-wal", "-shm"};
    bool all = true;
    for (size_t i = 0; i < 2; i++) {
        char p[4096];
        int n = snprintf(p, sizeof p, "%s%s", s->base.path, SUFFIX[i]);
        if (n < 0 || (size_t)n >= sizeof p)
            continue;
        int fd = open(p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            all = false;
            continue;
        }
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) != 0600)
            (void)narrow_opened(fd);
        close(fd);
    }
    s->companions_narrowed = all;
}

static int exec_sql(struct sqlite_store *s, const char *sql)
{
    return sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

/* exec_sql for the one-statement literals every transaction runs (BEGIN, COMMIT,
 * ROLLBACK, the synchronous level): compiled once per connection and thread and kept
 * (store/sql.h), not parsed again at each of them (perf of serve: 6% in the parser). */
static int exec_kept(struct sqlite_store *s, const char *sql)
{
    struct sql_stmt *st;
    if (sql_prepare(s->base.db, sql, &st, NULL, 0) != 0)
        return -1;
    enum sql_step rc = sql_step(st);
    sql_release(st);
    return rc == SQL_DONE || rc == SQL_ROW ? 0 : -1;
}

static int read_user_version(struct sqlite_store *s, int *version)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        *version = sqlite3_column_int(st, 0);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

/* The pragma's text value equals want (case-insensitive). */
static bool pragma_is(struct sqlite_store *s, const char *pragma, const char *want)
{
    sqlite3_stmt *st = NULL;
    bool ok = false;
    if (sqlite3_prepare_v2(s->db, pragma, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char *v = sqlite3_column_text(st, 0);
        ok = v != NULL && strcasecmp((const char *)v, want) == 0;
    }
    sqlite3_finalize(st);
    return ok;
}

static const char *lite_errmsg(struct store *b);

static int migrate(struct sqlite_store *s, char *err, size_t cap)
{
    for (int v = s->base.version + 1; v <= STORE_SCHEMA_VERSION; v++) {
        char bump[64];
        snprintf(bump, sizeof bump, "PRAGMA user_version = %d", v);
        int found = -1;
        if (exec_sql(s, "BEGIN IMMEDIATE") != 0)
            return error_line(err, cap, "store %s: cannot start migration to schema version %d: %s",
                        s->base.path, v, lite_errmsg(&s->base));
        /* Another process may have migrated since we looked. */
        if (read_user_version(s, &found) != 0 || found >= v) {
            exec_sql(s, "ROLLBACK");
            if (found >= v) {
                v = found;
                s->base.version = found;
                if (found > STORE_SCHEMA_VERSION)
                    return error_line(err, cap, "store %s has schema version %d, newer than this "
                                          "build's %d: use a newer ck-basal", s->base.path, found,
                                STORE_SCHEMA_VERSION);
                continue;
            }
            return error_line(err, cap, "store %s: cannot read its schema version", s->base.path);
        }
        if (exec_sql(s, store_schema_migration(v)) != 0 || exec_sql(s, bump) != 0) {
            char msg[384];
            snprintf(msg, sizeof msg, "%s", lite_errmsg(&s->base));
            exec_sql(s, "ROLLBACK");
            return error_line(err, cap, "store %s: migration to schema version %d failed: %s",
                        s->base.path, v, msg);
        }
        if (exec_sql(s, "COMMIT") != 0) {
            char msg[384];
            snprintf(msg, sizeof msg, "%s", lite_errmsg(&s->base));
            exec_sql(s, "ROLLBACK");
            return error_line(err, cap, "store %s: migration to schema version %d failed to commit: "
                                  "%s", s->base.path, v, msg);
        }
        s->base.version = v;
        narrow_companions(s);
    }
    return 0;
}


static void lite_close(struct store *b);

static int lite_open(const char *home, const char *uri, struct store **out, char *err,
                     size_t err_cap)
{
    (void)uri;
    *out = NULL;
    struct sqlite_store *s = calloc(1, sizeof *s);
    if (s == NULL)
        return error_line(err, err_cap, "out of memory");
    s->base.engine = &STORE_SQLITE;
    if (asprintf(&s->base.path, "%s/" STORE_FILE, home) < 0) {
        free(s);
        return error_line(err, err_cap, "out of memory");
    }
    if (prepare_file(s->base.path, &s->base.created, err, err_cap) != 0)
        goto failed;
    int rc = sqlite3_open_v2(s->base.path, &s->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX |
                                 SQLITE_OPEN_EXRESCODE,
                             NULL);
    if (rc == SQLITE_OK && (s->base.db = sql_sqlite_adopt(s->db)) == NULL) {
        error_line(err, err_cap, "out of memory");
        goto failed;
    }
    if (rc != SQLITE_OK) {
        error_line(err, err_cap, "cannot open store %s: %s", s->base.path,
                   s->db != NULL ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        goto failed;
    }
    sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(s->db, 1);
    /* No checkpoint at close: every commit is already durable in the WAL (synchronous=
     * FULL), and a one-shot command's close would add two fsyncs (the WAL, then
     * basal.db) after its last commit. A commit checkpoints instead once the WAL
     * holds STORE_WAL_CHECKPOINT_PAGES: the first connection of a process reads the
     * whole WAL to rebuild its index, which at SQLite's default of 1000 pages (4 MiB)
     * cost a cold command up to 1.8 ms (docs/benchmarks.md, issue 32). */
    if (sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL) != SQLITE_OK ||
        sqlite3_wal_autocheckpoint(s->db, STORE_WAL_CHECKPOINT_PAGES) != SQLITE_OK) {
        error_line(err, err_cap, "store %s: cannot keep the WAL at close: %s", s->base.path,
                   lite_errmsg(&s->base));
        goto failed;
    }

    /* Read the version before changing anything (even the journal mode). */
    if (read_user_version(s, &s->base.version) != 0) {
        /* A full disk is no damage: say which it is. */
        if (sql_disk_full(s->base.db))
            error_line(err, err_cap, "store %s cannot be opened: %s", s->base.path,
                       lite_errmsg(&s->base));
        else
            error_line(err, err_cap, "store %s is not a readable SQLite database: %s",
                       s->base.path, lite_errmsg(&s->base));
        goto failed;
    }
    s->base.version_at_open = s->base.version;
    if (s->base.version > STORE_SCHEMA_VERSION) {
        error_line(err, err_cap, "store %s has schema version %d, newer than this build's %d: use a "
                           "newer ck-basal", s->base.path, s->base.version, STORE_SCHEMA_VERSION);
        goto failed;
    }
    if (exec_sql(s, "PRAGMA foreign_keys = ON") != 0 ||
        !pragma_is(s, "PRAGMA journal_mode = WAL", "wal") ||
        exec_sql(s, "PRAGMA synchronous = FULL") != 0 ||
        !pragma_is(s, "PRAGMA foreign_keys", "1") || !pragma_is(s, "PRAGMA synchronous", "2")) {
        error_line(err, err_cap, "store %s: cannot set WAL, synchronous=FULL and foreign keys: %s",
             s->base.path, lite_errmsg(&s->base));
        goto failed;
    }
    if (migrate(s, err, err_cap) != 0)
        goto failed;
    narrow_companions(s);
    *out = &s->base;
    return 0;

failed:
    lite_close(&s->base);
    return -1;
}

static pthread_mutex_t g_writer = PTHREAD_MUTEX_INITIALIZER;

static void lite_close(struct store *b)
{
    struct sqlite_store *s = lite(b);
    if (s->writing) { /* closed inside a write transaction: it rolls back */
        (void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        s->writing = false;
        pthread_mutex_unlock(&g_writer);
    }
    sql_sqlite_release(s->base.db);
    sqlite3_close_v2(s->db);
    free(s->base.path);
    free(s);
}

static bool lite_idle(struct store *b)
{
    return !lite(b)->writing && sqlite3_get_autocommit(lite(b)->db) != 0;
}

static const char *lite_errmsg(struct store *b)
{
    if (lite(b)->unsynced)
        return "the write-ahead log could not be synced to disk";
    if (b->db == NULL)
        return sqlite3_errmsg(lite(b)->db);
    return sql_error_text(b->db, b->error_text, sizeof b->error_text);
}

/* Group commit: the process's writers take turns on this lock rather than on SQLite's
 * busy handler, which sleeps (milliseconds) while another connection writes. It is
 * held from BEGIN to COMMIT or ROLLBACK, not during the sync after a commit, so the
 * next writer commits while the last waits for the sync they then share. */

static void writer_release(struct sqlite_store *s)
{
    if (s->writing) {
        s->writing = false;
        pthread_mutex_unlock(&g_writer);
    }
}

/* The synchronous level outside a transaction (SQLite refuses to change it inside
 * one): NORMAL while an unsynced transaction runs, FULL for everything else. A
 * connection in group commit is NORMAL throughout (its syncs are group_sync's). */
static int set_level(struct sqlite_store *s, bool lowered)
{
    if (s->group_commit || s->benchmark_off || s->level_lowered == lowered)
        return 0;
    if (exec_kept(s, lowered ? "PRAGMA synchronous = NORMAL" : "PRAGMA synchronous = FULL") != 0)
        return -1;
    s->level_lowered = lowered;
    return 0;
}

/* Ends an unsynced transaction's level. A FULL that could not be set again stays
 * owed: the next store_begin sets it or refuses. */
static void transaction_ended(struct sqlite_store *s)
{
    if (s->unsynced_txn) {
        s->unsynced_txn = false;
        (void)set_level(s, false);
    }
}

static int lite_begin(struct store *b, enum store_txn kind)
{
    struct sqlite_store *s = lite(b);
    if (kind == STORE_TXN_READ)
        return exec_kept(s, "BEGIN DEFERRED");
    bool unsynced = kind == STORE_TXN_WRITE_UNSYNCED;
    /* A durable transaction never begins at a lowered level: fail closed. */
    if (set_level(s, unsynced) != 0)
        return -1;
    if (s->group_commit && !s->writing) {
        pthread_mutex_lock(&g_writer);
        s->writing = true;
    }
    if (exec_kept(s, "BEGIN IMMEDIATE") != 0) {
        writer_release(s);
        (void)set_level(s, false);
        return -1;
    }
    s->unsynced_txn = unsynced;
    return 0;
}

/* ---- group commit (store_group_commit) ---------------------------------------------- */

static pthread_mutex_t g_sync_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_sync_done = PTHREAD_COND_INITIALIZER;
static uint64_t g_sync_asked;   /* commits that asked for a sync, numbered from 1 */
static uint64_t g_sync_covered; /* every commit up to this number is on disk */
static bool g_syncing;

/* fsync of the WAL through this connection's own handle: the sync is per file, so it
 * also covers what other connections of the process wrote to the WAL before it. */
static int wal_sync(struct sqlite_store *s)
{
    sqlite3_file *wal = NULL;
    if (sqlite3_file_control(s->db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal) != SQLITE_OK ||
        wal == NULL || wal->pMethods == NULL)
        return -1;
    return wal->pMethods->xSync(wal, SQLITE_SYNC_FULL) == SQLITE_OK ? 0 : -1;
}

/* Returns once a WAL sync that started after this commit has finished: the first
 * committer to find no sync running starts one for every commit made so far; the rest
 * wait for it (or, if it fails, start their own). */
static int group_sync(struct sqlite_store *s)
{
    pthread_mutex_lock(&g_sync_mu);
    uint64_t mine = ++g_sync_asked;
    int rc = 0;
    while (g_sync_covered < mine) {
        if (g_syncing) {
            pthread_cond_wait(&g_sync_done, &g_sync_mu);
            continue;
        }
        g_syncing = true;
        uint64_t covers = g_sync_asked;
        pthread_mutex_unlock(&g_sync_mu);
        rc = wal_sync(s);
        pthread_mutex_lock(&g_sync_mu);
        g_syncing = false;
        if (rc == 0 && covers > g_sync_covered)
            g_sync_covered = covers;
        pthread_cond_broadcast(&g_sync_done);
        if (rc != 0)
            break;
    }
    pthread_mutex_unlock(&g_sync_mu);
    return rc;
}

static int lite_group_commit(struct store *b, char *err, size_t err_cap)
{
    struct sqlite_store *s = lite(b);
    if (exec_sql(s, "PRAGMA synchronous = NORMAL") != 0 || !pragma_is(s, "PRAGMA synchronous", "1"))
        return error_line(err, err_cap, "store %s: cannot set synchronous=NORMAL: %s", b->path,
                          lite_errmsg(b));
    s->group_commit = true;
    return 0;
}

static int lite_commit(struct store *b)
{
    struct sqlite_store *s = lite(b);
    if (exec_kept(s, "COMMIT") != 0)
        return -1; /* still in the transaction: the caller rolls back */
    writer_release(s);
    bool waits = !s->unsynced_txn;
    transaction_ended(s);
    if (waits && s->group_commit && group_sync(s) != 0) {
        /* Committed, but not known to be on disk: the caller treats it as not done
         * (what it was about to do after a durable write does not happen). */
        s->unsynced = true;
        return -1;
    }
    s->unsynced = false;
    if (!s->companions_narrowed)
        narrow_companions(s);
    return 0;
}

static int lite_rollback(struct store *b)
{
    struct sqlite_store *s = lite(b);
    int rc = exec_kept(s, "ROLLBACK");
    writer_release(s);
    transaction_ended(s);
    return rc;
}

/* A pragma's value as text into text (may be NULL) and as a number into *number (may
 * be NULL): 0, or -1. */
static int pragma_value(struct sqlite_store *s, const char *pragma, char *text, size_t cap,
                        int *number)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(s->db, pragma, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL) {
        if (text != NULL)
            snprintf(text, cap, "%s", (const char *)sqlite3_column_text(st, 0));
        if (number != NULL)
            *number = sqlite3_column_int(st, 0);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

static int lite_settings_get(struct store *b, struct store_settings *out, char *err,
                             size_t err_cap)
{
    struct sqlite_store *s = lite(b);
    memset(out, 0, sizeof *out);
    int keys = 0;
    if (pragma_value(s, "PRAGMA journal_mode", out->journal_mode, sizeof out->journal_mode,
                     NULL) != 0 ||
        pragma_value(s, "PRAGMA synchronous", NULL, 0, &out->synchronous) != 0 ||
        pragma_value(s, "PRAGMA foreign_keys", NULL, 0, &keys) != 0)
        return error_line(err, err_cap, "store: cannot read the connection's settings: %s",
                          lite_errmsg(b));
    out->foreign_keys = keys == 1;
    return 0;
}

static int lite_benchmark_sync_off(struct store *b, bool off)
{
    struct sqlite_store *s = lite(b);
    int rc = exec_sql(s, off ? "PRAGMA synchronous=OFF" : "PRAGMA synchronous=FULL");
    if (rc == 0) {
        s->benchmark_off = off;
        s->level_lowered = false;
    }
    return rc;
}

const struct store_engine STORE_SQLITE = {
    .name = "sqlite",
    .open = lite_open,
    .close = lite_close,
    .idle = lite_idle,
    .begin = lite_begin,
    .commit = lite_commit,
    .rollback = lite_rollback,
    .errmsg = lite_errmsg,
    .settings_get = lite_settings_get,
    .group_commit = lite_group_commit,
    .benchmark_sync_off = lite_benchmark_sync_off,
};
