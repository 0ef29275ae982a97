/* Deciding an activation's outcome (see engine_outcome.h). */
#include "worker/engine_outcome.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "proto/utf8.h"
#include "worker/engine_internal.h"

/* ------------------------------------------------------------------ text */

size_t engine_clean_text(char *dst, size_t cap, const char *src, size_t len)
{
    static const char REPLACEMENT[] = "\xEF\xBF\xBD";
    size_t out = 0;
    for (size_t i = 0; i < len;) {
        unsigned char lead = (unsigned char)src[i];
        size_t need = lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3
                                   : (lead >> 3) == 30 ? 4 : 0;
        const char *piece = REPLACEMENT;
        size_t piece_len = sizeof REPLACEMENT - 1;
        if (lead != 0 && need > 0 && need <= len - i &&
            utf8_valid((const uint8_t *)src + i, need)) {
            piece = src + i;
            piece_len = need;
            i += need;
        } else {
            i++;
        }
        if (piece_len > cap - out)
            break;
        memcpy(dst + out, piece, piece_len);
        out += piece_len;
    }
    dst[out] = '\0';
    return out;
}

/* Appends a JS string value's text to dst[*used..cap]. */
static void append_value(JSContext *ctx, char *dst, size_t cap, size_t *used, JSValueConst value)
{
    size_t len = 0;
    const char *text = JS_ToCStringLen(ctx, &len, value);
    if (text == NULL) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        return;
    }
    *used += engine_clean_text(dst + *used, cap - *used, text, len);
    JS_FreeCString(ctx, text);
}

static void append_text(char *dst, size_t cap, size_t *used, const char *text)
{
    *used += engine_clean_text(dst + *used, cap - *used, text, strlen(text));
}

/* A property of a thrown value as a string, or JS_UNDEFINED. */
JSValue engine_string_property(JSContext *ctx, JSValueConst obj, const char *name)
{
    JSValue value = JS_GetPropertyStr(ctx, obj, name);
    if (JS_IsException(value)) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        return JS_UNDEFINED;
    }
    if (!JS_IsString(value)) {
        JS_FreeValue(ctx, value);
        return JS_UNDEFINED;
    }
    return value;
}

void engine_describe_exception(JSContext *ctx, JSValueConst error, bool with_stack, char *dst,
                               size_t cap)
{
    size_t used = 0;
    dst[0] = '\0';
    if (JS_IsError(ctx, error)) {
        JSValue name = engine_string_property(ctx, error, "name");
        JSValue message = engine_string_property(ctx, error, "message");
        append_value(ctx, dst, cap, &used, JS_IsUndefined(name) ? JS_UNDEFINED : name);
        if (JS_IsUndefined(name))
            append_text(dst, cap, &used, "Error");
        if (!JS_IsUndefined(message)) {
            append_text(dst, cap, &used, ": ");
            append_value(ctx, dst, cap, &used, message);
        }
        JS_FreeValue(ctx, name);
        JS_FreeValue(ctx, message);
        if (with_stack) {
            JSValue stack = engine_string_property(ctx, error, "stack");
            if (!JS_IsUndefined(stack)) {
                append_text(dst, cap, &used, "\n");
                append_value(ctx, dst, cap, &used, stack);
                while (used > 0 && dst[used - 1] == '\n')
                    dst[--used] = '\0';
            }
            JS_FreeValue(ctx, stack);
        }
        return;
    }
    /* Anything else thrown: a string as it is, other values as JSON or as a string. */
    JSValue shown = JS_IsString(error) || !JS_IsObject(error)
                        ? JS_ToString(ctx, error)
                        : JS_JSONStringify(ctx, error, JS_UNDEFINED, JS_UNDEFINED);
    if (JS_IsException(shown) || JS_IsUndefined(shown)) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        append_text(dst, cap, &used, "a thrown value that cannot be shown");
        return;
    }
    append_text(dst, cap, &used, "uncaught ");
    append_value(ctx, dst, cap, &used, shown);
    JS_FreeValue(ctx, shown);
}

/* ------------------------------------------------------------------ outcomes */

size_t engine_value_limit(const struct engine *engine)
{
    uint32_t limit = engine->activation->budgets.max_value_bytes;
    return limit == 0 || limit > PROTO_MAX_JSON_BYTES ? PROTO_MAX_JSON_BYTES : limit;
}

bool engine_stopping(struct engine *engine)
{
    return engine->decided || engine->budget.stop_requested ||
           budget_state(&engine->budget) != BUDGET_OK;
}

void engine_decide(struct engine *engine, enum proto_outcome outcome)
{
    engine->decided = true;
    budget_request_stop(&engine->budget);
    memset(&engine->finished, 0, sizeof engine->finished);
    engine->finished.outcome = outcome;
}

static void engine_decide_budget(struct engine *engine, enum proto_budget which)
{
    engine_decide(engine, PROTO_OUTCOME_BUDGET_EXHAUSTED);
    engine->finished.exhausted = which;
}

__attribute__((format(printf, 3, 0))) static void
vdecide_failed(struct engine *engine, const char *kind, const char *fmt, va_list args)
{
    char raw[PROTO_MAX_DETAIL_BYTES + 1];
    int len = vsnprintf(raw, sizeof raw, fmt, args);
    size_t raw_len = len < 0 ? 0 : (size_t)len < sizeof raw ? (size_t)len : sizeof raw - 1;
    engine_decide(engine, PROTO_OUTCOME_FAILED);
    size_t detail_len = engine_clean_text(engine->detail, PROTO_MAX_DETAIL_BYTES, raw, raw_len);
    engine->finished.failure_kind = proto_text_of(kind);
    engine->finished.failure_detail.str = engine->detail;
    engine->finished.failure_detail.len = detail_len;
}

