/* The ops socket's server (serve/ops_socket.h, docs/ops-protocol.md). One thread polls
 * the listening socket, a stop eventfd, a wake eventfd and every open connection; each
 * complete request line goes to a handler thread (an idle kept one, else a new one).
 * A connection carries many requests: its replies are written in the order its
 * requests came, by whichever of its handlers finds the next one ready. */
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

/* Connections open at once; one more is accepted only to be told so. */
#define OPS_READING_MAX 256
/* A handler gives up writing its reply after this long without progress. */
#define OPS_WRITE_STALL_MS 30000
/* Out of descriptors (or memory) to accept with: the listening socket is left out of
 * the poll for this long, so a full backlog does not spin the loop. */
#define OPS_ACCEPT_PAUSE_MS 100

/* One client's connection. The server thread alone reads it (the fields above mu);
 * the replies its requests are owed are written in request order by their handlers
 * (the fields under mu). Freed, and its fd closed, when the last of its holders lets
 * go: the server's table while it is read, and each of its jobs. */
struct ops_connection {
    int fd;
    long uid, pid;
    long long request_start_ms; /* the request being read is late after this + timeout */
    char *buf;                  /* bytes read and not yet taken as requests */
    size_t len, cap, scanned;   /* scanned: the first bytes of buf hold no newline */
    bool taken_one;             /* a request was taken: waiting for the next is idling */

    pthread_mutex_t mu;
    unsigned holders;
    bool in_table;                 /* the server thread still reads it */
    uint64_t next_place;           /* the place in the reply order of the next request */
    uint64_t next_write;           /* the place of the reply to write next */
    char *ready[OPS_PIPELINE_MAX]; /* replies done before their turn, by place % max */
    bool writing;                  /* a holder is writing the replies in turn */
    bool broken;                   /* a write failed or stalled: the rest are dropped */
    long long owed_none_since_ms;  /* when its last owed reply was written */
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
    int wake_fd; /* eventfd: a connection's owed replies went down (resume, idle clock) */
    long long accept_paused_until_ms;
    ops_handler_fn handler;
    ops_thread_end_fn thread_end;
    ops_refusal_fn refusal;
    void *ctx;
    pthread_t thread;

    struct ops_connection *reading[OPS_READING_MAX];
    size_t reading_count;

    pthread_mutex_t lock; /* guards slots, stopping and refusing */
    bool stopping;        /* idle handler threads retire */
    struct ops_handler_slot slots[OPS_HANDLERS_MAX];
    char refusing[128]; /* ops_server_refuse_new's reason: "" while requests are handled */
};

struct ops_job {
    struct ops_connection *conn; /* held by the job */
    uint64_t place;              /* its reply's place in the connection's order */
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

/* Best effort, never blocking: an error reply to a peer about to be closed that owes
 * it nothing else. It is small and nothing else is being written, so it fits the
 * socket's buffer unless the peer is gone. */
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

static void wake_server(struct ops_server *server)
{
    uint64_t one = 1;
    while (write(server->wake_fd, &one, sizeof one) < 0 && errno == EINTR)
        ;
}

/* ------------------------------------------------------------ connections */

/* A place done without a line to write (none could be made): from there on the
 * connection is broken, since a reply missing from the order would misanswer. */
static char no_reply_line[1];

static struct ops_connection *connection_new(int fd, long uid, long pid)
{
    struct ops_connection *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c);
        return NULL;
    }
    c->fd = fd;
    c->uid = uid;
    c->pid = pid;
    c->request_start_ms = monotonic_ms();
    c->holders = 1;
    c->in_table = true;
    return c;
}

/* One holder lets go; the last closes the fd and frees the connection. */
static void connection_release(struct ops_connection *c)
{
    pthread_mutex_lock(&c->mu);
    bool last = --c->holders == 0;
    pthread_mutex_unlock(&c->mu);
    if (!last)
        return;
    for (size_t i = 0; i < OPS_PIPELINE_MAX; i++) /* none left once every holder is done */
        if (c->ready[i] != no_reply_line)
            free(c->ready[i]);
    close(c->fd);
    pthread_mutex_destroy(&c->mu);
    free(c->buf);
    free(c);
}

