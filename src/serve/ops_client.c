/* The ops socket's client (serve/ops_client.h, docs/ops-protocol.md). */
#include "serve/ops_client.h"

#include "base/clock.h"
#include "base/error_line.h"
#include "base/socket_send.h"
#include "serve/ops_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* A reply larger than this is refused (a health or a run's record is far smaller). */
#define OPS_REPLY_MAX (64u << 20)
/* How long connect() may wait for room in a serve's backlog. */
#define OPS_CONNECT_TIMEOUT_MS OPS_REQUEST_TIMEOUT_MS

int ops_client_connect(const char *home, int *fd, char *err, size_t err_cap)
{
    *fd = -1;
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int len = snprintf(addr.sun_path, sizeof addr.sun_path, "%s/%s", home, OPS_SOCKET_NAME);
    if (len < 0 || (size_t)len >= sizeof addr.sun_path)
        return error_line(err, err_cap,
                          "ops socket: path %s/%s is too long for a Unix socket (at most %zu "
                          "bytes)",
                          home, OPS_SOCKET_NAME, sizeof addr.sun_path - 1);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return error_line(err, err_cap, "ops socket: socket: %s", strerror(errno));
    /* A Unix stream connect waits while the serve's backlog is full; bound it. */
    struct timeval tv = {OPS_CONNECT_TIMEOUT_MS / 1000, (OPS_CONNECT_TIMEOUT_MS % 1000) * 1000L};
    if (setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
        int e = errno;
        close(s);
        return error_line(err, err_cap, "ops socket: setsockopt: %s", strerror(e));
    }
    int rc;
    do
        rc = connect(s, (const struct sockaddr *)&addr, sizeof addr);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        int e = errno;
        close(s);
        if (e == ENOENT || e == ECONNREFUSED)
            return 0; /* no serve: no socket, or one left by a serve that is gone */
        if (e == EAGAIN)
            return error_line(err, err_cap,
                              "ops socket: %s: the serve did not accept within %d ms",
                              addr.sun_path, OPS_CONNECT_TIMEOUT_MS);
        return error_line(err, err_cap, "ops socket: cannot connect to %s: %s", addr.sun_path,
                          strerror(e));
    }
    /* The home is ours and 0700, so only we can have bound this; say so if not. */
    struct ucred cred;
    socklen_t cred_len = sizeof cred;
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0 ||
        cred_len != sizeof cred || cred.uid != geteuid()) {
        close(s);
        return error_line(err, err_cap, "ops socket: %s is not served by uid %u: refused",
                          addr.sun_path, (unsigned)geteuid());
    }
    *fd = s;
    return 1;
}

/* ms left before deadline (-1: no deadline), at least 0. */
static int remaining_ms(long long deadline)
{
    if (deadline < 0)
        return -1;
    long long left = deadline - monotonic_ms();
    return left <= 0 ? 0 : left > 0x7fffffff ? 0x7fffffff : (int)left;
}

