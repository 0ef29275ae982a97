#include "base/json_js.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* Makes every integral real in value that json_int_t holds an integer again. */
static json_t *integers_again(json_t *value)
{
    if (json_is_real(value)) {
        double d = json_real_value(value);
        /* [-2^63, 2^63): both bounds are exact doubles, and so is every double between
         * them that has no fraction. */
        if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
            json_t *integer = json_integer((json_int_t)d);
            if (integer != NULL) {
                json_decref(value);
                return integer;
            }
        }
        return value;
    }
    if (json_is_array(value)) {
        for (size_t i = 0; i < json_array_size(value); i++) {
            json_t *item = json_incref(json_array_get(value, i));
            if (json_array_set_new(value, i, integers_again(item)) != 0)
                return value;
        }
    } else if (json_is_object(value)) {
        const char *key;
        json_t *item;
        void *tmp;
        json_object_foreach_safe (value, tmp, key, item) {
            if (json_object_set_new(value, key, integers_again(json_incref(item))) != 0)
                return value;
        }
    }
    return value;
}

json_t *json_js_loadb(const char *text, size_t len, size_t flags, json_error_t *error)
{
    json_t *value = json_loadb(text, len, flags, error);
    if (value != NULL)
        return value;
    value = json_loadb(text, len, flags | JSON_DECODE_INT_AS_REAL, error);
    return value != NULL ? integers_again(value) : NULL;
}

json_t *json_js_loads(const char *text, size_t flags, json_error_t *error)
{
    json_t *value = json_loads(text, flags, error);
    if (value != NULL)
        return value;
    value = json_loads(text, flags | JSON_DECODE_INT_AS_REAL, error);
    return value != NULL ? integers_again(value) : NULL;
}

static size_t skip_space(const char *text, size_t len, size_t at)
{
    while (at < len && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' ||
                        text[at] == '\r'))
        at++;
    return at;
}

/* The end of the JSON value that starts at `at` (the text is valid JSON). */
static size_t value_end(const char *text, size_t len, size_t at)
{
    size_t depth = 0;
    bool in_string = false;
    for (; at < len; at++) {
        char c = text[at];
        if (in_string) {
            if (c == '\\') {
                at++; /* the escaped character, whatever it is */
            } else if (c == '"') {
                in_string = false;
                if (depth == 0)
                    return at + 1;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            depth++;
        } else if (c == ']' || c == '}') {
            if (depth == 0)
                return at; /* the end of a scalar, at its container's end */
            if (--depth == 0)
                return at + 1;
        } else if (depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
            return at; /* the end of a scalar */
        }
    }
    return at;
}

bool json_js_array_element(const char *text, size_t len, size_t index, size_t *start,
                           size_t *elen)
{
    size_t at = skip_space(text, len, 0);
    if (at >= len || text[at] != '[')
        return false;
    at++;
    for (size_t i = 0;; i++) {
        at = skip_space(text, len, at);
        if (at >= len || text[at] == ']')
            return false;
        size_t end = value_end(text, len, at);
        if (i == index) {
            *start = at;
            *elen = end - at;
            return true;
        }
        at = skip_space(text, len, end);
        if (at >= len || text[at] != ',')
            return false;
        at++;
    }
}

bool json_js_sole_member(const char *text, size_t len, size_t *key_start, size_t *key_len,
                         size_t *value_start, size_t *value_len)
{
    size_t at = skip_space(text, len, 0);
    if (at >= len || text[at] != '{')
        return false;
    at = skip_space(text, len, at + 1);
    if (at >= len || text[at] != '"')
        return false; /* no member */
    size_t end = value_end(text, len, at);
    *key_start = at;
    *key_len = end - at;
    at = skip_space(text, len, end);
    if (at >= len || text[at] != ':')
        return false;
    at = skip_space(text, len, at + 1);
    end = value_end(text, len, at);
    *value_start = at;
    *value_len = end - at;
    at = skip_space(text, len, end);
    return at < len && text[at] == '}'; /* else a ',': more members */
}

char *json_js_compact(const char *text, size_t len)
{
    char *out = malloc(len + 1);
    if (out == NULL)
        return NULL;
    size_t n = 0;
    bool in_string = false;
    for (size_t at = 0; at < len; at++) {
        char c = text[at];
        if (in_string) {
            out[n++] = c;
            if (c == '\\' && at + 1 < len)
                out[n++] = text[++at]; /* the escaped character, whatever it is */
            else if (c == '"')
                in_string = false;
        } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            out[n++] = c;
            in_string = c == '"';
        }
    }
    out[n] = '\0';
    return out;
}
