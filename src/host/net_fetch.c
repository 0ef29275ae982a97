/* net.fetch with libcurl: the argument checks, one resolution per hop checked and
 * pinned, redirects followed here, bounded responses (net_fetch.h has the contract). */
#include "host/net_fetch.h"

#include "base/bounded_append.h"
#include "host/curl_baseline.h"
#include "host/curl_library.h"
#include "base/clock.h"
#include "host/address_policy.h"
#include "host/refusal.h"
#include "proto/utf8.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* getaddrinfo answers beyond this many are refused outright. */
#define RESOLVED_MAX 64u

static const char *const METHOD_NAMES[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"};
#define METHOD_COUNT (sizeof METHOD_NAMES / sizeof METHOD_NAMES[0])

static const char *method_name(unsigned bit)
{
    for (size_t i = 0; i < METHOD_COUNT; i++)
        if (bit == 1u << i)
            return METHOD_NAMES[i];
    return "?";
}

static bool method_is_query(unsigned bit)
{
    return bit == NET_METHOD_GET || bit == NET_METHOD_HEAD;
}

/* ---- the test-only setting ------------------------------------------------------- */

struct settings {
    bool allow_loopback;
    bool allow_http;
    const char *ca_file;       /* NULL: the system's CAs */
    const char *resolve;       /* NULL: getaddrinfo */
    long connect_ms, total_ms;
};

static void settings_load(struct settings *t)
{
    memset(t, 0, sizeof *t);
    t->connect_ms = NET_FETCH_CONNECT_MS;
    t->total_ms = NET_FETCH_TOTAL_MS;
#ifdef BASAL_TEST_HOOKS
    const char *v = getenv("BASAL_TEST_NET_ALLOW_LOOPBACK");
    t->allow_loopback = v != NULL && strcmp(v, "1") == 0;
    v = getenv("BASAL_TEST_NET_ALLOW_HTTP");
    t->allow_http = v != NULL && strcmp(v, "1") == 0;
    t->ca_file = getenv("BASAL_TEST_NET_CA");
    t->resolve = getenv("BASAL_TEST_NET_RESOLVE");
    v = getenv("BASAL_TEST_NET_TIMEOUTS");
    char *comma = NULL, *end = NULL;
    long c = v != NULL ? strtol(v, &comma, 10) : 0;
    long total = comma != NULL && *comma == ',' ? strtol(comma + 1, &end, 10) : 0;
    if (end != NULL && *end == '\0' && c > 0 && total > 0) {
        t->connect_ms = c;
        t->total_ms = total;
    }
#endif
}

/* ---- the request ---------------------------------------------------------------------- */

struct request {
    CURLU *url;
    char scheme[8];
    char host[256];        /* lowercased, no trailing dot */
    long port;
    unsigned method;
    struct curl_slist *headers; /* the script's, in curl's "Name: value" form */
    const char *body;           /* in the arguments' JSON; NULL: none */
    size_t body_len;
    size_t max_bytes;
};

static void request_free(struct request *r)
{
    curl_lib.url_cleanup(r->url);
    curl_lib.slist_free_all(r->headers);
    memset(r, 0, sizeof *r);
}

/* Names a script may not set (lowercase); "proxy-" is a prefix. */
static const char *const FORBIDDEN_HEADERS[] = {
    "host", "cookie", "cookie2", "authorization", "idempotency-key", "content-length",
    "expect", "connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade",
};

static bool header_forbidden(const char *name)
{
    if (strncasecmp(name, "proxy-", 6) == 0)
        return true;
    for (size_t i = 0; i < sizeof FORBIDDEN_HEADERS / sizeof FORBIDDEN_HEADERS[0]; i++)
        if (strcasecmp(name, FORBIDDEN_HEADERS[i]) == 0)
            return true;
    return false;
}

/* An RFC 9110 token. */
static bool header_name_valid(const char *s, size_t n)
{
    if (n == 0 || n > NET_FETCH_HEADER_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                  (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
        if (!ok)
            return false;
    }
    return true;
}

/* No control characters but tab, no DEL; UTF-8 (the JSON parser checked it). */
static bool header_value_valid(const char *s, size_t n)
{
    if (n > NET_FETCH_HEADER_VALUE_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
            return false;
    }
    return true;
}

static int parse_headers(json_t *h, struct request *r, struct refusal *why)
{
    if (!json_is_object(h))
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: headers must be an object of"
                      " strings");
    if (json_object_size(h) > NET_FETCH_REQUEST_HEADERS_MAX)
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: %zu headers, more than the"
                      " %u allowed", json_object_size(h), NET_FETCH_REQUEST_HEADERS_MAX);
    size_t total = 0;
    const char *name;
    json_t *value;
    json_object_foreach(h, name, value) {
        size_t nlen = strlen(name);
        if (!header_name_valid(name, nlen))
            return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: header name '%.64s' is"
                          " not a token of 1-%u bytes", name, NET_FETCH_HEADER_NAME_MAX);
        if (header_forbidden(name))
            return refuse(why, HOST_CODE_DENIED, "net.fetch: a script may not set the header"
                          " '%s'", name);
        if (!json_is_string(value))
            return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: header '%s' must be a"
                          " string", name);
        const char *v = json_string_value(value);
        size_t vlen = json_string_length(value);
        if (!header_value_valid(v, vlen) || strlen(v) != vlen)
            return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: header '%s': a value of"
                          " at most %u bytes without control characters", name,
                          NET_FETCH_HEADER_VALUE_MAX);
        total += nlen + vlen + 4;
        if (total > NET_FETCH_REQUEST_HEADER_BYTES_MAX)
            return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: headers over %u bytes"
                          " in all", NET_FETCH_REQUEST_HEADER_BYTES_MAX);
        /* "Name;" is how curl sends a header with an empty value ("Name:" removes one). */
        char *line = malloc(nlen + vlen + 3);
        if (line == NULL)
            return refuse(why, HOST_CODE_IO_ERROR, "net.fetch: out of memory");
        if (vlen == 0)
            snprintf(line, nlen + 2, "%s;", name);
        else
            snprintf(line, nlen + vlen + 3, "%s: %s", name, v);
        struct curl_slist *grown = curl_lib.slist_append(r->headers, line);
        free(line);
        if (grown == NULL)
            return refuse(why, HOST_CODE_IO_ERROR, "net.fetch: out of memory");
        r->headers = grown;
    }
    return 0;
}

