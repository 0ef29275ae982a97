/* The ops socket's server (serve/ops_socket.h, docs/ops-protocol.md). One thread polls
 * the listening socket, a stop eventfd and every connection still being read; each
 * complete request goes to a handler thread (an idle kept one, else a new one), which
 * answers and closes. */
#include "serve/ops_socket.h"

#include "base/clock.h"
#include "base/error_line.h"
#include "base/json_out.h"
#include "base/socket_send.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Connections being read at once; one more is accepted only to be told so. */
#define OPS_READING_MAX 256
/* A handler gives up writing its reply after this long without progress. */
#define OPS_WRITE_STALL_MS 30000
/* Out of descriptors (or memory) to accept with: the listening socket is left out of
 * the poll for this long, so a full backlog does not spin the loop. */
#define OPS_ACCEPT_PAUSE_MS 100

struct ops_connection {
    int fd;
    long uid, pid;
    long long deadline_ms;
    char *buf;
    size_t len, cap;
};

/* A handler thread, kept between requests: once it has answered it waits for the next
 * job (up to OPS_HANDLER_IDLE_MS, then it retires), so a request costs neither a thread
 * start nor what the handler keeps per thread (serve: a store connection with its
 * prepared statements). Guarded by the server's lock. */
struct ops_handler_slot {
    struct ops_server *server;
    bool used;           /* a thread was started and not yet joined */
    bool done;           /* it has retired (joined by the server thread or at stop) */
    bool idle;           /* it waits on wake for its next job */
    struct ops_job *job; /* handed over by dispatch, taken by the thread */
    pthread_cond_t wake;
    pthread_t thread;
};

struct ops_server {
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    dev_t sock_dev; /* the socket file bound, so stop removes only that one */
    ino_t sock_ino;
    uid_t owner;
    int listen_fd;
    int stop_fd; /* eventfd: readable once stop was asked */
    long long accept_paused_until_ms;
    ops_handler_fn handler;
    ops_thread_end_fn thread_end;
    ops_refusal_fn refusal;
    void *ctx;
    pthread_t thread;

    struct ops_connection reading[OPS_READING_MAX];
    size_t reading_count;

    pthread_mutex_t lock; /* guards slots, stopping and refusing */
    bool stopping;        /* idle handler threads retire */
    struct ops_handler_slot slots[OPS_HANDLERS_MAX];
    char refusing[128]; /* ops_server_refuse_new's reason: "" while requests are handled */
};

struct ops_job {
    int fd;
    json_t *request;
};

/* {"ok":false,"exit":exit_status,"error":error} as one line with its newline; malloc'd,
 * or NULL if it cannot be built. */
static char *error_reply_line(int exit_status, const char *error)
{
    json_t *reply = json_pack("{s:b,s:i,s:s}", "ok", 0, "exit", exit_status, "error", error);
    if (reply == NULL) /* error was not UTF-8: say less rather than nothing */
        reply = json_pack("{s:b,s:i,s:s}", "ok", 0, "exit", exit_status, "error",
                          "request refused");
    char *text = reply != NULL ? json_out_dumps(reply, JSON_COMPACT) : NULL;
    json_decref(reply);
    return json_text_as_line(text, NULL);
}

/* Best effort, never blocking: an error reply to a peer about to be closed. It is small
 * and nothing else was written, so it fits the socket's buffer unless the peer is gone. */
static void send_error_now(int fd, int exit_status, const char *error)
{
    char *line = error_reply_line(exit_status, error);
    if (line != NULL) {
        ssize_t n = send(fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)n;
    }
    free(line);
}

static void refuse(struct ops_server *server, const char *what, long uid, long pid)
{
    if (server->refusal != NULL)
        server->refusal(server->ctx, what, uid, pid);
}

/* Writes all of line to the non-blocking fd, giving up after OPS_WRITE_STALL_MS without
 * room; a peer gone away or stalled loses its reply, never the daemon a thread. */
static void write_reply(int fd, const char *line, size_t len)
{
    (void)socket_send_all(fd, line, len, -1, OPS_WRITE_STALL_MS);
}

/* Answers one job: the handler's reply written (the connection is the caller's to
 * close). */
