#include "ck/install_binary.h"

#include "base/error_line.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int copy_all(int from, int to)
{
    char buf[1 << 16];
    for (;;) {
        ssize_t n = read(from, buf, sizeof buf);
        if (n == 0)
            return 0;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(to, buf + done, (size_t)(n - done));
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                return -1;
            }
            done += w;
        }
    }
}

static int fsync_dir_of(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int binary_stage(const char *source, const char *dir, const char *name,
                 struct staged_binary *out, char *err, size_t err_cap)
{
    memset(out, 0, sizeof *out);
    int n = snprintf(out->target, sizeof out->target, "%s/%s", dir, name);
    int m = snprintf(out->temp, sizeof out->temp, "%s/.%s.ck-XXXXXX", dir, name);
    if (n <= 0 || (size_t)n >= sizeof out->target || m <= 0 || (size_t)m >= sizeof out->temp)
        return error_line(err, err_cap, "%s/%s: path too long", dir, name);
    int src = open(source, O_RDONLY | O_CLOEXEC);
    if (src < 0)
        return error_line(err, err_cap, "cannot open %s: %s", source, strerror(errno));
    struct stat ss, ts;
    if (fstat(src, &ss) != 0 || !S_ISREG(ss.st_mode)) {
        close(src);
        return error_line(err, err_cap, "%s is not a regular file", source);
    }
    if (stat(out->target, &ts) == 0 && ts.st_dev == ss.st_dev && ts.st_ino == ss.st_ino) {
        close(src);
        out->in_place = true;
        out->temp[0] = '\0';
        return 0;
    }
    int dst = mkostemp(out->temp, O_CLOEXEC);
    if (dst < 0) {
        int saved = errno;
        close(src);
        out->temp[0] = '\0';
        return error_line(err, err_cap, "cannot create a file in %s: %s", dir, strerror(saved));
    }
    int rc = copy_all(src, dst);
    int saved = errno;
    if (rc == 0 && fchmod(dst, 0755) != 0) {
        rc = -1;
        saved = errno;
    }
    if (rc == 0 && fsync(dst) != 0) {
        rc = -1;
        saved = errno;
    }
    close(src);
    if (close(dst) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    if (rc != 0) {
        unlink(out->temp);
        out->temp[0] = '\0';
        return error_line(err, err_cap, "cannot copy %s into %s: %s", source, dir,
                          strerror(saved));
    }
    return 0;
}

int binary_commit(struct staged_binary *b, char *err, size_t err_cap)
{
    if (b->in_place || b->temp[0] == '\0')
        return 0;
    if (rename(b->temp, b->target) != 0) {
        int saved = errno;
        binary_discard(b);
        return error_line(err, err_cap, "cannot rename into %s: %s", b->target, strerror(saved));
    }
    b->temp[0] = '\0';
    if (fsync_dir_of(b->target) != 0)
        return error_line(err, err_cap, "%s is in place but its directory could not be "
                                        "flushed: %s", b->target, strerror(errno));
    return 0;
}

void binary_discard(struct staged_binary *b)
{
    if (b->temp[0] != '\0')
        unlink(b->temp);
    b->temp[0] = '\0';
}

bool binary_same_bytes(const char *a, const char *b)
{
    int fa = open(a, O_RDONLY | O_CLOEXEC);
    int fb = open(b, O_RDONLY | O_CLOEXEC);
    bool same = fa >= 0 && fb >= 0;
    while (same) {
        char x[1 << 14], y[1 << 14];
        ssize_t nx = read(fa, x, sizeof x), ny = read(fb, y, sizeof y);
        /* Regular files read in full blocks until the end, so equal files give equal
         * counts at every step. */
        if (nx < 0 || ny < 0 || nx != ny || memcmp(x, y, (size_t)nx) != 0)
            same = false;
        else if (nx == 0)
            break;
    }
    if (fa >= 0)
        close(fa);
    if (fb >= 0)
        close(fb);
    return same;
}

int binary_dir_make(const char *dir, char *err, size_t err_cap)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s", dir);
    if (n <= 0 || (size_t)n >= sizeof path)
        return error_line(err, err_cap, "%s: path too long", dir);
    for (char *p = path + 1;; p++) {
        bool end = *p == '\0';
        if (*p == '/' || end) {
            *p = '\0';
            if (mkdir(path, 0755) != 0 && errno != EEXIST)
                return error_line(err, err_cap, "cannot create %s: %s", path, strerror(errno));
            if (end)
                break;
            *p = '/';
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return error_line(err, err_cap, "%s is not a directory", dir);
    return 0;
}
