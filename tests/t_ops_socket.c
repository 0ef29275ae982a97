/* The ops socket's transport (src/serve/ops_socket.c, src/serve/ops_client.c), in
 * process: the real server on a data home in /tmp with a toy handler ("echo" answers at
 * once, "block" waits for a byte on a pipe this test writes), driven by the real client
 * and by raw sockets playing hostile or broken peers. Peers of another uid are forked
 * children that drop to uid 65534 (the test runs as root; if not, those checks fail).
 * Every wait is a poll on a descriptor with a safety bound, never a sleep. Each check
 * names the guard it proves. */
#include "base/clock.h"
#include "serve/ops_client.h"
#include "serve/ops_socket.h"
#include "lib/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOBODY 65534
/* Safety bounds only: a healthy run never comes near them. */
#define SAFETY_MS 20000

/* ---- the toy handler and the refusal log ------------------------------------------ */

static pthread_mutex_t toy_lock = PTHREAD_MUTEX_INITIALIZER;
static int handled;              /* handler calls */
static int refusal_count;
static char last_refusal[256];
static long last_refusal_uid;
static int refusal_pipe[2];      /* a byte per refusal, so the test can wait on it */
static int release_pipe[2];      /* "block" handlers each wait for one byte here */
static int entered_pipe[2];      /* a byte per "block" handler that has started */
static int marked_pipe[2];       /* a byte per "mark" request handled (its reply made) */

static int threads_seen;  /* handler threads that answered a first request */
static int threads_ended; /* thread-end hook calls */
static _Thread_local bool toy_thread_seen;

static void *toy_handler(void *ctx, const void *request)
{
    (void)ctx;
    pthread_mutex_lock(&toy_lock);
    handled++;
    if (!toy_thread_seen)
        threads_seen++;
    toy_thread_seen = true;
    pthread_mutex_unlock(&toy_lock);
    const char *cmd = json_string_value(json_object_get(request, "cmd"));
    if (cmd != NULL && strcmp(cmd, "block") == 0) {
        char byte = 'e';
        if (write(entered_pipe[1], &byte, 1) != 1 || read(release_pipe[0], &byte, 1) != 1)
            return json_pack("{s:b,s:i,s:s}", "ok", 0, "exit", 1, "error", "pipe broke");
        return json_pack("{s:b,s:s}", "ok", 1, "data", "released");
    }
    json_t *args = json_object_get(request, "args");
    json_t *reply = json_pack("{s:b,s:{s:O?}}", "ok", 1, "data", "echo", args);
    if (cmd != NULL && strcmp(cmd, "mark") == 0) {
        char byte = 'm';
        if (write(marked_pipe[1], &byte, 1) != 1)
            abort();
    }
    return reply;
}

static void toy_thread_end(void *ctx)
{
    (void)ctx;
    pthread_mutex_lock(&toy_lock);
    threads_ended++;
    pthread_mutex_unlock(&toy_lock);
}

static int toy_count(const int *counter)
{
    pthread_mutex_lock(&toy_lock);
    int n = *counter;
    pthread_mutex_unlock(&toy_lock);
    return n;
}

static void toy_refusal(void *ctx, const char *what, long uid, long pid)
{
    (void)ctx;
    (void)pid;
    pthread_mutex_lock(&toy_lock);
    refusal_count++;
    snprintf(last_refusal, sizeof last_refusal, "%s", what);
    last_refusal_uid = uid;
    pthread_mutex_unlock(&toy_lock);
    char byte = 'r';
    if (write(refusal_pipe[1], &byte, 1) != 1)
        abort();
}

static int handled_now(void)
{
    pthread_mutex_lock(&toy_lock);
    int n = handled;
    pthread_mutex_unlock(&toy_lock);
    return n;
}

/* Waits for the next refusal; copies its line and uid. False after the safety bound. */
static bool wait_refusal(char *what, size_t cap, long *uid)
{
    char byte;
    if (fd_read_exact(refusal_pipe[0], &byte, 1, SAFETY_MS) != 0)
        return false;
    pthread_mutex_lock(&toy_lock);
    snprintf(what, cap, "%s", last_refusal);
    if (uid != NULL)
        *uid = last_refusal_uid;
    pthread_mutex_unlock(&toy_lock);
    return true;
}

/* True if no refusal is pending right now (nothing to wait for). */
static bool no_refusal_pending(void)
{
    struct pollfd p = {refusal_pipe[0], POLLIN, 0};
    return poll(&p, 1, 0) == 0;
}

/* ---- raw peers ---------------------------------------------------------------------- */

static char sock_path[108];

