/* Health of the worker pool: counters, runs by outcome (overall and per flow), pool
 * gauges and the confinement counter, as JSON (docs/operations.md describes each field).
 *
 * Counters (a worker may count in more than one, e.g. retired and killed):
 *   spawned           worker processes started (fork + exec succeeded)
 *   refused_welcomes  started workers refused at the handshake (Welcome or kernel view)
 *   spawn_failures    starts that failed (could not start, or refused): the backoff's input
 *   retired           accepted workers the pool ended by policy: activation count, idle
 *                     time, budget exhaustion, an unclean end, single use, eviction
 *   killed            workers the parent SIGKILLed: deadline, refusal, protocol error,
 *                     a retirement by kill (budget exhaustion) or one that ignored Shutdown
 *   crashed           accepted workers that died on their own (a signal or an exit)
 *   respawned         accepted workers started to replace one that had ended
 *   worker_confinement.sigsys_deaths
 *                     workers that died by SIGSYS (the seccomp filter killed them), and
 *                     nothing else: not a parent kill, SIGKILL, or the worker's own exit 70. */
#ifndef BASAL_SUPERVISOR_HEALTH_H
#define BASAL_SUPERVISOR_HEALTH_H

#include "supervisor/activation.h"
#include "proto/confinement.h"

#include <stddef.h>

struct health_flow {
    char *id;
    unsigned long long runs[ACTIVATION_STATUS_COUNT + 1]; /* indexed by activation_status */
};

struct health {
    enum landlock_policy landlock;
    unsigned long long spawned, refused_welcomes, spawn_failures, retired, killed, crashed,
        respawned, sigsys_deaths;
    unsigned long long runs[ACTIVATION_STATUS_COUNT + 1];
    /* Pool gauges, set by the pool when it reports. */
    unsigned live, spares, busy, bound;
    struct health_flow *flows;
    size_t flow_count;
};

void health_init(struct health *h, enum landlock_policy landlock);
void health_free(struct health *h);

/* Counts a run of flow (may be NULL) by its outcome. */
void health_record_run(struct health *h, const char *flow, const struct activation_outcome *out);

/* Counts n runs of flow (may be NULL) that ended with status. */
void health_count_runs(struct health *h, const char *flow, enum activation_status status,
                       unsigned long long n);

/* Counts an accepted worker that died on its own: crashed, and sigsys_deaths if (and
 * only if) the signal that ended it was SIGSYS (term_signal 0: it exited). */
void health_record_death(struct health *h, int term_signal);

/* The health as a new JSON object (caller json_decref's it), or NULL on no memory.
 * Returned as void * so this header does not pull in jansson. */
void *health_to_json(const struct health *h);

#endif
