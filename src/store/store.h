/* The store: one SQLite file, basal.db, in the data home (basal.md section 6), or a
 * PostgreSQL database named by a connection URI (store_use; docs/operations.md,
 * "Several nodes"). What follows of files, WAL and syncs is SQLite's; PostgreSQL
 * keeps its own durability (every commit waits for its WAL flush, synchronous_commit
 * on) and the same schema version rules.
 *
 * A process holds one connection, its only writer. Opened with journal_mode=WAL,
 * synchronous=FULL, foreign_keys=ON and a busy timeout. The file and its -wal/-shm
 * companions are 0600: the database file is created with open(O_CREAT | O_EXCL, 0600)
 * before SQLite opens it, and the companions are chmod'ed after the first write. Beside
 * SQLite no code opens, closes, renames or truncates an existing store file with an
 * ordinary descriptor (closing one would drop SQLite's POSIX locks): ownership and mode
 * are checked and narrowed through O_PATH descriptors only. Copies are taken with
 * store/store_backup.h (SQLite's online backup), never by reading the file.
 *
 * Versioned migrations (store/store_schema.h) are applied at open, each in its own
 * transaction with PRAGMA user_version. A store that cannot be opened for lack of
 * space says "the disk is full", never that it is not a database. A store whose version is newer than this
 * build knows is refused with a one-line error naming both versions, and nothing in
 * it is changed.
 *
 * The store's interface is operations, one header per set of tables (runs.h,
 * journal.h, flow_registry.h, ...: docs/architecture.md, "The store's interface"); no
 * SQLite type crosses it. The connection itself is store/store_internal.h's, for the
 * sources of src/store/ only. */
#ifndef BASAL_STORE_STORE_H
#define BASAL_STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_FILE "basal.db"
#define STORE_BUSY_TIMEOUT_MS 5000
/* A commit checkpoints the WAL into basal.db once it holds this many pages (1 MiB):
 * the WAL a cold command's open reads stays short, and serve pays about one extra
 * fsync every 25 runs for it. */
#define STORE_WAL_CHECKPOINT_PAGES 256

struct store;

/* Where every later store_open of this process goes: NULL or "" for SQLite in the
 * data home (the default), else a PostgreSQL connection URI ("postgresql://..." or
 * "postgres://..."; libpq's syntax, e.g. postgresql:///basal?host=/run/postgresql). A
 * URI that carries a password is refused: give it in a libpq service file or
 * PGPASSFILE, so it never reaches a command line, log or ps. 0, or -1 with a one-line
 * reason in err (and nothing changed). */
int store_use(const char *uri, char *err, size_t err_cap);

/* The location store_use chose, for messages: NULL for SQLite in the data home. */
const char *store_location(void);

/* Opens (creating and migrating as needed) home/basal.db, or the database store_use
 * chose. home must exist (see datahome_prepare). Returns 0 with *out set, or -1 with a one-line reason in err. */
int store_open(const char *home, struct store **out, char *err, size_t err_cap);
void store_close(struct store *s);

/* No transaction is open on s (read or write): a connection kept for the next
 * request must be, or be closed (which rolls back). */
bool store_idle(struct store *s);

/* The schema version now in force, and the one found when opening (0: new store). */
int store_schema_version(const struct store *s);
int store_schema_version_at_open(const struct store *s);
bool store_created(const struct store *s); /* the database file was made by this open */
const char *store_path(const struct store *s); /* the file, or the URI (no password) */
/* The data home store_open was given, whichever engine holds the store: the roots no
 * grant may reach are judged against it. */
const char *store_home(const struct store *s);

/* The connection's settings in force, as store_open made them: the journal mode
 * ("wal"), the synchronous level (2: FULL; 1: NORMAL after store_group_commit) and
 * whether foreign keys are enforced. 0, or -1 with a one-line reason. */
