#include "worker/host_bridge.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/utf8.h"
#include "worker/engine_harden.h"
#include "worker/engine_internal.h"
#include "worker/engine_outcome.h"
#include "worker/engine_sha256.h"
#include "worker/host_apis.h"


#define NO_SLOT UINT32_MAX

static struct engine *engine_of(JSContext *ctx)
{
    return JS_GetContextOpaque(ctx);
}

/* ------------------------------------------------------------------ sending */

static void send_host_call(struct engine *engine, uint32_t position, const char *kind,
                           const char *args, size_t args_len)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_HOST_CALL;
    msg.host_call.position = position;
    msg.host_call.kind = proto_text_of(kind);
    msg.host_call.args.str = args;
    msg.host_call.args.len = args_len;
    engine->io->send(engine->io->opaque, &msg);
}

/* ------------------------------------------------------------------ calls and slots */

/* Makes room for one more call; -1 with an exception if out of memory. Positions are
 * taken only once nothing can fail, so a position is never skipped. */
static int reserve_call(struct engine *engine)
{
    struct bridge *bridge = &engine->bridge;
    if (bridge->call_count < bridge->call_cap)
        return 0;
    if (bridge->call_cap >= UINT32_MAX / 2) {
        JS_ThrowRangeError(engine->ctx, "too many host calls");
        return -1;
    }
    uint32_t cap = bridge->call_cap ? bridge->call_cap * 2 : 64;
    struct call *grown = js_realloc_rt(engine->rt, bridge->calls, (size_t)cap * sizeof *grown);
    if (grown == NULL) {
        JS_ThrowOutOfMemory(engine->ctx);
        return -1;
    }
    bridge->calls = grown;
    bridge->call_cap = cap;
    return 0;
}

/* The next position, for a call of `api` (after reserve_call). */
static uint32_t next_position(struct engine *engine, unsigned api)
{
    struct bridge *bridge = &engine->bridge;
    uint32_t position = bridge->call_count++;
    struct call *call = &bridge->calls[position];
    call->slot = NO_SLOT;
    call->state = CALL_SETTLED;
    call->api = (uint8_t)api;
    call->long_running = false;
    return position;
}

/* Keeps a reference to the promise of a pending async call. */
static int take_slot(struct engine *engine, JSValueConst promise, uint32_t *slot)
{
    struct bridge *bridge = &engine->bridge;
    if (bridge->free_slot == NO_SLOT) {
        if (bridge->slot_cap >= UINT32_MAX / 2) {
            JS_ThrowRangeError(engine->ctx, "too many pending host calls");
            return -1;
        }
        uint32_t cap = bridge->slot_cap ? bridge->slot_cap * 2 : 32;
        struct pending_slot *grown =
            js_realloc_rt(engine->rt, bridge->slots, (size_t)cap * sizeof *grown);
        if (grown == NULL) {
            JS_ThrowOutOfMemory(engine->ctx);
            return -1;
        }
        for (uint32_t i = bridge->slot_cap; i < cap; i++) {
            grown[i].promise = JS_UNDEFINED;
            grown[i].next_free = i + 1 < cap ? i + 1 : bridge->free_slot;
        }
        bridge->free_slot = bridge->slot_cap;
        bridge->slots = grown;
        bridge->slot_cap = cap;
    }
    *slot = bridge->free_slot;
    struct pending_slot *entry = &bridge->slots[*slot];
    bridge->free_slot = entry->next_free;
    entry->promise = JS_DupValue(engine->ctx, promise);
    return 0;
}

static void release_slot(struct engine *engine, uint32_t slot)
{
    struct bridge *bridge = &engine->bridge;
    struct pending_slot *entry = &bridge->slots[slot];
    JS_FreeValue(engine->ctx, entry->promise);
    entry->promise = JS_UNDEFINED;
    entry->next_free = bridge->free_slot;
    bridge->free_slot = slot;
}

/* ------------------------------------------------------------------ values */

/* The parsed JSON of a settlement value; JS_EXCEPTION if it is not JSON. */
static JSValue parse_value(JSContext *ctx, struct proto_text text)
{
    /* Decoded texts are NUL-terminated, as JS_ParseJSON requires; an empty text is
     * not JSON. */
    if (text.len == 0 || text.str == NULL)
        return JS_ThrowSyntaxError(ctx, "empty value");
    return JS_ParseJSON(ctx, text.str, text.len, "value");
}

/* An Error named HostError for a rejected settlement; takes over `data`. */
static JSValue host_error(JSContext *ctx, JSValue data)
{
    JSValue error = JS_NewError(ctx);
    if (JS_IsException(error)) {
        JS_FreeValue(ctx, data);
        return error;
    }
    JSValue message = JS_UNDEFINED;
    if (JS_IsObject(data))
        message = JS_GetPropertyStr(ctx, data, "message");
    if (JS_IsException(message)) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        message = JS_UNDEFINED;
    }
    if (!JS_IsString(message)) {
        JS_FreeValue(ctx, message);
        message = JS_NewString(ctx, "host call refused");
    }
    const int flags = JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE;
    if (JS_DefinePropertyValueStr(ctx, error, "name", JS_NewString(ctx, "HostError"), flags) < 0 ||
        JS_DefinePropertyValueStr(ctx, error, "message", message, flags) < 0 ||
        JS_DefinePropertyValueStr(ctx, error, "data", data, flags | JS_PROP_ENUMERABLE) < 0) {
        JS_FreeValue(ctx, error);
        return JS_EXCEPTION;
    }
    return error;
}

/* A HostError for a refusal the worker makes itself (e.g. too_large). */
static JSValue local_host_error(JSContext *ctx, const char *code, const char *message)
{
    JSValue data = JS_NewObject(ctx);
    if (JS_IsException(data))
        return data;
    if (JS_DefinePropertyValueStr(ctx, data, "code", JS_NewString(ctx, code), JS_PROP_C_W_E) < 0 ||
        JS_DefinePropertyValueStr(ctx, data, "message", JS_NewString(ctx, message),
                                  JS_PROP_C_W_E) < 0) {
        JS_FreeValue(ctx, data);
        return JS_EXCEPTION;
    }
    return host_error(ctx, data);
}

/* Settles the pending call at `position` with a parsed value (taken over). The call's
 * bookkeeping is finished before any JS runs: building the error or resolving may run
 * script code (a getter), which may make host calls and move the call table. */
static void settle(struct engine *engine, uint32_t position, bool rejected, JSValue value)
{
    JSContext *ctx = engine->ctx;
    struct bridge *bridge = &engine->bridge;
    struct call *call = &bridge->calls[position];
    struct pending_slot *slot = &bridge->slots[call->slot];
    JSValue promise = slot->promise;
    slot->promise = JS_UNDEFINED;
    release_slot(engine, call->slot);
    call->slot = NO_SLOT;
    call->state = CALL_SETTLED;

    JSValue arg = rejected ? host_error(ctx, value) : value;
    if (JS_IsException(arg)) {
        /* Out of memory building the error: reject with what was thrown. */
        arg = JS_GetException(ctx);
        rejected = true;
    }
    JS_SettlePromise(ctx, promise, rejected, arg);
    JS_FreeValue(ctx, arg);
    JS_FreeValue(ctx, promise);
}

