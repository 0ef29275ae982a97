#include "proto/utf8.h"

/* The second byte's range depends on the lead byte: that is where overlongs,
 * surrogates and code points above U+10FFFF are excluded (Unicode table 3-7). */
bool utf8_valid(const uint8_t *bytes, size_t len)
{
    size_t i = 0;
    while (i < len) {
        uint8_t lead = bytes[i];
        if (lead < 0x80) {
            i++;
            continue;
        }
        size_t continuation;
        uint8_t second_min = 0x80;
        uint8_t second_max = 0xBF;
        if (lead >= 0xC2 && lead <= 0xDF) {
            continuation = 1;
        } else if (lead >= 0xE0 && lead <= 0xEF) {
            continuation = 2;
            if (lead == 0xE0)
                second_min = 0xA0; /* below is an overlong 3-byte form */
            else if (lead == 0xED)
                second_max = 0x9F; /* above is a surrogate */
        } else if (lead >= 0xF0 && lead <= 0xF4) {
            continuation = 3;
            if (lead == 0xF0)
                second_min = 0x90; /* below is an overlong 4-byte form */
            else if (lead == 0xF4)
                second_max = 0x8F; /* above is beyond U+10FFFF */
        } else {
            return false; /* stray continuation, C0/C1 overlong lead, or F5..FF */
        }
        if (continuation > len - i - 1)
            return false;
        if (bytes[i + 1] < second_min || bytes[i + 1] > second_max)
            return false;
        for (size_t k = 2; k <= continuation; k++) {
            if ((bytes[i + k] & 0xC0) != 0x80)
                return false;
        }
        i += continuation + 1;
    }
    return true;
}

size_t utf8_truncate(const uint8_t *bytes, size_t len, size_t max)
{
    if (len <= max)
        return len;
    /* Back up over continuation bytes to the start of the sequence that `max` splits;
     * cutting there keeps every earlier sequence whole. */
    size_t cut = max;
    while (cut > 0 && (bytes[cut] & 0xC0) == 0x80)
        cut--;
    return cut;
}
