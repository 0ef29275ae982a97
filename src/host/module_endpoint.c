/* One POST to a loopback HTTP endpoint module with libcurl (see module_endpoint.h). */
#include "host/module_endpoint.h"
#include "base/bounded_append.h"
#include "host/curl_baseline.h"
#include "host/curl_library.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define UNIX_URL "http://localhost/"

struct target {
    char url[MODULE_ENDPOINT_MAX_BYTES + 1];
    char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    bool is_unix;
};

static int refuse(char *why, size_t cap, const char *what)
{
    snprintf(why, cap, "%s", what);
    return -1;
}

/* "127.A.B.C" (a strict dotted quad) or "[::1]". */
static bool loopback_literal(const char *host, size_t len)
{
    char text[INET6_ADDRSTRLEN + 2];
    if (len == 0 || len >= sizeof text)
        return false;
    memcpy(text, host, len);
    text[len] = '\0';
    if (strcmp(text, "[::1]") == 0)
        return true;
    struct in_addr a4;
    if (inet_pton(AF_INET, text, &a4) != 1)
        return false;
    return (ntohl(a4.s_addr) >> 24) == 127;
}

static int parse_http(const char *text, struct target *t, char *why, size_t cap)
{
    static const char scheme[] = "http://";
    if (strncmp(text, scheme, sizeof scheme - 1) != 0)
        return refuse(why, cap, "must be http://127.x.x.x:PORT/PATH, http://[::1]:PORT/PATH"
                      " or unix:/PATH");
    const char *host = text + sizeof scheme - 1;
    size_t authority = strcspn(host, "/");
    if (memchr(host, '@', authority) != NULL)
        return refuse(why, cap, "user information is refused");
    const char *colon = host[0] == '[' ? strstr(host, "]:") : strchr(host, ':');
    if (colon != NULL && host[0] == '[')
        colon++;
    const char *slash = strchr(host, '/');
    if (colon == NULL || (slash != NULL && slash < colon))
        return refuse(why, cap, "must name a loopback address literal and a port"
                      " (http://127.0.0.1:PORT/PATH)");
    if (!loopback_literal(host, (size_t)(colon - host)))
        return refuse(why, cap, "the host must be a loopback address literal (127.0.0.0/8 or"
                      " [::1]); names are not resolved");
    const char *p = colon + 1;
    unsigned long port = 0;
    size_t digits = 0;
    while (p[digits] >= '0' && p[digits] <= '9' && digits < 6)
        port = port * 10 + (unsigned long)(p[digits++] - '0');
    if (digits == 0 || digits > 5 || port == 0 || port > 65535 || (digits > 1 && p[0] == '0'))
        return refuse(why, cap, "the port must be 1..65535");
    const char *path = p + digits;
    if (path[0] != '/')
        return refuse(why, cap, "the path must start with /");
    for (const char *c = path; *c != '\0'; c++)
        if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f || *c == '#')
            return refuse(why, cap, "the path must be printable ASCII without spaces or #");
    snprintf(t->url, sizeof t->url, "%s", text);
    return 0;
}

static int parse(const char *text, struct target *t, char *why, size_t cap)
{
    memset(t, 0, sizeof *t);
    size_t n = strlen(text);
    if (n == 0 || n > MODULE_ENDPOINT_MAX_BYTES)
        return refuse(why, cap, "must be 1 to 2048 bytes");
    static const char unix_prefix[] = MODULE_ENDPOINT_UNIX_PREFIX;
    if (strncmp(text, unix_prefix, sizeof unix_prefix - 1) != 0)
        return parse_http(text, t, why, cap);
    const char *path = text + sizeof unix_prefix - 1;
    if (path[0] != '/')
        return refuse(why, cap, "a Unix socket path must be absolute (unix:/PATH)");
    if (strlen(path) >= sizeof t->unix_path)
        return refuse(why, cap, "the Unix socket path is longer than 107 bytes");
    snprintf(t->unix_path, sizeof t->unix_path, "%s", path);
    snprintf(t->url, sizeof t->url, "%s", UNIX_URL);
    t->is_unix = true;
    return 0;
}

int module_endpoint_check(const char *text, char *why, size_t why_cap)
{
    struct target t;
    return parse(text, &t, why, why_cap);
}

/* ---- the call ------------------------------------------------------------------------ */

struct exchange {
    const struct target *target;
    char *body;
    size_t len, cap, max;
    bool too_large;
    bool address_refused;
};

