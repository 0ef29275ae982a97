/* Deciding an activation's outcome (docs/engine.md, "Outcomes"): the failure kinds,
 * and the one place that fills in the Finished message. The activation loop
 * (engine.c) and the host-call bridge (host_bridge.c) both decide through here; this
 * file calls neither of them. */
#ifndef BASAL_WORKER_ENGINE_OUTCOME_H
#define BASAL_WORKER_ENGINE_OUTCOME_H

#include <stdbool.h>
#include <stddef.h>

#include <quickjs.h>

#include "proto/message.h"

struct engine;

/* Failure kinds of Finished(failed) (docs/engine.md, "Outcomes"). */
#define FAIL_SCRIPT_ERROR "script_error"
#define FAIL_SYNTAX_ERROR "syntax_error"
#define FAIL_UNSERIALIZABLE "unserializable_result"
#define FAIL_RESULT_TOO_LARGE "result_too_large"
#define FAIL_NONDETERMINISM "nondeterminism"
#define FAIL_INVALID_TRIGGER "invalid_trigger"
#define FAIL_PROTOCOL "protocol_error"
#define FAIL_ENGINE "engine_error"

/* Ends the activation with Finished(failed, kind, detail) unless an outcome is already
 * decided, and stops the script at its next interrupt poll. A budget already exhausted
 * takes precedence (it happened first). */
void engine_fail(struct engine *engine, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* True once the script must not run further: an outcome is decided, a budget is
 * exhausted or the engine asked it to stop. */
bool engine_stopping(struct engine *engine);

/* The largest argument or result JSON: the Activate's max_value_bytes (0: no limit),
 * never above what a protocol text can carry. */
size_t engine_value_limit(const struct engine *engine);

/* Copies src[0..len) into dst (capacity cap + 1) as valid UTF-8 without NUL, replacing
 * what is not by U+FFFD and cutting at a character boundary; returns the length. */
size_t engine_clean_text(char *dst, size_t cap, const char *src, size_t len);

/* "Name: message" of a thrown value, cleaned, into dst (capacity cap + 1). With
 * with_stack, the error's stack follows on the next lines. */
void engine_describe_exception(JSContext *ctx, JSValueConst error, bool with_stack, char *dst,
                               size_t cap);


/* Decides `outcome` (no detail) and stops the script at its next interrupt poll. */
void engine_decide(struct engine *engine, enum proto_outcome outcome);

/* Decides the exhausted budget if one is exhausted (or true if an outcome is already
 * decided); false if the script may still run. */
bool engine_decide_if_budget(struct engine *engine);

/* The script threw (or its result rejected) with `error`: an uncaught stack or heap
 * exhaustion is the budget's, anything else fails with `kind`. */
void engine_decide_thrown(struct engine *engine, JSValueConst error, const char *kind);

/* The script's result settled: completed with its JSON, or failed if it has none. */
void engine_decide_result(struct engine *engine);

/* True if error is the engine's own InternalError with this message. */
bool engine_is_internal_error(JSContext *ctx, JSValueConst error, const char *message);

/* A property of a thrown value as a string, or JS_UNDEFINED. */
JSValue engine_string_property(JSContext *ctx, JSValueConst obj, const char *name);

#endif
