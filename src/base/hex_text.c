/* Bytes as hex digits (see hex_text.h). */
#include "base/hex_text.h"

void hex_text(const unsigned char *bytes, size_t n, char *out)
{
    static const char DIGITS[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = DIGITS[bytes[i] >> 4];
        out[2 * i + 1] = DIGITS[bytes[i] & 15];
    }
    out[2 * n] = '\0';
}