static int raw_connect(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    sfmt(addr.sun_path, sizeof addr.sun_path, "%s", sock_path);
    if (fd >= 0 && connect(fd, (const struct sockaddr *)&addr, sizeof addr) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads one reply line from fd (a byte at a time: what follows it stays unread) into a
 * parsed object; NULL if the server closed without one. If eof is not NULL, it then
 * tells whether the connection ended (closed by the server) with nothing after the
 * line: a server keeps a connection while the client's side is open, so a caller that
 * expects the end of a normal reply closes its own side first. */
static json_t *raw_read_reply(int fd, bool *eof)
{
    char buf[4096];
    size_t len = 0;
    bool line = false;
    while (len < sizeof buf - 1 && !line) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, SAFETY_MS) != 1 || read(fd, buf + len, 1) != 1)
            break;
        line = buf[len++] == '\n';
    }
    buf[len] = '\0';
    if (eof != NULL) {
        char after;
        struct pollfd p = {fd, POLLIN, 0};
        *eof = poll(&p, 1, SAFETY_MS) == 1 && read(fd, &after, 1) == 0;
    }
    return line ? json_loadb(buf, len - 1, 0, NULL) : NULL;
}

static const char *reply_error(const json_t *reply)
{
    const char *e = json_string_value(json_object_get(reply, "error"));
    return e != NULL ? e : "";
}

static long long reply_exit(const json_t *reply)
{
    return json_integer_value(json_object_get(reply, "exit"));
}

/* A request through the real client: the reply, or NULL with the reason in err. */
static json_t *client_call(const char *home, const char *request_text, char *err, size_t cap)
{
    int fd;
    int rc = ops_client_connect(home, &fd, err, cap);
    if (rc != 1) {
        if (rc == 0)
            snprintf(err, cap, "no serve found");
        return NULL;
    }
    json_t *request = json_loads(request_text, 0, NULL);
    void *reply = NULL;
    if (ops_client_call(fd, request, &reply, SAFETY_MS, err, cap) != 0)
        reply = NULL;
    json_decref(request);
    return reply;
}

static bool is_echo_of(const json_t *reply, const char *value)
{
    const char *got =
        json_string_value(json_object_get(json_object_get(reply, "data"), "echo"));
    return json_is_true(json_object_get(reply, "ok")) && got != NULL && strcmp(got, value) == 0;
}

/* ---- another uid, in a forked child ------------------------------------------------- */

struct nobody_result {
    int connect_errno; /* 0: connected */
    int reply_bytes;   /* bytes the server sent before closing (-1: read error) */
    int client_rc;     /* ops_client_connect's return */
    char client_err[200];
};

/* Forks a child that drops to uid/gid 65534 (no groups) and either connects raw,
 * writes a request and reads what comes back (use_client false) or calls
 * ops_client_connect(home) (use_client true). Only system calls and snprintf run in
 * the child: the parent has threads. */
static bool as_nobody(const char *home, bool use_client, struct nobody_result *out)
{
    memset(out, 0, sizeof *out);
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0)
        return false;
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        struct nobody_result r;
        memset(&r, 0, sizeof r);
        if (setgroups(0, NULL) != 0 || setresgid(NOBODY, NOBODY, NOBODY) != 0 ||
            setresuid(NOBODY, NOBODY, NOBODY) != 0)
            _exit(3);
        if (use_client) {
            int fd = -1;
            r.client_rc = ops_client_connect(home, &fd, r.client_err, sizeof r.client_err);
            if (fd >= 0)
                close(fd);
        } else {
            int fd = raw_connect();
            if (fd < 0) {
                r.connect_errno = errno;
            } else {
                static const char req[] = "{\"cmd\":\"echo\",\"args\":\"from nobody\"}\n";
                ssize_t w = send(fd, req, sizeof req - 1, MSG_NOSIGNAL);
                (void)w;
                char buf[512];
                r.reply_bytes = 0;
                for (;;) {
                    struct pollfd p = {fd, POLLIN, 0};
                    if (poll(&p, 1, SAFETY_MS) != 1) {
                        r.reply_bytes = -2; /* never closed */
                        break;
                    }
                    ssize_t n = read(fd, buf, sizeof buf);
                    if (n < 0 && errno == ECONNRESET)
                        break;
                    if (n <= 0) {
                        if (n < 0)
                            r.reply_bytes = -1;
                        break;
                    }
                    r.reply_bytes += (int)n;
                }
                close(fd);
            }
        }
        _exit(write(pipefd[1], &r, sizeof r) == (ssize_t)sizeof r ? 0 : 4);
    }
    close(pipefd[1]);
    bool got = fd_read_exact(pipefd[0], out, sizeof *out, SAFETY_MS) == 0;
    close(pipefd[0]);
    int status;
    waitpid(pid, &status, 0);
    return got && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* ---- the checks ------------------------------------------------------------------------ */

static void check_round_trip(const char *home)
{
    char err[256] = "";
    json_t *reply = client_call(home, "{\"cmd\":\"echo\",\"args\":\"hello\"}", err, sizeof err);
    check(is_echo_of(reply, "hello"), "ops socket: a request and its reply round trip",
          "%s", reply == NULL ? err : "wrong reply");
    json_decref(reply);

    struct stat st;
    bool stated = lstat(sock_path, &st) == 0;
    check(stated && S_ISSOCK(st.st_mode) && (st.st_mode & 07777) == 0600,
          "ops socket: the socket file is 0600 though the umask is 0 [guard fchmod before "
          "bind, mode confirmed after]",
          "mode %04o", stated ? (unsigned)(st.st_mode & 07777) : 0u);
}

