/* Bytes as lower-case hexadecimal text: digests, idempotency keys, the web page's
 * secrets and tokens are all written this way. */
#ifndef BASAL_BASE_HEX_TEXT_H
#define BASAL_BASE_HEX_TEXT_H

#include <stddef.h>

/* bytes[0..n) as 2n lower-case hex digits and a NUL into out (2n + 1 bytes). */
void hex_text(const unsigned char *bytes, size_t n, char *out);

#endif
