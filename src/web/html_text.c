/* The page buffer and the HTML escaper (web/html_text.h). */
#include "web/html_text.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HTML_INITIAL_CAP 4096u
#define REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD */

void html_init(struct html *h)
{
    memset(h, 0, sizeof *h);
}

void html_free(struct html *h)
{
    free(h->text);
    memset(h, 0, sizeof *h);
}

char *html_take(struct html *h, size_t *len)
{
    if (h->failed || h->text == NULL) {
        html_free(h);
        return NULL;
    }
    char *text = h->text;
    if (len != NULL)
        *len = h->len;
    memset(h, 0, sizeof *h);
    return text;
}

static bool reserve(struct html *h, size_t more)
{
    if (h->failed)
        return false;
    if (h->text != NULL && h->len + more + 1 <= h->cap)
        return true;
    size_t cap = h->cap > 0 ? h->cap : HTML_INITIAL_CAP;
    while (cap < h->len + more + 1) {
        if (cap > SIZE_MAX / 2) {
            h->failed = true;
            return false;
        }
        cap *= 2;
    }
    char *grown = realloc(h->text, cap);
    if (grown == NULL) {
        h->failed = true;
        return false;
    }
    h->text = grown;
    h->cap = cap;
    return true;
}

static void append(struct html *h, const char *bytes, size_t n)
{
    if (!reserve(h, n))
        return;
    memcpy(h->text + h->len, bytes, n);
    h->len += n;
    h->text[h->len] = '\0';
}

void html_raw(struct html *h, const char *markup)
{
    append(h, markup, strlen(markup));
}

void html_rawf(struct html *h, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        h->failed = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        append(h, small, (size_t)n);
        return;
    }
    if (!reserve(h, (size_t)n))
        return;
    va_start(ap, fmt);
    (void)vsnprintf(h->text + h->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    h->len += (size_t)n;
}

/* The length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF), or 0. */
static size_t utf8_sequence(const unsigned char *p, size_t left)
{
    unsigned char c = p[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (left < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

void html_text_n(struct html *h, const char *text, size_t len)
{
    if (text == NULL)
        return;
    const unsigned char *p = (const unsigned char *)text;
    size_t i = 0;
    while (i < len) {
        unsigned char c = p[i];
        switch (c) {
        case '&': append(h, "&amp;", 5); i++; continue;
        case '<': append(h, "&lt;", 4); i++; continue;
        case '>': append(h, "&gt;", 4); i++; continue;
        case '"': append(h, "&quot;", 6); i++; continue;
        case '\'': append(h, "&#39;", 5); i++; continue;
        default: break;
        }
        if (c == '\t' || c == '\n' || (c >= 0x20 && c < 0x7F)) {
            append(h, (const char *)&p[i], 1);
            i++;
            continue;
        }
        size_t n = c >= 0x80 ? utf8_sequence(p + i, len - i) : 0;
        /* C1 controls (U+0080..U+009F, encoded C2 80..C2 9F) are controls too. */
        if (n == 0 || (n == 2 && c == 0xC2 && p[i + 1] < 0xA0)) {
            append(h, REPLACEMENT, 3);
            i += n > 0 ? n : 1;
            continue;
        }
        append(h, (const char *)&p[i], n);
        i += n;
    }
    if (h->text == NULL)
        append(h, "", 0);
}

void html_text(struct html *h, const char *text)
{
    if (text != NULL)
        html_text_n(h, text, strlen(text));
}
