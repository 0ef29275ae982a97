#include "proto/frame_reader.h"

#include <errno.h>
#include <unistd.h>

void frame_reader_init(struct frame_reader *r)
{
    wire_buf_init(&r->buf);
    r->start = 0;
}

void frame_reader_free(struct frame_reader *r)
{
    wire_buf_free(&r->buf);
    r->start = 0;
}

bool frame_reader_has_frame(const struct frame_reader *r)
{
    if (r->buf.len == r->start)
        return false;
    const uint8_t *payload = NULL;
    size_t len = 0, consumed = 0;
    enum frame_result parsed =
        frame_parse(r->buf.data + r->start, r->buf.len - r->start, &payload, &len, &consumed);
    return parsed == FRAME_OK || parsed == FRAME_OVERSIZED;
}

enum frame_result frame_reader_next(int fd, struct frame_reader *r, const uint8_t **payload,
                                    size_t *len)
{
    wire_buf_drop_front(&r->buf, r->start); /* the frame handed out last time */
    r->start = 0;
    for (;;) {
        size_t consumed = 0;
        enum frame_result parsed = frame_parse(r->buf.data, r->buf.len, payload, len, &consumed);
        if (parsed == FRAME_OK) {
            r->start = consumed;
            return FRAME_OK;
        }
        if (parsed == FRAME_OVERSIZED)
            return FRAME_OVERSIZED;
        /* Incomplete: ask for the rest of this frame at once if its header is in (it is
         * within PROTO_MAX_FRAME, checked above), else for a chunk. */
        size_t want = FRAME_READER_CHUNK;
        if (r->buf.len >= PROTO_FRAME_HEADER_BYTES) {
            size_t whole = PROTO_FRAME_HEADER_BYTES + (size_t)frame_header_decode(r->buf.data);
            if (whole - r->buf.len > want)
                want = whole - r->buf.len;
        }
        if (!wire_buf_reserve(&r->buf, r->buf.len + want))
            return FRAME_NO_MEMORY;
        ssize_t n = read(fd, r->buf.data + r->buf.len, want);
        if (n > 0) {
            r->buf.len += (size_t)n;
            continue;
        }
        if (n == 0)
            return r->buf.len == 0 ? FRAME_EOF : FRAME_TRUNCATED;
        if (errno != EINTR)
            return FRAME_IO_ERROR;
    }
}
