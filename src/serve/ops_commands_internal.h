/* The commands ops_dispatch answers on the store (docs/ops-protocol.md, "Commands"),
 * one handler each, and the reconcile arguments they share. A handler gets the request's
 * args (a JSON object, borrowed) and returns a new reply object (serve/ops_reply.h);
 * NULL only when out of memory. Handlers keep no state of their own: they run on any
 * thread, each with the request's one store connection (serve/ops_dispatch.h); the
 * argument checks they share are serve/ops_args.h. */
#ifndef BASAL_SERVE_OPS_COMMANDS_INTERNAL_H
#define BASAL_SERVE_OPS_COMMANDS_INTERNAL_H

#include "proto/confinement.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

/* ops_runs.c */
json_t *ops_cmd_runs(struct store *st, json_t *args);
json_t *ops_cmd_journal(struct store *st, json_t *args);
json_t *ops_cmd_cancel(struct store *st, json_t *args);
/* flow.complete {key, reply}: a long-running call's completion (flows/long_running.h). */
json_t *ops_cmd_flow_complete(struct store *st, json_t *args);

/* flow.reconcile's args {run, position, decision: "observed" | "not_applied" | "cancel",
 * observed (JSON text, with "observed" only)}, checked (the --observed rule again). */
struct ops_reconcile {
    long long run;
    uint32_t position;
    int decision;              /* enum reconcile_decision (flows/reconcile.h) */
    const char *decision_name; /* borrowed from args */
    char *observed;            /* compact JSON text, malloc'd (free it), or NULL */
};
/* NULL with *out filled, or the error reply (exit 2 for a bad argument). */
json_t *ops_reconcile_args(json_t *args, struct ops_reconcile *out);

/* ops_codemode.c: codemode.run's args {script_name, script | script_path (absolute),
 * input (JSON text)} checked as the CLI checks them (the script read and validated
 * again), then the run made on st (flows/codemode_run.h); the reply's data is the
 * run's report. */
json_t *ops_cmd_codemode_run(struct store *st, const char *home, json_t *args,
                             enum landlock_policy policy);

/* ops_flows.c */
json_t *ops_cmd_flow_list(struct store *st, json_t *args);
json_t *ops_cmd_flow_install(struct store *st, json_t *args);
json_t *ops_cmd_flow_approve(struct store *st, json_t *args);
json_t *ops_cmd_flow_toggle(struct store *st, json_t *args, bool enable);

/* ops_schedules.c: flow.schedule {id, count?}; and the next fire flow.list shows for a
 * flow ({local, utc, unix, tz}, or null when it does not fire). */
json_t *ops_cmd_flow_schedule(struct store *st, json_t *args);
json_t *ops_flow_next_fire(struct store *st, const char *id);

/* ops_events.c: "event.emit" (docs/ops-protocol.md). */
struct event_row;
/* Checks event.emit's args {module, name, version, id, payload?} and records the event
 * (store/events.h: a repeated id finds the row already there): NULL with *row (its
 * payload malloc'd: free it) and *data {"event": {"seq","module","name","version","id",
 * "new"}}, or the error reply (exit 2 for a bad argument, 1 otherwise). args may be
 * modified. Both answers of event.emit, with a serve and without, start here. */
json_t *ops_event_record(struct store *st, json_t *args, struct event_row *row, json_t **data);
/* Without a serve: records the event pending for the next serve; data {"event", "delivered":
 * false}. */
json_t *ops_cmd_event_emit(struct store *st, json_t *args);

#endif