static int parse_method(const json_t *m, unsigned *out, struct refusal *why)
{
    if (!json_is_string(m))
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: method must be a string");
    for (size_t i = 0; i < METHOD_COUNT; i++)
        if (strcasecmp(json_string_value(m), METHOD_NAMES[i]) == 0 &&
            json_string_length(m) == strlen(METHOD_NAMES[i])) {
            *out = 1u << i;
            return 0;
        }
    return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: method must be GET, HEAD, POST,"
                  " PUT, PATCH or DELETE");
}

static int parse_options(json_t *o, struct request *r, struct refusal *why)
{
    if (o == NULL || json_is_null(o))
        return 0;
    if (!json_is_object(o))
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: options must be an object");
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        if (strcmp(key, "method") == 0) {
            if (parse_method(v, &r->method, why) != 0)
                return -1;
        } else if (strcmp(key, "headers") == 0) {
            if (parse_headers(v, r, why) != 0)
                return -1;
        } else if (strcmp(key, "body") == 0) {
            if (!json_is_string(v))
                return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: body must be a"
                              " string");
            r->body = json_string_value(v);
            r->body_len = json_string_length(v);
            if (r->body_len > NET_FETCH_REQUEST_BODY_MAX)
                return refuse(why, HOST_CODE_TOO_LARGE, "net.fetch: body of %zu bytes, more than"
                              " the %u allowed", r->body_len, NET_FETCH_REQUEST_BODY_MAX);
        } else if (strcmp(key, "maxBytes") == 0) {
            json_int_t n = json_is_integer(v) ? json_integer_value(v) : 0;
            if (n < 1 || n > (json_int_t)NET_FETCH_BODY_MAX)
                return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: maxBytes must be an"
                              " integer 1..%u", NET_FETCH_BODY_MAX);
            r->max_bytes = (size_t)n;
        } else {
            return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: unknown option '%.64s'"
                          " (method, headers, body, maxBytes)", key);
        }
    }
    if (r->body != NULL && method_is_query(r->method))
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: a %s request has no body",
                      method_name(r->method));
    return 0;
}

/* Takes the scheme, host and port of r->url and checks their form: https (http only
 * under the test setting), an ASCII DNS name that is not numeric, no user info. */
