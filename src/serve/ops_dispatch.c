/* ops_dispatch: the request's shape, then one handler per command (serve/ops_runs.c,
 * serve/ops_flows.c, "health" here). See serve/ops_dispatch.h. */
#include "serve/ops_dispatch.h"
#include "serve/ops_commands_internal.h"
#include "store/health_store.h"

#include <string.h>

void *ops_reply_ok(void *data)
{
    json_t *reply = json_object();
    if (reply == NULL) {
        json_decref(data);
        return NULL;
    }
    json_object_set_new(reply, "ok", json_true());
    json_object_set_new(reply, "data", data != NULL ? (json_t *)data : json_null());
    return reply;
}

void *ops_reply_error(int exit_status, const char *error)
{
    json_t *reply = json_object();
    if (reply == NULL)
        return NULL;
    json_object_set_new(reply, "ok", json_false());
    json_object_set_new(reply, "exit", json_integer(exit_status));
    json_object_set_new(reply, "error", ops_json_text(error));
    return reply;
}

static json_t *health(const struct ops_context *ctx, json_t *args)
{
    static const char *const NAMES[] = {"landlock", NULL};
    const char *landlock;
    json_t *reply;
    if (ops_args_only(args, NAMES, &reply) != 0 ||
        ops_arg_string(args, "landlock", true, 16, &landlock, &reply) != 0)
        return reply;
    enum landlock_policy policy;
    if (strcmp(landlock, "required") == 0)
        policy = LANDLOCK_POLICY_REQUIRED;
    else if (strcmp(landlock, "optional") == 0)
        policy = LANDLOCK_POLICY_OPTIONAL;
    else
        return ops_reply_error(2, "argument 'landlock' must be \"required\" or \"optional\"");
    char err[512];
    json_t *h = health_store_json(ctx->store, policy, err, sizeof err);
    if (h == NULL)
        return ops_reply_error(1, err);
    if (ctx->daemon != NULL)
        ctx->daemon->add_live_health(ctx->daemon->daemon, h);
    return ops_reply_ok(h);
}

void *ops_dispatch(const struct ops_context *ctx, const void *request_)
{
    const json_t *request = request_;
    if (!json_is_object(request))
        return ops_reply_error(2, "the request is not a JSON object");
    const json_t *cmd_value = json_object_get(request, "cmd");
    json_t *args = json_object_get(request, "args");
    if (!json_is_string(cmd_value))
        return ops_reply_error(2, "the request has no \"cmd\" string");
    if (json_object_size(request) != (args != NULL ? 2u : 1u))
        return ops_reply_error(2, "the request holds more than \"cmd\" and \"args\"");
    json_t *no_args = NULL;
    if (args == NULL)
        args = no_args = json_object();
    else if (!json_is_object(args))
        return ops_reply_error(2, "the request's \"args\" is not an object");
    if (args == NULL)
        return NULL; /* out of memory */
    const char *cmd = json_string_value(cmd_value);
    void *reply = NULL;
    if (ctx->daemon != NULL && strcmp(cmd, "health") != 0)
        reply = ctx->daemon->handle(ctx->daemon->daemon, cmd, args);
    if (reply != NULL)
        ;
    else if (strcmp(cmd, "runs") == 0)
        reply = ops_cmd_runs(ctx->store, args);
    else if (strcmp(cmd, "journal") == 0)
        reply = ops_cmd_journal(ctx->store, args);
    else if (strcmp(cmd, "cancel") == 0)
        reply = ops_cmd_cancel(ctx->store, args);
    else if (strcmp(cmd, "health") == 0)
        reply = health(ctx, args);
    else if (strcmp(cmd, "flow.list") == 0)
        reply = ops_cmd_flow_list(ctx->store, args);
    else if (strcmp(cmd, "flow.schedule") == 0)
        reply = ops_cmd_flow_schedule(ctx->store, args);
    else if (strcmp(cmd, "flow.install") == 0)
        reply = ops_cmd_flow_install(ctx->store, args);
    else if (strcmp(cmd, "flow.approve") == 0)
        reply = ops_cmd_flow_approve(ctx->store, args);
    else if (strcmp(cmd, "flow.disable") == 0)
        reply = ops_cmd_flow_toggle(ctx->store, args, false);
    else if (strcmp(cmd, "flow.enable") == 0)
        reply = ops_cmd_flow_toggle(ctx->store, args, true);
    else if (strcmp(cmd, "event.emit") == 0)
        /* No serve: recorded for the next one (a serve's hooks deliver it at once). */
        reply = ops_cmd_event_emit(ctx->store, args);
    else if (strcmp(cmd, "run") == 0 || strcmp(cmd, "flow.drain") == 0 ||
             strcmp(cmd, "serve.stop") == 0 || strcmp(cmd, "flow.reconcile") == 0 ||
             strcmp(cmd, "recover") == 0 || strcmp(cmd, "codemode.run") == 0)
        /* The daemon's own (its hooks answered above when one runs). */
        reply = ops_reply_error(1, "this needs a running serve (none on this data home)");
    else
        reply = ops_reply_error(2, "unknown command");
    json_decref(no_args);
    return reply;
}
