#include "base/json_text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct scan {
    const unsigned char *s;
    size_t len, at;
};

static void skip_space(struct scan *c)
{
    while (c->at < c->len) {
        unsigned char b = c->s[c->at];
        if (b != ' ' && b != '\t' && b != '\n' && b != '\r')
            return;
        c->at++;
    }
}

static bool peek(const struct scan *c, unsigned char want)
{
    return c->at < c->len && c->s[c->at] == want;
}

static bool is_digit(unsigned char b)
{
    return b >= '0' && b <= '9';
}

static bool is_hex(unsigned char b)
{
    return is_digit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
}

/* A string, the opening quote at c->at. */
static bool scan_string(struct scan *c)
{
    c->at++;
    while (c->at < c->len) {
        unsigned char b = c->s[c->at++];
        if (b == '"')
            return true;
        if (b < 0x20)
            return false;
        if (b != '\\')
            continue;
        if (c->at >= c->len)
            return false;
        unsigned char e = c->s[c->at++];
        if (e == 'u') {
            if (c->len - c->at < 4)
                return false;
            for (int i = 0; i < 4; i++)
                if (!is_hex(c->s[c->at++]))
                    return false;
        } else if (strchr("\"\\/bfnrt", e) == NULL || e == '\0') {
            return false;
        }
    }
    return false;
}

static size_t digits(struct scan *c)
{
    size_t start = c->at;
    while (c->at < c->len && is_digit(c->s[c->at]))
        c->at++;
    return c->at - start;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool scan_number(struct scan *c)
{
    if (peek(c, '-'))
        c->at++;
    if (peek(c, '0'))
        c->at++;
    else if (digits(c) == 0)
        return false;
    if (peek(c, '.')) {
        c->at++;
        if (digits(c) == 0)
            return false;
    }
    if (peek(c, 'e') || peek(c, 'E')) {
        c->at++;
        if (peek(c, '+') || peek(c, '-'))
            c->at++;
        if (digits(c) == 0)
            return false;
    }
    return true;
}

static bool scan_word(struct scan *c, const char *word)
{
    size_t n = strlen(word);
    if (c->len - c->at < n || memcmp(c->s + c->at, word, n) != 0)
        return false;
    c->at += n;
    return true;
}

/* The open containers, innermost last: '[' or '{'. */
struct nesting {
    unsigned char *open;
    size_t depth, cap;
};

static bool push(struct nesting *n, unsigned char kind)
{
    if (n->depth == n->cap) {
        size_t cap = n->cap == 0 ? 64 : n->cap * 2;
        unsigned char *grown = realloc(n->open, cap);
        if (grown == NULL)
            return false;
        n->open = grown;
        n->cap = cap;
    }
    n->open[n->depth++] = kind;
    return true;
}

/* Where the scanner is in the grammar. */
enum expect {
    EXPECT_VALUE,       /* a value */
    EXPECT_KEY,         /* a member's name, its ':' then a value */
    EXPECT_AFTER_VALUE, /* ',' or the innermost container's end, or the end of the text */
};

static enum expect open_container(struct scan *c, struct nesting *n, bool *ok)
{
    unsigned char kind = c->s[c->at++];
    unsigned char close = kind == '[' ? ']' : '}';
    if (!push(n, kind)) {
        *ok = false;
        return EXPECT_VALUE;
    }
    skip_space(c);
    if (peek(c, close)) {
        c->at++;
        n->depth--;
        return EXPECT_AFTER_VALUE;
    }
    return kind == '[' ? EXPECT_VALUE : EXPECT_KEY;
}

static bool scan_scalar(struct scan *c)
{
    unsigned char b = c->s[c->at];
    if (b == '"')
        return scan_string(c);
    if (b == '-' || is_digit(b))
        return scan_number(c);
    return scan_word(c, "true") || scan_word(c, "false") || scan_word(c, "null");
}

bool json_text_valid(const char *text, size_t len)
{
    if (text == NULL)
        return false;
    struct scan c = {(const unsigned char *)text, len, 0};
    struct nesting n = {NULL, 0, 0};
    enum expect state = EXPECT_VALUE;
    bool ok = true;
    while (ok) {
        skip_space(&c);
        if (state == EXPECT_AFTER_VALUE) {
            if (n.depth == 0)
                break;
            unsigned char inner = n.open[n.depth - 1];
            if (peek(&c, ',')) {
                c.at++;
                state = inner == '[' ? EXPECT_VALUE : EXPECT_KEY;
            } else if (peek(&c, inner == '[' ? ']' : '}')) {
                c.at++;
                n.depth--;
            } else {
                ok = false;
            }
            continue;
        }
        if (c.at >= c.len) {
            ok = false;
            break;
        }
        if (state == EXPECT_KEY) {
            ok = peek(&c, '"') && scan_string(&c);
            skip_space(&c);
            ok = ok && peek(&c, ':');
            c.at++;
            state = EXPECT_VALUE;
            continue;
        }
        unsigned char b = c.s[c.at];
        if (b == '[' || b == '{') {
            state = open_container(&c, &n, &ok);
        } else {
            ok = scan_scalar(&c);
            state = EXPECT_AFTER_VALUE;
        }
    }
    free(n.open);
    return ok && c.at == c.len;
}
