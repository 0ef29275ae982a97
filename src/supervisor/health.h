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
 *   flow_counts_dropped
 *                     per-flow counts not kept (each count: a run that exhausted a budget
 *                     is two) because the flow table was at its limit (flow_limit) or
 *                     memory ran out; the overall counts still have them
 *   worker_confinement.sigsys_deaths
 *                     workers that died by SIGSYS (the seccomp filter killed them), and
 *                     nothing else: not a parent kill, SIGKILL, or the worker's own exit 70.
 *   budget_exhaustions.<cpu|memory|stack>
 *                     activations that ended by exhausting that budget.
 *
 * Per flow (struct health_flow): its activations by outcome and budget exhaustions by
 * kind, and of the workers that served it: spawned (began serving it: a warm spare it
 * took or a worker started for it), retired (ended by policy, as above), killed and crashed
 * (as above) and sigsys_deaths. Workers of dry runs and codemode count in no flow. */
#ifndef BASAL_SUPERVISOR_HEALTH_H
#define BASAL_SUPERVISOR_HEALTH_H

#include "supervisor/activation.h"
#include "proto/confinement.h"

#include <stddef.h>

/* A pool's flow table holds at most this many flows: what a runner drains
 * (health_take_flows) leaves it, so it stays far below in practice; the limit bounds
 * it when nothing drains (codemode runs named each their own way, say). */
#define HEALTH_POOL_FLOW_LIMIT 1024u

struct health_flow {
    char *id;
    unsigned long long runs[ACTIVATION_STATUS_COUNT + 1]; /* indexed by activation_status */
    unsigned long long budgets[PROTO_BUDGET_COUNT + 1];   /* indexed by proto_budget */
    unsigned long long spawned, retired, killed, crashed, sigsys_deaths; /* of its workers */
};

struct health {
    enum landlock_policy landlock;
    unsigned long long spawned, refused_welcomes, spawn_failures, retired, killed, crashed,
        respawned, sigsys_deaths, flow_counts_dropped;
    unsigned long long runs[ACTIVATION_STATUS_COUNT + 1];
    unsigned long long budgets[PROTO_BUDGET_COUNT + 1];
    /* Pool gauges, set by the pool when it reports. */
    unsigned live, spares, busy, bound;
    struct health_flow *flows;
    size_t flow_count, flow_cap;
    size_t flow_limit; /* flows kept at most; 0: no limit (a store's, read whole) */
};

void health_init(struct health *h, enum landlock_policy landlock);
void health_free(struct health *h);

/* flow's entry, created at zero if new; NULL (and flow_counts_dropped counted) when
 * the table is at flow_limit or memory ran out. */
struct health_flow *health_flow_entry(struct health *h, const char *flow);

/* Counts a run of flow (may be NULL) by its outcome, and its budget if it exhausted one. */
void health_record_run(struct health *h, const char *flow, const struct activation_outcome *out);

/* Counts n runs of flow (may be NULL) that ended with status. */
void health_count_runs(struct health *h, const char *flow, enum activation_status status,
                       unsigned long long n);

/* Counts n budget exhaustions of budget by flow (may be NULL). */
void health_count_budget(struct health *h, const char *flow, enum proto_budget budget,
                         unsigned long long n);

/* Counts a worker the parent killed: killed, overall and (flow not NULL) the flow's. */
void health_record_kill(struct health *h, const char *flow);

/* Counts an accepted worker that died on its own: crashed, and sigsys_deaths if (and
 * only if) the signal that ended it was SIGSYS (term_signal 0: it exited); each overall
 * and, if flow is not NULL, the flow's. */
void health_record_death(struct health *h, const char *flow, int term_signal);

/* Moves the flow table out to the caller (*flows, *count; free with health_flows_free)
 * and leaves h's empty: what a writer persists since the last take. */
void health_take_flows(struct health *h, struct health_flow **flows, size_t *count);

/* Adds taken flows back into h (a write that failed), then frees them. */
void health_give_back_flows(struct health *h, struct health_flow *flows, size_t count);

void health_flows_free(struct health_flow *flows, size_t count);

/* The health as a new JSON object (caller json_decref's it), or NULL on no memory.
 * Returned as void * so this header does not pull in jansson. */
void *health_to_json(const struct health *h);

#endif
