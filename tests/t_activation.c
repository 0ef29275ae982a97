/* The activation driver (src/supervisor/activation.c) and `ck-basal exec`.
 *
 * Part 1 drives activation_run against scripted stand-in workers: child processes of
 * this test that speak the real protocol codec over pipes and misbehave on purpose
 * (refuse, crash, hang, close their stdin, flood stderr, send garbage), which a real
 * confined worker cannot be made to do. Each check names the parent-side guard it
 * proves.
 *
 * Part 2 drives the real binaries: build/<variant>/bin/ck-basal exec, with the
 * test-build worker beside it. */
#include "supervisor/activation.h"
#include "host/test_host.h"
#include "lib/harness.h"
#include "proto/channel.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A JSON string's value, or "" if v is not a string (never NULL, for strcmp). */
static const char *str_or_empty(const json_t *v)
{
    const char *s = json_string_value(v);
    return s != NULL ? s : "";
}

/* ================================================================== part 1: stand-ins */

struct mock {
    int in, out, err;
    struct wire_buf buf;
};

typedef void (*mock_body)(struct mock *m);

static bool mock_recv(struct mock *m, struct proto_msg *msg)
{
    enum proto_error err = PROTO_OK;
    return proto_recv(m->in, &m->buf, msg, &err, NULL) == FRAME_OK && err == PROTO_OK;
}

static void mock_send(struct mock *m, const struct proto_msg *msg)
{
    enum frame_result sent = FRAME_OK;
    struct wire_buf scratch;
    wire_buf_init(&scratch);
    if (proto_send(m->out, msg, &scratch, &sent) != PROTO_OK || sent != FRAME_OK)
        _exit(21);
    wire_buf_free(&scratch);
}

static void mock_expect_activate(struct mock *m, struct proto_msg *msg)
{
    if (!mock_recv(m, msg) || msg->tag != PROTO_ACTIVATE)
        _exit(20);
}

/* Waits for the Activate, for a body that answers it without reading what it asks. */
static void mock_activated(struct mock *m)
{
    struct proto_msg activate;
    mock_expect_activate(m, &activate);
    proto_msg_free(&activate);
}

static void mock_host_call(struct mock *m, uint32_t position, const char *kind, const char *args)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_HOST_CALL;
    msg.host_call.position = position;
    msg.host_call.kind = proto_text_of(kind);
    msg.host_call.args = proto_text_of(args);
    mock_send(m, &msg);
}

static void mock_blocked(struct mock *m, const uint32_t *positions, size_t count)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_BLOCKED;
    msg.blocked.items = positions;
    msg.blocked.count = count;
    mock_send(m, &msg);
}

static void mock_completed(struct mock *m, const char *value)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_FINISHED;
    msg.finished.outcome = PROTO_OUTCOME_COMPLETED;
    msg.finished.value = proto_text_of(value);
    mock_send(m, &msg);
}

/* Host call 0, test.sleep with args, and Blocked on it alone. */
static void mock_sleeping_call(struct mock *m, const char *args)
{
    mock_host_call(m, 0, "test.sleep", args);
    const uint32_t awaited[] = {0};
    mock_blocked(m, awaited, 1);
}

/* Reads until the parent closes our stdin or kills us. */
static void mock_wait_forever(struct mock *m)
{
    char byte;
    while (read(m->in, &byte, 1) > 0) {
    }
    for (;;)
        pause();
}

/* Starts body in a child with three pipes, as worker_spawn would, and hands the
 * parent's ends to a worker_conn. */
static bool mock_start(mock_body body, struct worker_conn *w)
{
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
        return false;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        close(in[1]);
        close(out[0]);
        close(err[0]);
        signal(SIGPIPE, SIG_DFL);
        struct mock m = {in[0], out[1], err[1], {0}};
        body(&m);
        _exit(0);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    struct worker_proc proc = {pid, in[1], out[0], err[0]};
    worker_conn_init(w, &proc);
    return true;
}

static struct test_host *the_host;

static void request(struct activation_request *req, const char *script)
{
    memset(req, 0, sizeof *req);
    activation_request_defaults(req, PROTO_PROFILE_FLOW);
    req->activation_id = 7;
    req->script = script;
    req->script_len = strlen(script);
    req->trigger = "{\"t\":1}";
    req->deadline_ms = 5000;
}

/* Runs body as the worker of one activation. */
static void run_mock(mock_body body, const struct activation_request *req,
                     struct activation_outcome *out, pid_t *pid)
{
    struct worker_conn w;
    struct host host = test_host_interface(the_host);
    if (!mock_start(body, &w)) {
        memset(out, 0, sizeof *out);
        out->status = ACTIVATION_NO_WORKER;
        *pid = 0;
        return;
    }
    *pid = w.proc.pid;
    activation_run(&w, req, &host, out);
    if (worker_conn_alive(&w))
        (void)worker_conn_shutdown(&w, 2000);
}

