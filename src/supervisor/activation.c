#include "supervisor/activation.h"

#include "base/clock.h"
#include "base/json_text.h"
#include "base/position_search.h"
#include "supervisor/colocate.h"
#include "proto/utf8.h"

#include "proto/channel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/uio.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long a worker whose stdout ended gets to exit before it is killed. */
#define DEATH_REAP_MS 2000

static void set_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        (void)fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static char *dup_text(const struct proto_text *t)
{
    char *s = malloc(t->len + 1);
    if (s != NULL) {
        if (t->len > 0)
            memcpy(s, t->str, t->len);
        s[t->len] = '\0';
    }
    return s;
}

/* ------------------------------------------------------------------ the connection */

void worker_conn_init(struct worker_conn *w, const struct worker_proc *proc)
{
    memset(w, 0, sizeof *w);
    /* The parent must never die because a worker did: a write to a dead worker's
     * stdin gives EPIPE, handled like the end of its stdout. */
    signal(SIGPIPE, SIG_IGN);
    w->proc = *proc;
    channel_init(&w->channel, w->proc.from_worker);
    set_nonblocking(w->proc.to_worker);
    if (w->proc.worker_log >= 0)
        set_nonblocking(w->proc.worker_log);
    wire_buf_init(&w->out);
}

bool worker_conn_alive(const struct worker_conn *w)
{
    return w->proc.pid > 0;
}

void worker_conn_drain_log(struct worker_conn *w)
{
    char chunk[4096];
    while (w->proc.worker_log >= 0) {
        ssize_t n = read(w->proc.worker_log, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0) { /* the worker closed stderr (or died): stop polling it */
            close(w->proc.worker_log);
            w->proc.worker_log = -1;
            break;
        }
        if (n < 0)
            break; /* EAGAIN: nothing more for now */
        /* Keep the tail: the last WORKER_LOG_TAIL - 1 bytes. */
        size_t add = (size_t)n;
        size_t cap = sizeof w->log - 1;
        if (add >= cap) {
            memcpy(w->log, chunk + add - cap, cap);
            w->log_len = cap;
        } else {
            if (w->log_len + add > cap) {
                size_t drop = w->log_len + add - cap;
                memmove(w->log, w->log + drop, w->log_len - drop);
                w->log_len -= drop;
            }
            memcpy(w->log + w->log_len, chunk, add);
            w->log_len += add;
        }
        w->log[w->log_len] = '\0';
    }
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

void worker_conn_free(struct worker_conn *w)
{
    channel_free(&w->channel);
    wire_buf_free(&w->out);
    close_fd(&w->proc.to_worker);
    close_fd(&w->proc.from_worker);
    close_fd(&w->proc.worker_log);
}

/* Waits up to timeout_ms for the worker to exit on its own, then SIGKILLs it; reaps
 * it either way. Does not close its pipes. */
static struct worker_end reap_worker_within(struct worker_conn *w, int timeout_ms)
{
    struct worker_end end = {0, false};
    if (w->proc.pid <= 0)
        return end;
    end.wait_status = reap_within(w->proc.pid, timeout_ms, &end.killed);
    w->proc.pid = -1;
    return end;
}

struct worker_end worker_conn_kill(struct worker_conn *w)
{
    struct worker_end end = {0, false};
    if (w->proc.pid > 0) {
        kill(w->proc.pid, SIGKILL);
        end.killed = true;
        int status = 0;
        while (waitpid(w->proc.pid, &status, 0) < 0 && errno == EINTR) {
        }
        end.wait_status = status;
        w->proc.pid = -1;
    }
    worker_conn_drain_log(w);
    worker_conn_free(w);
    return end;
}

struct worker_end worker_conn_shutdown(struct worker_conn *w, int timeout_ms)
{
    if (w->proc.pid > 0 && w->proc.to_worker >= 0) {
        /* Shutdown is one tiny frame: it fits in the pipe unless the worker stopped
         * reading, and then closing stdin below is the same request. */
        struct proto_msg msg;
        memset(&msg, 0, sizeof msg);
        msg.tag = PROTO_SHUTDOWN;
        if (proto_encode(&msg, &w->out) == PROTO_OK && w->out.len <= 8) {
            uint8_t frame[PROTO_FRAME_HEADER_BYTES + 8];
            frame_header_encode((uint32_t)w->out.len, frame);
            memcpy(frame + PROTO_FRAME_HEADER_BYTES, w->out.data, w->out.len);
            (void)!write(w->proc.to_worker, frame, PROTO_FRAME_HEADER_BYTES + w->out.len);
        }
    }
    close_fd(&w->proc.to_worker);
    struct worker_end end = reap_worker_within(w, timeout_ms);
    worker_conn_drain_log(w);
    worker_conn_free(w);
    return end;
}

/* ------------------------------------------------------------------ requests and names */

void activation_request_defaults(struct activation_request *req, enum proto_profile profile)
{
    req->profile = profile;
    req->keep_placement = false;
    if (profile == PROTO_PROFILE_CODEMODE) {
        req->budgets.cpu_ms = CODEMODE_CPU_MS;
        req->budgets.heap_bytes = CODEMODE_HEAP_BYTES;
        req->budgets.stack_bytes = CODEMODE_STACK_BYTES;
        req->budgets.max_value_bytes = CODEMODE_MAX_VALUE_BYTES;
        req->deadline_ms = CODEMODE_DEADLINE_MS;
        req->max_host_calls = CODEMODE_MAX_HOST_CALLS;
    } else {
        req->budgets.cpu_ms = FLOW_CPU_MS;
        req->budgets.heap_bytes = FLOW_HEAP_BYTES;
        req->budgets.stack_bytes = FLOW_STACK_BYTES;
        req->budgets.max_value_bytes = FLOW_MAX_VALUE_BYTES;
        req->deadline_ms = FLOW_DEADLINE_MS;
        req->max_host_calls = 0;
    }
}

const char *activation_status_name(enum activation_status status)
{
    switch (status) {
    case ACTIVATION_COMPLETED: return "completed";
    case ACTIVATION_FAILED: return "failed";
    case ACTIVATION_SUSPENDED: return "suspended";
    case ACTIVATION_STALLED: return "stalled";
    case ACTIVATION_BUDGET_EXHAUSTED: return "budget_exhausted";
    case ACTIVATION_DEADLINE: return "deadline";
    case ACTIVATION_WORKER_CRASHED: return "worker_crashed";
    case ACTIVATION_PROTOCOL_ERROR: return "protocol_error";
    case ACTIVATION_NO_WORKER: return "no_worker";
    }
    return "unknown";
}

const char *activation_signal_name(int sig)
{
    static _Thread_local char name[32];
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev == NULL)
        snprintf(name, sizeof name, "signal %d", sig);
    else
        snprintf(name, sizeof name, "SIG%s", abbrev);
    return name;
}

