/* Tool input schemas: the subset's check and the validator (see tool_schema.h). */
#include "host/tool_schema.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    unsigned bit;
} TYPE_NAMES[] = {
    {"object", TOOL_TYPE_OBJECT},   {"array", TOOL_TYPE_ARRAY},     {"string", TOOL_TYPE_STRING},
    {"number", TOOL_TYPE_NUMBER},   {"integer", TOOL_TYPE_INTEGER}, {"boolean", TOOL_TYPE_BOOLEAN},
    {"null", TOOL_TYPE_NULL},
};
#define TYPE_COUNT (sizeof TYPE_NAMES / sizeof TYPE_NAMES[0])

static unsigned type_bit(const char *name)
{
    for (size_t i = 0; i < TYPE_COUNT; i++)
        if (strcmp(TYPE_NAMES[i].name, name) == 0)
            return TYPE_NAMES[i].bit;
    return 0;
}

unsigned tool_schema_types(const json_t *schema)
{
    const json_t *t = json_object_get(schema, "type");
    if (json_is_string(t))
        return type_bit(json_string_value(t));
    unsigned bits = 0;
    size_t i;
    const json_t *e;
    json_array_foreach(t, i, e)
        if (json_is_string(e))
            bits |= type_bit(json_string_value(e));
    return bits;
}

/* ---- checking a schema -------------------------------------------------------------- */

static const char *const KEYWORDS[] = {
    "type",      "description", "title",    "enum",       "minimum",  "maximum",
    "minLength", "maxLength",   "minItems", "maxItems",   "items",    "properties",
    "required",  "additionalProperties",    NULL,
};

static int check_schema(struct field_check *c, json_t *schema, const char *path, unsigned depth);

static int check_type(struct field_check *c, const json_t *t, const char *path)
{
    if (json_is_string(t)) {
        if (type_bit(json_string_value(t)) == 0)
            return field_fail(c, path, "must be one of object, array, string, number, integer,"
                              " boolean, null");
        return 0;
    }
    if (!json_is_array(t) || json_array_size(t) == 0)
        return field_fail(c, path, "must be a type name or a non-empty list of type names");
    size_t i;
    const json_t *e;
    json_array_foreach(t, i, e) {
        char at[FIELD_PATH_CAP];
        field_index_path(at, sizeof at, path, i);
        if (!json_is_string(e) || type_bit(json_string_value(e)) == 0)
            return field_fail(c, at, "must be one of object, array, string, number, integer,"
                              " boolean, null");
        for (size_t j = 0; j < i; j++)
            if (json_equal(json_array_get(t, j), e))
                return field_fail(c, at, "listed twice");
    }
    return 0;
}

static int check_text(struct field_check *c, const json_t *v, const char *path)
{
    if (!json_is_string(v))
        return field_fail(c, path, "must be a string");
    if (json_string_length(v) > TOOL_SCHEMA_TEXT_MAX ||
        strlen(json_string_value(v)) != json_string_length(v))
        return field_fail(c, path, "must be at most %u bytes without NUL", TOOL_SCHEMA_TEXT_MAX);
    return field_want_shown_text(c, path, json_string_value(v), json_string_length(v), true);
}

/* Two JSON values equal as JSON Schema compares them (1 equals 1.0). */
static bool values_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal(a, b) != 0;
}

static int check_enum(struct field_check *c, const json_t *v, const char *path)
{
    size_t n = json_array_size(v);
    if (!json_is_array(v) || n == 0 || n > TOOL_SCHEMA_MAX_ENUM)
        return field_fail(c, path, "must be a list of 1 to %u values", TOOL_SCHEMA_MAX_ENUM);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(v, i);
        char at[FIELD_PATH_CAP];
        field_index_path(at, sizeof at, path, i);
        if (!json_is_string(e) && !json_is_number(e) && !json_is_boolean(e) && !json_is_null(e))
            return field_fail(c, at, "must be a string, a number, true, false or null");
        if (json_is_string(e) && strlen(json_string_value(e)) != json_string_length(e))
            return field_fail(c, at, "must not contain NUL");
        for (size_t j = 0; j < i; j++)
            if (values_equal(json_array_get(v, j), e))
                return field_fail(c, at, "listed twice");
    }
    return 0;
}

/* A pair of bounds (minimum/maximum, minLength/maxLength, ...): each of the right
 * form, the lower not above the upper. */