static int url_parts(struct request *r, const struct settings *t, struct refusal *why)
{
    char *scheme = NULL, *host = NULL, *user = NULL, *password = NULL, *port = NULL;
    int rc = -1;
    if (curl_lib.url_get(r->url, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_lib.url_get(r->url, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
        refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: the URL has no scheme or host");
        goto out;
    }
    (void)curl_lib.url_get(r->url, CURLUPART_USER, &user, 0);
    (void)curl_lib.url_get(r->url, CURLUPART_PASSWORD, &password, 0);
    if (user != NULL || password != NULL) {
        refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: a URL may not carry credentials");
        goto out;
    }
    bool https = strcasecmp(scheme, "https") == 0;
    bool http = strcasecmp(scheme, "http") == 0;
    if (!https && !(http && t->allow_http)) {
        refuse(why, HOST_CODE_DENIED, "net.fetch: scheme '%.16s' refused: https only", scheme);
        goto out;
    }
    snprintf(r->scheme, sizeof r->scheme, "%s", https ? "https" : "http");
    size_t n = strlen(host);
    if (n > 0 && host[n - 1] == '.')
        host[--n] = '\0';
    if (n == 0 || n > 253) {
        refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: the URL's host is empty or longer"
               " than 253 bytes");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (host[i] >= 'A' && host[i] <= 'Z')
            host[i] = (char)(host[i] - 'A' + 'a');
    if (address_host_numeric(host)) {
        refuse(why, HOST_CODE_DENIED, "net.fetch: host '%.64s' is an IP address literal, not a"
               " DNS name", host);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = host[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.')) {
            refuse(why, HOST_CODE_DENIED, "net.fetch: host '%.64s' is not an ASCII DNS name",
                   host);
            goto out;
        }
    }
    memcpy(r->host, host, n + 1);
    r->port = https ? 443 : 80;
    if (curl_lib.url_get(r->url, CURLUPART_PORT, &port, 0) == CURLUE_OK && port != NULL)
        r->port = strtol(port, NULL, 10);
    /* curl connects to exactly the name checked here (and pinned below). */
    if (curl_lib.url_set(r->url, CURLUPART_HOST, r->host, 0) != CURLUE_OK ||
        curl_lib.url_set(r->url, CURLUPART_FRAGMENT, NULL, 0) != CURLUE_OK) {
        refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: the URL cannot be rebuilt");
        goto out;
    }
    rc = 0;
out:
    curl_lib.free(scheme);
    curl_lib.free(host);
    curl_lib.free(user);
    curl_lib.free(password);
    curl_lib.free(port);
    return rc;
}

static int set_url(struct request *r, const char *text, const struct settings *t,
                   struct refusal *why)
{
    CURLU *u = curl_lib.url();
    if (u == NULL)
        return refuse(why, HOST_CODE_IO_ERROR, "net.fetch: out of memory");
    if (curl_lib.url_set(u, CURLUPART_URL, text, 0) != CURLUE_OK) {
        curl_lib.url_cleanup(u);
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: not an absolute URL");
    }
    curl_lib.url_cleanup(r->url);
    r->url = u;
    return url_parts(r, t, why);
}

static int parse_request(const json_t *args, const struct settings *t, struct request *r,
                         struct refusal *why)
{
    memset(r, 0, sizeof *r);
    r->method = NET_METHOD_GET;
    r->max_bytes = NET_FETCH_BODY_DEFAULT;
    size_t n = json_array_size(args);
    const json_t *url = json_array_get(args, 0);
    if (!json_is_array(args) || n < 1 || n > 2 || !json_is_string(url))
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch(url[, options]): url must be"
                      " a string");
    if (json_string_length(url) > NET_FETCH_URL_MAX ||
        strlen(json_string_value(url)) != json_string_length(url))
        return refuse(why, HOST_CODE_INVALID_ARGUMENTS, "net.fetch: a URL of at most %u bytes"
                      " without NUL", NET_FETCH_URL_MAX);
    if (parse_options(json_array_get(args, 1), r, why) != 0)
        return -1;
    return set_url(r, json_string_value(url), t, why);
}

/* The grant of r's host, with r's method allowed; NULL and a refusal if none. */
static const struct net_grant *granted(const struct net_grants *g, const struct request *r,
                                       unsigned method, struct refusal *why)
{
    for (size_t i = 0; i < g->count; i++) {
        const struct net_grant *e = &g->items[i];
        if (strcmp(e->host, r->host) != 0)
            continue;
        if ((e->methods & method) == 0) {
            refuse(why, HOST_CODE_DENIED, "net.fetch: %s to '%.64s' is not granted by the"
                   " manifest", method_name(method), r->host);
            return NULL;
        }
        return e;
    }
    refuse(why, HOST_CODE_DENIED, "net.fetch: host '%.64s' is not granted by the manifest",
           r->host);
    return NULL;
}

static enum net_fetch_class class_of(unsigned method, const struct net_grant *g)
{
    if (method_is_query(method))
        return NET_FETCH_QUERY;
    return g->idempotent ? NET_FETCH_KEYED : NET_FETCH_MUTATION;
}

/* One call's request, parsed once: what the grant check and the effect both use. */
struct net_fetch_request {
    struct request r;
    struct settings t;
    enum net_fetch_class cls; /* set by net_fetch_grant */
    bool granted;             /* net_fetch_grant passed: only then is it performed */
};

void net_fetch_request_free(struct net_fetch_request *req)
{
    if (req == NULL)
        return;
    request_free(&req->r);
    free(req);
}

static int refusal_out(const struct refusal *why, char *code, size_t code_cap, char *reason,
                  size_t reason_cap)
{
    snprintf(code, code_cap, "%s", why->code);
    snprintf(reason, reason_cap, "%s", why->reason);
    return -1;
}

int net_fetch_parse(const void *args, struct net_fetch_request **out, char *code,
                    size_t code_cap, char *reason, size_t reason_cap)
{
    *out = NULL;
    char no_curl[256];
    if (curl_library_load(no_curl, sizeof no_curl) != 0) {
        struct refusal unloaded = {HOST_CODE_IO_ERROR, ""};
        snprintf(unloaded.reason, sizeof unloaded.reason, "net.fetch: %s", no_curl);
        return refusal_out(&unloaded, code, code_cap, reason, reason_cap);
    }
    struct net_fetch_request *req = calloc(1, sizeof *req);
    if (req == NULL) {
        struct refusal oom = {HOST_CODE_IO_ERROR, "net.fetch: out of memory"};
        return refusal_out(&oom, code, code_cap, reason, reason_cap);
    }
    settings_load(&req->t);
    struct refusal why = {NULL, ""};
    if (parse_request(args, &req->t, &req->r, &why) != 0) {
        net_fetch_request_free(req);
        return refusal_out(&why, code, code_cap, reason, reason_cap);
    }
    *out = req;
    return 0;
}

int net_fetch_grant(const struct net_grants *grants, struct net_fetch_request *req,
                    enum net_fetch_class *cls, char *code, size_t code_cap, char *reason,
                    size_t reason_cap)
{
    struct refusal why = {NULL, ""};
    const struct net_grant *g = granted(grants, &req->r, req->r.method, &why);
    if (g == NULL)
        return refusal_out(&why, code, code_cap, reason, reason_cap);
    req->cls = class_of(req->r.method, g);
    req->granted = true;
    *cls = req->cls;
    return 0;
}

/* ---- resolution ------------------------------------------------------------------------ */

struct addresses {
    struct sockaddr_storage addr[NET_FETCH_MAX_ADDRESSES];
    socklen_t len[NET_FETCH_MAX_ADDRESSES];
    size_t count;
};

static void address_text(const struct sockaddr *sa, char *buf, size_t cap)
{
    const void *ip = sa->sa_family == AF_INET6
                         ? (const void *)&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr
                         : (const void *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
    if (inet_ntop(sa->sa_family, ip, buf, (socklen_t)cap) == NULL)
        snprintf(buf, cap, "?");
}

static bool same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
    if (a->sa_family != b->sa_family)
        return false;
    if (a->sa_family == AF_INET)
        return memcmp(&((const struct sockaddr_in *)(const void *)a)->sin_addr,
                      &((const struct sockaddr_in *)(const void *)b)->sin_addr, 4) == 0;
    if (a->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)(const void *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)(const void *)b)->sin6_addr, 16) == 0;
    return false;
}

