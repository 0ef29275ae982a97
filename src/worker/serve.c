#include "version.h"
#include "worker/serve.h"

#include <stdio.h>
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "proto/frame.h"
#include "proto/frame_reader.h"
#include "proto/message.h"
#include "worker/cpu_timer.h"
#include "worker/engine.h"
#include "worker/refuse.h"
#include "worker/stdin_spin.h"

enum serve_state { AWAITING_HELLO, READY, RUNNING };

static const char *state_name(enum serve_state state)
{
    switch (state) {
    case AWAITING_HELLO: return "awaiting-hello";
    case READY: return "ready";
    case RUNNING: return "running";
    }
    return "unknown";
}

/* The worker's two pipes and their buffers: one reader, one writer, for its life. */
static struct frame_reader in_frames;
static struct wire_buf out_buf;
static enum serve_state current = AWAITING_HELLO;

/* Frames encoded but not yet written. An async HostCall waits here until the worker
 * next reads or sends anything else (its Blocked, typically), so the parent wakes
 * once for "call, then blocked" instead of twice. Nothing is ever read while frames
 * wait: every read flushes first, so the parent always has what it must answer. */
static struct wire_buf pending;
#define PENDING_FLUSH_BYTES ((size_t)64 * 1024)

/* HostCalls sent during the current activation (see activate). */
static unsigned long host_calls_sent;

/* Writes the waiting frames; a failure means the parent is gone, so the worker ends. */
static void flush_pending(void)
{
    size_t done = 0;
    /* The CPU timer's backstop writes a frame of its own: never inside one of ours. */
    cpu_timer_frames_writing(true);
    while (done < pending.len) {
        ssize_t n = write(1, pending.data + done, pending.len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            _exit(WORKER_EXIT_PROTOCOL);
        done += (size_t)n;
    }
    cpu_timer_frames_writing(false);
    wire_buf_reset(&pending);
}

/* Sends msg on stdout (an async HostCall may wait for the next flush); a message we
 * built that does not encode is a bug, and the worker ends. */
static void send_msg(const struct proto_msg *msg)
{
    uint8_t header[PROTO_FRAME_HEADER_BYTES];
    if (proto_encode(msg, &out_buf) != PROTO_OK || out_buf.len > PROTO_MAX_FRAME)
        _exit(WORKER_EXIT_PROTOCOL);
    frame_header_encode((uint32_t)out_buf.len, header);
    if (!wire_put_raw(&pending, header, sizeof header) ||
        !wire_put_raw(&pending, out_buf.data, out_buf.len))
        _exit(WORKER_EXIT_PROTOCOL);
    if (msg->tag == PROTO_HOST_CALL)
        host_calls_sent++;
    if (msg->tag != PROTO_HOST_CALL || pending.len >= PENDING_FLUSH_BYTES)
        flush_pending();
}

static void send_refused(enum proto_refusal reason, const char *detail)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_REFUSED;
    msg.refused.reason = reason;
    msg.refused.detail = proto_text_of(detail);
    send_msg(&msg);
}

static void refuse_unexpected(unsigned tag)
{
    char detail[96];
    /* Names the state, so the parent's log says where the frame was wrong. */
    (void)snprintf(detail, sizeof detail, "%s in state %s", proto_msg_name(tag),
                   state_name(current));
    send_refused(PROTO_REFUSAL_UNEXPECTED_FRAME, detail);
}

/* Reads and decodes the next frame. The end of the stream ends the process (exit 0
 * at a frame boundary, 3 otherwise); a frame that does not decode is refused and false
 * returned. */
static bool read_msg(struct proto_msg *msg)
{
    flush_pending();
    /* A frame expected within microseconds (a Deliver) is read without going idle;
     * one already read with the previous frame needs no wait at all. */
    bool readable = frame_reader_has_frame(&in_frames) || stdin_spin_until_readable();
    const uint8_t *payload = NULL;
    size_t len = 0;
    enum frame_result got = frame_reader_next(0, &in_frames, &payload, &len);
    if (!readable)
        stdin_spin_blocked_read_done();
    if (got == FRAME_EOF)
        _exit(0);
    if (got != FRAME_OK)
        _exit(WORKER_EXIT_PROTOCOL); /* oversized, truncated or unreadable stream */
    struct proto_where where;
    memset(&where, 0, sizeof where);
    enum proto_error err = proto_decode_where(payload, len, msg, &where);
    if (err != PROTO_OK) {
        char detail[128];
        (void)snprintf(detail, sizeof detail, "%s at %s", proto_error_name(err),
                       where.field ? where.field : "payload");
        send_refused(PROTO_REFUSAL_MALFORMED, detail);
        return false;
    }
    return true;
}

