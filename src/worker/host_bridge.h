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
 * value's "message" and whose .data is the parsed value. The bridge works on the
 * engine's state (engine_internal.h) and decides outcomes through engine_outcome.h;
 * it never calls the activation loop in engine.c. */
#ifndef BASAL_WORKER_HOST_BRIDGE_H
#define BASAL_WORKER_HOST_BRIDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <quickjs.h>

#include "worker/host_apis.h"

struct engine;

/* The API's host calls, their kinds and sync flags: host_apis.h (the function lists
 * in host_bridge.c give their JS names). */

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

/* The script's promise has settled and the engine is deciding the outcome: from now on
 * every host call is refused in the worker and none leaves. Script code can still run
 * while the outcome is decided (a toJSON, getter or Proxy trap of the result, a
 * getter of a thrown error); its async calls reject and its synchronous ones throw,
 * with a HostError {"code":"closed"}, and take no position. */
void bridge_close(struct engine *engine);

/* Unreleased prefix entries remain (the script ended or stalled before them). */
bool bridge_prefix_pending(const struct engine *engine, char *detail, size_t cap);

/* Releases every JS value the bridge holds (before the runtime is freed). */
void bridge_free(struct engine *engine);


#endif
