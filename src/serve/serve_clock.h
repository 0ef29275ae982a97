/* The wall clock serve's triggers follow: schedule instants and admission-rate windows,
 * in milliseconds since the Unix epoch (UTC). Durations and timeouts stay on the
 * monotonic clock (base/clock.h).
 *
 * Test builds (BASAL_TEST_HOOKS) only: BASAL_TEST_CLOCK_MS=<ms> in serve's environment
 * fixes the clock at that instant, and the ops command "test.clock" {"ms": N} moves it
 * (serve/daemon.c). A fixed clock never moves by itself, so a test drives a downtime
 * or a week of schedules in a few requests. Release builds hold neither the code nor
 * the names (t_triggers checks the binary). */
#ifndef BASAL_SERVE_SERVE_CLOCK_H
#define BASAL_SERVE_SERVE_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Now, in ms since the epoch (the test clock when one is fixed). */
int64_t serve_clock_now_ms(void);

/* True when a test clock is fixed: time moves only when a test moves it, so whoever
 * waits for an instant waits for a wake-up instead of a timeout. Always false in a
 * release build. */
bool serve_clock_fixed(void);

#ifdef BASAL_TEST_HOOKS
/* Reads BASAL_TEST_CLOCK_MS once at start: 0 when absent, -1 (reason in err) when set
 * but not a whole number of ms in 0..2^53. */
int serve_clock_init_from_env(char *err, size_t err_cap);
/* Fixes the clock at ms. */
void serve_clock_set_ms(int64_t ms);
#endif

#endif
