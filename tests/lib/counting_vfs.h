/* A counting VFS under SQLite, for tests of what the store asks of the disk: a shim
 * registered as the default VFS that forwards every call to the system's VFS and counts
 * the syncs of each -wal file, the reads of every file (database and WAL) and the WAL
 * write locks taken (one per write transaction). Install
 * it before the first store_open of the test. */
#ifndef BASAL_TESTS_LIB_COUNTING_VFS_H
#define BASAL_TESTS_LIB_COUNTING_VFS_H

#include <stdatomic.h>
#include <stdbool.h>

extern atomic_long counting_vfs_wal_syncs;   /* WAL syncs finished */
extern atomic_long counting_vfs_sync_starts; /* WAL syncs begun */
extern atomic_long counting_vfs_reads;       /* xRead calls, every file */
extern atomic_long counting_vfs_write_locks; /* WAL write locks taken: write transactions */

/* Registers the VFS as the process's default; false if it could not. */
bool counting_vfs_install(void);

#endif
