/* Deep freezing for the lockdown (docs/engine.md, "Lockdown"): the prelude and the
 * bridge freeze what a script can reach through these. */
#ifndef BASAL_WORKER_ENGINE_HARDEN_H
#define BASAL_WORKER_ENGINE_HARDEN_H

#include <quickjs.h>

/* Freezes every object reachable from root through own properties (values, getters,
 * setters) and prototypes. -1 with an exception pending on failure. */
int engine_harden(JSContext *ctx, JSValueConst root);

/* Makes every own property of obj non-configurable (and non-writable if a data
 * property) and hardens the values, without making obj itself non-extensible: the
 * global object keeps accepting new properties. */
int engine_harden_bindings(JSContext *ctx, JSValueConst obj);

#endif
