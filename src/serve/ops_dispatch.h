/* The operations the CLI asks of a data home (docs/ops-protocol.md, "Commands"): one
 * request object in, one reply object out, the same whether a running serve answers it
 * (over the ops socket, with its hooks) or the CLI answers it itself on the store (no
 * serve: hooks NULL). The CLI renders a reply's data the same way in both cases, so the
 * output is the same both ways.
 *
 * The commands are the table in serve/ops_dispatch.c, one row each.
 *
 * Request: {"cmd": NAME, "args": {...}}. Reply: {"ok":true,"data":...} or
 * {"ok":false,"exit":1|2,"error":"one line"} (exit 2: the request itself is malformed,
 * e.g. an argument of the wrong type; 1: refused or failed). Every argument is checked
 * here, whoever sent it: the socket's peer is the operator's own uid, but its bytes are
 * still input. */
#ifndef BASAL_SERVE_OPS_DISPATCH_H
#define BASAL_SERVE_OPS_DISPATCH_H

#include <stdbool.h>

struct store;

/* The commands a running serve answers itself (the table's daemon column): the index
 * of its handler in ops_daemon_hooks.answer. */
enum ops_daemon_command {
    OPS_DAEMON_NONE, /* the store answers, with a serve too */
    OPS_DAEMON_RUN,
    OPS_DAEMON_FLOW_DRAIN,
    OPS_DAEMON_FLOW_RECONCILE,
    OPS_DAEMON_RECOVER,
    OPS_DAEMON_CODEMODE_RUN,
    OPS_DAEMON_EVENT_EMIT,
    OPS_DAEMON_SERVE_STOP,
    OPS_DAEMON_TEST_CLOCK, /* test builds only */
    OPS_DAEMON_COMMANDS
};

/* What a store command changed when it succeeded (the table's change column): what a
 * running serve looks at again. */
enum ops_change {
    OPS_CHANGES_NOTHING,
    OPS_CHANGES_RUNS,  /* a cancel, a completion: what a runner may start */
    OPS_CHANGES_FLOWS, /* an install or approval: that, and what is scheduled */
    OPS_ENABLES_FLOW,  /* that, and a drained flow admits runs again */
    OPS_DISABLES_FLOW, /* that, and the flow's workers end before the reply goes out */
};

/* A serve's answer to a command of its own: a reply object (json_t *); st is the
 * request's one connection, args (a json_t *) its arguments object. May block (a run
 * the client waits for). */
typedef void *(*ops_daemon_handler)(void *daemon, struct store *st, const void *args);

/* What only a running serve can do, or knows. */
struct ops_daemon_hooks {
    void *daemon;
    /* Adds the live figures (pool gauges, per-flow queue depth and last run) to a
     * health object (a json_t *) built from the store. */
    void (*add_live_health)(void *daemon, void *health);
    /* By the row's daemon column; a NULL entry leaves the command to its store
     * handler. */
    ops_daemon_handler answer[OPS_DAEMON_COMMANDS];
    /* After a store command whose row changes something answered ok; flow is its
     * "id" argument (NULL when it has none). */
    void (*changed)(void *daemon, enum ops_change change, const char *flow);
};

struct ops_context {
    struct store *store;
    const char *home;
    const struct ops_daemon_hooks *daemon; /* NULL: the CLI, no serve */
};

/* Answers request (a json_t *, borrowed) with a new reply object (a json_t *). */
void *ops_dispatch(const struct ops_context *ctx, const void *request);

#endif
