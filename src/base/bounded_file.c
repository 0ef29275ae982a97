#include "base/bounded_file.h"

#include "base/error_line.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int read_fd_bounded(int fd, size_t cap, char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    char *bytes = malloc(cap + 2);
    if (bytes == NULL)
        return ENOMEM;
    size_t got = 0;
    while (got < cap + 1) {
        ssize_t r = read(fd, bytes + got, cap + 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno != 0 ? errno : EIO;
            free(bytes);
            return e;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    *buf = bytes;
    *len = got;
    return 0;
}

int read_bounded_file(const char *path, const char *label, size_t cap, char **bytes,
                      size_t *len_out, char *err, size_t err_cap)
{
    *bytes = NULL;
    *len_out = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return error_line(err, err_cap, "%s: cannot open %s: %s", label, path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return error_line(err, err_cap, "%s: %s is not a regular file", label, path);
    }
    char *buf = NULL;
    size_t len = 0;
    int e = read_fd_bounded(fd, cap, &buf, &len);
    close(fd);
    if (e == ENOMEM)
        return error_line(err, err_cap, "%s: out of memory", label);
    if (e != 0 || buf == NULL)
        return error_line(err, err_cap, "%s: cannot read %s: %s", label, path, strerror(e));
    if (len > cap) {
        free(buf);
        return error_line(err, err_cap, "%s: more than the %zu bytes allowed", label, cap);
    }
    buf[len] = '\0';
    *bytes = buf;
    *len_out = len;
    return 0;
}
