#include "store/store.h"

#include "store/sql.h"
#include "store/store_internal.h"
#include "base/error_line.h"

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

struct store {
    sqlite3 *db;
    char *path;
    bool group_commit;  /* store_group_commit: COMMIT does not sync; the group sync does */
    bool unsynced;      /* the last commit's group sync failed */
    bool writing;       /* holds g_writer (group commit: a write transaction is open) */
    bool unsynced_txn;  /* the open transaction began by store_begin_txn_unsynced */
    bool level_lowered; /* synchronous=NORMAL for it, not yet FULL again */
    bool benchmark_off; /* store_benchmark_sync_off: the level is the benchmark's */
    int version;
    int version_at_open;
    bool created;
    bool companions_narrowed; /* -wal/-shm chmod'ed after a write */
    char error_text[384];     /* store_errmsg's */
};

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
static void narrow_companions(struct store *s)
{
    static const char *const SUFFIX[] = {"-wal", "-shm"};
    bool all = true;
    for (size_t i = 0; i < 2; i++) {
        char p[4096];
        int n = snprintf(p, sizeof p, "%s%s", s->path, SUFFIX[i]);
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

static int exec_sql(struct store *s, const char *sql)
{
    return sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

/* exec_sql for the one-statement literals every transaction runs (BEGIN, COMMIT,
 * ROLLBACK, the synchronous level): compiled once per connection and thread and kept
 * (store/sql.h), not parsed again at each of them (perf of serve: 6% in the parser). */
static int exec_kept(struct store *s, const char *sql)
{
    sqlite3_stmt *st;
    if (sql_prepare(s->db, sql, &st, NULL, 0) != 0)
        return -1;
    int rc = sqlite3_step(st);
    sql_release(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1;
}

static int read_user_version(struct store *s, int *version)
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
static bool pragma_is(struct store *s, const char *pragma, const char *want)
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

static int migrate(struct store *s, char *err, size_t cap)
{
    for (int v = s->version + 1; v <= STORE_SCHEMA_VERSION; v++) {
        char bump[64];
        snprintf(bump, sizeof bump, "PRAGMA user_version = %d", v);
        int found = -1;
        if (exec_sql(s, "BEGIN IMMEDIATE") != 0)
            return error_line(err, cap, "store %s: cannot start migration to schema version %d: %s",
                        s->path, v, store_errmsg(s));
        /* Another process may have migrated since we looked. */
        if (read_user_version(s, &found) != 0 || found >= v) {
            exec_sql(s, "ROLLBACK");
            if (found >= v) {
                v = found;
                s->version = found;
                if (found > STORE_SCHEMA_VERSION)
                    return error_line(err, cap, "store %s has schema version %d, newer than this "
                                          "build's %d: use a newer ck-basal", s->path, found,
                                STORE_SCHEMA_VERSION);
                continue;
            }
            return error_line(err, cap, "store %s: cannot read its schema version", s->path);
        }
        if (exec_sql(s, store_schema_migration(v)) != 0 || exec_sql(s, bump) != 0) {
            char msg[384];
            snprintf(msg, sizeof msg, "%s", store_errmsg(s));
            exec_sql(s, "ROLLBACK");
            return error_line(err, cap, "store %s: migration to schema version %d failed: %s",
                        s->path, v, msg);
        }
        if (exec_sql(s, "COMMIT") != 0) {
            char msg[384];
            snprintf(msg, sizeof msg, "%s", store_errmsg(s));
            exec_sql(s, "ROLLBACK");
            return error_line(err, cap, "store %s: migration to schema version %d failed to commit: "
                                  "%s", s->path, v, msg);
        }
        s->version = v;
        narrow_companions(s);
    }
    return 0;
}

int store_open(const char *home, struct store **out, char *err, size_t err_cap)
{
    *out = NULL;
    struct store *s = calloc(1, sizeof *s);
    if (s == NULL)
        return error_line(err, err_cap, "out of memory");
    if (asprintf(&s->path, "%s/" STORE_FILE, home) < 0) {
        free(s);
        return error_line(err, err_cap, "out of memory");
    }
    if (prepare_file(s->path, &s->created, err, err_cap) != 0)
        goto failed;
    int rc = sqlite3_open_v2(s->path, &s->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX |
                                 SQLITE_OPEN_EXRESCODE,
                             NULL);
    if (rc != SQLITE_OK) {
        error_line(err, err_cap, "cannot open store %s: %s", s->path,
             s->db != NULL ? store_errmsg(s) : sqlite3_errstr(rc));
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
        error_line(err, err_cap, "store %s: cannot keep the WAL at close: %s", s->path,
                   store_errmsg(s));
        goto failed;
    }

    /* Read the version before changing anything (even the journal mode). */
    if (read_user_version(s, &s->version) != 0) {
        /* A full disk is no damage: say which it is. */
        if (sql_disk_full(s->db))
            error_line(err, err_cap, "store %s cannot be opened: %s", s->path, store_errmsg(s));
        else
            error_line(err, err_cap, "store %s is not a readable SQLite database: %s", s->path,
                       store_errmsg(s));
        goto failed;
    }
    s->version_at_open = s->version;
    if (s->version > STORE_SCHEMA_VERSION) {
        error_line(err, err_cap, "store %s has schema version %d, newer than this build's %d: use a "
                           "newer ck-basal", s->path, s->version, STORE_SCHEMA_VERSION);
        goto failed;
    }
    if (exec_sql(s, "PRAGMA foreign_keys = ON") != 0 ||
        !pragma_is(s, "PRAGMA journal_mode = WAL", "wal") ||
        exec_sql(s, "PRAGMA synchronous = FULL") != 0 ||
        !pragma_is(s, "PRAGMA foreign_keys", "1") || !pragma_is(s, "PRAGMA synchronous", "2")) {
        error_line(err, err_cap, "store %s: cannot set WAL, synchronous=FULL and foreign keys: %s",
             s->path, store_errmsg(s));
        goto failed;
    }
    if (migrate(s, err, err_cap) != 0)
        goto failed;
    narrow_companions(s);
    *out = s;
    return 0;

failed:
    store_close(s);
    return -1;
}

static pthread_mutex_t g_writer = PTHREAD_MUTEX_INITIALIZER;

void store_close(struct store *s)
{
    if (s == NULL)
        return;
    if (s->writing) { /* closed inside a write transaction: it rolls back */
        (void)sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        s->writing = false;
        pthread_mutex_unlock(&g_writer);
    }
    sql_cache_drop(s->db);
    sqlite3_close_v2(s->db);
    free(s->path);
    free(s);
}

bool store_idle(struct store *s) { return !s->writing && sqlite3_get_autocommit(s->db) != 0; }
int store_schema_version(const struct store *s) { return s->version; }
int store_schema_version_at_open(const struct store *s) { return s->version_at_open; }
bool store_created(const struct store *s) { return s->created; }
const char *store_path(const struct store *s) { return s->path; }
sqlite3 *store_db(struct store *s) { return s->db; }
const char *store_errmsg(struct store *s)
{
    if (s->unsynced)
        return "the write-ahead log could not be synced to disk";
    return sql_error_text(s->db, s->error_text, sizeof s->error_text);
}

/* Group commit: the process's writers take turns on this lock rather than on SQLite's
 * busy handler, which sleeps (milliseconds) while another connection writes. It is
 * held from BEGIN to COMMIT or ROLLBACK, not during the sync after a commit, so the
 * next writer commits while the last waits for the sync they then share. */

static void writer_release(struct store *s)
{
    if (s->writing) {
        s->writing = false;
        pthread_mutex_unlock(&g_writer);
    }
}

/* The synchronous level outside a transaction (SQLite refuses to change it inside
 * one): NORMAL while an unsynced transaction runs, FULL for everything else. A
 * connection in group commit is NORMAL throughout (its syncs are group_sync's). */
static int set_level(struct store *s, bool lowered)
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
static void transaction_ended(struct store *s)
{
    if (s->unsynced_txn) {
        s->unsynced_txn = false;
        (void)set_level(s, false);
    }
}

static int begin_as(struct store *s, bool unsynced)
{
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

int store_begin(struct store *s) { return begin_as(s, false); }

int store_begin_txn(struct store *s, char *err, size_t err_cap)
{
    if (begin_as(s, false) != 0)
        return error_line(err, err_cap, "store: cannot begin a transaction: %s", store_errmsg(s));
    return 0;
}

int store_begin_txn_unsynced(struct store *s, char *err, size_t err_cap)
{
    if (begin_as(s, true) != 0)
        return error_line(err, err_cap, "store: cannot begin a transaction: %s", store_errmsg(s));
    return 0;
}

int store_end_txn(struct store *s, int rc, char *err, size_t err_cap)
{
    if (rc != 0) {
        store_rollback(s);
        return -1;
    }
    if (store_commit(s) != 0) {
        error_line(err, err_cap, "store: cannot commit: %s", store_errmsg(s));
        store_rollback(s);
        return -1;
    }
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
static int wal_sync(struct store *s)
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
static int group_sync(struct store *s)
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

int store_group_commit(struct store *s, char *err, size_t err_cap)
{
    if (exec_sql(s, "PRAGMA synchronous = NORMAL") != 0 || !pragma_is(s, "PRAGMA synchronous", "1"))
        return error_line(err, err_cap, "store %s: cannot set synchronous=NORMAL: %s", s->path,
                          store_errmsg(s));
    s->group_commit = true;
    return 0;
}

int store_commit(struct store *s)
{
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

int store_rollback(struct store *s)
{
    int rc = exec_kept(s, "ROLLBACK");
    writer_release(s);
    transaction_ended(s);
    return rc;
}

int store_begin_read(struct store *s, char *err, size_t err_cap)
{
    if (exec_kept(s, "BEGIN DEFERRED") != 0)
        return error_line(err, err_cap, "store: %s", store_errmsg(s));
    return 0;
}

void store_end_read(struct store *s)
{
    exec_kept(s, "ROLLBACK");
}

int64_t store_now_ms(void) { return sql_now_ms(); }

/* A pragma's value as text into text (may be NULL) and as a number into *number (may
 * be NULL): 0, or -1. */
static int pragma_value(struct store *s, const char *pragma, char *text, size_t cap,
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

int store_settings_get(struct store *s, struct store_settings *out, char *err, size_t err_cap)
{
    memset(out, 0, sizeof *out);
    int keys = 0;
    if (pragma_value(s, "PRAGMA journal_mode", out->journal_mode, sizeof out->journal_mode,
                     NULL) != 0 ||
        pragma_value(s, "PRAGMA synchronous", NULL, 0, &out->synchronous) != 0 ||
        pragma_value(s, "PRAGMA foreign_keys", NULL, 0, &keys) != 0)
        return error_line(err, err_cap, "store: cannot read the connection's settings: %s",
                          store_errmsg(s));
    out->foreign_keys = keys == 1;
    return 0;
}

int store_benchmark_sync_off(struct store *s, bool off)
{
    int rc = exec_sql(s, off ? "PRAGMA synchronous=OFF" : "PRAGMA synchronous=FULL");
    if (rc == 0) {
        s->benchmark_off = off;
        s->level_lowered = false;
    }
    return rc;
}

int store_health_add(struct store *s, const char *name, long long delta)
{
    bool own = sqlite3_get_autocommit(s->db) != 0;
    if (own && store_begin(s) != 0)
        return -1;
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO health_counters(name, value) VALUES (?1, ?2) "
                           "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC) == SQLITE_OK &&
        sqlite3_bind_int64(st, 2, delta) == SQLITE_OK && sqlite3_step(st) == SQLITE_DONE)
        rc = 0;
    sqlite3_finalize(st);
    if (own) {
        if (rc == 0)
            rc = store_commit(s);
        if (rc != 0)
            store_rollback(s);
    }
    return rc;
}

int store_health_get(struct store *s, const char *name, long long *value)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    *value = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT value FROM health_counters WHERE name = ?1", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC) == SQLITE_OK) {
        int step = sqlite3_step(st);
        if (step == SQLITE_ROW)
            *value = sqlite3_column_int64(st, 0);
        rc = step == SQLITE_ROW || step == SQLITE_DONE ? 0 : -1;
    }
    sqlite3_finalize(st);
    return rc;
}
