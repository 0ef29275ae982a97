#include "worker/descriptors.h"

#include "worker/refuse.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

/* At most this many descriptors per poll: 4 KiB of stack. */
#define SWEEP_CHUNK 256

/* The slow way, one fcntl per number, for when poll cannot answer. */
static int first_open_by_fcntl(int from, int end)
{
    for (int fd = from; fd < end; fd++)
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            return fd;
    return end;
}

int descriptors_first_open(int from, int end)
{
    /* poll refuses more entries than the soft fd limit (16 under the parent), so a
     * chunk is at most that; each poll still replaces that many fcntl calls. */
    long chunk = SWEEP_CHUNK;
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
        (long)lim.rlim_cur < chunk)
        chunk = (long)lim.rlim_cur;
    if (chunk < 1)
        chunk = 1; /* poll then refuses, and the fallback asks fcntl */
    struct pollfd fds[SWEEP_CHUNK];
    for (int base = from; base < end; base += (int)chunk) {
        int count = end - base < chunk ? end - base : (int)chunk;
        for (int i = 0; i < count; i++) {
            fds[i].fd = base + i;
            fds[i].events = 0;
            fds[i].revents = 0;
        }
        int ready = count > 0 ? poll(fds, (nfds_t)count, 0) : -1;
        while (ready < 0 && errno == EINTR)
            ready = poll(fds, (nfds_t)count, 0);
        if (ready < 0) {
            /* poll could not look (a zero fd limit, say): ask number by number. */
            int open_fd = first_open_by_fcntl(base, base + count);
            if (open_fd < base + count)
                return open_fd;
            continue;
        }
        /* A closed number comes back POLLNVAL; an open one never does. */
        for (int i = 0; i < count; i++)
            if ((fds[i].revents & POLLNVAL) == 0)
                return base + i;
    }
    return end;
}

void close_descriptors_or_refuse(void)
{
    if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0) {
        if (errno != ENOSYS)
            refuse_unconfined("close-descriptors");
        close_fallback();
    }
    int end = sweep_end();
    if (descriptors_first_open(3, end) != end)
        refuse_unconfined("descriptor-survived");
}
