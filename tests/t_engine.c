/* The worker's engine, spoken to directly: this test is the parent, with the real
 * codec over the worker's pipes and a scripted host, so each check sees exactly the
 * frames the worker sends (docs/engine.md).
 *
 *   protocol    states, refusals naming the state, unknown positions, delivery-order
 *               regressions, exit statuses
 *   lockdown    every code-from-string route dead, import() rejected, the engine's
 *               Date unreachable, every intrinsic frozen, primordials the engine uses
 *               immune to a script's replacements
 *   API         kinds and arguments of host calls, HostError, local too_large,
 *               host-backed time and randomness, the frozen trigger, codemode
 *   promises    host-call, step() and result promises settled from C (patch 0006)
 *   replay      recorded outcomes in delivery order (Promise.race), nondeterminism
 *   budgets     cpu, memory (caught and uncaught), stack, at the worker; the CPU
 *               timer's backstop and the refusal without a timer
 *   plain       QuickJS's own test suites in the test-only plain profile, confined
 *   SIGSYS      the test hook dies by SIGSYS in the middle of an activation */
#include "lib/harness.h"
#include "proto/channel.h"
#include "proto/frame.h"
#include "proto/message.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_MS 20000

/* ================================================================== the worker */

struct worker {
    struct proc p;
    bool started;
    struct wire_buf buf;
};

static bool worker_start(struct worker *w, const char *binary, const char *extra)
{
    memset(w, 0, sizeof *w);
    const char *argv[] = {binary, "--landlock=required", extra, NULL};
    struct proc_opts opts = {false, PROC_PIPE, PROC_PIPE, PROC_PIPE, HARNESS_EMPTY_ENV};
    w->started = proc_start(&w->p, argv, &opts) == 0;
    return w->started;
}

static bool send_msg(struct worker *w, const struct proto_msg *msg)
{
    struct wire_buf payload;
    wire_buf_init(&payload);
    bool ok = proto_encode(msg, &payload) == PROTO_OK;
    uint8_t header[PROTO_FRAME_HEADER_BYTES];
    frame_header_encode((uint32_t)payload.len, header);
    ok = ok && fd_write_all(w->p.in_fd, header, sizeof header, TIMEOUT_MS) == 0 &&
         (payload.len == 0 || fd_write_all(w->p.in_fd, payload.data, payload.len, TIMEOUT_MS) == 0);
    wire_buf_free(&payload);
    return ok;
}

static bool send_raw(struct worker *w, const void *bytes, size_t len)
{
    return fd_write_all(w->p.in_fd, bytes, len, TIMEOUT_MS) == 0;
}

/* The next message from the worker; false on EOF, timeout or a frame that does not
 * decode (*msg is then zeroed). */
static bool recv_msg(struct worker *w, struct proto_msg *msg)
{
    memset(msg, 0, sizeof *msg);
    uint8_t header[PROTO_FRAME_HEADER_BYTES];
    if (fd_read_exact(w->p.out_fd, header, sizeof header, TIMEOUT_MS) != 0)
        return false;
    uint32_t len = (uint32_t)header[0] << 24 | (uint32_t)header[1] << 16 |
                   (uint32_t)header[2] << 8 | header[3];
    if (len > PROTO_MAX_FRAME || !wire_buf_reserve(&w->buf, len ? len : 1))
        return false;
    if (len > 0 && fd_read_exact(w->p.out_fd, w->buf.data, len, TIMEOUT_MS) != 0)
        return false;
    return proto_decode(w->buf.data, len, msg) == PROTO_OK;
}

static struct proc_result worker_end(struct worker *w)
{
    wire_buf_free(&w->buf);
    w->started = false;
    return proc_finish(&w->p, NULL, 0, TIMEOUT_MS);
}

static void send_hello(struct worker *w, uint32_t version)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_HELLO;
    msg.hello.version = version;
    send_msg(w, &msg);
}

/* Starts a worker and greets it; the Welcome is left in *welcome if not NULL. */
static bool worker_ready(struct worker *w, const char *binary, const char *extra,
                         struct proto_msg *welcome)
{
    if (!worker_start(w, binary, extra))
        return false;
    send_hello(w, PROTO_VERSION);
    struct proto_msg msg;
    bool ok = recv_msg(w, &msg) && msg.tag == PROTO_WELCOME;
    if (ok && welcome != NULL)
        *welcome = msg;
    else
        proto_msg_free(&msg);
    return ok;
}

static bool text_eq(struct proto_text text, const char *expected)
{
    return text.len == strlen(expected) && memcmp(text.str, expected, text.len) == 0;
}

static bool text_has(struct proto_text text, const char *part)
{
    return text.str != NULL && strstr(text.str, part) != NULL;
}

/* ================================================================== a scripted host */

struct host_opts {
    bool reverse;            /* deliver the awaited calls newest first */
    const char *reject_kind; /* calls of this kind are refused: {"code":"denied",...} */
    const char *long_kind;   /* calls of this kind are declared long-running */
};

struct journal_entry {
    uint32_t position;
    char kind[32];
    uint8_t digest[32];
    bool settled;
    bool rejected;
    char *value;
    uint32_t order;
    char args[160];
};

struct run {
    struct journal_entry journal[1200];
    uint32_t calls;
    uint32_t next_order;
    size_t blocked;
    size_t refusals;
    char refusal[256];
    char console[256];
    /* the Finished */
    bool finished;
    enum proto_outcome outcome;
    enum proto_budget exhausted;
    char *value;
    char *kind;
    char *detail;
};

static void run_free(struct run *r)
{
    for (uint32_t i = 0; i < r->calls && i < 1200; i++)
        free(r->journal[i].value);
    free(r->value);
    free(r->kind);
    free(r->detail);
    memset(r, 0, sizeof *r);
}

static char *dup_text(struct proto_text text)
{
    char *copy = malloc(text.len + 1);
    if (copy != NULL) {
        if (text.len > 0)
            memcpy(copy, text.str, text.len);
        copy[text.len] = '\0';
    }
    return copy;
}

static void sha256_of(const void *data, size_t len, uint8_t digest[32])
{
    unsigned int out = 32;
    if (EVP_Digest(data, len, digest, &out, EVP_sha256(), NULL) != 1)
        memset(digest, 0, 32);
}

static bool deliver(struct worker *w, struct run *r, uint32_t position)
{
    struct journal_entry *e = &r->journal[position];
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_DELIVER;
    msg.deliver.position = position;
    msg.deliver.settlement = e->rejected ? PROTO_SETTLEMENT_REJECTED : PROTO_SETTLEMENT_FULFILLED;
    msg.deliver.value = proto_text_of(e->value);
    msg.deliver.delivery_order = e->order = r->next_order++;
    e->settled = true;
    return send_msg(w, &msg);
}

static void answer(const struct host_opts *o, struct journal_entry *e)
{
    char value[256];
    if (strcmp(e->kind, "now") == 0)
        (void)snprintf(value, sizeof value, "%u", 1700000000u + e->position);
    else if (strcmp(e->kind, "random") == 0)
        (void)snprintf(value, sizeof value, "0.25");
    else if (o->reject_kind != NULL && strcmp(e->kind, o->reject_kind) == 0)
        (void)snprintf(value, sizeof value, "{\"code\":\"denied\",\"message\":\"not granted\"}");
    else
        (void)snprintf(value, sizeof value, "{\"position\":%u}", e->position);
    e->rejected = o->reject_kind != NULL && strcmp(e->kind, o->reject_kind) == 0;
    e->value = strdup(value);
}

