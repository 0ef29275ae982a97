/* A copy of a store while anything (a running serve included) uses it: SQLite's online
 * backup API reads the source inside one read transaction of its own connection, so
 * the copy is one consistent state of the database, and nothing of ours opens or
 * closes the store's files beside SQLite (store/store.h says why that matters).
 *
 * The copy is made as a temporary file in DEST's directory (created new, 0600), in
 * rollback-journal mode (one self-contained file), synced, checked (integrity_check,
 * the same user_version as the source had), then renamed to DEST with
 * RENAME_NOREPLACE and the directory synced: DEST appears whole or not at all, and an
 * existing DEST is never replaced. `ck-basal backup` and ck upgrade's snapshot both
 * copy through it. */
#ifndef BASAL_STORE_STORE_BACKUP_H
#define BASAL_STORE_STORE_BACKUP_H

#include <stddef.h>

/* Copies the SQLite database at source_db into dest as described above; the copy's
 * schema version (PRAGMA user_version) into *version. 0, or -1 with a one-line reason
 * in err; on failure no file is left at dest or beside it. */
int store_backup_copy(const char *source_db, const char *dest, int *version, char *err,
                      size_t err_cap);

/* The schema version (PRAGMA user_version) of the SQLite database at db_path into
 * *version, read on a read-only connection of its own that waits up to 10 s for a
 * writer's lock and changes nothing (ck upgrade's look before its snapshot). 0, or -1
 * with a one-line reason. */
int store_backup_schema_version(const char *db_path, int *version, char *err, size_t err_cap);

#endif
