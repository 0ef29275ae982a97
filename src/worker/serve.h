/* Engine mode after confinement: the worker's side of the protocol (docs/protocol.md,
 * docs/engine.md).
 *
 * States: awaiting-hello -> ready -> running -> ready -> ...
 *   awaiting-hello  Hello with our version is answered by Welcome (the confinement in
 *                   force and the prelude hash); another version by
 *                   Refused(version_mismatch).
 *   ready           Activate starts an activation in a fresh engine, built ahead of
 *                   time while the worker waited.
 *   running         the engine runs the script; Deliver and LongRunning go to it,
 *                   it answers with HostCall, Blocked, Console and finally Finished,
 *                   and the worker is ready again.
 * In every state: a frame that fails to decode is answered by Refused(malformed) and
 * one unexpected in the state by Refused(unexpected_frame, "<message> in state
 * <state>"), and the worker keeps serving; an oversized, truncated or unreadable
 * stream ends it with exit 3; EOF at a frame boundary or Shutdown ends it with exit 0. */
#ifndef BASAL_WORKER_SERVE_H
#define BASAL_WORKER_SERVE_H

#include <stdbool.h>

#include "worker/confine.h"

/* The engine this worker embeds, as Welcome reports it. */
#define WORKER_ENGINE_IDENTITY "quickjs 2021-03-27"

struct serve_options {
#ifdef BASAL_TEST_HOOKS
    /* --test-profile=plain: every activation in QuickJS's full context, without the
     * lockdown prelude (for QuickJS's own test suites); still fully confined. */
    bool test_plain_profile;
#endif
    char unused; /* keeps the struct non-empty in release builds */
};

/* Serves frames on stdin/stdout until the end; returns the exit status. */
int serve(const struct confinement *state, const struct serve_options *options);

#endif