/* Sends the Activate and plays the host until Finished (or the worker ends). */
static bool run_activation(struct worker *w, const struct proto_activate *activate,
                           const struct host_opts *o, struct run *r)
{
    static const struct host_opts none = {false, NULL, NULL};
    if (o == NULL)
        o = &none;
    if (r->next_order == 0)
        r->next_order = 1;
    for (size_t i = 0; i < activate->prefix_count; i++)
        if (activate->prefix[i].delivery_order >= r->next_order)
            r->next_order = activate->prefix[i].delivery_order + 1;
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_ACTIVATE;
    msg.activate = *activate;
    if (!send_msg(w, &msg))
        return false;
    uint32_t pending[1200];
    size_t pending_count = 0;
    for (;;) {
        struct proto_msg in;
        if (!recv_msg(w, &in))
            return false;
        bool ok = true;
        if (in.tag == PROTO_HOST_CALL && in.host_call.position < 1200) {
            uint32_t position = in.host_call.position;
            struct journal_entry *e = &r->journal[position];
            if (position >= r->calls)
                r->calls = position + 1;
            e->position = position;
            (void)snprintf(e->kind, sizeof e->kind, "%.*s", (int)in.host_call.kind.len,
                           in.host_call.kind.str);
            (void)snprintf(e->args, sizeof e->args, "%.*s", (int)in.host_call.args.len,
                           in.host_call.args.str);
            sha256_of(in.host_call.args.str, in.host_call.args.len, e->digest);
            answer(o, e);
            if (strcmp(e->kind, "now") == 0 || strcmp(e->kind, "random") == 0) {
                ok = deliver(w, r, position);
            } else if (o->long_kind != NULL && strcmp(e->kind, o->long_kind) == 0) {
                struct proto_msg lr;
                memset(&lr, 0, sizeof lr);
                lr.tag = PROTO_LONG_RUNNING;
                lr.long_running.items = &position;
                lr.long_running.count = 1;
                ok = send_msg(w, &lr);
            } else {
                pending[pending_count++] = position;
            }
        } else if (in.tag == PROTO_BLOCKED) {
            r->blocked++;
            /* One delivery per Blocked, as the parent does. */
            if (pending_count > 0) {
                size_t pick = o->reverse ? pending_count - 1 : 0;
                uint32_t position = pending[pick];
                memmove(&pending[pick], &pending[pick + 1],
                        (pending_count - pick - 1) * sizeof pending[0]);
                pending_count--;
                ok = deliver(w, r, position);
            }
        } else if (in.tag == PROTO_REFUSED) {
            r->refusals++;
            (void)snprintf(r->refusal, sizeof r->refusal, "%s: %.*s",
                           proto_refusal_name(in.refused.reason), (int)in.refused.detail.len,
                           in.refused.detail.str);
        } else if (in.tag == PROTO_CONSOLE) {
            size_t used = strlen(r->console);
            (void)snprintf(r->console + used, sizeof r->console - used, "%.*s:%.*s;",
                           (int)in.console.stream.len, in.console.stream.str,
                           (int)in.console.text.len, in.console.text.str);
        } else if (in.tag == PROTO_FINISHED) {
            r->finished = true;
            r->outcome = in.finished.outcome;
            r->exhausted = in.finished.exhausted;
            r->value = dup_text(in.finished.value);
            r->kind = dup_text(in.finished.failure_kind);
            r->detail = dup_text(in.finished.failure_detail);
            proto_msg_free(&in);
            return true;
        }
        proto_msg_free(&in);
        if (!ok)
            return false;
    }
}

static struct proto_activate activation(const char *script)
{
    struct proto_activate a;
    memset(&a, 0, sizeof a);
    a.activation_id = 1;
    a.profile = PROTO_PROFILE_FLOW;
    a.script = proto_text_of(script);
    a.trigger = proto_text_of("{\"event\":{\"name\":\"push\",\"n\":[1,2]}}");
    a.budgets.cpu_ms = 2000;
    a.budgets.heap_bytes = 8u << 20;
    a.budgets.stack_bytes = 1u << 20;
    a.budgets.max_value_bytes = 256u << 10;
    return a;
}

/* "completed <json>", "failed <kind>: <detail>", "budget_exhausted <which>", ... */
static const char *describe(const struct run *r)
{
    static char text[4200];
    if (!r->finished)
        (void)snprintf(text, sizeof text, "no Finished");
    else if (r->outcome == PROTO_OUTCOME_COMPLETED)
        (void)snprintf(text, sizeof text, "completed %s", r->value);
    else if (r->outcome == PROTO_OUTCOME_FAILED)
        (void)snprintf(text, sizeof text, "failed %s: %s", r->kind, r->detail);
    else if (r->outcome == PROTO_OUTCOME_BUDGET_EXHAUSTED)
        (void)snprintf(text, sizeof text, "budget_exhausted %s", proto_budget_name(r->exhausted));
    else
        (void)snprintf(text, sizeof text, "%s", proto_outcome_name(r->outcome));
    return text;
}

/* Runs one script in a fresh worker (the test worker unless binary is given). */
static void run_one(const char *script, const struct proto_activate *custom,
                    const struct host_opts *o, struct run *r)
{
    memset(r, 0, sizeof *r);
    struct worker w;
    if (!worker_ready(&w, harness_test_worker(), NULL, NULL)) {
        if (w.started) {
            struct proc_result res = worker_end(&w);
            proc_result_free(&res);
        }
        return;
    }
    struct proto_activate a = custom != NULL ? *custom : activation(script);
    run_activation(&w, &a, o, r);
    struct proc_result res = worker_end(&w);
    proc_result_free(&res);
}

static bool completed_with(const struct run *r, const char *json)
{
    return r->finished && r->outcome == PROTO_OUTCOME_COMPLETED && r->value != NULL &&
           json != NULL && strcmp(r->value, json) == 0;
}

static bool failed_with(const struct run *r, const char *kind, const char *detail_part)
{
    return r->finished && r->outcome == PROTO_OUTCOME_FAILED && r->kind != NULL &&
           r->detail != NULL && strcmp(r->kind, kind) == 0 &&
           (detail_part == NULL || strstr(r->detail, detail_part) != NULL);
}

static bool exhausted(const struct run *r, enum proto_budget which)
{
    return r->finished && r->outcome == PROTO_OUTCOME_BUDGET_EXHAUSTED && r->exhausted == which;
}

/* ================================================================== protocol */

/* The next message is tag (PROTO_REFUSED or PROTO_FINISHED) with code, its reason or
 * outcome, and a text matching want_text (NULL: any): a refusal's detail holds it, a
 * finished run's value is it exactly. */
static void expect_ending(struct worker *w, enum proto_tag tag, int code, const char *want_text,
                          const char *name)
{
    struct proto_msg msg;
    bool got = recv_msg(w, &msg);
    bool refused = tag == PROTO_REFUSED;
    bool tag_ok = got && msg.tag == tag;
    int got_code = !tag_ok ? -1 : refused ? (int)msg.refused.reason : (int)msg.finished.outcome;
    struct proto_text text = !tag_ok  ? proto_text_of("")
                             : refused ? msg.refused.detail
                                       : msg.finished.value;
    bool text_ok = want_text == NULL ||
                   (refused ? text_has(text, want_text) : text_eq(text, want_text));
    check(tag_ok && got_code == code && text_ok, name, "got %s %s '%.*s'",
          got ? proto_msg_name(msg.tag) : "nothing",
          !tag_ok   ? ""
          : refused ? proto_refusal_name(msg.refused.reason)
                    : proto_outcome_name(msg.finished.outcome),
          (int)text.len, text.str);
    proto_msg_free(&msg);
}

static void expect_refused(struct worker *w, enum proto_refusal reason, const char *detail,
                           const char *name)
{
    expect_ending(w, PROTO_REFUSED, (int)reason, detail, name);
}

static bool expect_tag(struct worker *w, enum proto_tag tag, struct proto_msg *keep)
{
    struct proto_msg msg;
    bool ok = recv_msg(w, &msg) && msg.tag == tag;
    if (keep != NULL && ok)
        *keep = msg;
    else
        proto_msg_free(&msg);
    return ok;
}

static void send_activate(struct worker *w, const char *script)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_ACTIVATE;
    msg.activate = activation(script);
    send_msg(w, &msg);
}

static void send_deliver(struct worker *w, uint32_t position, uint32_t order, const char *value)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_DELIVER;
    msg.deliver.position = position;
    msg.deliver.settlement = PROTO_SETTLEMENT_FULFILLED;
    msg.deliver.value = proto_text_of(value);
    msg.deliver.delivery_order = order;
    send_msg(w, &msg);
}

static void send_long_running(struct worker *w, uint32_t position)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_LONG_RUNNING;
    msg.long_running.items = &position;
    msg.long_running.count = 1;
    send_msg(w, &msg);
}

static void expect_finished(struct worker *w, enum proto_outcome outcome, const char *value,
                            const char *name)
{
    expect_ending(w, PROTO_FINISHED, (int)outcome, value, name);
}