/* Checks one resolved address and adds it to the set (once). */
static int admit(struct addresses *set, const struct sockaddr *sa, socklen_t len,
                 const char *host, const struct settings *t, struct refusal *why)
{
    struct address_verdict v = address_classify(sa, len);
    char text[INET6_ADDRSTRLEN];
    if (v.cls == ADDRESS_NOT_IP)
        return refuse(why, HOST_CODE_DENIED, "net.fetch: host '%.64s' resolves to something"
                      " that is not an IP address", host);
    address_text(sa, text, sizeof text);
    if (v.cls != ADDRESS_PUBLIC && !(v.cls == ADDRESS_LOOPBACK && t->allow_loopback))
        return refuse(why, HOST_CODE_DENIED, "net.fetch: host '%.64s' resolves to %s, a%s %s%s%s"
                      " address (refused)", host, text,
                      v.embedded_in != NULL ? "n address embedding a" : "",
                      address_class_name(v.cls), v.embedded_in != NULL ? " IPv4 address as " : "",
                      v.embedded_in != NULL ? v.embedded_in : "");
    for (size_t i = 0; i < set->count; i++)
        if (same_ip((const struct sockaddr *)&set->addr[i], sa))
            return 0;
    if (set->count < NET_FETCH_MAX_ADDRESSES && (size_t)len <= sizeof set->addr[0]) {
        memcpy(&set->addr[set->count], sa, (size_t)len);
        set->len[set->count++] = len;
    }
    return 0;
}

#ifdef BASAL_TEST_HOOKS
/* The test override: how many times each name of the setting was resolved. */
#define OVERRIDE_NAMES 32
static struct {
    char name[256];
    unsigned used;
} g_override[OVERRIDE_NAMES];

static unsigned override_turn(const char *host)
{
    for (size_t i = 0; i < OVERRIDE_NAMES; i++) {
        if (g_override[i].name[0] == '\0') {
            snprintf(g_override[i].name, sizeof g_override[i].name, "%s", host);
            return g_override[i].used++;
        }
        if (strcmp(g_override[i].name, host) == 0)
            return g_override[i].used++;
    }
    return 0;
}

/* 1 if the setting names host (the addresses admitted or a refusal in *why: rc), 0
 * if it does not. */
static int resolve_override(const char *spec, const char *host, struct addresses *set,
                            const struct settings *t, struct refusal *why, int *rc)
{
    size_t hlen = strlen(host);
    for (const char *entry = spec; entry != NULL && *entry != '\0';) {
        const char *end = strchr(entry, ';');
        size_t elen = end != NULL ? (size_t)(end - entry) : strlen(entry);
        if (elen > hlen && strncmp(entry, host, hlen) == 0 && entry[hlen] == '=') {
            unsigned turn = override_turn(host);
            const char *answer = entry + hlen + 1, *stop = entry + elen;
            for (unsigned i = 0; i < turn; i++) {
                const char *next = memchr(answer, '>', (size_t)(stop - answer));
                if (next == NULL)
                    break; /* the last answer from then on */
                answer = next + 1;
            }
            const char *answer_end = memchr(answer, '>', (size_t)(stop - answer));
            if (answer_end == NULL)
                answer_end = stop;
            *rc = 0;
            while (answer < answer_end && *rc == 0) {
                const char *plus = memchr(answer, '+', (size_t)(answer_end - answer));
                const char *aend = plus != NULL ? plus : answer_end;
                char ip[INET6_ADDRSTRLEN + 1];
                snprintf(ip, sizeof ip, "%.*s", (int)(aend - answer), answer);
                struct sockaddr_storage ss;
                memset(&ss, 0, sizeof ss);
                struct sockaddr_in *in4 = (struct sockaddr_in *)(void *)&ss;
                struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)(void *)&ss;
                socklen_t len;
                if (inet_pton(AF_INET, ip, &in4->sin_addr) == 1) {
                    in4->sin_family = AF_INET;
                    len = sizeof *in4;
                } else if (inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1) {
                    in6->sin6_family = AF_INET6;
                    len = sizeof *in6;
                } else {
                    *rc = refuse(why, HOST_CODE_NETWORK_ERROR, "net.fetch: bad test override"
                                 " address '%s'", ip);
                    break;
                }
                *rc = admit(set, (const struct sockaddr *)&ss, len, host, t, why);
                answer = plus != NULL ? plus + 1 : answer_end;
            }
            return 1;
        }
        entry = end != NULL ? end + 1 : NULL;
    }
    return 0;
}
#endif

/* getaddrinfo_a's job, shared with its notification thread. The thread marks it
 * done; whoever comes second (the caller after its wait, or the thread after the
 * caller gave up) frees it. */
enum { JOB_RUNNING = 0, JOB_DONE = 1, JOB_ABANDONED = 2 };

struct resolve_job {
    struct gaicb cb;
    struct addrinfo hints;
    char host[256];
    int done_fd; /* eventfd, written once the job is done */
    atomic_int state;
};

static void job_free(struct resolve_job *job)
{
    if (job->cb.ar_result != NULL)
        freeaddrinfo(job->cb.ar_result);
    close(job->done_fd);
    free(job);
}

static void job_notify(union sigval sv)
{
    struct resolve_job *job = sv.sival_ptr;
    int expected = JOB_RUNNING;
    if (atomic_compare_exchange_strong(&job->state, &expected, JOB_DONE)) {
        uint64_t one = 1;
        (void)!write(job->done_fd, &one, sizeof one);
        return; /* the caller owns the job from now on */
    }
    job_free(job); /* the caller gave up on it */
}

