/* The ops commands about runs (docs/ops-protocol.md, "Commands"): "runs", "journal"
 * and "cancel". Their data is what `ck-basal runs|journal|cancel --json` prints
 * (docs/operations.md); the CLI renders its human tables from that same data. */
#include "serve/ops_commands.h"
#include "serve/ops_args.h"
#include "serve/ops_commands_internal.h"
#include "serve/ops_reply.h"
#include "base/error_line.h"
#include "base/json_js.h"
#include "base/names.h"
#include "flows/flows.h"
#include "flows/long_running.h"
#include "flows/reconcile.h"
#include "store/codemode_store.h"
#include "store/journal.h"
#include "store/runs.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERR_CAP 1024
#define ARG_TEXT_MAX 4096u /* any text argument whose own rules are checked later */

/* JSON text as a value (the text itself, as a string, if it does not parse). A flow's
 * texts come from the worker: every JavaScript number (1e19 too) is read. */
static json_t *json_of_flow_text(const char *text)
{
    if (text == NULL)
        return json_null();
    json_t *v = json_js_loads(text, JSON_DECODE_ANY, NULL);
    return v != NULL ? v : ops_json_text(text);
}

/* A codemode run's texts were written by the parent itself (jansson). */
static json_t *json_of_codemode_text(const char *text)
{
    if (text == NULL)
        return json_null();
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    return v != NULL ? v : ops_json_text(text);
}

static json_t *flow_run_json(const struct run_row *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "run", json_integer(r->id));
    json_object_set_new(o, "kind", json_string("flow"));
    json_object_set_new(o, "flow", ops_json_text(r->flow_id));
    json_object_set_new(o, "version", json_integer(r->version));
    json_object_set_new(o, "trigger_id", ops_json_text(r->trigger_id));
    json_object_set_new(o, "trigger", json_of_flow_text(r->trigger));
    json_object_set_new(o, "state", json_string(run_state_name(r->state)));
    json_object_set_new(o, "generation", json_integer(r->generation));
    json_object_set_new(o, "result", json_of_flow_text(r->result));
    json_object_set_new(o, "error", ops_json_text(r->error));
    json_object_set_new(o, "created_at_ms", json_integer(r->created_at));
    json_object_set_new(o, "updated_at_ms", json_integer(r->updated_at));
    return o;
}

static json_t *codemode_run_json(const struct codemode_run_row *r)
{
    char ref[24];
    codemode_run_ref(r->id, ref);
    json_t *o = json_object();
    json_object_set_new(o, "run", json_string(ref));
    json_object_set_new(o, "kind", json_string("codemode"));
    json_object_set_new(o, "id", json_integer(r->id));
    json_object_set_new(o, "script", ops_json_text(r->script_name));
    json_object_set_new(o, "script_sha256", ops_json_text(r->script_sha256));
    json_object_set_new(o, "input", json_of_codemode_text(r->input));
    json_object_set_new(o, "state", json_string(codemode_run_state_name(r->state)));
    json_object_set_new(o, "outcome", ops_json_text(r->outcome));
    json_object_set_new(o, "result", json_of_codemode_text(r->result));
    json_object_set_new(o, "error", ops_json_text(r->error));
    json_object_set_new(o, "tool_calls", json_integer(r->tool_calls));
    json_object_set_new(o, "over_limit_calls", json_integer(r->over_limit_calls));
    json_object_set_new(o, "console_truncated", json_boolean(r->console_truncated));
    json_object_set_new(o, "wall_ms", r->wall_ms >= 0 ? json_integer(r->wall_ms) : json_null());
    json_object_set_new(o, "created_at_ms", json_integer(r->created_at));
    json_object_set_new(o, "updated_at_ms", json_integer(r->updated_at));
    return o;
}

/* A settled outcome as {"fulfilled": value} or {"rejected": value}. */
static json_t *outcome_json(enum proto_settlement settlement, json_t *value)
{
    json_t *o = json_object();
    json_object_set_new(o, settlement == PROTO_SETTLEMENT_FULFILLED ? "fulfilled" : "rejected",
                        value);
    return o;
}

/* args_text and value_text are the stored texts exactly: the human view shows them
 * as recorded, which the parsed "args" and "outcome" cannot give back (0.1 would come
 * back as 0.10000000000000001). */
static json_t *journal_entry_json(const struct journal_entry *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "position", json_integer(e->position));
    json_object_set_new(o, "kind", ops_json_text(e->kind));
    json_object_set_new(o, "args", json_of_flow_text(e->args));
    json_object_set_new(o, "args_sha256", json_string(e->digest));
    json_object_set_new(o, "class", json_string(journal_class_name(e->cls)));
    json_object_set_new(o, "idempotency_key", json_string(e->key));
    json_object_set_new(o, "state", json_string(journal_state_name(e->state)));
    json_object_set_new(o, "waiting", json_boolean(e->waiting)); /* for its completion */
    json_object_set_new(o, "outcome", e->has_outcome
                                          ? outcome_json(e->settlement, json_of_flow_text(e->value))
                                          : json_null());
    json_object_set_new(o, "delivery_order",
                        e->delivery_order >= 0 ? json_integer(e->delivery_order) : json_null());
    json_object_set_new(o, "args_text", ops_json_text(e->args));
    json_object_set_new(o, "value_text", ops_json_text(e->has_outcome ? e->value : NULL));
    return o;
}

