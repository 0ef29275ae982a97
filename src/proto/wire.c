#include "proto/wire.h"

#include <stdlib.h>
#include <string.h>

void wire_buf_init(struct wire_buf *buf)
{
    buf->data = NULL;
    buf->len = 0;
    buf->cap = 0;
    buf->failed = false;
}

void wire_buf_free(struct wire_buf *buf)
{
    free(buf->data);
    wire_buf_init(buf);
}

void wire_buf_reset(struct wire_buf *buf)
{
    buf->len = 0;
    buf->failed = false;
}

void wire_buf_drop_front(struct wire_buf *buf, size_t n)
{
    if (n == 0)
        return;
    size_t left = buf->len - n;
    if (left > 0)
        memmove(buf->data, buf->data + n, left);
    buf->len = left;
}

bool wire_buf_reserve(struct wire_buf *buf, size_t total)
{
    if (buf->failed)
        return false;
    if (total <= buf->cap)
        return true;
    /* Grow geometrically so a message built from many small puts costs O(n). */
    size_t new_cap = buf->cap ? buf->cap : 64;
    while (new_cap < total) {
        if (new_cap > SIZE_MAX / 2) {
            new_cap = total;
            break;
        }
        new_cap *= 2;
    }
    uint8_t *grown = realloc(buf->data, new_cap);
    if (!grown) {
        buf->failed = true;
        return false;
    }
    buf->data = grown;
    buf->cap = new_cap;
    return true;
}

/* Appends len bytes; the single place that grows the buffer and copies. */
static bool append(struct wire_buf *buf, const void *bytes, size_t len)
{
    if (buf->failed)
        return false;
    if (len == 0)
        return true;
    if (len > SIZE_MAX - buf->len) {
        buf->failed = true;
        return false;
    }
    if (!wire_buf_reserve(buf, buf->len + len))
        return false;
    memcpy(buf->data + buf->len, bytes, len);
    buf->len += len;
    return true;
}

bool wire_put_u8(struct wire_buf *buf, uint8_t value)
{
    return append(buf, &value, 1);
}

bool wire_put_u32(struct wire_buf *buf, uint32_t value)
{
    const uint8_t be[4] = {
        (uint8_t)(value >> 24),
        (uint8_t)(value >> 16),
        (uint8_t)(value >> 8),
        (uint8_t)value,
    };
    return append(buf, be, sizeof be);
}

bool wire_put_u64(struct wire_buf *buf, uint64_t value)
{
    return wire_put_u32(buf, (uint32_t)(value >> 32)) && wire_put_u32(buf, (uint32_t)value);
}

bool wire_put_raw(struct wire_buf *buf, const void *bytes, size_t len)
{
    if (len > 0 && !bytes) {
        buf->failed = true;
        return false;
    }
    return append(buf, bytes, len);
}

bool wire_put_blob(struct wire_buf *buf, const void *bytes, size_t len)
{
    if (len > UINT32_MAX || (len > 0 && !bytes)) {
        buf->failed = true;
        return false;
    }
    return wire_put_u32(buf, (uint32_t)len) && append(buf, bytes, len);
}

void wire_reader_init(struct wire_reader *reader, const uint8_t *data, size_t len)
{
    reader->pos = data;
    reader->remaining = data ? len : 0;
}

/* Consumes `len` bytes and sets *start to the first of them (which may be NULL for an
 * empty input and len 0); false, consuming nothing, if fewer remain. */
static bool take(struct wire_reader *reader, size_t len, const uint8_t **start)
{
    if (len > reader->remaining)
        return false;
    *start = reader->pos;
    if (len > 0) {
        reader->pos += len;
        reader->remaining -= len;
    }
    return true;
}

enum wire_status wire_get_u8(struct wire_reader *reader, uint8_t *out)
{
    const uint8_t *p = NULL;
    if (!take(reader, 1, &p))
        return WIRE_TRUNCATED;
    *out = p[0];
    return WIRE_OK;
}

enum wire_status wire_get_u32(struct wire_reader *reader, uint32_t *out)
{
    const uint8_t *p = NULL;
    if (!take(reader, 4, &p))
        return WIRE_TRUNCATED;
    *out = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
    return WIRE_OK;
}

enum wire_status wire_get_u64(struct wire_reader *reader, uint64_t *out)
{
    if (reader->remaining < 8)
        return WIRE_TRUNCATED;
    uint32_t high = 0;
    uint32_t low = 0;
    (void)wire_get_u32(reader, &high); /* cannot fail: 8 bytes remain */
    (void)wire_get_u32(reader, &low);
    *out = (uint64_t)high << 32 | low;
    return WIRE_OK;
}

enum wire_status wire_get_raw(struct wire_reader *reader, void *out, size_t len)
{
    const uint8_t *p = NULL;
    if (!take(reader, len, &p))
        return WIRE_TRUNCATED;
    if (len > 0)
        memcpy(out, p, len);
    return WIRE_OK;
}

enum wire_status wire_get_blob(struct wire_reader *reader, size_t max_len, const uint8_t **bytes,
                               size_t *len)
{
    struct wire_reader saved = *reader;
    uint32_t prefix = 0;
    if (wire_get_u32(reader, &prefix) != WIRE_OK)
        return WIRE_TRUNCATED;
    if (prefix > max_len) {
        *reader = saved;
        return WIRE_TOO_LONG;
    }
    const uint8_t *start = NULL;
    if (!take(reader, prefix, &start)) {
        *reader = saved;
        return WIRE_TRUNCATED;
    }
    *bytes = start;
    *len = prefix;
    return WIRE_OK;
}