/* Waits for the done mark (up to timeout_ms; -1: until it comes). */
static bool job_wait(const struct resolve_job *job, long long timeout_ms)
{
    long long until = timeout_ms < 0 ? -1 : monotonic_ms() + timeout_ms;
    for (;;) {
        long long left = until < 0 ? -1 : until - monotonic_ms();
        if (until >= 0 && left <= 0)
            return false;
        struct pollfd p = {job->done_fd, POLLIN, 0};
        int rc = poll(&p, 1, left < 0 ? -1 : left > 60000 ? 60000 : (int)left);
        if (rc > 0)
            return true;
        if (rc < 0 && errno != EINTR)
            return false;
    }
}

/* getaddrinfo for host, waiting at most timeout_ms. */
static int resolve_system(const char *host, long long timeout_ms, struct addresses *set,
                          const struct settings *t, struct refusal *why)
{
    struct resolve_job *job = calloc(1, sizeof *job);
    if (job == NULL)
        return refuse(why, HOST_CODE_IO_ERROR, "net.fetch: out of memory");
    snprintf(job->host, sizeof job->host, "%s", host);
    job->hints.ai_family = AF_UNSPEC;
    job->hints.ai_socktype = SOCK_STREAM;
    job->cb.ar_name = job->host;
    job->cb.ar_request = &job->hints;
    job->done_fd = eventfd(0, EFD_CLOEXEC);
    atomic_init(&job->state, JOB_RUNNING);
    if (job->done_fd < 0) {
        free(job);
        return refuse(why, HOST_CODE_IO_ERROR, "net.fetch: eventfd: %s", strerror(errno));
    }
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD;
    ev.sigev_notify_function = job_notify;
    ev.sigev_value.sival_ptr = job;
    struct gaicb *list[1] = {&job->cb};
    if (getaddrinfo_a(GAI_NOWAIT, list, 1, &ev) != 0) {
        job_free(job);
        return refuse(why, HOST_CODE_NETWORK_ERROR, "net.fetch: cannot resolve '%.64s'", host);
    }
    if (!job_wait(job, timeout_ms)) {
        int expected = JOB_RUNNING;
        if (gai_cancel(&job->cb) == EAI_CANCELED) { /* never started: no notification */
            job_free(job);
            return refuse(why, HOST_CODE_TIMEOUT, "net.fetch: resolving '%.64s' took longer"
                          " than the %lld ms left", host, timeout_ms);
        }
        if (atomic_compare_exchange_strong(&job->state, &expected, JOB_ABANDONED))
            return refuse(why, HOST_CODE_TIMEOUT, "net.fetch: resolving '%.64s' took longer"
                          " than the %lld ms left", host, timeout_ms);
        (void)job_wait(job, -1); /* done meanwhile: its mark is on the way */
    }
    int rc = gai_error(&job->cb);
    if (rc != 0) {
        job_free(job);
        return refuse(why, HOST_CODE_NETWORK_ERROR, "net.fetch: cannot resolve '%.64s': %s", host,
                      gai_strerror(rc));
    }
    size_t seen = 0;
    int verdict = 0;
    for (const struct addrinfo *ai = job->cb.ar_result; ai != NULL && verdict == 0;
         ai = ai->ai_next) {
        if (++seen > RESOLVED_MAX)
            verdict = refuse(why, HOST_CODE_DENIED, "net.fetch: host '%.64s' resolves to more"
                             " than %u addresses", host, RESOLVED_MAX);
        else
            verdict = admit(set, ai->ai_addr, ai->ai_addrlen, host, t, why);
    }
    job_free(job);
    if (verdict == 0 && set->count == 0)
        verdict = refuse(why, HOST_CODE_NETWORK_ERROR, "net.fetch: '%.64s' has no address",
                         host);
    return verdict;
}

/* Resolves host once and checks every address: 0 with the set, or -1. */
static int resolve(const char *host, long long timeout_ms, struct addresses *set,
                   const struct settings *t, struct refusal *why)
{
    memset(set, 0, sizeof *set);
#ifdef BASAL_TEST_HOOKS
    int rc = 0;
    if (t->resolve != NULL && resolve_override(t->resolve, host, set, t, why, &rc) == 1)
        return rc;
#endif
    return resolve_system(host, timeout_ms, set, t, why);
}

/* ---- one hop ---------------------------------------------------------------------------- */

struct net_fetch_session {
    CURL *easy;
};

struct net_fetch_session *net_fetch_session_new(char *err, size_t err_cap)
{
    if (curl_library_start(err, err_cap) != 0)
        return NULL;
    struct net_fetch_session *s = calloc(1, sizeof *s);
    if (s != NULL && (s->easy = curl_lib.easy_init()) == NULL) {
        free(s);
        s = NULL;
    }
    if (s == NULL) {
        snprintf(err, err_cap, "out of memory");
        curl_library_stop();
    }
    return s;
}

void net_fetch_session_free(struct net_fetch_session *s)
{
    if (s == NULL)
        return;
    curl_lib.easy_cleanup(s->easy);
    free(s);
    curl_library_stop();
}

struct response {
    const struct addresses *pinned;
    bool address_refused;
    char refused_address[INET6_ADDRSTRLEN];
    json_t *headers;
    size_t header_lines, header_bytes;
    bool headers_too_large;
    char *body;
    size_t body_len, body_cap, body_max;
    bool body_too_large;
};