/* ------------------------------------------------------------------ the prefix */

/* Heap sort of prefix indices by position or by delivery order (no qsort: glibc's may
 * ask the kernel for the machine's memory size, which the filter refuses). */
static uint32_t prefix_key(const struct proto_recorded_entry *prefix, uint32_t index, bool by_order)
{
    return by_order ? prefix[index].delivery_order : prefix[index].position;
}

static void sift_down(uint32_t *items, size_t root, size_t count,
                      const struct proto_recorded_entry *prefix, bool by_order)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= count)
            return;
        if (child + 1 < count && prefix_key(prefix, items[child + 1], by_order) >
                                     prefix_key(prefix, items[child], by_order))
            child++;
        if (prefix_key(prefix, items[root], by_order) >= prefix_key(prefix, items[child], by_order))
            return;
        uint32_t swap = items[root];
        items[root] = items[child];
        items[child] = swap;
        root = child;
    }
}

static void sort_prefix(uint32_t *items, size_t count, const struct proto_recorded_entry *prefix,
                        bool by_order)
{
    /* A journal lists its entries by position, and usually in delivery order too. */
    size_t sorted = 1;
    while (sorted < count && prefix_key(prefix, items[sorted - 1], by_order) <=
                                 prefix_key(prefix, items[sorted], by_order))
        sorted++;
    if (sorted >= count)
        return;
    for (size_t i = count / 2; i-- > 0;)
        sift_down(items, i, count, prefix, by_order);
    for (size_t end = count; end-- > 1;) {
        uint32_t swap = items[0];
        items[0] = items[end];
        items[end] = swap;
        sift_down(items, 0, end, prefix, by_order);
    }
}

static const struct proto_recorded_entry *prefix_entry(const struct engine *engine, uint32_t index)
{
    return &engine->activation->prefix[index];
}

/* The prefix entry recorded at `position`, or -1. */
static int64_t prefix_lookup(const struct engine *engine, uint32_t position)
{
    const struct bridge *bridge = &engine->bridge;
    size_t low = 0, high = engine->activation->prefix_count;
    /* A journal's positions are usually 0, 1, 2, ...: the entry is then at its own
     * index. */
    if (position < high &&
        prefix_entry(engine, bridge->prefix_by_position[position])->position == position)
        return bridge->prefix_by_position[position];
    while (low < high) {
        size_t mid = low + (high - low) / 2;
        uint32_t found = prefix_entry(engine, bridge->prefix_by_position[mid])->position;
        if (found == position)
            return bridge->prefix_by_position[mid];
        if (found < position)
            low = mid + 1;
        else
            high = mid;
    }
    return -1;
}

bool bridge_begin(struct engine *engine, char *refusal, size_t cap)
{
    struct bridge *bridge = &engine->bridge;
    memset(bridge, 0, sizeof *bridge);
    bridge->free_slot = NO_SLOT;
    const struct proto_activate *activation = engine->activation;
    size_t count = activation->prefix_count;
    if (count > UINT32_MAX) {
        (void)snprintf(refusal, cap, "activate.prefix: %zu entries is too many", count);
        return false;
    }
    if (count == 0)
        return true;
    bridge->prefix_by_position = malloc(count * sizeof(uint32_t));
    bridge->prefix_by_order = malloc(count * sizeof(uint32_t));
    bridge->prefix_done = calloc(count, sizeof(bool));
    if (bridge->prefix_by_position == NULL || bridge->prefix_by_order == NULL ||
        bridge->prefix_done == NULL) {
        (void)snprintf(refusal, cap, "activate.prefix: out of memory for %zu entries", count);
        return false;
    }
    for (size_t i = 0; i < count; i++)
        bridge->prefix_by_position[i] = bridge->prefix_by_order[i] = (uint32_t)i;
    sort_prefix(bridge->prefix_by_position, count, activation->prefix, false);
    sort_prefix(bridge->prefix_by_order, count, activation->prefix, true);
    for (size_t i = 1; i < count; i++) {
        uint32_t position = prefix_entry(engine, bridge->prefix_by_position[i])->position;
        if (position == prefix_entry(engine, bridge->prefix_by_position[i - 1])->position) {
            (void)snprintf(refusal, cap, "activate.prefix: position %u is recorded twice",
                           position);
            return false;
        }
        uint32_t order = prefix_entry(engine, bridge->prefix_by_order[i])->delivery_order;
        if (order == prefix_entry(engine, bridge->prefix_by_order[i - 1])->delivery_order) {
            (void)snprintf(refusal, cap, "activate.prefix: delivery order %u is recorded twice",
                           order);
            return false;
        }
    }
    bridge->prefix_remaining = count;
    bridge->any_order = true;
    bridge->max_order = prefix_entry(engine, bridge->prefix_by_order[count - 1])->delivery_order;
    return true;
}

/* Checks a call against the journal's entry; false (after engine_fail) on a mismatch. */
static bool matches_prefix(struct engine *engine, uint32_t position,
                           const struct proto_recorded_entry *entry, const char *kind,
                           const char *args, size_t args_len)
{
    if (entry->kind.len != strlen(kind) || memcmp(entry->kind.str, kind, entry->kind.len) != 0) {
        char recorded[64];
        engine_clean_text(recorded, sizeof recorded - 1, entry->kind.str, entry->kind.len);
        engine_fail(engine, FAIL_NONDETERMINISM,
                    "position %u: the script called %s where the journal records %s", position,
                    kind, recorded);
        return false;
    }
    uint8_t digest[SHA256_DIGEST_BYTES];
    sha256(args, args_len, digest);
    if (memcmp(digest, entry->args_digest, sizeof digest) != 0) {
        engine_fail(engine, FAIL_NONDETERMINISM,
                    "position %u: %s called with arguments whose SHA-256 differs from the "
                    "journal's",
                    position, kind);
        return false;
    }
    return true;
}