struct store_settings {
    char journal_mode[16];
    int synchronous;
    bool foreign_keys;
};
int store_settings_get(struct store *s, struct store_settings *out, char *err, size_t err_cap);

/* Benchmarks only (bench/; nothing in basal calls it): while off is true, commits on
 * this connection do not wait for the disk (synchronous=OFF), to measure what the
 * syncs cost; false brings back FULL. 0 or -1. */
int store_benchmark_sync_off(struct store *s, bool off);

/* The wall clock in the store's unit (milliseconds since the epoch), as every stored
 * time (created_at, next fire, ...) is stamped. */
int64_t store_now_ms(void);

/* Transactions. store_begin starts BEGIN IMMEDIATE (the write lock now, not at the
 * first write). Each returns 0, or -1 (store_errmsg says why). Not nested. */
int store_begin(struct store *s);
int store_commit(struct store *s);

/* Group commit, for a process whose threads each commit on a connection of their own
 * at the same time (ck-basal serve): this connection's COMMIT no longer syncs
 * (synchronous=NORMAL) and store_commit instead returns only after an fsync of the WAL
 * that began after the commit, which one committing thread runs for every commit made
 * before it began. A commit is on disk when store_commit returns, as with
 * synchronous=FULL; concurrent commits share fsyncs. 0, or -1 with a one-line reason. */
int store_group_commit(struct store *s, char *err, size_t err_cap);
int store_rollback(struct store *s);

/* Before a process judges that a run's owner is gone (and so takes its run over) or
 * claims a run: on a store that several hosts can reach (PostgreSQL), this process
 * joins the store's driving host, for the rest of its life, or learns that a process of
 * another host drives it (the error names it). An owner is "pid:PID:START" of a process
 * on its host (store/runs.h), which only that host may judge; without this, a node
 * would take over the runs of a live node on another host. Processes of one host (one
 * boot, one pid namespace) drive side by side, as on SQLite. Several driving hosts
 * come with leases (issue 26). On SQLite it does nothing. Idempotent and thread-safe;
 * 0, or -1 with a one-line reason (also when this host's identity cannot be read). */
int store_hold_driver(struct store *s, char *err, size_t err_cap);

/* A read transaction (deferred: it never takes the write lock), so that several reads
 * see one state of the store. 0, or -1 with the reason in err. End it with
 * store_end_read, which keeps nothing written inside it. Not nested. */
int store_begin_read(struct store *s, char *err, size_t err_cap);
void store_end_read(struct store *s);
/* The last error as one line: SQLite's message, or "the disk is full (...)" when it
 * was a lack of space (sql_disk_full in store/sql.h). Valid until the next call. */
const char *store_errmsg(struct store *s);

/* store_begin with the reason as one line in err: 0 or -1. */
int store_begin_txn(struct store *s, char *err, size_t err_cap);
/* store_begin_txn for what is asked again after a crash (a query's journal rows,
 * docs/flows.md "Durability"): its commit does not wait for the disk. It is durable
 * with the next commit on the store's file that waits: that sync flushes the WAL to
 * its end, and the WAL holds commits in their order, so a crash of the machine can
 * lose it only together with everything committed after it (a process's crash loses
 * nothing: the commit is in the page cache). Ended as any other transaction. */
int store_begin_txn_unsynced(struct store *s, char *err, size_t err_cap);
/* Ends the transaction store_begin_txn began: commits when rc is 0, else rolls back
 * (err already says why). Returns 0 only if it committed; a failed commit is rolled
 * back and described in err. */
int store_end_txn(struct store *s, int rc, char *err, size_t err_cap);

/* Health counters: adds delta to name (creating it at 0) in its own transaction, or
 * inside the caller's if one is open. Returns 0 or -1. */
int store_health_add(struct store *s, const char *name, long long delta);
/* The value of name (0 if never counted) into *value. Returns 0 or -1. */
int store_health_get(struct store *s, const char *name, long long *value);

#endif
