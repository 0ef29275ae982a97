/* Persistent health (basal.md section 5, "ck-basal health"): the pool's counters and
 * the activations by outcome, overall and per flow, accumulated in the store's
 * health_counters table by every process that drives runs, plus the runs by state
 * read from the runs table.
 *
 * Counter names: the pool counters by their names in supervisor/health.h ("spawned",
 * "sigsys_deaths", ...), "activations.<status>" and "flow.<id>.activations.<status>"
 * (status as activation_status_name). */
#ifndef BASAL_STORE_HEALTH_STORE_H
#define BASAL_STORE_HEALTH_STORE_H

#include "supervisor/health.h"

#include <stddef.h>

struct store;

/* What a pool had counted when last persisted, to add only the difference. */
struct health_mark {
    unsigned long long spawned, refused_welcomes, spawn_failures, retired, killed, crashed,
        respawned, sigsys_deaths;
};

/* Inside the caller's write transaction: adds what now counts above *mark (then moves
 * the mark forward, never back: now may be a copy older than what another writer
 * already added) and, if flow is not NULL, one activation of flow with status. A mark
 * shared by threads is guarded by the store's write lock: only one write transaction
 * is open at a time. 0 or -1. */
int health_store_add(struct store *s, const struct health *now, struct health_mark *mark,
                     const char *flow, enum activation_status status);

/* The persisted health as JSON (a json_t *; the caller json_decref's it): the same
 * fields as health_to_json (pool gauges are 0: no pool outlives a command), plus
 * "run_states" {state: count} and per flow "run_states", "queue_depth" (its pending
 * runs) and "last_run" ({"run", "state", "ended_at_ms"} of the run that ended last, or
 * null). NULL with err on failure. */
void *health_store_json(struct store *s, enum landlock_policy landlock, char *err,
                        size_t err_cap);

#endif
