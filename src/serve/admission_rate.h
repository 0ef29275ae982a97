/* Admission rate limits per flow (docs/triggers.md, "Admission rate limits"): pure
 * logic over serve's wall clock (serve/serve_clock.h), no locking (the daemon holds its
 * mutex around every call).
 *
 * Time is cut into fixed windows of ADMISSION_RATE_WINDOW_MS from the epoch. A flow may
 * have `limit` admissions per window, whatever fired them; one more is refused. A
 * window in which a flow was refused at least once is "saturated"; a flow saturated in
 * ADMISSION_RATE_SATURATED_WINDOWS consecutive windows is to be disabled (the verdict
 * ADMISSION_RATE_DISABLE, given once, at the refusal that completes the streak). A
 * window without a refusal (or without any admission at all) breaks the streak. */
#ifndef BASAL_SERVE_ADMISSION_RATE_H
#define BASAL_SERVE_ADMISSION_RATE_H

#include "base/names.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADMISSION_RATE_WINDOW_MS 60000LL
#define ADMISSION_RATE_LIMIT_DEFAULT 60u
#define ADMISSION_RATE_LIMIT_MAX 100000u
#define ADMISSION_RATE_SATURATED_WINDOWS 3u

enum admission_rate_verdict {
    ADMISSION_RATE_ALLOW = 0,   /* a slot is reserved: admission_rate_release if unused */
    ADMISSION_RATE_REFUSE = 1,  /* over the limit in this window */
    ADMISSION_RATE_DISABLE = 2, /* over the limit, and the streak of saturated windows is
                                   complete: disable the flow */
};

/* One flow's window. */
struct admission_rate_flow {
    char flow[FLOW_ID_MAX + 1];
    int64_t window;     /* index of the current window (now / window length) */
    unsigned admitted;  /* admissions (reserved slots) in it */
    bool saturated;     /* refused at least once in it */
    unsigned streak;    /* consecutive saturated windows, this one included */
};

struct admission_rate {
    unsigned limit; /* per window per flow, >= 1 */
    struct admission_rate_flow *flows;
    size_t count;
};

/* Reserves an admission of flow at now_ms, or refuses it. Out of memory refuses (fails
 * closed). */
enum admission_rate_verdict admission_rate_take(struct admission_rate *r, const char *flow,
                                                int64_t now_ms);

/* Gives back the slot of an ALLOW whose admission did not happen (refused later, or a
 * duplicate trigger id): only admissions count. */
void admission_rate_release(struct admission_rate *r, const char *flow, int64_t now_ms);

/* Forgets flow's streak (after it was disabled: enabling it starts afresh). */
void admission_rate_reset(struct admission_rate *r, const char *flow);

void admission_rate_free(struct admission_rate *r);

#endif