/* Replies owed (requests taken whose reply is not yet written). */
static uint64_t connection_owed(struct ops_connection *c)
{
    pthread_mutex_lock(&c->mu);
    uint64_t owed = c->next_place - c->next_write;
    pthread_mutex_unlock(&c->mu);
    return owed;
}

/* The next place in c's reply order, for a request just taken. */
static uint64_t connection_take_place(struct ops_connection *c)
{
    pthread_mutex_lock(&c->mu);
    uint64_t place = c->next_place++;
    pthread_mutex_unlock(&c->mu);
    return place;
}

/* The reply line for place (malloc'd and taken; NULL: none could be made): written now
 * if its turn has come and nobody else is writing, with every later one already done,
 * else left for the holder writing the one before it. stall_ms bounds each wait for
 * room (0 on the server thread: it never waits, and it only ever writes its own small
 * error line, the last one owed, into an empty socket buffer). */
static void connection_deliver(struct ops_server *server, struct ops_connection *c,
                               uint64_t place, char *line, int stall_ms)
{
    pthread_mutex_lock(&c->mu);
    c->ready[place % OPS_PIPELINE_MAX] = line != NULL ? line : no_reply_line;
    if (c->writing || c->next_write != place) {
        pthread_mutex_unlock(&c->mu);
        return;
    }
    c->writing = true;
    char *next;
    while ((next = c->ready[c->next_write % OPS_PIPELINE_MAX]) != NULL) {
        c->ready[c->next_write % OPS_PIPELINE_MAX] = NULL;
        bool broken = c->broken || next == no_reply_line;
        pthread_mutex_unlock(&c->mu);
        bool sent = !broken &&
                    socket_send_all(c->fd, next, strlen(next), -1, stall_ms) == SOCKET_SENT;
        if (next != no_reply_line)
            free(next);
        pthread_mutex_lock(&c->mu);
        if (!sent) /* a peer gone or stalled, or a part sent: the rest is dropped */
            c->broken = true;
        c->next_write++;
    }
    c->writing = false;
    if (c->next_write == c->next_place)
        c->owed_none_since_ms = monotonic_ms();
    /* The server thread may be waiting for fewer owed replies (to read again) or for
     * none (the idle clock): it looks again. */
    bool tell = c->in_table;
    pthread_mutex_unlock(&c->mu);
    if (tell)
        wake_server(server);
}

/* ------------------------------------------------------------ handlers */

/* The handler's reply to a job's request as one line with its newline (malloc'd; NULL
 * if not even an error line could be made). */
