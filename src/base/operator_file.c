#include "base/operator_file.h"

#include "base/bounded_file.h"
#include "base/error_line.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Who may have written the opened file: 0, or -1 with the reason. */
static int check_writer(int fd, char *err, size_t err_cap)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return error_line(err, err_cap, "cannot stat: %s", strerror(errno));
    if (!S_ISREG(st.st_mode))
        return error_line(err, err_cap, "not a regular file");
    if (st.st_uid != geteuid())
        return error_line(err, err_cap, "owned by uid %u, not by the operator (uid %u)",
                          (unsigned)st.st_uid, (unsigned)geteuid());
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return error_line(err, err_cap,
                          "group- or world-writable (mode %04o); make it 0600 or 0644",
                          (unsigned)(st.st_mode & 07777));
    return 0;
}

int operator_file_read(const char *path, size_t cap, char **bytes, size_t *len, char *err,
                       size_t err_cap)
{
    *bytes = NULL;
    *len = 0;
    /* O_NOFOLLOW: a link in the data home is not the operator's file. O_NONBLOCK: a
     * FIFO planted there cannot stall us before fstat refuses it. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        if (errno == ELOOP)
            return error_line(err, err_cap, "a symbolic link: refused");
        return error_line(err, err_cap, "cannot open: %s", strerror(errno));
    }
    if (check_writer(fd, err, err_cap) != 0) {
        close(fd);
        return -1;
    }
    char *buf = NULL;
    size_t got = 0;
    int e = read_fd_bounded(fd, cap, &buf, &got);
    close(fd);
    if (e == ENOMEM)
        return error_line(err, err_cap, "out of memory");
    if (e != 0 || buf == NULL)
        return error_line(err, err_cap, "cannot read: %s", strerror(e));
    if (got > cap) {
        free(buf);
        return error_line(err, err_cap, "more than the %zu bytes allowed", cap);
    }
    buf[got] = '\0';
    *bytes = buf;
    *len = got;
    return 1;
}
