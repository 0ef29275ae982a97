#include "base/json_fields.h"

#include "base/terminal_chars.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void field_fail_msg(struct field_check *c, const char *path, const char *fmt, ...)
{
    if (c->err == NULL || c->cap == 0)
        return;
    int n = c->file != NULL ? snprintf(c->err, c->cap, "%s: %s%s", c->file, path,
                                       path[0] != '\0' ? ": " : "")
                            : snprintf(c->err, c->cap, "%s: ", path);
    if (n >= 0 && (size_t)n < c->cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + n, c->cap - (size_t)n, fmt, ap);
        va_end(ap);
    }
    for (char *p = c->err; *p != '\0'; p++) /* one line, whatever was formatted */
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

const char *field_show(const char *s, bool quote, char *buf, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    if (cap < 16) {
        if (cap > 0)
            buf[0] = '\0';
        return buf;
    }
    if (quote)
        buf[o++] = '"';
    size_t i = 0, len = strlen(s);
    /* One piece per character, at most 6 bytes ("\u202e"), never cut inside one. */
    while (i < FIELD_SHOW_BYTES && i < len && o + 8 < cap) {
        uint32_t cp = 0;
        size_t n = terminal_utf8_char((const unsigned char *)s + i, len - i, &cp);
        if (n == 0) { /* not UTF-8: the byte, as hex */
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[(unsigned char)s[i] >> 4];
            buf[o++] = hex[(unsigned char)s[i] & 15];
            n = 1;
        } else if ((quote && (cp == '"' || cp == '\\')) || cp == '\n' || cp == '\r' ||
                   cp == '\t') {
            buf[o++] = '\\';
            buf[o++] = s[i];
            if (cp == '\n')
                buf[o - 1] = 'n';
            else if (cp == '\r')
                buf[o - 1] = 'r';
            else if (cp == '\t')
                buf[o - 1] = 't';
        } else if (terminal_char_active(cp)) { /* as JSON and term_text spell it */
            buf[o++] = '\\';
            buf[o++] = 'u';
            for (int k = 0; k < 4; k++)
                buf[o++] = hex[(cp >> (12 - 4 * k)) & 15];
        } else {
            memcpy(buf + o, s + i, n);
            o += n;
        }
        i += n;
    }
    if (quote)
        buf[o++] = '"';
    if (s[i] != '\0') {
        buf[o++] = '.';
        buf[o++] = '.';
        buf[o++] = '.';
    }
    buf[o] = '\0';
    return buf;
}

static bool plain_key(const char *key)
{
    size_t n = strlen(key);
    if (n == 0 || n > FIELD_SHOW_BYTES)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = key[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-'))
            return false;
    }
    return true;
}

const char *field_key_path(char *buf, size_t cap, const char *path, const char *key)
{
    char shown[FIELD_SHOW_CAP];
    buf[0] = '\0';
    int n = snprintf(buf, cap, "%s%s%s", path, path[0] != '\0' ? "." : "",
                     plain_key(key) ? key : field_show(key, true, shown, sizeof shown));
    return n >= 0 ? buf : path;
}

const char *field_index_path(char *buf, size_t cap, const char *path, size_t i)
{
    char idx[24];
    int k = snprintf(idx, sizeof idx, "[%zu]", i);
    size_t plen = strlen(path);
    if (k < 0 || plen + (size_t)k >= cap) { /* cannot happen with our paths: keep the path */
        size_t m = plen < cap - 1 ? plen : cap - 1;
        memcpy(buf, path, m);
        buf[m] = '\0';
        return buf;
    }
    memcpy(buf, path, plen);
    memcpy(buf + plen, idx, (size_t)k + 1);
    return buf;
}

char *field_dup(struct field_check *c, const char *path, const char *s)
{
    char *d = strdup(s);
    if (d == NULL)
        field_fail_msg(c, path, "out of memory");
    return d;
}

int field_want_object(struct field_check *c, json_t *v, const char *path,
                      const char *const *allowed)
{
    if (!json_is_object(v))
        return field_fail(c, path, "must be an object");
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val) {
        (void)val;
        bool known = false;
        for (size_t i = 0; allowed[i] != NULL && !known; i++)
            known = strcmp(allowed[i], key) == 0;
        if (!known) {
            char sub[FIELD_PATH_CAP];
            return field_fail(c, field_key_path(sub, sizeof sub, path, key), "unknown field");
        }
    }
    return 0;
}

int field_want_int(struct field_check *c, const json_t *v, const char *path, long long lo,
                   long long hi, long long *out)
{
    if (!json_is_integer(v))
        return field_fail(c, path, "must be an integer");
    long long x = json_integer_value(v);
    if (x < lo || x > hi) {
        if (lo == hi)
            return field_fail(c, path, "must be %lld, not %lld", lo, x);
        if (hi == LLONG_MAX)
            return field_fail(c, path, "must be at least %lld, not %lld", lo, x);
        return field_fail(c, path, "must be between %lld and %lld, not %lld", lo, hi, x);
    }
    *out = x;
    return 0;
}

int field_want_shown_text(struct field_check *c, const char *path, const char *s, size_t len,
                          bool lines_ok)
{
    uint32_t cp = 0;
    long at = terminal_chars_find(s, len, lines_ok, &cp);
    if (at < 0)
        return 0;
    const char *kind = terminal_char_kind(cp);
    return field_fail(c, path, "holds %s (U+%04X) at byte %ld%s",
                      kind != NULL ? kind : "a byte that is not UTF-8", (unsigned)cp, at,
                      lines_ok ? "" : " (one line of text)");
}

json_t *field_load_document(struct field_check *c, const char *path, const char *bytes,
                            size_t len, size_t flags)
{
    json_error_t je;
    json_t *root = json_loadb(bytes, len, JSON_REJECT_DUPLICATES | flags, &je);
    if (root != NULL)
        return root;
    /* jansson checks every byte's UTF-8 as it reads (overlongs, surrogates, beyond
     * U+10FFFF), and names that failure by its code. */
    if (json_error_code(&je) == json_error_invalid_utf8)
        field_fail_msg(c, path, "not valid UTF-8");
    else {
        char shown[FIELD_SHOW_CAP];
        field_fail_msg(c, path, "invalid JSON at line %d column %d: %s", je.line, je.column,
                       field_show(je.text, false, shown, sizeof shown));
    }
    return NULL;
}
