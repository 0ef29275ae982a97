/* net.fetch for flows (basal.md section 7; docs/flows.md, "net.fetch" is the
 * script's view). Every argument comes from a hostile script.
 *
 *   net.fetch(url[, {method, headers, body, maxBytes}])
 *     -> {status, headers, body, base64, url}
 *
 * The request. url: an absolute https URL of at most 8 KiB, without user
 * information; its host, lowercased and without a trailing dot, must equal a granted
 * host and be a DNS name (numeric spellings of addresses are refused:
 * host/address_policy.h). method: GET (default), HEAD, POST, PUT, PATCH or DELETE (any
 * case), one the grant lists. headers: an object of at most 64 string values, names
 * RFC 9110 tokens of at most 256 bytes, values at most 8 KiB without control
 * characters (tab allowed), 64 KiB in all; Host, Cookie, Cookie2, Authorization,
 * Proxy-*, Idempotency-Key, Content-Length, Expect and the hop-by-hop headers
 * (Connection, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade) are refused.
 * body: a string of at most 1 MiB, not with GET or HEAD. maxBytes: 1..8 MiB, default
 * 1 MiB. Unknown option keys are refused.
 *
 * The connection. The parent resolves the host once (getaddrinfo, bounded by the
 * time left), refuses the request if ANY address it gets is of a refused class, and
 * pins libcurl to exactly the checked addresses (CURLOPT_RESOLVE); an open-socket
 * callback refuses any address outside that set, so no second resolution can be
 * used (DNS rebinding). libcurl runs with redirects off, https only, no proxy (from
 * the environment or otherwise), no .netrc, no cookies, no content decoding, no
 * authentication. Redirects (301, 302, 303, 307, 308 with a Location) are followed
 * here, at most 5, each checked as a new request: scheme, granted host, method
 * (303, and 301/302 of a POST, become GET without a body), addresses. A keyed
 * mutation (below) keeps its method across a redirect only to a host that is also
 * marked idempotent. Connect at most 10 s per hop, 30 s for the whole call, never
 * beyond the activation's deadline. Response: at most 100 header lines, 16 KiB each,
 * 64 KiB in all (over: too_large); body at most maxBytes (over: too_large).
 *
 * The result. status: the final HTTP status (any status fulfils); headers: names
 * lowercased, repeated headers joined with ", " (bytes that are not UTF-8 become
 * '?'); body: the body as text if it is UTF-8 without NUL, else base64 with base64
 * true; url: the final URL.
 *
 * Classes. GET and HEAD are queries. Other methods are mutations and carry the
 * call's idempotency key as the Idempotency-Key header; a grant marked idempotent
 * makes them keyed mutations (resent with the same key on resume), otherwise a
 * mutation in doubt goes to needs_reconcile.
 *
 * Rejections: invalid_arguments (types, a URL that does not parse, bad header names
 * or values, a body with GET/HEAD), denied (a scheme other than https, a host or
 * method not granted, a numeric host, a refused address, a forbidden header, a
 * redirect to any of those), too_large, timeout, too_many_redirects, network_error
 * (the name does not resolve, no connection, TLS, a protocol error).
 *
 * Test builds only (-DBASAL_TEST_HOOKS; release builds contain neither the code nor
 * the names): BASAL_TEST_NET_ALLOW_LOOPBACK=1 (loopback addresses allowed; every
 * other class still refused), BASAL_TEST_NET_ALLOW_HTTP=1 (plain http too),
 * BASAL_TEST_NET_CA=FILE (the only CA trusted), BASAL_TEST_NET_TIMEOUTS=CONNECT_MS,TOTAL_MS
 * and BASAL_TEST_NET_RESOLVE=NAME=ANSWER[>ANSWER...][;NAME=...] where an ANSWER is
 * ADDR[+ADDR...]: the Nth resolution of NAME in the process gets the Nth answer (the
 * last one from then on), instead of getaddrinfo. */
#ifndef BASAL_HOST_NET_FETCH_H
#define BASAL_HOST_NET_FETCH_H

