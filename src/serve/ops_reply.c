/* ops_reply: see serve/ops_reply.h. */
#include "serve/ops_reply.h"
#include "proto/utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *ops_reply_ok(json_t *data)
{
    json_t *reply = json_object();
    if (reply == NULL) {
        json_decref(data);
        return NULL;
    }
    json_object_set_new(reply, "ok", json_true());
    json_object_set_new(reply, "data", data != NULL ? data : json_null());
    return reply;
}

json_t *ops_reply_error(int exit_status, const char *error)
{
    json_t *reply = json_object();
    if (reply == NULL)
        return NULL;
    json_object_set_new(reply, "ok", json_false());
    json_object_set_new(reply, "exit", json_integer(exit_status));
    json_object_set_new(reply, "error", ops_json_text(error));
    return reply;
}

/* The length of the UTF-8 sequence at p[0..left) if it is well-formed, else 0. */
static size_t utf8_sequence(const unsigned char *p, size_t left)
{
    size_t n = p[0] < 0x80 ? 1 : p[0] >= 0xc2 && p[0] <= 0xdf ? 2
                               : p[0] >= 0xe0 && p[0] <= 0xef ? 3
                               : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
    return n != 0 && n <= left && utf8_valid(p, n) ? n : 0;
}

json_t *ops_json_text(const char *text)
{
    if (text == NULL)
        return json_null();
    size_t len = strlen(text);
    if (utf8_valid((const uint8_t *)text, len))
        return json_stringn(text, len);
    char *shown = malloc(4 * len + 1);
    if (shown == NULL)
        return NULL;
    const unsigned char *p = (const unsigned char *)text;
    size_t at = 0;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_sequence(p + i, len - i);
        if (n == 0) {
            at += (size_t)sprintf(shown + at, "\\x%02x", p[i]);
            i++;
        } else {
            memcpy(shown + at, p + i, n);
            at += n;
            i += n;
        }
    }
    json_t *s = json_stringn(shown, at);
    free(shown);
    return s;
}
