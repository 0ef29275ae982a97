#include "worker/descriptors.h"

#include "worker/refuse.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The sweep always covers 3..1023 (the contract) and further up to the soft
 * descriptor limit, capped so a huge limit cannot make startup slow. The parent sets
 * RLIMIT_NOFILE small before exec, so the cap only matters for manual launches. */
#define SWEEP_MIN_END 1024
#define SWEEP_MAX_END 65536

static int sweep_end(void)
{
    struct rlimit lim;
    long end = SWEEP_MIN_END;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
        (long)lim.rlim_cur > end)
        end = (long)lim.rlim_cur;
    if (end > SWEEP_MAX_END)
        end = SWEEP_MAX_END;
    return (int)end;
}

/* Fallback for kernels without close_range: list /proc/self/fd when it can be read
 * (before Landlock), otherwise close every number up to the sweep end. */
static void close_fallback(void)
{
    DIR *dir = opendir("/proc/self/fd");
    if (dir != NULL) {
        int self = dirfd(dir);
        int fds[256];
        size_t count = 0;
        const struct dirent *entry;
        /* Collect first: closing while iterating would disturb the listing. */
        while ((entry = readdir(dir)) != NULL && count < sizeof fds / sizeof fds[0]) {
            char *endp;
            long fd = strtol(entry->d_name, &endp, 10);
            if (*endp == '\0' && fd > 2 && fd != self)
                fds[count++] = (int)fd;
        }
        closedir(dir);
        for (size_t i = 0; i < count; i++)
            if (close(fds[i]) != 0 && errno != EBADF && errno != EINTR)
                refuse_unconfined("close-descriptors");
    }
    int end = sweep_end();
    for (int fd = 3; fd < end; fd++)
        if (close(fd) != 0 && errno != EBADF && errno != EINTR)
            refuse_unconfined("close-descriptors");
}

void close_descriptors_or_refuse(void)
{
    if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0) {
        if (errno != ENOSYS)
            refuse_unconfined("close-descriptors");
        close_fallback();
    }
    int end = sweep_end();
    for (int fd = 3; fd < end; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            refuse_unconfined("descriptor-survived");
    }
}
