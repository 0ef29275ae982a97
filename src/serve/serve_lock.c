#include "serve/serve_lock.h"

#include "base/error_line.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static int lock_path(const char *home, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s/%s", home, SERVE_LOCK_NAME);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

static long read_pid(int fd)
{
    char text[32];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n <= 0)
        return 0;
    text[n] = '\0';
    return strtol(text, NULL, 10);
}

int serve_lock_take(const char *home, char *err, size_t err_cap)
{
    char path[PATH_MAX];
    if (lock_path(home, path, sizeof path) != 0) {
        error_line(err, err_cap, "data home path too long");
        return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        error_line(err, err_cap, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int saved = errno;
        long pid = read_pid(fd);
        close(fd);
        if (saved == EWOULDBLOCK)
            error_line(err, err_cap, "a serve is already running on this data home (pid %ld)",
                       pid);
        else
            error_line(err, err_cap, "cannot lock %s: %s", path, strerror(saved));
        return -1;
    }
    char text[32];
    int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n) {
        error_line(err, err_cap, "cannot write %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

long serve_lock_holder(const char *home)
{
    char path[PATH_MAX];
    if (lock_path(home, path, sizeof path) != 0)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    long pid = 0;
    if (flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK)
        pid = read_pid(fd);
    else
        (void)flock(fd, LOCK_UN);
    close(fd);
    return pid;
}