/* The process is gone and reaped (no zombie left behind). */
static bool reaped(pid_t pid)
{
    return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

/* ---- host calls, settlement order, delivery order, synchronous calls ---- */

static void body_ordering(struct mock *m)
{
    struct proto_msg a;
    mock_expect_activate(m, &a);
    char summary[8192];
    size_t used = (size_t)snprintf(
        summary, sizeof summary,
        "{\"id\":%llu,\"profile\":%d,\"script\":\"%s\",\"trigger\":%s,\"cpu\":%u,\"heap\":%llu,"
        "\"stack\":%u,\"max_value\":%u,\"prefix\":%zu,\"deliveries\":[",
        (unsigned long long)a.activate.activation_id, (int)a.activate.profile,
        a.activate.script.str, a.activate.trigger.str, a.activate.budgets.cpu_ms,
        (unsigned long long)a.activate.budgets.heap_bytes, a.activate.budgets.stack_bytes,
        a.activate.budgets.max_value_bytes, a.activate.prefix_count);
    proto_msg_free(&a);
    mock_host_call(m, 0, "test.sleep", "[150]");
    mock_host_call(m, 1, "test.echo", "[\"x\"]");
    mock_host_call(m, 2, "test.fail", "[\"not_found\"]");
    uint32_t outstanding[3] = {0, 1, 2};
    size_t left = 3;
    for (int round = 0; round < 4; round++) {
        if (round < 3) {
            mock_blocked(m, outstanding, left);
        } else {
            mock_host_call(m, 3, "now", "[]"); /* synchronous: no Blocked */
        }
        struct proto_msg d;
        if (!mock_recv(m, &d) || d.tag != PROTO_DELIVER)
            _exit(22);
        used += (size_t)snprintf(summary + used, sizeof summary - used, "%s[%u,%d,%u,%s]",
                                 round > 0 ? "," : "", (unsigned)d.deliver.position,
                                 (int)d.deliver.settlement, (unsigned)d.deliver.delivery_order,
                                 d.deliver.value.str);
        for (size_t i = 0; i < left; i++) {
            if (outstanding[i] == d.deliver.position) {
                outstanding[i] = outstanding[--left];
                break;
            }
        }
        proto_msg_free(&d);
    }
    snprintf(summary + used, sizeof summary - used, "]}");
    mock_completed(m, summary);
}

static void test_ordering(void)
{
    struct activation_request req;
    request(&req, "return 42");
    struct activation_outcome out;
    pid_t pid;
    run_mock(body_ordering, &req, &out, &pid);
    if (!check(out.status == ACTIVATION_COMPLETED, "driver: stand-in activation completes",
               "status %s (%s)", activation_status_name(out.status),
               out.detail != NULL ? out.detail : "")) {
        activation_outcome_free(&out);
        return;
    }
    json_error_t error;
    json_t *v = json_loads(out.value, 0, &error);
    check(v != NULL, "driver: the completed value arrives as the worker's JSON", "%s", out.value);
    json_t *d = json_object_get(v, "deliveries");
    char *text = json_dumps(json_object_get(v, "deliveries"), JSON_COMPACT);
    /* Echo and fail settle at once, sleep after 150 ms, now synchronously. */
    check(json_array_size(d) == 4 &&
              json_integer_value(json_array_get(json_array_get(d, 0), 0)) == 1 &&
              json_integer_value(json_array_get(json_array_get(d, 1), 0)) == 2 &&
              json_integer_value(json_array_get(json_array_get(d, 2), 0)) == 0 &&
              json_integer_value(json_array_get(json_array_get(d, 3), 0)) == 3,
          "driver: settlements released earliest due first (echo, fail, then the 150 ms "
          "sleep), the synchronous now answered without Blocked",
          "%s", text);
    bool orders = true;
    for (size_t i = 0; i < json_array_size(d); i++)
        orders = orders && json_integer_value(json_array_get(json_array_get(d, i), 2)) ==
                               (json_int_t)i + 1;
    check(orders, "driver: delivery order strictly increasing from 1 [guard delivery-order]",
          "%s", text);
    json_t *echo = json_array_get(json_array_get(d, 0), 3);
    check(json_integer_value(json_array_get(json_array_get(d, 0), 1)) == PROTO_SETTLEMENT_FULFILLED &&
              json_is_array(echo) && json_array_size(echo) == 1 &&
              strcmp(str_or_empty(json_array_get(echo, 0)), "x") == 0,
          "test host: test.echo fulfils with its arguments", "%s", text);
    json_t *rejection = json_array_get(json_array_get(d, 1), 3);
    check(json_integer_value(json_array_get(json_array_get(d, 1), 1)) == PROTO_SETTLEMENT_REJECTED &&
              json_is_string(json_object_get(rejection, "code")) &&
              strcmp(str_or_empty(json_object_get(rejection, "code")), "not_found") == 0 &&
              json_is_string(json_object_get(rejection, "message")),
          "test host: test.fail rejects with {code, message}", "%s", text);
    check(json_is_null(json_array_get(json_array_get(d, 2), 3)) && out.wall_ms >= 150,
          "test host: test.sleep fulfils with null after its delay", "wall %lld ms, %s",
          out.wall_ms, text);
    json_t *now = json_array_get(json_array_get(d, 3), 3);
    check(json_is_integer(now) && json_integer_value(now) > 1700000000000LL,
          "test host: now is milliseconds since the epoch", "%s", text);
    free(text);
    check(json_integer_value(json_object_get(v, "id")) == 7 &&
              json_integer_value(json_object_get(v, "profile")) == PROTO_PROFILE_FLOW &&
              strcmp(str_or_empty(json_object_get(v, "script")), "return 42") == 0 &&
              json_integer_value(json_object_get(json_object_get(v, "trigger"), "t")) == 1 &&
              json_integer_value(json_object_get(v, "cpu")) == FLOW_CPU_MS &&
              json_integer_value(json_object_get(v, "heap")) == (json_int_t)FLOW_HEAP_BYTES &&
              json_integer_value(json_object_get(v, "stack")) == FLOW_STACK_BYTES &&
              json_integer_value(json_object_get(v, "max_value")) == FLOW_MAX_VALUE_BYTES &&
              json_integer_value(json_object_get(v, "prefix")) == 0,
          "driver: Activate carries the id, profile, script, trigger and flow budgets",
          "%s", out.value);
    check(out.host_calls == 4 && out.deliveries == 4 && out.pid == pid && !out.worker_ended,
          "driver: counts host calls and deliveries, the worker stays alive",
          "calls %u deliveries %u", out.host_calls, out.deliveries);
    json_decref(v);
    activation_outcome_free(&out);
}

/* ---- protocol errors: the worker is killed, the activation fails ---- */

static void body_refuses(struct mock *m)
{
    mock_activated(m);
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_REFUSED;
    msg.refused.reason = PROTO_REFUSAL_UNEXPECTED_FRAME;
    msg.refused.detail = proto_text_of("activate in state ready");
    mock_send(m, &msg);
    mock_wait_forever(m);
}

static void body_position_skips(struct mock *m)
{
    mock_activated(m);
    mock_host_call(m, 5, "test.echo", "[]");
    mock_wait_forever(m);
}

static void body_blocked_nothing(struct mock *m)
{
    mock_activated(m);
    mock_blocked(m, NULL, 0);
    mock_wait_forever(m);
}

static void body_blocked_unknown(struct mock *m)
{
    mock_activated(m);
    mock_host_call(m, 0, "test.sleep", "[1000]");
    uint32_t awaited[] = {0, 9};
    mock_blocked(m, awaited, 2);
    mock_wait_forever(m);
}

static void body_call_while_blocked(struct mock *m)
{
    mock_activated(m);
    mock_sleeping_call(m, "[1000]");
    mock_host_call(m, 1, "test.echo", "[]");
    mock_wait_forever(m);
}

static void body_oversized(struct mock *m)
{
    mock_activated(m);
    const uint8_t header[4] = {0xff, 0xff, 0xff, 0xff};
    (void)!write(m->out, header, sizeof header);
    mock_wait_forever(m);
}

static void body_malformed(struct mock *m)
{
    mock_activated(m);
    const uint8_t frame[5] = {0, 0, 0, 1, 0x7f};
    (void)!write(m->out, frame, sizeof frame);
    mock_wait_forever(m);
}

static void body_welcome_again(struct mock *m)
{
    mock_activated(m);
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_WELCOME;
    msg.welcome.protocol_version = PROTO_VERSION;
    msg.welcome.os = proto_text_of("linux");
    msg.welcome.seccomp = true;
    msg.welcome.landlock_policy = LANDLOCK_POLICY_REQUIRED;
    mock_send(m, &msg);
    mock_wait_forever(m);
}

static void expect_protocol_error(mock_body body, const char *name, const char *detail_part)
{
    struct activation_request req;
    request(&req, "return 1");
    struct activation_outcome out;
    pid_t pid;
    run_mock(body, &req, &out, &pid);
    check(out.status == ACTIVATION_PROTOCOL_ERROR && out.killed_by_parent && out.worker_ended &&
              reaped(pid) && out.detail != NULL && strstr(out.detail, detail_part) != NULL &&
              !activation_keeps_worker(&out),
          name, "status %s, killed %d, detail '%s', pid %d reaped %d",
          activation_status_name(out.status), out.killed_by_parent,
          out.detail != NULL ? out.detail : "", (int)pid, reaped(pid));
    activation_outcome_free(&out);
}

/* ---- long-running calls: LongRunning, Finished(suspended) ---- */

/* A host that starts "test.long" as long-running (HOST_CALL_LONG_RUNNING, as the flow
 * host does for a module op its module accepted) and asks the test host the rest. */
static int long_host_call(void *self, const struct host_call *call, struct host_settlement *out,
                          long long *delay_ms)
{
    const struct host *inner = self;
    if (strcmp(call->kind, "test.long") == 0)
        return HOST_CALL_LONG_RUNNING;
    return inner->ops->call(inner->self, call, out, delay_ms);
}

static bool long_host_is_sync(void *self, const char *kind)
{
    return host_is_sync(self, kind);
}

static const struct host_ops LONG_HOST_OPS = {long_host_call, NULL, long_host_is_sync};

static void mock_suspended(struct mock *m)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_FINISHED;
    msg.finished.outcome = PROTO_OUTCOME_SUSPENDED;
    mock_send(m, &msg);
}

