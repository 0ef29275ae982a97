/* The argument checks the ops commands share, and text as a JSON string
 * (serve/ops_args.h, serve/ops_commands.h). */
#include "serve/ops_args.h"
#include "serve/ops_commands.h"
#include "serve/ops_reply.h"
#include "proto/utf8.h"
#include "store/runs.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad_argument(const char *name, const char *what, json_t **reply)
{
    char line[160];
    snprintf(line, sizeof line, "argument '%s' %s", name, what);
    *reply = ops_reply_error(2, line);
    return -1;
}

int ops_args_only(json_t *args, const char *const *names, json_t **reply)
{
    const char *key;
    const json_t *value;
    json_object_foreach (args, key, value) {
        bool known = false;
        for (size_t i = 0; names[i] != NULL && !known; i++)
            known = strcmp(key, names[i]) == 0;
        if (!known) {
            /* The key is the peer's text: not quoted into the one-line error. */
            *reply = ops_reply_error(2, "unexpected argument");
            return -1;
        }
    }
    return 0;
}

int ops_arg_string(json_t *args, const char *name, bool required, size_t max,
                   const char **out, json_t **reply)
{
    *out = NULL;
    const json_t *v = json_object_get(args, name);
    if (v == NULL)
        return required ? bad_argument(name, "is missing", reply) : 0;
    if (!json_is_string(v))
        return bad_argument(name, "must be a string", reply);
    const char *text = json_string_value(v);
    size_t len = json_string_length(v);
    if (strlen(text) != len)
        return bad_argument(name, "must not hold a NUL", reply);
    if (len == 0 || len > max) {
        char what[64];
        snprintf(what, sizeof what, "must be 1 to %zu bytes", max);
        return bad_argument(name, what, reply);
    }
    *out = text;
    return 0;
}

int ops_arg_integer(json_t *args, const char *name, long long min, long long max,
                    long long *out, json_t **reply)
{
    const json_t *v = json_object_get(args, name);
    if (v == NULL)
        return bad_argument(name, "is missing", reply);
    if (!json_is_integer(v))
        return bad_argument(name, "must be an integer", reply);
    long long n = json_integer_value(v);
    if (n < min || n > max) {
        char what[80];
        snprintf(what, sizeof what, "must be from %lld to %lld", min, max);
        return bad_argument(name, what, reply);
    }
    *out = n;
    return 0;
}

bool ops_cancel_reason_valid(const char *text)
{
    size_t len = strlen(text);
    if (len == 0 || len > RUN_CANCEL_REASON_MAX || !utf8_valid((const uint8_t *)text, len))
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f)
            return false;
    return true;
}

char *ops_json_value(const char *text, char *why, size_t why_cap, bool *out_of_memory)
{
    size_t len = strlen(text);
    *out_of_memory = false;
    if (len > OPS_JSON_VALUE_MAX_BYTES) {
        snprintf(why, why_cap, "is %zu bytes, over %u", len, OPS_JSON_VALUE_MAX_BYTES);
        return NULL;
    }
    if (!utf8_valid((const uint8_t *)text, len)) {
        snprintf(why, why_cap, "is not valid UTF-8");
        return NULL;
    }
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &e);
    if (v == NULL) {
        for (char *p = e.text; *p != '\0'; p++) /* it may quote the value: one line */
            if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
                *p = '?';
        snprintf(why, why_cap, "is not JSON: %s (column %d)", e.text, e.column);
        return NULL;
    }
    char *out = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(v);
    if (out == NULL) {
        *out_of_memory = true;
        snprintf(why, why_cap, "out of memory");
    }
    return out;
}
