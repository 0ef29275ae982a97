/* Host calls as the activation driver sees them.
 *
 * A script's host call reaches the parent as HostCall{position, kind, args}. The
 * activation driver (supervisor/activation.c) hands it to a host through this interface and
 * gets back a settlement: fulfilled with a JSON value, or rejected with a JSON error
 * object {"code": ..., "message": ...}. A host says when the settlement may be
 * released to the worker: at once (delay 0) or after a delay in milliseconds (the test
 * host's "test.sleep"). The driver keeps the delayed settlements, with their due
 * times on the monotonic clock, and releases them in due order while the worker is
 * blocked; it never blocks past the activation's wall deadline waiting for one.
 *
 * The synchronous kinds ("now", "random") block the engine until they are answered:
 * the driver answers them at once, whatever delay a host asks for.
 *
 * Hosts never see the worker: they get a kind and the argument JSON text and produce
 * JSON text. The driver checks sizes (an argument or result over the activation's
 * max_value_bytes is a "too_large" rejection without, or instead of, the host's
 * answer). */
#ifndef BASAL_HOST_HOST_H
#define BASAL_HOST_HOST_H

#include "proto/message.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Rejection codes a script sees as HostError.data.code. */
#define HOST_CODE_DENIED "denied"
#define HOST_CODE_INVALID_ARGUMENTS "invalid_arguments"
#define HOST_CODE_NOT_FOUND "not_found"
#define HOST_CODE_TOO_LARGE "too_large"
#define HOST_CODE_IO_ERROR "io_error"
#define HOST_CODE_TIMEOUT "timeout"

struct host_call {
    uint32_t position;
    const char *kind; /* NUL-terminated */
    const char *args; /* JSON text (an array), NUL-terminated */
    size_t args_len;
};

struct host_settlement {
    enum proto_settlement settlement;
    char *value; /* JSON text, malloc'd; owned by whoever holds the settlement */
};

/* host_ops.call's answer for a call that was started and settles outside this
 * activation (a long-running module op its module accepted): no settlement. The
 * driver tells the worker the position is long-running (LongRunning); a worker left
 * with only such calls finishes suspended. */
#define HOST_CALL_LONG_RUNNING 1

struct host_ops {
    /* Performs (or starts) one call. Fills *out (value malloc'd, never NULL on
     * return 0) and *delay_ms (0: release at once). Returns 0, HOST_CALL_LONG_RUNNING
     * (*out untouched: only a host that can wait returns it), or -1 if the host could
     * not even produce a rejection (out of memory): the driver then rejects with
     * io_error itself. */
    int (*call)(void *self, const struct host_call *call, struct host_settlement *out,
                long long *delay_ms);
    /* Optional (NULL: not told). Called after a settlement went to the worker as
     * Deliver with delivery_order: the settlement the worker actually saw, which may be
     * the driver's own rejection (too_large, the call limit) instead of the host's, for
     * a call the host may never have been asked (then call() was not called for it). */
    void (*delivered)(void *self, const struct host_call *call,
                      const struct host_settlement *seen, uint32_t delivery_order);
    /* Optional (NULL: no kind is). True for a kind the engine waits for
     * synchronously (now, random): the driver answers it at once, outside the
     * outstanding-call bounds. Each host answers from its own kinds (the flow hosts
     * from flows/host_kinds.h's table), so no list of kinds lives in this layer. */
    bool (*is_sync)(void *self, const char *kind);
};

struct host {
    const struct host_ops *ops;
    void *self;
};

/* The longest host-call kind the parent accepts from a worker. */
#define HOST_KIND_MAX_BYTES 64u

/* True if kind[0..len) is the form every host-call name has ("kv.get", "git.revParse",
 * "test.sleep"): 1 to HOST_KIND_MAX_BYTES bytes, a lowercase ASCII letter, then
 * ASCII letters, digits, '_' and '.'. The driver refuses any other kind before a host
 * (or the store, or an audit line) sees it. */
bool host_kind_valid(const char *kind, size_t len);

/* The host's is_sync answer for kind; false for a host that has none. */
bool host_is_sync(const struct host *h, const char *kind);

/* Settlement helpers: each returns 0, or -1 (out of memory; *out untouched). */
int host_fulfil_text(struct host_settlement *out, const char *json);
/* Takes a reference-free copy of value's serialisation (jansson json_t *). */
int host_fulfil_json(struct host_settlement *out, const void *json_value);
/* Rejects with {"code": code, "message": message formatted}. */
__attribute__((format(printf, 3, 4))) int host_reject(struct host_settlement *out,
                                                       const char *code, const char *fmt,
                                                       ...);

void host_settlement_free(struct host_settlement *s);

/* The "code" of a rejection into code (empty for a fulfilment or a rejection
 * without one). */
void host_settlement_code(const struct host_settlement *s, char *code, size_t cap);

#endif
