#include "store/store_backup.h"

#include "base/error_line.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* PRAGMA user_version of db into *version: 0, or -1 (sqlite3_errmsg says why). */
static int user_version(sqlite3 *db, int *version)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        *version = sqlite3_column_int(st, 0);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

/* How long the copy waits for a lock (a writer checkpointing, a migration). */
#define BACKUP_BUSY_MS 10000

/* dest's directory into dir (PATH_MAX bytes): "." for a bare name. */
static int directory_of(const char *dest, char *dir, size_t cap)
{
    const char *slash = strrchr(dest, '/');
    int n;
    if (slash == NULL)
        n = snprintf(dir, cap, ".");
    else if (slash == dest)
        n = snprintf(dir, cap, "/");
    else
        n = snprintf(dir, cap, "%.*s", (int)(slash - dest), dest);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* The source, read-only (never created; a link is refused, as store_open does). */
static int open_source(const char *path, sqlite3 **db, int *version, char *err, size_t err_cap)
{
    if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW, NULL) !=
        SQLITE_OK) {
        error_line(err, err_cap, "cannot open %s: %s", path,
                   *db != NULL ? sqlite3_errmsg(*db) : "out of memory");
        return -1;
    }
    sqlite3_busy_timeout(*db, BACKUP_BUSY_MS);
    if (user_version(*db, version) != 0)
        return error_line(err, err_cap, "%s is not a readable SQLite database: %s", path,
                          sqlite3_errmsg(*db));
    return 0;
}

/* The whole source into the file at temp (which exists, empty), as one file. */
static int copy_into(sqlite3 *src, const char *temp, char *err, size_t err_cap)
{
    sqlite3 *dst = NULL;
    int rc = -1;
    if (sqlite3_open_v2(temp, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL) !=
        SQLITE_OK) {
        error_line(err, err_cap, "cannot open %s: %s", temp,
                   dst != NULL ? sqlite3_errmsg(dst) : "out of memory");
        goto done;
    }
    sqlite3_busy_timeout(dst, BACKUP_BUSY_MS);
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
    if (b == NULL) {
        error_line(err, err_cap, "backup of the store: %s", sqlite3_errmsg(dst));
        goto done;
    }
    /* -1: every page in one step, so in one read transaction of the source. */
    int step = sqlite3_backup_step(b, -1);
    int finish = sqlite3_backup_finish(b);
    if (step != SQLITE_DONE || finish != SQLITE_OK) {
        error_line(err, err_cap, "backup of the store: %s",
                   sqlite3_errstr(step != SQLITE_DONE ? step : finish));
        goto done;
    }
    /* The source's WAL mode travels in the header: a copy is one self-contained file. */
    if (sqlite3_exec(dst, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL) != SQLITE_OK) {
        error_line(err, err_cap, "%s: %s", temp, sqlite3_errmsg(dst));
        goto done;
    }
    rc = 0;
done:
    if (sqlite3_close(dst) != SQLITE_OK && rc == 0)
        rc = error_line(err, err_cap, "cannot close %s", temp);
    return rc;
}

/* The copy, opened again: intact, at the source's schema version. */
static int verify(const char *path, int version, char *err, size_t err_cap)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int found = -1, rc = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW, NULL) ==
            SQLITE_OK &&
        user_version(db, &found) == 0 && found == version &&
        sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL &&
        strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0)
        rc = 0;
    if (rc != 0)
        error_line(err, err_cap, "the copy %s does not check out (schema %d, wanted %d)", path,
                   found, version);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

/* fsync of a file or directory by name (the copy's connection is closed by now: an
 * ordinary descriptor of it drops no lock anyone holds). */
static int sync_path(const char *path, int flags, char *err, size_t err_cap)
{
    int fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return error_line(err, err_cap, "cannot flush %s: %s", path, strerror(e));
    }
    close(fd);
    return 0;
}

int store_backup_copy(const char *source_db, const char *dest, int *version, char *err,
                      size_t err_cap)
{
    char dir[PATH_MAX], temp[PATH_MAX + 32];
    struct stat st;
    if (dest[0] == '\0' || directory_of(dest, dir, sizeof dir) != 0)
        return error_line(err, err_cap, "backup: bad destination '%s'", dest);
    if (lstat(dest, &st) == 0)
        return error_line(err, err_cap, "%s already exists: refused (a backup never replaces a "
                                        "file)", dest);
    if (errno != ENOENT)
        return error_line(err, err_cap, "cannot inspect %s: %s", dest, strerror(errno));
    const char *base = strrchr(dest, '/') != NULL ? strrchr(dest, '/') + 1 : dest;
    int n = snprintf(temp, sizeof temp, "%s/.%s.tmp-XXXXXX", dir, base);
    if (n <= 0 || (size_t)n >= sizeof temp)
        return error_line(err, err_cap, "%s: path too long", dest);
    /* Made here, owner-only and new (mkstemp: O_EXCL, 0600), so SQLite writes into a
     * file no one else can read; closed at once, before any connection has it. */
    int fd = mkstemp(temp);
    if (fd < 0)
        return error_line(err, err_cap, "cannot create a file in %s: %s", dir, strerror(errno));
    close(fd);

    sqlite3 *src = NULL;
    int copied = -1;
    int rc = open_source(source_db, &src, &copied, err, err_cap);
    if (rc == 0)
        rc = copy_into(src, temp, err, err_cap);
    sqlite3_close(src);
    if (rc == 0)
        rc = sync_path(temp, O_RDONLY, err, err_cap);
    if (rc == 0)
        rc = verify(temp, copied, err, err_cap); /* the version the source had at open */
    if (rc == 0 && renameat2(AT_FDCWD, temp, AT_FDCWD, dest, RENAME_NOREPLACE) != 0) {
        if (errno == EEXIST)
            rc = error_line(err, err_cap, "%s already exists: refused (a backup never "
                                          "replaces a file)", dest);
        else
            rc = error_line(err, err_cap, "cannot rename the copy to %s: %s", dest,
                            strerror(errno));
    }
    if (rc != 0) {
        unlink(temp);
        return -1;
    }
    if (sync_path(dir, O_RDONLY | O_DIRECTORY, err, err_cap) != 0)
        return -1;
    *version = copied;
    return 0;
}

int store_backup_schema_version(const char *db_path, int *version, char *err, size_t err_cap)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        error_line(err, err_cap, "cannot open %s: %s", db_path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return -1;
    }
    sqlite3_busy_timeout(db, BACKUP_BUSY_MS);
    int rc = user_version(db, version);
    if (rc != 0)
        error_line(err, err_cap, "cannot read the schema version of %s: %s", db_path,
                   sqlite3_errmsg(db));
    sqlite3_close(db);
    return rc;
}
