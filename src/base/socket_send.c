#include "base/socket_send.h"

#include "base/clock.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

/* The longest one wait may last: the smaller of the stall bound and the time left
 * before the deadline; 0 when the deadline has passed, -1 when nothing bounds it. */
static int wait_bound_ms(long long deadline, int stall_ms)
{
    int bound = stall_ms < 0 ? -1 : stall_ms;
    if (deadline < 0)
        return bound;
    long long left = deadline - monotonic_ms();
    int left_ms = left <= 0 ? 0 : left > 0x7fffffff ? 0x7fffffff : (int)left;
    return bound < 0 || left_ms < bound ? left_ms : bound;
}

enum socket_send_result socket_send_all(int fd, const void *data, size_t len,
                                        long long deadline, int stall_ms)
{
    const char *bytes = data;
    size_t done = 0;
    while (done < len) {
        ssize_t n = send(fd, bytes + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int bound = wait_bound_ms(deadline, stall_ms);
            if (bound == 0)
                return SOCKET_SEND_TIMED_OUT;
            struct pollfd p = {fd, POLLOUT, 0};
            int r = poll(&p, 1, bound);
            if (r < 0 && errno == EINTR)
                continue;
            if (r == 0)
                return SOCKET_SEND_TIMED_OUT;
            if (r < 0)
                return SOCKET_SEND_BROKEN;
            /* Room, or an error or hang-up the next send reports with its errno. */
            continue;
        }
        if (n == 0)
            errno = EPIPE;
        return SOCKET_SEND_BROKEN;
    }
    return SOCKET_SENT;
}