/* Blocked on a long-running call and an echo: the parent names the long-running one
 * first, then delivers the echo; only then is the suspension honest. */
static void body_long_running(struct mock *m)
{
    mock_activated(m);
    mock_host_call(m, 0, "test.long", "[]");
    mock_host_call(m, 1, "test.echo", "[1]");
    const uint32_t awaited[] = {0, 1};
    mock_blocked(m, awaited, 2);
    struct proto_msg msg;
    if (!mock_recv(m, &msg) || msg.tag != PROTO_LONG_RUNNING || msg.long_running.count != 1 ||
        msg.long_running.items[0] != 0)
        _exit(21);
    proto_msg_free(&msg);
    if (!mock_recv(m, &msg) || msg.tag != PROTO_DELIVER || msg.deliver.position != 1)
        _exit(22);
    proto_msg_free(&msg);
    mock_suspended(m);
    mock_wait_forever(m);
}

/* Suspends while the parent still holds a settlement for it (a sleep not yet due). */
static void body_suspended_owed(struct mock *m)
{
    mock_activated(m);
    mock_host_call(m, 0, "test.long", "[]");
    mock_host_call(m, 1, "test.sleep", "[3000]");
    const uint32_t awaited[] = {0, 1};
    mock_blocked(m, awaited, 2);
    struct proto_msg msg;
    if (!mock_recv(m, &msg) || msg.tag != PROTO_LONG_RUNNING)
        _exit(21);
    proto_msg_free(&msg);
    mock_suspended(m);
    mock_wait_forever(m);
}

