#include "base/bounded_file.h"

#include "base/error_line.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    char *buf = malloc(cap + 2);
    if (buf == NULL) {
        close(fd);
        return error_line(err, err_cap, "%s: out of memory", label);
    }
    size_t len = 0;
    while (len < cap + 1) {
        ssize_t r = read(fd, buf + len, cap + 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return error_line(err, err_cap, "%s: cannot read %s: %s", label, path, strerror(e));
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (len > cap) {
        free(buf);
        return error_line(err, err_cap, "%s: more than the %zu bytes allowed", label, cap);
    }
    buf[len] = '\0';
    *bytes = buf;
    *len_out = len;
    return 0;
}