static void test_protocol(void)
{
    struct worker w;
    if (!check(worker_start(&w, harness_test_worker(), NULL), "protocol: worker starts",
               "%s", strerror(errno)))
        return;
    send_hello(&w, PROTO_VERSION + 1);
    char speaks[64];
    (void)snprintf(speaks, sizeof speaks, "speaks version %u", PROTO_VERSION);
    expect_refused(&w, PROTO_REFUSAL_VERSION_MISMATCH, speaks,
                   "protocol: Hello with another version is refused (version_mismatch)");
    send_activate(&w, "return 1");
    expect_refused(&w, PROTO_REFUSAL_UNEXPECTED_FRAME, "activate in state awaiting-hello",
                   "protocol: Activate before Hello is refused naming the state");
    send_deliver(&w, 0, 1, "1");
    expect_refused(&w, PROTO_REFUSAL_UNEXPECTED_FRAME, "deliver in state awaiting-hello",
                   "protocol: Deliver before Hello is refused naming the state");
    send_long_running(&w, 0);
    expect_refused(&w, PROTO_REFUSAL_UNEXPECTED_FRAME, "long_running in state awaiting-hello",
                   "protocol: LongRunning before Hello is refused naming the state");
    static const uint8_t unknown_tag[] = {0, 0, 0, 3, 0x99, 1, 2};
    send_raw(&w, unknown_tag, sizeof unknown_tag);
    expect_refused(&w, PROTO_REFUSAL_MALFORMED, "unknown_tag",
                   "protocol: a frame with an unknown tag is refused as malformed");
    send_hello(&w, PROTO_VERSION);
    struct proto_msg welcome;
    memset(&welcome, 0, sizeof welcome);
    if (check(expect_tag(&w, PROTO_WELCOME, &welcome), "protocol: Hello is answered by Welcome",
              "no Welcome")) {
        /* Welcome.prelude_hash is the SHA-256 of src/worker/prelude.js. */
        char path[4200];
        (void)snprintf(path, sizeof path, "%s/../src/worker/prelude.js", harness_build_dir());
        char *prelude = read_text_file(path);
        uint8_t digest[32] = {0};
        if (prelude != NULL)
            sha256_of(prelude, strlen(prelude), digest);
        check(prelude != NULL && memcmp(digest, welcome.welcome.prelude_hash, 32) == 0 &&
                  text_eq(welcome.welcome.engine, "quickjs 2021-03-27"),
              "protocol: Welcome reports the engine and the SHA-256 of src/worker/prelude.js",
              "%s", prelude != NULL ? "hash differs" : "prelude.js unreadable");
        free(prelude);
        proto_msg_free(&welcome);
    }
    send_hello(&w, PROTO_VERSION);
    expect_refused(&w, PROTO_REFUSAL_UNEXPECTED_FRAME, "hello in state ready",
                   "protocol: a second Hello is refused naming the state");
    send_deliver(&w, 0, 1, "1");
    expect_refused(&w, PROTO_REFUSAL_UNEXPECTED_FRAME, "deliver in state ready",
                   "protocol: Deliver while ready is refused naming the state");
    send_long_running(&w, 0);
    expect_refused(&w, PROTO_REFUSAL_UNEXPECTED_FRAME, "long_running in state ready",
                   "protocol: LongRunning while ready is refused naming the state");

    send_activate(&w, "const a = kv.get('a'); const b = kv.get('b');\n"
                      "return [await a, await b, now()];");
    int frames = expect_tag(&w, PROTO_HOST_CALL, NULL);
    frames += expect_tag(&w, PROTO_HOST_CALL, NULL);
    frames += expect_tag(&w, PROTO_BLOCKED, NULL);
    check(frames == 3, "protocol: two async host calls, then Blocked", "frames differ");
    bool calls;
    send_hello(&w, PROTO_VERSION);
    expect_refused(&w, PROTO_REFUSAL_UNEXPECTED_FRAME, "hello in state running",
                   "protocol: Hello while running is refused naming the state");
    send_activate(&w, "return 2");
    expect_refused(&w, PROTO_REFUSAL_UNEXPECTED_FRAME, "activate in state running",
                   "protocol: Activate while running is refused naming the state");
    send_deliver(&w, 7, 5, "1");
    expect_refused(&w, PROTO_REFUSAL_UNKNOWN_POSITION, "position 7 is not awaited",
                   "protocol: Deliver for a position never called is refused (unknown_position)");
    send_deliver(&w, 0, 5, "not json");
    expect_refused(&w, PROTO_REFUSAL_MALFORMED, "not JSON",
                   "protocol: Deliver whose value is not JSON is refused as malformed");
    send_deliver(&w, 1, 5, "\"b\"");
    check(expect_tag(&w, PROTO_BLOCKED, NULL),
          "protocol: after one of two deliveries the worker is Blocked again", "no Blocked");
    send_deliver(&w, 0, 5, "\"a\"");
    expect_refused(&w, PROTO_REFUSAL_DELIVERY_ORDER_REGRESSION, "does not follow",
                   "protocol: a repeated delivery order is refused (delivery_order_regression)");
    send_deliver(&w, 0, 4, "\"a\"");
    expect_refused(&w, PROTO_REFUSAL_DELIVERY_ORDER_REGRESSION, "does not follow",
                   "protocol: a lower delivery order is refused (delivery_order_regression)");
    send_deliver(&w, 1, 9, "\"b\"");
    expect_refused(&w, PROTO_REFUSAL_UNKNOWN_POSITION, "position 1 is not awaited",
                   "protocol: a second Deliver for a settled position is refused");
    send_raw(&w, unknown_tag, sizeof unknown_tag);
    expect_refused(&w, PROTO_REFUSAL_MALFORMED, NULL,
                   "protocol: a malformed frame while running is refused and the run goes on");
    send_deliver(&w, 0, 6, "\"a\"");
    check(expect_tag(&w, PROTO_HOST_CALL, NULL), "protocol: now() is a host call", "none");
    send_long_running(&w, 2);
    expect_refused(&w, PROTO_REFUSAL_UNKNOWN_POSITION, "position 2",
                   "protocol: LongRunning naming the synchronous call is refused");
    send_deliver(&w, 2, 7, "123");
    expect_finished(&w, PROTO_OUTCOME_COMPLETED, "[\"a\",\"b\",123]",
                    "protocol: the synchronous Deliver returns now()'s value and the run ends");

    send_activate(&w, "await kv.get('x'); return 1");
    check(expect_tag(&w, PROTO_HOST_CALL, NULL) && expect_tag(&w, PROTO_BLOCKED, NULL),
          "protocol: a call, then Blocked", "frames differ");
    send_long_running(&w, 0);
    expect_finished(&w, PROTO_OUTCOME_SUSPENDED, NULL,
                    "protocol: blocked only on long-running calls ends as suspended");
    send_activate(&w, "await new Promise(() => {}); return 1");
    expect_finished(&w, PROTO_OUTCOME_STALLED, NULL,
                    "protocol: awaiting what nothing can settle ends as stalled");
    send_activate(&w, "return 'still serving'");
    expect_finished(&w, PROTO_OUTCOME_COMPLETED, "\"still serving\"",
                    "protocol: the worker serves the next Activate after each ending");
    struct proc_result r = worker_end(&w);
    check(proc_exited_with(&r, 0), "protocol: EOF at a frame boundary ends the worker with exit 0",
          "%s", proc_describe(&r));
    proc_result_free(&r);

    if (worker_ready(&w, harness_test_worker(), NULL, NULL)) {
        send_activate(&w, "await kv.get('a'); return 1");
        calls = expect_tag(&w, PROTO_HOST_CALL, NULL) && expect_tag(&w, PROTO_BLOCKED, NULL);
        struct proto_msg shutdown;
        memset(&shutdown, 0, sizeof shutdown);
        shutdown.tag = PROTO_SHUTDOWN;
        send_msg(&w, &shutdown);
        r = worker_end(&w);
        check(calls && proc_exited_with(&r, 0),
              "protocol: Shutdown in the middle of an activation exits 0", "%s", proc_describe(&r));
        proc_result_free(&r);
    }
    if (worker_ready(&w, harness_test_worker(), NULL, NULL)) {
        static const uint8_t oversized[] = {0x7f, 0xff, 0xff, 0xff};
        send_raw(&w, oversized, sizeof oversized);
        r = worker_end(&w);
        check(proc_exited_with(&r, 3), "protocol: an oversized frame header exits 3", "%s",
              proc_describe(&r));
        proc_result_free(&r);
    }
    if (worker_ready(&w, harness_test_worker(), NULL, NULL)) {
        send_activate(&w, "await kv.get('a'); return 1");
        calls = expect_tag(&w, PROTO_HOST_CALL, NULL) && expect_tag(&w, PROTO_BLOCKED, NULL);
        static const uint8_t truncated[] = {0, 0, 0, 10, PROTO_DELIVER, 0};
        send_raw(&w, truncated, sizeof truncated);
        r = worker_end(&w);
        check(calls && proc_exited_with(&r, 3),
              "protocol: a stream truncated inside a frame while running exits 3", "%s",
              proc_describe(&r));
        proc_result_free(&r);
    }
    if (worker_ready(&w, harness_test_worker(), NULL, NULL)) {
        struct proto_recorded_entry prefix[2]; /* NOLINT(clang-analyzer-optin.performance.Padding) */
        memset(prefix, 0, sizeof prefix);
        prefix[0].kind = proto_text_of("now");
        prefix[0].settlement = PROTO_SETTLEMENT_FULFILLED;
        prefix[0].value = proto_text_of("1");
        prefix[0].delivery_order = 1;
        prefix[1] = prefix[0];
        prefix[1].delivery_order = 2;
        struct proto_msg msg;
        memset(&msg, 0, sizeof msg);
        msg.tag = PROTO_ACTIVATE;
        msg.activate = activation("return now()");
        msg.activate.prefix = prefix;
        msg.activate.prefix_count = 2;
        send_msg(&w, &msg);
        expect_refused(&w, PROTO_REFUSAL_MALFORMED, "position 0 is recorded twice",
                       "protocol: a prefix recording one position twice is refused");
        send_activate(&w, "return 5");
        expect_finished(&w, PROTO_OUTCOME_COMPLETED, "5",
                        "protocol: after a refused Activate the worker is still ready");
        r = worker_end(&w);
        proc_result_free(&r);
    }
}

