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

/* What only a running serve can do, or knows. */
struct ops_daemon_hooks {
    void *daemon;
    /* Adds the live figures (pool gauges, per-flow queue depth and last run) to a
     * health object (a json_t *) built from the store. */
    void (*add_live_health)(void *daemon, void *health);
    /* Commands the table marks as the daemon's ("run", "flow.drain", "flow.reconcile",
     * "recover", "codemode.run", "event.emit", "serve.stop", and the store commands
     * that change what a runner may start): a reply object (json_t *), or NULL to let
     * the command's store handler answer. st is the request's one connection. May
     * block (a run the client waits for). */
    void *(*handle)(void *daemon, struct store *st, const char *cmd, const void *args);
};

struct ops_context {
    struct store *store;
    const char *home;
    const struct ops_daemon_hooks *daemon; /* NULL: the CLI, no serve */
};

/* Answers request (a json_t *, borrowed) with a new reply object (a json_t *). */
void *ops_dispatch(const struct ops_context *ctx, const void *request);

/* Whether command name may change what is scheduled (an install, approval, enable or
 * disable): a running serve's scheduler looks again after it. */
bool ops_command_changes_flows(const char *name);

#endif
