/* ops_dispatch: the request's shape, then the command table below (one row per
 * command: its argument keys, its handler on the store, the serve's own handler, what
 * it changes for a running serve). See serve/ops_dispatch.h. */
#include "serve/ops_dispatch.h"
#include "serve/ops_args.h"
#include "serve/ops_commands_internal.h"
#include "serve/ops_reply.h"
#include "store/health_store.h"

#include <stdbool.h>
#include <string.h>

static json_t *health(const struct ops_context *ctx, json_t *args)
{
    const char *landlock;
    json_t *reply;
    if (ops_arg_string(args, "landlock", true, 16, &landlock, &reply) != 0)
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

/* The command table: one row per command. args: the argument keys it takes (the
 * dispatcher refuses any other before a handler runs; each handler checks the values
 * of its own); store: its answer on the store (NULL: only a running serve can answer
 * it); daemon: the serve's own answer, which goes first (ops_daemon_hooks.answer);
 * change: what a running serve looks at again after the store's answer succeeded. */
struct ops_command {
    const char *name;
    const char *const *args;
    json_t *(*store)(const struct ops_context *ctx, json_t *args);
    enum ops_daemon_command daemon;
    enum ops_change change;
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
static json_t *flow_complete(const struct ops_context *c, json_t *a)
{
    return ops_cmd_flow_complete(c->store, a);
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

/* A row's argument keys (NULL-terminated). */
#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NO_ARGS ((const char *const[]){NULL})

static const struct ops_command COMMANDS[] = {
    {"runs", ARGS("flow"), runs, OPS_DAEMON_NONE, OPS_CHANGES_NOTHING},
    {"journal", ARGS("run"), journal, OPS_DAEMON_NONE, OPS_CHANGES_NOTHING},
    {"cancel", ARGS("run", "reason"), cancel, OPS_DAEMON_NONE, OPS_CHANGES_RUNS},
    {"health", ARGS("landlock"), health, OPS_DAEMON_NONE, OPS_CHANGES_NOTHING},
    {"flow.list", NO_ARGS, flow_list, OPS_DAEMON_NONE, OPS_CHANGES_NOTHING},
    {"flow.schedule", ARGS("id", "count"), flow_schedule, OPS_DAEMON_NONE, OPS_CHANGES_NOTHING},
    {"flow.install", ARGS("dir"), flow_install, OPS_DAEMON_NONE, OPS_CHANGES_FLOWS},
    {"flow.approve", ARGS("id", "version", "code_hash"), flow_approve, OPS_DAEMON_NONE,
     OPS_CHANGES_FLOWS},
    {"flow.disable", ARGS("id"), flow_disable, OPS_DAEMON_NONE, OPS_DISABLES_FLOW},
    {"flow.enable", ARGS("id"), flow_enable, OPS_DAEMON_NONE, OPS_ENABLES_FLOW},
    {"event.emit", ARGS("module", "name", "version", "id", "payload"), event_emit,
     OPS_DAEMON_EVENT_EMIT, OPS_CHANGES_NOTHING},
    {"run", ARGS("flow", "trigger", "trigger_id", "detach"), NULL, OPS_DAEMON_RUN,
     OPS_CHANGES_NOTHING},
    {"flow.drain", ARGS("id"), NULL, OPS_DAEMON_FLOW_DRAIN, OPS_CHANGES_NOTHING},
    {"flow.complete", ARGS("key", "reply"), flow_complete, OPS_DAEMON_NONE, OPS_CHANGES_RUNS},
    {"flow.reconcile", ARGS("run", "position", "decision", "observed"), NULL,
     OPS_DAEMON_FLOW_RECONCILE, OPS_CHANGES_NOTHING},
    {"recover", NO_ARGS, NULL, OPS_DAEMON_RECOVER, OPS_CHANGES_NOTHING},
    {"codemode.run", ARGS("script_name", "script", "script_path", "input"), NULL,
     OPS_DAEMON_CODEMODE_RUN, OPS_CHANGES_NOTHING},
    {"serve.stop", NO_ARGS, NULL, OPS_DAEMON_SERVE_STOP, OPS_CHANGES_NOTHING},
#ifdef BASAL_TEST_HOOKS
    {"test.clock", ARGS("ms"), NULL, OPS_DAEMON_TEST_CLOCK, OPS_CHANGES_NOTHING},
#endif
};

#undef ARGS
#undef NO_ARGS

static const struct ops_command *command_of(const char *name)
{
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (strcmp(COMMANDS[i].name, name) == 0)
            return &COMMANDS[i];
    return NULL;
}

/* The row's answer: its argument keys checked, then the serve's own answer first, else
 * the store's; then, when it succeeded
 * and a serve runs, what it changed. */
static json_t *answer(const struct ops_context *ctx, const struct ops_command *command,
                      json_t *args)
{
    json_t *refused;
    if (ops_args_only(args, command->args, &refused) != 0)
        return refused;
    const struct ops_daemon_hooks *serve = ctx->daemon;
    ops_daemon_handler own = serve != NULL ? serve->answer[command->daemon] : NULL;
    json_t *reply = own != NULL ? own(serve->daemon, ctx->store, args) : NULL;
    if (reply != NULL)
        return reply;
    if (command->store == NULL)
        return ops_reply_error(1, "this needs a running serve (none on this data home)");
    reply = command->store(ctx, args);
    if (serve != NULL && command->change != OPS_CHANGES_NOTHING &&
        json_is_true(json_object_get(reply, "ok")))
        serve->changed(serve->daemon, command->change,
                       json_string_value(json_object_get(args, "id")));
    return reply;
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
    json_t *reply = command != NULL ? answer(ctx, command, args)
                                    : ops_reply_error(2, "unknown command");
    json_decref(no_args);
    return reply;
}
