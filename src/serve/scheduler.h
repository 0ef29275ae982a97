/* serve's scheduler (docs/triggers.md, "Schedules"): one thread that fires the
 * scheduled flows.
 *
 *   sync   at start and after every change to flows (an install, approval, enable or
 *          disable through the socket: scheduler_flows_changed), the schedules table is
 *          made to hold exactly one row per enabled flow whose highest approved version
 *          has a schedule. A new row's first fire is the first instant after the
 *          approval or the enable, whichever is later; a row whose schedule is
 *          unchanged keeps its next fire (a new version with the same schedule does
 *          not restart it).
 *   look   every row whose next fire is due is planned (flows/schedule_plan.h: on time,
 *          or missed: skip / once / each), its runs admitted through the serve's one
 *          admission path, THEN the row moved on to the first instant after now. A
 *          run's trigger id names its instant, so a crash between the two fires
 *          nothing twice: the next look plans the same instants and finds them
 *          admitted. A flow with an unfinished run is held: its due instants wait for
 *          the run's end (scheduler_poke) and are then on time or missed by the rule.
 *   waits  every long-running call whose completion_timeout_s has passed is rejected
 *          "timeout" and its suspended run made pending (flows/long_running.h,
 *          long_running_expire, on the store's wall clock, never the test clock); the
 *          runners are told (woke_runs).
 *   sleep  until the earliest next fire or wait deadline (on the monotonic clock, at
 *          most 5 minutes at a time, for a wall clock that was set), or a poke (every
 *          run's end pokes it, so a wait a run just began is seen). Nothing wakes it
 *          while nothing is due: no polling loop.
 *
 * The scheduler has its own store connection and forks nothing. */
#ifndef BASAL_SERVE_SCHEDULER_H
#define BASAL_SERVE_SCHEDULER_H

#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

struct scheduler_hooks {
    void *ctx;
    /* A store connection for the scheduler's thread (0 or -1 with err). */
    int (*open_store)(void *ctx, struct store **st, char *err, size_t err_cap);
    /* Admits a run of flow (the serve's admission path): 0 admitted, 1 admitted
     * before (a fire planned twice), -1 refused with the reason in err. */
    int (*admit)(void *ctx, struct store *st, const char *flow, const char *trigger,
                 const char *trigger_id, int64_t *run_id, char *err, size_t err_cap);
    /* Runs were made pending (long-running calls timed out): tell the runners. */
    void (*woke_runs)(void *ctx);
};

struct scheduler;

/* Starts the thread; its first sync and look follow at once. NULL with err. */
struct scheduler *scheduler_start(const struct scheduler_hooks *hooks, char *err, size_t err_cap);

/* Flows may have changed: sync before the next look. Returns at once. */
void scheduler_flows_changed(struct scheduler *s);

/* A run ended or time moved: look again. Returns at once. */
void scheduler_poke(struct scheduler *s);

/* Looks again and returns when a whole look that began after this call is over (the
 * test clock's ops command waits for it; a test then sees every run it admitted). */
void scheduler_look_now(struct scheduler *s);

/* Stops the thread (a look in progress ends first): nothing fires after it returns.
 * The other calls stay safe (and do nothing) until scheduler_free. NULL is fine. */
void scheduler_stop(struct scheduler *s);

/* Stops and frees; no other thread may call in any more. NULL is fine. */
void scheduler_free(struct scheduler *s);

#endif
