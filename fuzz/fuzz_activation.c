/* libFuzzer target: the activation driver (src/supervisor/activation.c) against a
 * fake worker that writes whatever the input says.
 *
 * Input: one flags byte, then the byte stream the worker writes on its stdout (frames,
 * usually; anything, really). Flags:
 *   bit 0     the worker exits once it has written (its stdout ends), instead of
 *             waiting, reading and ignoring the parent's frames until it is killed
 *   bits 1-2  the Activate's prefix: 0 to 3 entries, at positions 0, 2 and 5
 *   bit 3     codemode profile with a limit of 2 host calls (else flow)
 *   bit 4     max_value_bytes 8 (else the profile's)
 *   bit 5     the worker writes everything at once, never waiting for a Deliver
 * The worker is a forked child of this process, so the driver kills and reaps a real
 * process. It writes the stream frame by frame and, like the real worker, waits after
 * each Blocked for the Delivers it is owed (unless bit 5), so one input can go through
 * many releases. The host answers each call from its position: every fifth with no answer
 * at all (-1: the driver's own rejection), every third rejected, the rest fulfilled
 * with the argument text; released 0 to 3 ms later. The wall deadline is 5 ms.
 *
 * What must hold, whatever the input (abort() otherwise):
 *   - the status is one of the enumeration's; a completed value is one JSON text;
 *   - deliveries go out in strictly increasing order, each position at most once,
 *     each a position the host was asked about or the driver answered itself;
 *   - a worker reported ended has been reaped; the activation ends within the
 *     deadline plus the driver's reap grace and a margin for a loaded machine;
 *   - no leak, no sanitizer report.
 * Build (tests/t_fuzz.sh does it):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Isrc \
 *     fuzz/fuzz_activation.c src/supervisor/activation.c src/supervisor/colocate.c \
 *     src/base/thread_affinity.c src/supervisor/worker_channel.c \
 *     src/supervisor/worker_proc.c src/host/host.c src/base/json_text.c src/proto/(all .c) \
 *     -ljansson */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/json_text.h"
#include "host/host.h"
#include "proto/frame.h"
#include "supervisor/activation.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DEADLINE_MS 5
#define MARGIN_MS 5000 /* the driver's reap grace (2 s) and a loaded machine */
#define TRACKED 65536u

static uint8_t asked[TRACKED];     /* the host was asked about the position */
static uint8_t delivered[TRACKED]; /* a Deliver for the position went out */
static uint32_t last_order;

static int fuzz_call(void *self, const struct host_call *call, struct host_settlement *out,
                     long long *delay_ms)
{
    (void)self;
    if (call->position < TRACKED)
        asked[call->position] = 1;
    *delay_ms = call->position % 4;
    if (call->position % 5 == 4)
        return -1;
    if (call->position % 3 == 0)
        return host_reject(out, HOST_CODE_NOT_FOUND, "position %u", (unsigned)call->position);
    return host_fulfil_text(out, call->args);
}

static void fuzz_delivered(void *self, const struct host_call *call,
                           const struct host_settlement *seen, uint32_t delivery_order)
{
    (void)self;
    (void)seen;
    if (delivery_order <= last_order)
        abort(); /* orders strictly increase */
    last_order = delivery_order;
    if (call->position < TRACKED) {
        if (delivered[call->position])
            abort(); /* a position is delivered once */
        delivered[call->position] = 1;
    }
}

/* The kinds the engine blocks on: the host says so, and the fake worker owes a Deliver. */
static bool fuzz_is_sync(void *self, const char *kind)
{
    (void)self;
    return strcmp(kind, "now") == 0 || strcmp(kind, "random") == 0;
}

static const struct host_ops FUZZ_HOST = {
    .call = fuzz_call, .delivered = fuzz_delivered, .is_sync = fuzz_is_sync};

static void write_all(int fd, const uint8_t *bytes, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, bytes + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            _exit(0); /* the parent is gone or killed us */
        done += (size_t)n;
    }
}

/* The fake worker: writes the stream frame by frame and, like the real worker, waits
 * after each Blocked until the parent has sent every Deliver it owes so far (one per
 * Blocked and one per synchronous call), so one input can go through many releases.
 * Bytes that are not a whole frame are written as they are. Then it exits, or reads
 * until it is killed. */