int bridge_release_next(struct engine *engine)
{
    struct bridge *bridge = &engine->bridge;
    size_t count = engine->activation->prefix_count;
    while (bridge->release_cursor < count &&
           bridge->prefix_done[bridge->prefix_by_order[bridge->release_cursor]])
        bridge->release_cursor++;
    if (bridge->release_cursor == count)
        return 0;
    uint32_t index = bridge->prefix_by_order[bridge->release_cursor];
    const struct proto_recorded_entry *entry = prefix_entry(engine, index);
    uint32_t position = entry->position;
    if (position >= bridge->call_count || bridge->calls[position].state != CALL_REPLAY) {
        char kind[64];
        engine_clean_text(kind, sizeof kind - 1, entry->kind.str, entry->kind.len);
        engine_fail(engine, FAIL_NONDETERMINISM,
                    "the journal delivers position %u (%s) as delivery order %u, but the "
                    "script has not called it",
                    position, kind, entry->delivery_order);
        return -1;
    }
    JSValue value = parse_value(engine->ctx, entry->value);
    if (JS_IsException(value)) {
        JS_FreeValue(engine->ctx, JS_GetException(engine->ctx));
        if (!engine_stopping(engine))
            engine_fail(engine, FAIL_PROTOCOL,
                        "the journal's value for position %u is not JSON", position);
        return -1;
    }
    bridge->prefix_done[index] = true;
    bridge->prefix_remaining--;
    bridge->release_cursor++;
    settle(engine, position, entry->settlement == PROTO_SETTLEMENT_REJECTED, value);
    return 1;
}

void bridge_close(struct engine *engine)
{
    engine->bridge.closed = true;
}

bool bridge_prefix_pending(const struct engine *engine, char *detail, size_t cap)
{
    const struct bridge *bridge = &engine->bridge;
    if (bridge->prefix_remaining == 0)
        return false;
    for (size_t i = bridge->release_cursor; i < engine->activation->prefix_count; i++) {
        uint32_t index = bridge->prefix_by_order[i];
        if (bridge->prefix_done[index])
            continue;
        const struct proto_recorded_entry *entry = prefix_entry(engine, index);
        char kind[64];
        engine_clean_text(kind, sizeof kind - 1, entry->kind.str, entry->kind.len);
        (void)snprintf(detail, cap,
                       "the journal records position %u (%s, delivery order %u) that the "
                       "script did not reach",
                       entry->position, kind, entry->delivery_order);
        break;
    }
    return true;
}

/* ------------------------------------------------------------------ deliveries */

/* Checks a Deliver against what is awaited; on success its parsed value is in *value.
 * `sync_position` is the synchronous call waiting now (UINT32_MAX if none). Refuses
 * the frame itself otherwise. */
static bool accept_deliver(struct engine *engine, const struct proto_deliver *deliver,
                           uint32_t sync_position, JSValue *value)
{
    struct bridge *bridge = &engine->bridge;
    char detail[160];
    uint32_t position = deliver->position;
    bool awaited = position == sync_position ||
                   (position < bridge->call_count && bridge->calls[position].state == CALL_LIVE &&
                    !HOST_APIS[bridge->calls[position].api].sync);
    if (!awaited) {
        (void)snprintf(detail, sizeof detail, "position %u is not awaited", position);
        engine->io->refuse(engine->io->opaque, PROTO_REFUSAL_UNKNOWN_POSITION, detail);
        return false;
    }
    if (bridge->any_order && deliver->delivery_order <= bridge->max_order) {
        (void)snprintf(detail, sizeof detail,
                       "delivery order %u does not follow delivery order %u",
                       deliver->delivery_order, bridge->max_order);
        engine->io->refuse(engine->io->opaque, PROTO_REFUSAL_DELIVERY_ORDER_REGRESSION, detail);
        return false;
    }
    *value = parse_value(engine->ctx, deliver->value);
    if (JS_IsException(*value)) {
        JSValue error = JS_GetException(engine->ctx);
        if (engine_stopping(engine)) {
            JS_FreeValue(engine->ctx, error);
            return false; /* out of memory: the activation ends on its budget */
        }
        char why[96];
        engine_describe_exception(engine->ctx, error, false, why, sizeof why - 1);
        JS_FreeValue(engine->ctx, error);
        (void)snprintf(detail, sizeof detail, "deliver.value for position %u is not JSON: %s",
                       position, why);
        engine->io->refuse(engine->io->opaque, PROTO_REFUSAL_MALFORMED, detail);
        return false;
    }
    bridge->any_order = true;
    bridge->max_order = deliver->delivery_order;
    return true;
}

/* A live async call is delivered: no longer awaited from the parent. */
static void live_delivered(struct bridge *bridge, struct call *call)
{
    bridge->live_outstanding--;
    if (call->long_running)
        bridge->live_long_running--;
    bridge->blocked_version++;
}

static void accept_long_running(struct engine *engine, const struct proto_positions *positions)
{
    struct bridge *bridge = &engine->bridge;
    for (size_t i = 0; i < positions->count; i++) {
        uint32_t position = positions->items[i];
        if (position >= bridge->call_count || bridge->calls[position].state != CALL_LIVE ||
            HOST_APIS[bridge->calls[position].api].sync) {
            char detail[96];
            (void)snprintf(detail, sizeof detail, "position %u is not awaited", position);
            engine->io->refuse(engine->io->opaque, PROTO_REFUSAL_UNKNOWN_POSITION, detail);
            return;
        }
    }
    for (size_t i = 0; i < positions->count; i++) {
        struct call *call = &bridge->calls[positions->items[i]];
        if (!call->long_running) {
            call->long_running = true;
            bridge->live_long_running++;
        }
    }
}

static bool buffer_deliver(struct engine *engine, uint32_t position, bool rejected, JSValue value)
{
    struct bridge *bridge = &engine->bridge;
    if (bridge->buffered_count == bridge->buffered_cap) {
        size_t cap = bridge->buffered_cap ? bridge->buffered_cap * 2 : 8;
        struct buffered_deliver *grown =
            js_realloc_rt(engine->rt, bridge->buffered, cap * sizeof *grown);
        if (grown == NULL) {
            JS_FreeValue(engine->ctx, value);
            return false;
        }
        bridge->buffered = grown;
        bridge->buffered_cap = cap;
    }
    struct buffered_deliver *slot = &bridge->buffered[bridge->buffered_count++];
    slot->position = position;
    slot->rejected = rejected;
    slot->value = value;
    return true;
}

int bridge_apply_buffered(struct engine *engine)
{
    struct bridge *bridge = &engine->bridge;
    if (bridge->buffered_head == bridge->buffered_count) {
        bridge->buffered_head = bridge->buffered_count = 0;
        return 0;
    }
    struct buffered_deliver next = bridge->buffered[bridge->buffered_head];
    bridge->buffered[bridge->buffered_head++].value = JS_UNDEFINED;
    settle(engine, next.position, next.rejected, next.value); /* may buffer more */
    return 1;
}

enum bridge_wait bridge_waiting(const struct engine *engine)
{
    const struct bridge *bridge = &engine->bridge;
    if (bridge->live_outstanding > bridge->live_long_running)
        return WAIT_LIVE;
    return bridge->live_long_running > 0 ? WAIT_LONG_RUNNING_ONLY : WAIT_NOTHING;
}

