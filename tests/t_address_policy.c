/* The address policy of net.fetch (src/host/address_policy.h), unit by unit:
 *
 *   1. every refused IPv4 and IPv6 class, with addresses inside, at the edges and just
 *      outside each range (outside: public) [guard: address classes];
 *   2. IPv6 forms that embed an IPv4 address (IPv4-mapped, IPv4-translated,
 *      IPv4-compatible, NAT64, 6to4) take the embedded address's class and say how
 *      [guard: embedded IPv4];
 *   3. socket addresses of either family and of another family;
 *   4. numeric host spellings (decimal, octal, hex, short, dotted mixtures, IPv6,
 *      bracketed, a numeric last label) are not DNS names; DNS names are [guard:
 *      numeric hosts refused].
 * End to end (through ck-basal, with the test resolver mapping a name to each class)
 * is tests/t_net_fetch.c. */
#include "lib/harness.h"

#include "host/address_policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

struct expect {
    const char *addr;
    enum address_class cls;
    const char *via; /* embedded in, or NULL */
};

static const struct expect V4[] = {
    {"0.0.0.0", ADDRESS_UNSPECIFIED, NULL},
    {"0.255.255.255", ADDRESS_UNSPECIFIED, NULL},
    {"10.0.0.0", ADDRESS_PRIVATE, NULL},
    {"10.255.255.255", ADDRESS_PRIVATE, NULL},
    {"172.16.0.0", ADDRESS_PRIVATE, NULL},
    {"172.31.255.255", ADDRESS_PRIVATE, NULL},
    {"192.168.0.1", ADDRESS_PRIVATE, NULL},
    {"192.168.255.255", ADDRESS_PRIVATE, NULL},
    {"100.64.0.0", ADDRESS_CGNAT, NULL},
    {"100.127.255.255", ADDRESS_CGNAT, NULL},
    {"127.0.0.1", ADDRESS_LOOPBACK, NULL},
    {"127.255.255.254", ADDRESS_LOOPBACK, NULL},
    {"169.254.169.254", ADDRESS_LINK_LOCAL, NULL},
    {"169.254.0.0", ADDRESS_LINK_LOCAL, NULL},
    {"224.0.0.1", ADDRESS_MULTICAST, NULL},
    {"239.255.255.255", ADDRESS_MULTICAST, NULL},
    {"255.255.255.255", ADDRESS_BROADCAST, NULL},
    {"192.0.2.1", ADDRESS_DOCUMENTATION, NULL},
    {"198.51.100.7", ADDRESS_DOCUMENTATION, NULL},
    {"203.0.113.255", ADDRESS_DOCUMENTATION, NULL},
    {"198.18.0.0", ADDRESS_BENCHMARKING, NULL},
    {"198.19.255.255", ADDRESS_BENCHMARKING, NULL},
    {"240.0.0.1", ADDRESS_RESERVED, NULL},
    {"255.255.255.254", ADDRESS_RESERVED, NULL},
    {"192.0.0.170", ADDRESS_RESERVED, NULL},
    {"192.88.99.1", ADDRESS_RESERVED, NULL},
    /* just outside */
    {"1.0.0.0", ADDRESS_PUBLIC, NULL},
    {"9.255.255.255", ADDRESS_PUBLIC, NULL},
    {"11.0.0.0", ADDRESS_PUBLIC, NULL},
    {"100.63.255.255", ADDRESS_PUBLIC, NULL},
    {"100.128.0.0", ADDRESS_PUBLIC, NULL},
    {"126.255.255.255", ADDRESS_PUBLIC, NULL},
    {"128.0.0.0", ADDRESS_PUBLIC, NULL},
    {"169.253.255.255", ADDRESS_PUBLIC, NULL},
    {"172.15.255.255", ADDRESS_PUBLIC, NULL},
    {"172.32.0.0", ADDRESS_PUBLIC, NULL},
    {"192.0.1.255", ADDRESS_PUBLIC, NULL},
    {"192.0.3.0", ADDRESS_PUBLIC, NULL},
    {"192.167.255.255", ADDRESS_PUBLIC, NULL},
    {"192.169.0.0", ADDRESS_PUBLIC, NULL},
    {"198.17.255.255", ADDRESS_PUBLIC, NULL},
    {"198.20.0.0", ADDRESS_PUBLIC, NULL},
    {"223.255.255.255", ADDRESS_PUBLIC, NULL},
    {"8.8.8.8", ADDRESS_PUBLIC, NULL},
};