/* ================================================================== lockdown */

static const char LOCKDOWN_SCRIPT[] =
    "const dead = {};\n"
    "function probe(name, f) { try { f(); dead[name] = false; } catch (e) { dead[name] = e.name; } }\n"
    "const P = Object.getPrototypeOf;\n"
    "probe('eval', () => eval('1'));\n"
    "probe('Function', () => Function('return 1'));\n"
    "probe('fn.constructor', () => (function () {}).constructor('return 1'));\n"
    "probe('new fn.constructor', () => new ((() => 1).constructor)('return 1'));\n"
    "probe('AsyncFunction', () => P(async function () {}).constructor('return 1'));\n"
    "probe('GeneratorFunction', () => P(function* () {}).constructor('yield 1'));\n"
    "probe('AsyncGeneratorFunction', () => P(async function* () {}).constructor('yield 1'));\n"
    "probe('class', () => (class {}).constructor('return 1'));\n"
    "let imported = false; try { await import('x'); imported = true; } catch (e) {}\n"
    "const absent = ['eval', 'Function', 'Atomics', 'SharedArrayBuffer', 'WeakRef',\n"
    "  'FinalizationRegistry', 'setTimeout', 'setInterval', '__date_clock', 'WebAssembly',\n"
    "  'std', 'os', 'print'].filter(n => n in globalThis);\n"
    "const D = P(new Date()).constructor;\n"
    "const dateHost = D === Date && Date.prototype.constructor === Date && new Date().getTime() === 1700000001 &&\n"
    "  Date.now() === 1700000002 && typeof Date() === 'string' && Math.random() === 0.25 &&\n"
    "  new Date(0).getTime() === 0;\n"
    "return {dead, imported, absent, dateHost};\n";

static const char WALK_SCRIPT[] =
    "const seen = new Set(), bad = [], P = Object.getPrototypeOf;\n"
    "const stack = [[globalThis, 'globalThis'], [P(async function () {}), 'AsyncFunction.prototype'],\n"
    "  [P(function* () {}), 'GeneratorFunction.prototype'], [P(async function* () {}), 'AsyncGeneratorFunction.prototype'],\n"
    "  [P([][Symbol.iterator]()), '%ArrayIteratorPrototype%'], [P(new Map().entries()), '%MapIteratorPrototype%'],\n"
    "  [P(new Set().values()), '%SetIteratorPrototype%'], [P(''[Symbol.iterator]()), '%StringIteratorPrototype%'],\n"
    "  [P(/a/[Symbol.matchAll]('')), '%RegExpStringIteratorPrototype%']];\n"
    "while (stack.length) {\n"
    "  const [o, path] = stack.pop();\n"
    "  if ((typeof o !== 'object' && typeof o !== 'function') || o === null || seen.has(o)) continue;\n"
    "  seen.add(o);\n"
    "  if (o !== globalThis && !Object.isFrozen(o)) bad.push(path);\n"
    "  stack.push([P(o), path + '.__proto__']);\n"
    "  for (const k of Reflect.ownKeys(o)) {\n"
    "    const d = Object.getOwnPropertyDescriptor(o, k);\n"
    "    if (o === globalThis && (d.configurable || d.writable)) bad.push('binding ' + String(k));\n"
    "    for (const v of [d.value, d.get, d.set]) stack.push([v, path + '.' + String(k)]);\n"
    "  }\n"
    "}\n"
    "globalThis.added = 1;\n"
    "return {objects: seen.size > 400, bad, open: globalThis.added === 1};\n";

static void test_lockdown(void)
{
    struct run r;
    run_one(LOCKDOWN_SCRIPT, NULL, NULL, &r);
    check(completed_with(&r, "{\"dead\":{\"eval\":\"ReferenceError\",\"Function\":\"ReferenceError\","
                             "\"fn.constructor\":\"TypeError\",\"new fn.constructor\":\"TypeError\","
                             "\"AsyncFunction\":\"TypeError\",\"GeneratorFunction\":\"TypeError\","
                             "\"AsyncGeneratorFunction\":\"TypeError\",\"class\":\"TypeError\"},"
                             "\"imported\":false,\"absent\":[],\"dateHost\":true}"),
          "lockdown: eval, Function, the async/generator constructors and import() are dead; "
          "timers, Atomics, WeakRef are absent; Date and Math.random are host-backed and the "
          "engine's Date is unreachable",
          "%s", describe(&r));
    run_free(&r);

    run_one(WALK_SCRIPT, NULL, NULL, &r);
    check(completed_with(&r, "{\"objects\":true,\"bad\":[],\"open\":true}"),
          "lockdown: every object reachable from the global object and the hidden intrinsic "
          "prototypes is frozen, every global binding read-only; the global object still "
          "takes the script's own globals",
          "%s", describe(&r));
    run_free(&r);

    /* A script that replaces what it can cannot change what the parent receives. */
    run_one("'use strict';\n"
            "const tried = [];\n"
            "for (const f of [() => { Promise.prototype.then = () => 42; },\n"
            "                 () => { Object.prototype.toJSON = () => 'hacked'; },\n"
            "                 () => Object.defineProperty(Object.prototype, 'then', {get() { return 1; }}),\n"
            "                 () => { JSON.stringify = () => '\"x\"'; },\n"
            "                 () => { Array.prototype.push = null; }]) {\n"
            "  try { f(); tried.push('changed'); } catch (e) { tried.push(e.name); }\n"
            "}\n"
            "return {tried, n: await kv.get('k')};\n",
            NULL, NULL, &r);
    check(completed_with(&r, "{\"tried\":[\"TypeError\",\"TypeError\",\"TypeError\",\"TypeError\","
                             "\"TypeError\"],\"n\":{\"position\":0}}"),
          "lockdown: replacing Promise.prototype.then, Object.prototype accessors, JSON or "
          "Array methods fails, and the result the parent receives is the script's own",
          "%s", describe(&r));
    run_free(&r);
}

/* ================================================================== the API */

/* Codemode console text counts in the heap budget: one console.log of 500 arguments
 * naming the same 1 MiB string asks for 500 MiB of text. It used to be built with
 * plain malloc (the worker reached 514 MB against a 64 MiB heap) and, when that
 * failed, to throw a catchable InternalError. Now it is built on the runtime's heap:
 * it exhausts the heap budget, whether the script catches or not, and the worker's
 * peak RSS stays near the budget. */
