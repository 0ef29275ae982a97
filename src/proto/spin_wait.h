/* A short, bounded, adaptive spin before a blocking wait on a pipe.
 *
 * Parent and worker answer each other within microseconds during an activation, but
 * a process that blocks lets its CPU go idle, and on a VM without guest halt polling
 * waking an idle vCPU costs tens of microseconds (docs/benchmarks.md). So a waiter
 * first retries its non-blocking read for a while (spin_wait_relax between tries),
 * and blocks only if nothing came.
 *
 * The bound adapts to what the waits show, so the spin burns CPU only while it pays:
 *   - an answer caught while spinning keeps the spin on (the bound follows about
 *     twice the latency seen, between SPIN_WAIT_MIN_NS and SPIN_WAIT_MAX_NS);
 *   - a spin that gave up (the waiter had to block) halves the bound; below
 *     SPIN_WAIT_MIN_NS spinning is off for the next SPIN_WAIT_OFF_WAITS waits, then a
 *     spin of SPIN_WAIT_PROBE_NS tries again. A long wait (a slow host call, an idle
 *     worker) thus costs a few spins once; parent and worker sharing one CPU (where
 *     no spin can ever catch the answer: it cannot be made while its reader spins)
 *     cost one short spin every SPIN_WAIT_OFF_WAITS waits.
 * A spin never yields the CPU (see spin_wait_relax); it blocks once its bound is spent.
 *
 * Only clock_gettime(CLOCK_MONOTONIC) (the vDSO) and a pause instruction:
 * the confined worker may use all of it. */
#ifndef BASAL_PROTO_SPIN_WAIT_H
#define BASAL_PROTO_SPIN_WAIT_H

#include <stdbool.h>
#include <stdint.h>

#define SPIN_WAIT_MAX_NS 50000LL /* the longest spin: a few tens of microseconds */
#define SPIN_WAIT_MIN_NS 2000LL  /* shorter bounds are not worth a spin */
#define SPIN_WAIT_PROBE_NS 12000LL /* the spin that tries again after a pause */
#define SPIN_WAIT_OFF_WAITS 512u

struct spin_wait {
    int64_t bound_ns;  /* current spin bound; 0: spinning is off */
    int64_t began_ns;  /* when the current wait began */
    uint64_t caught;   /* waits that ended while spinning */
    uint64_t blocked;  /* waits that ended in a blocking wait */
    int64_t spent_ns;  /* time spent spinning, caught or not */
    unsigned off_waits; /* while off: blocked waits left before trying again */
};

/* Starts with the maximum bound: the first waits decide. */
void spin_wait_init(struct spin_wait *s);

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t spin_wait_now_ns(void);

/* Marks the start of a wait (call before the first read attempt). */
void spin_wait_begin(struct spin_wait *s);

/* True while the current wait may go on spinning (its bound not yet spent). */
bool spin_wait_more(const struct spin_wait *s);

/* Between two read attempts: a few pause instructions. */
void spin_wait_relax(void);

/* The wait ended: `while_spinning` if the data came before the spin gave up, false if
 * a blocking wait was needed. Adapts the bound. */
void spin_wait_end(struct spin_wait *s, bool while_spinning);
/* The same, for a wait that lasted waited_ns (spin_wait_end measures it). */
void spin_wait_end_after(struct spin_wait *s, bool while_spinning, int64_t waited_ns);

#endif
