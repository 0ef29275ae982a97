/* Keeping a worker on its parent's CPU while it serves a burst of host calls.
 *
 * During a burst the parent and its worker hand the CPU to each other every few
 * microseconds. Left to itself the kernel often places them on two CPUs, and then
 * every hand-over wakes an idle vCPU, which on a VM without guest halt polling costs
 * tens of microseconds (docs/benchmarks.md, "Issue 15"). Pinning the driving thread
 * and the worker to the CPU the thread runs on makes each hand-over a switch on one
 * CPU, about the cost of a pipe round trip between two processes.
 *
 * The pin is released when the burst ends (the worker went quiet for
 * COLOCATE_QUIET_MS: it computes, or waits on timers) and at the activation's end, so a
 * long computation is never held on one CPU; both affinity masks are restored to
 * what they were. This is a speed measure, not a confinement: when a pin cannot be
 * set (an affinity the operator restricted, a worker already gone) nothing is pinned
 * and the activation runs as before. The worker's own allowlist is not involved: the
 * parent sets the worker's affinity. */
#ifndef BASAL_SUPERVISOR_COLOCATE_H
#define BASAL_SUPERVISOR_COLOCATE_H

#include <sched.h>
#include <stdbool.h>
#include <sys/types.h>

/* A worker silent this long has left its burst of calls: release the pin. */
#define COLOCATE_QUIET_MS 2

struct colocation {
    bool pinned;
    bool declined; /* a pin was refused or failed: not tried again this activation */
    pid_t worker;
    cpu_set_t thread_mask; /* the masks to restore */
    cpu_set_t worker_mask;
};

void colocate_init(struct colocation *c, pid_t worker);

/* A host call came: pins the calling thread and the worker to the thread's CPU, unless
 * already pinned. */
void colocate_burst(struct colocation *c);

/* Restores both masks, if pinned. worker_now is the connection's pid now: a worker
 * already reaped (pid -1) has no mask to restore, and its number may belong to
 * another process by now, so only the thread's mask is restored then. */
void colocate_release(struct colocation *c, pid_t worker_now);

#endif