static void test_console_flood(void)
{
    static const struct {
        const char *what, *script;
    } FLOODS[] = {
        {"uncaught", "const s = 'x'.repeat(1 << 20);\n"
                     "console.log(...Array(500).fill(s));\nreturn 'logged';\n"},
        {"inside try/catch", "const s = 'x'.repeat(1 << 20);\n"
                             "try { console.log(...Array(500).fill(s)); }\n"
                             "catch (e) { return 'caught ' + e.message; }\nreturn 'logged';\n"},
        {"as the JSON of an array", "const a = Array(500).fill('x'.repeat(1 << 20));\n"
                                    "try { console.error(a); } catch (e) { return 'caught'; }\n"
                                    "return 'logged';\n"},
    };
    const uint64_t heap = 64u << 20;
    for (size_t i = 0; i < sizeof FLOODS / sizeof FLOODS[0]; i++) {
        char name[300];
        snprintf(name, sizeof name,
                 "console: a console.log flood of 500 MiB of text (%s) ends as budget exhausted: "
                 "memory under a 64 MiB heap, and the worker's peak RSS stays under 128 MiB "
                 "[guard console-in-heap-budget]",
                 FLOODS[i].what);
        struct worker w;
        if (!worker_ready(&w, harness_test_worker(), NULL, NULL)) {
            fail(name, "the worker did not start");
            continue;
        }
        struct proto_activate a = activation(FLOODS[i].script);
        a.profile = PROTO_PROFILE_CODEMODE;
        a.budgets.heap_bytes = heap;
        a.budgets.cpu_ms = 20000;
        struct run r;
        memset(&r, 0, sizeof r);
        run_activation(&w, &a, NULL, &r);
        char peak[64];
        long peak_kb = proc_status_field(w.p.pid, "VmHWM", peak, sizeof peak)
                           ? strtol(peak, NULL, 10) /* "<n> kB" */
                           : -1;
        struct proc_result res = worker_end(&w);
        check(exhausted(&r, PROTO_BUDGET_MEMORY) && peak_kb > 0 && peak_kb < 128L * 1024, name,
              "%s; peak RSS %ld KiB; console '%.100s'", describe(&r), peak_kb, r.console);
        harness_note("console flood (%s): worker peak RSS %ld KiB under a %llu MiB heap",
                     FLOODS[i].what, peak_kb, (unsigned long long)(heap >> 20));
        proc_result_free(&res);
        run_free(&r);
    }
}


static void test_api(void)
{
    struct run r;
    run_one("const a = await kv.get('k', 'extra');\n"
            "await kv.set('k', {v: [1, 2]}, 'extra');\n"
            "await Promise.all([fs.read('/a'), fs.list('/d'), fs.stat('/s'), fs.write('/w', 'x'),\n"
            "  net.fetch('https://x', {method: 'GET'}), git.log('/r', {maxCount: 2}), git.revParse('/r', 'HEAD'),\n"
            "  git.describeTags('/r'), git.show('/r', 'HEAD', 'f'), git.diff('/r', 'a', 'b', undefined),\n"
            "  git.lsFiles('/r', {rev: 'HEAD'}, 'extra'),\n"
            "  ops.call('m', 'op', {x: 1}), sink.emit('s', {title: 't'}), kv.delete('k')]);\n"
            "const s = await step('named', async () => 7);\n"
            "return {a, s, t: trigger, frozen: Object.isFrozen(trigger.event.n)};\n",
            NULL, NULL, &r);
    bool kinds = r.calls == 16;
    static const char *const expected[][2] = {
        {"kv.get", "[\"k\"]"},
        {"kv.set", "[\"k\",{\"v\":[1,2]}]"},
        {"fs.read", "[\"/a\"]"},
        {"fs.list", "[\"/d\"]"},
        {"fs.stat", "[\"/s\"]"},
        {"fs.write", "[\"/w\",\"x\"]"},
        {"net.fetch", "[\"https://x\",{\"method\":\"GET\"}]"},
        {"git.log", "[\"/r\",{\"maxCount\":2}]"},
        {"git.revParse", "[\"/r\",\"HEAD\"]"},
        {"git.describeTags", "[\"/r\"]"},
        {"git.show", "[\"/r\",\"HEAD\",\"f\"]"},
        {"git.diff", "[\"/r\",\"a\",\"b\"]"},
        {"git.lsFiles", "[\"/r\",{\"rev\":\"HEAD\"}]"},
        {"ops.call", "[\"m\",\"op\",{\"x\":1}]"},
        {"sink.emit", "[\"s\",{\"title\":\"t\"}]"},
        {"kv.delete", "[\"k\"]"},
    };
    for (uint32_t i = 0; kinds && i < 16; i++)
        kinds = strcmp(r.journal[i].kind, expected[i][0]) == 0 &&
                strcmp(r.journal[i].args, expected[i][1]) == 0;
    check(kinds && completed_with(&r, "{\"a\":{\"position\":0},\"s\":7,\"t\":{\"event\":{\"name\":"
                                      "\"push\",\"n\":[1,2]}},\"frozen\":true}"),
          "api: each flow function is a host call of its kind with its arguments as a JSON "
          "array (cut to its arity, trailing undefined dropped); step() runs its function; "
          "trigger is the Activate's, frozen",
          "%s; %u calls, call 1 %s %s", describe(&r), r.calls, r.journal[1].kind,
          r.journal[1].args);
    run_free(&r);

    struct host_opts refuse = {false, "kv.get", NULL};
    run_one("try { await kv.get('secret'); return 'no error'; }\n"
            "catch (e) { return [e.name, e.message, e.data, e instanceof Error, String(e)]; }\n",
            NULL, &refuse, &r);
    check(completed_with(&r, "[\"HostError\",\"not granted\",{\"code\":\"denied\",\"message\":"
                             "\"not granted\"},true,\"HostError: not granted\"]"),
          "api: a refused call rejects with an Error named HostError, message and .data from "
          "the parent's value",
          "%s", describe(&r));
    run_free(&r);

    struct proto_activate small = activation(
        "try { await kv.set('k', 'x'.repeat(2000)); return 'sent'; }\n"
        "catch (e) { return [e.name, e.data.code, typeof e.message]; }\n");
    small.budgets.max_value_bytes = 1024;
    run_one(NULL, &small, NULL, &r);
    check(completed_with(&r, "[\"HostError\",\"too_large\",\"string\"]") && r.calls == 0,
          "api: arguments over max_value_bytes reject with HostError too_large, never sent", "%s",
          describe(&r));
    run_free(&r);
    small.script = proto_text_of("return 'y'.repeat(2000)");
    run_one(NULL, &small, NULL, &r);
    check(failed_with(&r, "result_too_large", "over the limit of 1024"),
          "api: a result over max_value_bytes fails as result_too_large", "%s", describe(&r));
    run_free(&r);

    static const char *const unserializable[] = {"return undefined", "return 10n",
                                                 "const a = []; a.push(a); return a",
                                                 "return () => 1"};
    bool all = true;
    for (size_t i = 0; i < sizeof unserializable / sizeof unserializable[0]; i++) {
        run_one(unserializable[i], NULL, NULL, &r);
        all = all && failed_with(&r, "unserializable_result", NULL);
        if (!all)
            harness_note("%s: %s", unserializable[i], describe(&r));
        run_free(&r);
    }
    check(all, "api: undefined, a BigInt, a cycle or a function as the result fails as "
               "unserializable_result", "see notes");

    run_one("throw new TypeError('boom')", NULL, NULL, &r);
    check(failed_with(&r, "script_error", "TypeError: boom"),
          "api: an uncaught error fails as script_error with its name and message", "%s",
          describe(&r));
    run_free(&r);
    run_one("return (", NULL, NULL, &r);
    check(failed_with(&r, "syntax_error", "SyntaxError"), "api: a syntax error fails as syntax_error",
          "%s", describe(&r));
    run_free(&r);

    struct proto_activate codemode = activation(
        "console.log('hello', {a: 1}); console.error('oops');\n"
        "const t = await tools.call('search', {q: 'x'});\n"
        "return [typeof kv, typeof now, typeof step, t];\n");
    codemode.profile = PROTO_PROFILE_CODEMODE;
    run_one(NULL, &codemode, NULL, &r);
    check(completed_with(&r, "[\"undefined\",\"undefined\",\"undefined\",{\"position\":0}]") &&
              strcmp(r.journal[0].kind, "tool.call") == 0 &&
              strcmp(r.console, "log:hello {\"a\":1};error:oops;") == 0,
          "api: codemode has tools.call (kind tool.call) and console.log/error as Console "
          "messages, and not the flow's API",
          "%s; console '%s'", describe(&r), r.console);
    run_free(&r);
    test_console_flood();
}

/* ================================================================== promises */

/* The worker makes the promise of every async host call, of step() and of the script's
 * result with patch 0006 (JS_NewPendingPromise) and settles it from C
 * (JS_SettlePromise), where it once called the resolving functions of a promise
 * capability. These scripts hold the promises to what the resolving functions gave:
 * ordinary Promises, reactions in registration order, rejection, and the resolution of
 * a value that is a thenable (followed, once; a throwing then or "then" getter
 * rejects). They passed before the patch, with the capability, and pass with it. */
