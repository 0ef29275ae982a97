/* Persistent health (basal.md section 5, "ck-basal health"): the pool's counters and
 * the activations by outcome, overall and per flow, accumulated in the store's
 * health_counters table by every process that drives runs, plus the runs by state
 * read from the runs table.
 *
 * Counter names: the pool counters by their names in supervisor/health.h ("spawned",
 * "sigsys_deaths", "flow_counts_dropped", ...), "activations.<status>",
 * "budget_exhausted.<budget>", and per flow "flow.<id>.activations.<status>",
 * "flow.<id>.budget_exhausted.<budget>", "flow.<id>.spawned", "flow.<id>.retired",
 * "flow.<id>.killed", "flow.<id>.crashed" and "flow.<id>.sigsys_deaths" (status as activation_status_name, budget as
 * proto_budget_name). A flow's rows are as many as those names, whatever its runs; they
 * stay when the flow is no longer installed (basal deletes no flow). */
#ifndef BASAL_STORE_HEALTH_STORE_H
#define BASAL_STORE_HEALTH_STORE_H

#include "supervisor/health.h"

#include <stddef.h>

struct store;

/* What a pool had counted when last persisted, to add only the difference. */
struct health_mark {
    unsigned long long spawned, refused_welcomes, spawn_failures, retired, killed, crashed,
        respawned, sigsys_deaths, flow_counts_dropped;
};

/* Inside the caller's write transaction: adds what now counts above *mark (then moves
 * the mark forward, never back: now may be a copy older than what another writer
 * already added) and, if flow is not NULL, one activation of flow with out's status
 * (and its budget, if it exhausted one), overall and under flow. A mark shared by
 * threads is guarded by the store's write lock: only one write transaction is open at
 * a time. 0 or -1. */
int health_store_add(struct store *s, const struct health *now, struct health_mark *mark,
                     const char *flow, const struct activation_outcome *out);

/* Inside the caller's write transaction: adds the worker counts (spawned, retired, killed,
 * crashed, sigsys_deaths) of flows taken from a pool (pool_take_flow_counts) under each flow.
 * Their activations and budgets are not written: health_store_add counts those from
 * each run's outcome. 0 or -1. */
int health_store_add_flows(struct store *s, const struct health_flow *flows, size_t count);

/* The persisted health as JSON (a json_t *; the caller json_decref's it): the same
 * fields as health_to_json (pool gauges are 0: no pool outlives a command), plus
 * "run_states" {state: count} and per flow "run_states", "queue_depth" (its pending
 * runs) and "last_run" ({"run", "state", "ended_at_ms"} of the run that ended last, or
 * null). NULL with err on failure. */
void *health_store_json(struct store *s, enum landlock_policy landlock, char *err,
                        size_t err_cap);

#endif