/* Failure kinds a script (or its trigger) causes by itself, on an intact engine. The
 * worker's own "engine_error" and "protocol_error" are not among them. */
static const char *const SCRIPT_FAILURE_KINDS[] = {
    "script_error",     "syntax_error",   "unserializable_result",
    "result_too_large", "nondeterminism", "invalid_trigger",
};

bool activation_keeps_worker(const struct activation_outcome *out)
{
    if (out->wrote_after_finished)
        return false;
    switch (out->status) {
    case ACTIVATION_COMPLETED:
    case ACTIVATION_STALLED:
    case ACTIVATION_SUSPENDED:
        return !out->worker_ended;
    case ACTIVATION_FAILED:
        if (out->worker_ended || out->failure_kind == NULL)
            return false;
        for (size_t i = 0; i < sizeof SCRIPT_FAILURE_KINDS / sizeof SCRIPT_FAILURE_KINDS[0]; i++)
            if (strcmp(out->failure_kind, SCRIPT_FAILURE_KINDS[i]) == 0)
                return true;
        return false;
    default:
        return false;
    }
}

/* Where a script or syntax error was raised: the position of the first frame of its
 * stack ("    at f (NAME:3:7)" or "    at NAME:2:9" gives "NAME:3:7", "NAME:2:9"), into
 * where (empty when the detail has none). */
static void error_location(const char *detail, char *where, size_t cap)
{
    where[0] = '\0';
    const char *frame = detail != NULL ? strstr(detail, "\n    at ") : NULL;
    if (frame == NULL)
        return;
    frame += strlen("\n    at ");
    size_t len = strcspn(frame, "\r\n");
    const char *open = memchr(frame, '(', len);
    if (open != NULL && len > 0 && frame[len - 1] == ')') {
        len -= (size_t)(open + 1 - frame) + 1;
        frame = open + 1;
    }
    snprintf(where, cap, "%.*s", (int)len, frame);
}

void activation_describe(const struct activation_outcome *out, char *buf, size_t cap)
{
    /* One line: a detail's first line only (a script error's stack follows it). */
    char detail[512];
    snprintf(detail, sizeof detail, "%s", out->detail != NULL ? out->detail : "");
    detail[strcspn(detail, "\r\n")] = '\0';
    switch (out->status) {
    case ACTIVATION_COMPLETED:
        snprintf(buf, cap, "%s", out->value != NULL ? out->value : "null");
        return;
    case ACTIVATION_FAILED: {
        /* "script_error" reads "script error: <detail>". */
        char kind[128];
        snprintf(kind, sizeof kind, "%s", out->failure_kind != NULL ? out->failure_kind : "failed");
        for (char *c = kind; *c != '\0'; c++)
            if (*c == '_')
                *c = ' ';
        char where[256] = "";
        if (strcmp(kind, "script error") == 0 || strcmp(kind, "syntax error") == 0)
            error_location(out->detail, where, sizeof where);
        if (detail[0] != '\0' && where[0] != '\0')
            snprintf(buf, cap, "%s: %s (%s)", kind, detail, where);
        else if (detail[0] != '\0')
            snprintf(buf, cap, "%s: %s", kind, detail);
        else
            snprintf(buf, cap, "%s", kind);
        return;
    }
    case ACTIVATION_SUSPENDED:
        snprintf(buf, cap, "suspended");
        return;
    case ACTIVATION_STALLED:
        snprintf(buf, cap, "stalled");
        return;
    case ACTIVATION_BUDGET_EXHAUSTED:
        snprintf(buf, cap, "budget exhausted: %s", proto_budget_name(out->budget));
        return;
    case ACTIVATION_DEADLINE:
        snprintf(buf, cap, "deadline");
        return;
    case ACTIVATION_WORKER_CRASHED:
        if (out->term_signal > 0)
            snprintf(buf, cap, "worker crashed: %s", activation_signal_name(out->term_signal));
        else
            snprintf(buf, cap, "worker crashed: exit status %d", out->exit_status);
        return;
    case ACTIVATION_PROTOCOL_ERROR:
        snprintf(buf, cap, "protocol error: %s", detail);
        return;
    case ACTIVATION_NO_WORKER:
        snprintf(buf, cap, "no worker: %s", detail);
        return;
    }
    snprintf(buf, cap, "unknown outcome");
}

void activation_outcome_free(struct activation_outcome *out)
{
    free(out->value);
    free(out->failure_kind);
    free(out->detail);
    free(out->console);
    free(out->worker_log);
    out->value = out->failure_kind = out->detail = out->console = out->worker_log = NULL;
}