static void answer(struct ops_server *server, const struct ops_job *job)
{
    json_t *reply = server->handler(server->ctx, job->request);
    json_decref(job->request);

    char *text = NULL;
    if (reply != NULL && json_is_object(reply))
        text = json_out_dumps(reply, JSON_COMPACT);
    json_decref(reply);
    char *line = json_text_as_line(text, NULL);
    if (line == NULL) /* compact JSON holds no raw newline, so the line is one line */
        line = error_reply_line(1, "internal error: the request got no reply");
    if (line != NULL)
        write_reply(job->fd, line, strlen(line));
    free(line);
}

static struct timespec monotonic_after_ms(long long ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += (time_t)(ms / 1000);
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* Answers its slot's jobs until it has waited OPS_HANDLER_IDLE_MS for one, or the
 * server stops; then tells the owner (thread_end, on this thread) and returns. */
static void *handler_main(void *arg)
{
    struct ops_handler_slot *slot = arg;
    struct ops_server *server = slot->server;
    pthread_mutex_lock(&server->lock);
    while (slot->job != NULL) {
        struct ops_job *job = slot->job;
        slot->job = NULL;
        pthread_mutex_unlock(&server->lock);
        answer(server, job);
        /* Idle before the close: a client that saw its connection end finds this
         * thread ready for its next request. */
        pthread_mutex_lock(&server->lock);
        slot->idle = true;
        pthread_mutex_unlock(&server->lock);
        close(job->fd);
        free(job);
        pthread_mutex_lock(&server->lock);
        struct timespec until = monotonic_after_ms(OPS_HANDLER_IDLE_MS);
        while (slot->job == NULL && !server->stopping &&
               pthread_cond_timedwait(&slot->wake, &server->lock, &until) != ETIMEDOUT)
            ;
        slot->idle = false;
    }
    pthread_mutex_unlock(&server->lock);
    if (server->thread_end != NULL)
        server->thread_end(server->ctx);
    pthread_mutex_lock(&server->lock);
    slot->done = true;
    pthread_mutex_unlock(&server->lock);
    return NULL;
}

/* Joins the handler threads that have returned, freeing their slots. */
static void reap_handlers(struct ops_server *server)
{
    for (size_t i = 0; i < OPS_HANDLERS_MAX; i++) {
        struct ops_handler_slot *slot = &server->slots[i];
        pthread_mutex_lock(&server->lock);
        bool finished = slot->used && slot->done;
        pthread_mutex_unlock(&server->lock);
        if (finished) {
            pthread_join(slot->thread, NULL);
            slot->used = false;
            slot->done = false;
        }
    }
}

/* Hands a parsed request to a handler thread (taking fd and request), or answers
 * "busy" when OPS_HANDLERS_MAX are running, or the refusal once ops_server_refuse_new
 * was called. */
static void dispatch(struct ops_server *server, int fd, json_t *request, long uid, long pid)
{
    reap_handlers(server);
    char refusing[sizeof server->refusing];
    pthread_mutex_lock(&server->lock);
    memcpy(refusing, server->refusing, sizeof refusing);
    pthread_mutex_unlock(&server->lock);
    if (refusing[0] != '\0') {
        send_error_now(fd, 1, refusing);
        json_decref(request);
        close(fd);
        return;
    }
    struct ops_job *job = malloc(sizeof *job);
    if (job != NULL)
        *job = (struct ops_job){fd, request};
    pthread_mutex_lock(&server->lock);
    struct ops_handler_slot *slot = NULL, *unused = NULL;
    for (size_t i = 0; i < OPS_HANDLERS_MAX && slot == NULL && job != NULL; i++) {
        struct ops_handler_slot *each = &server->slots[i];
        if (each->used && each->idle && each->job == NULL)
            slot = each;
        else if (!each->used && unused == NULL)
            unused = each;
    }
    if (slot != NULL) {
        /* A kept thread takes it. */
        slot->job = job;
        pthread_cond_signal(&slot->wake);
        pthread_mutex_unlock(&server->lock);
        return;
    }
    if (unused != NULL) {
        unused->used = true;
        unused->done = false;
        unused->idle = false;
        unused->job = job;
    }
    pthread_mutex_unlock(&server->lock);
    if (unused == NULL) {
        char what[96];
        if (job != NULL)
            snprintf(what, sizeof what, "busy: %d requests are being handled",
                     OPS_HANDLERS_MAX);
        else
            snprintf(what, sizeof what, "busy: out of memory");
        free(job);
        send_error_now(fd, 1, what);
        refuse(server, what, uid, pid);
        json_decref(request);
        close(fd);
        return;
    }
    /* The server thread blocks every signal, and handler threads inherit that: the
     * daemon's signals go to its main thread. */
    if (pthread_create(&unused->thread, NULL, handler_main, unused) != 0) {
        pthread_mutex_lock(&server->lock);
        unused->used = false;
        unused->job = NULL;
        pthread_mutex_unlock(&server->lock);
        free(job);
        send_error_now(fd, 1, "busy: cannot start a handler thread");
        refuse(server, "busy: cannot start a handler thread", uid, pid);
        json_decref(request);
        close(fd);
    }
}

static void drop_connection(struct ops_server *server, size_t i)
{
    struct ops_connection *c = &server->reading[i];
    free(c->buf);
    server->reading[i] = server->reading[--server->reading_count];
}

/* The complete line of connection i (without its newline): parse and hand it over. */
static void finish_request(struct ops_server *server, size_t i, size_t line_len)
{
    const struct ops_connection *c = &server->reading[i];
    int fd = c->fd;
    long uid = c->uid, pid = c->pid;
    json_error_t jerr;
    json_t *request = json_loadb(c->buf, line_len, JSON_REJECT_DUPLICATES, &jerr);
    drop_connection(server, i);
    if (request == NULL || !json_is_object(request)) {
        char what[256];
        snprintf(what, sizeof what, "request is not a JSON object: %s",
                 request == NULL ? jerr.text : "another JSON value");
        /* jansson quotes the offending bytes: keep the line printable ASCII (and so
         * valid UTF-8 for the reply), whatever the peer sent. */
        for (char *p = what; *p != '\0'; p++)
            if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
                *p = '?';
        json_decref(request);
        send_error_now(fd, 2, what);
        refuse(server, what, uid, pid);
        close(fd);
        return;
    }
    dispatch(server, fd, request, uid, pid);
}

/* Reads what connection i has; may finish or drop it (then i holds another one).
 * Returns true if connection i was removed. */
static bool read_connection(struct ops_server *server, size_t i)
{
    struct ops_connection *c = &server->reading[i];
    for (;;) {
        if (c->len == c->cap) {
            /* One byte past the bound is enough to know a request is over it. */
            size_t cap = c->cap == 0 ? 4096 : c->cap * 2;
            if (cap > OPS_REQUEST_MAX + 1)
                cap = OPS_REQUEST_MAX + 1;
            char *buf = realloc(c->buf, cap);
            if (buf == NULL) {
                send_error_now(c->fd, 1, "busy: out of memory");
                refuse(server, "busy: out of memory reading a request", c->uid, c->pid);
                close(c->fd);
                drop_connection(server, i);
                return true;
            }
            c->buf = buf;
            c->cap = cap;
        }
        ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return false;
        if (n <= 0) {
            /* The peer closed (or broke) before its newline: nothing to answer. An
             * empty connection is a liveness probe, not worth a report. */
            if (c->len > 0)
                refuse(server, "request cut before its newline", c->uid, c->pid);
            close(c->fd);
            drop_connection(server, i);
            return true;
        }
        char *nl = memchr(c->buf + c->len, '\n', (size_t)n);
        c->len += (size_t)n;
        if (nl != NULL && (size_t)(nl - c->buf) <= OPS_REQUEST_MAX) {
            finish_request(server, i, (size_t)(nl - c->buf));
            return true;
        }
        if (c->len > OPS_REQUEST_MAX) {
            char what[64];
            snprintf(what, sizeof what, "request over %u bytes", OPS_REQUEST_MAX);
            send_error_now(c->fd, 2, what);
            refuse(server, what, c->uid, c->pid);
            close(c->fd);
            drop_connection(server, i);
            return true;
        }
    }
}

static void accept_connections(struct ops_server *server)
{
    for (;;) {
        int fd = accept4(server->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                /* EMFILE and the like: the rest wait in the backlog a while. */
                char what[128];
                snprintf(what, sizeof what, "cannot accept a connection: %s",
                         strerror(errno));
                refuse(server, what, -1, -1);
                server->accept_paused_until_ms = monotonic_ms() + OPS_ACCEPT_PAUSE_MS;
            }
            return;
        }
        struct ucred cred;
        socklen_t cred_len = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0 ||
            cred_len != sizeof cred) {
            refuse(server, "peer credentials unreadable", -1, -1);
            close(fd);
            continue;
        }
        if (cred.uid != server->owner) {
            /* Not a byte read from, nor written to, another user. */
            char what[96];
            snprintf(what, sizeof what, "peer uid %ld is not the owner", (long)cred.uid);
            refuse(server, what, (long)cred.uid, (long)cred.pid);
            close(fd);
            continue;
        }
        if (server->reading_count == OPS_READING_MAX) {
            char what[96];
            snprintf(what, sizeof what, "too many connections: %d being read",
                     OPS_READING_MAX);
            send_error_now(fd, 1, what);
            refuse(server, what, (long)cred.uid, (long)cred.pid);
            close(fd);
            continue;
        }
        server->reading[server->reading_count++] = (struct ops_connection){
            .fd = fd,
            .uid = (long)cred.uid,
            .pid = (long)cred.pid,
            .deadline_ms = monotonic_ms() + OPS_REQUEST_TIMEOUT_MS,
        };
    }
}