/* libcurl's socket for an address: only one of the pinned set. */
static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct response *resp = clientp;
    (void)purpose;
    bool pinned = false;
    for (size_t i = 0; i < resp->pinned->count && !pinned; i++)
        pinned = same_ip((const struct sockaddr *)&resp->pinned->addr[i], &a->addr);
    if (!pinned) {
        resp->address_refused = true;
        address_text(&a->addr, resp->refused_address, sizeof resp->refused_address);
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* Keeps a header value as JSON text: UTF-8 as it is, anything else with '?' for every
 * byte above 0x7e. */
static json_t *header_string(const char *s, size_t n)
{
    if (utf8_valid((const uint8_t *)s, n))
        return json_stringn(s, n);
    char *copy = malloc(n + 1);
    if (copy == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        copy[i] = (char)((unsigned char)s[i] > 0x7e ? '?' : s[i]);
    json_t *v = json_stringn(copy, n);
    free(copy);
    return v;
}

static size_t on_header(char *buf, size_t size, size_t count, void *userdata)
{
    struct response *resp = userdata;
    size_t len = size * count;
    resp->header_bytes += len;
    if (len > NET_FETCH_RESPONSE_LINE_MAX ||
        resp->header_bytes > NET_FETCH_RESPONSE_HEADER_BYTES_MAX) {
        resp->headers_too_large = true;
        return 0;
    }
    if (len >= 5 && strncmp(buf, "HTTP/", 5) == 0) { /* a new response (after 1xx) */
        json_object_clear(resp->headers);
        resp->header_lines = 0;
        return len;
    }
    size_t end = len;
    while (end > 0 && (buf[end - 1] == '\r' || buf[end - 1] == '\n'))
        end--;
    const char *colon = memchr(buf, ':', end);
    if (end == 0 || colon == NULL || colon == buf)
        return len; /* the blank line, or a folded continuation: not kept */
    if (++resp->header_lines > NET_FETCH_RESPONSE_HEADERS_MAX) {
        resp->headers_too_large = true;
        return 0;
    }
    size_t nlen = (size_t)(colon - buf);
    char name[NET_FETCH_RESPONSE_LINE_MAX + 1];
    for (size_t i = 0; i < nlen; i++) {
        unsigned char ch = (unsigned char)buf[i];
        name[i] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch > 0x7e || ch < 0x21 ? '?' : ch);
    }
    name[nlen] = '\0';
    const char *v = colon + 1;
    const char *vend = buf + end;
    while (v < vend && (*v == ' ' || *v == '\t'))
        v++;
    while (vend > v && (vend[-1] == ' ' || vend[-1] == '\t'))
        vend--;
    json_t *value = header_string(v, (size_t)(vend - v));
    if (value == NULL)
        return 0;
    const json_t *had = json_object_get(resp->headers, name);
    if (had != NULL) { /* repeated: joined with ", " */
        size_t a = json_string_length(had), b = json_string_length(value);
        char *joined = malloc(a + b + 3);
        if (joined == NULL) {
            json_decref(value);
            return 0;
        }
        memcpy(joined, json_string_value(had), a);
        joined[a] = ',';
        joined[a + 1] = ' ';
        memcpy(joined + a + 2, json_string_value(value), b);
        json_decref(value);
        value = json_stringn(joined, a + b + 2);
        free(joined);
        if (value == NULL)
            return 0;
    }
    return json_object_set_new(resp->headers, name, value) == 0 ? len : 0;
}

static size_t on_body(char *buf, size_t size, size_t count, void *userdata)
{
    struct response *resp = userdata;
    size_t len = size * count;
    switch (bounded_append(&resp->body, &resp->body_len, &resp->body_cap, resp->body_max, buf,
                           len)) {
    case BOUNDED_APPENDED:
        return len;
    case BOUNDED_OVER:
        resp->body_too_large = true;
        return 0;
    case BOUNDED_NO_MEMORY:
    default:
        return 0;
    }
}

/* "host:port:addr,addr" for CURLOPT_RESOLVE. */
static struct curl_slist *pin_list(const struct request *r, const struct addresses *set)
{
    char entry[256 + 16 + NET_FETCH_MAX_ADDRESSES * (INET6_ADDRSTRLEN + 3)];
    int n = snprintf(entry, sizeof entry, "%s:%ld:", r->host, r->port);
    for (size_t i = 0; i < set->count && n > 0 && (size_t)n < sizeof entry; i++) {
        char text[INET6_ADDRSTRLEN];
        const struct sockaddr *sa = (const struct sockaddr *)&set->addr[i];
        address_text(sa, text, sizeof text);
        n += snprintf(entry + n, sizeof entry - (size_t)n, sa->sa_family == AF_INET6 ? "%s[%s]" : "%s%s",
                      i > 0 ? "," : "", text);
    }
    return curl_lib.slist_append(NULL, entry);
}

/* Sets the options of one hop on a reset handle. Returns CURLE_OK or the first
 * option refused (a libcurl without one of them fails closed). */
static CURLcode hop_options(CURL *c, const struct request *r, unsigned method, bool send_body,
                            struct curl_slist *pins, struct curl_slist *headers,
                            struct response *resp, const struct settings *t, long connect_ms,
                            long total_ms, char *errbuf)
{
    CURLcode rc = curl_baseline_options(c, errbuf);
#define SET(opt, val) CURL_SET_WHILE_OK(rc, c, opt, val)
    SET(CURLOPT_CURLU, r->url);
    SET(CURLOPT_PROTOCOLS_STR, t->allow_http ? "http,https" : "https");
    SET(CURLOPT_REDIR_PROTOCOLS_STR, t->allow_http ? "http,https" : "https");
    SET(CURLOPT_RESOLVE, pins);
    SET(CURLOPT_OPENSOCKETFUNCTION, open_socket);
    SET(CURLOPT_OPENSOCKETDATA, resp);
    SET(CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    SET(CURLOPT_TIMEOUT_MS, total_ms);
    SET(CURLOPT_SSL_VERIFYPEER, 1L);
    SET(CURLOPT_SSL_VERIFYHOST, 2L);
    if (t->ca_file != NULL) {
        SET(CURLOPT_CAINFO, t->ca_file);
        SET(CURLOPT_CAPATH, (char *)NULL);
    }
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_HEADERDATA, resp);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, resp);
    if (method != NET_METHOD_HEAD) /* a HEAD's Content-Length announces no body */
        SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)resp->body_max);
    SET(CURLOPT_HTTPHEADER, headers);
    if (method == NET_METHOD_HEAD) {
        SET(CURLOPT_NOBODY, 1L);
    } else if (method != NET_METHOD_GET) {
        SET(CURLOPT_CUSTOMREQUEST, method_name(method));
        if (send_body || method != NET_METHOD_DELETE) {
            SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(send_body ? r->body_len : 0));
            SET(CURLOPT_POSTFIELDS, send_body ? r->body : "");
        }
    }