static int check_bounds(struct field_check *c, json_t *schema, const char *path,
                        const char *lo_key, const char *hi_key, bool counts)
{
    const json_t *lo = json_object_get(schema, lo_key), *hi = json_object_get(schema, hi_key);
    char lo_path[FIELD_PATH_CAP], hi_path[FIELD_PATH_CAP];
    field_key_path(lo_path, sizeof lo_path, path, lo_key);
    field_key_path(hi_path, sizeof hi_path, path, hi_key);
    long long ignored;
    if (counts) {
        if (lo != NULL && field_want_int(c, lo, lo_path, 0, INT32_MAX, &ignored) != 0)
            return -1;
        if (hi != NULL && field_want_int(c, hi, hi_path, 0, INT32_MAX, &ignored) != 0)
            return -1;
    } else {
        if (lo != NULL && (!json_is_number(lo) || !isfinite(json_number_value(lo))))
            return field_fail(c, lo_path, "must be a number");
        if (hi != NULL && (!json_is_number(hi) || !isfinite(json_number_value(hi))))
            return field_fail(c, hi_path, "must be a number");
    }
    if (lo != NULL && hi != NULL && json_number_value(lo) > json_number_value(hi))
        return field_fail(c, lo_path, "is above %s", hi_key);
    return 0;
}

static int check_properties(struct field_check *c, json_t *props, const char *path,
                            unsigned depth)
{
    if (!json_is_object(props))
        return field_fail(c, path, "must be an object of schemas");
    const char *key;
    json_t *sub;
    json_object_foreach(props, key, sub) {
        char at[FIELD_PATH_CAP];
        field_key_path(at, sizeof at, path, key);
        /* A property's name is shown in declarations and refusals: one plain line. */
        if (field_want_shown_text(c, at, key, strlen(key), false) != 0 ||
            check_schema(c, sub, at, depth + 1) != 0)
            return -1;
    }
    return 0;
}

static int check_required(struct field_check *c, const json_t *v, const char *path)
{
    if (!json_is_array(v))
        return field_fail(c, path, "must be a list of property names");
    size_t i;
    const json_t *e;
    json_array_foreach(v, i, e) {
        char at[FIELD_PATH_CAP];
        field_index_path(at, sizeof at, path, i);
        if (!json_is_string(e) || strlen(json_string_value(e)) != json_string_length(e))
            return field_fail(c, at, "must be a property name (a string without NUL)");
        for (size_t j = 0; j < i; j++)
            if (json_equal(json_array_get(v, j), e))
                return field_fail(c, at, "listed twice");
    }
    return 0;
}

static int check_schema(struct field_check *c, json_t *schema, const char *path, unsigned depth)
{
    if (depth > TOOL_SCHEMA_MAX_DEPTH)
        return field_fail(c, path, "schemas nest more than %u deep", TOOL_SCHEMA_MAX_DEPTH);
    if (!json_is_object(schema))
        return field_fail(c, path, "must be a schema (a JSON object)");
    /* Keywords outside the subset are refused rather than ignored: the operator would
     * believe them enforced. */
    const char *key;
    json_t *v;
    json_object_foreach(schema, key, v) {
        bool known = false;
        for (size_t i = 0; KEYWORDS[i] != NULL && !known; i++)
            known = strcmp(KEYWORDS[i], key) == 0;
        if (!known) {
            char at[FIELD_PATH_CAP];
            return field_fail(c, field_key_path(at, sizeof at, path, key),
                              "not a keyword of the schema subset basal enforces"
                              " (docs/codemode.md)");
        }
    }
    char at[FIELD_PATH_CAP];
    if ((v = json_object_get(schema, "type")) != NULL &&
        check_type(c, v, field_key_path(at, sizeof at, path, "type")) != 0)
        return -1;
    if ((v = json_object_get(schema, "description")) != NULL &&
        check_text(c, v, field_key_path(at, sizeof at, path, "description")) != 0)
        return -1;
    if ((v = json_object_get(schema, "title")) != NULL &&
        check_text(c, v, field_key_path(at, sizeof at, path, "title")) != 0)
        return -1;
    if ((v = json_object_get(schema, "enum")) != NULL &&
        check_enum(c, v, field_key_path(at, sizeof at, path, "enum")) != 0)
        return -1;
    if (check_bounds(c, schema, path, "minimum", "maximum", false) != 0 ||
        check_bounds(c, schema, path, "minLength", "maxLength", true) != 0 ||
        check_bounds(c, schema, path, "minItems", "maxItems", true) != 0)
        return -1;
    if ((v = json_object_get(schema, "items")) != NULL &&
        check_schema(c, v, field_key_path(at, sizeof at, path, "items"), depth + 1) != 0)
        return -1;
    if ((v = json_object_get(schema, "properties")) != NULL &&
        check_properties(c, v, field_key_path(at, sizeof at, path, "properties"), depth) != 0)
        return -1;
    if ((v = json_object_get(schema, "required")) != NULL &&
        check_required(c, v, field_key_path(at, sizeof at, path, "required")) != 0)
        return -1;
    if ((v = json_object_get(schema, "additionalProperties")) != NULL && !json_is_boolean(v) &&
        check_schema(c, v, field_key_path(at, sizeof at, path, "additionalProperties"),
                     depth + 1) != 0)
        return -1;
    return 0;
}

