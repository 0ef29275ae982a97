/* ops_dispatch: the request's shape, then the command table below (one row per
 * command: its handler on the store, whether a serve answers it, whether it changes
 * what is scheduled). See serve/ops_dispatch.h. */
#include "serve/ops_dispatch.h"
#include "serve/ops_commands_internal.h"
#include "serve/ops_reply.h"
#include "store/health_store.h"

#include <stdbool.h>
#include <string.h>

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

/* The command table: one row per command. store: its answer on the store (NULL: only a
 * running serve can answer it); daemon: whether a serve answers it through its hooks;
 * changes_flows: what is scheduled may change (a running serve looks again). */
struct ops_command {
    const char *name;
    json_t *(*store)(const struct ops_context *ctx, json_t *args);
    bool daemon;
    bool changes_flows;
};

static json_t *runs(const struct ops_context *c, json_t *a) { return ops_cmd_runs(c->store, a); }
static json_t *journal(const struct ops_context *c, json_t *a)
{
    return ops_cmd_journal(c->store, a);
}
static json_t *cancel(const struct ops_context *c, json_t *a)
{
    return ops_cmd_cancel(c->store, a);
}
static json_t *flow_list(const struct ops_context *c, json_t *a)
{
    return ops_cmd_flow_list(c->store, a);
}
static json_t *flow_schedule(const struct ops_context *c, json_t *a)
{
    return ops_cmd_flow_schedule(c->store, a);
}
static json_t *flow_install(const struct ops_context *c, json_t *a)
{
    return ops_cmd_flow_install(c->store, a);
}
static json_t *flow_approve(const struct ops_context *c, json_t *a)
{
    return ops_cmd_flow_approve(c->store, a);
}
static json_t *flow_disable(const struct ops_context *c, json_t *a)
{
    return ops_cmd_flow_toggle(c->store, a, false);
}
static json_t *flow_enable(const struct ops_context *c, json_t *a)
{
    return ops_cmd_flow_toggle(c->store, a, true);
}
/* No serve: recorded for the next one (a serve's hooks deliver it at once). */
static json_t *event_emit(const struct ops_context *c, json_t *a)
{
    return ops_cmd_event_emit(c->store, a);
}

static const struct ops_command COMMANDS[] = {
    {"runs", runs, false, false},
    {"journal", journal, false, false},
    {"cancel", cancel, true, false},
    {"health", health, false, false},
    {"flow.list", flow_list, false, false},
    {"flow.schedule", flow_schedule, false, false},
    {"flow.install", flow_install, true, true},
    {"flow.approve", flow_approve, true, true},
    {"flow.disable", flow_disable, true, true},
    {"flow.enable", flow_enable, true, true},
    {"event.emit", event_emit, true, false},
    {"run", NULL, true, false},
    {"flow.drain", NULL, true, false},
    {"flow.reconcile", NULL, true, false},
    {"recover", NULL, true, false},
    {"codemode.run", NULL, true, false},
    {"serve.stop", NULL, true, false},
#ifdef BASAL_TEST_HOOKS
    {"test.clock", NULL, true, false},
#endif
};

static const struct ops_command *command_of(const char *name)
{
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (strcmp(COMMANDS[i].name, name) == 0)
            return &COMMANDS[i];
    return NULL;
}

bool ops_command_changes_flows(const char *name)
{
    const struct ops_command *command = command_of(name);
    return command != NULL && command->changes_flows;
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
    const struct ops_command *command = command_of(json_string_value(cmd_value));
    json_t *reply = NULL;
    if (command == NULL) {
        reply = ops_reply_error(2, "unknown command");
    } else {
        /* A running serve answers its commands first; NULL: it leaves this one to the store. */
        if (ctx->daemon != NULL && command->daemon)
            reply = ctx->daemon->handle(ctx->daemon->daemon, ctx->store, command->name, args);
        if (reply == NULL)
            reply = command->store != NULL
                        ? command->store(ctx, args)
                        : ops_reply_error(1, "this needs a running serve (none on this data home)");
    }
    json_decref(no_args);
    return reply;
}
