/* Whole frames from a blocking descriptor, with as few reads as the bytes allow.
 *
 * frame_read (frame.h) reads a header, then its payload: two system calls per frame.
 * A reader asks for up to FRAME_READER_CHUNK bytes at a time instead, so a small frame
 * (a host call's answer) usually costs one read, and bytes that came after the frame
 * wait in the buffer for the next call. Limits are frame_read's: a header that claims
 * more than PROTO_MAX_FRAME is refused before anything is allocated for it. */
#ifndef BASAL_PROTO_FRAME_READER_H
#define BASAL_PROTO_FRAME_READER_H

#include "proto/frame.h"
#include "proto/wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FRAME_READER_CHUNK ((size_t)4096)

struct frame_reader {
    struct wire_buf buf; /* bytes read, from `start` on not yet handed out */
    size_t start;
};

/* A zeroed reader is a valid empty one; this is the same thing. */
void frame_reader_init(struct frame_reader *r);
void frame_reader_free(struct frame_reader *r);

/* True if the next frame_reader_next will not read: a whole frame (or a header it will
 * refuse) is already buffered. A caller that waits for the descriptor to become
 * readable must not wait then. */
bool frame_reader_has_frame(const struct frame_reader *r);

/* The next frame: on FRAME_OK *payload and *len name its payload inside the reader,
 * valid until the next call. FRAME_EOF at a frame boundary, FRAME_TRUNCATED inside
 * one, FRAME_OVERSIZED, FRAME_IO_ERROR (EAGAIN included), FRAME_NO_MEMORY. */
enum frame_result frame_reader_next(int fd, struct frame_reader *r, const uint8_t **payload,
                                    size_t *len);

#endif