int tool_schema_check(struct field_check *c, json_t *schema, const char *path)
{
    return check_schema(c, schema, path, 1);
}

/* ---- validating a value ------------------------------------------------------------- */

/* The path of the value being looked at, "$.items[2].name", grown and cut back as the
 * walk descends and returns. A path too long for the buffer ends in "...". */
struct walk {
    char path[256];
    size_t len;
    char *err;
    size_t err_cap;
};

#define SHOWN_KEY_MAX 48 /* bytes of a property name shown in a path */

static size_t path_push(struct walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t path_push(struct walk *w, const char *fmt, ...)
{
    size_t before = w->len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(w->path + w->len, sizeof w->path - w->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof w->path - w->len) {
        memcpy(w->path + sizeof w->path - 4, "...", 4); /* full: the tail is cut */
        w->len = sizeof w->path - 1;
    } else {
        w->len += (size_t)n;
    }
    return before;
}

static void path_pop(struct walk *w, size_t before)
{
    w->len = before;
    w->path[before] = '\0';
}

static bool identifier_key(const char *key)
{
    size_t n = strlen(key);
    if (n == 0 || n > SHOWN_KEY_MAX || (key[0] >= '0' && key[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = key[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '$'))
            return false;
    }
    return true;
}

/* Descends into property key: ".key", or ["key"] with the key escaped (printable ASCII
 * kept, anything else \xNN: an input's keys are the script's text). */
static size_t push_key(struct walk *w, const char *key)
{
    if (identifier_key(key))
        return path_push(w, ".%s", key);
    char shown[FIELD_SHOW_CAP];
    return path_push(w, "[%s]", field_show(key, true, shown, sizeof shown));
}

__attribute__((format(printf, 2, 3))) static bool refuse(struct walk *w, const char *fmt, ...)
{
    if (w->err == NULL || w->err_cap == 0)
        return false;
    int n = snprintf(w->err, w->err_cap, "%s: ", w->path);
    if (n >= 0 && (size_t)n < w->err_cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->err + n, w->err_cap - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return false;
}

static const char *value_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER:
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return "value";
}

static bool is_integral(const json_t *v)
{
    if (json_is_integer(v))
        return true;
    double d = json_real_value(v);
    return json_is_real(v) && isfinite(d) && floor(d) == d;
}

static bool has_type(const json_t *v, unsigned types)
{
    return ((types & TOOL_TYPE_OBJECT) && json_is_object(v)) ||
           ((types & TOOL_TYPE_ARRAY) && json_is_array(v)) ||
           ((types & TOOL_TYPE_STRING) && json_is_string(v)) ||
           ((types & TOOL_TYPE_NUMBER) && json_is_number(v)) ||
           ((types & TOOL_TYPE_INTEGER) && is_integral(v)) ||
           ((types & TOOL_TYPE_BOOLEAN) && json_is_boolean(v)) ||
           ((types & TOOL_TYPE_NULL) && json_is_null(v));
}

static void types_text(unsigned types, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < TYPE_COUNT; i++) {
        if ((types & TYPE_NAMES[i].bit) == 0)
            continue;
        int n = snprintf(buf + o, cap - o, "%s%s", o > 0 ? " or " : "", TYPE_NAMES[i].name);
        if (n < 0 || (size_t)n >= cap - o)
            return;
        o += (size_t)n;
    }
}

/* A number as people write it: whole numbers without a fraction. */
static const char *number_text(double d, char *buf, size_t cap)
{
    if (isfinite(d) && floor(d) == d && fabs(d) < 1e15)
        snprintf(buf, cap, "%.0f", d);
    else
        snprintf(buf, cap, "%.17g", d);
    return buf;
}

/* Characters (code points) of a UTF-8 string. */
static size_t code_points(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80)
            n++;
    return n;
}

