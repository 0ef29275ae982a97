#include "cli/script_text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The length of a well-formed UTF-8 sequence at s[0..len) and its code point, or 0. */
static size_t utf8_seq(const unsigned char *s, size_t len, uint32_t *cp)
{
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    size_t n = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0 || n > len)
        return 0;
    uint32_t v = s[0] & (0x7fu >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    static const uint32_t min_of[] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min_of[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return n;
}

static bool hidden(uint32_t cp)
{
    return cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e ||
           cp == 0x200f || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

char *script_text_escape(const char *text, size_t len, bool keep_newlines, size_t max_out)
{
    size_t cap = len * 10 + 8; /* the longest escape, \u{10FFFF}, is 10 bytes a byte */
    char *out = malloc(cap);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        if (max_out > 0 && o >= max_out) {
            memcpy(out + o, "...", 4);
            return out;
        }
        uint32_t cp = 0;
        size_t n = utf8_seq(s + i, len - i, &cp);
        if (n == 0) {
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", s[i]);
            i++;
            continue;
        }
        if (cp == '\n' && keep_newlines)
            out[o++] = '\n';
        else if (cp < 0x20)
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", (unsigned)cp);
        else if (hidden(cp))
            o += (size_t)snprintf(out + o, cap - o, "\\u{%04X}", (unsigned)cp);
        else {
            memcpy(out + o, s + i, n);
            o += n;
        }
        i += n;
    }
    out[o] = '\0';
    return out;
}

void script_text_print(FILE *f, const char *text, size_t len, bool keep_newlines)
{
    char *shown = script_text_escape(text, len, keep_newlines, 0);
    if (shown == NULL) {
        fputs("(out of memory)", f);
        return;
    }
    fputs(shown, f);
    free(shown);
}