/* Suspends before any Blocked: no LongRunning was ever sent. */
static void body_suspended_unannounced(struct mock *m)
{
    mock_activated(m);
    mock_host_call(m, 0, "test.long", "[]");
    mock_suspended(m);
    mock_wait_forever(m);
}

static void run_long(mock_body body, struct activation_outcome *out, pid_t *pid)
{
    struct activation_request req;
    request(&req, "return 1");
    struct host inner = test_host_interface(the_host);
    struct host host = {&LONG_HOST_OPS, &inner};
    struct worker_conn w;
    *pid = 0;
    if (!mock_start(body, &w)) {
        memset(out, 0, sizeof *out);
        out->status = ACTIVATION_NO_WORKER;
        return;
    }
    *pid = w.proc.pid;
    activation_run(&w, &req, &host, out);
    if (worker_conn_alive(&w))
        (void)worker_conn_shutdown(&w, 2000);
}

static void test_long_running(void)
{
    struct activation_outcome out;
    pid_t pid;
    run_long(body_long_running, &out, &pid);
    check(out.status == ACTIVATION_SUSPENDED && activation_keeps_worker(&out),
          "driver: a call the host started long-running is named in LongRunning before the"
          " Deliver the Blocked asked for, and then Finished(suspended) is the activation's end"
          " [guard: announce_long_running, the suspended outcome]",
          "status %s, detail %s, exit %d", activation_status_name(out.status),
          out.detail != NULL ? out.detail : "", out.exit_status);
    activation_outcome_free(&out);
    run_long(body_suspended_owed, &out, &pid);
    check(out.status == ACTIVATION_PROTOCOL_ERROR && out.detail != NULL &&
              strstr(out.detail, "still owed") != NULL && reaped(pid),
          "driver: Finished(suspended) while a settlement is still held for the worker is a"
          " protocol error [guard: suspended only with nothing owed]",
          "status %s, detail %s", activation_status_name(out.status),
          out.detail != NULL ? out.detail : "");
    activation_outcome_free(&out);
    run_long(body_suspended_unannounced, &out, &pid);
    check(out.status == ACTIVATION_PROTOCOL_ERROR && out.detail != NULL &&
              strstr(out.detail, "no host call was marked long-running") != NULL && reaped(pid),
          "driver: Finished(suspended) before any LongRunning is a protocol error, even with a"
          " long-running call started [guard: suspended only once announced]",
          "status %s, detail %s", activation_status_name(out.status),
          out.detail != NULL ? out.detail : "");
    activation_outcome_free(&out);
}

/* ---- deaths, deadline, EPIPE, stderr ---- */

static void body_segv(struct mock *m)
{
    mock_activated(m);
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV); /* never returns */
}

static void body_sigsys(struct mock *m)
{
    mock_activated(m);
    signal(SIGSYS, SIG_DFL);
    raise(SIGSYS); /* never returns */
}

static void body_exit3(struct mock *m)
{
    mock_activated(m);
    _exit(3);
}

static void body_hangs(struct mock *m)
{
    mock_activated(m);
    mock_wait_forever(m);
}

static void body_sleeps_past_deadline(struct mock *m)
{
    mock_activated(m);
    mock_sleeping_call(m, "[60000]");
    mock_wait_forever(m);
}

static void body_closes_stdin(struct mock *m)
{
    mock_activated(m);
    close(m->in);
    mock_host_call(m, 0, "now", "[]"); /* the parent answers at once: into a closed pipe */
    for (;;)
        pause();
}

