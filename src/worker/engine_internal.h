/* The engine's state: the data engine.c (runtime, lockdown, the activation loop),
 * engine_outcome.c (deciding the outcome) and host_bridge.c (host calls, replay,
 * deliveries) share. Data only: each file's functions are in its own header. Private
 * to src/worker/ and not for serve, which sees only engine.h. */
#ifndef BASAL_WORKER_ENGINE_INTERNAL_H
#define BASAL_WORKER_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <quickjs.h>

#include "proto/message.h"
#include "worker/budget.h"
#include "worker/engine_io.h"

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

/* The promise of an async call that is not settled yet (JS_SettlePromise settles it:
 * no resolving functions are made). */
struct pending_slot {
    JSValue promise;
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

    /* bridge_close: the outcome is being decided, no host call may leave */
    bool closed;
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

#endif
