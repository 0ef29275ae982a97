#include "supervisor/worker_channel.h"

#include "base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#define CHANNEL_READ_CHUNK ((size_t)64 * 1024)

void channel_init(struct worker_channel *ch, int fd)
{
    ch->fd = fd;
    wire_buf_init(&ch->in);
    ch->start = 0;
    spin_wait_init(&ch->spin);
    ch->waiting = false;
    ch->drained = false;
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        (void)fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

void channel_free(struct worker_channel *ch)
{
    wire_buf_free(&ch->in);
    ch->start = 0;
}

const char *channel_result_name(enum channel_result result)
{
    switch (result) {
    case CHANNEL_FRAME: return "frame";
    case CHANNEL_EOF: return "end of stream";
    case CHANNEL_TRUNCATED: return "truncated frame";
    case CHANNEL_OVERSIZED: return "oversized frame";
    case CHANNEL_TIMEOUT: return "timed out";
    case CHANNEL_IO_ERROR: return "read error";
    }
    return "unknown";
}

enum channel_result channel_read_frame(struct worker_channel *ch, int timeout_ms,
                                       const uint8_t **payload, size_t *len)
{
    wire_buf_drop_front(&ch->in, ch->start); /* consumed frames */
    ch->start = 0;
    /* Read at the first wait only: with no time to wait (the activation loop reads
     * what poll said is there, three times per host call) the clock is never needed. */
    long long deadline = -1;
    for (;;) {
        size_t consumed = 0;
        enum frame_result parsed =
            frame_parse(ch->in.data, ch->in.len, payload, len, &consumed);
        if (parsed == FRAME_OK) {
            ch->start = consumed;
            return CHANNEL_FRAME;
        }
        if (parsed == FRAME_OVERSIZED)
            return CHANNEL_OVERSIZED;
        if (timeout_ms <= 0 && ch->drained)
            return CHANNEL_TIMEOUT; /* nothing came since the pipe was found empty */

        if (!wire_buf_reserve(&ch->in, ch->in.len + CHANNEL_READ_CHUNK))
            return CHANNEL_IO_ERROR;
        ssize_t n = read(ch->fd, ch->in.data + ch->in.len, CHANNEL_READ_CHUNK);
        if (n > 0) {
            ch->in.len += (size_t)n;
            ch->drained = (size_t)n < CHANNEL_READ_CHUNK;
            continue;
        }
        ch->drained = false;
        if (n == 0)
            return ch->in.len == 0 ? CHANNEL_EOF : CHANNEL_TRUNCATED;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            return CHANNEL_IO_ERROR;
        if (timeout_ms <= 0)
            return CHANNEL_TIMEOUT;
        long long now = monotonic_ms();
        if (deadline < 0)
            deadline = now + timeout_ms;
        long long left = deadline - now;
        if (left <= 0)
            return CHANNEL_TIMEOUT;
        struct pollfd p = {ch->fd, POLLIN, 0};
        int rc = poll(&p, 1, (int)left);
        if (rc == 0)
            return CHANNEL_TIMEOUT;
        if (rc < 0 && errno != EINTR)
            return CHANNEL_IO_ERROR;
    }
}

bool channel_spin(struct worker_channel *ch)
{
    spin_wait_begin(&ch->spin);
    ch->waiting = true;
    if (ch->spin.bound_ns == 0)
        return false; /* off: no read that would only find nothing */
    for (;;) {
        if (!wire_buf_reserve(&ch->in, ch->in.len + CHANNEL_READ_CHUNK))
            return false; /* the blocking path reports it */
        ssize_t n = read(ch->fd, ch->in.data + ch->in.len, CHANNEL_READ_CHUNK);
        ch->drained = n > 0 && (size_t)n < CHANNEL_READ_CHUNK;
        if (n > 0) {
            ch->in.len += (size_t)n;
            spin_wait_end(&ch->spin, true);
            ch->waiting = false;
            return true;
        }
        if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            ch->waiting = false; /* not an answer: the bound stays as it is */
            return true;
        }
        if (errno == EAGAIN) {
            if (!spin_wait_more(&ch->spin))
                return false;
            spin_wait_relax();
        }
    }
}

void channel_blocked_wait_ended(struct worker_channel *ch)
{
    ch->drained = false; /* poll reported it readable */
    if (!ch->waiting)
        return;
    spin_wait_end(&ch->spin, false);
    ch->waiting = false;
}