/* Requests one after another, each read to the connection's end. */
static void check_kept_threads(void)
{
    int before = toy_count(&threads_seen);
    int answered = 0;
    for (int i = 0; i < 10; i++) {
        int fd = raw_connect();
        static const char echo[] = "{\"cmd\":\"echo\",\"args\":\"again\"}\n";
        bool eof = false;
        json_t *reply = fd >= 0 &&
                                write(fd, echo, sizeof echo - 1) == (ssize_t)(sizeof echo - 1) &&
                                shutdown(fd, SHUT_WR) == 0
                            ? raw_read_reply(fd, &eof)
                            : NULL;
        answered += is_echo_of(reply, "again") && eof;
        json_decref(reply);
        if (fd >= 0)
            close(fd);
    }
    int started = toy_count(&threads_seen) - before;
    check(answered == 10 && started <= 1,
          "ops socket: requests one after another are answered by one kept handler thread "
          "[guard: handler threads kept between requests]",
          "%d of 10 answered, %d new handler threads", answered, started);
}

static void check_other_uid(const char *home)
{
    if (!check(geteuid() == 0, "ops socket: the test runs as root to play another uid",
               "euid %u: the other-uid checks cannot run", (unsigned)geteuid()))
        return;
    int before = handled_now();
    struct nobody_result r;
    bool ran = as_nobody(home, false, &r);
    check(ran && r.connect_errno == EACCES,
          "ops socket: with the normal modes (home 0700, socket 0600) uid 65534 cannot "
          "connect at all: EACCES",
          "ran %d, connect errno %d (%s)", ran, r.connect_errno, strerror(r.connect_errno));

    /* Opens the file modes on purpose (home 0711, socket 0666) so that uid 65534 CAN
     * connect: what is tested here is the peer-credential check itself, not the modes. */
    if (chmod(home, 0711) != 0 || chmod(sock_path, 0666) != 0) {
        fail("ops socket: open the modes for the peer-credential check", "%s",
             strerror(errno));
        return;
    }
    ran = as_nobody(home, false, &r);
    char what[256] = "";
    long uid = -1;
    bool refused = wait_refusal(what, sizeof what, &uid);
    chmod(sock_path, 0600);
    chmod(home, 0700);
    check(ran && r.connect_errno == 0 && r.reply_bytes == 0 && refused && uid == NOBODY &&
              strstr(what, "peer uid 65534 is not the owner") != NULL &&
              handled_now() == before,
          "ops socket: a peer of another uid is refused, reported, closed unanswered and "
          "never handled [guard SO_PEERCRED uid check]",
          "ran %d, connect errno %d, reply bytes %d, refusal %d \"%s\" uid %ld, handled %d->%d",
          ran, r.connect_errno, r.reply_bytes, refused, what, uid, before, handled_now());
}

static void check_oversized(void)
{
    int before = handled_now();
    size_t len = OPS_REQUEST_MAX + 1;
    char *big = malloc(len);
    memset(big, ' ', len);
    int fd = raw_connect();
    bool sent = fd >= 0 && fd_write_all(fd, big, len, SAFETY_MS) == 0;
    bool eof = false;
    json_t *reply = sent ? raw_read_reply(fd, &eof) : NULL;
    char what[256] = "";
    bool refused = sent && wait_refusal(what, sizeof what, NULL);
    check(sent && refused && strstr(what, "request over 262144 bytes") != NULL &&
              (reply == NULL || (reply_exit(reply) == 2 &&
                                 strstr(reply_error(reply), "request over") != NULL)) &&
              handled_now() == before,
          "ops socket: a request over OPS_REQUEST_MAX is refused, reported and never handled "
          "[guard request size bound]",
          "sent %d, refusal \"%s\", reply error \"%s\", handled %d->%d", sent, what,
          reply_error(reply), before, handled_now());
    json_decref(reply);
    if (fd >= 0)
        close(fd);

    /* Exactly OPS_REQUEST_MAX bytes before the newline is still a request. */
    static const char head[] = "{\"cmd\":\"echo\",\"args\":\"max\"}";
    memcpy(big, head, sizeof head - 1);
    big[len - 1] = '\n';
    fd = raw_connect();
    sent = fd >= 0 && fd_write_all(fd, big, len, SAFETY_MS) == 0;
    reply = sent ? raw_read_reply(fd, NULL) : NULL;
    check(is_echo_of(reply, "max"),
          "ops socket: a request of exactly OPS_REQUEST_MAX bytes is answered", "sent %d, %s",
          sent, reply != NULL ? reply_error(reply) : "no reply");
    json_decref(reply);
    if (fd >= 0)
        close(fd);
    free(big);
}

/* The descriptors the test process was started with (stdio, and whatever its runner
 * left open), taken before anything else was opened. */
static int inherited[64];
static int inherited_count;

static bool inherited_fd(int fd)
{
    for (int i = 0; i < inherited_count; i++)
        if (inherited[i] == fd)
            return true;
    return false;
}

