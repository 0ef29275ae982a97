/* The address classes net.fetch refuses and the test for numeric host spellings
 * (address_policy.h has the list). */
#include "host/address_policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>

/* One IPv4 range: the first address and the prefix length. */
struct v4_range {
    uint32_t net;
    unsigned prefix;
    enum address_class cls;
};

/* Ordered: the first match decides (broadcast before the reserved 240/4). */
static const struct v4_range V4_REFUSED[] = {
    {0x00000000u, 8, ADDRESS_UNSPECIFIED},    /* 0.0.0.0/8 */
    {0x0a000000u, 8, ADDRESS_PRIVATE},        /* 10.0.0.0/8 */
    {0x64400000u, 10, ADDRESS_CGNAT},         /* 100.64.0.0/10 */
    {0x7f000000u, 8, ADDRESS_LOOPBACK},       /* 127.0.0.0/8 */
    {0xa9fe0000u, 16, ADDRESS_LINK_LOCAL},    /* 169.254.0.0/16 */
    {0xac100000u, 12, ADDRESS_PRIVATE},       /* 172.16.0.0/12 */
    {0xc0000000u, 24, ADDRESS_RESERVED},      /* 192.0.0.0/24 IETF protocol assignments */
    {0xc0000200u, 24, ADDRESS_DOCUMENTATION}, /* 192.0.2.0/24 TEST-NET-1 */
    {0xc0586300u, 24, ADDRESS_RESERVED},      /* 192.88.99.0/24 6to4 relay anycast */
    {0xc0a80000u, 16, ADDRESS_PRIVATE},       /* 192.168.0.0/16 */
    {0xc6120000u, 15, ADDRESS_BENCHMARKING},  /* 198.18.0.0/15 */
    {0xc6336400u, 24, ADDRESS_DOCUMENTATION}, /* 198.51.100.0/24 TEST-NET-2 */
    {0xcb007100u, 24, ADDRESS_DOCUMENTATION}, /* 203.0.113.0/24 TEST-NET-3 */
    {0xe0000000u, 4, ADDRESS_MULTICAST},      /* 224.0.0.0/4 */
    {0xffffffffu, 32, ADDRESS_BROADCAST},     /* 255.255.255.255 */
    {0xf0000000u, 4, ADDRESS_RESERVED},       /* 240.0.0.0/4 */
};

enum address_class address_classify_v4(const unsigned char a[4])
{
    uint32_t v = (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
    for (size_t i = 0; i < sizeof V4_REFUSED / sizeof V4_REFUSED[0]; i++) {
        const struct v4_range *r = &V4_REFUSED[i];
        uint32_t mask = r->prefix == 0 ? 0 : 0xffffffffu << (32 - r->prefix);
        if ((v & mask) == r->net)
            return r->cls;
    }
    return ADDRESS_PUBLIC;
}

/* True if the first bits of a equal those of prefix. */
static bool has_prefix(const unsigned char a[16], const unsigned char *prefix, unsigned bits)
{
    unsigned whole = bits / 8, rest = bits % 8;
    if (memcmp(a, prefix, whole) != 0)
        return false;
    if (rest == 0)
        return true;
    unsigned char mask = (unsigned char)(0xffu << (8 - rest));
    return (a[whole] & mask) == (prefix[whole] & mask);
}

static struct address_verdict verdict(enum address_class cls, const char *via)
{
    struct address_verdict v = {cls, via};
    return v;
}

/* The verdict of the IPv4 address at a[at..at+4), embedded by way of via. */
static struct address_verdict embedded(const unsigned char *a, size_t at, const char *via)
{
    return verdict(address_classify_v4(a + at), via);
}

struct address_verdict address_classify_v6(const unsigned char a[16])
{
    static const unsigned char zero[16] = {0};
    static const unsigned char mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const unsigned char translated[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0};
    static const unsigned char nat64[16] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    static const unsigned char nat64_local[16] = {0, 0x64, 0xff, 0x9b, 0, 1};
    static const unsigned char six_to_four[16] = {0x20, 0x02};
    static const unsigned char teredo[16] = {0x20, 0x01, 0, 0};
    static const unsigned char bench[16] = {0x20, 0x01, 0, 2, 0, 0};
    static const unsigned char doc[16] = {0x20, 0x01, 0x0d, 0xb8};
    static const unsigned char doc2[16] = {0x3f, 0xff};
    static const unsigned char discard[16] = {0x01, 0, 0, 0, 0, 0, 0, 0};

