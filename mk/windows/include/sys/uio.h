/* writev for the Windows build (mk/windows.mk puts this folder on the include path of
 * the mingw-w64 build only): mingw's CRT has no <sys/uio.h>. proto/frame.c's one
 * writer already loops over short writes, so writing the vectors one after the other
 * is what it needs: a frame may leave in more than one write, never out of order. */
#ifndef BASAL_MK_WINDOWS_SYS_UIO_H
#define BASAL_MK_WINDOWS_SYS_UIO_H

#include <errno.h>
#include <io.h>
#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

struct iovec {
    void *iov_base;
    size_t iov_len;
};

/* Writes the vectors in order until one write is short; returns the bytes written, or
 * -1 with errno set if nothing was. */
static inline ssize_t writev(int fd, const struct iovec *iov, int count)
{
    ssize_t total = 0;
    for (int i = 0; i < count; i++) {
        size_t len = iov[i].iov_len > INT_MAX ? INT_MAX : iov[i].iov_len;
        if (len == 0)
            continue;
        int n = _write(fd, iov[i].iov_base, (unsigned)len);
        if (n < 0)
            return total > 0 ? total : -1;
        total += n;
        if ((size_t)n < iov[i].iov_len)
            break;
    }
    return total;
}

#endif
