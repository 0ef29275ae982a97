/* A listening address an operator gives (the status page's, /metrics'), parsed without
 * a resolver: "A.B.C.D:PORT" (four-part dotted decimal only) or "[IPv6]:PORT".
 * Loopback (127.0.0.0/8, ::1) unless the caller allows remote peers. */
#ifndef BASAL_BASE_LISTEN_ADDRESS_H
#define BASAL_BASE_LISTEN_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct listen_address {
    struct sockaddr_storage addr; /* a sockaddr_in or sockaddr_in6 */
    bool ipv6;
    char host[64];                /* as given, for a URL */
};

/* 0, or -1 with a one-line reason that names the address as "LABEL address 'TEXT'"
 * (label: "web", "metrics"): malformed, or not loopback without allow_remote, then
 * followed by not_loopback_why (what the address is for, and what to do). */
int listen_address_parse(const char *label, const char *text, bool allow_remote,
                         const char *not_loopback_why, struct listen_address *out, char *err,
                         size_t err_cap);
/* Whether a peer's address is loopback. */
bool peer_is_loopback(const struct sockaddr *addr, socklen_t len);

#endif