static char *reply_line(struct ops_server *server, json_t *request)
{
    json_t *reply = server->handler(server->ctx, request);
    char *text = NULL;
    if (reply != NULL && json_is_object(reply))
        text = json_out_dumps(reply, JSON_COMPACT);
    json_decref(reply);
    char *line = json_text_as_line(text, NULL);
    if (line == NULL) /* compact JSON holds no raw newline, so the line is one line */
        line = error_reply_line(1, "internal error: the request got no reply");
    return line;
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
        char *line = reply_line(server, job->request);
        json_decref(job->request);
        connection_deliver(server, job->conn, job->place, line, OPS_WRITE_STALL_MS);
        /* Idle before letting go of the connection (which may close it): a client that
         * saw its connection end finds this thread ready for its next request. */
        pthread_mutex_lock(&server->lock);
        slot->idle = true;
        pthread_mutex_unlock(&server->lock);
        connection_release(job->conn);
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

/* ------------------------------------------------------------ the server thread */

/* Connection i leaves the table: nothing more is read from it; its fd closes once the
 * replies it is owed are written (or at once if none are). */
static void drop_connection(struct ops_server *server, size_t i)
{
    struct ops_connection *c = server->reading[i];
    server->reading[i] = server->reading[--server->reading_count];
    pthread_mutex_lock(&c->mu);
    c->in_table = false;
    pthread_mutex_unlock(&c->mu);
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = c->scanned = 0;
    connection_release(c);
}

/* An error reply in connection i's order (a request's place, or the next one), after
 * which the connection is dropped when close_after. Written at once when nothing is
 * owed before it, else by the handler writing the reply before it. */
static void answer_error(struct ops_server *server, size_t i, uint64_t place, int exit_status,
                         const char *error, bool close_after)
{
    struct ops_connection *c = server->reading[i];
    connection_deliver(server, c, place, error_reply_line(exit_status, error), 0);
    if (close_after)
        drop_connection(server, i);
}

/* Hands request (taken) to a handler thread with its place in connection i's order, or
 * answers "busy" when OPS_HANDLERS_MAX are running, or the refusal (then the
 * connection is dropped) once ops_server_refuse_new was called. Returns true if
 * connection i was dropped. */
static bool dispatch(struct ops_server *server, size_t i, json_t *request)
{
    struct ops_connection *c = server->reading[i];
    uint64_t place = connection_take_place(c);
    reap_handlers(server);
    char refusing[sizeof server->refusing];
    pthread_mutex_lock(&server->lock);
    memcpy(refusing, server->refusing, sizeof refusing);
    pthread_mutex_unlock(&server->lock);
    if (refusing[0] != '\0') {
        json_decref(request);
        answer_error(server, i, place, 1, refusing, true);
        return true;
    }
    struct ops_job *job = malloc(sizeof *job);
    if (job != NULL)
        *job = (struct ops_job){c, place, request};
    pthread_mutex_lock(&server->lock);
    struct ops_handler_slot *slot = NULL, *unused = NULL;
    for (size_t k = 0; k < OPS_HANDLERS_MAX && slot == NULL && job != NULL; k++) {
        struct ops_handler_slot *each = &server->slots[k];
        if (each->used && each->idle && each->job == NULL)
            slot = each;
        else if (!each->used && unused == NULL)
            unused = each;
    }
    if (slot != NULL || unused != NULL) {
        pthread_mutex_lock(&c->mu);
        c->holders++; /* the job's */
        pthread_mutex_unlock(&c->mu);
    }
    if (slot != NULL) {
        /* A kept thread takes it. */
        slot->job = job;
        pthread_cond_signal(&slot->wake);
        pthread_mutex_unlock(&server->lock);
        return false;
    }
    if (unused != NULL) {
        unused->used = true;
        unused->done = false;
        unused->idle = false;
        unused->job = job;
    }
    pthread_mutex_unlock(&server->lock);
    char busy_text[96];
    snprintf(busy_text, sizeof busy_text, "busy: %d requests are being handled",
             OPS_HANDLERS_MAX);
    const char *busy = NULL;
    if (unused == NULL) {
        busy = job != NULL ? busy_text : "busy: out of memory";
    } else if (pthread_create(&unused->thread, NULL, handler_main, unused) != 0) {
        /* The server thread blocks every signal, and handler threads inherit that: the
         * daemon's signals go to its main thread. */
        pthread_mutex_lock(&server->lock);
        unused->used = false;
        unused->job = NULL;
        pthread_mutex_unlock(&server->lock);
        connection_release(c); /* the job's, never the last: the table holds c */
        busy = "busy: cannot start a handler thread";
    }
    if (busy == NULL)
        return false;
    free(job);
    json_decref(request);
    refuse(server, busy, c->uid, c->pid);
    answer_error(server, i, place, 1, busy, false);
    return false;
}

static bool refuse_oversized(struct ops_server *server, size_t i)
{
    struct ops_connection *c = server->reading[i];
    char what[64];
    snprintf(what, sizeof what, "request over %u bytes", OPS_REQUEST_MAX);
    refuse(server, what, c->uid, c->pid);
    answer_error(server, i, connection_take_place(c), 2, what, true);
    return true;
}

/* Takes the complete request lines at the front of connection i's buffer while fewer
 * than OPS_PIPELINE_MAX replies are owed. Returns true if connection i was dropped (a
 * line that is not a JSON object, or the refusal). */
static bool take_requests(struct ops_server *server, size_t i)
{
    struct ops_connection *c = server->reading[i];
    for (;;) {
        if (c->scanned == c->len || connection_owed(c) >= OPS_PIPELINE_MAX)
            return false;
        char *nl = memchr(c->buf + c->scanned, '\n', c->len - c->scanned);
        if (nl == NULL) {
            c->scanned = c->len;
            return false;
        }
        size_t line_len = (size_t)(nl - c->buf);
        if (line_len > OPS_REQUEST_MAX)
            return refuse_oversized(server, i);
        c->taken_one = true;
        json_error_t jerr;
        json_t *request = json_loadb(c->buf, line_len, JSON_REJECT_DUPLICATES, &jerr);
        c->len -= line_len + 1;
        memmove(c->buf, nl + 1, c->len);
        c->scanned = 0;
        c->request_start_ms = monotonic_ms(); /* the next request's clock, if begun */
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
            refuse(server, what, c->uid, c->pid);
            answer_error(server, i, connection_take_place(c), 2, what, true);
            return true;
        }
        if (dispatch(server, i, request))
            return true;
    }
}

