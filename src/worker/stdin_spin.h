/* The worker's short spin before it blocks reading stdin (proto/spin_wait.h).
 *
 * stdin stays a blocking pipe: the worker still blocks in read(2) on fd 0 when nothing
 * comes (so an idle worker is seen, in /proc/<pid>/syscall, blocked in read(0) as
 * before). Before such a read it asks ppoll(2) with a zero timeout whether a frame's
 * bytes are already there, again and again for the adaptive bound: an answer the
 * parent sends within microseconds is then read without the worker's CPU going idle.
 *
 * Only ppoll(2) on fd 0 with a zero timeout and the vDSO clock after confinement. */
#ifndef BASAL_WORKER_STDIN_SPIN_H
#define BASAL_WORKER_STDIN_SPIN_H

#include <stdbool.h>

#include "proto/spin_wait.h"

/* Spins until stdin is readable (true) or the bound is spent (false). After false the
 * caller makes its blocking read and then calls stdin_spin_blocked_read_done, so the
 * bound learns how the wait ended. */
bool stdin_spin_until_readable(void);
void stdin_spin_blocked_read_done(void);

/* The spin's state and counters. */
const struct spin_wait *stdin_spin_state(void);

#endif