static void body_floods_stderr(struct mock *m)
{
    mock_activated(m);
    static char line[4096];
    memset(line, 'e', sizeof line - 1);
    line[sizeof line - 1] = '\n';
    for (int i = 0; i < 512; i++) /* 2 MiB, far more than a pipe holds */
        if (write(m->err, line, sizeof line) < 0)
            _exit(23);
    mock_completed(m, "\"flooded\"");
}

static void body_big_args(struct mock *m)
{
    mock_activated(m);
    static char args[4096];
    memset(args, 'a', sizeof args);
    args[0] = '[';
    args[1] = '"';
    args[sizeof args - 3] = '"';
    args[sizeof args - 2] = ']';
    args[sizeof args - 1] = '\0';
    mock_host_call(m, 0, "test.echo", args);
    mock_host_call(m, 1, "no.such.call", "[]");
    char summary[1024];
    size_t used = (size_t)snprintf(summary, sizeof summary, "[");
    for (uint32_t i = 0; i < 2; i++) {
        uint32_t awaited[] = {i};
        mock_blocked(m, awaited, 1);
        struct proto_msg d;
        if (!mock_recv(m, &d) || d.tag != PROTO_DELIVER)
            _exit(22);
        used += (size_t)snprintf(summary + used, sizeof summary - used, "%s%s",
                                 i > 0 ? "," : "", d.deliver.value.str);
        proto_msg_free(&d);
    }
    snprintf(summary + used, sizeof summary - used, "]");
    mock_completed(m, summary);
}

static void body_big_result(struct mock *m)
{
    mock_activated(m);
    static char value[4096];
    memset(value, '1', sizeof value - 1);
    value[sizeof value - 1] = '\0';
    mock_completed(m, value);
    mock_wait_forever(m);
}

static void test_deaths(void)
{
    struct activation_request req;
    request(&req, "return 1");
    struct activation_outcome out;
    pid_t pid;
    char words[256];

    run_mock(body_segv, &req, &out, &pid);
    activation_describe(&out, words, sizeof words);
    check(out.status == ACTIVATION_WORKER_CRASHED && out.term_signal == SIGSEGV &&
              !out.killed_by_parent && reaped(pid) && strcmp(words, "worker crashed: SIGSEGV") == 0,
          "driver: a worker dying by SIGSEGV fails only its activation, reported by signal "
          "[guard worker-death-detected]",
          "status %s, signal %d, '%s'", activation_status_name(out.status), out.term_signal, words);
    activation_outcome_free(&out);

    run_mock(body_sigsys, &req, &out, &pid);
    activation_describe(&out, words, sizeof words);
    check(out.status == ACTIVATION_WORKER_CRASHED && out.term_signal == SIGSYS &&
              !out.killed_by_parent && strcmp(words, "worker crashed: SIGSYS") == 0,
          "driver: a death by SIGSYS is reported as SIGSYS, not killed by the parent",
          "status %s, signal %d", activation_status_name(out.status), out.term_signal);
    activation_outcome_free(&out);

    run_mock(body_exit3, &req, &out, &pid);
    activation_describe(&out, words, sizeof words);
    check(out.status == ACTIVATION_WORKER_CRASHED && out.term_signal == 0 &&
              out.exit_status == 3 && strcmp(words, "worker crashed: exit status 3") == 0,
          "driver: a worker exiting mid-activation is reported with its exit status",
          "status %s, exit %d, '%s'", activation_status_name(out.status), out.exit_status, words);
    activation_outcome_free(&out);

    req.deadline_ms = 300;
    run_mock(body_hangs, &req, &out, &pid);
    check(out.status == ACTIVATION_DEADLINE && out.killed_by_parent && reaped(pid) &&
              out.wall_ms >= 300 && out.wall_ms < 3000,
          "driver: a worker silent past the wall deadline is killed at it [guard wall-deadline]",
          "status %s after %lld ms", activation_status_name(out.status), out.wall_ms);
    activation_outcome_free(&out);

    run_mock(body_sleeps_past_deadline, &req, &out, &pid);
    check(out.status == ACTIVATION_DEADLINE && out.wall_ms >= 300 && out.wall_ms < 3000,
          "driver: a pending host settlement due after the deadline does not hold the parent "
          "past it [guard wall-deadline]",
          "status %s after %lld ms", activation_status_name(out.status), out.wall_ms);
    activation_outcome_free(&out);

    req.deadline_ms = 10000;
    run_mock(body_closes_stdin, &req, &out, &pid);
    check(out.status == ACTIVATION_PROTOCOL_ERROR && out.worker_ended && reaped(pid) &&
              out.detail != NULL && strstr(out.detail, "stdin") != NULL,
          "driver: writing to a worker that closed its stdin gives EPIPE, handled, and the "
          "parent lives on [guard sigpipe-ignored]",
          "status %s, '%s'", activation_status_name(out.status), out.detail ? out.detail : "");
    activation_outcome_free(&out);

    req.deadline_ms = 10000;
    run_mock(body_floods_stderr, &req, &out, &pid);
    check(out.status == ACTIVATION_COMPLETED && out.value != NULL &&
              strcmp(out.value, "\"flooded\"") == 0,
          "driver: a worker writing 2 MiB on stderr is drained, not deadlocked "
          "[guard stderr-drained]",
          "status %s after %lld ms", activation_status_name(out.status), out.wall_ms);
    activation_outcome_free(&out);
}