void engine_fail(struct engine *engine, const char *kind, const char *fmt, ...)
{
    /* A budget already exhausted is what happened first: engine_decide() reports it. */
    if (!engine->decided && budget_state(&engine->budget) == BUDGET_OK) {
        va_list args;
        va_start(args, fmt);
        vdecide_failed(engine, kind, fmt, args);
        va_end(args);
    }
    budget_request_stop(&engine->budget);
}

bool engine_decide_if_budget(struct engine *engine)
{
    if (engine->decided)
        return true;
    switch (budget_state(&engine->budget)) {
    case BUDGET_CPU_EXHAUSTED:
        engine_decide_budget(engine, PROTO_BUDGET_CPU);
        return true;
    case BUDGET_HEAP_EXHAUSTED:
        engine_decide_budget(engine, PROTO_BUDGET_MEMORY);
        return true;
    case BUDGET_OK:
        break;
    }
    return false;
}

/* True if error is the engine's own InternalError with this message. */
bool engine_is_internal_error(JSContext *ctx, JSValueConst error, const char *message)
{
    if (!JS_IsError(ctx, error))
        return false;
    JSValue name = engine_string_property(ctx, error, "name");
    JSValue text = engine_string_property(ctx, error, "message");
    bool match = false;
    if (!JS_IsUndefined(name) && !JS_IsUndefined(text)) {
        const char *name_str = JS_ToCString(ctx, name);
        const char *text_str = JS_ToCString(ctx, text);
        match = name_str && text_str && strcmp(name_str, "InternalError") == 0 &&
                strcmp(text_str, message) == 0;
        JS_FreeCString(ctx, name_str);
        JS_FreeCString(ctx, text_str);
    }
    JS_FreeValue(ctx, name);
    JS_FreeValue(ctx, text);
    return match;
}

/* The script threw (or its result rejected) with `error`. */
void engine_decide_thrown(struct engine *engine, JSValueConst error, const char *kind)
{
    JSContext *ctx = engine->ctx;
    if (engine_decide_if_budget(engine))
        return;
    /* Uncaught exhaustion of the stack or the heap is the budget's. QuickJS raises
     * both as catchable errors; a script that catches one and completes is fine. */
    if (engine_is_internal_error(ctx, error, "stack overflow")) {
        engine_decide_budget(engine, PROTO_BUDGET_STACK);
        return;
    }
    if (engine->budget.alloc_failures > 0 && engine_is_internal_error(ctx, error, "out of memory")) {
        engine_decide_budget(engine, PROTO_BUDGET_MEMORY);
        return;
    }
    char detail[PROTO_MAX_DETAIL_BYTES + 1];
    engine_describe_exception(ctx, error, true, detail, PROTO_MAX_DETAIL_BYTES);
    if (engine_decide_if_budget(engine)) /* describing it ran script code (getters) */
        return;
    engine_fail(engine, kind, "%s", detail);
}

void engine_decide_result(struct engine *engine)
{
    JSContext *ctx = engine->ctx;
    JSValue json = JS_JSONStringify(ctx, engine->result, JS_UNDEFINED, JS_UNDEFINED);
    if (JS_IsException(json)) {
        JSValue error = JS_GetException(ctx);
        if (!engine_decide_if_budget(engine)) {
            char why[512];
            engine_describe_exception(ctx, error, false, why, sizeof why - 1);
            engine_fail(engine, FAIL_UNSERIALIZABLE, "the result cannot be written as JSON: %s",
                        why);
        }
        JS_FreeValue(ctx, error);
        return;
    }
    if (engine_decide_if_budget(engine)) { /* toJSON methods are script code */
        JS_FreeValue(ctx, json);
        return;
    }
    if (JS_IsUndefined(json)) {
        const char *what = JS_IsUndefined(engine->result)  ? "undefined"
                           : JS_IsFunction(ctx, engine->result) ? "a function"
                                                              : "a symbol";
        engine_fail(engine, FAIL_UNSERIALIZABLE, "the result is %s, which JSON cannot represent",
                    what);
        return;
    }
    size_t len = 0;
    const char *text = JS_ToCStringLen(ctx, &len, json);
    JS_FreeValue(ctx, json);
    if (text == NULL) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        if (!engine_decide_if_budget(engine))
            engine_decide_budget(engine, PROTO_BUDGET_MEMORY);
        return;
    }
    size_t limit = engine_value_limit(engine);
    if (len > limit) {
        JS_FreeCString(ctx, text);
        engine_fail(engine, FAIL_RESULT_TOO_LARGE,
                    "the result is %zu bytes of JSON, over the limit of %zu", len, limit);
        return;
    }
    if (!utf8_valid((const uint8_t *)text, len) || memchr(text, '\0', len) != NULL) {
        JS_FreeCString(ctx, text);
        engine_fail(engine, FAIL_UNSERIALIZABLE, "the result's JSON is not valid UTF-8");
        return;
    }
    engine_decide(engine, PROTO_OUTCOME_COMPLETED);
    engine->value_cstr = text;
    engine->finished.value.str = text;
    engine->finished.value.len = len;
}