static const struct expect V6[] = {
    {"::", ADDRESS_UNSPECIFIED, NULL},
    {"::1", ADDRESS_LOOPBACK, NULL},
    {"fc00::1", ADDRESS_UNIQUE_LOCAL, NULL},
    {"fdff:ffff::1", ADDRESS_UNIQUE_LOCAL, NULL},
    {"fe80::1", ADDRESS_LINK_LOCAL, NULL},
    {"febf:ffff::1", ADDRESS_LINK_LOCAL, NULL},
    {"fec0::1", ADDRESS_SITE_LOCAL, NULL},
    {"ff02::1", ADDRESS_MULTICAST, NULL},
    {"ff0e::1", ADDRESS_MULTICAST, NULL},
    {"2001:db8::1", ADDRESS_DOCUMENTATION, NULL},
    {"3fff:fff::1", ADDRESS_DOCUMENTATION, NULL},
    {"2001:2::1", ADDRESS_BENCHMARKING, NULL},
    {"2001:0:4136:e378::1", ADDRESS_RESERVED, NULL}, /* Teredo */
    {"100::1", ADDRESS_RESERVED, NULL},               /* discard */
    {"64:ff9b:1::1", ADDRESS_LOCAL_NAT64, NULL},
    {"4000::1", ADDRESS_RESERVED, NULL},              /* outside 2000::/3 */
    {"1234::1", ADDRESS_RESERVED, NULL},
    /* embedded IPv4 */
    {"::ffff:127.0.0.1", ADDRESS_LOOPBACK, "IPv4-mapped"},
    {"::ffff:10.1.2.3", ADDRESS_PRIVATE, "IPv4-mapped"},
    {"::ffff:169.254.169.254", ADDRESS_LINK_LOCAL, "IPv4-mapped"},
    {"::ffff:8.8.8.8", ADDRESS_PUBLIC, "IPv4-mapped"},
    {"::ffff:0:192.168.1.1", ADDRESS_PRIVATE, "IPv4-translated"},
    {"::10.0.0.1", ADDRESS_PRIVATE, "IPv4-compatible"},
    {"::127.0.0.2", ADDRESS_LOOPBACK, "IPv4-compatible"},
    {"64:ff9b::10.0.0.1", ADDRESS_PRIVATE, "NAT64"},
    {"64:ff9b::127.0.0.1", ADDRESS_LOOPBACK, "NAT64"},
    {"64:ff9b::8.8.8.8", ADDRESS_PUBLIC, "NAT64"},
    {"2002:7f00:1::1", ADDRESS_LOOPBACK, "6to4"},
    {"2002:a9fe:a9fe::", ADDRESS_LINK_LOCAL, "6to4"},
    {"2002:808:808::1", ADDRESS_PUBLIC, "6to4"},
    /* public */
    {"2606:4700:4700::1111", ADDRESS_PUBLIC, NULL},
    {"2001:4860:4860::8888", ADDRESS_PUBLIC, NULL},
    {"2001:1::1", ADDRESS_PUBLIC, NULL},
    {"3ffe::1", ADDRESS_PUBLIC, NULL},
};

static void test_v4(void)
{
    bool all = true;
    for (size_t i = 0; i < sizeof V4 / sizeof V4[0]; i++) {
        unsigned char a[4];
        if (inet_pton(AF_INET, V4[i].addr, a) != 1) {
            fail("address policy: v4 fixture", "%s does not parse", V4[i].addr);
            continue;
        }
        enum address_class got = address_classify_v4(a);
        if (got != V4[i].cls) {
            all = false;
            fail("address policy: IPv4 class", "%s is %s, expected %s", V4[i].addr,
                 address_class_name(got), address_class_name(V4[i].cls));
        }
    }
    check(all, "address policy: every refused IPv4 class inside, at and just outside its range "
               "[guard: address classes]", "see above");
}