static void check_stalled_peer(const char *home)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int stalled = raw_connect();
    static const char half[] = "{\"cmd\":\"ec";
    bool sent = stalled >= 0 && fd_write_all(stalled, half, sizeof half - 1, SAFETY_MS) == 0;

    /* Another client is answered while the stalled one is still open. */
    char err[256] = "";
    json_t *reply = client_call(home, "{\"cmd\":\"echo\",\"args\":\"meanwhile\"}", err,
                                sizeof err);
    struct pollfd p = {stalled, POLLIN, 0};
    bool stalled_still_open = sent && poll(&p, 1, 0) == 0 && no_refusal_pending();
    check(is_echo_of(reply, "meanwhile") && stalled_still_open,
          "ops socket: a peer that stalls half-way does not hold up another client",
          "%s, stalled one still open %d", reply == NULL ? err : "reply", stalled_still_open);
    json_decref(reply);

    /* The daemon starts workers: none of the server's descriptors (the listening
     * socket, its eventfd, the stalled connection it is reading) may leak into them.
     * Those the test was started with are not looked at; all the test opened itself
     * is close-on-exec too. */
    int fds[256];
    int n = proc_list_fds(getpid(), fds, 256);
    int leaking = -1;
    for (int i = 0; i < n && i < 256; i++) {
        if (inherited_fd(fds[i]))
            continue;
        int flags = fcntl(fds[i], F_GETFD);
        if (flags >= 0 && (flags & FD_CLOEXEC) == 0)
            leaking = fds[i];
    }
    check(n > 3 && leaking < 0,
          "ops socket: every descriptor the server holds is close-on-exec [guard SOCK_CLOEXEC, "
          "EFD_CLOEXEC]",
          "%d descriptors, fd %d is inherited by exec", n, leaking);

    /* Then the stalled one is cut at OPS_REQUEST_TIMEOUT_MS, with an error reply. */
    bool eof = false;
    json_t *cut = sent ? raw_read_reply(stalled, &eof) : NULL;
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long long waited = (t1.tv_sec - t0.tv_sec) * 1000LL + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    char what[256] = "";
    bool refused = sent && wait_refusal(what, sizeof what, NULL);
    check(cut != NULL && eof && reply_exit(cut) == 2 &&
              strstr(reply_error(cut), "not complete within 5000 ms") != NULL && refused &&
              strstr(what, "not complete within 5000 ms") != NULL &&
              waited >= OPS_REQUEST_TIMEOUT_MS,
          "ops socket: a stalled request is cut at OPS_REQUEST_TIMEOUT_MS with an error reply "
          "and reported [guard request deadline]",
          "reply \"%s\", closed %d, refusal \"%s\", after %lld ms", reply_error(cut), eof,
          what, waited);
    json_decref(cut);
    if (stalled >= 0)
        close(stalled);
}

static void release_blocked(int count)
{
    for (int i = 0; i < count; i++) {
        char byte = 'g';
        if (write(release_pipe[1], &byte, 1) != 1)
            fail("ops socket: release a blocked handler", "%s", strerror(errno));
    }
}

static void check_blocking_handler(const char *home)
{
    static const char block[] = "{\"cmd\":\"block\"}\n";
    int blocked = raw_connect();
    char byte;
    bool entered = blocked >= 0 &&
                   fd_write_all(blocked, block, sizeof block - 1, SAFETY_MS) == 0 &&
                   fd_read_exact(entered_pipe[0], &byte, 1, SAFETY_MS) == 0;

    char err[256] = "";
    json_t *reply = entered ? client_call(home, "{\"cmd\":\"echo\",\"args\":\"beside\"}", err,
                                          sizeof err)
                            : NULL;
    check(entered && is_echo_of(reply, "beside"),
          "ops socket: a handler that blocks does not hold up another request [guard a "
          "handler thread per request]",
          "entered %d, %s", entered, reply == NULL ? err : "wrong reply");
    json_decref(reply);

    release_blocked(1);
    bool eof = false;
    json_t *late = entered && shutdown(blocked, SHUT_WR) == 0 ? raw_read_reply(blocked, &eof)
                                                               : NULL;
    check(json_is_true(json_object_get(late, "ok")) &&
              strcmp(json_string_value(json_object_get(late, "data")) != NULL
                         ? json_string_value(json_object_get(late, "data"))
                         : "",
                     "released") == 0 &&
              eof,
          "ops socket: the blocked handler's reply arrives once it returns, then the "
          "connection closes (the client had closed its side)",
          "%s", late == NULL ? "no reply" : reply_error(late));
    json_decref(late);
    if (blocked >= 0)
        close(blocked);
}