/* ------------------------------------------------------------------ the run */

/* An async call settled by the host and not yet released to the worker. */
struct pending {
    uint32_t position;
    long long due_ms;
    struct host_settlement settlement;
    char *kind; /* the call's, for the host's delivered() */
    char *args;
    size_t args_len;
    size_t bytes; /* kind, arguments and settlement: counted against the outstanding cap */
};

/* A position outstanding (or released: gone) in the order the calls came, which is
 * ascending: Blocked looks its entries up by binary search, and marks each as seen in
 * this Blocked to refuse a duplicate, so a Blocked costs its own length times log n,
 * not its length times the outstanding calls. */
struct slot {
    uint32_t position;
    uint32_t seen; /* the stamp of the last Blocked that named it */
    bool gone;
};

struct run {
    struct worker_conn *w;
    const struct activation_request *req;
    const struct host *host;
    struct activation_outcome *out;
    long long started_ms;
    long long deadline_ms; /* absolute, monotonic */
    uint32_t next_position;
    uint32_t next_order;
    bool blocked;
    /* The prefix's positions, ascending, and how many lie below next_position. */
    uint32_t *prefix_positions;
    size_t prefix_count, prefix_passed;
    /* Outstanding settlements: a binary heap, earliest due first (ties by position). */
    struct pending *pending;
    size_t pending_count, pending_cap;
    size_t pending_bytes;
    struct slot *slots;
    size_t slot_count, slot_cap, slots_gone;
    uint32_t blocked_stamp;
    /* Calls the host started as long-running (HOST_CALL_LONG_RUNNING), in position
     * order; the first lr_announced of them were named in a LongRunning. */
    uint32_t *long_running;
    size_t lr_count, lr_cap, lr_announced;
    size_t console_len;
    struct colocation colo; /* the worker on this thread's CPU during a burst of calls */
};

__attribute__((format(printf, 2, 3))) static void set_detail(struct activation_outcome *out,
                                                              const char *fmt, ...)
{
    char text[512];
    va_list args;
    va_start(args, fmt);
    (void)vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    free(out->detail);
    out->detail = strdup(text);
}

static void keep_log(struct run *r)
{
    worker_conn_drain_log(r->w);
    if (r->w->log_len > 0 && r->out->worker_log == NULL)
        r->out->worker_log = strdup(r->w->log);
}

static void record_death(struct activation_outcome *out, int status)
{
    if (WIFSIGNALED(status)) {
        out->term_signal = WTERMSIG(status);
        out->exit_status = -1;
        set_detail(out, "killed by %s", activation_signal_name(out->term_signal));
    } else if (WIFEXITED(status)) {
        out->term_signal = 0;
        out->exit_status = WEXITSTATUS(status);
        set_detail(out, "exited with status %d", out->exit_status);
    }
}

/* The parent ends the worker now: deadline or protocol error. */
static void kill_worker(struct run *r, enum activation_status status)
{
    keep_log(r);
    (void)worker_conn_kill(r->w);
    keep_log(r);
    r->out->status = status;
    r->out->worker_ended = true;
    r->out->killed_by_parent = true;
}

__attribute__((format(printf, 2, 3))) static void protocol_error(struct run *r, const char *fmt,
                                                                  ...)
{
    char text[512];
    va_list args;
    va_start(args, fmt);
    (void)vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    kill_worker(r, ACTIVATION_PROTOCOL_ERROR);
    set_detail(r->out, "%s", text);
}

/* The worker's stdout ended or its stdin broke: it is dying or dead. */
static void worker_gone(struct run *r, const char *how)
{
    close_fd(&r->w->proc.to_worker);
    long long left = r->deadline_ms - monotonic_ms();
    int wait_ms = left < DEATH_REAP_MS ? (left > 0 ? (int)left : 0) : DEATH_REAP_MS;
    struct worker_end end = reap_worker_within(r->w, wait_ms);
    keep_log(r);
    worker_conn_free(r->w);
    r->out->worker_ended = true;
    if (end.killed) {
        /* It closed its end of a pipe but kept running: not a death of its own. */
        r->out->killed_by_parent = true;
        r->out->status = ACTIVATION_PROTOCOL_ERROR;
        set_detail(r->out, "the worker's %s but it did not exit", how);
        return;
    }
    r->out->status = ACTIVATION_WORKER_CRASHED;
    record_death(r->out, end.wait_status);
}

enum send_result { SENT, SEND_TIMEOUT, SEND_BROKEN, SEND_UNENCODABLE };

/* Writes msg as one frame before the deadline, draining stderr while it waits. */
static enum send_result send_msg(struct run *r, const struct proto_msg *msg)
{
    struct worker_conn *w = r->w;
    if (proto_encode(msg, &w->out) != PROTO_OK || w->out.len > PROTO_MAX_FRAME)
        return SEND_UNENCODABLE;
    uint8_t header[PROTO_FRAME_HEADER_BYTES];
    frame_header_encode((uint32_t)w->out.len, header);
    size_t total = sizeof header + w->out.len;
    size_t done = 0;
    while (done < total) {
        /* Header and payload in one writev: the worker wakes once per frame, not
         * once for the header and again for the payload. */
        struct iovec iov[2];
        int count = 0;
        if (done < sizeof header) {
            iov[count].iov_base = header + done;
            iov[count++].iov_len = sizeof header - done;
        }
        size_t payload_done = done < sizeof header ? 0 : done - sizeof header;
        if (w->out.len > payload_done) {
            iov[count].iov_base = w->out.data + payload_done;
            iov[count++].iov_len = w->out.len - payload_done;
        }
        ssize_t n = writev(w->proc.to_worker, iov, count);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN)
            return SEND_BROKEN; /* EPIPE: the worker is gone */
        long long left = r->deadline_ms - monotonic_ms();
        if (left <= 0)
            return SEND_TIMEOUT;
        struct pollfd p[2] = {{w->proc.to_worker, POLLOUT, 0}, {w->proc.worker_log, POLLIN, 0}};
        int rc = poll(p, w->proc.worker_log >= 0 ? 2 : 1, (int)left);
        if (rc < 0 && errno != EINTR)
            return SEND_BROKEN;
        if (rc > 0 && w->proc.worker_log >= 0 && (p[1].revents & (POLLIN | POLLHUP)) != 0)
            worker_conn_drain_log(w);
        if (rc > 0 && (p[0].revents & (POLLERR | POLLHUP)) != 0 && (p[0].revents & POLLOUT) == 0)
            return SEND_BROKEN;
    }
    return SENT;
}

