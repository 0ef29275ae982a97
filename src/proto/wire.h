/* Primitive encoding shared by every protocol message: big-endian integers and
 * u32-length-prefixed byte strings, written into a growable buffer and read back
 * through a bounds-checked cursor.
 *
 * Only malloc/realloc/free/memcpy are used, so the confined worker may call it.
 *
 * Writer: every wire_put_* appends to the buffer. A failure (allocation, or a byte
 * string longer than UINT32_MAX) sets buf->failed and every later put becomes a
 * no-op, so an encoder may put a whole message and check once at the end.
 *
 * Reader: every wire_get_* checks the bytes remaining before touching them; reading
 * past the end returns WIRE_TRUNCATED and leaves the cursor where it was. A length
 * prefix is checked against the caller's maximum first (WIRE_TOO_LONG), then against
 * the bytes remaining (WIRE_TRUNCATED). */
#ifndef BASAL_PROTO_WIRE_H
#define BASAL_PROTO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wire_buf {
    uint8_t *data; /* NULL until the first byte is put */
    size_t len;    /* bytes written */
    size_t cap;    /* bytes allocated */
    bool failed;   /* sticky: an earlier put failed, contents are incomplete */
};

/* A zeroed struct wire_buf is a valid empty buffer; this is the same thing. */
void wire_buf_init(struct wire_buf *buf);
/* Releases the storage; the buffer is empty and usable again afterwards. */
void wire_buf_free(struct wire_buf *buf);
/* Empties the buffer and clears the failure flag, keeping the storage for reuse. */
void wire_buf_reset(struct wire_buf *buf);
/* Makes room for at least `total` bytes in all. False (and buf->failed) on failure. */
bool wire_buf_reserve(struct wire_buf *buf, size_t total);
/* Drops the first `n` bytes (n <= len), moving the rest to the front: what a reader
 * does with the frames it has handed out, so the buffer does not grow without bound. */
void wire_buf_drop_front(struct wire_buf *buf, size_t n);

/* Each returns !buf->failed after the call. */
bool wire_put_u8(struct wire_buf *buf, uint8_t value);
bool wire_put_u32(struct wire_buf *buf, uint32_t value);
bool wire_put_u64(struct wire_buf *buf, uint64_t value);
/* `len` raw bytes, no prefix: for fixed-size fields such as digests. */
bool wire_put_raw(struct wire_buf *buf, const void *bytes, size_t len);
/* u32 big-endian length, then the bytes. `bytes` may be NULL when len is 0. */
bool wire_put_blob(struct wire_buf *buf, const void *bytes, size_t len);

enum wire_status {
    WIRE_OK = 0,
    WIRE_TRUNCATED, /* fewer bytes remain than the field needs */
    WIRE_TOO_LONG,  /* a length prefix exceeds the field's maximum */
};

struct wire_reader {
    const uint8_t *pos; /* next unread byte */
    size_t remaining;   /* bytes from pos to the end of the input */
};

void wire_reader_init(struct wire_reader *reader, const uint8_t *data, size_t len);

enum wire_status wire_get_u8(struct wire_reader *reader, uint8_t *out);
enum wire_status wire_get_u32(struct wire_reader *reader, uint32_t *out);
enum wire_status wire_get_u64(struct wire_reader *reader, uint64_t *out);
/* Copies exactly `len` raw bytes into `out`. */
enum wire_status wire_get_raw(struct wire_reader *reader, void *out, size_t len);
/* A length-prefixed byte string, not copied: *bytes points into the input and stays
 * valid as long as the input does. A length above `max_len` is WIRE_TOO_LONG. */
enum wire_status wire_get_blob(struct wire_reader *reader, size_t max_len, const uint8_t **bytes,
                               size_t *len);

#endif
