/* Loopback HTTP endpoint modules (basal.md section 7: a module is "a local program ...
 * or a loopback HTTP endpoint"); the catalog entry is ops_module.h's, this is the
 * transport. All of basal's libcurl calls for modules are in module_endpoint.c.
 *
 * An endpoint is one of
 *   http://127.A.B.C:PORT/PATH   an IPv4 literal in 127.0.0.0/8
 *   http://[::1]:PORT/PATH       the IPv6 loopback literal
 *   unix:/ABSOLUTE/SOCKET        a Unix stream socket (the request goes to "/")
 * with PORT 1..65535 written out and PATH starting with "/" (printable ASCII, no
 * spaces, no "#"). A name ("localhost" too) is refused: basal never resolves one, so
 * no DNS answer can point a module elsewhere; user information is refused.
 *
 * The call is one POST of the request object (Content-Type: application/json,
 * Idempotency-Key: the call's key when it has one) with libcurl: http only, no
 * redirects followed (a 3xx is refused), no proxy (from the environment or
 * otherwise), no .netrc, no authentication, no content decoding; an open-socket
 * callback refuses any address that is not loopback (or the Unix socket), so the
 * literal check cannot be bypassed. The whole call, connect included, is bounded by
 * timeout_ms; the body by max_reply_bytes. Only a 2xx reply's body is a reply. */
#ifndef BASAL_HOST_MODULE_ENDPOINT_H
#define BASAL_HOST_MODULE_ENDPOINT_H

#include <stddef.h>
#include <stdint.h>

#define MODULE_ENDPOINT_MAX_BYTES 2048u
#define MODULE_ENDPOINT_UNIX_PREFIX "unix:"

/* 0 if text is an endpoint of the form above, or -1 with a one-line reason in why. */
int module_endpoint_check(const char *text, char *why, size_t why_cap);

enum module_endpoint_outcome {
    MODULE_ENDPOINT_REPLY,     /* a 2xx status: *reply holds its body (NUL-terminated) */
    MODULE_ENDPOINT_TIMEOUT,   /* no whole reply within timeout_ms */
    MODULE_ENDPOINT_TOO_LARGE, /* a body over max_reply_bytes (the transfer is cut) */
    MODULE_ENDPOINT_FAILED,    /* anything else: why says what (status, redirect, connect) */
};

/* POSTs request[0..request_len) to endpoint (checked again here: a bad one fails).
 * key may be NULL (no Idempotency-Key header). *reply (malloc'd, the caller frees)
 * and *reply_len are set only for MODULE_ENDPOINT_REPLY; why gets a one-line reason
 * otherwise. */
enum module_endpoint_outcome module_endpoint_post(const char *endpoint, const char *request,
                                                  size_t request_len, const char *key,
                                                  uint32_t timeout_ms, uint32_t max_reply_bytes,
                                                  char **reply, size_t *reply_len, char *why,
                                                  size_t why_cap);

#endif