static void check_busy(void)
{
    static const char block[] = "{\"cmd\":\"block\"}\n";
    int fds[OPS_HANDLERS_MAX];
    int started = 0;
    char byte;
    for (int i = 0; i < OPS_HANDLERS_MAX; i++) {
        fds[i] = raw_connect();
        if (fds[i] < 0 || fd_write_all(fds[i], block, sizeof block - 1, SAFETY_MS) != 0 ||
            fd_read_exact(entered_pipe[0], &byte, 1, SAFETY_MS) != 0)
            break;
        started++;
    }
    int before = handled_now();
    int extra = raw_connect();
    json_t *reply = NULL;
    if (started == OPS_HANDLERS_MAX && extra >= 0 &&
        fd_write_all(extra, block, sizeof block - 1, SAFETY_MS) == 0)
        reply = raw_read_reply(extra, NULL);
    char what[256] = "";
    bool refused = reply != NULL && wait_refusal(what, sizeof what, NULL);
    check(reply != NULL && reply_exit(reply) == 1 &&
              strncmp(reply_error(reply), "busy: ", 6) == 0 && refused &&
              handled_now() == before,
          "ops socket: a request beyond OPS_HANDLERS_MAX running handlers gets a busy reply "
          "[guard handler count bound]",
          "%d handlers started, reply \"%s\", refusal \"%s\"", started,
          reply == NULL ? "none" : reply_error(reply), what);
    json_decref(reply);
    if (extra >= 0)
        close(extra);

    release_blocked(started);
    int answered = 0;
    for (int i = 0; i < started; i++) {
        json_t *r = raw_read_reply(fds[i], NULL);
        answered += json_is_true(json_object_get(r, "ok"));
        json_decref(r);
    }
    for (int i = 0; i < started && i < OPS_HANDLERS_MAX; i++)
        close(fds[i]);
    check_int_eq(answered, OPS_HANDLERS_MAX,
                 "ops socket: every released handler then answers its own client");
}

/* ---- pipelining: many requests on one connection -------------------------------------- */

static bool is_released(const json_t *reply)
{
    const char *data = json_string_value(json_object_get(reply, "data"));
    return json_is_true(json_object_get(reply, "ok")) && data != NULL &&
           strcmp(data, "released") == 0;
}

/* A blocked request and a quick one behind it, sent together on one connection. */
static void check_pipelined_order(void)
{
    static const char two[] = "{\"cmd\":\"block\"}\n{\"cmd\":\"mark\",\"args\":\"second\"}\n";
    int fd = raw_connect();
    char byte;
    bool both = fd >= 0 && fd_write_all(fd, two, sizeof two - 1, SAFETY_MS) == 0 &&
                fd_read_exact(entered_pipe[0], &byte, 1, SAFETY_MS) == 0 &&
                fd_read_exact(marked_pipe[0], &byte, 1, SAFETY_MS) == 0;
    check(both,
          "ops socket: a connection's requests are handled at once: the one behind a blocked "
          "request is handled before it returns [guard: pipelined requests dispatched as they "
          "arrive]",
          "block entered and mark handled: %d", both);
    release_blocked(both ? 1 : 0);
    json_t *first = both ? raw_read_reply(fd, NULL) : NULL;
    json_t *second = first != NULL ? raw_read_reply(fd, NULL) : NULL;
    check(is_released(first) && is_echo_of(second, "second"),
          "ops socket: the replies come in the order of the requests, not of their ends "
          "[guard: replies in request order]",
          "first %s, second %s", first == NULL ? "none" : is_released(first) ? "released" : "other",
          second == NULL ? "none" : is_echo_of(second, "second") ? "second" : "other");
    json_decref(first);
    json_decref(second);
    if (fd >= 0)
        close(fd);
}

/* More requests in one write than a connection may be owed, then the client's side
 * closed: each answered in turn, then the end. */
static void check_pipelined_many(void)
{
    enum { COUNT = 3 * OPS_PIPELINE_MAX };
    char requests[COUNT * 48];
    size_t len = 0;
    for (int i = 0; i < COUNT; i++)
        len += (size_t)snprintf(requests + len, sizeof requests - len,
                                "{\"cmd\":\"echo\",\"args\":\"n%d\"}\n", i);
    int fd = raw_connect();
    bool sent = fd >= 0 && fd_write_all(fd, requests, len, SAFETY_MS) == 0 &&
                shutdown(fd, SHUT_WR) == 0;
    int in_order = 0;
    for (int i = 0; sent && i < COUNT; i++) {
        char want[16];
        snprintf(want, sizeof want, "n%d", i);
        json_t *reply = raw_read_reply(fd, NULL);
        if (!is_echo_of(reply, want)) {
            json_decref(reply);
            break;
        }
        in_order++;
        json_decref(reply);
    }
    struct pollfd p = {fd, POLLIN, 0};
    char after;
    bool eof = in_order == COUNT && poll(&p, 1, SAFETY_MS) == 1 && read(fd, &after, 1) == 0;
    check(in_order == COUNT && eof,
          "ops socket: 48 requests written at once on one connection are answered in order, "
          "then the connection ends after the client closed its side [guard: a connection "
          "carries many requests; requests waiting for owed replies are taken later]",
          "%d of %d in order, end %d", in_order, COUNT, eof);
    if (fd >= 0)
        close(fd);
}

/* OPS_PIPELINE_MAX blocked requests on one connection and one more: the one more waits
 * until a reply is written. */
