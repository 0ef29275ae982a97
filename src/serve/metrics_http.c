/* The loopback /metrics endpoint. The address is parsed here, not by a resolver, and
 * anything but an IPv4 literal in 127.0.0.0/8 or the IPv6 literal ::1 is refused
 * before a socket exists: the page shows flow ids and counts to whoever can connect,
 * so it must never be reachable off the machine. libmicrohttpd serves it on one
 * thread of its own, with a bounded number of connections that each time out. */
#include "serve/metrics_http.h"
#include "base/error_line.h"
#include "base/listen_address.h"
#include "base/microhttpd_library.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* A scraper needs one connection; a few more let a second one (or curl by hand) in. */
#define METRICS_CONNECTION_LIMIT 8u
/* Seconds a connection may stay idle before it is closed, so a stalled client cannot
 * hold one of the few slots for long. */
#define METRICS_CONNECTION_TIMEOUT_S 10u
/* Per-connection buffer for the request and its headers; a scrape request is small. */
#define METRICS_CONNECTION_MEMORY (32u << 10)

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct metrics_http {
    struct MHD_Daemon *daemon;
    metrics_render_fn render;
    void *ctx;
    unsigned port;
};

/* Defence in depth behind the loopback bind: a peer that is not loopback is dropped. */
static enum MHD_Result accept_loopback_peer(void *cls, const struct sockaddr *addr,
                                            socklen_t addrlen)
{
    (void)cls;
    return peer_is_loopback(addr, addrlen) ? MHD_YES : MHD_NO;
}

/* A fixed short answer (404, 405, 500). */
static enum MHD_Result answer_plain(struct MHD_Connection *connection, unsigned status,
                                    char *body)
{
    struct MHD_Response *response =
        mhd_lib.create_response_from_buffer(strlen(body), body, MHD_RESPMEM_PERSISTENT);
    if (response == NULL)
        return MHD_NO;
    enum MHD_Result ok = mhd_lib.add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                                                 "text/plain; charset=utf-8");
    if (ok == MHD_YES && status == MHD_HTTP_METHOD_NOT_ALLOWED)
        ok = mhd_lib.add_response_header(response, MHD_HTTP_HEADER_ALLOW, MHD_HTTP_METHOD_GET);
    if (ok == MHD_YES)
        ok = mhd_lib.queue_response(connection, status, response);
    mhd_lib.destroy_response(response);
    return ok;
}

static void free_page(void *page)
{
    free(page);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url,
                              const char *method, const char *version,
                              const char *upload_data, size_t *upload_data_size,
                              void **request_state)
{
    static int headers_seen;
    struct metrics_http *server = cls;
    (void)version;
    (void)upload_data;
    /* The first call has only the headers; answer on a later one, once any body a
     * client sent (it has no meaning here) has been read and dropped. */
    if (*request_state == NULL) {
        *request_state = &headers_seen;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (strcmp(url, "/metrics") != 0)
        return answer_plain(connection, MHD_HTTP_NOT_FOUND, "not found: only /metrics\n");
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0)
        return answer_plain(connection, MHD_HTTP_METHOD_NOT_ALLOWED,
                            "method not allowed: only GET\n");
    char *page = server->render(server->ctx);
    if (page == NULL)
        return answer_plain(connection, MHD_HTTP_INTERNAL_SERVER_ERROR,
                            "the metrics could not be rendered\n");
    struct MHD_Response *response =
        mhd_lib.create_response_from_buffer_with_free_callback(strlen(page), page, free_page);
    if (response == NULL) {
        free(page);
        return MHD_NO;
    }
    enum MHD_Result ok =
        mhd_lib.add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, METRICS_CONTENT_TYPE);
    if (ok == MHD_YES)
        ok = mhd_lib.queue_response(connection, MHD_HTTP_OK, response);
    mhd_lib.destroy_response(response);
    return ok;
}

struct metrics_http *metrics_http_start(const char *listen, metrics_render_fn render,
                                        void *ctx, char *err, size_t err_cap)
{
    if (listen == NULL || render == NULL) {
        error_line(err, err_cap, "metrics: no address or no renderer");
        return NULL;
    }
    struct listen_address address;
    if (listen_address_parse("metrics", listen, false,
                             "only 127.0.0.0/8 or [::1] may serve /metrics", &address, err,
                             err_cap) != 0 ||
        microhttpd_library_load(err, err_cap) != 0)
        return NULL;
    struct metrics_http *server = calloc(1, sizeof *server);
    if (server == NULL) {
        error_line(err, err_cap, "out of memory");
        return NULL;
    }
    server->render = render;
    server->ctx = ctx;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
    if (address.ipv6)
        flags |= MHD_USE_IPv6;
    server->daemon = mhd_lib.start_daemon(
        flags, 0, accept_loopback_peer, NULL, answer, server, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&address.addr, MHD_OPTION_CONNECTION_LIMIT,
        METRICS_CONNECTION_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT, METRICS_CONNECTION_TIMEOUT_S,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)METRICS_CONNECTION_MEMORY, MHD_OPTION_END);
    if (server->daemon == NULL) {
        free(server);
        error_line(err, err_cap, "metrics: cannot listen on %s (in use, or not an address "
                   "of this machine)", listen);
        return NULL;
    }
    const union MHD_DaemonInfo *info =
        mhd_lib.get_daemon_info(server->daemon, MHD_DAEMON_INFO_BIND_PORT);
    if (info == NULL || info->port == 0) {
        mhd_lib.stop_daemon(server->daemon);
        free(server);
        error_line(err, err_cap, "metrics: cannot tell the port bound for %s", listen);
        return NULL;
    }
    server->port = info->port;
    return server;
}

unsigned metrics_http_port(const struct metrics_http *server)
{
    return server->port;
}

void metrics_http_stop(struct metrics_http *server)
{
    if (server == NULL)
        return;
    mhd_lib.stop_daemon(server->daemon);
    free(server);
}
