/* Parsing a listening address (base/listen_address.h). */
#include "base/listen_address.h"

#include "base/error_line.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPECTED "expected 127.0.0.1:PORT or [::1]:PORT"

static bool parse_port(const char *text, in_port_t *port)
{
    size_t n = strlen(text);
    if (n == 0 || n > 5 || strspn(text, "0123456789") != n)
        return false;
    unsigned long v = strtoul(text, NULL, 10);
    if (v > 65535)
        return false;
    *port = htons((uint16_t)v);
    return true;
}

static bool loopback4(const struct in_addr *a)
{
    return (ntohl(a->s_addr) >> 24) == 127;
}

static bool loopback6(const struct in6_addr *a)
{
    return memcmp(a, &in6addr_loopback, sizeof in6addr_loopback) == 0;
}

int listen_address_parse(const char *label, const char *text, bool allow_remote,
                         const char *not_loopback_why, struct listen_address *out, char *err,
                         size_t err_cap)
{
    const char *port_text;
    size_t host_len;
    const char *host;
    memset(out, 0, sizeof *out);
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (close == NULL || close[1] != ':')
            return error_line(err, err_cap, "%s address '%s' is malformed (" EXPECTED ")", label,
                              text);
        host = text + 1;
        host_len = (size_t)(close - host);
        port_text = close + 2;
        out->ipv6 = true;
    } else {
        const char *colon = strchr(text, ':');
        if (colon == NULL || strchr(colon + 1, ':') != NULL)
            return error_line(err, err_cap, "%s address '%s' is malformed (" EXPECTED "; an "
                              "IPv6 address goes in brackets)", label, text);
        host = text;
        host_len = (size_t)(colon - text);
        port_text = colon + 1;
    }
    if (host_len == 0 || host_len >= sizeof out->host)
        return error_line(err, err_cap, "%s address '%s' is malformed (" EXPECTED ")", label,
                          text);
    memcpy(out->host, host, host_len);
    out->host[host_len] = '\0';
    in_port_t port;
    if (!parse_port(port_text, &port))
        return error_line(err, err_cap, "%s address '%s': the port must be a number from 0 "
                          "to 65535", label, text);
    bool loopback;
    if (out->ipv6) {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&out->addr;
        a6->sin6_family = AF_INET6;
        a6->sin6_port = port;
        if (inet_pton(AF_INET6, out->host, &a6->sin6_addr) != 1)
            return error_line(err, err_cap, "%s address '%s': '%s' is not an IPv6 address",
                              label, text, out->host);
        loopback = loopback6(&a6->sin6_addr);
    } else {
        struct sockaddr_in *a4 = (struct sockaddr_in *)&out->addr;
        a4->sin_family = AF_INET;
        a4->sin_port = port;
        /* Only the four-part dotted form: no names, no "127.1" a resolver would expand. */
        if (inet_pton(AF_INET, out->host, &a4->sin_addr) != 1)
            return error_line(err, err_cap, "%s address '%s': '%s' is not an IPv4 address "
                              "(names are not resolved)", label, text, out->host);
        loopback = loopback4(&a4->sin_addr);
    }
    if (!loopback && !allow_remote)
        return error_line(err, err_cap, "%s address '%s' is not loopback: %s", label, text,
                          not_loopback_why);
    return 0;
}

bool peer_is_loopback(const struct sockaddr *addr, socklen_t len)
{
    if (addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in))
        return loopback4(&((const struct sockaddr_in *)(const void *)addr)->sin_addr);
    if (addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6))
        return loopback6(&((const struct sockaddr_in6 *)(const void *)addr)->sin6_addr);
    return false;
}
