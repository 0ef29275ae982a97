#include "proto/frame.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

const char *frame_result_name(enum frame_result result)
{
    switch (result) {
    case FRAME_OK:
        return "ok";
    case FRAME_EOF:
        return "eof";
    case FRAME_TRUNCATED:
        return "truncated";
    case FRAME_OVERSIZED:
        return "oversized";
    case FRAME_IO_ERROR:
        return "io_error";
    case FRAME_NO_MEMORY:
        return "no_memory";
    }
    return "unknown";
}

void frame_header_encode(uint32_t len, uint8_t header[PROTO_FRAME_HEADER_BYTES])
{
    header[0] = (uint8_t)(len >> 24);
    header[1] = (uint8_t)(len >> 16);
    header[2] = (uint8_t)(len >> 8);
    header[3] = (uint8_t)len;
}

uint32_t frame_header_decode(const uint8_t header[PROTO_FRAME_HEADER_BYTES])
{
    return (uint32_t)header[0] << 24 | (uint32_t)header[1] << 16 | (uint32_t)header[2] << 8 |
           (uint32_t)header[3];
}

/* Reads until `len` bytes arrived, end of input, or an error. *got counts the bytes
 * read, so the caller can tell EOF at the start from EOF part way. */
static enum frame_result read_full(int fd, uint8_t *into, size_t len, size_t *got)
{
    *got = 0;
    while (*got < len) {
        ssize_t n = read(fd, into + *got, len - *got);
        if (n > 0) {
            *got += (size_t)n;
        } else if (n == 0) {
            return FRAME_EOF;
        } else if (errno != EINTR) {
            return FRAME_IO_ERROR;
        }
    }
    return FRAME_OK;
}

enum frame_result frame_read(int fd, struct wire_buf *payload)
{
    wire_buf_reset(payload);

    uint8_t header[PROTO_FRAME_HEADER_BYTES];
    size_t got = 0;
    enum frame_result result = read_full(fd, header, sizeof header, &got);
    if (result == FRAME_EOF)
        return got == 0 ? FRAME_EOF : FRAME_TRUNCATED;
    if (result != FRAME_OK)
        return result;

    uint32_t len = frame_header_decode(header);
    if (len > PROTO_MAX_FRAME)
        return FRAME_OVERSIZED; /* checked before anything is allocated */
    if (len == 0)
        return FRAME_OK;
    if (!wire_buf_reserve(payload, len))
        return FRAME_NO_MEMORY;

    result = read_full(fd, payload->data, len, &got);
    if (result == FRAME_EOF)
        return FRAME_TRUNCATED;
    if (result != FRAME_OK)
        return result;
    payload->len = len;
    return FRAME_OK;
}

/* Writes all of iov[0..count), advancing through short writes; modifies iov. */
static enum frame_result write_all(int fd, struct iovec *iov, int count)
{
    while (count > 0) {
        if (iov->iov_len == 0) {
            iov++;
            count--;
            continue;
        }
        ssize_t n = writev(fd, iov, count);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return FRAME_IO_ERROR;
        }
        if (n == 0) {
            /* No progress on a non-empty write would loop forever; a pipe never
             * does this, so call it an I/O error. */
            errno = EIO;
            return FRAME_IO_ERROR;
        }
        size_t written = (size_t)n;
        while (count > 0 && written >= iov->iov_len) {
            written -= iov->iov_len;
            iov++;
            count--;
        }
        if (count > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + written;
            iov->iov_len -= written;
        }
    }
    return FRAME_OK;
}

enum frame_result frame_write(int fd, const uint8_t *payload, size_t len)
{
    if (len > PROTO_MAX_FRAME)
        return FRAME_OVERSIZED;
    if (len > 0 && !payload) {
        errno = EINVAL;
        return FRAME_IO_ERROR;
    }
    uint8_t header[PROTO_FRAME_HEADER_BYTES];
    frame_header_encode((uint32_t)len, header);

    /* writev takes non-const bases but only reads them; copying the pointer's bytes
     * drops the qualifier without a cast (which -Wcast-qual would reject). */
    void *payload_base = NULL;
    memcpy(&payload_base, &payload, sizeof payload_base);
    struct iovec iov[2] = {
        {.iov_base = header, .iov_len = sizeof header},
        {.iov_base = payload_base, .iov_len = len},
    };
    return write_all(fd, iov, 2);
}

enum frame_result frame_parse(const uint8_t *data, size_t len, const uint8_t **payload,
                              size_t *payload_len, size_t *consumed)
{
    if (len == 0)
        return FRAME_EOF;
    if (len < PROTO_FRAME_HEADER_BYTES)
        return FRAME_TRUNCATED;
    uint32_t claimed = frame_header_decode(data);
    if (claimed > PROTO_MAX_FRAME)
        return FRAME_OVERSIZED;
    if (claimed > len - PROTO_FRAME_HEADER_BYTES)
        return FRAME_TRUNCATED;
    *payload = data + PROTO_FRAME_HEADER_BYTES;
    *payload_len = claimed;
    *consumed = PROTO_FRAME_HEADER_BYTES + (size_t)claimed;
    return FRAME_OK;
}