/* Takes connection i's complete requests, then reads what it has, while fewer than
 * OPS_PIPELINE_MAX replies are owed; may drop it (then i holds another one). Requests
 * are taken before each read, so the peer's end is only seen once every complete
 * request before it was taken: what it sent is answered, not dropped with it. */
static void read_connection(struct ops_server *server, size_t i)
{
    struct ops_connection *c = server->reading[i];
    for (;;) {
        if (take_requests(server, i))
            return;
        if (connection_owed(c) >= OPS_PIPELINE_MAX)
            return; /* the rest waits in the buffer and the socket */
        if (c->len > OPS_REQUEST_MAX) { /* no newline within the bound (take_requests) */
            refuse_oversized(server, i);
            return;
        }
        if (c->len == c->cap) {
            /* One byte past the bound is enough to know a request is over it. */
            size_t cap = c->cap == 0 ? 4096 : c->cap * 2;
            if (cap > OPS_REQUEST_MAX + 1)
                cap = OPS_REQUEST_MAX + 1;
            char *buf = realloc(c->buf, cap);
            if (buf == NULL) {
                refuse(server, "busy: out of memory reading a request", c->uid, c->pid);
                answer_error(server, i, connection_take_place(c), 1, "busy: out of memory",
                             true);
                return;
            }
            c->buf = buf;
            c->cap = cap;
        }
        ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            /* The peer closed (or broke): the owed replies are still written. A part of
             * a request is reported; an empty connection is a liveness probe. */
            if (c->len > 0)
                refuse(server, "request cut before its newline", c->uid, c->pid);
            drop_connection(server, i);
            return;
        }
        if (c->len == 0 && c->taken_one) /* a later request's clock starts at its first byte */
            c->request_start_ms = monotonic_ms();
        c->len += (size_t)n;
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
        struct ops_connection *c = server->reading_count < OPS_READING_MAX
                                       ? connection_new(fd, (long)cred.uid, (long)cred.pid)
                                       : NULL;
        if (c == NULL) {
            char what[96];
            if (server->reading_count == OPS_READING_MAX)
                snprintf(what, sizeof what, "too many connections: %d open",
                         OPS_READING_MAX);
            else
                snprintf(what, sizeof what, "busy: out of memory");
            send_error_now(fd, 1, what);
            refuse(server, what, (long)cred.uid, (long)cred.pid);
            close(fd);
            continue;
        }
        server->reading[server->reading_count++] = c;
    }
}

/* When connection c is next due (monotonic ms; -1: nothing due), and whether that is a
 * late request (else an idle close). Nothing is due while replies are owed and no
 * request is being read, nor while it waits for owed replies to take what it sent. */
