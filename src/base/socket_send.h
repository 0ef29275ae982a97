/* Sending on a non-blocking stream socket: never a SIGPIPE (MSG_NOSIGNAL, a peer gone
 * away is a result, never a signal that kills the process) and never a wait past the
 * caller's bound. The ops socket's client and server both send this way. */
#ifndef BASAL_BASE_SOCKET_SEND_H
#define BASAL_BASE_SOCKET_SEND_H

#include <stddef.h>

enum socket_send_result {
    SOCKET_SENT = 0,        /* all of it */
    SOCKET_SEND_TIMED_OUT,  /* the buffer stayed full past the bound */
    SOCKET_SEND_BROKEN,     /* the connection broke (or poll failed): errno says why */
};

/* Sends all len bytes of data on fd. While the socket's buffer is full it waits for
 * room, each wait at most stall_ms (-1: no stall bound) and never past deadline
 * (monotonic_ms, base/clock.h; -1: none). */
enum socket_send_result socket_send_all(int fd, const void *data, size_t len,
                                        long long deadline, int stall_ms);

#endif
