/* serve --metrics ADDR:PORT: the Prometheus text at GET /metrics over HTTP, on a
 * loopback address only (127.0.0.0/8 or ::1), by libmicrohttpd on its own thread. */
#ifndef BASAL_SERVE_METRICS_HTTP_H
#define BASAL_SERVE_METRICS_HTTP_H

#include <stddef.h>

/* Produces the page: malloc'd text, or NULL (the server answers 500). May be called on
 * the HTTP server's thread. */
typedef char *(*metrics_render_fn)(void *ctx);

struct metrics_http;

/* listen: "127.0.0.1:PORT" or "[::1]:PORT" (PORT 0: any free port). A non-loopback
 * address, a malformed one or a failed bind is refused: NULL with a one-line reason. */
struct metrics_http *metrics_http_start(const char *listen, metrics_render_fn render,
                                        void *ctx, char *err, size_t err_cap);
/* The port bound (useful after PORT 0). */
unsigned metrics_http_port(const struct metrics_http *server);
void metrics_http_stop(struct metrics_http *server);

#endif
