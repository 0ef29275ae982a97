/* The ops command "event.emit" (docs/ops-protocol.md, "Commands"; docs/triggers.md,
 * "Events"): its arguments, and its answer when no serve runs (the event is recorded
 * pending; the next serve delivers it). A running serve answers it itself
 * (serve/event_delivery.h). */
#include "serve/ops_args.h"
#include "serve/ops_commands_internal.h"
#include "serve/ops_commands.h"
#include "serve/ops_reply.h"
#include "base/names.h"
#include "store/events.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERR_CAP 1024

struct ops_event {
    const char *module; /* borrowed from args */
    const char *name;
    long long version;  /* 1..INT32_MAX, as a manifest's trigger.events */
    const char *id;     /* store/events.h's events_id_valid */
    char *payload;      /* a JSON object as compact text, malloc'd (free it) */
};

/* Checks event.emit's args: 0 with *ev, or -1 with an error reply. */
static int event_args(json_t *args, struct ops_event *ev, json_t **reply)
{
    memset(ev, 0, sizeof *ev);
    const char *payload_text = NULL;
    if (ops_arg_string(args, "module", true, OBJECT_NAME_MAX, &ev->module, reply) != 0 ||
        ops_arg_string(args, "name", true, OBJECT_NAME_MAX, &ev->name, reply) != 0 ||
        ops_arg_integer(args, "version", 1, INT32_MAX, &ev->version, reply) != 0 ||
        ops_arg_string(args, "id", true, EVENT_ID_MAX, &ev->id, reply) != 0 ||
        ops_arg_string(args, "payload", false, OPS_JSON_VALUE_MAX_BYTES, &payload_text,
                       reply) != 0)
        return -1;
    if (!object_name_valid(ev->module) || !object_name_valid(ev->name)) {
        *reply = ops_reply_error(2, "event.emit: module and name must be names (1-63 of"
                                    " [a-z0-9_.-], starting with [a-z0-9])");
        return -1;
    }
    if (!events_id_valid(ev->id)) {
        *reply = ops_reply_error(2, "event.emit: id must be 1 to 128 of [A-Za-z0-9._:-]");
        return -1;
    }
    char why[320];
    bool out_of_memory = false;
    ev->payload = ops_json_value(payload_text != NULL ? payload_text : "{}", why, sizeof why,
                                 &out_of_memory);
    if (ev->payload == NULL) {
        char err[400];
        snprintf(err, sizeof err, "event.emit: the payload %s", why);
        *reply = ops_reply_error(out_of_memory ? 1 : 2, err);
        return -1;
    }
    if (ev->payload[0] != '{') {
        free(ev->payload);
        ev->payload = NULL;
        *reply = ops_reply_error(2, "event.emit: the payload must be a JSON object");
        return -1;
    }
    return 0;
}

static json_t *event_json(const struct event_row *r, bool is_new)
{
    json_t *o = json_object();
    json_object_set_new(o, "seq", json_integer(r->seq));
    json_object_set_new(o, "module", json_string(r->module));
    json_object_set_new(o, "name", json_string(r->name));
    json_object_set_new(o, "version", json_integer(r->version));
    json_object_set_new(o, "id", json_string(r->event_id));
    json_object_set_new(o, "new", json_boolean(is_new));
    return o;
}

json_t *ops_event_record(struct store *st, json_t *args, struct event_row *row, json_t **data)
{
    memset(row, 0, sizeof *row);
    struct ops_event ev;
    json_t *reply;
    if (event_args(args, &ev, &reply) != 0)
        return reply;
    bool is_new = false;
    char err[ERR_CAP];
    int rc = events_record(st, ev.module, ev.name, ev.version, ev.id, ev.payload, row, &is_new,
                           err, sizeof err);
    free(ev.payload);
    if (rc != 0)
        return ops_reply_error(1, err);
    *data = json_object();
    json_object_set_new(*data, "event", event_json(row, is_new));
    return NULL;
}

json_t *ops_cmd_event_emit(struct store *st, json_t *args)
{
    struct event_row row;
    json_t *data = NULL;
    json_t *reply = ops_event_record(st, args, &row, &data);
    if (reply != NULL)
        return reply;
    /* A row delivered before (same id, emitted to a serve) stays delivered: re-emitting
     * it without a serve admits nothing anywhere. */
    json_object_set_new(data, "delivered", json_boolean(row.delivered));
    json_object_set_new(data, "pending", json_boolean(!row.delivered));
    free(row.payload);
    return ops_reply_ok(data);
}
