/* The store before a migration: its schema version (PRAGMA user_version, read without
 * changing anything) and a snapshot through SQLite's online backup API, a complete
 * database file beside the store that the previous build opens as it was. */
#ifndef BASAL_CK_STORE_SNAPSHOT_H
#define BASAL_CK_STORE_SNAPSHOT_H

#include <stddef.h>

/* home's store schema version into *version: 0 when the data home has no store yet.
 * 0, or -1 with a one-line reason (unreadable: the caller refuses). */
int store_snapshot_schema(const char *home, int *version, char *err, size_t err_cap);

/* Copies home/basal.db into home/basal.db.pre-upgrade-vN-YYYYMMDDTHHMMSSZ (N: its
 * schema version) with store_backup_copy (store/store_backup.h: SQLite's online backup,
 * owner-only, never over a file, synced, integrity_check'ed), refused unless the copy is
 * at that version. Its path into out (PATH_MAX bytes).
 * 0, or -1 with a one-line reason (no partial snapshot is left). */
int store_snapshot_take(const char *home, int version, char *out, size_t cap, char *err,
                        size_t err_cap);

#endif
