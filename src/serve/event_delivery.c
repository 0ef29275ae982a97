#include "serve/event_delivery.h"

#include "base/test_hooks.h"
#include "flows/event_targets.h"
#include "flows/long_running.h"
#include "serve/ops_commands_internal.h"
#include "serve/ops_reply.h"
#include "serve/serve_log.h"
#include "store/events.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERR_CAP 1024

static json_t *flow_entry(const char *flow, const char *key, json_t *value)
{
    json_t *o = json_object();
    json_object_set_new(o, "flow", json_string(flow));
    json_object_set_new(o, key, value);
    return o;
}

/* Offers ev to every listening flow, then marks it delivered. 0 with *outcome (runs,
 * duplicates, refused) set, or -1 with err (the row stays pending). */
static int deliver(struct store *st, const struct event_row *ev, event_admit_fn admit,
                   void *daemon, json_t *outcome, char *err, size_t err_cap)
{
    struct event_target *targets = NULL;
    size_t count = 0;
    if (event_targets(st, ev->module, ev->name, ev->version, &targets, &count, err, err_cap) !=
        0)
        return -1;
    char trigger_id[EVENT_TRIGGER_ID_MAX + 1], seq_text[24];
    events_trigger_id(ev->seq, trigger_id, sizeof trigger_id);
    snprintf(seq_text, sizeof seq_text, "%" PRId64, ev->seq);
    json_t *runs = json_array(), *duplicates = json_array(), *refused = json_array();
    for (size_t i = 0; i < count; i++) {
        int64_t run_id = 0;
        char why[ERR_CAP];
        why[0] = '\0';
        int rc = admit(daemon, st, targets[i].flow, ev->payload, trigger_id, &run_id, why,
                       sizeof why);
        if (rc == 0) {
            json_array_append_new(runs, flow_entry(targets[i].flow, "run", json_integer(run_id)));
        } else if (rc == 1) {
            json_array_append_new(duplicates,
                                  flow_entry(targets[i].flow, "run", json_integer(run_id)));
        } else {
            serve_log("event_refused", "event", seq_text, "flow", targets[i].flow, "reason", why,
                      LOG_END);
            json_array_append_new(refused, flow_entry(targets[i].flow, "reason", json_string(why)));
        }
    }
    free(targets);
    /* A long-running call this event completes (flows/long_running.h): settled once; a
     * delivery offered again finds nothing waiting. */
    struct long_running_settled done;
    bool completed = false;
    if (long_running_complete_by_event(st, ev->module, ev->name, ev->event_id, ev->payload,
                                       &done, &completed, err, err_cap) != 0) {
        json_decref(runs);
        json_decref(duplicates);
        json_decref(refused);
        return -1;
    }
    json_t *completions = json_array();
    if (completed) {
        json_t *c = json_object();
        json_object_set_new(c, "run", json_integer(done.run_id));
        json_object_set_new(c, "position", json_integer(done.position));
        json_object_set_new(c, "resumed", json_boolean(done.woken));
        json_array_append_new(completions, c);
        char run_text[24], position_text[16];
        snprintf(run_text, sizeof run_text, "%" PRId64, done.run_id);
        snprintf(position_text, sizeof position_text, "%" PRIu32, done.position);
        serve_log("long_running_completed", "event", seq_text, "run", run_text, "position",
                  position_text, LOG_END);
    }
    json_object_set_new(outcome, "completed", completions);
    json_object_set_new(outcome, "runs", runs);
    json_object_set_new(outcome, "duplicates", duplicates);
    json_object_set_new(outcome, "refused", refused);
    /* A crash here is what the trigger ids make harmless (t_events drives one). */
    test_hook_boundary(TEST_BOUNDARY_EVENT_ADMITTED, (uint32_t)ev->seq);
    if (events_mark_delivered(st, ev->seq, err, err_cap) != 0)
        return -1;
    char flows_text[24];
    snprintf(flows_text, sizeof flows_text, "%zu", count);
    serve_log("event_delivered", "event", seq_text, "module", ev->module, "name", ev->name, "id",
              ev->event_id, "flows", flows_text, LOG_END);
    return 0;
}

void *event_emit_deliver(struct store *st, const void *args, event_admit_fn admit, void *daemon)
{
    /* The argument checks take a mutable object; the request is the dispatcher's. */
    json_t *own_args = json_deep_copy(args);
    if (own_args == NULL)
        return ops_reply_error(1, "event.emit: out of memory");
    struct event_row row;
    json_t *data = NULL;
    json_t *reply = ops_event_record(st, own_args, &row, &data);
    json_decref(own_args); /* the row holds its own copies */
    if (reply != NULL)
        return reply;
    char err[ERR_CAP];
    /* Offered again even when the row is not new: what a flow already got is a
     * duplicate, and a flow refused the first time gets its chance. */
    int rc = deliver(st, &row, admit, daemon, data, err, sizeof err);
    free(row.payload);
    if (rc != 0) {
        json_decref(data);
        return ops_reply_error(1, err);
    }
    json_object_set_new(data, "delivered", json_true());
    json_object_set_new(data, "pending", json_false());
    return ops_reply_ok(data);
}

long event_deliver_pending(struct store *st, event_admit_fn admit, void *daemon, char *err,
                           size_t err_cap)
{
    struct event_row *rows = NULL;
    size_t count = 0;
    if (events_pending(st, &rows, &count, err, err_cap) != 0)
        return -1;
    long delivered = 0;
    for (size_t i = 0; i < count; i++) {
        json_t *outcome = json_object();
        int rc = deliver(st, &rows[i], admit, daemon, outcome, err, err_cap);
        json_decref(outcome);
        if (rc != 0) {
            events_rows_free(rows, count);
            return -1;
        }
        delivered++;
    }
    events_rows_free(rows, count);
    return delivered;
}