/* Sends msg; on failure ends the activation. Returns true if sent. */
static bool send_or_end(struct run *r, const struct proto_msg *msg, const char *what)
{
    switch (send_msg(r, msg)) {
    case SENT:
        return true;
    case SEND_TIMEOUT:
        kill_worker(r, ACTIVATION_DEADLINE);
        return false;
    case SEND_BROKEN:
        worker_gone(r, "stdin closed");
        return false;
    case SEND_UNENCODABLE:
        protocol_error(r, "cannot encode %s", what);
        return false;
    }
    return false;
}

static bool deliver(struct run *r, uint32_t position, const char *kind, const char *args,
                    size_t args_len, const struct host_settlement *s)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_DELIVER;
    msg.deliver.position = position;
    msg.deliver.settlement = s->settlement;
    msg.deliver.value = proto_text_of(s->value);
    msg.deliver.delivery_order = r->next_order;
    if (!send_or_end(r, &msg, "Deliver"))
        return false;
    if (r->host->ops->delivered != NULL) {
        struct host_call call = {position, kind, args, args_len};
        r->host->ops->delivered(r->host->self, &call, s, r->next_order);
    }
    r->next_order++;
    r->out->deliveries++;
    return true;
}

/* ------------------------------------------------------------------ positions */

static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The prefix's positions, sorted once, so each HostCall skips them in O(1). */
static bool prefix_load(struct run *r)
{
    const struct activation_request *req = r->req;
    r->prefix_count = req->prefix_count;
    r->prefix_positions = malloc((req->prefix_count + 1) * sizeof *r->prefix_positions);
    if (r->prefix_positions == NULL)
        return false;
    for (size_t i = 0; i < req->prefix_count; i++)
        r->prefix_positions[i] = req->prefix[i].position;
    qsort(r->prefix_positions, r->prefix_count, sizeof *r->prefix_positions, compare_u32);
    return true;
}

/* Moves next_position past any prefix position it stands on. */
static void skip_prefix(struct run *r)
{
    for (;;) {
        while (r->prefix_passed < r->prefix_count &&
               r->prefix_positions[r->prefix_passed] < r->next_position)
            r->prefix_passed++;
        if (r->prefix_passed >= r->prefix_count ||
            r->prefix_positions[r->prefix_passed] != r->next_position)
            return;
        r->next_position++;
    }
}

static void advance_position(struct run *r)
{
    r->next_position++;
    skip_prefix(r);
}

/* The slot of position (live or gone), or NULL. */
static struct slot *slot_find(struct run *r, uint32_t position)
{
    return position_search(r->slots, r->slot_count, sizeof *r->slots,
                           offsetof(struct slot, position), position);
}

static bool slot_add(struct run *r, uint32_t position)
{
    if (r->slot_count == r->slot_cap) {
        size_t cap = r->slot_cap == 0 ? 16 : r->slot_cap * 2;
        struct slot *grown = realloc(r->slots, cap * sizeof *grown);
        if (grown == NULL)
            return false;
        r->slots = grown;
        r->slot_cap = cap;
    }
    r->slots[r->slot_count++] = (struct slot){position, 0, false};
    return true;
}

/* Marks position released; drops released slots once they are most of the index. */
static void slot_release(struct run *r, uint32_t position)
{
    struct slot *s = slot_find(r, position);
    if (s == NULL || s->gone)
        return;
    s->gone = true;
    r->slots_gone++;
    if (r->slots_gone < 64 || r->slots_gone * 2 < r->slot_count)
        return;
    size_t kept = 0;
    for (size_t i = 0; i < r->slot_count; i++)
        if (!r->slots[i].gone)
            r->slots[kept++] = r->slots[i];
    r->slot_count = kept;
    r->slots_gone = 0;
}

/* ------------------------------------------------------------------ settlements due */

static bool due_before(const struct pending *a, const struct pending *b)
{
    return a->due_ms < b->due_ms || (a->due_ms == b->due_ms && a->position < b->position);
}

static void heap_swap(struct pending *h, size_t i, size_t j)
{
    struct pending t = h[i];
    h[i] = h[j];
    h[j] = t;
}

