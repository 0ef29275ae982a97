/* The engine's state, shared by engine.c (runtime, lockdown, the activation loop),
 * host_bridge.c (host calls, replay, deliveries) and engine_harden.c. Not for serve. */
#ifndef BASAL_WORKER_ENGINE_INTERNAL_H
#define BASAL_WORKER_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <quickjs.h>

#include "proto/message.h"
#include "worker/budget.h"
#include "worker/engine.h"

/* Failure kinds of Finished(failed) (docs/engine.md, "Outcomes"). */
#define FAIL_SCRIPT_ERROR "script_error"
#define FAIL_SYNTAX_ERROR "syntax_error"
#define FAIL_UNSERIALIZABLE "unserializable_result"
#define FAIL_RESULT_TOO_LARGE "result_too_large"
#define FAIL_NONDETERMINISM "nondeterminism"
#define FAIL_INVALID_TRIGGER "invalid_trigger"
#define FAIL_PROTOCOL "protocol_error"
#define FAIL_ENGINE "engine_error"

/* One host call, by position (positions are dense: 0, 1, 2, ... in call order). */
enum call_state {
    CALL_LIVE,    /* sent to the parent, not delivered yet */
    CALL_REPLAY,  /* answered by a prefix entry, waiting for its turn in delivery order */
    CALL_SETTLED, /* its promise is settled (or it was a synchronous call) */
};

struct call {
    uint32_t slot;      /* pending async call: index in bridge.slots; else unused */
    uint8_t state;      /* enum call_state */
    uint8_t api;        /* index in HOST_APIS */
    bool long_running;  /* LongRunning named it */
};

/* The resolving functions of an async call that is not settled yet. */
struct pending_slot {
    JSValue resolve;
    JSValue reject;
    uint32_t next_free; /* free list link while unused */
};

/* A Deliver that arrived while a synchronous call was waiting: applied, in arrival
 * order, the next time the script is idle. */
struct buffered_deliver {
    uint32_t position;
    bool rejected;
    JSValue value; /* parsed */
};

struct bridge {
    /* calls (allocated on the runtime's heap, so they count against the budget) */
    struct call *calls;
    uint32_t call_count;
    uint32_t call_cap;
    struct pending_slot *slots;
    uint32_t slot_cap;
    uint32_t free_slot; /* UINT32_MAX: none */

    /* the recorded prefix (indices into activation->prefix) */
    uint32_t *prefix_by_position; /* sorted by position */
    uint32_t *prefix_by_order;    /* sorted by delivery order */
    bool *prefix_done;            /* released, or consumed by a synchronous call */
    size_t release_cursor;        /* next in prefix_by_order to consider */
    size_t prefix_remaining;      /* entries not released or consumed */

    /* deliveries */
    bool any_order;
    uint32_t max_order; /* highest delivery order seen, prefix included */
    struct buffered_deliver *buffered;
    size_t buffered_count;
    size_t buffered_head;
    size_t buffered_cap;

    /* live calls: sent, not delivered */
    uint32_t live_low; /* no live call below this position */
    size_t live_outstanding;
    size_t live_long_running;
    uint64_t blocked_version; /* bumped by every new live async call and delivery */
    uint64_t blocked_sent;    /* version of the last Blocked sent */

    /* codemode console */
    size_t console_bytes;
    bool console_truncated;
};

enum result_state { RESULT_PENDING, RESULT_FULFILLED, RESULT_REJECTED };

struct engine {
    JSRuntime *rt;
    JSContext *ctx;
    struct budget budget;
    enum engine_mode mode;
    bool used;

    /* captured before any script runs */
    JSValue promise_then; /* the intrinsic Promise.prototype.then */
    JSValue native_date;  /* ENGINE_LOCKED: the engine's Date, reachable only from here */
    JSValue date_to_string;

    /* the activation */
    const struct proto_activate *activation;
    const struct engine_io *io;
    struct bridge bridge;
    enum result_state result_state;
    JSValue result;

    /* the outcome, once decided: kept in `finished` */
    bool decided;
    struct proto_finished finished;
    const char *value_cstr; /* JS_ToCStringLen result, freed with the runtime */
    char detail[PROTO_MAX_DETAIL_BYTES + 1];
};

/* ---- engine.c ---- */

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

/* ---- engine_harden.c ---- */

/* Freezes every object reachable from root through own properties (values, getters,
 * setters) and prototypes. -1 with an exception pending on failure. */
int engine_harden(JSContext *ctx, JSValueConst root);

/* Makes every own property of obj non-configurable (and non-writable if a data
 * property) and hardens the values, without making obj itself non-extensible: the
 * global object keeps accepting new properties. */
int engine_harden_bindings(JSContext *ctx, JSValueConst obj);

/* ---- host_bridge.c ---- */

/* Installs the profile's global API (flow: kv, fs, net, git, ops, sink, now, random,
 * step; codemode: tools, console), every value created and frozen now. Test builds add
 * __basalTestForbiddenSyscall, and print/console.log on stderr in the plain context.
 * Runs before the heap budget applies. -1 after engine_fail on failure. */
int bridge_install_api(struct engine *engine);

/* Parses the Activate's trigger (empty: null), freezes it and installs it as the
 * read-only global `trigger`. -1 after engine_fail (invalid_trigger) on failure. */
int bridge_install_trigger(struct engine *engine);

/* Starts the bridge for engine->activation: indexes its prefix by position and by
 * delivery order. False, with the reason in refusal (the Activate is refused, nothing
 * has run), if the prefix records a position or a delivery order twice. */
bool bridge_begin(struct engine *engine, char *refusal, size_t cap);

/* The synchronous host functions the prelude puts behind Date.now, new Date() and
 * Math.random (and the flow's now() and random()). */
JSValue bridge_now(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv);
JSValue bridge_random(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv);

/* At an idle point (no job pending): releases the next recorded outcome if its turn
 * has come (1), reports nondeterminism if it cannot (-1 after engine_fail), or 0 if
 * the prefix is done. */
int bridge_release_next(struct engine *engine);

/* Applies one buffered delivery if any (1), else 0. */
int bridge_apply_buffered(struct engine *engine);

/* What the idle script waits for. */
enum bridge_wait { WAIT_NOTHING, WAIT_LONG_RUNNING_ONLY, WAIT_LIVE };
enum bridge_wait bridge_waiting(const struct engine *engine);

/* Sends Blocked if the awaited set changed, reads frames until one settles a call or
 * changes what is awaited. */
void bridge_wait(struct engine *engine);

/* Unreleased prefix entries remain (the script ended or stalled before them). */
bool bridge_prefix_pending(const struct engine *engine, char *detail, size_t cap);

/* Releases every JS value the bridge holds (before the runtime is freed). */
void bridge_free(struct engine *engine);

#endif
