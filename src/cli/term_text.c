/* Escaping for terminals: see cli/term_text.h. */
#include "cli/term_text.h"

#include "base/terminal_chars.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* The piece src[0..avail) begins with, into piece (TERM_PIECE_MAX + 1 bytes); its
 * length in *piece_len. Returns how many source bytes it stands for. */
static size_t next_piece(const unsigned char *src, size_t avail, unsigned flags, char *piece,
                         size_t *piece_len)
{
    static const char HEX[] = "0123456789abcdef";
    unsigned char b = src[0];
    if (b == '\n' && (flags & TERM_KEEP_NEWLINES) != 0) {
        piece[0] = '\n';
        *piece_len = 1;
        return 1;
    }
    if (b == '\n' || b == '\r' || b == '\t') {
        piece[0] = '\\';
        piece[1] = 't';
        if (b == '\n')
            piece[1] = 'n';
        else if (b == '\r')
            piece[1] = 'r';
        *piece_len = 2;
        return 1;
    }
    uint32_t cp = 0;
    size_t n = terminal_utf8_char(src, avail, &cp);
    if (n == 0) { /* not UTF-8: the byte alone, in hex */
        piece[0] = '\\';
        piece[1] = 'x';
        piece[2] = HEX[b >> 4];
        piece[3] = HEX[b & 15];
        *piece_len = 4;
        return 1;
    }
    if (terminal_char_active(cp)) { /* as JSON spells it: one style for every output */
        piece[0] = '\\';
        piece[1] = 'u';
        for (int k = 0; k < 4; k++)
            piece[2 + k] = HEX[(cp >> (12 - 4 * k)) & 15];
        *piece_len = 6;
        return n;
    }
    memcpy(piece, src, n);
    *piece_len = n;
    return n;
}

size_t term_escape(char *dst, size_t cap, const char *src, size_t len, unsigned flags)
{
    size_t used = 0, i = 0;
    if (cap == 0)
        return 0;
    while (i < len) {
        char piece[TERM_PIECE_MAX + 1];
        size_t piece_len = 0;
        size_t n = next_piece((const unsigned char *)src + i, len - i, flags, piece, &piece_len);
        if (piece_len >= cap - used)
            break;
        memcpy(dst + used, piece, piece_len);
        used += piece_len;
        i += n;
    }
    dst[used] = '\0';
    return i;
}

const char *term_show(char *dst, size_t cap, const char *src, unsigned flags)
{
    if (cap < 4) {
        if (cap > 0)
            dst[0] = '\0';
        return dst;
    }
    size_t len = src != NULL ? strlen(src) : 0;
    if (term_escape(dst, cap, src != NULL ? src : "", len, flags) < len) {
        /* Cut again with room for the marker, still never inside a piece. */
        term_escape(dst, cap - 3, src, len, flags);
        size_t at = strlen(dst);
        memcpy(dst + at, "...", 4);
    }
    return dst;
}

void term_put(FILE *f, const char *src, size_t len, unsigned flags)
{
    char chunk[512];
    size_t i = 0;
    while (i < len) {
        size_t n = term_escape(chunk, sizeof chunk, src + i, len - i, flags);
        fputs(chunk, f);
        i += n;
    }
}

void term_puts(FILE *f, const char *text, unsigned flags)
{
    if (text != NULL)
        term_put(f, text, strlen(text), flags);
}

void term_put_lines(FILE *f, const char *text, const char *continuation)
{
    if (text == NULL)
        return;
    for (const char *line = text; *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
        term_put(f, line, len, 0);
        if (end == NULL)
            return;
        fputc('\n', f);
        line = end + 1;
        if (*line != '\0')
            fputs(continuation, f);
    }
}

void term_error_line(const char *what, const char *text)
{
    fprintf(stderr, "ck-basal %s: ", what);
    term_puts(stderr, text, 0);
    fputc('\n', stderr);
}
