/* The counting VFS of tests/lib/counting_vfs.h. */
#include "counting_vfs.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

struct counted_file {
    sqlite3_file base; /* our methods */
    sqlite3_file *real;
    bool wal;
};

static sqlite3_vfs *g_real;
atomic_long counting_vfs_wal_syncs;
atomic_long counting_vfs_sync_starts;
atomic_long counting_vfs_reads;
atomic_long counting_vfs_write_locks;

#define REAL(f) (((struct counted_file *)(void *)(f))->real)

static int c_close(sqlite3_file *f)
{
    int rc = REAL(f)->pMethods->xClose(REAL(f));
    free(REAL(f));
    return rc;
}
static int c_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o)
{
    atomic_fetch_add(&counting_vfs_reads, 1);
    return REAL(f)->pMethods->xRead(REAL(f), b, n, o);
}
static int c_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o)
{
    return REAL(f)->pMethods->xWrite(REAL(f), b, n, o);
}
static int c_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    return REAL(f)->pMethods->xTruncate(REAL(f), size);
}
static int c_sync(sqlite3_file *f, int flags)
{
    struct counted_file *cf = (struct counted_file *)(void *)f;
    if (cf->wal)
        atomic_fetch_add(&counting_vfs_sync_starts, 1);
    int rc = REAL(f)->pMethods->xSync(REAL(f), flags);
    if (cf->wal)
        atomic_fetch_add(&counting_vfs_wal_syncs, 1);
    return rc;
}
static int c_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return REAL(f)->pMethods->xFileSize(REAL(f), size);
}
static int c_lock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xLock(REAL(f), l); }
static int c_unlock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int c_check(sqlite3_file *f, int *out)
{
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int c_fcntl(sqlite3_file *f, int op, void *arg)
{
    return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int c_sector(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int c_caps(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int c_shm_map(sqlite3_file *f, int pg, int sz, int extend, void volatile **p)
{
    return REAL(f)->pMethods->xShmMap(REAL(f), pg, sz, extend, p);
}
static int c_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
    /* WAL mode's write lock is the first shared-memory lock, taken exclusive. */
    if (off == 0 && n == 1 && flags == (SQLITE_SHM_LOCK | SQLITE_SHM_EXCLUSIVE))
        atomic_fetch_add(&counting_vfs_write_locks, 1);
    return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}
static void c_shm_barrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int c_shm_unmap(sqlite3_file *f, int del)
{
    return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}
static int c_fetch(sqlite3_file *f, sqlite3_int64 o, int n, void **p)
{
    return REAL(f)->pMethods->xFetch(REAL(f), o, n, p);
}
static int c_unfetch(sqlite3_file *f, sqlite3_int64 o, void *p)
{
    return REAL(f)->pMethods->xUnfetch(REAL(f), o, p);
}

static const sqlite3_io_methods COUNTED_METHODS = {
    3,        c_close,     c_read,       c_write,       c_truncate,     c_sync,
    c_size,   c_lock,      c_unlock,     c_check,       c_fcntl,        c_sector,
    c_caps,   c_shm_map,   c_shm_lock,   c_shm_barrier, c_shm_unmap,    c_fetch,
    c_unfetch};

static int c_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags,
                  int *out_flags)
{
    (void)vfs;
    struct counted_file *cf = (struct counted_file *)(void *)f;
    memset(cf, 0, sizeof *cf);
    cf->real = calloc(1, (size_t)g_real->szOsFile);
    if (cf->real == NULL)
        return SQLITE_NOMEM;
    int rc = g_real->xOpen(g_real, name, cf->real, flags, out_flags);
    if (rc != SQLITE_OK || cf->real->pMethods == NULL) {
        free(cf->real);
        cf->real = NULL;
        return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
    }
    cf->wal = (flags & SQLITE_OPEN_WAL) != 0;
    cf->base.pMethods = &COUNTED_METHODS;
    return SQLITE_OK;
}

static int v_delete(sqlite3_vfs *v, const char *n, int s)
{
    (void)v;
    return g_real->xDelete(g_real, n, s);
}
static int v_access(sqlite3_vfs *v, const char *n, int f, int *o)
{
    (void)v;
    return g_real->xAccess(g_real, n, f, o);
}
static int v_full(sqlite3_vfs *v, const char *n, int len, char *out)
{
    (void)v;
    return g_real->xFullPathname(g_real, n, len, out);
}
static void *v_dlopen(sqlite3_vfs *v, const char *n)
{
    (void)v;
    return g_real->xDlOpen(g_real, n);
}
static void v_dlerror(sqlite3_vfs *v, int n, char *m)
{
    (void)v;
    g_real->xDlError(g_real, n, m);
}
static void (*v_dlsym(sqlite3_vfs *v, void *h, const char *s))(void)
{
    (void)v;
    return g_real->xDlSym(g_real, h, s);
}
static void v_dlclose(sqlite3_vfs *v, void *h)
{
    (void)v;
    g_real->xDlClose(g_real, h);
}
static int v_random(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return g_real->xRandomness(g_real, n, out);
}
static int v_sleep(sqlite3_vfs *v, int us)
{
    (void)v;
    return g_real->xSleep(g_real, us);
}
static int v_time(sqlite3_vfs *v, double *t)
{
    (void)v;
    return g_real->xCurrentTime(g_real, t);
}
static int v_lasterr(sqlite3_vfs *v, int n, char *m)
{
    (void)v;
    return g_real->xGetLastError(g_real, n, m);
}
static int v_time64(sqlite3_vfs *v, sqlite3_int64 *t)
{
    (void)v;
    return g_real->xCurrentTimeInt64(g_real, t);
}

static sqlite3_vfs g_counting;

bool counting_vfs_install(void)
{
    g_real = sqlite3_vfs_find(NULL);
    if (g_real == NULL || g_real->iVersion < 2)
        return false;
    g_counting = (sqlite3_vfs){2, (int)sizeof(struct counted_file), g_real->mxPathname, NULL,
                               "counting", NULL, c_open, v_delete, v_access, v_full,
                               v_dlopen, v_dlerror, v_dlsym, v_dlclose, v_random, v_sleep,
                               v_time, v_lasterr, v_time64, NULL, NULL, NULL};
    return sqlite3_vfs_register(&g_counting, 1) == SQLITE_OK;
}