#undef SET
    return rc;
}

/* The headers of a hop: the script's, no Expect, the key for a mutation. */
static struct curl_slist *hop_headers(const struct request *r, unsigned method, const char *key)
{
    struct curl_slist *list = NULL, *grown;
    for (const struct curl_slist *h = r->headers; h != NULL; h = h->next) {
        if ((grown = curl_lib.slist_append(list, h->data)) == NULL)
            goto fail;
        list = grown;
    }
    if ((grown = curl_lib.slist_append(list, "Expect:")) == NULL)
        goto fail;
    list = grown;
    if (!method_is_query(method) && key != NULL) {
        char line[128];
        snprintf(line, sizeof line, "Idempotency-Key: %s", key);
        if ((grown = curl_lib.slist_append(list, line)) == NULL)
            goto fail;
        list = grown;
    }
    return list;
fail:
    curl_lib.slist_free_all(list);
    return NULL;
}

struct hop_result {
    long status;
    char *redirect; /* the Location, made absolute by libcurl; NULL if none */
};

/* One request on the pinned addresses. 0, or -1 with a refusal. */
static int hop(struct net_fetch_session *s, const struct request *r, unsigned method,
               bool send_body, const char *key, const struct addresses *pinned,
               const struct settings *t, long long deadline, struct response *resp,
               struct hop_result *res, struct refusal *why)
{
    long long left = deadline - monotonic_ms();
    if (left <= 0)
        return refuse(why, HOST_CODE_TIMEOUT, "net.fetch: no time left for %s", r->host);
    long connect_ms = t->connect_ms < left ? t->connect_ms : (long)left;
    struct curl_slist *pins = pin_list(r, pinned);
    struct curl_slist *headers = hop_headers(r, method, key);
    char errbuf[CURL_ERROR_SIZE] = "";
    resp->pinned = pinned;
    json_object_clear(resp->headers);
    resp->header_lines = resp->header_bytes = 0;
    resp->body_len = 0;
    int rc = 0;
    curl_lib.easy_reset(s->easy);
    if (pins == NULL || headers == NULL) {
        rc = refuse(why, HOST_CODE_IO_ERROR, "net.fetch: out of memory");
    } else if (hop_options(s->easy, r, method, send_body, pins, headers, resp, t, connect_ms,
                           (long)left, errbuf) != CURLE_OK) {
        rc = refuse(why, HOST_CODE_IO_ERROR, "net.fetch: libcurl refused an option: %s", errbuf);
    } else {
        CURLcode cc = curl_lib.easy_perform(s->easy);
        if (resp->address_refused)
            rc = refuse(why, HOST_CODE_DENIED, "net.fetch: a connection to %s, an address not"
                        " checked for '%.64s', was refused", resp->refused_address, r->host);
        else if (resp->headers_too_large)
            rc = refuse(why, HOST_CODE_TOO_LARGE, "net.fetch: the response headers from '%.64s'"
                        " are over %u lines or %u bytes", r->host, NET_FETCH_RESPONSE_HEADERS_MAX,
                        NET_FETCH_RESPONSE_HEADER_BYTES_MAX);
        else if (resp->body_too_large || cc == CURLE_FILESIZE_EXCEEDED)
            rc = refuse(why, HOST_CODE_TOO_LARGE, "net.fetch: the body from '%.64s' is larger"
                        " than %zu bytes (maxBytes)", r->host, resp->body_max);
        else if (cc == CURLE_OPERATION_TIMEDOUT)
            rc = refuse(why, HOST_CODE_TIMEOUT, "net.fetch: '%.64s': %s", r->host,
                        errbuf[0] != '\0' ? errbuf : curl_lib.easy_strerror(cc));
        else if (cc != CURLE_OK)
            rc = refuse(why, HOST_CODE_NETWORK_ERROR, "net.fetch: '%.64s': %s", r->host,
                        errbuf[0] != '\0' ? errbuf : curl_lib.easy_strerror(cc));
    }
    if (rc == 0) {
        char *location = NULL;
        (void)curl_lib.easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &res->status);
        (void)curl_lib.easy_getinfo(s->easy, CURLINFO_REDIRECT_URL, &location);
        res->redirect = location != NULL ? strdup(location) : NULL;
    }
    /* The handle must not keep pointers to what is freed here (its connections and
     * the pinned names stay: the reset keeps them). */
    curl_lib.easy_reset(s->easy);
    curl_lib.slist_free_all(pins);
    curl_lib.slist_free_all(headers);
    return rc;
}

