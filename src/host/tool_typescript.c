/* TypeScript declarations of the tool catalog (see tool_typescript.h). */
#include "host/tool_typescript.h"

#include "host/tool_schema.h"
#include "base/json_out.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing text; once an allocation failed, every later write is dropped. */
struct text {
    char *buf;
    size_t len, cap;
    bool failed;
};

static void put_n(struct text *t, const char *s, size_t n)
{
    if (t->failed)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap == 0 ? 4096 : t->cap;
        while (t->len + n + 1 > cap)
            cap *= 2;
        char *grown = realloc(t->buf, cap);
        if (grown == NULL) {
            t->failed = true;
            return;
        }
        t->buf = grown;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

static void put(struct text *t, const char *s)
{
    put_n(t, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void putf(struct text *t, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        t->failed = true;
    else
        put_n(t, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static void indent(struct text *t, unsigned level)
{
    for (unsigned i = 0; i < level; i++)
        put(t, "  ");
}

/* A value as a JSON literal, non-ASCII escaped (a valid TypeScript literal). */
static void put_literal(struct text *t, const json_t *v)
{
    char *s = json_out_dumps(v, JSON_ENCODE_ANY | JSON_ENSURE_ASCII | JSON_COMPACT);
    if (s == NULL) {
        t->failed = true;
        return;
    }
    put(t, s);
    free(s);
}

/* The code point of the UTF-8 sequence at s (valid UTF-8), and its length. */
static uint32_t decode(const unsigned char *s, size_t *n)
{
    if (s[0] < 0x80) {
        *n = 1;
        return s[0];
    }
    if ((s[0] & 0xe0) == 0xc0) {
        *n = 2;
        return ((uint32_t)(s[0] & 0x1f) << 6) | (s[1] & 0x3f);
    }
    if ((s[0] & 0xf0) == 0xe0) {
        *n = 3;
        return ((uint32_t)(s[0] & 0x0f) << 12) | ((uint32_t)(s[1] & 0x3f) << 6) | (s[2] & 0x3f);
    }
    *n = 4;
    return ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3f) << 12) |
           ((uint32_t)(s[2] & 0x3f) << 6) | (s[3] & 0x3f);
}

/* Characters that reorder text on screen (Trojan Source): shown, never applied. */
static bool is_bidi_control(uint32_t cp)
{
    return cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

/* One line of operator text inside a JSDoc comment: no "*" "/" pair can end the
 * comment, control characters become spaces, bidi controls \u{...}. Stops at '\n'
 * (returned: the rest, or NULL at the end). */
static const char *put_doc_line(struct text *t, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p != '\0' && *p != '\n') {
        size_t n;
        uint32_t cp = decode(p, &n);
        if (cp == '*' && p[1] == '/') {
            put(t, "*\\/");
            p += 2;
            continue;
        }
        if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) || cp == 0x2028 || cp == 0x2029)
            put(t, " ");
        else if (is_bidi_control(cp))
            putf(t, "\\u{%04X}", (unsigned)cp);
        else
            put_n(t, (const char *)p, n);
        p += n;
    }
    return *p == '\n' ? (const char *)p + 1 : NULL;
}

/* Operator text as JSDoc lines at level: " * line". */
static void put_doc_text(struct text *t, unsigned level, const char *s)
{
    while (s != NULL) {
        indent(t, level);
        put(t, " * ");
        s = put_doc_line(t, s);
        put(t, "\n");
    }
}

static bool is_identifier(const char *s)
{
    if (s[0] == '\0' || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (const char *p = s; *p != '\0'; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '$'))
            return false;
    return true;
}

/* The members TypeScript gives every object (lib.es5.d.ts, interface Object). A value
 * that leaves out an optional property of one of these names is checked against the
 * inherited member instead ("Type 'Function' is not assignable to type 'string'"), so
 * such a property's type also admits that member: a function is what JSON leaves out
 * of the input, which is then the input without the property, as the schema allows. */
static bool inherited_member(const char *key)
{
    static const char *const NAMES[] = {"constructor",   "toString",      "toLocaleString",
                                        "valueOf",       "hasOwnProperty", "isPrototypeOf",
                                        "propertyIsEnumerable", NULL};
    for (size_t i = 0; NAMES[i] != NULL; i++)
        if (strcmp(key, NAMES[i]) == 0)
            return true;
    return false;
}

static void number_text(double d, char *buf, size_t cap)
{
    if (floor(d) == d && fabs(d) < 1e15)
        snprintf(buf, cap, "%.0f", d);
    else
        snprintf(buf, cap, "%.17g", d);
}

/* One pair of bounds in words, appended to buf: "length 1 to 20", "at least 0". */
static void bound_pair(const json_t *schema, const char *lo_key, const char *hi_key,
                       const char *what, char *buf, size_t cap)
{
    const json_t *lo = json_object_get(schema, lo_key), *hi = json_object_get(schema, hi_key);
    if (lo == NULL && hi == NULL)
        return;
    char a[40] = "", b[40] = "", part[128];
    if (lo != NULL)
        number_text(json_number_value(lo), a, sizeof a);
    if (hi != NULL)
        number_text(json_number_value(hi), b, sizeof b);
    if (lo != NULL && hi != NULL)
        snprintf(part, sizeof part, "%s%s to %s", what, a, b);
    else
        snprintf(part, sizeof part, "%s%s %s", what, lo != NULL ? "at least" : "at most",
                 lo != NULL ? a : b);
    size_t o = strlen(buf);
    snprintf(buf + o, cap - o, "%s%s", o > 0 ? "; " : "", part);
}

/* The schema's bounds in words ("0 to 50", "length at least 1", "items at most 5"), or
 * "" if none. */
static void bounds_text(const json_t *schema, char *buf, size_t cap)
{
    buf[0] = '\0';
    bound_pair(schema, "minimum", "maximum", "", buf, cap);
    bound_pair(schema, "minLength", "maxLength", "length ", buf, cap);
    bound_pair(schema, "minItems", "maxItems", "items ", buf, cap);
}

/* The JSDoc of one property (its title, description, integer-ness and bounds), if it
 * has anything to say. */
static void put_property_doc(struct text *t, unsigned level, const json_t *schema)
{
    const char *title = json_string_value(json_object_get(schema, "title"));
    const char *desc = json_string_value(json_object_get(schema, "description"));
    char bounds[256];
    bounds_text(schema, bounds, sizeof bounds);
    bool integer = (tool_schema_types(schema) & TOOL_TYPE_INTEGER) != 0 &&
                   (tool_schema_types(schema) & TOOL_TYPE_NUMBER) == 0;
    if (title == NULL && desc == NULL && bounds[0] == '\0' && !integer)
        return;
    indent(t, level);
    put(t, "/**\n");
    if (title != NULL)
        put_doc_text(t, level, title);
    if (desc != NULL)
        put_doc_text(t, level, desc);
    if (integer || bounds[0] != '\0') {
        indent(t, level);
        putf(t, " * %s%s%s.\n", integer ? "An integer" : "",
             integer && bounds[0] != '\0' ? ", " : bounds[0] != '\0' ? "Bounds: " : "", bounds);
    }
    indent(t, level);
    put(t, " */\n");
}

static void put_type(struct text *t, const json_t *schema, unsigned level);

static void put_object_type(struct text *t, const json_t *schema, unsigned level)
{
    json_t *props = json_object_get(schema, "properties");
    const json_t *required = json_object_get(schema, "required");
    const json_t *extra = json_object_get(schema, "additionalProperties");
    if (json_object_size(props) == 0 && json_is_false(extra)) {
        put(t, "Record<string, never>");
        return;
    }
    put(t, "{\n");
    const char *key;
    json_t *sub;
    json_object_foreach(props, key, sub) {
        bool needed = false;
        size_t i;
        const json_t *name;
        json_array_foreach(required, i, name)
            needed = needed || strcmp(json_string_value(name), key) == 0;
        put_property_doc(t, level + 1, sub);
        indent(t, level + 1);
        if (is_identifier(key)) {
            put(t, key);
        } else {
            json_t *k = json_string(key);
            if (k == NULL)
                t->failed = true;
            else
                put_literal(t, k);
            json_decref(k);
        }
        put(t, needed ? ": " : "?: ");
        put_type(t, sub, level + 1);
        if (!needed && inherited_member(key))
            putf(t, " | Object[\"%s\"]", key);
        put(t, ";\n");
    }
    if (!json_is_false(extra)) {
        /* Every named property must fit the index signature, so with properties it
         * can only be unknown. */
        indent(t, level + 1);
        put(t, "[key: string]: ");
        if (json_object_size(props) == 0 && json_is_object(extra))
            put_type(t, extra, level + 1);
        else
            put(t, "unknown");
        put(t, ";\n");
    }
    indent(t, level);
    put(t, "}");
}

static void put_type(struct text *t, const json_t *schema, unsigned level)
{
    const json_t *allowed = json_object_get(schema, "enum");
    if (allowed != NULL) {
        size_t i;
        const json_t *v;
        json_array_foreach(allowed, i, v) {
            if (i > 0)
                put(t, " | ");
            put_literal(t, v);
        }
        return;
    }
    unsigned types = tool_schema_types(schema);
    if (types == 0) {
        put(t, "unknown");
        return;
    }
    if ((types & TOOL_TYPE_NUMBER) != 0)
        types &= ~(unsigned)TOOL_TYPE_INTEGER; /* both are number */
    bool first = true;
    for (unsigned bit = 1; bit <= TOOL_TYPE_NULL; bit <<= 1) {
        if ((types & bit) == 0)
            continue;
        if (!first)
            put(t, " | ");
        first = false;
        switch (bit) {
        case TOOL_TYPE_OBJECT:
            put_object_type(t, schema, level);
            break;
        case TOOL_TYPE_ARRAY: {
            const json_t *items = json_object_get(schema, "items");
            if (items == NULL) {
                put(t, "unknown[]");
            } else {
                put(t, "Array<");
                put_type(t, items, level);
                put(t, ">");
            }
            break;
        }
        case TOOL_TYPE_STRING:
            put(t, "string");
            break;
        case TOOL_TYPE_NUMBER:
        case TOOL_TYPE_INTEGER:
            put(t, "number");
            break;
        case TOOL_TYPE_BOOLEAN:
            put(t, "boolean");
            break;
        default:
            put(t, "null");
            break;
        }
    }
}

static void put_tool(struct text *t, const struct tool *tool)
{
    put(t, "  /**\n");
    put_doc_text(t, 1, tool->description);
    put(t, "   *\n");
    putf(t, "   * Class: %s (module %s, op %s).%s\n", tool_class_name(tool), tool->module,
         tool->op, tool->mutation ? " It changes something: call it once per intended effect." : "");
    put(t, "   * @param name the tool's name\n");
    put(t, "   * @param input checked against the tool's schema before the tool runs: a mismatch"
           "\n   *   rejects with HostError code \"invalid_arguments\" naming the failing path\n");
    put(t, "   * @returns the tool's result (any: the catalog describes inputs, not results); a\n"
           "   *   refusal or failure rejects with a HostError\n");
    put(t, "   */\n");
    put(t, "  function call(name: ");
    json_t *name = json_string(tool->name);
    if (name == NULL)
        t->failed = true;
    else
        put_literal(t, name);
    json_decref(name);
    put(t, ", input: ");
    put_type(t, tool->input, 1);
    put(t, "): Promise<any>;\n");
}

static const char PREAMBLE[] =
    "// basal codemode: the tools of this host's catalog (tools.json) as TypeScript\n"
    "// declarations, for a script run by `ck-basal codemode run`. Generated by\n"
    "// `ck-basal codemode describe --format typescript`; do not edit.\n"
    "//\n"
    "// A script is JavaScript, the body of an async function: use await at the top level\n"
    "// and return the result (JSON). To type-check one, put it in a .ts file as the body\n"
    "// of `async function main(): Promise<unknown> { ... }` and run\n"
    "//   tsc --noEmit --strict --noImplicitAny false --useUnknownInCatchVariables false\n"
    "//       --lib es2022 tools.d.ts script.ts\n"
    "// (docs/codemode.md).\n"
    "\n"
    "/** What a refused or failed call rejects with: `e.data.code` names the reason\n"
    " * (\"invalid_arguments\": the input does not match the tool's schema; \"denied\":\n"
    " * not in the catalog or over the run's limit of tool calls; \"timeout\"; or the\n"
    " * tool's own code), `e.data.message` says more. */\n"
    "interface HostError extends Error {\n"
    "  name: \"HostError\";\n"
    "  data: { code: string; message: string };\n"
    "}\n"
    "\n";

static const char EPILOGUE[] =
    "\n"
    "/** Console output: captured apart from the result, at most 64 KiB in a run (then one\n"
    " * line says it was truncated). Strings as they are, other values as JSON. */\n"
    "declare const console: {\n"
    "  log(...values: unknown[]): void;\n"
    "  error(...values: unknown[]): void;\n"
    "};\n"
    "\n"
    "/** The run's input: `ck-basal codemode run --input JSON` (default {}), frozen. */\n"
    "declare const trigger: any;\n";

char *tool_typescript(const struct tools_catalog *c)
{
    struct text t = {NULL, 0, 0, false};
    put(&t, PREAMBLE);
    put(&t, "/** The operator's tools: call one with `await tools.call(name, input)`. */\n");
    put(&t, "declare namespace tools {\n");
    if (c->count == 0)
        put(&t, "  /** The catalog is empty: every call is denied. */\n"
                "  function call(name: never, input: never): Promise<never>;\n");
    for (size_t i = 0; i < c->count; i++) {
        if (i > 0)
            put(&t, "\n");
        put_tool(&t, &c->tools[i]);
    }
    put(&t, "}\n");
    put(&t, EPILOGUE);
    if (t.failed) {
        free(t.buf);
        return NULL;
    }
    return t.buf;
}