static void test_promises(void)
{
    struct run r;
    run_one("const log = [];\n"
            "const p = kv.get('a');\n"
            "p.then(() => log.push(1)); p.then(() => log.push(2));\n"
            "const q = p.then((v) => v.position + 10);\n"
            "const all = await Promise.all([p, q, kv.get('b').finally(() => log.push(3))]);\n"
            "log.push(4);\n"
            "await p.then(() => log.push(5));\n"
            "return [p instanceof Promise, Object.getPrototypeOf(p) === Promise.prototype,\n"
            "        p.constructor === Promise, all, log];\n",
            NULL, NULL, &r);
    check(completed_with(&r, "[true,true,true,[{\"position\":0},10,{\"position\":1}],"
                             "[1,2,3,4,5]]"),
          "promises: a host call's promise is an ordinary Promise; its reactions run in the "
          "order they were registered, before and after it settled",
          "%s", describe(&r));
    run_free(&r);

    struct host_opts refuse = {false, "kv.get", NULL};
    run_one("const seen = [];\n"
            "const p = kv.get('x');\n"
            "p.catch((e) => seen.push(e.name));\n"
            "try { await p; } catch (e) { seen.push(e.message); }\n"
            "seen.push(await p.then(() => 'fulfilled', () => 'rejected'));\n"
            "return seen;\n",
            NULL, &refuse, &r);
    check(completed_with(&r, "[\"HostError\",\"not granted\",\"rejected\"]"),
          "promises: a refused call's promise is rejected once, for every reaction", "%s",
          describe(&r));
    run_free(&r);

    run_one("const out = [];\n"
            "out.push(await step('value', () => 1));\n"
            "out.push(await step('thenable', () => ({ then(ok) { ok(2); } })));\n"
            "out.push(await step('promise', async () => 3));\n"
            "try { await step('throws', () => { throw new Error('four'); }); }\n"
            "catch (e) { out.push(e.message); }\n"
            "try { await step('then throws', () => ({ then() { throw new Error('five'); } })); }\n"
            "catch (e) { out.push(e.message); }\n"
            "try { await step('then getter', () => ({ get then() { throw new Error('six'); } })); }\n"
            "catch (e) { out.push(e.message); }\n"
            "out.push(await step('twice', () => ({ then(ok, no) { ok(7); ok(8); no(9); } })));\n"
            "out.push(await step('not callable', () => ({ then: 8 })));\n"
            "return out;\n",
            NULL, NULL, &r);
    check(completed_with(&r, "[1,2,3,\"four\",\"five\",\"six\",7,{\"then\":8}]"),
          "promises: step() resolves with its function's value, follows a thenable once, and "
          "rejects when the function, its then, or a \"then\" getter throws",
          "%s", describe(&r));
    run_free(&r);

    run_one("return { then(ok) { ok(kv.get('k')); } };", NULL, NULL, &r);
    check(completed_with(&r, "{\"position\":0}") && r.calls == 1,
          "promises: a script whose result is a thenable completes with what it resolves to",
          "%s", describe(&r));
    run_free(&r);
}

/* ================================================================== replay */

static const char RACE_SCRIPT[] =
    "const log = [];\n"
    "const a = kv.get('a').then(() => { log.push('a'); return 'a'; });\n"
    "const b = kv.get('b').then(() => { log.push('b'); return 'b'; });\n"
    "const winner = await Promise.race([a, b]);\n"
    "const t = now();\n"
    "await Promise.all([a, b]);\n"
    "return {winner, log, t, r: random()};\n";

/* The journal of a run as a prefix (settled calls only). */
static size_t prefix_of(const struct run *r, struct proto_recorded_entry *prefix, size_t cap)
{
    size_t count = 0;
    for (uint32_t i = 0; i < r->calls && count < cap; i++) {
        const struct journal_entry *e = &r->journal[i];
        if (!e->settled)
            continue;
        memset(&prefix[count], 0, sizeof prefix[count]);
        prefix[count].position = e->position;
        prefix[count].kind = proto_text_of(e->kind);
        memcpy(prefix[count].args_digest, e->digest, 32);
        prefix[count].settlement = e->rejected ? PROTO_SETTLEMENT_REJECTED : PROTO_SETTLEMENT_FULFILLED;
        prefix[count].value = proto_text_of(e->value);
        prefix[count].delivery_order = e->order;
        count++;
    }
    return count;
}

/* Runs script live, then again (replay_script, or the same) with the live journal as
 * its prefix. */
static void live_then_replay(const char *script, const char *replay_script,
                             const struct host_opts *o, struct run *live, struct run *replay)
{
    run_one(script, NULL, o, live);
    struct proto_recorded_entry *prefix = calloc(1200, sizeof *prefix);
    struct proto_activate a = activation(replay_script != NULL ? replay_script : script);
    a.prefix = prefix;
    a.prefix_count = prefix != NULL ? prefix_of(live, prefix, 1200) : 0;
    run_one(NULL, &a, NULL, replay);
    free(prefix);
}

/* The arguments' JSON of a host call: the worker writes the common primitive cases
 * itself (host_bridge.c, args_json_fast) and must write exactly what JSON.stringify
 * writes for the argument array, cut to the call's arity and without trailing
 * undefined ones, or replays would stop matching their journals. The script computes
 * JSON.stringify of each call's arguments; the HostCalls' args must hash the same. */
static const char ARGS_SCRIPT[] =
    "const cases = [\n"
    "  ['plain'], ['quote \" back \\\\ slash / end'], ['\\b\\f\\n\\r\\t\\u0000\\u0001\\u001f\\u007f'],\n"
    "  ['latin1 \\u00e9\\u00ff'], ['wide \\u20ac \\u4e2d'], ['pair \\ud83d\\ude00'],\n"
    "  ['lone \\ud800 high'], ['lone \\udfff low'], ['', '', ''],\n"
    "  [0, -1, 2147483647], [-2147483648, 2147483648, -0], [1.5, 1e21, 1e-7],\n"
    "  [123456789012, 0.1 + 0.2, -1e-300], [NaN, Infinity, -Infinity],\n"
    "  [true, false, null], ['a', undefined, 1], [undefined, undefined, 'z'],\n"
    "  ['a', 'b', undefined], ['a', undefined, undefined], [], [undefined],\n"
    "  ['a', 'b', 'c', 'd'], [{a: 1, toJSON() { return 'j'; }}, [1, 'x'], {}],\n"
    "  ['x'.repeat(251)], ['x'.repeat(252)], ['x'.repeat(253)], ['\\n'.repeat(40)],\n"
    "  ['\\u00e9'.repeat(126)], ['\\u00e9'.repeat(127)], [Symbol('s'), 1], [1, () => 1],\n"
    "  [new String('boxed'), new Number(5), Object(true)],\n"
    "];\n"
    "const expected = [];\n"
    "for (const c of cases) {\n"
    "  let n = Math.min(c.length, 3);\n"
    "  while (n > 0 && c[n - 1] === undefined) n--;\n"
    "  expected.push(JSON.stringify(c.slice(0, n)));\n"
    "  await ops.call(...c);\n"
    "}\n"
    "return expected;\n";

static void test_args_json(void)
{
    struct run live, replay;
    live_then_replay(ARGS_SCRIPT, NULL, NULL, &live, &replay);
    json_error_t error;
    json_t *expected = live.value != NULL ? json_loads(live.value, 0, &error) : NULL;
    size_t count = json_array_size(expected);
    size_t same = 0;
    char differs[256] = "";
    for (size_t i = 0; i < count && i < live.calls; i++) {
        const char *text = json_string_value(json_array_get(expected, i));
        uint8_t digest[32];
        sha256_of(text != NULL ? text : "", text != NULL ? strlen(text) : 0, digest);
        if (text != NULL && memcmp(digest, live.journal[i].digest, 32) == 0 &&
            strcmp(live.journal[i].kind, "ops.call") == 0)
            same++;
        else if (differs[0] == '\0')
            (void)snprintf(differs, sizeof differs, "call %zu: sent %s, JSON.stringify %s", i,
                           live.journal[i].args, text != NULL ? text : "-");
    }
    check(live.finished && live.outcome == PROTO_OUTCOME_COMPLETED && count >= 30 &&
              live.calls == count && same == count,
          "host calls: the arguments' JSON is what JSON.stringify gives for the argument "
          "array (strings with every kind of escape, lone surrogates, numbers, booleans, null, "
          "undefined, objects with toJSON, symbols, functions, long texts)",
          "%zu of %zu calls the same (%u sent); %s; %s", same, count, live.calls, differs,
          describe(&live));
    check(completed_with(&replay, live.value) && replay.calls == 0,
          "replay: those calls replay from their journal without reaching the parent", "%s",
          describe(&replay));
    json_decref(expected);
    run_free(&live);
    run_free(&replay);
}

