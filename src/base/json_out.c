/* The JSON encoder of every output: see base/json_out.h. */
#include "base/json_out.h"

#include "base/terminal_chars.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ESCAPE_LEN 6 /* \uXXXX: every code point re-escaped is in the BMP */

/* The character at s[0..avail) if it is one to re-escape: its length, the code point
 * in *cp; 0 for anything else (C0 is never raw inside jansson's strings, and raw C0
 * outside them is JSON_INDENT's layout). */
static size_t active_at(const unsigned char *s, size_t avail, uint32_t *cp)
{
    if (s[0] < 0x7f)
        return 0;
    size_t n = terminal_utf8_char(s, avail, cp);
    return n > 0 && terminal_char_active(*cp) ? n : 0;
}

/* The escape at s[0..avail) (a backslash there): its length, copied to out with its
 * hex digits in lower case when out is not NULL. jansson writes \u001B; the script's
 * own JSON and every escape basal adds are lower case, so one spelling shows. */
static size_t copy_escape(const char *s, size_t avail, char *out)
{
    size_t n = avail >= 6 && s[1] == 'u' ? 6 : avail >= 2 ? 2 : 1;
    if (out != NULL)
        for (size_t k = 0; k < n; k++) {
            out[k] = s[k];
            if (k >= 2 && s[k] >= 'A' && s[k] <= 'F')
                out[k] = "abcdef"[s[k] - 'A'];
        }
    return n;
}

char *json_out_escape(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t grown = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp = 0;
        size_t n = text[i] == '\\' ? 0 : active_at(s + i, len - i, &cp);
        grown += n > 0 ? ESCAPE_LEN - n : 0;
        i += n > 0 ? n : text[i] == '\\' ? copy_escape(text + i, len - i, NULL) : 1;
    }
    char *out = malloc(len + grown + 1);
    if (out == NULL)
        return NULL;
    static const char HEX[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        if (text[i] == '\\') { /* an escape jansson wrote: kept whole */
            size_t n = copy_escape(text + i, len - i, out + o);
            o += n;
            i += n;
            continue;
        }
        uint32_t cp = 0;
        size_t n = active_at(s + i, len - i, &cp);
        if (n == 0) {
            out[o++] = text[i++];
            continue;
        }
        out[o++] = '\\';
        out[o++] = 'u';
        for (int k = 0; k < 4; k++)
            out[o++] = HEX[(cp >> (12 - 4 * k)) & 15];
        i += n;
    }
    out[o] = '\0';
    return out;
}

char *json_out_dumps(const json_t *value, size_t flags)
{
    char *raw = json_dumps(value, flags);
    if (raw == NULL)
        return NULL;
    char *out = json_out_escape(raw, strlen(raw));
    free(raw);
    return out;
}

int json_out_line(FILE *f, const json_t *value, size_t flags)
{
    char *text = json_out_dumps(value, flags);
    if (text == NULL)
        return -1;
    bool ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    free(text);
    return ok ? 0 : -1;
}

char *json_text_as_line(char *text, size_t *len)
{
    if (text == NULL)
        return NULL;
    size_t n = strlen(text);
    char *line = realloc(text, n + 2);
    if (line == NULL) {
        free(text);
        return NULL;
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    if (len != NULL)
        *len = n + 1;
    return line;
}
