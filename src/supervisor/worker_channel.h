/* The parent's side of a worker's stdout: frames read with a deadline.
 *
 * The parent never blocks on a worker: a worker that stalls inside a frame must not
 * hang the parent, so reads are non-blocking and gathered until a whole frame
 * (checked against PROTO_MAX_FRAME as soon as its header is in) is present. */
#ifndef BASAL_SUPERVISOR_WORKER_CHANNEL_H
#define BASAL_SUPERVISOR_WORKER_CHANNEL_H

#include "proto/frame.h"
#include "proto/spin_wait.h"
#include "proto/wire.h"

#include <stdbool.h>

struct worker_channel {
    int fd;
    struct wire_buf in; /* bytes read but not yet consumed, from `start` */
    size_t start;
    struct spin_wait spin; /* how long to spin for the worker's next bytes */
    bool waiting;          /* a wait channel_spin began has not ended yet */
    /* The last read returned less than it asked for: the pipe was empty after it, so
     * until a poll reports it readable again, a read without a deadline would only
     * fail (one system call per host call saved). */
    bool drained;
};

enum channel_result {
    CHANNEL_FRAME = 0, /* payload and len name one frame, valid until the next read */
    CHANNEL_EOF,       /* the worker closed stdout at a frame boundary */
    CHANNEL_TRUNCATED, /* the worker closed stdout inside a frame */
    CHANNEL_OVERSIZED, /* a header claimed more than PROTO_MAX_FRAME */
    CHANNEL_TIMEOUT,   /* no whole frame before the deadline */
    CHANNEL_IO_ERROR,
};

/* Takes over fd (sets it non-blocking). */
void channel_init(struct worker_channel *ch, int fd);
void channel_free(struct worker_channel *ch);

/* Waits up to timeout_ms (monotonic) for one whole frame. */
enum channel_result channel_read_frame(struct worker_channel *ch, int timeout_ms,
                                       const uint8_t **payload, size_t *len);

/* For a caller about to block (poll) for bytes the worker should send within
 * microseconds (during an activation, while the worker runs): first spins on the
 * non-blocking read for the adaptive bound of proto/spin_wait.h, gathering what comes
 * into the channel. True if bytes came (or the stream ended, or the read failed: the
 * next channel_read_frame says which); false if the caller should block now, and then
 * call channel_blocked_wait_ended once the worker's stdout is readable, so the bound
 * learns how long the wait was (it also tells the channel the pipe is readable again:
 * see `drained`). */
bool channel_spin(struct worker_channel *ch);
void channel_blocked_wait_ended(struct worker_channel *ch);

const char *channel_result_name(enum channel_result result);

#endif