static void check_pipeline_bound(void)
{
    char requests[(OPS_PIPELINE_MAX + 1) * 24];
    size_t len = 0;
    for (int i = 0; i <= OPS_PIPELINE_MAX; i++)
        len += (size_t)snprintf(requests + len, sizeof requests - len, "{\"cmd\":\"block\"}\n");
    int fd = raw_connect();
    int entered = 0;
    char byte;
    if (fd >= 0 && fd_write_all(fd, requests, len, SAFETY_MS) == 0)
        while (entered < OPS_PIPELINE_MAX &&
               fd_read_exact(entered_pipe[0], &byte, 1, SAFETY_MS) == 0)
            entered++;
    /* Absence within a window: with the bound removed the extra one enters at once. */
    struct pollfd p = {entered_pipe[0], POLLIN, 0};
    bool extra_waits = entered == OPS_PIPELINE_MAX && poll(&p, 1, 500) == 0;
    check(extra_waits,
          "ops socket: a connection owed OPS_PIPELINE_MAX replies is not read further "
          "[guard: pipeline bound]",
          "%d entered, the extra one %s", entered, extra_waits ? "waits" : "entered");
    /* Which blocked handler a byte releases is the kernel's choice: release them all. */
    release_blocked(entered);
    bool extra_entered = fd_read_exact(entered_pipe[0], &byte, 1, SAFETY_MS) == 0;
    check(extra_entered,
          "ops socket: once the replies of a full connection are written, its next request "
          "is taken",
          "the extra one entered %d", extra_entered);
    release_blocked(extra_entered ? 1 : 0);
    int answered = 0;
    for (int i = 0; i <= OPS_PIPELINE_MAX; i++) {
        json_t *r = raw_read_reply(fd, NULL);
        answered += is_released(r);
        json_decref(r);
    }
    check_int_eq(answered, OPS_PIPELINE_MAX + 1,
                 "ops socket: every request of the full connection is then answered");
    if (fd >= 0)
        close(fd);
}

/* Two connections left after a reply: one idle (closed silently after
 * OPS_CONNECTION_IDLE_MS), one with a later request begun and never ended (cut at
 * OPS_REQUEST_TIMEOUT_MS of its first byte). Both waits run at once. */
struct kept_connections {
    int idle, partial;
    long long idle_since, partial_since;
};

static void start_kept_connections(struct kept_connections *k)
{
    static const char echo[] = "{\"cmd\":\"echo\",\"args\":\"kept\"}\n";
    static const char part[] = "{\"cmd\":";
    k->idle = raw_connect();
    k->partial = raw_connect();
    bool answered = true;
    for (int i = 0; i < 2; i++) {
        int fd = i == 0 ? k->idle : k->partial;
        json_t *reply = fd >= 0 && fd_write_all(fd, echo, sizeof echo - 1, SAFETY_MS) == 0
                            ? raw_read_reply(fd, NULL)
                            : NULL;
        answered = answered && is_echo_of(reply, "kept");
        json_decref(reply);
    }
    k->idle_since = monotonic_ms();
    bool sent = answered && fd_write_all(k->partial, part, sizeof part - 1, SAFETY_MS) == 0;
    k->partial_since = monotonic_ms();
    check(answered && sent, "ops socket: two connections kept open after a reply",
          "answered %d, part sent %d", answered, sent);
}

static void finish_kept_connections(struct kept_connections *k)
{
    bool eof = false;
    json_t *cut = raw_read_reply(k->partial, &eof);
    long long waited = monotonic_ms() - k->partial_since;
    char what[256] = "";
    bool refused = cut != NULL && wait_refusal(what, sizeof what, NULL);
    check(cut != NULL && eof && reply_exit(cut) == 2 && refused &&
              strstr(what, "request not complete") != NULL &&
              waited >= OPS_REQUEST_TIMEOUT_MS,
          "ops socket: a later request begun and not ended is cut at OPS_REQUEST_TIMEOUT_MS "
          "of its first byte, with an error reply [guard: request timeout on a kept "
          "connection]",
          "reply \"%s\", closed %d, refusal \"%s\", after %lld ms", reply_error(cut), eof, what,
          waited);
    json_decref(cut);

    struct pollfd p = {k->idle, POLLIN, 0};
    char byte;
    bool ended = poll(&p, 1, OPS_CONNECTION_IDLE_MS + SAFETY_MS) == 1 &&
                 read(k->idle, &byte, 1) == 0;
    long long idle = monotonic_ms() - k->idle_since;
    check(ended && idle >= OPS_CONNECTION_IDLE_MS,
          "ops socket: a connection idle after its reply is closed, silently, after "
          "OPS_CONNECTION_IDLE_MS [guard: idle connections do not hold a slot forever]",
          "ended %d after %lld ms", ended, idle);
    close(k->idle);
    close(k->partial);
}