    if (memcmp(a, zero, 16) == 0)
        return verdict(ADDRESS_UNSPECIFIED, NULL);
    if (memcmp(a, zero, 15) == 0 && a[15] == 1)
        return verdict(ADDRESS_LOOPBACK, NULL);
    if (has_prefix(a, mapped, 96))
        return embedded(a, 12, "IPv4-mapped");
    if (has_prefix(a, translated, 96))
        return embedded(a, 12, "IPv4-translated");
    if (has_prefix(a, zero, 96)) /* ::a.b.c.d, deprecated */
        return embedded(a, 12, "IPv4-compatible");
    if (has_prefix(a, nat64, 96))
        return embedded(a, 12, "NAT64");
    if (has_prefix(a, nat64_local, 48))
        return verdict(ADDRESS_LOCAL_NAT64, NULL);
    if (has_prefix(a, six_to_four, 16))
        return embedded(a, 2, "6to4");
    if (a[0] == 0xff)
        return verdict(ADDRESS_MULTICAST, NULL);
    if ((a[0] & 0xfe) == 0xfc)
        return verdict(ADDRESS_UNIQUE_LOCAL, NULL);
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
        return verdict(ADDRESS_LINK_LOCAL, NULL);
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0)
        return verdict(ADDRESS_SITE_LOCAL, NULL);
    if (has_prefix(a, discard, 64))
        return verdict(ADDRESS_RESERVED, NULL);
    if (has_prefix(a, doc, 32) || has_prefix(a, doc2, 20))
        return verdict(ADDRESS_DOCUMENTATION, NULL);
    if (has_prefix(a, bench, 48))
        return verdict(ADDRESS_BENCHMARKING, NULL);
    if (has_prefix(a, teredo, 32)) /* carries an obscured IPv4 address: refused whole */
        return verdict(ADDRESS_RESERVED, NULL);
    if ((a[0] & 0xe0) != 0x20) /* outside global unicast 2000::/3 */
        return verdict(ADDRESS_RESERVED, NULL);
    return verdict(ADDRESS_PUBLIC, NULL);
}

struct address_verdict address_classify(const struct sockaddr *sa, socklen_t len)
{
    if (sa != NULL && sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in in;
        memcpy(&in, sa, sizeof in);
        return verdict(address_classify_v4((const unsigned char *)&in.sin_addr), NULL);
    }
    if (sa != NULL && sa->sa_family == AF_INET6 &&
        len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 in6;
        memcpy(&in6, sa, sizeof in6);
        return address_classify_v6(in6.sin6_addr.s6_addr);
    }
    return verdict(ADDRESS_NOT_IP, NULL);
}

const char *address_class_name(enum address_class cls)
{
    switch (cls) {
    case ADDRESS_PUBLIC: return "public";
    case ADDRESS_UNSPECIFIED: return "unspecified";
    case ADDRESS_LOOPBACK: return "loopback";
    case ADDRESS_PRIVATE: return "private (RFC 1918)";
    case ADDRESS_CGNAT: return "shared address space (CGNAT)";
    case ADDRESS_LINK_LOCAL: return "link-local";
    case ADDRESS_MULTICAST: return "multicast";
    case ADDRESS_BROADCAST: return "broadcast";
    case ADDRESS_DOCUMENTATION: return "documentation";
    case ADDRESS_BENCHMARKING: return "benchmarking";
    case ADDRESS_RESERVED: return "reserved";
    case ADDRESS_UNIQUE_LOCAL: return "unique local (ULA)";
    case ADDRESS_SITE_LOCAL: return "site-local";
    case ADDRESS_LOCAL_NAT64: return "local-use NAT64";
    case ADDRESS_NOT_IP: return "not an IP address";
    }
    return "unknown";
}

/* The last label is all digits, or 0x and hex digits: a URL parser reads the whole
 * host as IPv4 (WHATWG "ends in a number"). */
static bool last_label_numeric(const char *host)
{
    const char *dot = strrchr(host, '.');
    const char *label = dot != NULL ? dot + 1 : host;
    if (label[0] == '\0')
        return false;
    bool hex = label[0] == '0' && (label[1] == 'x' || label[1] == 'X');
    const char *p = hex ? label + 2 : label;
    for (; *p != '\0'; p++) {
        bool digit = *p >= '0' && *p <= '9';
        bool hexdigit = digit || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F');
        if (!(hex ? hexdigit : digit))
            return false;
    }
    return true;
}

bool address_host_numeric(const char *host)
{
    if (strpbrk(host, ":[]") != NULL)
        return true;
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_aton(host, &a4) != 0 || inet_pton(AF_INET6, host, &a6) == 1)
        return true;
    return last_label_numeric(host);
}