static void test_sizes(void)
{
    struct activation_request req;
    request(&req, "return 1");
    req.budgets.max_value_bytes = 1024;
    struct activation_outcome out;
    pid_t pid;
    run_mock(body_big_args, &req, &out, &pid);
    json_error_t error;
    json_t *v = out.value != NULL ? json_loads(out.value, 0, &error) : NULL;
    const char *code0 = json_string_value(json_object_get(json_array_get(v, 0), "code"));
    const char *code1 = json_string_value(json_object_get(json_array_get(v, 1), "code"));
    const char *msg1 = json_string_value(json_object_get(json_array_get(v, 1), "message"));
    check(code0 != NULL && strcmp(code0, "too_large") == 0,
          "driver: host-call arguments over max_value_bytes are rejected too_large "
          "[guard max-value-bytes]",
          "%s", out.value != NULL ? out.value : activation_status_name(out.status));
    check(code1 != NULL && strcmp(code1, "denied") == 0 && msg1 != NULL &&
              strstr(msg1, "no.such.call") != NULL,
          "test host: an unknown kind is rejected denied, naming the kind", "%s",
          out.value != NULL ? out.value : "");
    json_decref(v);
    activation_outcome_free(&out);

    run_mock(body_big_result, &req, &out, &pid);
    check(out.status == ACTIVATION_FAILED && out.failure_kind != NULL &&
              strcmp(out.failure_kind, "result_too_large") == 0,
          "driver: a result over max_value_bytes fails as result_too_large "
          "[guard max-value-bytes]",
          "status %s", activation_status_name(out.status));
    activation_outcome_free(&out);
}

static void test_words(void)
{
    struct activation_outcome o;
    char words[256];
    memset(&o, 0, sizeof o);
    o.status = ACTIVATION_BUDGET_EXHAUSTED;
    o.budget = PROTO_BUDGET_CPU;
    activation_describe(&o, words, sizeof words);
    bool ok = strcmp(words, "budget exhausted: cpu") == 0 && !activation_keeps_worker(&o);
    o.budget = PROTO_BUDGET_MEMORY;
    activation_describe(&o, words, sizeof words);
    ok = ok && strcmp(words, "budget exhausted: memory") == 0;
    o.budget = PROTO_BUDGET_STACK;
    activation_describe(&o, words, sizeof words);
    ok = ok && strcmp(words, "budget exhausted: stack") == 0;
    o.status = ACTIVATION_DEADLINE;
    activation_describe(&o, words, sizeof words);
    ok = ok && strcmp(words, "deadline") == 0 && !activation_keeps_worker(&o);
    o.status = ACTIVATION_FAILED;
    o.failure_kind = strdup("script_error");
    o.detail = strdup("ReferenceError: x is not defined");
    activation_describe(&o, words, sizeof words);
    ok = ok && strcmp(words, "script error: ReferenceError: x is not defined") == 0 &&
         activation_keeps_worker(&o);
    free(o.failure_kind);
    o.failure_kind = strdup("engine_internal");
    ok = ok && !activation_keeps_worker(&o);
    activation_outcome_free(&o);
    o.status = ACTIVATION_STALLED;
    activation_describe(&o, words, sizeof words);
    ok = ok && strcmp(words, "stalled") == 0 && activation_keeps_worker(&o);
    check(ok, "driver: outcomes in words, and which keep their worker", "last '%s'", words);
}

/* ================================================================== part 2: ck-basal exec */