static void send_blocked(struct engine *engine)
{
    struct bridge *bridge = &engine->bridge;
    size_t count = bridge->live_outstanding - bridge->live_long_running;
    if (count > PROTO_MAX_LIST_ENTRIES) {
        engine_fail(engine, FAIL_ENGINE, "%zu host calls awaited at once, over the %u a "
                                         "Blocked can carry",
                    count, PROTO_MAX_LIST_ENTRIES);
        return;
    }
    uint32_t *positions = malloc((count ? count : 1) * sizeof *positions);
    if (positions == NULL) {
        engine_fail(engine, FAIL_ENGINE, "out of memory listing %zu awaited calls", count);
        return;
    }
    while (bridge->live_low < bridge->call_count &&
           bridge->calls[bridge->live_low].state != CALL_LIVE)
        bridge->live_low++;
    size_t found = 0;
    for (uint32_t position = bridge->live_low; position < bridge->call_count && found < count;
         position++) {
        const struct call *call = &bridge->calls[position];
        if (call->state == CALL_LIVE && !call->long_running && !HOST_APIS[call->api].sync)
            positions[found++] = position;
    }
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_BLOCKED;
    msg.blocked.items = positions;
    msg.blocked.count = found;
    engine->io->send(engine->io->opaque, &msg);
    free(positions);
    bridge->blocked_sent = bridge->blocked_version;
}

void bridge_wait(struct engine *engine)
{
    struct bridge *bridge = &engine->bridge;
    if (bridge->blocked_sent != bridge->blocked_version) {
        send_blocked(engine);
        if (engine_stopping(engine))
            return;
    }
    struct proto_msg msg;
    engine->io->next(engine->io->opaque, &msg);
    if (msg.tag == PROTO_DELIVER) {
        JSValue value;
        if (accept_deliver(engine, &msg.deliver, UINT32_MAX, &value)) {
            struct call *call = &bridge->calls[msg.deliver.position];
            live_delivered(bridge, call);
            settle(engine, msg.deliver.position,
                   msg.deliver.settlement == PROTO_SETTLEMENT_REJECTED, value);
        }
    } else if (msg.tag == PROTO_LONG_RUNNING) {
        accept_long_running(engine, &msg.long_running);
    }
    proto_msg_free(&msg);
}

/* ------------------------------------------------------------------ host functions */

/* The arguments of a call as JSON text. */
struct args_text {
    const char *str;
    size_t len;
    bool js;              /* str is a QuickJS C string (JS_FreeCString), else in small */
    char small[256];      /* the fast path's text */
};

static void args_text_free(JSContext *ctx, struct args_text *args)
{
    if (args->js)
        JS_FreeCString(ctx, args->str);
    args->str = NULL;
    args->js = false;
}

/* Appends JSON text; false if it does not fit. */
static bool small_put(struct args_text *out, const char *bytes, size_t len)
{
    if (len > sizeof out->small - out->len)
        return false;
    memcpy(out->small + out->len, bytes, len);
    out->len += len;
    return true;
}

/* One string as JS_ToQuotedString quotes it, from its UTF-8 bytes: the two-character
 * escapes, \u00xx for the other controls, everything else as it is. A lone surrogate
 * (escaped by QuickJS, CESU bytes here) makes the text invalid UTF-8: *high is set
 * when any byte above 0x7f was written, for the caller's check. */
static bool small_put_quoted(struct args_text *out, const char *text, size_t len, bool *high)
{
    if (!small_put(out, "\"", 1))
        return false;
    size_t plain = 0; /* start of the run of bytes written as they are */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c >= 0x80)
            *high = true;
        if (c >= 32 && c != '"' && c != '\\')
            continue;
        char escape[6] = {'\\', 0, '0', '0', 0, 0};
        size_t escape_len = 2;
        switch (c) {
        case '\t': escape[1] = 't'; break;
        case '\r': escape[1] = 'r'; break;
        case '\n': escape[1] = 'n'; break;
        case '\b': escape[1] = 'b'; break;
        case '\f': escape[1] = 'f'; break;
        case '"': escape[1] = '"'; break;
        case '\\': escape[1] = '\\'; break;
        default: {
            static const char HEX[] = "0123456789abcdef";
            escape[1] = 'u';
            escape[4] = HEX[c >> 4];
            escape[5] = HEX[c & 15];
            escape_len = 6;
            break;
        }
        }
        if (!small_put(out, text + plain, i - plain) || !small_put(out, escape, escape_len))
            return false;
        plain = i + 1;
    }
    return small_put(out, text + plain, len - plain) && small_put(out, "\"", 1);
}

/* The common case without building an array for JSON.stringify: every argument a
 * string, number, boolean, null or undefined, and the text short. It is the text
 * JSON.stringify gives for such an array only where no toJSON can be found on the
 * array (Array.prototype and Object.prototype have none and are frozen: the locked
 * engine), so the plain engine never takes it. Primitives are never asked for toJSON.
 * 1 with the text in out, 0 if the general path must make it, -1 with an exception. */
static int args_json_fast(struct engine *engine, int count, const JSValueConst *argv,
                          struct args_text *out)
{
    JSContext *ctx = engine->ctx;
    if (engine->mode != ENGINE_LOCKED)
        return 0;
    out->len = 0;
    bool high = false; /* a byte above 0x7f: the text must be checked as UTF-8 */
    if (!small_put(out, "[", 1))
        return 0;
    for (int i = 0; i < count; i++) {
        if (i > 0 && !small_put(out, ",", 1))
            return 0;
        JSValueConst arg = argv[i];
        int tag = JS_VALUE_GET_NORM_TAG(arg);
        bool fits = true;
        if (tag == JS_TAG_INT) {
            /* Decimal, as "%d" writes it (snprintf costs more than the rest of the
             * call's text). */
            char number[12];
            size_t at = sizeof number;
            int32_t value = JS_VALUE_GET_INT(arg);
            uint32_t magnitude = value < 0 ? 0u - (uint32_t)value : (uint32_t)value;
            do {
                number[--at] = (char)('0' + magnitude % 10);
                magnitude /= 10;
            } while (magnitude > 0);
            if (value < 0)
                number[--at] = '-';
            fits = small_put(out, number + at, sizeof number - at);
        } else if (tag == JS_TAG_BOOL) {
            fits = JS_VALUE_GET_BOOL(arg) ? small_put(out, "true", 4) : small_put(out, "false", 5);
        } else if (tag == JS_TAG_NULL || tag == JS_TAG_UNDEFINED ||
                   (tag == JS_TAG_FLOAT64 && !isfinite(JS_VALUE_GET_FLOAT64(arg)))) {
            fits = small_put(out, "null", 4);
        } else if (tag == JS_TAG_FLOAT64 || tag == JS_TAG_STRING) {
            /* A number as JS_ToString writes it, a string quoted. Neither runs script
             * code. */
            size_t len = 0;
            const char *text = JS_ToCStringLen(ctx, &len, arg);
            if (text == NULL)
                return -1;
            fits = tag == JS_TAG_STRING ? small_put_quoted(out, text, len, &high)
                                        : small_put(out, text, len);
            JS_FreeCString(ctx, text);
        } else {
            return 0; /* objects (toJSON, getters, proxies), symbols, BigInts */
        }
        if (!fits)
            return 0;
    }
    if (!small_put(out, "]", 1) || (high && !utf8_valid((const uint8_t *)out->small, out->len)))
        return 0; /* long, or a lone surrogate the general path escapes */
    out->str = out->small;
    out->js = false;
    return 1;
}