/* Cuts every connection whose request is late; returns the ms until the next deadline
 * (-1: none). */
static int expire_connections(struct ops_server *server)
{
    long long now = monotonic_ms();
    long long next = -1;
    for (size_t i = 0; i < server->reading_count;) {
        struct ops_connection *c = &server->reading[i];
        if (c->deadline_ms <= now) {
            char what[96];
            snprintf(what, sizeof what, "request not complete within %d ms",
                     OPS_REQUEST_TIMEOUT_MS);
            send_error_now(c->fd, 2, what);
            refuse(server, what, c->uid, c->pid);
            close(c->fd);
            drop_connection(server, i);
            continue;
        }
        if (next < 0 || c->deadline_ms - now < next)
            next = c->deadline_ms - now;
        i++;
    }
    return (int)next;
}

static void *server_main(void *arg)
{
    struct ops_server *server = arg;
    struct pollfd fds[2 + OPS_READING_MAX];
    for (;;) {
        int timeout = expire_connections(server);
        long long pause = server->accept_paused_until_ms - monotonic_ms();
        if (pause > 0 && (timeout < 0 || pause < timeout))
            timeout = (int)pause;
        fds[0] = (struct pollfd){server->stop_fd, POLLIN, 0};
        /* A negative fd is left out by poll. */
        fds[1] = (struct pollfd){pause > 0 ? -1 : server->listen_fd, POLLIN, 0};
        size_t n = server->reading_count;
        for (size_t i = 0; i < n; i++)
            fds[2 + i] = (struct pollfd){server->reading[i].fd, POLLIN, 0};
        int r = poll(fds, 2 + n, timeout);
        if (r < 0 && errno != EINTR)
            break; /* cannot happen with valid arguments; stop serving rather than spin */
        if (r <= 0)
            continue;
        if (fds[0].revents != 0)
            break;
        /* Connections first, from the last: read_connection moves the last one into
         * a removed one's place, which is then one already seen this round. */
        for (size_t i = n; i-- > 0;)
            if (fds[2 + i].revents != 0)
                read_connection(server, i);
        if (fds[1].revents != 0)
            accept_connections(server);
    }
    return NULL;
}

