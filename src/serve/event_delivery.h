/* A running serve's delivery of events (docs/triggers.md, "Events"): "event.emit"
 * answered by the daemon, and the pending events delivered once at start.
 *
 * Delivery of one event: the row is recorded (store/events.h) and committed first;
 * then every listening flow (flows/event_targets.h) is offered one run through the
 * daemon's single admission path, with the payload as its trigger and the trigger id
 * events_trigger_id(seq); then the row is marked delivered. A crash anywhere in between
 * leaves the row pending, the next start offers it again, and each flow that already
 * has its run answers "duplicate" instead of admitting a second one. A refusal (a full
 * backlog, a rate limit, a drain) is reported and not retried: the row is marked
 * delivered all the same, and emitting the same id again offers it again. */
#ifndef BASAL_SERVE_EVENT_DELIVERY_H
#define BASAL_SERVE_EVENT_DELIVERY_H

#include <stddef.h>
#include <stdint.h>

struct store;

/* The daemon's admission (daemon.c, daemon_admit with source "event"): 0 admitted
 * (*run_id), 1 duplicate trigger id (*run_id the earlier run), -1 refused (err). */
typedef int (*event_admit_fn)(void *daemon, struct store *st, const char *flow,
                              const char *trigger, const char *trigger_id, int64_t *run_id,
                              char *err, size_t err_cap);

/* Answers "event.emit" (args a json_t * object, borrowed) on st: a new reply object
 * whose data is {"event", "delivered": true, "runs": [{flow, run}], "duplicates": [{flow,
 * run}], "refused": [{flow, reason}]}. */
void *event_emit_deliver(struct store *st, const void *args, event_admit_fn admit,
                         void *daemon);

/* Delivers every pending event, oldest first (serve's start). Returns how many were
 * delivered, or -1 with the reason in err (what was delivered stays delivered). */
long event_deliver_pending(struct store *st, event_admit_fn admit, void *daemon, char *err,
                           size_t err_cap);

#endif