/* The arguments of a call as JSON text in *out (args_text_free it); false with an
 * exception pending. */
static bool args_json(struct engine *engine, const struct host_api *api, int argc,
                      JSValueConst *argv, struct args_text *out)
{
    JSContext *ctx = engine->ctx;
    int count = argc < (int)api->arity ? argc : (int)api->arity;
    while (count > 0 && JS_IsUndefined(argv[count - 1]))
        count--;
    int fast = args_json_fast(engine, count, argv, out);
    if (fast != 0)
        return fast > 0;
    JSValue array = JS_NewArray(ctx);
    if (JS_IsException(array))
        return false;
    for (int i = 0; i < count; i++) {
        if (JS_DefinePropertyValueUint32(ctx, array, (uint32_t)i, JS_DupValue(ctx, argv[i]),
                                         JS_PROP_C_W_E) < 0) {
            JS_FreeValue(ctx, array);
            return false;
        }
    }
    JSValue json = JS_JSONStringify(ctx, array, JS_UNDEFINED, JS_UNDEFINED);
    JS_FreeValue(ctx, array);
    if (JS_IsException(json))
        return false;
    size_t len = 0;
    const char *text = JS_ToCStringLen(ctx, &len, json);
    JS_FreeValue(ctx, json);
    if (text == NULL)
        return false;
    if (!utf8_valid((const uint8_t *)text, len)) {
        JS_FreeCString(ctx, text);
        JS_ThrowTypeError(ctx, "host call arguments are not valid UTF-8");
        return false;
    }
    out->str = text;
    out->len = len;
    out->js = true;
    return true;
}

/* Rejects `promise` with the pending exception and returns it, unless the activation
 * is ending: then the exception goes on (it may be the uncatchable interrupt). */
static JSValue reject_pending(struct engine *engine, JSValue promise)
{
    JSContext *ctx = engine->ctx;
    if (engine_stopping(engine)) {
        JS_FreeValue(ctx, promise);
        return JS_EXCEPTION;
    }
    JSValue error = JS_GetException(ctx);
    JS_SettlePromise(ctx, promise, true, error);
    JS_FreeValue(ctx, error);
    return promise;
}

/* Rejects `promise` with `reason` (taken over; an exception: the pending one) and
 * returns it. */
static JSValue reject_with(JSContext *ctx, JSValue promise, JSValue reason)
{
    if (JS_IsException(reason))
        reason = JS_GetException(ctx);
    JS_SettlePromise(ctx, promise, true, reason);
    JS_FreeValue(ctx, reason);
    return promise;
}

/* The refusal of a host call made after bridge_close. */
static const char CLOSED_MESSAGE[] =
    "host calls are closed: the script has ended and its result is being serialized";

static JSValue host_call_async(JSContext *ctx, JSValueConst this_val, int argc,
                               JSValueConst *argv, int magic)
{
    (void)this_val;
    struct engine *engine = engine_of(ctx);
    struct bridge *bridge = &engine->bridge;
    const struct host_api *api = &HOST_APIS[magic];
    JSValue promise = JS_NewPendingPromise(ctx);
    if (JS_IsException(promise))
        return promise;
    if (bridge->closed) /* checked first: whatever else holds, it never leaves */
        return reject_with(ctx, promise, local_host_error(ctx, "closed", CLOSED_MESSAGE));
    if (engine_stopping(engine))
        return promise; /* never settles: the activation is over */
    struct args_text args;
    if (!args_json(engine, api, argc, argv, &args))
        return reject_pending(engine, promise);
    size_t len = args.len;
    size_t limit = engine_value_limit(engine);
    if (len > limit) {
        char message[160];
        (void)snprintf(message, sizeof message,
                       "the arguments of %s are %zu bytes of JSON, over the limit of %zu",
                       api->kind, len, limit);
        args_text_free(ctx, &args);
        return reject_with(ctx, promise, local_host_error(ctx, "too_large", message));
    }
    uint32_t slot;
    if (reserve_call(engine) < 0 || take_slot(engine, promise, &slot) < 0) {
        args_text_free(ctx, &args);
        return reject_pending(engine, promise);
    }
    uint32_t position = next_position(engine, (unsigned)magic);
    struct call *call = &bridge->calls[position];
    call->slot = slot; /* the slot holds the promise until it settles */
    int64_t recorded = engine->activation->prefix_count ? prefix_lookup(engine, position) : -1;
    if (recorded >= 0 &&
        !matches_prefix(engine, position, prefix_entry(engine, (uint32_t)recorded), api->kind,
                        args.str, len)) {
        args_text_free(ctx, &args);
        return promise; /* never settles: the activation ends as nondeterminism */
    }
    if (recorded >= 0) {
        call->state = CALL_REPLAY;
    } else {
        call->state = CALL_LIVE;
        bridge->live_outstanding++;
        bridge->blocked_version++;
        send_host_call(engine, position, api->kind, args.str, len);
    }
    args_text_free(ctx, &args);
    return promise;
}

/* Waits for the Deliver of a live synchronous call; other Delivers are buffered. */
static JSValue wait_sync(struct engine *engine, uint32_t position, bool *rejected)
{
    struct bridge *bridge = &engine->bridge;
    for (;;) {
        struct proto_msg msg;
        engine->io->next(engine->io->opaque, &msg);
        if (msg.tag == PROTO_LONG_RUNNING) {
            accept_long_running(engine, &msg.long_running);
        } else if (msg.tag == PROTO_DELIVER) {
            JSValue value;
            if (accept_deliver(engine, &msg.deliver, position, &value)) {
                bool is_rejected = msg.deliver.settlement == PROTO_SETTLEMENT_REJECTED;
                uint32_t delivered = msg.deliver.position;
                if (delivered == position) {
                    proto_msg_free(&msg);
                    *rejected = is_rejected;
                    return value;
                }
                struct call *call = &bridge->calls[delivered];
                live_delivered(bridge, call);
                call->state = CALL_SETTLED; /* for the parent; its promise settles later */
                if (!buffer_deliver(engine, delivered, is_rejected, value)) {
                    proto_msg_free(&msg);
                    return JS_ThrowOutOfMemory(engine->ctx);
                }
            } else if (engine_stopping(engine)) {
                proto_msg_free(&msg);
                return JS_ThrowOutOfMemory(engine->ctx);
            }
        }
        proto_msg_free(&msg);
    }
}

