/* Which network addresses net.fetch may connect to, and which host names count as
 * DNS names (basal.md section 7; docs/flows.md, "net.fetch").
 *
 * Every address a name resolves to is classified before anything connects; any
 * class but ADDRESS_PUBLIC is refused. Refused IPv4: 0.0.0.0/8 (unspecified, "this
 * network"), 10/8, 172.16/12, 192.168/16 (RFC 1918), 100.64/10 (CGNAT), 127/8
 * (loopback), 169.254/16 (link-local), 192.0.0/24 (IETF protocol assignments),
 * 192.0.2/24, 198.51.100/24, 203.0.113/24 (documentation), 192.88.99/24 (6to4 relay
 * anycast), 198.18/15 (benchmarking), 224/4 (multicast), 240/4 (reserved) and
 * 255.255.255.255 (broadcast). IPv6 is allowed only in global unicast 2000::/3, less
 * 2001::/32 (Teredo), 2001:2::/48 (benchmarking), 2001:db8::/32 and 3fff::/20
 * (documentation); refused besides: ::, ::1, fc00::/7 (ULA), fe80::/10 (link-local),
 * fec0::/10 (site-local), ff00::/8 (multicast), 100::/64 (discard), 64:ff9b:1::/48
 * (local NAT64). Addresses that embed an IPv4 address are judged by the embedded one:
 * IPv4-mapped ::ffff:a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d, IPv4-compatible
 * ::a.b.c.d, NAT64 64:ff9b::a.b.c.d and 6to4 2002:AABB:CCDD::/48.
 *
 * Pure functions: no I/O, no allocation. */
#ifndef BASAL_HOST_ADDRESS_POLICY_H
#define BASAL_HOST_ADDRESS_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

enum address_class {
    ADDRESS_PUBLIC = 0,
    ADDRESS_UNSPECIFIED,
    ADDRESS_LOOPBACK,
    ADDRESS_PRIVATE,       /* RFC 1918 */
    ADDRESS_CGNAT,         /* 100.64/10, RFC 6598 */
    ADDRESS_LINK_LOCAL,
    ADDRESS_MULTICAST,
    ADDRESS_BROADCAST,
    ADDRESS_DOCUMENTATION,
    ADDRESS_BENCHMARKING,
    ADDRESS_RESERVED,      /* 240/4, 192.0.0/24, 6to4 relay anycast, IPv6 outside 2000::/3, discard, Teredo */
    ADDRESS_UNIQUE_LOCAL,  /* fc00::/7 */
    ADDRESS_SITE_LOCAL,    /* fec0::/10 */
    ADDRESS_LOCAL_NAT64,   /* 64:ff9b:1::/48 */
    ADDRESS_NOT_IP,        /* an address family other than IPv4 and IPv6 */
};

struct address_verdict {
    enum address_class cls;
    /* How an IPv6 address carried the IPv4 address that decided the class:
     * "IPv4-mapped", "IPv4-translated", "IPv4-compatible", "NAT64", "6to4"; NULL if
     * none. */
    const char *embedded_in;
};

/* The class of a 4-byte IPv4 address (network order). */
enum address_class address_classify_v4(const unsigned char a[4]);
/* The class of a 16-byte IPv6 address, with how an embedded IPv4 decided it. */
struct address_verdict address_classify_v6(const unsigned char a[16]);
/* Either family from a socket address; ADDRESS_NOT_IP for anything else or a length
 * too short for its family. */
struct address_verdict address_classify(const struct sockaddr *sa, socklen_t len);

/* "loopback", "private (RFC 1918)", ...: for messages. */
const char *address_class_name(enum address_class cls);

/* True if host is a numeric spelling of an address rather than a DNS name: anything
 * inet_aton accepts (decimal 2130706433, octal 017700000001, hex 0x7f000001, short
 * 127.1, dotted forms of each), anything inet_pton accepts as IPv6, anything with
 * ':', '[' or ']', and a name whose last label is all digits or 0x followed by hex
 * digits (a URL parser would read it as IPv4). host is NUL-terminated, without a
 * trailing dot. */
bool address_host_numeric(const char *host);

#endif
