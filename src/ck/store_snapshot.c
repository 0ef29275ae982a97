#include "ck/store_snapshot.h"

#include "base/error_line.h"
#include "store/store.h"
#include "store/store_backup.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
    /* Read without changing anything, waiting for a CLI command's lock (the serve itself
     * is stopped and locked out). */
    return store_backup_schema_version(path, version, err, err_cap);
}

int store_snapshot_take(const char *home, int version, char *out, size_t cap, char *err,
                        size_t err_cap)
{
    char stamp[32], source[PATH_MAX];
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm) == NULL || strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm) == 0)
        return error_line(err, err_cap, "cannot format the time");
    int n = snprintf(out, cap, "%s/%s.pre-upgrade-v%d-%s", home, STORE_FILE, version, stamp);
    int m = snprintf(source, sizeof source, "%s/%s", home, STORE_FILE);
    if (n <= 0 || (size_t)n >= cap || m <= 0 || (size_t)m >= sizeof source)
        return error_line(err, err_cap, "%s: path too long", home);
    /* The same copy as `ck-basal backup` (store/store_backup.h). */
    int copied = -1;
    if (store_backup_copy(source, out, &copied, err, err_cap) != 0)
        return -1;
    if (copied != version) {
        unlink(out);
        return error_line(err, err_cap, "the snapshot %s is at schema %d, wanted %d", out, copied,
                          version);
    }
    return 0;
}