static long long connection_due(struct ops_connection *c, bool *late)
{
    pthread_mutex_lock(&c->mu);
    uint64_t owed = c->next_place - c->next_write;
    long long none_since = c->owed_none_since_ms;
    pthread_mutex_unlock(&c->mu);
    *late = true;
    if (owed >= OPS_PIPELINE_MAX)
        return -1;
    if (c->len > 0 || !c->taken_one)
        return c->request_start_ms + OPS_REQUEST_TIMEOUT_MS;
    if (owed > 0)
        return -1;
    *late = false;
    return none_since + OPS_CONNECTION_IDLE_MS;
}

/* Cuts every connection whose request is late (with an error reply) and closes every
 * one idle too long (silently); returns the ms until the next is due (-1: none). */
static int expire_connections(struct ops_server *server)
{
    long long now = monotonic_ms();
    long long next = -1;
    for (size_t i = 0; i < server->reading_count;) {
        struct ops_connection *c = server->reading[i];
        bool late;
        long long due = connection_due(c, &late);
        if (due >= 0 && due <= now) {
            if (late) {
                char what[96];
                snprintf(what, sizeof what, "request not complete within %d ms",
                         OPS_REQUEST_TIMEOUT_MS);
                refuse(server, what, c->uid, c->pid);
                answer_error(server, i, connection_take_place(c), 2, what, true);
            } else {
                drop_connection(server, i);
            }
            continue;
        }
        if (due >= 0 && (next < 0 || due - now < next))
            next = due - now;
        i++;
    }
    return next > 0x7fffffff ? 0x7fffffff : (int)next;
}

static void *server_main(void *arg)
{
    struct ops_server *server = arg;
    struct pollfd fds[3 + OPS_READING_MAX];
    for (;;) {
        /* Requests left waiting for owed replies are taken once those are written. */
        for (size_t i = server->reading_count; i-- > 0;)
            take_requests(server, i);
        int timeout = expire_connections(server);
        long long pause = server->accept_paused_until_ms - monotonic_ms();
        if (pause > 0 && (timeout < 0 || pause < timeout))
            timeout = (int)pause;
        fds[0] = (struct pollfd){server->stop_fd, POLLIN, 0};
        fds[1] = (struct pollfd){server->wake_fd, POLLIN, 0};
        /* A negative fd is left out by poll. */
        fds[2] = (struct pollfd){pause > 0 ? -1 : server->listen_fd, POLLIN, 0};
        size_t n = server->reading_count;
        for (size_t i = 0; i < n; i++) {
            struct ops_connection *c = server->reading[i];
            bool full = connection_owed(c) >= OPS_PIPELINE_MAX;
            fds[3 + i] = (struct pollfd){full ? -1 : c->fd, POLLIN, 0};
        }
        int r = poll(fds, 3 + n, timeout);
        if (r < 0 && errno != EINTR)
            break; /* cannot happen with valid arguments; stop serving rather than spin */
        if (r <= 0)
            continue;
        if (fds[0].revents != 0)
            break;
        if (fds[1].revents != 0) {
            uint64_t count;
            ssize_t got = read(server->wake_fd, &count, sizeof count);
            (void)got;
        }
        /* Connections from the last: dropping one moves the last into its place,
         * which is then one already seen this round. */
        for (size_t i = n; i-- > 0;)
            if (fds[3 + i].revents != 0)
                read_connection(server, i);
        if (fds[2].revents != 0)
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
    server->wake_fd = -1;
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
    server->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (server->stop_fd < 0 || server->wake_fd < 0) {
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
    if (server->wake_fd >= 0)
        close(server->wake_fd);
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
 * stopping" if none was set), after the replies it is still owed, before its
 * connection closes, never a bare reset. */
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
    while (server->reading_count > 0)
        answer_error(server, 0, connection_take_place(server->reading[0]), 1, why, true);
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
    close(server->wake_fd);
    free(server);
}
