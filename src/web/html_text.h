/* The page's text, built in one growing buffer, and the one escaper of everything a
 * script, a worker or the store chose (results, errors, journal arguments, flow ids):
 * html_text() writes it as HTML text, so no byte of it can open a tag, an attribute,
 * an entity or a comment. The page's own markup goes in with html_raw(). */
#ifndef BASAL_WEB_HTML_TEXT_H
#define BASAL_WEB_HTML_TEXT_H

#include <stdbool.h>
#include <stddef.h>

struct html {
    char *text;  /* NUL-terminated, malloc'd */
    size_t len;
    size_t cap;
    bool failed; /* an allocation failed: the page is not served */
};

void html_init(struct html *h);
void html_free(struct html *h);
/* Takes the text (the caller frees it); NULL if an append failed. */
char *html_take(struct html *h, size_t *len);

/* The page's own markup, verbatim. */
void html_raw(struct html *h, const char *markup);
/* printf-style markup: only for numbers and the page's own constant strings. */
void html_rawf(struct html *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Untrusted text, escaped: & < > " ' as entities; a byte that is not part of valid
 * UTF-8, a NUL or a control character other than tab and newline as U+FFFD, so the
 * page is always valid UTF-8. Safe in element content and in a double- or
 * single-quoted attribute value. NULL text writes nothing. */
void html_text(struct html *h, const char *text);
/* The same, of len bytes that may hold NUL. */
void html_text_n(struct html *h, const char *text, size_t len);

#endif