static void test_replay(void)
{
    struct run live, replay;
    struct host_opts reverse = {true, NULL, NULL};
    live_then_replay(RACE_SCRIPT, NULL, &reverse, &live, &replay);
    check(live.finished && replay.finished && strstr(live.value, "\"winner\":\"b\"") != NULL &&
              completed_with(&replay, live.value) && replay.calls == 0,
          "replay: recorded outcomes are released in delivery order: Promise.race has the "
          "same winner, now() and random() their recorded values, and nothing reaches the "
          "parent",
          "live %s; replay %s, %u calls", live.value ? live.value : "-", describe(&replay),
          replay.calls);
    run_free(&live);
    run_free(&replay);

    static const char TWO[] = "const a = await kv.get('a'); const b = await kv.get('b'); return [a, b];";
    live_then_replay(TWO, "const a = await kv.get('a'); const b = await kv.get('B'); return [a, b];",
                     NULL, &live, &replay);
    check(failed_with(&replay, "nondeterminism", "position 1: kv.get called with arguments"),
          "replay: other arguments at a recorded position fail as nondeterminism", "%s",
          describe(&replay));
    run_free(&live);
    run_free(&replay);
    live_then_replay(TWO, "const a = await kv.get('a'); const b = await fs.read('b'); return [a, b];",
                     NULL, &live, &replay);
    check(failed_with(&replay, "nondeterminism", "position 1: the script called fs.read where "
                                                 "the journal records kv.get"),
          "replay: another kind at a recorded position fails as nondeterminism", "%s",
          describe(&replay));
    run_free(&live);
    run_free(&replay);
    live_then_replay(TWO, "return await kv.get('a');", NULL, &live, &replay);
    check(failed_with(&replay, "nondeterminism", "did not reach"),
          "replay: a script that ends before its recorded calls fails as nondeterminism", "%s",
          describe(&replay));
    run_free(&live);
    run_free(&replay);
    live_then_replay(TWO, "await kv.get('a'); await new Promise(() => {});", NULL, &live, &replay);
    check(failed_with(&replay, "nondeterminism", "has not called it"),
          "replay: a script that stalls before its recorded calls fails as nondeterminism", "%s",
          describe(&replay));
    run_free(&live);
    run_free(&replay);

    /* A prefix that stops part way: the rest goes to the parent, in order after it. */
    run_one(TWO, NULL, NULL, &live);
    struct proto_recorded_entry *prefix = calloc(1, sizeof *prefix);
    struct proto_activate a = activation(TWO);
    a.prefix = prefix;
    a.prefix_count = prefix != NULL ? prefix_of(&live, prefix, 1) : 0;
    run_one(NULL, &a, NULL, &replay);
    check(completed_with(&replay, live.value) && replay.calls == 2 && replay.journal[0].kind[0] == 0 &&
              strcmp(replay.journal[1].kind, "kv.get") == 0 && replay.journal[1].order == 2,
          "replay: after the prefix, new calls go to the parent at the next position and "
          "their delivery orders continue above the prefix's",
          "%s; %u calls", describe(&replay), replay.calls);
    free(prefix);
    run_free(&live);
    run_free(&replay);

    /* 1000 recorded calls replay without the parent. */
    run_one("let s = 0; for (let i = 0; i < 1000; i++) s += (await kv.get('k' + i)).position; return s;",
            NULL, NULL, &live);
    struct proto_recorded_entry *many = calloc(1200, sizeof *many);
    a = activation("let s = 0; for (let i = 0; i < 1000; i++) s += (await kv.get('k' + i)).position; return s;");
    a.prefix = many;
    a.prefix_count = many != NULL ? prefix_of(&live, many, 1200) : 0;
    struct worker w;
    memset(&replay, 0, sizeof replay);
    double ms = -1;
    if (worker_ready(&w, harness_test_worker(), NULL, NULL)) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        run_activation(&w, &a, NULL, &replay);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        struct proc_result res = worker_end(&w);
        proc_result_free(&res);
    }
    check(completed_with(&replay, "499500") && replay.calls == 0,
          "replay: 1000 recorded calls replay to the same result without a host call", "%s",
          describe(&replay));
    harness_note("replay of 1000 recorded calls, Activate to Finished: %.1f ms", ms);
    free(many);
    run_free(&live);
    run_free(&replay);
}

/* ================================================================== budgets */

static void test_budgets(void)
{
    struct run r;
    struct proto_activate a = activation("for (;;) {}");
    a.budgets.cpu_ms = 50;
    run_one(NULL, &a, NULL, &r);
    check(exhausted(&r, PROTO_BUDGET_CPU), "budgets: a tight loop ends as cpu [guard cpu-budget]",
          "%s", describe(&r));
    run_free(&r);
    a.script = proto_text_of("await kv.get('a'); for (;;) { try { for (;;) {} } catch (e) {} }");
    run_one(NULL, &a, NULL, &r);
    check(exhausted(&r, PROTO_BUDGET_CPU),
          "budgets: a loop inside try/catch after an awaited host call ends as cpu", "%s",
          describe(&r));
    run_free(&r);

    a = activation("try { const keep = []; for (;;) keep.push({n: keep.length}); }\n"
                   "catch (e) { return 'caught ' + e.message; }");
    a.budgets.heap_bytes = 2u << 20;
    run_one(NULL, &a, NULL, &r);
    check(exhausted(&r, PROTO_BUDGET_MEMORY),
          "budgets: growing the heap past 2 MiB ends as memory, even inside try/catch "
          "[guard heap-budget]",
          "%s", describe(&r));
    run_free(&r);

    /* A caught single allocation over the budget completes, and the same worker then
     * runs the next activation in a fresh context. */
    struct worker w;
    if (worker_ready(&w, harness_test_worker(), NULL, NULL)) {
        a = activation("const before = typeof leftover; globalThis.leftover = 1;\n"
                       "try { new ArrayBuffer(32 << 20); return 'allocated'; }\n"
                       "catch (e) { return [before, e.message]; }\n");
        a.budgets.heap_bytes = 2u << 20;
        struct run second;
        memset(&r, 0, sizeof r);
        memset(&second, 0, sizeof second);
        run_activation(&w, &a, NULL, &r);
        run_activation(&w, &a, NULL, &second);
        check(completed_with(&r, "[\"undefined\",\"out of memory\"]") &&
                  completed_with(&second, "[\"undefined\",\"out of memory\"]"),
              "budgets: a caught out-of-memory error completes, and the next activation in the "
              "same worker sees none of the previous one's globals",
              "%s / %s", describe(&r), describe(&second));
        run_free(&r);
        run_free(&second);
        struct proc_result res = worker_end(&w);
        proc_result_free(&res);
    }
    a.script = proto_text_of("new ArrayBuffer(32 << 20)");
    run_one(NULL, &a, NULL, &r);
    check(exhausted(&r, PROTO_BUDGET_MEMORY), "budgets: an uncaught out-of-memory error ends as memory",
          "%s", describe(&r));
    run_free(&r);

    a = activation("function f(n) { return f(n + 1) + 1; } return f(0);");
    a.budgets.stack_bytes = 64u << 10;
    run_one(NULL, &a, NULL, &r);
    check(exhausted(&r, PROTO_BUDGET_STACK),
          "budgets: deep recursion under a 64 KiB stack ends as stack [guard stack-budget]", "%s",
          describe(&r));
    run_free(&r);
    a.script = proto_text_of("function f(n) { return f(n + 1) + 1; }\n"
                             "try { f(0); } catch (e) { return 'caught ' + e.message; }");
    run_one(NULL, &a, NULL, &r);
    check(completed_with(&r, "\"caught stack overflow\""),
          "budgets: a caught stack overflow whose activation completes is completed", "%s",
          describe(&r));
    run_free(&r);
}

/* The CPU timer (src/worker/cpu_timer.h): its tick, its backstop for native code that
 * reaches no interrupt poll, and the refusal when it cannot be armed. */