/* libcurl's socket: only a loopback address, or the Unix socket. */
static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct exchange *x = clientp;
    (void)purpose;
    bool allowed = false;
    if (x->target->is_unix) {
        allowed = a->family == AF_UNIX;
    } else if (a->family == AF_INET && a->addrlen >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)&a->addr;
        allowed = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    } else if (a->family == AF_INET6 && a->addrlen >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)&a->addr;
        allowed = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
    }
    if (!allowed) {
        x->address_refused = true;
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static size_t on_body(char *data, size_t size, size_t count, void *userp)
{
    struct exchange *x = userp;
    size_t n = size * count;
    switch (bounded_append(&x->body, &x->len, &x->cap, x->max, data, n)) {
    case BOUNDED_APPENDED:
        return n;
    case BOUNDED_OVER:
        x->too_large = true;
        return 0; /* CURLE_WRITE_ERROR: the transfer stops */
    case BOUNDED_NO_MEMORY:
    default:
        return 0;
    }
}

static CURLcode set_options(CURL *c, const struct target *t, const char *request,
                            size_t request_len, struct curl_slist *headers, uint32_t timeout_ms,
                            struct exchange *x, char *errbuf)
{
    CURLcode rc = curl_baseline_options(c, errbuf);
#define SET(opt, val) CURL_SET_WHILE_OK(rc, c, opt, val)
    SET(CURLOPT_URL, t->url);
    if (t->is_unix)
        SET(CURLOPT_UNIX_SOCKET_PATH, t->unix_path);
    SET(CURLOPT_PROTOCOLS_STR, "http");
    SET(CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
    SET(CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    SET(CURLOPT_OPENSOCKETFUNCTION, open_socket);
    SET(CURLOPT_OPENSOCKETDATA, x);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, x);
    SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)x->max);
    SET(CURLOPT_HTTPHEADER, headers);
    SET(CURLOPT_POST, 1L);
    SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)request_len);
    SET(CURLOPT_POSTFIELDS, request);
#undef SET
    return rc;
}

static struct curl_slist *request_headers(const char *key)
{
    struct curl_slist *list = curl_lib.slist_append(NULL, "Content-Type: application/json");
    struct curl_slist *grown = list != NULL ? curl_lib.slist_append(list, "Expect:") : NULL;
    if (grown != NULL && key != NULL) {
        char line[160];
        snprintf(line, sizeof line, "Idempotency-Key: %.128s", key);
        grown = curl_lib.slist_append(grown, line);
    }
    if (grown == NULL) {
        curl_lib.slist_free_all(list);
        return NULL;
    }
    return grown;
}

static enum module_endpoint_outcome fail(char *why, size_t cap, const char *what)
{
    snprintf(why, cap, "%s", what);
    return MODULE_ENDPOINT_FAILED;
}

enum module_endpoint_outcome module_endpoint_post(const char *endpoint, const char *request,
                                                  size_t request_len, const char *key,
                                                  uint32_t timeout_ms, uint32_t max_reply_bytes,
                                                  char **reply, size_t *reply_len, char *why,
                                                  size_t why_cap)
{
    struct target t;
    char bad[256];
    if (parse(endpoint, &t, bad, sizeof bad) != 0) {
        snprintf(why, why_cap, "endpoint: %s", bad);
        return MODULE_ENDPOINT_FAILED;
    }
    char no_curl[256];
    if (curl_library_start(no_curl, sizeof no_curl) != 0)
        return fail(why, why_cap, no_curl);
    CURL *c = curl_lib.easy_init();
    struct curl_slist *headers = request_headers(key);
    struct exchange x = {.target = &t, .max = max_reply_bytes};
    char errbuf[CURL_ERROR_SIZE] = "";
    enum module_endpoint_outcome outcome = MODULE_ENDPOINT_FAILED;
    long status = 0;
    if (c == NULL || headers == NULL) {
        fail(why, why_cap, "out of memory");
    } else if (set_options(c, &t, request, request_len, headers, timeout_ms, &x, errbuf) !=
               CURLE_OK) {
        snprintf(why, why_cap, "libcurl refused an option: %s", errbuf);
    } else {
        CURLcode cc = curl_lib.easy_perform(c);
        (void)curl_lib.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        if (x.address_refused) {
            fail(why, why_cap, "a connection to an address that is not loopback was refused");
        } else if (x.too_large || cc == CURLE_FILESIZE_EXCEEDED) {
            snprintf(why, why_cap, "reply larger than %u bytes", max_reply_bytes);
            outcome = MODULE_ENDPOINT_TOO_LARGE;
        } else if (cc == CURLE_OPERATION_TIMEDOUT) {
            snprintf(why, why_cap, "no reply within %u ms", timeout_ms);
            outcome = MODULE_ENDPOINT_TIMEOUT;
        } else if (cc != CURLE_OK) {
            snprintf(why, why_cap, "%s", errbuf[0] != '\0' ? errbuf : curl_lib.easy_strerror(cc));
        } else if (status >= 300 && status < 400) {
            snprintf(why, why_cap, "HTTP status %ld: a redirect, refused (redirects are not"
                     " followed)", status);
        } else if (status < 200 || status >= 300) {
            snprintf(why, why_cap, "HTTP status %ld (only 2xx is a reply)", status);
        } else {
            outcome = MODULE_ENDPOINT_REPLY;
        }
    }
    curl_lib.slist_free_all(headers);
    if (c != NULL)
        curl_lib.easy_cleanup(c);
    curl_library_stop();
    if (outcome == MODULE_ENDPOINT_REPLY) {
        if (x.body == NULL && (x.body = calloc(1, 1)) == NULL)
            return fail(why, why_cap, "out of memory");
        *reply = x.body;
        *reply_len = x.len;
        return outcome;
    }
    free(x.body);
    return outcome;
}