static void heap_up(struct pending *h, size_t i)
{
    while (i > 0 && due_before(&h[i], &h[(i - 1) / 2])) {
        heap_swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(struct pending *h, size_t n, size_t i)
{
    for (;;) {
        size_t least = i, l = 2 * i + 1, rr = 2 * i + 2;
        if (l < n && due_before(&h[l], &h[least]))
            least = l;
        if (rr < n && due_before(&h[rr], &h[least]))
            least = rr;
        if (least == i)
            return;
        heap_swap(h, i, least);
        i = least;
    }
}

/* ------------------------------------------------------------------ host calls */

/* Asks the host, enforcing sizes and the call limit. Fills *s and *delay, or returns
 * true with *s empty when the host started the call as long-running (an async call
 * only: a synchronous one the host cannot leave unanswered is rejected instead). */
static bool settle(struct run *r, const struct proto_host_call *hc, struct host_settlement *s,
                   long long *delay, bool sync)
{
    const char *kind = hc->kind.str, *args = hc->args.str; /* decoded: NUL-terminated */
    *delay = 0;
    s->value = NULL;
    uint32_t max_value = r->req->budgets.max_value_bytes;
    int rc;
    if (r->req->max_host_calls > 0 && r->out->host_calls > r->req->max_host_calls) {
        rc = host_reject(s, HOST_CODE_DENIED, "more than %u host calls in one activation",
                         r->req->max_host_calls);
    } else if (max_value > 0 && hc->args.len > max_value) {
        rc = host_reject(s, HOST_CODE_TOO_LARGE, "the arguments of %.200s are %zu bytes, over %u",
                         kind, hc->args.len, max_value);
    } else {
        struct host_call call = {hc->position, kind, args, hc->args.len};
        rc = r->host->ops->call(r->host->self, &call, s, delay);
        if (rc == HOST_CALL_LONG_RUNNING && !sync && s->value == NULL) {
            *delay = 0;
            return true;
        }
        if (rc == HOST_CALL_LONG_RUNNING)
            rc = -1;
        if (rc == 0 && s->value != NULL && max_value > 0 && strlen(s->value) > max_value) {
            size_t len = strlen(s->value);
            host_settlement_free(s);
            rc = host_reject(s, HOST_CODE_TOO_LARGE, "the result of %.200s is %zu bytes, over %u",
                             kind, len, max_value);
        }
    }
    if (rc != 0 || s->value == NULL) {
        host_settlement_free(s);
        /* Out of memory: a fixed rejection needs no allocation to describe. */
        s->settlement = PROTO_SETTLEMENT_REJECTED;
        s->value = strdup("{\"code\":\"io_error\",\"message\":\"the host could not answer\"}");
    }
    if (*delay < 0)
        *delay = 0;
    return false;
}

/* Keeps a call the host started as long-running: outstanding (a Blocked may name it)
 * until the next Blocked announces it, and never settled in this activation. */
static bool keep_long_running(struct run *r, uint32_t position)
{
    if (r->lr_count == r->lr_cap) {
        size_t cap = r->lr_cap == 0 ? 8 : r->lr_cap * 2;
        uint32_t *grown = realloc(r->long_running, cap * sizeof *grown);
        if (grown == NULL)
            return false;
        r->long_running = grown;
        r->lr_cap = cap;
    }
    if (!slot_add(r, position))
        return false;
    r->long_running[r->lr_count++] = position;
    return true;
}

/* Names the long-running calls not yet announced, while the worker waits (right after
 * its Blocked), so it never has an unread frame behind it while it runs. */
static bool announce_long_running(struct run *r)
{
    if (r->lr_announced == r->lr_count)
        return true;
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_LONG_RUNNING;
    msg.long_running.items = r->long_running + r->lr_announced;
    msg.long_running.count = r->lr_count - r->lr_announced;
    if (!send_or_end(r, &msg, "LongRunning"))
        return false;
    r->lr_announced = r->lr_count;
    return true;
}

/* Keeps an async call's settlement until a Blocked releases it. */
static bool keep_pending(struct run *r, uint32_t position, long long delay, char *kind,
                         char *args, size_t args_len, struct host_settlement *s)
{
    if (r->pending_count == r->pending_cap) {
        size_t cap = r->pending_cap == 0 ? 16 : r->pending_cap * 2;
        struct pending *grown = realloc(r->pending, cap * sizeof *grown);
        if (grown == NULL)
            return false;
        r->pending = grown;
        r->pending_cap = cap;
    }
    if (!slot_add(r, position))
        return false;
    struct pending *p = &r->pending[r->pending_count];
    p->position = position;
    /* The clock is in whole milliseconds: one more, so a held answer is never released
     * before `delay` has really passed (a call at 1000.9 due at 1100 would be 99.1 ms). */
    p->due_ms = monotonic_ms() + delay + (delay > 0 ? 1 : 0);
    p->settlement = *s;
    p->kind = kind;
    p->args = args;
    p->args_len = args_len;
    p->bytes = strlen(kind) + args_len + strlen(s->value);
    r->pending_bytes += p->bytes;
    heap_up(r->pending, r->pending_count++);
    return true;
}

/* Returns false when the activation has ended. */
static bool on_host_call(struct run *r, struct proto_host_call *hc)
{
    if (r->blocked) {
        protocol_error(r, "HostCall at position %u while blocked", (unsigned)hc->position);
        return false;
    }
    if (hc->position != r->next_position) {
        protocol_error(r, "HostCall at position %u, expected %u", (unsigned)hc->position,
                       (unsigned)r->next_position);
        return false;
    }
    /* Nothing a worker names reaches a host, the journal or an audit line unchecked. */
    if (!host_kind_valid(hc->kind.str, hc->kind.len)) {
        protocol_error(r, "HostCall at position %u: its kind is not a host-call name (1 to %u"
                       " bytes of [a-z][a-zA-Z0-9_.]*)", (unsigned)hc->position,
                       HOST_KIND_MAX_BYTES);
        return false;
    }
    bool sync = host_is_sync(r->host, hc->kind.str);
    /* The parent's memory for one activation is bounded: refuse the call that would
     * pass the cap, before any host performs it. */
    if (!sync && r->pending_count + r->lr_count >= ACTIVATION_MAX_OUTSTANDING_CALLS) {
        protocol_error(r, "HostCall at position %u: more than %u host calls outstanding",
                       (unsigned)hc->position, ACTIVATION_MAX_OUTSTANDING_CALLS);
        return false;
    }
    if (!sync && r->pending_bytes + hc->kind.len + hc->args.len > ACTIVATION_MAX_OUTSTANDING_BYTES) {
        protocol_error(r, "HostCall at position %u: the outstanding host calls would hold more"
                       " than %u bytes", (unsigned)hc->position, ACTIVATION_MAX_OUTSTANDING_BYTES);
        return false;
    }
    advance_position(r);
    r->out->host_calls++;
    colocate_burst(&r->colo);
    struct host_settlement s = {PROTO_SETTLEMENT_REJECTED, NULL};
    long long delay = 0;
    if (settle(r, hc, &s, &delay, sync)) {
        if (keep_long_running(r, hc->position))
            return true;
        protocol_error(r, "out of memory keeping a long-running host call");
        return false;
    }
    /* The decoded texts are kept with the call (nothing is copied): taken from the
     * message, which read_frames frees. */
    size_t args_len = hc->args.len;
    char *kind = proto_text_take(&hc->kind);
    char *args = proto_text_take(&hc->args);
    if (s.value == NULL) {
        free(kind);
        free(args);
        host_settlement_free(&s);
        protocol_error(r, "out of memory settling a host call");
        return false;
    }
    if (sync) {
        /* The engine is waiting for this one answer. */
        bool ok = deliver(r, hc->position, kind, args, args_len, &s);
        free(kind);
        free(args);
        host_settlement_free(&s);
        return ok;
    }
    if (!keep_pending(r, hc->position, delay, kind, args, args_len, &s)) {
        free(kind);
        free(args);
        host_settlement_free(&s);
        protocol_error(r, "out of memory keeping a host call");
        return false;
    }
    return true;
}

/* A Blocked must name outstanding calls, each once, and only while the driver is not
 * already releasing one for it. */
static bool on_blocked(struct run *r, const struct proto_positions *awaited)
{
    if (r->blocked) {
        protocol_error(r, "Blocked while already blocked");
        return false;
    }
    if (r->pending_count == 0 && r->lr_count == 0) {
        protocol_error(r, "Blocked with no host call outstanding");
        return false;
    }
    if (++r->blocked_stamp == 0) { /* wrapped: forget every earlier Blocked */
        for (size_t i = 0; i < r->slot_count; i++)
            r->slots[i].seen = 0;
        r->blocked_stamp = 1;
    }
    for (size_t i = 0; i < awaited->count; i++) {
        struct slot *s = slot_find(r, awaited->items[i]);
        if (s == NULL || s->gone) {
            protocol_error(r, "Blocked on position %u, which is not outstanding",
                           (unsigned)awaited->items[i]);
            return false;
        }
        if (s->seen == r->blocked_stamp) {
            protocol_error(r, "Blocked names position %u twice", (unsigned)awaited->items[i]);
            return false;
        }
        s->seen = r->blocked_stamp;
    }
    r->blocked = true;
    return announce_long_running(r);
}

/* Releases the earliest due settlement (the heap's root) as Deliver. */
static bool release_due(struct run *r)
{
    struct pending p = r->pending[0];
    r->pending[0] = r->pending[--r->pending_count];
    heap_down(r->pending, r->pending_count, 0);
    r->pending_bytes -= p.bytes;
    slot_release(r, p.position);
    r->blocked = false;
    bool ok = deliver(r, p.position, p.kind, p.args, p.args_len, &p.settlement);
    host_settlement_free(&p.settlement);
    free(p.kind);
    free(p.args);
    return ok;
}

/* The line that ends a console cut short: the kept text and this line together are at
 * most ACTIVATION_CONSOLE_MAX, so the cut is always visible. */
#define CONSOLE_CUT_LINE "[console output truncated: over 65536 bytes]\n"

static bool console_append(struct run *r, const char *bytes, size_t len)
{
    char *grown = realloc(r->out->console, r->console_len + len + 1);
    if (grown == NULL)
        return false;
    r->out->console = grown;
    memcpy(grown + r->console_len, bytes, len);
    r->console_len += len;
    grown[r->console_len] = '\0';
    return true;
}

/* One message as its lines, without the last line feed: "stream: text", each line
 * break of the text followed by "stream| ", so no line a script writes begins where a
 * line of basal's own could (an outcome line such as "budget exhausted: cpu"). NULL
 * without memory. */
static char *console_lines(const struct proto_console *c, size_t *len)
{
    size_t breaks = 0;
    for (size_t i = 0; i < c->text.len; i++)
        breaks += c->text.str[i] == '\n';
    size_t marker = c->stream.len + 2;
    size_t n = marker + c->text.len + breaks * marker;
    char *out = malloc(n + 1);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    memcpy(out, c->stream.str, c->stream.len);
    o = c->stream.len;
    out[o++] = ':';
    out[o++] = ' ';
    for (size_t i = 0; i < c->text.len; i++) {
        out[o++] = c->text.str[i];
        if (c->text.str[i] == '\n') {
            memcpy(out + o, c->stream.str, c->stream.len);
            o += c->stream.len;
            out[o++] = '|';
            out[o++] = ' ';
        }
    }
    out[o] = '\0';
    *len = o;
    return out;
}

static void on_console(struct run *r, const struct proto_console *c)
{
    if (r->out->console_truncated)
        return;
    const size_t room = ACTIVATION_CONSOLE_MAX - (sizeof CONSOLE_CUT_LINE - 1);
    size_t marker = c->stream.len + 2, len = 0;
    char *lines = console_lines(c, &len);
    bool cut = lines == NULL || r->console_len + len + 1 > room;
    size_t keep = lines == NULL ? 0 : len;
    if (lines != NULL && cut) {
        /* Keep what fits, whole characters only, and never a line's prefix alone. */
        keep = r->console_len + 1 < room
                   ? utf8_truncate((const uint8_t *)lines, len, room - r->console_len - 1)
                   : 0;
        const char *last = memrchr(lines, '\n', keep);
        size_t line_start = last != NULL ? (size_t)(last - lines) + 1 : 0;
        if (keep - line_start <= marker)
            keep = last != NULL ? (size_t)(last - lines) : 0;
    }
    if (keep > 0 && (!console_append(r, lines, keep) || !console_append(r, "\n", 1)))
        cut = true; /* out of memory: what is kept ends here, visibly */
    free(lines);
    if (cut) {
        r->out->console_truncated = true;
        (void)console_append(r, CONSOLE_CUT_LINE, sizeof CONSOLE_CUT_LINE - 1);
    }
}

/* Returns false if the Finished was refused (the activation has then ended as a
 * protocol error). */
static bool on_finished(struct run *r, const struct proto_finished *f)
{
    struct activation_outcome *out = r->out;
    switch (f->outcome) {
    case PROTO_OUTCOME_COMPLETED: {
        uint32_t max_value = r->req->budgets.max_value_bytes;
        if (max_value > 0 && f->value.len > max_value) {
            out->status = ACTIVATION_FAILED;
            out->failure_kind = strdup("result_too_large");
            set_detail(out, "the result is %zu bytes, over %u", f->value.len, max_value);
            return true;
        }
        /* The result is stored and shown as JSON: a worker that sends anything else is
         * not running the engine's JSON.stringify. */
        if (!json_text_valid(f->value.str, f->value.len)) {
            protocol_error(r, "Finished(completed) with a value that is not JSON (%zu bytes)",
                           f->value.len);
            return false;
        }
        out->status = ACTIVATION_COMPLETED;
        out->value = dup_text(&f->value);
        return true;
    }
    case PROTO_OUTCOME_FAILED:
        out->status = ACTIVATION_FAILED;
        out->failure_kind = dup_text(&f->failure_kind);
        out->detail = dup_text(&f->failure_detail);
        return true;
    case PROTO_OUTCOME_SUSPENDED:
        /* Only calls the parent named in LongRunning may leave an activation
         * suspended: with none, a suspended run would wait for nothing, forever; with a
         * settlement still held for the worker, it would wait without it. */
        if (r->lr_announced == 0) {
            protocol_error(r, "Finished(suspended), but no host call was marked long-running");
            return false;
        }
        if (r->pending_count > 0) {
            protocol_error(r, "Finished(suspended) while %zu settlements were still owed to it",
                           r->pending_count);
            return false;
        }
        out->status = ACTIVATION_SUSPENDED;
        return true;
    case PROTO_OUTCOME_STALLED:
        out->status = ACTIVATION_STALLED;
        return true;
    case PROTO_OUTCOME_BUDGET_EXHAUSTED:
        out->status = ACTIVATION_BUDGET_EXHAUSTED;
        out->budget = f->exhausted;
        return true;
    }
    protocol_error(r, "Finished with unknown outcome %d", (int)f->outcome);
    return false;
}

/* After Finished the worker must be silent: bytes it wrote after it (already read, or
 * waiting in the pipe) would be taken for the next activation's. */
static void check_silent_after_finished(struct run *r)
{
    const struct worker_channel *ch = &r->w->channel;
    struct pollfd p = {r->w->proc.from_worker, POLLIN, 0};
    bool readable = poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
    if (ch->in.len > ch->start || readable)
        r->out->wrote_after_finished = true;
}

/* Handles one decoded frame. Returns true to keep going. */
static bool on_message(struct run *r, struct proto_msg *msg)
{
    switch (msg->tag) {
    case PROTO_HOST_CALL:
        return on_host_call(r, &msg->host_call);
    case PROTO_BLOCKED:
        return on_blocked(r, &msg->blocked);
    case PROTO_CONSOLE:
        on_console(r, &msg->console);
        return true;
    case PROTO_FINISHED:
        if (on_finished(r, &msg->finished))
            check_silent_after_finished(r);
        return false;
    case PROTO_REFUSED:
        protocol_error(r, "the worker refused a frame: %s (%.*s)",
                       proto_refusal_name(msg->refused.reason), (int)msg->refused.detail.len,
                       msg->refused.detail.str != NULL ? msg->refused.detail.str : "");
        return false;
    default:
        protocol_error(r, "unexpected %s during an activation", proto_msg_name(msg->tag));
        return false;
    }
}

/* Reads every whole frame available now, looking at the clock after each: frames that
 * keep arriving never hold off the wall deadline. Returns false when the activation
 * ended. */
static bool read_frames(struct run *r)
{
    for (;;) {
        const uint8_t *payload = NULL;
        size_t len = 0;
        enum channel_result got = channel_read_frame(&r->w->channel, 0, &payload, &len);
        switch (got) {
        case CHANNEL_FRAME:
            break;
        case CHANNEL_TIMEOUT:
            return true; /* no whole frame yet */
        case CHANNEL_EOF:
            worker_gone(r, "stdout ended");
            return false;
        case CHANNEL_TRUNCATED:
            worker_gone(r, "stdout ended inside a frame");
            return false;
        case CHANNEL_OVERSIZED:
            protocol_error(r, "the worker sent an oversized frame");
            return false;
        case CHANNEL_IO_ERROR:
            protocol_error(r, "cannot read the worker's stdout: %s", strerror(errno));
            return false;
        }
        struct proto_msg msg;
        struct proto_where where = {NULL, 0};
        enum proto_error err = proto_decode_where(payload, len, &msg, &where);
        if (err != PROTO_OK) {
            protocol_error(r, "malformed frame from the worker: %s at %s",
                           proto_error_name(err), where.field != NULL ? where.field : "?");
            return false;
        }
        if (!proto_tag_from_worker(msg.tag)) {
            protocol_error(r, "the worker sent a parent's message (%s)", proto_msg_name(msg.tag));
            proto_msg_free(&msg);
            return false;
        }
        bool go_on = on_message(r, &msg);
        proto_msg_free(&msg);
        if (!go_on)
            return false;
        if (monotonic_ms() >= r->deadline_ms) {
            kill_worker(r, ACTIVATION_DEADLINE);
            return false;
        }
    }
}

/* The name errors call the script, as the Activate may carry it. */
static struct proto_text script_name_of(const char *name)
{
    size_t len = name != NULL ? strlen(name) : 0;
    bool ok = len > 0 && len <= PROTO_MAX_SCRIPT_NAME_BYTES && utf8_valid((const uint8_t *)name, len);
    for (size_t i = 0; ok && i < len; i++)
        ok = (unsigned char)name[i] >= 0x20 && name[i] != 0x7f;
    return proto_text_of(ok ? name : "script.js");
}

static bool send_activate(struct run *r)
{
    const struct activation_request *req = r->req;
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_ACTIVATE;
    msg.activate.activation_id = req->activation_id;
    msg.activate.profile = req->profile;
    msg.activate.script.str = req->script;
    msg.activate.script.len = req->script_len;
    msg.activate.script_name = script_name_of(req->script_name);
    msg.activate.compile_only = req->compile_only;
    msg.activate.trigger = proto_text_of(req->trigger != NULL ? req->trigger : "{}");
    msg.activate.budgets = req->budgets;
    msg.activate.prefix = req->prefix;
    msg.activate.prefix_count = req->prefix_count;
    return send_or_end(r, &msg, "Activate");
}

static void run_free(struct run *r)
{
    for (size_t i = 0; i < r->pending_count; i++) {
        host_settlement_free(&r->pending[i].settlement);
        free(r->pending[i].kind);
        free(r->pending[i].args);
    }
    free(r->pending);
    free(r->long_running);
    free(r->slots);
    free(r->prefix_positions);
}

void activation_run(struct worker_conn *w, const struct activation_request *req,
                    const struct host *host, struct activation_outcome *out)
{
    memset(out, 0, sizeof *out);
    out->exit_status = -1;
    out->pid = w->proc.pid;
    struct run r;
    memset(&r, 0, sizeof r);
    r.w = w;
    r.req = req;
    r.host = host;
    r.out = out;
    r.started_ms = monotonic_ms();
    r.deadline_ms = r.started_ms + (req->deadline_ms > 0 ? req->deadline_ms : FLOW_DEADLINE_MS);
    r.next_order = 1;
    for (size_t i = 0; i < req->prefix_count; i++)
        if (req->prefix[i].delivery_order >= r.next_order)
            r.next_order = req->prefix[i].delivery_order + 1;

    if (!worker_conn_alive(w)) {
        out->status = ACTIVATION_NO_WORKER;
        set_detail(out, "the worker is not running");
        return;
    }
    if (!prefix_load(&r)) {
        out->status = ACTIVATION_NO_WORKER;
        set_detail(out, "out of memory");
        return;
    }
    r.next_position = 0;
    skip_prefix(&r);
    colocate_init(&r.colo, req->keep_placement ? 0 : w->proc.pid);
    bool running = send_activate(&r);
    while (running) {
        long long now = monotonic_ms();
        if (r.blocked && r.pending_count > 0 && r.pending[0].due_ms <= now) {
            running = release_due(&r);
            continue;
        }
        if (now >= r.deadline_ms) {
            kill_worker(&r, ACTIVATION_DEADLINE);
            break;
        }
        long long wait = r.deadline_ms - now;
        if (r.blocked && r.pending_count > 0) {
            long long due = r.pending[0].due_ms - now;
            if (due < wait)
                wait = due;
        }
        /* While the worker runs, its next frame usually comes within microseconds:
         * spin for it (bounded, adaptive) before letting this CPU go idle. Not while
         * pinned: the worker shares this CPU then, and a spin would only delay it. */
        if (!r.blocked && !r.colo.pinned && channel_spin(&w->channel)) {
            running = read_frames(&r);
            continue;
        }
        struct pollfd p[2] = {{w->proc.from_worker, POLLIN, 0}, {w->proc.worker_log, POLLIN, 0}};
        int nfds = w->proc.worker_log >= 0 ? 2 : 1;
        bool quiet_check = r.colo.pinned && wait > COLOCATE_QUIET_MS;
        int rc = poll(p, (nfds_t)nfds, quiet_check ? COLOCATE_QUIET_MS : (int)wait);
        if (rc < 0 && errno != EINTR) {
            protocol_error(&r, "poll: %s", strerror(errno));
            break;
        }
        if (rc == 0 && quiet_check)
            colocate_release(&r.colo, w->proc.pid); /* the burst is over: free both to move */
        if (rc <= 0)
            continue;
        if (nfds == 2 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0)
            worker_conn_drain_log(w);
        if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
            channel_blocked_wait_ended(&w->channel);
            running = read_frames(&r);
        }
    }
    colocate_release(&r.colo, w->proc.pid);
    run_free(&r);
    out->wall_ms = monotonic_ms() - r.started_ms;
}
