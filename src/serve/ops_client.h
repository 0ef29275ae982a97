/* The ops socket, client side (docs/ops-protocol.md; the server is serve/ops_socket.h). */
#ifndef BASAL_SERVE_OPS_CLIENT_H
#define BASAL_SERVE_OPS_CLIENT_H

#include <stddef.h>

/* Connects to home/ops.sock. Returns 1 with *fd (a serve is running), 0 when no serve
 * listens there (no socket file, or connection refused: a socket left by a dead serve),
 * -1 with a one-line reason on any other failure (e.g. permission denied). */
int ops_client_connect(const char *home, int *fd, char *err, size_t err_cap);

/* Sends request (a json_t * object, borrowed) on fd, reads the one-line reply into
 * *reply (a new json_t * object), and closes fd in every case. timeout_ms bounds the
 * whole exchange (-1: none, for a run the caller waits for). 0, or -1 with a one-line
 * reason (the connection broke, the reply was not JSON, timed out). */
int ops_client_call(int fd, const void *request, void **reply, int timeout_ms, char *err,
                    size_t err_cap);

#endif