/* now() and random(): the value of a synchronous host call. */
static JSValue host_call_sync(JSContext *ctx, unsigned api_index)
{
    struct engine *engine = engine_of(ctx);
    const struct host_api *api = &HOST_APIS[api_index];
    if (engine->activation == NULL)
        return JS_ThrowTypeError(ctx, "%s is not available outside an activation", api->kind);
    if (engine->bridge.closed) {
        JSValue error = local_host_error(ctx, "closed", CLOSED_MESSAGE);
        return JS_IsException(error) ? error : JS_Throw(ctx, error);
    }
    if (engine_stopping(engine))
        return JS_ThrowInternalError(ctx, "the activation is ending");
    static const char NO_ARGS[] = "[]";
    if (reserve_call(engine) < 0)
        return JS_EXCEPTION;
    uint32_t position = next_position(engine, api_index);
    JSValue value;
    bool rejected = false;
    int64_t recorded = engine->activation->prefix_count ? prefix_lookup(engine, position) : -1;
    if (recorded >= 0) {
        const struct proto_recorded_entry *entry = prefix_entry(engine, (uint32_t)recorded);
        if (!matches_prefix(engine, position, entry, api->kind, NO_ARGS, sizeof NO_ARGS - 1))
            return JS_ThrowInternalError(ctx, "nondeterminism");
        engine->bridge.prefix_done[recorded] = true;
        engine->bridge.prefix_remaining--;
        rejected = entry->settlement == PROTO_SETTLEMENT_REJECTED;
        value = parse_value(ctx, entry->value);
        if (JS_IsException(value) && !engine_stopping(engine)) {
            JS_FreeValue(ctx, JS_GetException(ctx));
            engine_fail(engine, FAIL_PROTOCOL, "the journal's value for position %u is not JSON",
                        position);
            return JS_ThrowInternalError(ctx, "protocol error");
        }
    } else {
        engine->bridge.calls[position].state = CALL_LIVE;
        send_host_call(engine, position, api->kind, NO_ARGS, sizeof NO_ARGS - 1);
        value = wait_sync(engine, position, &rejected);
    }
    engine->bridge.calls[position].state = CALL_SETTLED;
    if (JS_IsException(value))
        return value;
    if (rejected) {
        JSValue error = host_error(ctx, value);
        return JS_IsException(error) ? error : JS_Throw(ctx, error);
    }
    double number;
    if (!JS_IsNumber(value) || JS_ToFloat64(ctx, &number, value) < 0 ||
        (api_index == API_RANDOM && !(number >= 0 && number < 1))) {
        JS_FreeValue(ctx, value);
        return JS_ThrowTypeError(ctx, "the host's %s is not a valid number", api->kind);
    }
    return value;
}

JSValue bridge_now(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    (void)argc;
    (void)argv;
    return host_call_sync(ctx, API_NOW);
}

JSValue bridge_random(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    (void)argc;
    (void)argv;
    return host_call_sync(ctx, API_RANDOM);
}

/* step(name, fn): a named section of the script. Calls fn and returns a Promise of its
 * result; no host call. */
static JSValue js_step(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    struct engine *engine = engine_of(ctx);
    JSValue promise = JS_NewPendingPromise(ctx);
    if (JS_IsException(promise))
        return promise;
    if (argc < 2 || !JS_IsString(argv[0]) || !JS_IsFunction(ctx, argv[1]))
        return reject_with(ctx, promise,
                           JS_ThrowTypeError(ctx, "step(name, fn) takes a name and a function"));
    JSValue result = JS_Call(ctx, argv[1], JS_UNDEFINED, 0, NULL);
    if (JS_IsException(result))
        return reject_pending(engine, promise);
    JS_SettlePromise(ctx, promise, false, result);
    JS_FreeValue(ctx, result);
    return promise;
}

/* ------------------------------------------------------------------ console */

/* Appends piece to the text being built on the runtime's heap; false if the heap
 * budget refuses the room (nothing is thrown). */
static bool console_append(JSRuntime *rt, char **text, size_t *used, size_t *cap,
                           const char *piece, size_t piece_len, bool space)
{
    size_t need = *used + (space ? 1 : 0) + piece_len + 1;
    if (need < piece_len)
        return false;
    if (need > *cap) {
        size_t grown_cap = *cap;
        while (grown_cap < need)
            grown_cap = grown_cap > SIZE_MAX / 2 ? need : grown_cap * 2;
        char *grown = js_realloc_rt(rt, *text, grown_cap);
        if (grown == NULL)
            return false;
        *text = grown;
        *cap = grown_cap;
    }
    if (space)
        (*text)[(*used)++] = ' ';
    memcpy(*text + *used, piece, piece_len);
    *used += piece_len;
    (*text)[*used] = '\0';
    return true;
}

/* The text of console.log's arguments, separated by spaces: strings as they are,
 * objects as JSON (their string form if they have none). It is built on the
 * runtime's heap (js_malloc_rt), so it counts against the heap budget like any value
 * the script makes; free it with js_free_rt. NULL with an exception pending if it
 * does not fit in the budget or the activation is ending. */
static char *console_text(JSContext *ctx, int argc, JSValueConst *argv, size_t *len)
{
    struct engine *engine = engine_of(ctx);
    JSRuntime *rt = JS_GetRuntime(ctx);
    size_t cap = 256, used = 0;
    char *text = js_malloc_rt(rt, cap);
    if (text == NULL) {
        JS_ThrowOutOfMemory(ctx);
        return NULL;
    }
    text[0] = '\0';
    for (int i = 0; i < argc; i++) {
        JSValue shown;
        if (JS_IsString(argv[i]) || !JS_IsObject(argv[i]))
            shown = JS_ToString(ctx, argv[i]);
        else
            shown = JS_JSONStringify(ctx, argv[i], JS_UNDEFINED, JS_UNDEFINED);
        if ((JS_IsException(shown) || JS_IsUndefined(shown)) && !engine_stopping(engine)) {
            JS_FreeValue(ctx, JS_GetException(ctx));
            shown = JS_ToString(ctx, argv[i]);
            if (JS_IsException(shown) && !engine_stopping(engine)) {
                JS_FreeValue(ctx, JS_GetException(ctx));
                shown = JS_NewString(ctx, "[value]");
            }
        }
        size_t piece_len = 0;
        const char *piece = JS_IsException(shown) ? NULL : JS_ToCStringLen(ctx, &piece_len, shown);
        JS_FreeValue(ctx, shown);
        if (piece == NULL || engine_stopping(engine)) {
            /* Out of memory or the activation ending: the pending exception says which
             * (one is thrown if the activation ended without one of its own). */
            if (piece != NULL)
                JS_ThrowInternalError(ctx, "the activation is ending");
            JS_FreeCString(ctx, piece);
            js_free_rt(rt, text);
            return NULL;
        }
        bool appended = console_append(rt, &text, &used, &cap, piece, piece_len, i > 0);
        JS_FreeCString(ctx, piece);
        if (!appended) {
            js_free_rt(rt, text);
            JS_ThrowOutOfMemory(ctx);
            return NULL;
        }
    }
    *len = used;
    return text;
}