static json_t *codemode_call_json(const struct codemode_call *c)
{
    json_t *o = json_object();
    json_object_set_new(o, "position", json_integer(c->position));
    json_object_set_new(o, "kind", ops_json_text(c->kind));
    json_object_set_new(o, "tool", ops_json_text(c->tool));
    json_object_set_new(o, "module", ops_json_text(c->module));
    json_object_set_new(o, "op", ops_json_text(c->op));
    json_object_set_new(o, "class", c->has_class ? json_string(c->mutation ? "mutation" : "query")
                                                 : json_null());
    json_object_set_new(o, "args", json_of_codemode_text(c->args));
    json_object_set_new(o, "args_sha256", json_string(c->digest));
    json_object_set_new(o, "idempotency_key", c->key[0] != '\0' ? json_string(c->key)
                                                                : json_null());
    json_object_set_new(o, "decision", json_string(c->allowed ? "allowed" : "refused"));
    json_object_set_new(o, "state", json_string(c->settled ? "settled" : "pending"));
    json_object_set_new(o, "outcome", c->settled ? outcome_json(c->settlement,
                                                                json_of_codemode_text(c->value))
                                                 : json_null());
    json_object_set_new(o, "args_text", ops_json_text(c->args));
    json_object_set_new(o, "value_text", ops_json_text(c->settled ? c->value : NULL));
    return o;
}

static json_t *refused(const char *err)
{
    return ops_reply_error(1, err);
}

json_t *ops_cmd_runs(struct store *st, json_t *args)
{
    const char *flow;
    json_t *reply;
    if (ops_arg_string(args, "flow", false, ARG_TEXT_MAX, &flow, &reply) != 0)
        return reply;
    char err[ERR_CAP];
    if (flow != NULL && !flow_id_valid(flow)) {
        error_line(err, sizeof err, "unknown flow '%.80s' (not a flow id)", flow);
        return refused(err);
    }
    /* A flow that was never installed is an error, not an empty listing. */
    int known = flow != NULL ? flows_known(st, flow, err, sizeof err) : 1;
    if (known != 1) {
        if (known == 0)
            error_line(err, sizeof err, "unknown flow '%s'", flow);
        return refused(err);
    }
    struct run_row *rows = NULL;
    size_t n = 0;
    int rc = runs_list(st, flow, &rows, &n, err, sizeof err);
    /* Codemode runs (c<id>) belong to no flow: listed only without a flow. */
    struct codemode_run_row *cm = NULL;
    size_t cm_n = 0;
    if (rc == 0 && flow == NULL)
        rc = codemode_runs_list(st, &cm, &cm_n, err, sizeof err);
    json_t *list = rc == 0 ? json_array() : NULL;
    for (size_t i = 0; i < n; i++) {
        if (list != NULL)
            json_array_append_new(list, flow_run_json(&rows[i]));
        run_row_free(&rows[i]);
    }
    free(rows);
    for (size_t i = 0; i < cm_n; i++) {
        if (list != NULL)
            json_array_append_new(list, codemode_run_json(&cm[i]));
        codemode_run_row_free(&cm[i]);
    }
    free(cm);
    return rc == 0 ? ops_reply_ok(list) : refused(err);
}

static json_t *codemode_journal(struct store *st, int64_t id)
{
    char err[ERR_CAP];
    struct codemode_run_row run;
    int found = codemode_run_get(st, id, &run, err, sizeof err);
    if (found != 1) {
        if (found == 0)
            error_line(err, sizeof err, "unknown codemode run c%" PRId64, id);
        return refused(err);
    }
    struct codemode_call *calls = NULL;
    size_t n = 0;
    if (codemode_calls_load(st, id, &calls, &n, err, sizeof err) != 0) {
        codemode_run_row_free(&run);
        return refused(err);
    }
    json_t *o = codemode_run_json(&run);
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(list, codemode_call_json(&calls[i]));
        codemode_call_free(&calls[i]);
    }
    free(calls);
    json_object_set_new(o, "calls", list);
    json_object_set_new(o, "console", ops_json_text(run.console));
    codemode_run_row_free(&run);
    return ops_reply_ok(o);
}

/* A flow run's id as text: decimal digits only, 1..INT64_MAX. */
static bool run_id_parse(const char *text, int64_t *out)
{
    if (text[0] < '1' || text[0] > '9' || strlen(text) > 19)
        return false;
    uint64_t v = 0;
    for (const char *p = text; *p != '\0'; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v > INT64_MAX)
        return false;
    *out = (int64_t)v;
    return true;
}

