#include "ck/store_snapshot.h"

#include "base/error_line.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How long a backup step or a read waits for a writer's lock (a CLI command running
 * beside ck: the serve itself is stopped and locked out). */
#define SNAPSHOT_BUSY_MS 10000

static int read_user_version(sqlite3 *db, int *version)
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

static int open_store_readonly(const char *home, sqlite3 **db, char *err, size_t err_cap)
{
    char path[PATH_MAX];
    *db = NULL;
    int n = snprintf(path, sizeof path, "%s/%s", home, STORE_FILE);
    if (n <= 0 || (size_t)n >= sizeof path)
        return error_line(err, err_cap, "%s: path too long", home);
    if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        error_line(err, err_cap, "cannot open %s: %s", path, sqlite3_errmsg(*db));
        sqlite3_close(*db);
        *db = NULL;
        return -1;
    }
    sqlite3_busy_timeout(*db, SNAPSHOT_BUSY_MS);
    return 0;
}

int store_snapshot_schema(const char *home, int *version, char *err, size_t err_cap)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", home, STORE_FILE);
    if (n <= 0 || (size_t)n >= sizeof path)
        return error_line(err, err_cap, "%s: path too long", home);
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) {
            *version = 0;
            return 0;
        }
        return error_line(err, err_cap, "cannot stat %s: %s", path, strerror(errno));
    }
    if (!S_ISREG(st.st_mode))
        return error_line(err, err_cap, "%s is not a regular file", path);
    sqlite3 *db = NULL;
    if (open_store_readonly(home, &db, err, err_cap) != 0)
        return -1;
    int rc = read_user_version(db, version);
    if (rc != 0)
        error_line(err, err_cap, "cannot read the schema version of %s: %s", path,
                   sqlite3_errmsg(db));
    sqlite3_close(db);
    return rc;
}

/* The snapshot, opened again: intact, and at the schema it was taken at. */
static int verify(const char *path, int version, char *err, size_t err_cap)
{
    sqlite3 *db = NULL;
    int found = -1, rc = -1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        read_user_version(db, &found) == 0 && found == version &&
        sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW &&
        strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0)
        rc = 0;
    if (rc != 0)
        error_line(err, err_cap, "the snapshot %s does not check out (schema %d, wanted %d)",
                   path, found, version);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

int store_snapshot_take(const char *home, int version, char *out, size_t cap, char *err,
                        size_t err_cap)
{
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm) == NULL || strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm) == 0)
        return error_line(err, err_cap, "cannot format the time");
    int n = snprintf(out, cap, "%s/%s.pre-upgrade-v%d-%s", home, STORE_FILE, version, stamp);
    if (n <= 0 || (size_t)n >= cap)
        return error_line(err, err_cap, "%s: path too long", home);
    /* Made here, owner-only and new, so SQLite writes into a file no one else can read. */
    int fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return error_line(err, err_cap, "cannot create %s: %s", out, strerror(errno));
    close(fd);
    sqlite3 *src = NULL, *dst = NULL;
    int rc = -1;
    if (open_store_readonly(home, &src, err, err_cap) != 0)
        goto done;
    if (sqlite3_open_v2(out, &dst, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        error_line(err, err_cap, "cannot open %s: %s", out, sqlite3_errmsg(dst));
        goto done;
    }
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
    if (b == NULL) {
        error_line(err, err_cap, "backup of the store: %s", sqlite3_errmsg(dst));
        goto done;
    }
    int step = sqlite3_backup_step(b, -1);
    int finish = sqlite3_backup_finish(b);
    if (step != SQLITE_DONE || finish != SQLITE_OK) {
        error_line(err, err_cap, "backup of the store: %s", sqlite3_errstr(step != SQLITE_DONE ? step : finish));
        goto done;
    }
    /* A plain rollback-journal file: one file to copy back, whatever mode the store is
     * in. */
    if (sqlite3_exec(dst, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL) != SQLITE_OK) {
        error_line(err, err_cap, "%s: %s", out, sqlite3_errmsg(dst));
        goto done;
    }
    rc = 0;
done:
    sqlite3_close(src);
    if (sqlite3_close(dst) != SQLITE_OK && rc == 0)
        rc = error_line(err, err_cap, "cannot close %s", out);
    if (rc == 0) {
        fd = open(out, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || fsync(fd) != 0)
            rc = error_line(err, err_cap, "cannot flush %s: %s", out, strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    if (rc == 0)
        rc = verify(out, version, err, err_cap);
    if (rc == 0) {
        int dir = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0 || fsync(dir) != 0)
            rc = error_line(err, err_cap, "cannot flush %s: %s", home, strerror(errno));
        if (dir >= 0)
            close(dir);
    }
    if (rc != 0)
        unlink(out);
    return rc;
}
