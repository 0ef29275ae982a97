/* The worker pool (basal.md section 5).
 *
 * A worker is bound to the first flow it serves and reused only for that flow. The
 * pool keeps warm spares (unbound, already greeted and checked), has a maximum size,
 * and retires a worker:
 *   - after max_activations activations, or idle_retire_ms idle (checked whenever the
 *     pool is used): Shutdown, then SIGKILL if it does not exit;
 *   - after a budget exhaustion or any other unclean end of a live worker: SIGKILL at
 *     once, so it is replaced before the flow's next activation;
 *   - after a crash, a deadline kill or a protocol error (the driver already reaped it);
 *   - when its flow stops (pool_release_flow) or the pool is freed: SIGKILL at once.
 * A completed, stalled or suspended activation, or one the script failed by itself,
 * keeps the worker; so does a caught memory or stack error whose activation completes.
 * A worker that wrote anything after its Finished is killed at once (its bytes must
 * never be read as the next activation's frames), and an idle worker that died or
 * wrote anything between activations is removed too.
 *
 * Codemode and dry runs use single-use workers: codemode a fresh worker with the
 * codemode address-space limit, a dry run a spare (or a fresh flow worker); either is
 * retired after its one activation. A codemode run may first have its script compiled
 * (POOL_USE_CODEMODE_CHECK, compile-only): that fresh worker is kept, bound to the
 * run's name and used by nothing else, for the run's one activation that follows
 * (POOL_USE_CODEMODE with the same name), so a one-shot run starts one worker, not two.
 * A check that did not compile cleanly kills its worker; pool_release_flow or
 * pool_free ends one whose run never came.
 *
 * A failed start (the worker could not be started, or its Welcome or the kernel's view
 * of it was refused) backs further starts off exponentially: backoff_initial_ms,
 * doubling, at most backoff_max_ms; a success resets it. While backing off, a run that
 * needs a new worker ends as no_worker at once.
 *
 * Threads may share a pool (ck-basal serve runs several activations at once): its
 * state is guarded by a lock, and an activation runs outside it on a worker marked
 * busy. Starting a worker (and a retirement's Shutdown grace) happens under the lock.
 * A thread that starts workers must live as long as they may: a worker's parent-death
 * signal follows the thread that forked it. Its clock (idle times and backoff) may be
 * injected for tests; activation deadlines always use the real monotonic clock. */
#ifndef BASAL_SUPERVISOR_POOL_H
#define BASAL_SUPERVISOR_POOL_H

#include "supervisor/activation.h"
#include "supervisor/health.h"
#include "host/host.h"
#include "proto/confinement.h"

#include <sys/types.h>

struct pool_config {
    enum landlock_policy policy;
    unsigned spares;           /* warm spares kept by pool_maintain (default 2) */
    unsigned max_size;         /* workers alive at most, spares included (default 16) */
    unsigned max_activations;  /* retire after this many (default 256) */
    long long idle_retire_ms;  /* retire after this long idle (default 10 min) */
    long long backoff_initial_ms; /* default 250 ms */
    long long backoff_max_ms;     /* default 30 s */
    int welcome_timeout_ms;       /* default WORKER_WELCOME_TIMEOUT_MS */
    int shutdown_timeout_ms;      /* grace after Shutdown before SIGKILL (default 1 s) */
    const char *worker_path;      /* NULL: ck-basal-worker beside ck-basal */
    long long (*clock_ms)(void *ctx); /* NULL: CLOCK_MONOTONIC in ms */
    void *clock_ctx;
};

void pool_config_defaults(struct pool_config *cfg);

enum pool_use {
    POOL_USE_FLOW = 1, /* a pooled worker bound to the flow */
    POOL_USE_DRY_RUN,  /* single use, flow profile */
    POOL_USE_CODEMODE, /* single use, codemode profile (the checked worker of its name, if any) */
    POOL_USE_CODEMODE_CHECK, /* compile-only, on a fresh codemode worker kept for the run */
};

struct pool;

/* NULL on no memory. The configuration (and worker_path) must outlive the pool. */
struct pool *pool_new(const struct pool_config *cfg);
/* Kills (SIGKILL) and reaps every worker and frees the pool: when it returns, no
 * worker of it is alive. */
void pool_free(struct pool *pool);

/* The flow's host stopped (the flow was disabled or drained, or its host stopped
 * serving a run): every idle worker bound to it is killed (SIGKILL) and reaped before
 * this returns; one running an activation is killed as soon as that returns. */
void pool_release_flow(struct pool *pool, const char *flow);

/* Retires idle and dead workers, then starts spares up to cfg.spares (within
 * max_size, unless backing off). Call it between activations: it keeps cold starts
 * off the next activation's path. */
void pool_maintain(struct pool *pool);

/* Starts one worker for use ahead of its activation without waiting for it: it execs
 * and confines itself on another CPU while the caller does its store work, and the
 * pool_run that next needs a new worker of use's limits greets and checks it like any
 * other (a refused one counts as a failed start). For one-shot commands that know they
 * will run one activation (run, codemode run); at most one is pending, pool_free
 * kills it if no run took it. Does nothing while backing off or with the pool full. */
void pool_launch(struct pool *pool, enum pool_use use);

/* Runs one activation of flow on a worker the pool chooses (see above) and settles
 * the worker's fate. Always fills *out (ACTIVATION_NO_WORKER if no worker could be
 * had); the caller frees it with activation_outcome_free. */
void pool_run(struct pool *pool, const char *flow, enum pool_use use,
              const struct activation_request *req, const struct host *host,
              struct activation_outcome *out);

/* The health, with the pool gauges brought up to date. Valid until the next call; a
 * pool other threads use must be locked around the call and the reading. */
const struct health *pool_health(struct pool *pool);

/* Moves the per-flow counts out of the pool's health (health_take_flows), for a writer
 * that persists them; the pool counts afresh from zero. Takes the pool's lock. */
void pool_take_flow_counts(struct pool *pool, struct health_flow **flows, size_t *count);

/* Adds counts taken and not persisted back (health_give_back_flows). Takes the lock. */
void pool_give_back_flow_counts(struct pool *pool, struct health_flow *flows, size_t count);

/* The pool's lock, for pool_health while other threads use the pool. */
void pool_lock(struct pool *pool);
void pool_unlock(struct pool *pool);

/* cfg.max_size as the pool applies it. */
unsigned pool_max_size(const struct pool *pool);

/* The pid of the idle worker bound to flow, or 0 (for tests and diagnostics). */
pid_t pool_flow_worker(struct pool *pool, const char *flow);

#endif
