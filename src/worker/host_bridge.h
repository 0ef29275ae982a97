/* The host-call bridge: the script's global API, and everything between a call and
 * its settlement (docs/engine.md, "Host calls" and "Replay").
 *
 * Every API function is a host call of a fixed kind with a JSON array of arguments:
 * the arguments the script passed, cut to the call's arity, trailing undefined ones
 * dropped. Each call takes the next position (0, 1, 2, ... in call order).
 *
 *   async calls  return a Promise. A position with a prefix entry is checked against
 *                it (kind, SHA-256 of the argument bytes) and settled from it when its
 *                turn comes in delivery order; any other is sent as HostCall and
 *                settled by the parent's Deliver.
 *   sync calls   now() and random() (and Date.now, new Date(), Math.random) return a
 *                value: from the prefix, or by blocking on the parent's Deliver.
 *
 * A rejected settlement rejects with an Error named "HostError" whose message is the
 * value's "message" and whose .data is the parsed value. The functions of the API
 * are declared in engine_internal.h (the bridge shares the engine's state). */
#ifndef BASAL_WORKER_HOST_BRIDGE_H
#define BASAL_WORKER_HOST_BRIDGE_H

#include <stdbool.h>
#include <stdint.h>

/* One host call of the API (the functions that make it are in host_bridge.c's
 * function lists, which give their JS names). */
struct host_api {
    const char *kind; /* the HostCall kind */
    uint8_t arity;    /* arguments sent, at most */
    bool sync;        /* now/random: returns a value, blocks on a live call */
};

extern const struct host_api HOST_APIS[];
extern const unsigned HOST_API_COUNT;

#endif