static void test_v6(void)
{
    bool all = true;
    for (size_t i = 0; i < sizeof V6 / sizeof V6[0]; i++) {
        unsigned char a[16];
        if (inet_pton(AF_INET6, V6[i].addr, a) != 1) {
            fail("address policy: v6 fixture", "%s does not parse", V6[i].addr);
            continue;
        }
        struct address_verdict v = address_classify_v6(a);
        bool via_ok = V6[i].via == NULL ? v.embedded_in == NULL
                                        : v.embedded_in != NULL && strcmp(v.embedded_in, V6[i].via) == 0;
        if (v.cls != V6[i].cls || !via_ok) {
            all = false;
            fail("address policy: IPv6 class", "%s is %s (via %s), expected %s (via %s)",
                 V6[i].addr, address_class_name(v.cls), v.embedded_in ? v.embedded_in : "-",
                 address_class_name(V6[i].cls), V6[i].via ? V6[i].via : "-");
        }
    }
    check(all, "address policy: every refused IPv6 class, and IPv4-mapped/translated/compatible, "
               "NAT64 and 6to4 judged by the embedded IPv4 [guard: embedded IPv4]", "see above");
}

static void test_sockaddr(void)
{
    struct sockaddr_in in4;
    memset(&in4, 0, sizeof in4);
    in4.sin_family = AF_INET;
    inet_pton(AF_INET, "10.9.8.7", &in4.sin_addr);
    struct address_verdict v = address_classify((const struct sockaddr *)&in4, sizeof in4);
    check(v.cls == ADDRESS_PRIVATE, "address policy: a sockaddr_in is classified", "%s",
          address_class_name(v.cls));
    struct sockaddr_in6 in6;
    memset(&in6, 0, sizeof in6);
    in6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "::ffff:127.0.0.1", &in6.sin6_addr);
    v = address_classify((const struct sockaddr *)&in6, sizeof in6);
    check(v.cls == ADDRESS_LOOPBACK && v.embedded_in != NULL,
          "address policy: a sockaddr_in6 is classified (mapped loopback)", "%s",
          address_class_name(v.cls));
    v = address_classify((const struct sockaddr *)&in4, 4);
    check(v.cls == ADDRESS_NOT_IP, "address policy: a truncated sockaddr is not an IP address",
          "%s", address_class_name(v.cls));
    struct sockaddr unix_like;
    memset(&unix_like, 0, sizeof unix_like);
    unix_like.sa_family = AF_UNIX;
    v = address_classify(&unix_like, sizeof unix_like);
    check(v.cls == ADDRESS_NOT_IP, "address policy: another family is not an IP address", "%s",
          address_class_name(v.cls));
}

static void test_numeric_hosts(void)
{
    static const char *const numeric[] = {
        "127.0.0.1", "2130706433", "017700000001", "0x7f000001", "0X7F000001", "127.1", "127.0.1",
        "0x7f.1", "0177.0.0.1", "0x7f.0.0.0x1", "10.1", "0", "::1", "[::1]", "::ffff:127.0.0.1",
        "[fe80::1]", "fe80::1%eth0", "1.2.3.4.5", "example.123", "a.b.0x1f", "a.0x",
    };
    static const char *const names[] = {
        "example.com", "pub.basal.test", "localhost", "123.example.com", "1e100.net",
        "0x.example", "a-1.b-2.example", "xn--bcher-kva.example",
    };
    bool all = true;
    for (size_t i = 0; i < sizeof numeric / sizeof numeric[0]; i++)
        if (!address_host_numeric(numeric[i])) {
            all = false;
            fail("address policy: numeric host", "'%s' was taken for a DNS name", numeric[i]);
        }
    check(all, "address policy: decimal, octal, hex, short, mixed, IPv6, bracketed and numeric-"
               "last-label spellings are numeric [guard: numeric hosts refused]", "see above");
    all = true;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (address_host_numeric(names[i])) {
            all = false;
            fail("address policy: DNS name", "'%s' was taken for a numeric address", names[i]);
        }
    check(all, "address policy: DNS names (digits inside, 0x not followed by hex, punycode) are "
               "names", "see above");
}

int main(void)
{
    test_v4();
    test_v6();
    test_sockaddr();
    test_numeric_hosts();
    return harness_finish();
}
