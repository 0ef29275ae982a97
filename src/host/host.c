#include "host/host.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool host_is_sync(const struct host *h, const char *kind)
{
    return h->ops->is_sync != NULL && h->ops->is_sync(h->self, kind);
}

bool host_kind_valid(const char *kind, size_t len)
{
    if (kind == NULL || len == 0 || len > HOST_KIND_MAX_BYTES || kind[0] < 'a' || kind[0] > 'z')
        return false;
    for (size_t i = 1; i < len; i++) {
        char c = kind[i];
        bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!letter && !(c >= '0' && c <= '9') && c != '_' && c != '.')
            return false;
    }
    return true;
}

/* Every value is serialised the same way: compact, any JSON (not only containers),
 * and NUL characters escaped (a JSON text never carries a raw NUL). */
#define HOST_DUMP_FLAGS (JSON_COMPACT | JSON_ENCODE_ANY)

int host_fulfil_text(struct host_settlement *out, const char *json)
{
    char *copy = strdup(json);
    if (copy == NULL)
        return -1;
    out->settlement = PROTO_SETTLEMENT_FULFILLED;
    out->value = copy;
    return 0;
}

int host_fulfil_json(struct host_settlement *out, const void *json_value)
{
    char *text = json_dumps((const json_t *)json_value, HOST_DUMP_FLAGS);
    if (text == NULL)
        return -1;
    out->settlement = PROTO_SETTLEMENT_FULFILLED;
    out->value = text;
    return 0;
}

int host_reject(struct host_settlement *out, const char *code, const char *fmt, ...)
{
    char message[512];
    va_list args;
    va_start(args, fmt);
    (void)vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    json_t *error = json_pack("{s:s, s:s}", "code", code, "message", message);
    if (error == NULL)
        return -1;
    char *text = json_dumps(error, HOST_DUMP_FLAGS);
    json_decref(error);
    if (text == NULL)
        return -1;
    out->settlement = PROTO_SETTLEMENT_REJECTED;
    out->value = text;
    return 0;
}

void host_settlement_free(struct host_settlement *s)
{
    free(s->value);
    s->value = NULL;
}

void host_settlement_code(const struct host_settlement *s, char *code, size_t cap)
{
    code[0] = '\0';
    if (s->settlement != PROTO_SETTLEMENT_REJECTED || s->value == NULL)
        return;
    json_t *v = json_loads(s->value, 0, NULL);
    const char *c = json_string_value(json_object_get(v, "code"));
    snprintf(code, cap, "%s", c != NULL ? c : "");
    json_decref(v);
}
