#include "store/datahome.h"
#include "base/error_line.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int datahome_default(char *out, size_t cap, char *err, size_t err_cap)
{
    const char *xdg = getenv("XDG_DATA_HOME");
    const char *home = getenv("HOME");
    int n;
    /* The XDG spec: a relative XDG_DATA_HOME is invalid and ignored. */
    if (xdg != NULL && xdg[0] == '/')
        n = snprintf(out, cap, "%s/" DATAHOME_SUFFIX, xdg);
    else if (home != NULL && home[0] != '\0')
        n = snprintf(out, cap, "%s/.local/share/" DATAHOME_SUFFIX, home);
    else
        return error_line(err, err_cap, "no data home: neither XDG_DATA_HOME nor HOME is set "
                                  "(pass --home DIR)");
    if (n < 0 || (size_t)n >= cap)
        return error_line(err, err_cap, "data home path too long");
    return 0;
}

/* mkdir -p for the ancestors of path (not path itself), each new one 0700. */
static int make_parents(const char *path, char *err, size_t cap)
{
    char *copy = strdup(path);
    if (copy == NULL)
        return error_line(err, cap, "out of memory");
    int rc = 0;
    char *slash = strrchr(copy, '/');
    if (slash != NULL && slash != copy) {
        *slash = '\0';
        for (char *p = copy + 1; rc == 0; p++) {
            bool end = *p == '\0';
            if (*p != '/' && !end)
                continue;
            *p = '\0';
            if (mkdir(copy, 0700) != 0 && errno != EEXIST)
                rc = error_line(err, cap, "cannot create directory %s: %s", copy, strerror(errno));
            if (end)
                break;
            *p = '/';
        }
    }
    free(copy);
    return rc;
}

int datahome_prepare(const char *path, bool create, struct datahome_report *report, char *err,
                     size_t err_cap)
{
    struct datahome_report rep = {false, false, 0};
    umask(0077);
    if (path == NULL || path[0] == '\0')
        return error_line(err, err_cap, "data home path is empty");

    if (create) {
        struct stat st;
        if (lstat(path, &st) != 0) {
            if (errno != ENOENT)
                return error_line(err, err_cap, "cannot inspect data home %s: %s", path,
                            strerror(errno));
            if (make_parents(path, err, err_cap) != 0)
                return -1;
            if (mkdir(path, 0700) == 0)
                rep.created = true;
            else if (errno != EEXIST)
                return error_line(err, err_cap, "cannot create data home %s: %s", path,
                            strerror(errno));
        }
    }

    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
            return error_line(err, err_cap, "data home %s is a symbolic link: refused (use the "
                                      "real directory)", path);
        if (e == ENOTDIR)
            return error_line(err, err_cap, "data home %s is not a directory", path);
        if (e == ENOENT)
            return error_line(err, err_cap, "data home %s does not exist (run ck-basal setup)", path);
        return error_line(err, err_cap, "cannot open data home %s: %s", path, strerror(e));
    }
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0) {
        rc = error_line(err, err_cap, "cannot inspect data home %s: %s", path, strerror(errno));
    } else if (st.st_uid != geteuid()) {
        rc = error_line(err, err_cap, "data home %s is owned by uid %u, not by this user (uid %u): "
                                "refused", path, (unsigned)st.st_uid, (unsigned)geteuid());
    } else {
        rep.prior_mode = st.st_mode & 07777;
        if (rep.created)
            rep.prior_mode = 0700;
        if ((st.st_mode & 07777) != 0700) {
            if (fchmod(fd, 0700) != 0)
                rc = error_line(err, err_cap, "cannot narrow data home %s to 0700: %s", path,
                          strerror(errno));
            else if (!rep.created && (rep.prior_mode & ~0700U) != 0)
                rep.narrowed = true;
        }
    }
    close(fd);
    if (rc == 0 && report != NULL)
        *report = rep;
    return rc;
}
