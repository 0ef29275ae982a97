/* What a program started by a pinned thread must not inherit.
 *
 * During a burst of host calls the thread that drives an activation is pinned to one
 * CPU (supervisor/colocate.h). A process forked by that thread would inherit the pin
 * for its whole life: a module program or git run by a host call would then share one
 * CPU with the burst. So the pin records the mask it replaced here, per thread, and the
 * code that forks calls thread_affinity_unpin_child in the child before exec. */
#ifndef BASAL_BASE_THREAD_AFFINITY_H
#define BASAL_BASE_THREAD_AFFINITY_H

#include <sched.h>

/* The calling thread was pinned; `original` is its mask from before. */
void thread_affinity_note_pinned(const cpu_set_t *original);

/* The calling thread's pin ended. */
void thread_affinity_note_unpinned(void);

/* In a child just forked: gives it back the mask its thread had before the pin, if the
 * thread was pinned (else nothing). One system call, async-signal-safe; a failure
 * leaves the inherited mask. */
void thread_affinity_unpin_child(void);

#endif