static struct proc_result exec_parent(const char *const args[])
{
    const char *argv[32];
    size_t n = 0;
    argv[n++] = harness_test_parent();
    for (size_t i = 0; args[i] != NULL && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return proc_run(argv, NULL, 0, 60000);
}

/* The n-th line of text (0-based) parsed as JSON; NULL if absent or not JSON. */
static json_t *json_line(const char *text, int n)
{
    const char *at = text;
    for (int i = 0; i < n && at != NULL; i++) {
        at = strchr(at, '\n');
        if (at != NULL)
            at++;
    }
    if (at == NULL || *at == '\0')
        return NULL;
    size_t len = strcspn(at, "\n");
    json_error_t error;
    return json_loadb(at, len, 0, &error);
}

static void test_exec(void)
{
    if (!require_binary(harness_test_parent(), "exec: ck-basal test build present") ||
        !require_binary(harness_test_worker(), "exec: ck-basal-worker test build present"))
        return;
    const char *trivial = harness_tmp_file("trivial.js", "return {a: 1, b: [true, null, 'x']};\n");
    const char *args1[] = {"exec", trivial, NULL};
    struct proc_result r = exec_parent(args1);
    check(proc_exited_with(&r, 0) && output_has_line(r.out, "{\"a\":1,\"b\":[true,null,\"x\"]}"),
          "exec: a trivial script prints its JSON result and exits 0", "%s; out '%s'",
          proc_describe(&r), r.out);
    proc_result_free(&r);

    const char *args2[] = {"--json", "exec", trivial, NULL};
    r = exec_parent(args2);
    json_t *line = json_line(r.out, 0);
    check(proc_exited_with(&r, 0) && line != NULL &&
              strcmp(str_or_empty(json_object_get(line, "outcome")), "completed") == 0 &&
              json_integer_value(json_object_get(json_object_get(line, "value"), "a")) == 1 &&
              json_integer_value(json_object_get(line, "pid")) > 0,
          "exec --json: one object per run with outcome, value and worker pid", "%s; out '%s'",
          proc_describe(&r), r.out);
    json_decref(line);
    proc_result_free(&r);

    /* The flow API reaches the test host's calls as ops.call("test", op, args). */
    const char *calls = harness_tmp_file(
        "calls.js",
        "const T = (op, ...args) => ops.call('test', op, args);\n"
        "const t0 = now();\n"
        "const [a, b] = await Promise.all([T('sleep', 100), T('echo', 1, 'two')]);\n"
        "let caught = null;\n"
        "try { await T('fail', 'not_found'); } catch (e) { caught = e.name + ':' + e.data.code; }\n"
        "let denied = null;\n"
        "try { await fs.read('/etc/passwd'); } catch (e) { denied = e.data.code; }\n"
        "await kv.set('k', {v: 3});\n"
        "const got = await kv.get('k');\n"
        "const c = await T('counter');\n"
        "const r = random();\n"
        "return {a, b, caught, denied, got, c, r01: r >= 0 && r < 1, elapsed: now() - t0 >= 100};\n");
    const char *args3[] = {"--json", "exec", calls, NULL};
    r = exec_parent(args3);
    line = json_line(r.out, 0);
    json_t *value = json_object_get(line, "value");
    char *text = value != NULL ? json_dumps(value, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    check(proc_exited_with(&r, 0) && text != NULL &&
              strcmp(text, "{\"a\":null,\"b\":[1,\"two\"],\"c\":1,\"caught\":\"HostError:not_found\","
                           "\"denied\":\"denied\",\"elapsed\":true,\"got\":{\"v\":3},"
                           "\"r01\":true}") == 0,
          "exec: host calls settle (test.sleep, test.echo, a caught test.fail HostError, a "
          "denied fs.read, kv, counter, now, random)",
          "%s; out '%s'", proc_describe(&r), r.out);
    free(text);
    json_decref(line);
    proc_result_free(&r);

    const char *thrower = harness_tmp_file("throws.js", "throw new TypeError('boom');\n");
    const char *args4[] = {"exec", thrower, NULL};
    r = exec_parent(args4);
    check(proc_exited_with(&r, 1) && output_has_line_prefix(r.out, "script error: ") &&
              strstr(r.out, "boom") != NULL,
          "exec: a script error prints 'script error: <message>' and exits 1", "%s; out '%s'",
          proc_describe(&r), r.out);
    proc_result_free(&r);

    /* A failure the script caused itself is a clean end: the worker is kept. */
    const char *syntax = harness_tmp_file("syntax.js", "return (;\n");
    const char *args4b[] = {"--json", "exec", thrower, syntax, trivial, NULL};
    r = exec_parent(args4b);
    json_t *f0 = json_line(r.out, 0), *f1 = json_line(r.out, 1), *f2 = json_line(r.out, 2);
    check(proc_exited_with(&r, 1) &&
              strcmp(str_or_empty(json_object_get(f0, "kind")), "script_error") == 0 &&
              strcmp(str_or_empty(json_object_get(f1, "kind")), "syntax_error") == 0 &&
              strcmp(str_or_empty(json_object_get(f2, "outcome")), "completed") == 0 &&
              json_integer_value(json_object_get(f0, "pid")) > 0 &&
              json_integer_value(json_object_get(f1, "pid")) ==
                  json_integer_value(json_object_get(f0, "pid")) &&
              json_integer_value(json_object_get(f2, "pid")) ==
                  json_integer_value(json_object_get(f0, "pid")),
          "pool: a script error or syntax error is a clean end; the same worker serves the "
          "next run [guard keep-on-clean-end]",
          "%s; out '%s'", proc_describe(&r), r.out);
    json_decref(f0);
    json_decref(f1);
    json_decref(f2);
    proc_result_free(&r);

    const char *args5[] = {"exec", "/nonexistent/script.js", NULL};
    r = exec_parent(args5);
    check(proc_exited_with(&r, 2) && strstr(r.err, "cannot read script /nonexistent/script.js") &&
              strchr(r.err, '\n') == r.err + strlen(r.err) - 1,
          "exec: an unreadable script is a usage error, one line, exit 2", "%s", proc_describe(&r));
    proc_result_free(&r);

    const char *args6[] = {"exec", trivial, "--no-such-option", NULL};
    r = exec_parent(args6);
    check(proc_exited_with(&r, 2) && strstr(r.err, "unknown option '--no-such-option'") &&
              r.out_len == 0,
          "exec: an unknown option is a usage error, one line, exit 2", "%s", proc_describe(&r));
    proc_result_free(&r);

    const char *args7[] = {"exec", trivial, "--cpu-ms", "lots", NULL};
    r = exec_parent(args7);
    check(proc_exited_with(&r, 2) && strstr(r.err, "--cpu-ms must be a whole number"),
          "exec: a bad number is a usage error, exit 2", "%s", proc_describe(&r));
    proc_result_free(&r);

    /* Several scripts, repeated, through one pool: one line each, in order. */
    const char *one = harness_tmp_file("one.js", "return 1;\n");
    const char *two = harness_tmp_file("two.js", "return 2;\n");
    const char *args8[] = {"exec", one, two, "--repeat", "2", NULL};
    r = exec_parent(args8);
    check(proc_exited_with(&r, 0) && strcmp(r.out, "1\n1\n2\n2\n") == 0,
          "exec: each script runs --repeat times, in order, one result line per run", "%s; '%s'",
          proc_describe(&r), r.out);
    proc_result_free(&r);

    /* The host lives in the parent for the whole exec: the counter continues across
     * runs while the worker keeps nothing. */
    const char *counter =
        harness_tmp_file("counter.js", "return await ops.call('test', 'counter');\n");
    const char *args9[] = {"exec", counter, "--repeat", "3", NULL};
    r = exec_parent(args9);
    check(proc_exited_with(&r, 0) && strcmp(r.out, "1\n2\n3\n") == 0,
          "exec: the test host's state lives in the parent across runs", "%s; '%s'",
          proc_describe(&r), r.out);
    proc_result_free(&r);

    /* Settlements are released one per Blocked, only while the worker waits, so a run
     * that ends with calls still outstanding (a lost race, a call never awaited)
     * leaves no Deliver behind in the worker's stdin: the next run on the same worker
     * is clean. */
    const char *race = harness_tmp_file(
        "race.js",
        "ops.call('test', 'sleep', [5]);\n"
        "return await Promise.race([ops.call('test', 'sleep', [300]),\n"
        "                           ops.call('test', 'echo', ['fast'])]);\n");
    const char *after = harness_tmp_file("after.js", "return await ops.call('test', 'echo', 'next');\n");
    const char *args11[] = {"--json", "exec", race, after, "--repeat", "2", NULL};
    r = exec_parent(args11);
    json_t *runs[4];
    for (int i = 0; i < 4; i++)
        runs[i] = json_line(r.out, i);
    bool same_pid = true, completed = true;
    for (int i = 0; i < 4; i++) {
        completed = completed && runs[i] != NULL &&
                    strcmp(str_or_empty(json_object_get(runs[i], "outcome")), "completed") == 0;
        same_pid = same_pid && runs[i] != NULL &&
                   json_integer_value(json_object_get(runs[i], "pid")) ==
                       json_integer_value(json_object_get(runs[0], "pid"));
    }
    check(proc_exited_with(&r, 0) && completed && same_pid &&
              strcmp(str_or_empty(json_object_get(runs[0], "message")), "[\"fast\"]") == 0 &&
              strcmp(str_or_empty(json_object_get(runs[3], "message")), "[\"next\"]") == 0,
          "exec: runs ending with host calls outstanding leave nothing behind; the same worker "
          "serves the next runs cleanly [guard deliver-only-when-blocked]",
          "%s; out '%s'", proc_describe(&r), r.out);
    for (int i = 0; i < 4; i++)
        json_decref(runs[i]);
    proc_result_free(&r);

    const char *stall = harness_tmp_file("stall.js", "await new Promise(() => {});\nreturn 1;\n");
    const char *args10[] = {"exec", stall, NULL};
    r = exec_parent(args10);
    check(proc_exited_with(&r, 1) && output_has_line(r.out, "stalled"),
          "exec: awaiting a promise nothing can settle ends as 'stalled'", "%s; '%s'",
          proc_describe(&r), r.out);
    proc_result_free(&r);
}

int main(void)
{
    the_host = test_host_new();
    test_ordering();
    test_long_running();
    expect_protocol_error(body_refuses,
                          "driver: a Refused during an activation is a protocol error; the "
                          "worker is killed [guard refused-retires]",
                          "refused");
    expect_protocol_error(body_position_skips,
                          "driver: a HostCall out of position order is a protocol error "
                          "[guard position-order]",
                          "expected 0");
    expect_protocol_error(body_blocked_nothing,
                          "driver: Blocked with no host call outstanding is a protocol error",
                          "no host call outstanding");
    expect_protocol_error(body_blocked_unknown,
                          "driver: Blocked on a position never called is a protocol error",
                          "position 9");
    expect_protocol_error(body_call_while_blocked,
                          "driver: a HostCall while blocked is a protocol error", "while blocked");
    expect_protocol_error(body_oversized,
                          "driver: an oversized frame header is a protocol error, nothing "
                          "allocated [guard frame-max]",
                          "oversized");
    expect_protocol_error(body_malformed, "driver: a malformed frame is a protocol error",
                          "malformed");
    expect_protocol_error(body_welcome_again,
                          "driver: a Welcome during an activation is a protocol error",
                          "unexpected welcome");
    test_deaths();
    test_sizes();
    test_words();
    test_host_free(the_host);

    if (harness_tmpdir("activation") == NULL)
        return harness_finish();
    test_exec();
    harness_remove_tmpdir();
    return harness_finish();
}
