/* The ops socket, server side (docs/ops-protocol.md): `ops.sock` in the data home, a
 * Unix stream socket, mode 0600 inside the 0700 home, served by `ck-basal serve`.
 *
 * A connection carries many requests (pipelining): the client writes each as one JSON
 * object on one line (compact JSON never holds a raw newline), and may write the next
 * before the last is answered; the server answers each with one JSON object on one
 * line, in the order the requests came, and closes once the client has closed its
 * side and every reply owed is written (or after OPS_CONNECTION_IDLE_MS with nothing
 * owed and nothing sent). A peer whose uid (SO_PEERCRED) is not the server's own is
 * refused before a byte is read (refusal callback, then close). A request must be
 * complete within OPS_REQUEST_TIMEOUT_MS (of the connection for the first, of its
 * first byte for a later one) and at most OPS_REQUEST_MAX bytes, and must be a JSON
 * object, or the peer gets an error reply in its turn and is closed. A stalled or
 * slow peer never holds up another: connections are read by one poll loop on the
 * server's own thread, and each complete request is handled on a handler thread (the
 * handler may block, e.g. until a run ends), at most OPS_HANDLERS_MAX at once (beyond
 * that a request gets a "busy" error reply); a connection owed OPS_PIPELINE_MAX
 * replies is not read again until one is written. A handler thread is kept after its
 * reply and takes the next request; one idle for OPS_HANDLER_IDLE_MS, or any at the
 * stop, calls the thread-end hook on itself and ends, so the handler may keep what it
 * opened for the thread (serve: its store connection) until then.
 *
 * Reply shapes: {"ok":true,"data":...} or {"ok":false,"exit":1|2,"error":"one line"}. */
#ifndef BASAL_SERVE_OPS_SOCKET_H
#define BASAL_SERVE_OPS_SOCKET_H

#include <stddef.h>
#include <sys/types.h>

#define OPS_SOCKET_NAME "ops.sock"
#define OPS_REQUEST_MAX (256u << 10)
#define OPS_REQUEST_TIMEOUT_MS 5000
#define OPS_HANDLERS_MAX 64
#define OPS_HANDLER_IDLE_MS 10000
#define OPS_PIPELINE_MAX 16
#define OPS_CONNECTION_IDLE_MS 10000

/* Answers one request (a json_t * object, borrowed) with a new reply object (a json_t *,
 * owned by the caller afterwards). Runs on a handler thread. */
typedef void *(*ops_handler_fn)(void *ctx, const void *request);

/* Called on a handler thread as it ends, after its last request (may be NULL): what
 * the handler kept for this thread is released here. */
typedef void (*ops_thread_end_fn)(void *ctx);

/* Told of every refused peer or request, to audit and log it: what is one line
 * ("peer uid 1000 is not the owner", "request over 262144 bytes", "request not complete
 * within 5000 ms", "request is not a JSON object: ..."); uid and pid are the peer's
 * (-1 if unknown). Runs on the server's thread. */
typedef void (*ops_refusal_fn)(void *ctx, const char *what, long uid, long pid);

struct ops_server;

/* Binds home/ops.sock (a stale socket file left by a dead serve is replaced: the caller
 * holds the home's serve lock) and starts the server thread. NULL with a one-line
 * reason in err. */
struct ops_server *ops_server_start(const char *home, ops_handler_fn handler,
                                    ops_thread_end_fn thread_end, ops_refusal_fn refusal,
                                    void *ctx, char *err, size_t err_cap);

/* From now on every complete request is answered {"ok":false,"exit":1,"error":why}
 * without reaching the handler (serve: "serve is stopping"); handlers already running
 * answer as before. Safe from any thread. */
void ops_server_refuse_new(struct ops_server *server, const char *why);

/* Stops accepting (the socket file is removed), answers every connection still being
 * read or waiting in the backlog with the refusal line (or "serve is stopping") and
 * closes it, waits for running handlers to return (the caller makes blocked handlers
 * return first), and frees the server. */
void ops_server_stop(struct ops_server *server);

#endif
