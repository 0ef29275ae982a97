/* The engine: one fresh QuickJS runtime and context per activation (docs/engine.md).
 *
 * engine_prepare builds a runtime and context and applies the lockdown (the prelude):
 * it needs no Activate, so serve builds the next engine while it waits for one.
 * engine_run then runs one activation in it, talking to the parent through an
 * engine_io, and fills in the Finished message; the engine is used once and freed.
 *
 * Everything here runs after confinement: QuickJS, malloc and the engine's own code
 * only, plus the clock reads of the CPU budget. */
#ifndef BASAL_WORKER_ENGINE_H
#define BASAL_WORKER_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/message.h"
#include "worker/engine_io.h"

struct engine;

/* A fresh runtime and context in `mode`, locked down, with no activation yet; NULL if
 * it could not be built (an allocation failed). */
struct engine *engine_prepare(enum engine_mode mode);

/* Runs `activation` to its end in a prepared engine (once per engine) and fills *out;
 * the texts in *out stay valid until engine_free, and `activation` must stay alive
 * until then too. Returns false, with the reason in refusal (cap bytes), if the
 * Activate cannot be run at all (its prefix records a position or a delivery order
 * twice): nothing ran and the engine can take the next Activate. */
bool engine_run(struct engine *engine, const struct proto_activate *activation,
                const struct engine_io *io, struct proto_finished *out, char *refusal,
                size_t cap);

/* Frees the runtime and everything the activation left. NULL is allowed. */
void engine_free(struct engine *engine);

/* SHA-256 of src/worker/prelude.js, computed at build time (Welcome.prelude_hash). */
extern const uint8_t ENGINE_PRELUDE_SHA256[PROTO_DIGEST_BYTES];

#endif