/* Waits for events on fd until deadline: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, long long deadline)
{
    for (;;) {
        struct pollfd p = {fd, events, 0};
        int r = poll(&p, 1, remaining_ms(deadline));
        if (r < 0 && errno == EINTR)
            continue;
        return r < 0 ? -1 : r;
    }
}

static int send_all(int fd, const char *data, size_t len, long long deadline, char *err,
                    size_t err_cap)
{
    switch (socket_send_all(fd, data, len, deadline, -1)) {
    case SOCKET_SENT:
        return 0;
    case SOCKET_SEND_TIMED_OUT:
        return error_line(err, err_cap, "ops socket: timed out sending the request");
    case SOCKET_SEND_BROKEN:
        break;
    }
    return error_line(err, err_cap, "ops socket: the connection broke sending: %s",
                      strerror(errno));
}

/* Reads up to the first newline into a malloc'd buffer (*out, *out_len without it). */
static int read_line(int fd, char **out, size_t *out_len, long long deadline, char *err,
                     size_t err_cap)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            if (cap > OPS_REPLY_MAX) {
                free(buf);
                return error_line(err, err_cap, "ops socket: reply over %u bytes",
                                  OPS_REPLY_MAX);
            }
            size_t ncap = cap == 0 ? 4096 : cap * 2;
            if (ncap > OPS_REPLY_MAX + 1)
                ncap = OPS_REPLY_MAX + 1;
            char *nbuf = realloc(buf, ncap);
            if (nbuf == NULL) {
                free(buf);
                return error_line(err, err_cap, "ops socket: out of memory for the reply");
            }
            buf = nbuf;
            cap = ncap;
        }
        ssize_t n = recv(fd, buf + len, cap - len, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int r = wait_fd(fd, POLLIN, deadline);
            if (r > 0)
                continue;
            free(buf);
            if (r == 0)
                return error_line(err, err_cap, "ops socket: timed out waiting for the reply");
            return error_line(err, err_cap, "ops socket: poll: %s", strerror(errno));
        }
        if (n < 0) {
            int e = errno;
            free(buf);
            return error_line(err, err_cap, "ops socket: the connection broke: %s",
                              strerror(e));
        }
        if (n == 0) {
            free(buf);
            return error_line(err, err_cap,
                              len == 0 ? "ops socket: the serve closed the connection "
                                         "without a reply"
                                       : "ops socket: the reply was cut before its end");
        }
        char *nl = memchr(buf + len, '\n', (size_t)n);
        len += (size_t)n;
        if (nl != NULL) {
            *out = buf;
            *out_len = (size_t)(nl - buf);
            return 0;
        }
        if (len > OPS_REPLY_MAX) {
            free(buf);
            return error_line(err, err_cap, "ops socket: reply over %u bytes", OPS_REPLY_MAX);
        }
    }
}

int ops_client_call(int fd, const void *request, void **reply, int timeout_ms, char *err,
                    size_t err_cap)
{
    *reply = NULL;
    long long deadline = timeout_ms < 0 ? -1 : monotonic_ms() + timeout_ms;
    int rc = -1;
    char *line = NULL, *text = NULL;
    size_t line_len = 0;

    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
        error_line(err, err_cap, "ops socket: fcntl: %s", strerror(errno));
        goto out;
    }
    if (request == NULL || !json_is_object((const json_t *)request)) {
        error_line(err, err_cap, "ops socket: the request is not a JSON object");
        goto out;
    }
    /* Compact JSON escapes every newline in a string, so the request is one line. */
    text = json_dumps(request, JSON_COMPACT);
    if (text == NULL) {
        error_line(err, err_cap, "ops socket: cannot encode the request");
        goto out;
    }
    size_t text_len = strlen(text);
    if (text_len > OPS_REQUEST_MAX) {
        error_line(err, err_cap, "ops socket: request over %u bytes", OPS_REQUEST_MAX);
        goto out;
    }
    if (send_all(fd, text, text_len, deadline, err, err_cap) != 0 ||
        send_all(fd, "\n", 1, deadline, err, err_cap) != 0) {
        /* A server that refuses before reading (a serve stopping) has written its one
         * line and closed: that line, if there, is the answer, not the broken send. */
        char ignored[64];
        if (read_line(fd, &line, &line_len, deadline, ignored, sizeof ignored) != 0)
            goto out;
    } else if (read_line(fd, &line, &line_len, deadline, err, err_cap) != 0) {
        goto out;
    }
    json_error_t jerr;
    json_t *parsed = json_loadb(line, line_len, JSON_REJECT_DUPLICATES, &jerr);
    if (parsed == NULL) {
        error_line(err, err_cap, "ops socket: the reply is not JSON: %s", jerr.text);
        goto out;
    }
    if (!json_is_object(parsed)) {
        json_decref(parsed);
        error_line(err, err_cap, "ops socket: the reply is not a JSON object");
        goto out;
    }
    *reply = parsed;
    rc = 0;
out:
    free(text);
    free(line);
    close(fd);
    return rc;
}
