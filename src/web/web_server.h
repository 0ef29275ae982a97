/* serve --web ADDR:PORT: the operator's status page (docs/web.md), served by
 * libmicrohttpd on a thread of its own: flows, runs, a run with its journal, health.
 *
 * Who can see it: the page answers only a request carrying the data home's web token
 * (web/web_auth.h) in its session cookie; every other request gets 401 and nothing
 * else, so a local user who can reach the loopback port sees nothing. A state-changing
 * request (cancel, reconcile) must also be a POST carrying the CSRF token of the
 * page's forms. The address is loopback (127.0.0.0/8, ::1) unless allow_remote; names
 * are never resolved.
 *
 * The page reads and acts only through env->ops, the ops command path of the serve's
 * socket (serve/ops_dispatch.c's table: "flow.list", "runs", "journal", "health", "cancel"),
 * and reconcile through flows/reconcile.h as `ck-basal flow reconcile` does: the same
 * checks and the same audit rows as the CLI. */
#ifndef BASAL_WEB_WEB_SERVER_H
#define BASAL_WEB_WEB_SERVER_H

#include <stdbool.h>
#include <stddef.h>

struct web_env {
    const char *home;     /* the data home (its store, its token) */
    const char *landlock; /* "required" or "optional": what the health page asks for */
    /* Answers an ops request (a json_t *, borrowed) with a new reply object, exactly
     * as a request on the ops socket; called on the page's thread. */
    void *(*ops)(void *ctx, const void *request);
    void *ctx;
};

struct web_server;

/* listen: "127.0.0.1:PORT", "[::1]:PORT" (PORT 0: any free port), or with allow_remote
 * any IPv4 or bracketed IPv6 literal. Makes the web token if missing, listens, and
 * writes web-address. NULL with a one-line reason: a non-loopback address without
 * allow_remote, a malformed one, a bad token file, a failed bind. */
struct web_server *web_server_start(const char *listen, bool allow_remote,
                                    const struct web_env *env, char *err, size_t err_cap);
unsigned web_server_port(const struct web_server *server);
/* Stops serving and removes web-address. NULL is allowed. */
void web_server_stop(struct web_server *server);

#endif
