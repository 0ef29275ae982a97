/* The page's listening address, parsed without a resolver: "A.B.C.D:PORT" (four-part
 * dotted decimal only) or "[IPv6]:PORT". Loopback (127.0.0.0/8, ::1) unless
 * allow_remote. */
#ifndef BASAL_WEB_WEB_LISTEN_H
#define BASAL_WEB_WEB_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct web_listen {
    struct sockaddr_storage addr; /* a sockaddr_in or sockaddr_in6 */
    bool ipv6;
    char host[64];                /* as given, for the page's URL */
};

/* 0, or -1 with a one-line reason (malformed, not loopback without allow_remote). */
int web_listen_parse(const char *text, bool allow_remote, struct web_listen *out, char *err,
                     size_t err_cap);
/* Whether a peer's address is loopback. */
bool web_peer_is_loopback(const struct sockaddr *addr, socklen_t len);

#endif
