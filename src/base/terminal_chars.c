/* The characters a terminal acts on: see base/terminal_chars.h. */
#include "base/terminal_chars.h"

static bool is_direction_control(uint32_t cp)
{
    return cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

bool terminal_char_active(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || is_direction_control(cp) ||
           cp == 0x2028 || cp == 0x2029;
}

const char *terminal_char_kind(uint32_t cp)
{
    if (cp < 0x20 || cp == 0x7f)
        return "a control character";
    if (cp >= 0x80 && cp <= 0x9f)
        return "a C1 control character";
    if (is_direction_control(cp))
        return "a direction control";
    if (cp == 0x2028 || cp == 0x2029)
        return "a line separator";
    return NULL;
}

size_t terminal_utf8_char(const unsigned char *s, size_t avail, uint32_t *cp)
{
    unsigned char lead = s[0];
    if (lead < 0x80) {
        *cp = lead;
        return 1;
    }
    size_t need = (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : (lead >> 3) == 30 ? 4 : 0;
    if (need == 0 || need > avail)
        return 0;
    static const unsigned char LEAD_MASK[5] = {0, 0x7f, 0x1f, 0x0f, 0x07};
    static const uint32_t SMALLEST[5] = {0, 0, 0x80, 0x800, 0x10000};
    uint32_t v = lead & LEAD_MASK[need];
    for (size_t k = 1; k < need; k++) {
        if ((s[k] & 0xc0u) != 0x80u)
            return 0;
        v = (v << 6) | (s[k] & 0x3fu);
    }
    if (v < SMALLEST[need] || (v >= 0xd800 && v <= 0xdfff) || v > 0x10ffff)
        return 0;
    *cp = v;
    return need;
}

long terminal_chars_find(const char *s, size_t len, bool lines_ok, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        uint32_t c = 0;
        size_t n = terminal_utf8_char(u + i, len - i, &c);
        if (n == 0) {
            *cp = u[i];
            return (long)i;
        }
        if (terminal_char_active(c) && !(lines_ok && (c == '\n' || c == '\t'))) {
            *cp = c;
            return (long)i;
        }
        i += n;
    }
    return -1;
}