static void send_welcome(const struct confinement *state)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_WELCOME;
    msg.welcome.protocol_version = PROTO_VERSION;
    msg.welcome.engine = proto_text_of(WORKER_ENGINE_IDENTITY);
    memcpy(msg.welcome.prelude_hash, ENGINE_PRELUDE_SHA256, PROTO_DIGEST_BYTES);
    msg.welcome.worker_version = proto_text_of(BASAL_VERSION " (git " BASAL_GIT_REV ")");
    msg.welcome.os = proto_text_of(state->os);
    msg.welcome.seccomp = state->seccomp;
    msg.welcome.landlock_policy = state->landlock_policy;
    msg.welcome.landlock_runtime_abi = state->landlock_runtime_abi;
    msg.welcome.landlock_applied_abi = state->landlock_applied_abi;
    msg.welcome.seatbelt = state->seatbelt;
    msg.welcome.windows_lpac_token = state->windows_lpac_token;
    msg.welcome.windows_untrusted_integrity = state->windows_untrusted_integrity;
    msg.welcome.windows_no_thread_token = state->windows_no_thread_token;
    msg.welcome.windows_mitigations = state->windows_mitigations;
    msg.welcome.windows_handle_inventory = state->windows_handle_inventory;
    send_msg(&msg);
}

/* ---- the engine's view of the pipes while an activation runs ---- */

static void io_send(void *opaque, const struct proto_msg *msg)
{
    (void)opaque;
    send_msg(msg);
}

static void io_next(void *opaque, struct proto_msg *out)
{
    (void)opaque;
    for (;;) {
        if (!read_msg(out))
            continue;
        switch (out->tag) {
        case PROTO_DELIVER:
        case PROTO_LONG_RUNNING:
            return;
        case PROTO_SHUTDOWN:
            _exit(0);
        default:
            refuse_unexpected(out->tag);
            proto_msg_free(out);
            break;
        }
    }
}

static void io_refuse(void *opaque, enum proto_refusal reason, const char *detail)
{
    (void)opaque;
    send_refused(reason, detail);
}

static const struct engine_io ENGINE_IO = {io_send, io_next, io_refuse, NULL};

/* ---- activations ---- */

static enum engine_mode engine_mode(const struct serve_options *options)
{
#ifdef BASAL_TEST_HOOKS
    if (options->test_plain_profile)
        return ENGINE_PLAIN;
#endif
    (void)options;
    return ENGINE_LOCKED;
}

static void send_finished_failure(const char *kind, const char *detail)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_FINISHED;
    msg.finished.outcome = PROTO_OUTCOME_FAILED;
    msg.finished.failure_kind = proto_text_of(kind);
    msg.finished.failure_detail = proto_text_of(detail);
    send_msg(&msg);
}

/* Runs one activation in *engine (built now if it could not be built ahead). The
 * engine is spent afterwards, unless the Activate was refused before anything ran. */
static void activate(const struct proto_activate *activation, struct engine **engine,
                     const struct serve_options *options)
{
    if (*engine == NULL)
        *engine = engine_prepare(engine_mode(options));
    if (*engine == NULL) {
        send_finished_failure("engine_error", "the engine could not be built (out of memory)");
        return;
    }
    current = RUNNING;
    host_calls_sent = 0;
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_FINISHED;
    char refusal[256];
    if (!engine_run(*engine, activation, &ENGINE_IO, &msg.finished, refusal, sizeof refusal)) {
        current = READY;
        send_refused(PROTO_REFUSAL_MALFORMED, refusal);
        return;
    }
    send_msg(&msg);
    /* The parent is waiting for this Finished, and after host calls it shares this CPU
     * (it co-locates the two during a burst: src/supervisor/colocate.h). A woken task
     * does not preempt one inside its time slice, so it would wait while this one
     * frees the spent engine and builds the next (a few hundred microseconds): step
     * aside once. Not after an activation without host calls: the parent is then
     * elsewhere, or would only spin here for the next Activate while this CPU is
     * needed to build the engine for it (back to back). */
    if (host_calls_sent > 0)
        sched_yield();
    engine_free(*engine);
    *engine = NULL;
    current = READY;
}

int serve(const struct confinement *state, const struct serve_options *options)
{
    frame_reader_init(&in_frames);
    wire_buf_init(&out_buf);
    current = AWAITING_HELLO;
    struct engine *next = NULL; /* the next activation's engine, built while idle */
    for (;;) {
        if (current == READY && next == NULL)
            next = engine_prepare(engine_mode(options));
        struct proto_msg msg;
        if (!read_msg(&msg))
            continue;
        switch (msg.tag) {
        case PROTO_SHUTDOWN:
            proto_msg_free(&msg);
            engine_free(next);
            return 0;
        case PROTO_HELLO:
            if (current != AWAITING_HELLO) {
                refuse_unexpected(msg.tag);
            } else if (msg.hello.version != PROTO_VERSION) {
                char detail[64];
                (void)snprintf(detail, sizeof detail, "this worker speaks version %u",
                               PROTO_VERSION);
                send_refused(PROTO_REFUSAL_VERSION_MISMATCH, detail);
            } else {
                send_welcome(state);
                /* The parent is waiting for this Welcome, and the pipe's wake-up moves
                 * it to this CPU expecting the writer to sleep; the worker instead
                 * builds its first engine (hundreds of microseconds in a fresh
                 * process). Step aside once so the parent reads the Welcome first;
                 * with the parent on another CPU this returns at once. */
                sched_yield();
                current = READY;
            }
            break;
        case PROTO_ACTIVATE:
            if (current != READY)
                refuse_unexpected(msg.tag);
            else
                activate(&msg.activate, &next, options);
            break;
        default:
            refuse_unexpected(msg.tag);
            break;
        }
        proto_msg_free(&msg);
    }
}