static bool printable_ascii(const char *text)
{
    for (const char *p = text; *p != '\0'; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            return false;
    return true;
}

/* xorshift32: the same bytes every run, so a failure can be replayed. */
static uint32_t next_random(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

static void check_garbage(void)
{
    static const char *const lines[] = {
        "not json",        "[1,2]",          "\"a string\"", "42",
        "{\"cmd\":\"echo\",\"cmd\":\"echo\"}", /* duplicate keys */
        "{\"cmd\":\"\xff\xfe\"}",               /* not UTF-8 */
        "{\"cmd\":\"echo\"",                     /* cut */
    };
    int before = handled_now();
    int good = 0;
    char detail[256] = "";
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        char line[128];
        snprintf(line, sizeof line, "%s\n", lines[i]);
        int fd = raw_connect();
        bool eof = false;
        json_t *reply = fd >= 0 && fd_write_all(fd, line, strlen(line), SAFETY_MS) == 0
                            ? raw_read_reply(fd, &eof)
                            : NULL;
        char what[256] = "";
        bool refused = wait_refusal(what, sizeof what, NULL);
        if (reply != NULL && reply_exit(reply) == 2 && eof && refused &&
            strncmp(what, "request is not a JSON object", 28) == 0)
            good++;
        else if (detail[0] == '\0')
            snprintf(detail, sizeof detail, "line %zu: reply \"%s\", refusal \"%s\"", i,
                     reply == NULL ? "none" : reply_error(reply), what);
        json_decref(reply);
        if (fd >= 0)
            close(fd);
    }
    check(good == (int)(sizeof lines / sizeof lines[0]) && handled_now() == before,
          "ops socket: lines that are not one JSON object (or repeat a key) get an exit-2 "
          "reply and are never handled [guard JSON object check, JSON_REJECT_DUPLICATES]",
          "%s", detail);

    /* Random bytes (seeded: the same every run), a line each: never handled unless a
     * line happens to be an object (it cannot: no byte is '{'), and the server lives. */
    uint32_t seed = 11;
    int answered = 0;
    for (int round = 0; round < 40; round++) {
        unsigned char line[200];
        size_t n = 1 + next_random(&seed) % 190;
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)next_random(&seed);
            line[i] = c == '\n' || c == '{' ? (unsigned char)' ' : c;
        }
        line[n] = '\n';
        int fd = raw_connect();
        bool eof = false;
        json_t *reply = fd >= 0 && fd_write_all(fd, line, n + 1, SAFETY_MS) == 0
                            ? raw_read_reply(fd, &eof)
                            : NULL;
        char what[256];
        if (reply != NULL && reply_exit(reply) == 2 && wait_refusal(what, sizeof what, NULL) &&
            printable_ascii(what) && printable_ascii(reply_error(reply)) &&
            strncmp(reply_error(reply), "request is not a JSON object: ", 30) == 0)
            answered++;
        json_decref(reply);
        if (fd >= 0)
            close(fd);
    }
    check(answered == 40 && handled_now() == before,
          "ops socket: 40 lines of random bytes each get an exit-2 reply that says why in "
          "printable ASCII, none is handled [guard reason sanitized]",
          "%d answered, handled %d->%d", answered, before, handled_now());
}

static void check_client_connect(const char *dir, const char *home)
{
    char empty[512], err[256] = "";
    sfmt(empty, sizeof empty, "%s/empty-home", dir);
    if (mkdir(empty, 0700) != 0) {
        fail("ops client: make an empty home", "%s", strerror(errno));
        return;
    }
    int fd = -7;
    int rc = ops_client_connect(empty, &fd, err, sizeof err);
    check(rc == 0 && fd == -1, "ops client: no socket file means no serve (0)",
          "rc %d: %s", rc, err);

    /* A socket file whose server is gone: bound, then its descriptor closed. */
    char stale[600];
    sfmt(stale, sizeof stale, "%s/%s", empty, OPS_SOCKET_NAME);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    sfmt(addr.sun_path, sizeof addr.sun_path, "%s", stale);
    bool bound = s >= 0 && bind(s, (const struct sockaddr *)&addr, sizeof addr) == 0;
    if (s >= 0)
        close(s);
    rc = ops_client_connect(empty, &fd, err, sizeof err);
    check(bound && rc == 0 && fd == -1,
          "ops client: a stale socket file (its serve gone) means no serve (0)", "rc %d: %s",
          rc, err);

    /* A server starts over the stale file, and removes its own at stop. */
    struct ops_server *server =
        ops_server_start(empty, toy_handler, NULL, toy_refusal, NULL, err, sizeof err);
    json_t *reply =
        server != NULL ? client_call(empty, "{\"cmd\":\"echo\",\"args\":\"again\"}", err,
                                     sizeof err)
                       : NULL;
    check(is_echo_of(reply, "again"), "ops socket: a stale socket file is replaced at start",
          "%s", err);
    json_decref(reply);
    ops_server_stop(server);
    struct stat st;
    check(lstat(stale, &st) != 0 && errno == ENOENT,
          "ops socket: stop removes the socket file", "still there");
    rc = ops_client_connect(empty, &fd, err, sizeof err);
    check_int_eq(rc, 0, "ops client: after stop there is no serve (0)");

    if (!check(geteuid() == 0, "ops client: the test runs as root to play another uid",
               "euid %u", (unsigned)geteuid()))
        return;
    struct nobody_result r;
    bool ran = as_nobody(home, true, &r);
    check(ran && r.client_rc == -1 && strstr(r.client_err, "Permission denied") != NULL,
          "ops client: a permission problem is an error (-1 with its reason), not \"no "
          "serve\" [guard only ENOENT and ECONNREFUSED mean no serve]",
          "ran %d, rc %d: %s", ran, r.client_rc, r.client_err);
}