__attribute__((noreturn)) static void worker_body(int in, int out, const uint8_t *stream,
                                                  size_t len, uint8_t flags)
{
    bool exit_after = (flags & 1) != 0, wait = (flags & 32) == 0;
    signal(SIGPIPE, SIG_IGN);
    struct wire_buf frame;
    wire_buf_init(&frame);
    unsigned owed = 0, got = 0;
    size_t at = 0;
    while (at < len) {
        const uint8_t *payload = NULL;
        size_t payload_len = 0, used = 0;
        if (frame_parse(stream + at, len - at, &payload, &payload_len, &used) != FRAME_OK) {
            write_all(out, stream + at, len - at);
            break;
        }
        write_all(out, stream + at, used);
        at += used;
        struct proto_msg msg;
        if (proto_decode(payload, payload_len, &msg) != PROTO_OK)
            continue;
        if (msg.tag == PROTO_HOST_CALL && fuzz_is_sync(NULL, msg.host_call.kind.str))
            owed++;
        bool blocked = msg.tag == PROTO_BLOCKED && wait;
        proto_msg_free(&msg);
        if (!blocked)
            continue;
        for (owed++; got < owed;) {
            if (frame_read(in, &frame) != FRAME_OK)
                _exit(0);
            if (proto_decode(frame.data, frame.len, &msg) != PROTO_OK)
                continue;
            got += msg.tag == PROTO_DELIVER;
            proto_msg_free(&msg);
        }
    }
    if (exit_after)
        _exit(0);
    char buf[4096];
    while (read(in, buf, sizeof buf) > 0) {
    }
    _exit(0);
}

static bool start_worker(const uint8_t *stream, size_t len, uint8_t flags,
                         struct worker_proc *proc)
{
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) != 0)
        return false;
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return false;
    }
    if (pipe2(err, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        return false;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(in[1]);
        close(out[0]);
        close(err[0]);
        worker_body(in[0], out[1], stream, len, flags);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    if (pid < 0) {
        close(in[1]);
        close(out[0]);
        close(err[0]);
        return false;
    }
    *proc = (struct worker_proc){pid, in[1], out[0], err[0]};
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    memset(asked, 0, sizeof asked);
    memset(delivered, 0, sizeof delivered);
    last_order = 0;

    static const uint32_t prefix_positions[3] = {0, 2, 5};
    struct proto_recorded_entry prefix[3];
    size_t prefix_count = (flags >> 1) & 3;
    memset(prefix, 0, sizeof prefix);
    for (size_t i = 0; i < prefix_count; i++) {
        prefix[i].position = prefix_positions[i];
        prefix[i].kind = proto_text_of("test.echo");
        prefix[i].settlement = PROTO_SETTLEMENT_FULFILLED;
        prefix[i].value = proto_text_of("1");
        prefix[i].delivery_order = (uint32_t)i + 1;
    }
    last_order = (uint32_t)prefix_count;

    struct activation_request req;
    memset(&req, 0, sizeof req);
    activation_request_defaults(&req, (flags & 8) ? PROTO_PROFILE_CODEMODE : PROTO_PROFILE_FLOW);
    if (flags & 8)
        req.max_host_calls = 2;
    if (flags & 16)
        req.budgets.max_value_bytes = 8;
    req.activation_id = 1;
    req.script = "return 1";
    req.script_len = 8;
    req.deadline_ms = DEADLINE_MS;
    req.prefix = prefix;
    req.prefix_count = prefix_count;

    struct worker_proc proc;
    if (!start_worker(data + 1, size - 1, flags, &proc))
        return 0;
    struct worker_conn w;
    worker_conn_init(&w, &proc);
    struct host host = {&FUZZ_HOST, NULL};
    struct activation_outcome out;
    pid_t pid = proc.pid;
    activation_run(&w, &req, &host, &out);

    if (out.status < ACTIVATION_COMPLETED || out.status > ACTIVATION_NO_WORKER)
        abort();
    if (out.status == ACTIVATION_COMPLETED &&
        (out.value == NULL || !json_text_valid(out.value, strlen(out.value))))
        abort();
    if (out.wall_ms > DEADLINE_MS + MARGIN_MS)
        abort();
    for (uint32_t p = 0; p < TRACKED; p++)
        if (delivered[p] && !asked[p] && !(req.max_host_calls > 0 || req.budgets.max_value_bytes == 8))
            abort(); /* a Deliver the host never settled, with no driver refusal possible */
    if (out.worker_ended) {
        int status;
        if (waitpid(pid, &status, WNOHANG) != -1 || errno != ECHILD)
            abort(); /* reported ended but not reaped */
    } else {
        (void)worker_conn_kill(&w);
    }
    activation_outcome_free(&out);
    return 0;
}
