/* The monotonic clock in milliseconds: deadlines, timeouts and durations everywhere in
 * the parent are measured on it, never on the wall clock an operator may set. */
#ifndef BASAL_BASE_CLOCK_H
#define BASAL_BASE_CLOCK_H

/* CLOCK_MONOTONIC in milliseconds. */
long long monotonic_ms(void);

#endif