/* console.log / console.error in codemode: Console messages, 64 KiB in all. The text
 * is the script's to pay for: if building it makes the heap budget refuse anything,
 * the heap is exhausted (budget_exhausted memory, whatever the script does next),
 * not an error the script could catch. */
static JSValue js_console(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv,
                          int magic)
{
    (void)this_val;
    struct engine *engine = engine_of(ctx);
    struct bridge *bridge = &engine->bridge;
    if (bridge->console_truncated)
        return JS_UNDEFINED;
    JSRuntime *rt = engine->rt;
    size_t refused_before = budget_refusals(&engine->budget);
    size_t len = 0;
    char *raw = console_text(ctx, argc, argv, &len);
    size_t room = PROTO_MAX_CONSOLE_BYTES - bridge->console_bytes;
    size_t shown = len < room ? len : room;
    char *text = raw != NULL ? js_malloc_rt(rt, shown + 1) : NULL;
    if (budget_refusals(&engine->budget) != refused_before) {
        /* Some of it did not fit (an argument's JSON, a piece, the whole): the
         * script's text is over its heap budget. */
        js_free_rt(rt, raw);
        js_free_rt(rt, text);
        budget_exhaust_heap(&engine->budget);
        return raw != NULL ? JS_ThrowOutOfMemory(ctx) : JS_EXCEPTION;
    }
    if (text == NULL) {
        js_free_rt(rt, raw);
        return raw != NULL ? JS_ThrowOutOfMemory(ctx) : JS_EXCEPTION;
    }
    size_t clean = engine_clean_text(text, shown, raw, len);
    js_free_rt(rt, raw);
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_CONSOLE;
    msg.console.stream = proto_text_of(magic ? "error" : "log");
    msg.console.text.str = text;
    msg.console.text.len = clean;
    engine->io->send(engine->io->opaque, &msg);
    js_free_rt(rt, text);
    bridge->console_bytes += clean;
    if (len > room || bridge->console_bytes >= PROTO_MAX_CONSOLE_BYTES) {
        bridge->console_truncated = true;
        memset(&msg, 0, sizeof msg);
        msg.tag = PROTO_CONSOLE;
        msg.console.stream = proto_text_of("error");
        msg.console.text = proto_text_of("[console output truncated at 65536 bytes]");
        engine->io->send(engine->io->opaque, &msg);
    }
    return JS_UNDEFINED;
}

#ifdef BASAL_TEST_HOOKS
/* Test builds, plain context: print and console.log write a line on stderr. */
static JSValue js_test_print(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    size_t len = 0;
    char *text = console_text(ctx, argc, argv, &len);
    if (text == NULL)
        return JS_EXCEPTION;
    text[len++] = '\n'; /* over the terminating NUL console_text always leaves room for */
    for (size_t done = 0; done < len;) {
        ssize_t wrote = write(2, text + done, len - done);
        if (wrote < 0 && errno == EINTR)
            continue;
        if (wrote <= 0)
            break;
        done += (size_t)wrote;
    }
    js_free_rt(JS_GetRuntime(ctx), text);
    return JS_UNDEFINED;
}

/* Test builds: a system call the seccomp allowlist refuses, so a test can watch the
 * worker die by SIGSYS in the middle of an activation. */
static JSValue js_test_forbidden_syscall(JSContext *ctx, JSValueConst this_val, int argc,
                                         JSValueConst *argv)
{
    (void)this_val;
    (void)argc;
    (void)argv;
    return JS_NewInt32(ctx, (int32_t)getppid());
}

/* Test builds: native code that never reaches an interrupt poll, so a test can watch
 * the CPU timer's backstop end the activation (cpu_timer.h). */
static JSValue js_test_native_spin(JSContext *ctx, JSValueConst this_val, int argc,
                                   JSValueConst *argv)
{
    (void)ctx;
    (void)this_val;
    (void)argc;
    (void)argv;
    for (volatile unsigned long spins = 0;; spins++) {
    }
    return JS_UNDEFINED;
}
#endif

/* ------------------------------------------------------------------ installation */

/* The API is installed from static function lists, so QuickJS creates each object and
 * function only when the script first touches it. Every binding is read-only and
 * non-configurable; a QuickJS with the hardening patch creates such lazy values
 * frozen, otherwise bridge_install freezes them at once. */
#define API_READ_ONLY JS_PROP_ENUMERABLE

#define API_ASYNC(prop, index, length_)                                                        \
    {                                                                                          \
        .name = (prop), .prop_flags = API_READ_ONLY, .def_type = JS_DEF_CFUNC,                \
        .magic = (index), .u = {                                                               \
            .func = {.length = (length_), .cproto = JS_CFUNC_generic_magic,                    \
                     .cfunc = {.generic_magic = host_call_async}}                              \
        }                                                                                      \
    }
#define API_FUNCTION(prop, length_, function)                                                 \
    {                                                                                          \
        .name = (prop), .prop_flags = API_READ_ONLY, .def_type = JS_DEF_CFUNC, .magic = 0,    \
        .u = {                                                                                 \
            .func = {.length = (length_), .cproto = JS_CFUNC_generic,                          \
                     .cfunc = {.generic = (function)}}                                         \
        }                                                                                      \
    }
#define API_CONSOLE(prop, stream)                                                             \
    {                                                                                          \
        .name = (prop), .prop_flags = API_READ_ONLY, .def_type = JS_DEF_CFUNC,                \
        .magic = (stream), .u = {                                                              \
            .func = {.length = 0, .cproto = JS_CFUNC_generic_magic,                            \
                     .cfunc = {.generic_magic = js_console}}                                   \
        }                                                                                      \
    }
#define API_OBJECT(prop, list)                                                                \
    {                                                                                          \
        .name = (prop), .prop_flags = API_READ_ONLY, .def_type = JS_DEF_OBJECT, .magic = 0,   \
        .u = {.prop_list = {.tab = (list), .len = sizeof(list) / sizeof((list)[0])}}           \
    }

static const JSCFunctionListEntry KV_API[] = {
    API_ASYNC("get", API_KV_GET, 1), API_ASYNC("set", API_KV_SET, 2), API_ASYNC("delete", API_KV_DELETE, 1)};
static const JSCFunctionListEntry FS_API[] = {
    API_ASYNC("read", API_FS_READ, 1), API_ASYNC("list", API_FS_LIST, 1), API_ASYNC("stat", API_FS_STAT, 1),
    API_ASYNC("write", API_FS_WRITE, 2)};
static const JSCFunctionListEntry NET_API[] = {API_ASYNC("fetch", API_NET_FETCH, 1)};
static const JSCFunctionListEntry GIT_API[] = {
    API_ASYNC("log", API_GIT_LOG, 1), API_ASYNC("revParse", API_GIT_REV_PARSE, 2),
    API_ASYNC("describeTags", API_GIT_DESCRIBE_TAGS, 1), API_ASYNC("show", API_GIT_SHOW, 3),
    API_ASYNC("diff", API_GIT_DIFF, 3), API_ASYNC("lsFiles", API_GIT_LS_FILES, 1)};
