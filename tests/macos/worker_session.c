/* The built macOS worker end to end, on macOS (make macos-session; the CI job runs it
 * on the signed build/macos/bin/ck-basal-worker):
 *
 *   worker_session WORKER
 *
 * launches WORKER through the parent's own launcher (supervisor/worker_launch_macos.c:
 * disclaimed posix_spawn; its startup check ran before main), in engine mode, and
 * speaks the protocol to it as a parent does. Guards proven on the real binary:
 *   - the worker confines itself (descriptors, parent watch, CPU timer, Seatbelt) and
 *     answers Hello with a Welcome the macOS parent's rule accepts (os macos, Seatbelt
 *     reported; supervisor/welcome_rules.c), protocol version ours;
 *   - an activation runs under the profile (return 6 * 7 completes with 42);
 *   - a script that loops forever is stopped by its CPU budget
 *     (Finished budget_exhausted cpu), the CPU timer's tick reaching QuickJS's poll;
 *   - at the end of its stdin the worker exits 0.
 * alarm(60) bounds the whole run (a worker that never answers kills the session).
 * Prints "ok - ..." / "not ok - ..." lines; exits 1 on any failure. Built only on macOS:
 * on Linux, make macos-check compiles it for arm64-apple-macos13 against
 * tests/macos/macos_decls.h. */
#include "proto/frame.h"
#include "proto/message.h"
#include "proto/wire.h"
#include "supervisor/welcome_rules.h"
#include "supervisor/worker_launch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

static void result(bool passed, const char *name, const char *detail)
{
    if (passed) {
        printf("ok - %s\n", name);
    } else {
        printf("not ok - %s: %s\n", name, detail);
        failures++;
    }
    fflush(stdout);
}

static bool send_msg(int fd, const struct proto_msg *msg)
{
    struct wire_buf payload;
    wire_buf_init(&payload);
    bool ok = proto_encode(msg, &payload) == PROTO_OK &&
              frame_write(fd, payload.data, payload.len) == FRAME_OK;
    wire_buf_free(&payload);
    return ok;
}

/* The next message; false at the end of the stream or on a frame that does not
 * decode. The message points into *payload. */
static bool recv_msg(int fd, struct wire_buf *payload, struct proto_msg *msg)
{
    return frame_read(fd, payload) == FRAME_OK &&
           proto_decode(payload->data, payload->len, msg) == PROTO_OK;
}

static struct proto_activate activation(uint64_t id, const char *script, uint32_t cpu_ms)
{
    struct proto_activate a;
    memset(&a, 0, sizeof a);
    a.activation_id = id;
    a.profile = PROTO_PROFILE_FLOW;
    a.script = proto_text_of(script);
    a.trigger = proto_text_of("{}");
    a.budgets.cpu_ms = cpu_ms;
    a.budgets.heap_bytes = 8u << 20;
    a.budgets.stack_bytes = 1u << 20;
    a.budgets.max_value_bytes = 256u << 10;
    return a;
}

/* Activates script and returns its Finished (other frames are skipped); false if the
 * worker ended first. */
static bool run_activation(const struct worker_proc *proc, const struct proto_activate *a,
                           struct wire_buf *payload, struct proto_msg *finished)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_ACTIVATE;
    msg.activate = *a;
    if (!send_msg(proc->to_worker, &msg))
        return false;
    for (;;) {
        if (!recv_msg(proc->from_worker, payload, finished))
            return false;
        if (finished->tag == PROTO_FINISHED)
            return true;
        proto_msg_free(finished);
    }
}

static void check_welcome(const struct worker_proc *proc, struct wire_buf *payload)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_HELLO;
    msg.hello.version = PROTO_VERSION;
    struct proto_msg welcome;
    memset(&welcome, 0, sizeof welcome);
    if (!send_msg(proc->to_worker, &msg) || !recv_msg(proc->from_worker, payload, &welcome) ||
        welcome.tag != PROTO_WELCOME) {
        result(false, "session: the worker answers Hello with a Welcome", "no Welcome");
        return;
    }
    struct welcome_confinement reported = {
        .os = worker_os_from_name(welcome.welcome.os.str, welcome.welcome.os.len),
        .seatbelt = welcome.welcome.seatbelt,
    };
    char why[160] = "";
    bool accepted = welcome.welcome.protocol_version == PROTO_VERSION &&
                    welcome_rules_accept(worker_launch_host_os(), &reported, why, sizeof why);
    char detail[256];
    snprintf(detail, sizeof detail, "os %.*s, seatbelt %d, protocol %u: %s",
             (int)welcome.welcome.os.len, welcome.welcome.os.str, welcome.welcome.seatbelt,
             (unsigned)welcome.welcome.protocol_version, why);
    result(accepted && reported.os == WORKER_OS_MACOS && reported.seatbelt,
           "session: the Welcome reports macos with Seatbelt, and the macOS parent accepts it",
           detail);
    proto_msg_free(&welcome);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: worker_session WORKER\n");
        return 2;
    }
    (void)alarm(60);
    char arg1[] = "--landlock=required";
    char *const worker_argv[] = {argv[1], arg1, NULL};
    struct worker_limits limits = {.address_space_bytes = 1ull << 32, .open_files = 64};
    struct worker_proc proc;
    if (worker_launch(argv[1], worker_argv, &limits, &proc) != 0) {
        result(false, "session: the launcher starts the worker", strerror(errno));
        return 1;
    }
    result(true, "session: the launcher starts the worker, disclaimed", "");
    struct wire_buf payload;
    wire_buf_init(&payload);
    check_welcome(&proc, &payload);

    struct proto_msg finished;
    struct proto_activate answer = activation(1, "return 6 * 7", 2000);
    bool ran = run_activation(&proc, &answer, &payload, &finished);
    char detail[256];
    snprintf(detail, sizeof detail, "%s", ran ? proto_outcome_name(finished.finished.outcome)
                                              : "the worker ended");
    result(ran && finished.finished.outcome == PROTO_OUTCOME_COMPLETED &&
               finished.finished.value.len == 2 &&
               memcmp(finished.finished.value.str, "42", 2) == 0,
           "session: an activation completes under the profile (42)", detail);
    if (ran)
        proto_msg_free(&finished);

    struct proto_activate loop = activation(2, "for (;;) {}", 100);
    ran = run_activation(&proc, &loop, &payload, &finished);
    snprintf(detail, sizeof detail, "%s %s",
             ran ? proto_outcome_name(finished.finished.outcome) : "the worker ended",
             ran ? proto_budget_name(finished.finished.exhausted) : "");
    result(ran && finished.finished.outcome == PROTO_OUTCOME_BUDGET_EXHAUSTED &&
               finished.finished.exhausted == PROTO_BUDGET_CPU,
           "session: a script that loops forever is stopped by its CPU budget", detail);
    if (ran)
        proto_msg_free(&finished);

    (void)close(proc.to_worker);
    int status = -1;
    pid_t waited;
    while ((waited = waitpid(proc.pid, &status, 0)) < 0 && errno == EINTR) {
    }
    snprintf(detail, sizeof detail, "status %d", status);
    result(waited == proc.pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "session: at the end of its stdin the worker exits 0", detail);
    wire_buf_free(&payload);
    return failures == 0 ? 0 : 1;
}