static void test_cpu_timer(void)
{
    /* A loop whose every call is a builtin doing a lot of work without an interrupt poll
     * inside: QuickJS polls once per call, and its counter runs out only after 10000
     * calls (minutes). The timer's tick makes the next poll, after the call in progress,
     * call the interrupt handler: the script stops near its budget and the worker goes
     * on serving. */
    static const struct {
        const char *what, *script;
    } TICKED[] = {
        {"String repeat of 16 MiB", "for (;;) 'x'.repeat(1 << 24);"},
        {"slice of a 1 Mi-element array", "const a = Array(1 << 20).fill(1); for (;;) a.slice();"},
    };
    for (size_t i = 0; i < sizeof TICKED / sizeof TICKED[0]; i++) {
        char name[300];
        snprintf(name, sizeof name,
                 "budgets: a loop of %s (one poll per call) ends as cpu within 5x its 200 ms "
                 "budget through the CPU timer's tick, and the same worker runs the next "
                 "activation [guard cpu-timer-tick]",
                 TICKED[i].what);
        struct worker tw;
        if (!worker_ready(&tw, harness_test_worker(), NULL, NULL)) {
            fail(name, "the worker did not start");
            continue;
        }
        struct proto_activate a = activation(TICKED[i].script);
        a.budgets.cpu_ms = 200;
        a.budgets.heap_bytes = 128u << 20;
        struct run r, next;
        memset(&r, 0, sizeof r);
        memset(&next, 0, sizeof next);
        long before = process_cpu_ms(tw.p.pid);
        run_activation(&tw, &a, NULL, &r);
        long used = process_cpu_ms(tw.p.pid) - before;
        struct proto_activate b = activation("return 'next';");
        run_activation(&tw, &b, NULL, &next);
        struct proc_result res = worker_end(&tw);
        char first[200];
        snprintf(first, sizeof first, "%s", describe(&r));
        /* CPU time, not wall time: a loaded machine does not inflate it. */
        check(exhausted(&r, PROTO_BUDGET_CPU) && before >= 0 && used < 5L * 200 &&
                  completed_with(&next, "\"next\""),
              name, "%s after %ld ms of CPU (budget 200 ms), then %s; %s", first, used,
              describe(&next), proc_describe(&res));
        harness_note("cpu timer tick: a loop of %s stopped after %ld ms of CPU (budget 200 ms)",
                     TICKED[i].what, used);
        proc_result_free(&res);
        run_free(&r);
        run_free(&next);
    }

    struct worker w;
    if (worker_ready(&w, harness_test_worker(), NULL, NULL)) {
        struct proto_activate a = activation("return __basalTestNativeSpin();");
        a.budgets.cpu_ms = 100;
        struct run r;
        memset(&r, 0, sizeof r);
        run_activation(&w, &a, NULL, &r);
        /* It must end by itself: stdin stays open until it has. */
        bool ended_itself = proc_wait_exit(&w.p, TIMEOUT_MS);
        struct proc_result res = worker_end(&w);
        check(exhausted(&r, PROTO_BUDGET_CPU) && ended_itself && proc_exited_with(&res, 0),
              "budgets: native code that never reaches an interrupt poll ends as cpu: the CPU "
              "timer's backstop sends Finished(budget_exhausted cpu) and the worker exits 0 "
              "by itself [guard cpu-timer-backstop]",
              "%s; ended by itself: %s; %s", describe(&r), ended_itself ? "yes" : "no",
              proc_describe(&res));
        proc_result_free(&res);
        run_free(&r);
    } else {
        fail("budgets: the CPU timer's backstop", "the worker did not start");
    }

    /* A POSIX timer that signals needs a queued-signal slot: with RLIMIT_SIGPENDING 0
     * timer_create fails, and the worker must refuse rather than run without the
     * timer. */
    struct rlimit saved, none = {0, 0};
    if (getrlimit(RLIMIT_SIGPENDING, &saved) != 0) {
        fail("startup: the worker refuses without a CPU timer", "getrlimit: %s", strerror(errno));
        return;
    }
    none.rlim_max = saved.rlim_max;
    bool limited = setrlimit(RLIMIT_SIGPENDING, &none) == 0;
    const char *argv[] = {harness_test_worker(), "--landlock=required", NULL};
    struct proc_opts opts = {false, PROC_PIPE, PROC_PIPE, PROC_PIPE, HARNESS_EMPTY_ENV};
    struct proc p;
    int started = proc_start(&p, argv, &opts);
    (void)setrlimit(RLIMIT_SIGPENDING, &saved);
    if (!limited || started != 0) {
        fail("startup: the worker refuses without a CPU timer", "cannot start it under "
             "RLIMIT_SIGPENDING 0: %s", strerror(errno));
        return;
    }
    struct proc_result res = proc_finish(&p, NULL, 0, TIMEOUT_MS);
    check(proc_exited_with(&res, 70) && res.out_len == 0 &&
              output_has_line(res.err, "refusing to run unconfined: cpu-timer"),
          "startup: a worker whose CPU timer cannot be armed (RLIMIT_SIGPENDING 0) refuses "
          "with cpu-timer, exit 70, nothing on stdout [guard cpu-timer-required]",
          "%s", proc_describe(&res));
    proc_result_free(&res);
}

/* ================================================================== plain profile, SIGSYS */

static void test_plain_suites(void)
{
    static const char *const suites[] = {"test_builtin", "test_language", "test_closure",
                                         "test_loop", "test_bignum"};
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
        char path[4200], name[200];
        (void)snprintf(path, sizeof path, "%s/quickjs/tests/%s.js", harness_build_dir(), suites[i]);
        (void)snprintf(name, sizeof name,
                       "plain: QuickJS's %s.js passes in the confined worker's plain profile",
                       suites[i]);
        char *source = read_text_file(path);
        if (source == NULL) {
            fail(name, "cannot read %s", path);
            continue;
        }
        /* The only shim: the suites end without a value, the worker wants a result. */
        size_t len = strlen(source);
        char *script = malloc(len + 32);
        if (script == NULL) {
            free(source);
            fail(name, "out of memory");
            continue;
        }
        (void)snprintf(script, len + 32, "%s\nreturn 'passed';\n", source);
        free(source);
        struct worker w;
        struct run r;
        memset(&r, 0, sizeof r);
        if (worker_ready(&w, harness_test_worker(), "--test-profile=plain", NULL)) {
            struct proto_activate a = activation(script);
            a.budgets.cpu_ms = 60000;
            a.budgets.heap_bytes = 256u << 20;
            a.budgets.stack_bytes = 4u << 20;
            run_activation(&w, &a, NULL, &r);
            struct proc_result res = worker_end(&w);
            check(completed_with(&r, "\"passed\"") && proc_exited_with(&res, 0), name, "%s; %s",
                  describe(&r), proc_describe(&res));
            proc_result_free(&res);
        } else {
            fail(name, "the worker did not start");
        }
        run_free(&r);
        free(script);
    }
    const char *argv[] = {harness_release_worker(), "--landlock=required", "--test-profile=plain",
                          NULL};
    struct proc_result res = proc_run(argv, NULL, 0, TIMEOUT_MS);
    check(proc_exited_with(&res, 64), "plain: the release worker refuses --test-profile=plain",
          "%s", proc_describe(&res));
    proc_result_free(&res);
}

static void test_sigsys(void)
{
    struct worker w;
    if (!worker_ready(&w, harness_test_worker(), NULL, NULL)) {
        fail("sigsys: worker starts", "no Welcome");
        return;
    }
    struct proto_activate a = activation("await kv.get('a'); __basalTestForbiddenSyscall(); return 1;");
    struct run r;
    memset(&r, 0, sizeof r);
    bool ended = !run_activation(&w, &a, NULL, &r);
    struct proc_result res = worker_end(&w);
    check(ended && !r.finished && r.calls == 1 && died_by_signal(&res, SIGSYS),
          "sigsys: the test hook's forbidden system call kills the worker by SIGSYS in the "
          "middle of an activation",
          "%s", proc_describe(&res));
    proc_result_free(&res);
    run_free(&r);

    run_one("return typeof __basalTestForbiddenSyscall", NULL, NULL, &r);
    run_free(&r);
    const char *argv[] = {harness_release_worker(), "--landlock=required", NULL};
    struct proc p;
    if (proc_start(&p, argv, NULL) == 0) {
        struct worker rel;
        memset(&rel, 0, sizeof rel);
        rel.p = p;
        rel.started = true;
        send_hello(&rel, PROTO_VERSION);
        bool welcomed = expect_tag(&rel, PROTO_WELCOME, NULL);
        struct proto_activate b = activation("return typeof __basalTestForbiddenSyscall");
        memset(&r, 0, sizeof r);
        run_activation(&rel, &b, NULL, &r);
        res = worker_end(&rel);
        check(welcomed && completed_with(&r, "\"undefined\""),
              "sigsys: the release worker has no test hook", "%s", describe(&r));
        proc_result_free(&res);
        run_free(&r);
    }
}

int main(void)
{
    if (!require_binary(harness_test_worker(), "engine: test-build worker present") ||
        !require_binary(harness_release_worker(), "engine: release worker present"))
        return harness_finish();
    test_protocol();
    test_lockdown();
    test_api();
    test_promises();
    test_replay();
    test_args_json();
    test_budgets();
    test_cpu_timer();
    test_plain_suites();
    test_sigsys();
    return harness_finish();
}