static const JSCFunctionListEntry OPS_API[] = {API_ASYNC("call", API_OPS_CALL, 3)};
static const JSCFunctionListEntry SINK_API[] = {API_ASYNC("emit", API_SINK_EMIT, 2)};
static const JSCFunctionListEntry TOOLS_API[] = {API_ASYNC("call", API_TOOLS_CALL, 2)};
static const JSCFunctionListEntry CONSOLE_API[] = {API_CONSOLE("log", 0), API_CONSOLE("error", 1)};

static const JSCFunctionListEntry FLOW_GLOBALS[] = {
    API_OBJECT("kv", KV_API),     API_OBJECT("fs", FS_API),     API_OBJECT("net", NET_API),
    API_OBJECT("git", GIT_API),   API_OBJECT("ops", OPS_API),   API_OBJECT("sink", SINK_API),
    API_FUNCTION("now", 0, bridge_now), API_FUNCTION("random", 0, bridge_random),
    API_FUNCTION("step", 2, js_step),
};
static const JSCFunctionListEntry CODEMODE_GLOBALS[] = {
    API_OBJECT("tools", TOOLS_API),
    API_OBJECT("console", CONSOLE_API),
};

#ifdef BASAL_TEST_HOOKS
static const JSCFunctionListEntry TEST_GLOBALS[] = {
    API_FUNCTION("__basalTestForbiddenSyscall", 0, js_test_forbidden_syscall),
    API_FUNCTION("__basalTestNativeSpin", 0, js_test_native_spin),
};
static const JSCFunctionListEntry TEST_PRINT[] = {API_FUNCTION("log", 1, js_test_print)};
static const JSCFunctionListEntry TEST_PLAIN_GLOBALS[] = {
    API_FUNCTION("print", 1, js_test_print),
    API_OBJECT("console", TEST_PRINT),
};
#endif

/* Installs a list on the global object and creates its values at once: QuickJS
 * creates the values of a function list lazily, and creating one later, when the
 * heap budget may be spent, can abort the process (it cannot report a failure to
 * allocate the names of an object's functions). Without the hardening patch the
 * values are frozen here; with it they were created frozen. */
static int install_list(struct engine *engine, JSValueConst global,
                        const JSCFunctionListEntry *list, int count)
{
    JSContext *ctx = engine->ctx;
    JS_SetPropertyFunctionList(ctx, global, list, count);
    for (int i = 0; i < count; i++) {
        JSValue value = JS_GetPropertyStr(ctx, global, list[i].name);
        int rc = JS_IsException(value) ? -1 : 0;
#ifndef JS_HAVE_HARDEN_REACHABLE
        if (rc == 0 && engine->mode == ENGINE_LOCKED)
            rc = engine_harden(ctx, value);
#endif
        JS_FreeValue(ctx, value);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* An exception from installing, as Finished(failed, engine_error). */
static void install_failed(struct engine *engine, const char *what)
{
    if (engine_stopping(engine))
        return;
    JSValue error = JS_GetException(engine->ctx);
    char why[256];
    engine_describe_exception(engine->ctx, error, false, why, sizeof why - 1);
    JS_FreeValue(engine->ctx, error);
    engine_fail(engine, FAIL_ENGINE, "installing %s failed: %s", what, why);
}

int bridge_install_api(struct engine *engine)
{
    JSContext *ctx = engine->ctx;
    JSValue global = JS_GetGlobalObject(ctx);
    bool codemode = engine->activation->profile == PROTO_PROFILE_CODEMODE;
    int rc;
#ifdef BASAL_TEST_HOOKS
    if (engine->mode == ENGINE_PLAIN)
        codemode = false; /* the plain context gets the flow's API, and print */
#endif
    if (codemode)
        rc = install_list(engine, global, CODEMODE_GLOBALS,
                          sizeof CODEMODE_GLOBALS / sizeof CODEMODE_GLOBALS[0]);
    else
        rc = install_list(engine, global, FLOW_GLOBALS, sizeof FLOW_GLOBALS / sizeof FLOW_GLOBALS[0]);
#ifdef BASAL_TEST_HOOKS
    if (rc == 0)
        rc = install_list(engine, global, TEST_GLOBALS, sizeof TEST_GLOBALS / sizeof TEST_GLOBALS[0]);
    if (rc == 0 && engine->mode == ENGINE_PLAIN)
        rc = install_list(engine, global, TEST_PLAIN_GLOBALS,
                          sizeof TEST_PLAIN_GLOBALS / sizeof TEST_PLAIN_GLOBALS[0]);
#endif
    JS_FreeValue(ctx, global);
    if (rc < 0)
        install_failed(engine, "the script's API");
    return rc;
}

int bridge_install_trigger(struct engine *engine)
{
    JSContext *ctx = engine->ctx;
    const struct proto_text *text = &engine->activation->trigger;
    JSValue trigger = JS_NULL;
    if (text->len > 0) {
        trigger = JS_ParseJSON(ctx, text->str, text->len, "trigger");
        if (JS_IsException(trigger)) {
            if (engine_stopping(engine))
                return -1; /* out of memory: the budget's outcome */
            JSValue error = JS_GetException(ctx);
            char why[256];
            engine_describe_exception(ctx, error, false, why, sizeof why - 1);
            JS_FreeValue(ctx, error);
            engine_fail(engine, FAIL_INVALID_TRIGGER, "the trigger is not JSON: %s", why);
            return -1;
        }
    }
    if (engine->mode == ENGINE_LOCKED && JS_IsObject(trigger) && engine_harden(ctx, trigger) < 0) {
        JS_FreeValue(ctx, trigger);
        install_failed(engine, "the trigger");
        return -1;
    }
    JSValue global = JS_GetGlobalObject(ctx);
    int rc = JS_DefinePropertyValueStr(ctx, global, "trigger", trigger,
                                       API_READ_ONLY | JS_PROP_THROW);
    JS_FreeValue(ctx, global);
    if (rc < 0) {
        install_failed(engine, "the trigger");
        return -1;
    }
    return 0;
}

void bridge_free(struct engine *engine)
{
    struct bridge *bridge = &engine->bridge;
    for (size_t i = bridge->buffered_head; i < bridge->buffered_count; i++)
        JS_FreeValue(engine->ctx, bridge->buffered[i].value);
    js_free_rt(engine->rt, bridge->buffered);
    for (uint32_t i = 0; i < bridge->slot_cap; i++)
        JS_FreeValue(engine->ctx, bridge->slots[i].promise);
    js_free_rt(engine->rt, bridge->slots);
    js_free_rt(engine->rt, bridge->calls);
    free(bridge->prefix_by_position);
    free(bridge->prefix_by_order);
    free(bridge->prefix_done);
    memset(bridge, 0, sizeof *bridge);
}
