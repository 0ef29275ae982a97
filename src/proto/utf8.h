/* Strict UTF-8 (RFC 3629 / Unicode table 3-7) for the protocol's text fields. */
#ifndef BASAL_PROTO_UTF8_H
#define BASAL_PROTO_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True if bytes[0..len) is well-formed UTF-8: no overlong forms, no surrogates
 * (U+D800..U+DFFF), nothing above U+10FFFF, no truncated sequence. NUL is well-formed
 * UTF-8; the protocol rejects it separately. */
bool utf8_valid(const uint8_t *bytes, size_t len);

/* The longest prefix of bytes[0..len), at most `max` bytes, that does not end inside a
 * multi-byte sequence. For a sender that must cut a text (an error detail, console
 * output) to a field's maximum without producing invalid UTF-8. Assumes the input is
 * valid UTF-8. */
size_t utf8_truncate(const uint8_t *bytes, size_t len, size_t max);

#endif
