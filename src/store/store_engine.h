/* What an engine provides to store/store.h, for the sources of src/store/ only: the
 * SQLite file in the data home (store/store_sqlite.c) or a PostgreSQL database
 * (store/store_postgres.c). store.c chooses one at store_open (store_use) and calls
 * through its table; the modules that own tables reach the connection as a struct
 * sql_db (store/store_internal.h) and never learn which engine it is.
 *
 * Every engine's struct begins with struct store. Contracts are store.h's. */
#ifndef BASAL_STORE_STORE_ENGINE_H
#define BASAL_STORE_STORE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>

struct sql_db;
struct store;
struct store_settings;

enum store_txn {
    STORE_TXN_WRITE,          /* store_begin_txn: durable at commit */
    STORE_TXN_WRITE_UNSYNCED, /* store_begin_txn_unsynced */
    STORE_TXN_READ,           /* store_begin_read: one state of the store, writes nothing */
};

struct store_engine {
    const char *name; /* "sqlite", "postgresql" */
    /* home: the data home; uri: the location store_use chose (NULL for SQLite). */
    int (*open)(const char *home, const char *uri, struct store **out, char *err,
                size_t err_cap);
    void (*close)(struct store *s);
    bool (*idle)(struct store *s);
    /* 0, or -1 (errmsg says why). */
    int (*begin)(struct store *s, enum store_txn kind);
    int (*commit)(struct store *s);
    int (*rollback)(struct store *s);
    const char *(*errmsg)(struct store *s);
    int (*settings_get)(struct store *s, struct store_settings *out, char *err, size_t err_cap);
    int (*group_commit)(struct store *s, char *err, size_t err_cap);
    int (*benchmark_sync_off)(struct store *s, bool off);
    /* store_hold_driver's (store.h); NULL: the engine's store has one host only. */
    int (*hold_driver)(struct store *s, char *err, size_t err_cap);
};

struct store {
    const struct store_engine *engine;
    struct sql_db *db;
    char *path;           /* the file, or the URI as it may be shown (no password) */
    char *home;           /* the data home given to store_open (store.c's) */
    int version;          /* schema version in force */
    int version_at_open;  /* found at open (0: new store) */
    bool created;         /* this open made the database */
    char error_text[384]; /* errmsg's */
};

extern const struct store_engine STORE_SQLITE;
extern const struct store_engine STORE_POSTGRES;

#endif
