/* Frames on the worker's pipes: a 4-byte big-endian payload length, then the payload.
 *
 * The length is checked against PROTO_MAX_FRAME before a single byte is allocated, so
 * a peer cannot make the reader allocate more than that. Reads and writes retry
 * EINTR and short transfers. Only read(2), write(2), writev(2) and malloc/realloc/free
 * are used: the confined worker may call everything here.
 *
 * Writing to a pipe whose reader is gone raises SIGPIPE; the parent ignores SIGPIPE
 * and sees FRAME_IO_ERROR with errno EPIPE, the worker simply dies (that is fine: its
 * parent is gone). */
#ifndef BASAL_PROTO_FRAME_H
#define BASAL_PROTO_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

/* Largest payload either side sends or accepts. */
/* Written as a shift, not 32u * 1024u * 1024u: the same unsigned int value, but
 * comparing a size_t with a product trips bugprone-implicit-widening-of-multiplication. */
#define PROTO_MAX_FRAME (32u << 20) /* 32 MiB */
#define PROTO_FRAME_HEADER_BYTES 4u

enum frame_result {
    FRAME_OK = 0,
    FRAME_EOF,       /* end of input exactly at a frame boundary: the clean end */
    FRAME_TRUNCATED, /* end of input inside a header or a payload */
    FRAME_OVERSIZED, /* the header claims more than PROTO_MAX_FRAME */
    FRAME_IO_ERROR,  /* read/write failed; errno is left as the failing call set it */
    FRAME_NO_MEMORY, /* the payload buffer could not be grown */
};

/* "ok", "eof", "truncated", "oversized", "io_error", "no_memory" ("unknown" otherwise). */
const char *frame_result_name(enum frame_result result);

/* Reads one frame from fd into `payload`, replacing its contents (its storage is
 * reused across calls). On FRAME_OK payload->len is the payload length (it may be 0,
 * and payload->data may then be NULL). On any other result the contents are
 * unspecified; the buffer still owns its storage and must be freed as usual.
 * A blocking fd is expected: EAGAIN is reported as FRAME_IO_ERROR. */
enum frame_result frame_read(int fd, struct wire_buf *payload);

/* Writes header and payload in full (writev, then write for any remainder).
 * FRAME_OVERSIZED, writing nothing, if len exceeds PROTO_MAX_FRAME. */
enum frame_result frame_write(int fd, const uint8_t *payload, size_t len);

/* Frame parsing from memory, for fuzzing and for a reader that gathers bytes itself
 * (e.g. from a non-blocking pipe). Looks at the first frame of data[0..len):
 *   FRAME_OK        *payload and *payload_len name the payload inside `data` (nothing is
 *                   copied) and *consumed is header + payload bytes;
 *   FRAME_EOF       len is 0;
 *   FRAME_TRUNCATED the frame is incomplete: a streaming caller waits for more bytes,
 *                   at end of input it is a truncated stream;
 *   FRAME_OVERSIZED the header claims more than PROTO_MAX_FRAME (known as soon as the
 *                   4 header bytes are present).
 * The out parameters are written only on FRAME_OK. */
enum frame_result frame_parse(const uint8_t *data, size_t len, const uint8_t **payload,
                              size_t *payload_len, size_t *consumed);

/* Encodes the 4-byte header for a payload of `len` bytes (len <= PROTO_MAX_FRAME). */
void frame_header_encode(uint32_t len, uint8_t header[PROTO_FRAME_HEADER_BYTES]);

/* The payload length a 4-byte header claims (not checked against PROTO_MAX_FRAME). */
uint32_t frame_header_decode(const uint8_t header[PROTO_FRAME_HEADER_BYTES]);

#endif
