/* The parent's side of a worker's stdout: frames read with a deadline.
 *
 * The parent never blocks on a worker: a worker that stalls inside a frame must not
 * hang the parent, so reads are non-blocking and gathered until a whole frame
 * (checked against PROTO_MAX_FRAME as soon as its header is in) is present. */
#ifndef BASAL_SUPERVISOR_WORKER_CHANNEL_H
#define BASAL_SUPERVISOR_WORKER_CHANNEL_H

#include "proto/frame.h"
#include "proto/wire.h"

#include <stdbool.h>

struct worker_channel {
    int fd;
    struct wire_buf in; /* bytes read but not yet consumed, from `start` */
    size_t start;
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

const char *channel_result_name(enum channel_result result);

#endif
