/* What an engine needs from whoever runs it: the context mode, and the way to the
 * parent while an activation runs (serve provides it). Shared by the engine's public
 * header (engine.h) and its state (engine_internal.h). */
#ifndef BASAL_WORKER_ENGINE_IO_H
#define BASAL_WORKER_ENGINE_IO_H

#include "proto/message.h"

/* The context an activation runs in. */
enum engine_mode {
    ENGINE_LOCKED, /* flow and codemode: the lockdown prelude applied */
#ifdef BASAL_TEST_HOOKS
    ENGINE_PLAIN, /* test builds only: QuickJS's full context, no prelude */
#endif
};

/* How the engine reaches the parent while an activation runs (serve provides it). */
struct engine_io {
    /* Sends one message; does not return if the parent is gone. */
    void (*send)(void *opaque, const struct proto_msg *msg);
    /* Blocks for the next Deliver or LongRunning. Every other frame is answered by
     * the provider as the running state requires; the end of input or Shutdown ends
     * the process. The caller frees *out with proto_msg_free. */
    void (*next)(void *opaque, struct proto_msg *out);
    /* Answers the frame just returned by next with Refused. */
    void (*refuse)(void *opaque, enum proto_refusal reason, const char *detail);
    void *opaque;
};

#endif