json_t *ops_cmd_journal(struct store *st, json_t *args)
{
    const char *text;
    json_t *reply;
    if (ops_arg_string(args, "run", true, 24, &text, &reply) != 0)
        return reply;
    int64_t id;
    if (codemode_run_ref_parse(text, &id))
        return codemode_journal(st, id);
    if (!run_id_parse(text, &id))
        return ops_reply_error(2, "argument 'run' must be a run id (N, or cN for a codemode run)");
    char err[ERR_CAP];
    struct run_row run;
    int found = runs_get(st, id, &run, err, sizeof err);
    if (found != 1) {
        if (found == 0)
            error_line(err, sizeof err, "unknown run %" PRId64, id);
        return refused(err);
    }
    struct journal_entry *rows = NULL;
    size_t n = 0;
    if (journal_load(st, id, &rows, &n, err, sizeof err) != 0) {
        run_row_free(&run);
        return refused(err);
    }
    json_t *o = flow_run_json(&run);
    json_t *calls = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(calls, journal_entry_json(&rows[i]));
    json_object_set_new(o, "calls", calls);
    journal_entries_free(rows, n);
    run_row_free(&run);
    return ops_reply_ok(o);
}

json_t *ops_cmd_cancel(struct store *st, json_t *args)
{
    long long id;
    const char *reason;
    json_t *reply;
    if (ops_arg_integer(args, "run", 1, INT64_MAX, &id, &reply) != 0 ||
        ops_arg_string(args, "reason", false, RUN_CANCEL_REASON_MAX, &reason, &reply) != 0)
        return reply;
    if (reason != NULL && !ops_cancel_reason_valid(reason))
        return ops_reply_error(2, "argument 'reason' must be printable UTF-8 on one line");
    char err[ERR_CAP];
    enum run_state was;
    if (runs_cancel(st, id, reason, &was, err, sizeof err) != 0)
        return refused(err);
    struct run_row run;
    if (runs_get(st, id, &run, err, sizeof err) != 1) /* cancelled, then gone: a store fault */
        return refused(err);
    json_t *o = json_object();
    json_object_set_new(o, "run", json_integer(id));
    json_object_set_new(o, "flow", ops_json_text(run.flow_id));
    json_object_set_new(o, "state", json_string(run_state_name(run.state)));
    json_object_set_new(o, "was", json_string(run_state_name(was)));
    json_object_set_new(o, "error", ops_json_text(run.error));
    run_row_free(&run);
    return ops_reply_ok(o);
}

json_t *ops_cmd_flow_complete(struct store *st, json_t *args)
{
    const char *key, *reply_text;
    json_t *reply;
    if (ops_arg_string(args, "key", true, JOURNAL_KEY_HEX, &key, &reply) != 0 ||
        ops_arg_string(args, "reply", true, LONG_RUNNING_COMPLETION_MAX_BYTES, &reply_text,
                       &reply) != 0)
        return reply;
    char err[ERR_CAP];
    struct long_running_settled done;
    if (long_running_complete(st, key, reply_text, strlen(reply_text), &done, err, sizeof err) != 0)
        return refused(err);
    json_t *o = json_object();
    json_object_set_new(o, "run", json_integer(done.run_id));
    json_object_set_new(o, "flow", ops_json_text(done.flow_id));
    json_object_set_new(o, "position", json_integer(done.position));
    json_object_set_new(o, "resumed", json_boolean(done.woken));
    return ops_reply_ok(o);
}

json_t *ops_reconcile_args(json_t *args, struct ops_reconcile *out)
{
    long long run, position;
    const char *decision, *observed;
    json_t *reply;
    memset(out, 0, sizeof *out);
    if (ops_arg_integer(args, "run", 1, INT64_MAX, &run, &reply) != 0 ||
        ops_arg_integer(args, "position", 0, UINT32_MAX, &position, &reply) != 0 ||
        ops_arg_string(args, "decision", true, 16, &decision, &reply) != 0 ||
        ops_arg_string(args, "observed", false, OPS_JSON_VALUE_MAX_BYTES, &observed, &reply) != 0)
        return reply;
    if (strcmp(decision, "observed") == 0)
        out->decision = RECONCILE_OBSERVED;
    else if (strcmp(decision, "not_applied") == 0)
        out->decision = RECONCILE_NOT_APPLIED;
    else if (strcmp(decision, "cancel") == 0)
        out->decision = RECONCILE_CANCEL;
    else
        return ops_reply_error(2, "argument 'decision' must be \"observed\", \"not_applied\" or "
                                  "\"cancel\"");
    if ((out->decision == RECONCILE_OBSERVED) != (observed != NULL))
        return ops_reply_error(2, "argument 'observed' is given with decision \"observed\" and "
                                  "only then");
    out->run = run;
    out->position = (uint32_t)position;
    out->decision_name = decision;
    if (observed != NULL) {
        /* The rule the CLI applies to --observed, applied again to what was sent. */
        char why[320];
        bool out_of_memory;
        out->observed = ops_json_value(observed, why, sizeof why, &out_of_memory);
        if (out->observed == NULL) {
            char err[400];
            snprintf(err, sizeof err, "flow reconcile: the observed value %s", why);
            return ops_reply_error(out_of_memory ? 1 : 2, err);
        }
    }
    return NULL;
}