/* The socket file at path is removed only if it is still the one this server bound. */
static void unlink_own_socket(const struct ops_server *server)
{
    struct stat st;
    if (lstat(server->path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == server->sock_dev &&
        st.st_ino == server->sock_ino)
        unlink(server->path);
}

/* home must be a directory (not a link) owned by us with mode 0700: the socket's 0600
 * is then not the only thing keeping other users out. */
static int check_home(const char *home, uid_t owner, char *err, size_t err_cap)
{
    int dir = open(home, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0)
        return error_line(err, err_cap, "ops socket: cannot open data home %s: %s", home,
                          strerror(errno));
    struct stat st;
    int rc = 0;
    if (fstat(dir, &st) != 0)
        rc = error_line(err, err_cap, "ops socket: cannot stat data home %s: %s", home,
                        strerror(errno));
    else if (st.st_uid != owner)
        rc = error_line(err, err_cap,
                        "ops socket: data home %s is owned by uid %u, not uid %u: refused",
                        home, (unsigned)st.st_uid, (unsigned)owner);
    else if ((st.st_mode & 07777) != 0700)
        rc = error_line(err, err_cap,
                        "ops socket: data home %s has mode %04o, not 0700: refused", home,
                        (unsigned)(st.st_mode & 07777));
    close(dir);
    return rc;
}

/* Binds and listens on path, the file 0600 from its creation. */
static int bind_socket(struct ops_server *server, char *err, size_t err_cap)
{
    struct stat st;
    if (lstat(server->path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return error_line(err, err_cap,
                              "ops socket: %s exists and is not a socket: refused",
                              server->path);
        /* A socket left by a dead serve: the caller holds the home's serve lock. */
        if (unlink(server->path) != 0)
            return error_line(err, err_cap, "ops socket: cannot remove stale %s: %s",
                              server->path, strerror(errno));
    } else if (errno != ENOENT) {
        return error_line(err, err_cap, "ops socket: cannot stat %s: %s", server->path,
                          strerror(errno));
    }

    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return error_line(err, err_cap, "ops socket: socket: %s", strerror(errno));
    /* On Linux bind() creates the file with the socket inode's mode less the umask;
     * narrowing the inode first makes the file 0600 (or narrower) from the start,
     * without touching the process-wide umask under other threads. */
    if (fchmod(fd, 0600) != 0) {
        int e = errno;
        close(fd);
        return error_line(err, err_cap, "ops socket: fchmod: %s", strerror(e));
    }
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    memcpy(addr.sun_path, server->path, strlen(server->path) + 1);
    if (bind(fd, (const struct sockaddr *)&addr, sizeof addr) != 0) {
        int e = errno;
        close(fd);
        return error_line(err, err_cap, "ops socket: cannot bind %s: %s", server->path,
                          strerror(e));
    }
    /* Confirm what was made (fail closed if the kernel did otherwise), and give the
     * owner back read and write if a narrow umask took them. */
    char why[64] = "";
    if (lstat(server->path, &st) != 0)
        snprintf(why, sizeof why, "%s", strerror(errno));
    else if (!S_ISSOCK(st.st_mode) || (st.st_mode & 07177) != 0)
        snprintf(why, sizeof why, "mode %04o", (unsigned)(st.st_mode & 07777));
    else if (chmod(server->path, 0600) != 0)
        snprintf(why, sizeof why, "chmod: %s", strerror(errno));
    if (why[0] != '\0') {
        close(fd);
        unlink(server->path);
        return error_line(err, err_cap, "ops socket: %s was not created owner-only (%s)",
                          server->path, why);
    }
    server->sock_dev = st.st_dev;
    server->sock_ino = st.st_ino;
    if (listen(fd, SOMAXCONN) != 0) {
        int e = errno;
        close(fd);
        unlink(server->path);
        return error_line(err, err_cap, "ops socket: listen: %s", strerror(e));
    }
    server->listen_fd = fd;
    return 0;
}

static void destroy_slots(struct ops_server *server, size_t count)
{
    for (size_t i = 0; i < count; i++)
        pthread_cond_destroy(&server->slots[i].wake);
}

/* Each slot's condition variable waits on the monotonic clock (the idle bound). */
static int init_slots(struct ops_server *server)
{
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        return -1;
    int rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    size_t made = 0;
    for (; rc == 0 && made < OPS_HANDLERS_MAX; made++) {
        server->slots[made].server = server;
        rc = pthread_cond_init(&server->slots[made].wake, &attr);
    }
    pthread_condattr_destroy(&attr);
    if (rc != 0) {
        destroy_slots(server, made == 0 ? 0 : made - 1);
        return -1;
    }
    return 0;
}

struct ops_server *ops_server_start(const char *home, ops_handler_fn handler,
                                    ops_thread_end_fn thread_end, ops_refusal_fn refusal,
                                    void *ctx, char *err, size_t err_cap)
{
    if (home == NULL || handler == NULL) {
        error_line(err, err_cap, "ops socket: no data home or handler");
        return NULL;
    }
    struct ops_server *server = calloc(1, sizeof *server);
    if (server == NULL) {
        error_line(err, err_cap, "ops socket: out of memory");
        return NULL;
    }
    server->listen_fd = -1;
    server->stop_fd = -1;
    server->owner = geteuid();
    server->handler = handler;
    server->thread_end = thread_end;
    server->refusal = refusal;
    server->ctx = ctx;
    int len = snprintf(server->path, sizeof server->path, "%s/%s", home, OPS_SOCKET_NAME);
    if (len < 0 || (size_t)len >= sizeof server->path) {
        error_line(err, err_cap,
                   "ops socket: path %s/%s is too long for a Unix socket (at most %zu bytes)",
                   home, OPS_SOCKET_NAME, sizeof server->path - 1);
        free(server);
        return NULL;
    }
    if (check_home(home, server->owner, err, err_cap) != 0 ||
        bind_socket(server, err, err_cap) != 0) {
        free(server);
        return NULL;
    }
    server->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (server->stop_fd < 0) {
        error_line(err, err_cap, "ops socket: eventfd: %s", strerror(errno));
        goto fail;
    }
    if (pthread_mutex_init(&server->lock, NULL) != 0) {
        error_line(err, err_cap, "ops socket: cannot make a mutex");
        goto fail;
    }
    if (init_slots(server) != 0) {
        pthread_mutex_destroy(&server->lock);
        error_line(err, err_cap, "ops socket: cannot make the handlers' condition variables");
        goto fail;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&server->thread, NULL, server_main, server);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        destroy_slots(server, OPS_HANDLERS_MAX);
        pthread_mutex_destroy(&server->lock);
        error_line(err, err_cap, "ops socket: cannot start its thread: %s", strerror(rc));
        goto fail;
    }
    return server;

fail:
    if (server->stop_fd >= 0)
        close(server->stop_fd);
    close(server->listen_fd);
    unlink_own_socket(server);
    free(server);
    return NULL;
}

void ops_server_refuse_new(struct ops_server *server, const char *why)
{
    if (server == NULL)
        return;
    pthread_mutex_lock(&server->lock);
    snprintf(server->refusing, sizeof server->refusing, "%s", why);
    pthread_mutex_unlock(&server->lock);
}

/* At the stop, with the server thread gone and the socket file removed: every client
 * still connected or waiting in the backlog gets the refusal line (or "serve is
 * stopping" if none was set) before its connection closes, never a bare reset. */
static void refuse_the_rest(struct ops_server *server)
{
    const char *why = server->refusing[0] != '\0' ? server->refusing : "serve is stopping";
    for (;;) {
        int fd = accept4(server->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            break;
        }
        struct ucred cred;
        socklen_t cred_len = sizeof cred;
        /* Still nothing written to another user. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) == 0 &&
            cred_len == sizeof cred && cred.uid == server->owner)
            send_error_now(fd, 1, why);
        close(fd);
    }
    while (server->reading_count > 0) {
        send_error_now(server->reading[0].fd, 1, why);
        close(server->reading[0].fd);
        drop_connection(server, 0);
    }
}

void ops_server_stop(struct ops_server *server)
{
    if (server == NULL)
        return;
    uint64_t one = 1;
    while (write(server->stop_fd, &one, sizeof one) < 0 && errno == EINTR)
        ;
    pthread_join(server->thread, NULL);

    /* Stop accepting: the file goes first, so no new client finds it; those that did
     * are answered. */
    unlink_own_socket(server);
    refuse_the_rest(server);
    close(server->listen_fd);
    /* Idle handler threads retire now; busy ones once their handler returned. */
    pthread_mutex_lock(&server->lock);
    server->stopping = true;
    for (size_t i = 0; i < OPS_HANDLERS_MAX; i++)
        pthread_cond_signal(&server->slots[i].wake);
    pthread_mutex_unlock(&server->lock);
    for (size_t i = 0; i < OPS_HANDLERS_MAX; i++)
        if (server->slots[i].used)
            pthread_join(server->slots[i].thread, NULL);
    destroy_slots(server, OPS_HANDLERS_MAX);
    pthread_mutex_destroy(&server->lock);
    close(server->stop_fd);
    free(server);
}