#include "host/host.h"

#include <stdbool.h>
#include <stddef.h>

#define HOST_CODE_NETWORK_ERROR "network_error"
#define HOST_CODE_TOO_MANY_REDIRECTS "too_many_redirects"

#define NET_FETCH_MAX_REDIRECTS 5
#define NET_FETCH_CONNECT_MS 10000L
#define NET_FETCH_TOTAL_MS 30000L
#define NET_FETCH_BODY_DEFAULT (1u << 20)
#define NET_FETCH_BODY_MAX (8u << 20)
#define NET_FETCH_REQUEST_BODY_MAX (1u << 20)
#define NET_FETCH_URL_MAX 8192u
#define NET_FETCH_REQUEST_HEADERS_MAX 64u
#define NET_FETCH_HEADER_NAME_MAX 256u
#define NET_FETCH_HEADER_VALUE_MAX 8192u
#define NET_FETCH_REQUEST_HEADER_BYTES_MAX (64u << 10)
#define NET_FETCH_RESPONSE_HEADERS_MAX 100u
#define NET_FETCH_RESPONSE_LINE_MAX (16u << 10)
#define NET_FETCH_RESPONSE_HEADER_BYTES_MAX (64u << 10)
#define NET_FETCH_MAX_ADDRESSES 16u

/* Method bits; the same values as the manifest's (flows/manifest.h). */
enum net_method {
    NET_METHOD_GET = 1u << 0,
    NET_METHOD_HEAD = 1u << 1,
    NET_METHOD_POST = 1u << 2,
    NET_METHOD_PUT = 1u << 3,
    NET_METHOD_PATCH = 1u << 4,
    NET_METHOD_DELETE = 1u << 5,
};

struct net_grant {
    const char *host; /* a lowercase DNS name */
    unsigned methods; /* enum net_method bits */
    bool idempotent;  /* the host honours Idempotency-Key */
};

struct net_grants {
    const struct net_grant *items;
    size_t count;
};

enum net_fetch_class {
    NET_FETCH_QUERY = 0,      /* GET, HEAD */
    NET_FETCH_KEYED,          /* another method to a host marked idempotent */
    NET_FETCH_MUTATION,       /* another method */
};

/* One call's request, parsed once (the URL, method, headers, body, limits): the grant
 * check and the effect both use it. Its body points into args, which must outlive it. */
struct net_fetch_request;

/* Parses a call's arguments (a jansson json_t * array) without touching the network.
 * 0 with *req made, or -1 with the rejection's code and a one-line reason (code_cap
 * >= 32). */
int net_fetch_parse(const void *args, struct net_fetch_request **req, char *code,
                    size_t code_cap, char *reason, size_t reason_cap);

/* The scheme, host and method grants of a parsed request: 0 with *cls set (the
 * request is then marked granted), or -1 with the refusal's code and reason. */
int net_fetch_grant(const struct net_grants *grants, struct net_fetch_request *req,
                    enum net_fetch_class *cls, char *code, size_t code_cap, char *reason,
                    size_t reason_cap);

void net_fetch_request_free(struct net_fetch_request *req);

/* One libcurl handle reused across a run's calls (its connections are kept alive). */
struct net_fetch_session;

/* NULL if libcurl cannot be loaded or set up, or out of memory; err says which. */
struct net_fetch_session *net_fetch_session_new(char *err, size_t err_cap);
void net_fetch_session_free(struct net_fetch_session *s);

/* Performs a granted request (one never granted is refused "denied") with
 * idempotency_key for a mutation, giving up at deadline_at_ms (CLOCK_MONOTONIC ms; 0:
 * none beyond the call's own 30 s); each redirect is checked against grants as a new
 * request. Once: the request is spent (free it after). Fills *out, fulfilled or
 * rejected. Returns 0, or -1 if not even a rejection could be made (out of memory). */
int net_fetch_perform(struct net_fetch_session *s, const struct net_grants *grants,
                      struct net_fetch_request *req, const char *idempotency_key,
                      long long deadline_at_ms, struct host_settlement *out);

#endif