static void check_start_refusals(const char *dir)
{
    char err[256] = "", path[600];
    sfmt(path, sizeof path, "%s/wide-home", dir);
    mkdir(path, 0700);
    chmod(path, 0755);
    struct ops_server *server =
        ops_server_start(path, toy_handler, NULL, toy_refusal, NULL, err, sizeof err);
    check(server == NULL && strstr(err, "mode 0755, not 0700") != NULL,
          "ops socket: a data home wider than 0700 is refused [guard home mode check]",
          "%s", server != NULL ? "started" : err);
    ops_server_stop(server);

    sfmt(path, sizeof path, "%s/foreign-home", dir);
    mkdir(path, 0700);
    if (chown(path, NOBODY, NOBODY) != 0)
        fail("ops socket: chown a home to uid 65534", "%s", strerror(errno));
    server = ops_server_start(path, toy_handler, NULL, toy_refusal, NULL, err, sizeof err);
    check(server == NULL && strstr(err, "owned by uid 65534") != NULL,
          "ops socket: a data home owned by another uid is refused [guard home owner check]",
          "%s", server != NULL ? "started" : err);
    ops_server_stop(server);

    sfmt(path, sizeof path, "%s/file-home", dir);
    mkdir(path, 0700);
    char in_the_way[700];
    sfmt(in_the_way, sizeof in_the_way, "%s/%s", path, OPS_SOCKET_NAME);
    write_text_file(in_the_way, "not a socket\n", 0600);
    server = ops_server_start(path, toy_handler, NULL, toy_refusal, NULL, err, sizeof err);
    char *kept = read_text_file(in_the_way);
    check(server == NULL && strstr(err, "is not a socket") != NULL && kept != NULL &&
              strcmp(kept, "not a socket\n") == 0,
          "ops socket: a file in the socket's place that is not a socket is refused and "
          "kept [guard stale-socket type check]",
          "%s", server != NULL ? "started" : err);
    free(kept);
    ops_server_stop(server);

    char longer[300];
    memset(longer, 'x', 120);
    longer[120] = '\0';
    sfmt(path, sizeof path, "%s/%s", dir, longer);
    mkdir(path, 0700);
    server = ops_server_start(path, toy_handler, NULL, toy_refusal, NULL, err, sizeof err);
    check(server == NULL && strstr(err, "too long for a Unix socket") != NULL,
          "ops socket: a socket path longer than sun_path is refused with a clear line",
          "%s", server != NULL ? "started" : err);
    ops_server_stop(server);
    int fd;
    int rc = ops_client_connect(path, &fd, err, sizeof err);
    check(rc == -1 && strstr(err, "too long for a Unix socket") != NULL,
          "ops client: a socket path longer than sun_path is an error", "rc %d: %s", rc, err);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    inherited_count = proc_list_fds(getpid(), inherited, 64);
    /* The daemon's umask is 0077 (datahome_prepare); the socket's mode must not depend
     * on it, so the test widens it to nothing. */
    umask(0);
    const char *dir = harness_tmpdir("ops-socket");
    if (dir == NULL)
        return harness_finish();
    if (pipe2(refusal_pipe, O_CLOEXEC) != 0 || pipe2(release_pipe, O_CLOEXEC) != 0 ||
        pipe2(entered_pipe, O_CLOEXEC) != 0 || pipe2(marked_pipe, O_CLOEXEC) != 0) {
        fail("ops socket: pipes", "%s", strerror(errno));
        return harness_finish();
    }
    char home[512];
    sfmt(home, sizeof home, "%s/home", dir);
    if (mkdir(home, 0700) != 0) {
        fail("ops socket: make the data home", "%s", strerror(errno));
        return harness_finish();
    }
    sfmt(sock_path, sizeof sock_path, "%s/%s", home, OPS_SOCKET_NAME);
    /* The other uid must be able to reach the home's parent. */
    chmod(dir, 0711);

    char err[256] = "";
    struct ops_server *server =
        ops_server_start(home, toy_handler, toy_thread_end, toy_refusal, NULL, err, sizeof err);
    if (!check(server != NULL, "ops socket: the server starts on a 0700 home", "%s", err)) {
        harness_remove_tree(dir);
        return harness_finish();
    }
    check_round_trip(home);
    check_kept_threads();
    check_other_uid(home);
    check_oversized();
    check_stalled_peer(home);
    check_blocking_handler(home);
    check_busy();
    check_garbage();
    check_pipelined_order();
    check_pipelined_many();
    check_pipeline_bound();
    struct kept_connections kept;
    start_kept_connections(&kept);
    finish_kept_connections(&kept);
    check(no_refusal_pending(), "ops socket: every refusal was one the test expected",
          "an unexpected refusal: %s", last_refusal);
    /* Spare bytes, so that a handler left blocked by a broken guard cannot hang the
     * stop below (none is blocked when every check passed). */
    release_blocked(8);
    ops_server_stop(server);
    check(toy_count(&threads_seen) > 1 && toy_count(&threads_ended) == toy_count(&threads_seen),
          "ops socket: every handler thread runs the thread-end hook when the server stops "
          "[guard: what a handler keeps per thread is released]",
          "%d handler threads, %d thread ends", toy_count(&threads_seen),
          toy_count(&threads_ended));

    check_client_connect(dir, home);
    check_start_refusals(dir);
    harness_remove_tree(dir);
    return harness_finish();
}