static bool check_enum_value(struct walk *w, const json_t *allowed, const json_t *v)
{
    size_t i;
    const json_t *e;
    json_array_foreach(allowed, i, e)
        if (values_equal(e, v))
            return true;
    /* Name some of the allowed values: they are the operator's, not the script's. */
    char list[160];
    const size_t room = sizeof list - sizeof ", ..."; /* always left for the ellipsis */
    size_t o = 0;
    list[0] = '\0';
    json_array_foreach(allowed, i, e) {
        char *text = json_dumps(e, JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
        size_t need = text != NULL ? strlen(text) + (i > 0 ? 2 : 0) : room + 1;
        if (o + need > room) {
            free(text);
            snprintf(list + o, sizeof list - o, "%s...", o > 0 ? ", " : "");
            break;
        }
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i > 0 ? ", " : "", text);
        free(text);
    }
    return refuse(w, "not one of the allowed values (%s)", list);
}

static bool check_bound(struct walk *w, const json_t *schema, const char *key, double got,
                        bool lower, const char *verb, const char *what)
{
    const json_t *bound = json_object_get(schema, key);
    if (bound == NULL)
        return true;
    double b = json_number_value(bound);
    if (lower ? got >= b : got <= b)
        return true;
    char bt[40], gt[40];
    number_text(b, bt, sizeof bt);
    number_text(got, gt, sizeof gt);
    return refuse(w, "must %s %s %s%s, got %s", verb, lower ? "at least" : "at most", bt, what,
                  gt);
}

static bool validate_at(struct walk *w, const json_t *schema, json_t *v);

static bool validate_object(struct walk *w, const json_t *schema, json_t *v)
{
    const json_t *required = json_object_get(schema, "required");
    const json_t *props = json_object_get(schema, "properties");
    const json_t *extra = json_object_get(schema, "additionalProperties");
    size_t i;
    const json_t *name;
    json_array_foreach(required, i, name) {
        const char *key = json_string_value(name);
        if (json_object_get(v, key) == NULL) {
            size_t at = push_key(w, key);
            refuse(w, "missing (required)");
            path_pop(w, at);
            return false;
        }
    }
    const char *key;
    json_t *member;
    json_object_foreach(v, key, member) {
        const json_t *sub = json_object_get(props, key);
        if (sub == NULL && json_is_false(extra)) {
            size_t at = push_key(w, key);
            refuse(w, "not allowed (additionalProperties is false)");
            path_pop(w, at);
            return false;
        }
        if (sub == NULL && json_is_object(extra))
            sub = extra;
        if (sub == NULL)
            continue;
        size_t at = push_key(w, key);
        bool ok = validate_at(w, sub, member);
        path_pop(w, at);
        if (!ok)
            return false;
    }
    return true;
}

static bool validate_array(struct walk *w, const json_t *schema, json_t *v)
{
    double n = (double)json_array_size(v);
    if (!check_bound(w, schema, "minItems", n, true, "have", " items") ||
        !check_bound(w, schema, "maxItems", n, false, "have", " items"))
        return false;
    const json_t *items = json_object_get(schema, "items");
    if (items == NULL)
        return true;
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        size_t at = path_push(w, "[%zu]", i);
        bool ok = validate_at(w, items, e);
        path_pop(w, at);
        if (!ok)
            return false;
    }
    return true;
}

static bool validate_at(struct walk *w, const json_t *schema, json_t *v)
{
    unsigned types = tool_schema_types(schema);
    if (types != 0 && !has_type(v, types)) {
        char want[96];
        types_text(types, want, sizeof want);
        return refuse(w, "expected %s, got %s", want, value_type_name(v));
    }
    const json_t *allowed = json_object_get(schema, "enum");
    if (allowed != NULL && !check_enum_value(w, allowed, v))
        return false;
    if (json_is_string(v)) {
        double chars = (double)code_points(json_string_value(v), json_string_length(v));
        return check_bound(w, schema, "minLength", chars, true, "be", " characters long") &&
               check_bound(w, schema, "maxLength", chars, false, "be", " characters long");
    }
    if (json_is_number(v))
        return check_bound(w, schema, "minimum", json_number_value(v), true, "be", "") &&
               check_bound(w, schema, "maximum", json_number_value(v), false, "be", "");
    if (json_is_array(v))
        return validate_array(w, schema, v);
    if (json_is_object(v))
        return validate_object(w, schema, v);
    return true;
}

bool tool_schema_validate(const json_t *schema, json_t *value, char *err, size_t err_cap)
{
    struct walk w;
    memset(&w, 0, sizeof w);
    w.err = err;
    w.err_cap = err_cap;
    path_push(&w, "$");
    if (err != NULL && err_cap > 0)
        err[0] = '\0';
    return validate_at(&w, schema, value);
}