/* ---- the result --------------------------------------------------------------------------- */

static bool body_is_text(const char *b, size_t n)
{
    return memchr(b, '\0', n) == NULL && utf8_valid((const uint8_t *)b, n);
}

static int fulfil(const struct request *r, long status, struct response *resp,
                  struct host_settlement *out)
{
    json_t *result = json_object();
    json_t *body;
    bool text = resp->body_len == 0 || body_is_text(resp->body, resp->body_len);
    if (text) {
        body = json_stringn(resp->body != NULL ? resp->body : "", resp->body_len);
    } else {
        size_t cap = 4 * ((resp->body_len + 2) / 3) + 1;
        unsigned char *b64 = malloc(cap);
        int n = b64 != NULL ? EVP_EncodeBlock(b64, (const unsigned char *)resp->body,
                                              (int)resp->body_len)
                            : -1;
        body = n >= 0 ? json_stringn((const char *)b64, (size_t)n) : NULL;
        free(b64);
    }
    char *url = NULL;
    (void)curl_lib.url_get(r->url, CURLUPART_URL, &url, 0);
    int rc = -1;
    if (result != NULL && body != NULL && url != NULL &&
        json_object_set_new(result, "status", json_integer(status)) == 0 &&
        json_object_set(result, "headers", resp->headers) == 0 &&
        json_object_set(result, "body", body) == 0 &&
        json_object_set_new(result, "base64", json_boolean(!text)) == 0 &&
        json_object_set_new(result, "url", json_string(url)) == 0)
        rc = host_fulfil_json(out, result);
    curl_lib.free(url);
    json_decref(body);
    json_decref(result);
    return rc;
}

/* ---- the call ------------------------------------------------------------------------------ */

/* The method after a redirect with status (RFC 9110 15.4, as browsers do). */
static unsigned redirected_method(unsigned method, long status)
{
    if (status == 303 && method != NET_METHOD_HEAD)
        return NET_METHOD_GET;
    if ((status == 301 || status == 302) && method == NET_METHOD_POST)
        return NET_METHOD_GET;
    return method;
}

static bool is_redirect(long status)
{
    return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

int net_fetch_perform(struct net_fetch_session *s, const struct net_grants *grants,
                      struct net_fetch_request *req, const char *idempotency_key,
                      long long deadline_at_ms, struct host_settlement *out)
{
    if (!req->granted) /* fail closed: no request leaves unchecked */
        return host_reject(out, HOST_CODE_DENIED, "net.fetch: the request was not granted");
    const struct settings t = req->t;
    struct request r = req->r; /* moved out: req keeps nothing to free */
    memset(&req->r, 0, sizeof req->r);
    struct refusal why = {NULL, ""};
    struct response resp;
    memset(&resp, 0, sizeof resp);
    struct addresses pinned;
    int rc = 0;
    resp.body_max = r.max_bytes;
    resp.headers = json_object();
    if (resp.headers == NULL)
        rc = refuse(&why, HOST_CODE_IO_ERROR, "net.fetch: out of memory");
    long long deadline = monotonic_ms() + t.total_ms;
    if (deadline_at_ms > 0 && deadline_at_ms < deadline)
        deadline = deadline_at_ms;
    enum net_fetch_class cls = req->cls;
    unsigned method = r.method;
    bool send_body = r.body != NULL;
    long status = 0;
    unsigned redirects = 0;
    for (unsigned hops = 0; rc == 0; hops++) {
        long long left = deadline - monotonic_ms();
        if (left <= 0) {
            rc = refuse(&why, HOST_CODE_TIMEOUT, "net.fetch: no response within the time"
                        " allowed (%ld ms, cut to the activation's deadline)", t.total_ms);
            break;
        }
        if (resolve(r.host, left, &pinned, &t, &why) != 0) {
            rc = -1;
            break;
        }
        struct hop_result res = {0, NULL};
        if (hop(s, &r, method, send_body, idempotency_key, &pinned, &t, deadline, &resp, &res,
                &why) != 0) {
            rc = -1;
            break;
        }
        status = res.status;
        if (!is_redirect(status) || res.redirect == NULL) {
            free(res.redirect);
            break;
        }
        if (hops + 1 > NET_FETCH_MAX_REDIRECTS) {
            free(res.redirect);
            rc = refuse(&why, HOST_CODE_TOO_MANY_REDIRECTS, "net.fetch: more than %d redirects",
                        NET_FETCH_MAX_REDIRECTS);
            break;
        }
        unsigned next = redirected_method(method, status);
        if (next != method)
            send_body = false;
        method = next;
        rc = set_url(&r, res.redirect, &t, &why);
        free(res.redirect);
        const struct net_grant *to = rc == 0 ? granted(grants, &r, method, &why) : NULL;
        if (rc == 0 && to == NULL)
            rc = -1;
        if (rc == 0 && cls == NET_FETCH_KEYED && !method_is_query(method) && !to->idempotent)
            rc = refuse(&why, HOST_CODE_DENIED, "net.fetch: a redirect would resend a keyed %s"
                        " to '%.64s', a host not marked idempotent", method_name(method), r.host);
        redirects = hops + 1;
    }
    int done;
    if (rc == 0)
        done = fulfil(&r, status, &resp, out);
    else if (redirects > 0) /* say that a redirect led there */
        done = host_reject(out, why.code, "after %u redirect%s: %s", redirects,
                           redirects > 1 ? "s" : "", why.reason);
    else
        done = host_reject(out, why.code, "%s", why.reason);
    json_decref(resp.headers);
    free(resp.body);
    request_free(&r);
    return done;
}
