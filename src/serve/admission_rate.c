#include "serve/admission_rate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct admission_rate_flow *flow_of(struct admission_rate *r, const char *flow,
                                           bool create)
{
    for (size_t i = 0; i < r->count; i++)
        if (strcmp(r->flows[i].flow, flow) == 0)
            return &r->flows[i];
    if (!create)
        return NULL;
    struct admission_rate_flow *grown = realloc(r->flows, (r->count + 1) * sizeof *grown);
    if (grown == NULL)
        return NULL;
    r->flows = grown;
    struct admission_rate_flow *f = &r->flows[r->count++];
    memset(f, 0, sizeof *f);
    snprintf(f->flow, sizeof f->flow, "%s", flow);
    f->window = INT64_MIN;
    return f;
}

static int64_t window_of(int64_t now_ms)
{
    return now_ms >= 0 ? now_ms / ADMISSION_RATE_WINDOW_MS : -1;
}

/* Moves f to window w: the streak survives only into the very next window, and only if
 * the window left was saturated. */
static void roll(struct admission_rate_flow *f, int64_t w)
{
    if (f->window == w)
        return;
    if (!(f->saturated && f->window != INT64_MIN && w == f->window + 1))
        f->streak = 0;
    f->window = w;
    f->admitted = 0;
    f->saturated = false;
}

enum admission_rate_verdict admission_rate_take(struct admission_rate *r, const char *flow,
                                                int64_t now_ms)
{
    struct admission_rate_flow *f = flow_of(r, flow, true);
    if (f == NULL)
        return ADMISSION_RATE_REFUSE;
    roll(f, window_of(now_ms));
    if (f->admitted < r->limit) {
        f->admitted++;
        return ADMISSION_RATE_ALLOW;
    }
    if (!f->saturated) {
        f->saturated = true;
        f->streak++;
        if (f->streak >= ADMISSION_RATE_SATURATED_WINDOWS)
            return ADMISSION_RATE_DISABLE;
    }
    return ADMISSION_RATE_REFUSE;
}

void admission_rate_release(struct admission_rate *r, const char *flow, int64_t now_ms)
{
    struct admission_rate_flow *f = flow_of(r, flow, false);
    if (f != NULL && f->window == window_of(now_ms) && f->admitted > 0)
        f->admitted--;
}

void admission_rate_reset(struct admission_rate *r, const char *flow)
{
    struct admission_rate_flow *f = flow_of(r, flow, false);
    if (f != NULL) {
        f->streak = 0;
        f->saturated = false;
    }
}

void admission_rate_free(struct admission_rate *r)
{
    free(r->flows);
    r->flows = NULL;
    r->count = 0;
}
