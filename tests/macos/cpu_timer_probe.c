/* The macOS CPU timer (src/worker/cpu_timer_macos.c), on macOS (make macos-probe; the
 * CI job runs it). Each check runs in a fresh child that confines itself as the worker
 * does in engine mode (confine() with cpu_timer: the timer is armed, then the Seatbelt
 * profile applied), then drives the timer through cpu_timer.h as budget.c and serve.c
 * do. Guards proven:
 *   - engine mode arms (no "cpu-timer" refusal, exit 70);
 *   - ticks come as the engine thread uses CPU while a limit is set, and stop without
 *     one (the timer is disabled between activations);
 *   - the backstop: native code that never polls is ended once the thread's CPU time
 *     passes the hard limit, with a Finished(budget_exhausted cpu) frame on stdout and
 *     exit 0; its control, the same spin with no limit, runs on until its alarm;
 *   - the backstop never writes while the engine holds stdout (cpu_timer_frames_writing):
 *     the engine's byte comes first, the stop frame after it is given back.
 * Waits are bounded by CPU time spent or by alarm(2) in the child, never by sleeps.
 * Prints "ok - ..." / "not ok - ..." lines; exits 1 on any failure. Built only on macOS:
 * on Linux, make macos-check compiles it for arm64-apple-macos13 against
 * tests/macos/macos_decls.h. */
#include "proto/frame.h"
#include "proto/message.h"
#include "worker/confine.h"
#include "worker/cpu_timer.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
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

static uint64_t thread_cpu_ns(void)
{
    struct timespec now;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0)
        _exit(3);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* Native code that reaches no poll, for ns of the thread's CPU. */
static void spin_cpu_ns(uint64_t ns)
{
    uint64_t end = thread_cpu_ns() + ns;
    while (thread_cpu_ns() < end) {
    }
}

static void confine_engine_mode(void)
{
    struct confine_options options;
    memset(&options, 0, sizeof options);
    options.landlock_policy = LANDLOCK_POLICY_REQUIRED;
    options.cpu_timer = true;
    (void)confine(&options);
}

struct child_end {
    int status;        /* waitpid's, or -1 */
    uint8_t out[256];  /* what the child wrote on stdout */
    size_t out_len;
};

/* Runs body in a child whose stdout is a pipe read here to its end; the child's
 * alarm(alarm_s) bounds it. */
static struct child_end run_child(void (*body)(void), unsigned alarm_s)
{
    struct child_end end = {.status = -1};
    int fds[2];
    if (pipe(fds) != 0)
        return end;
    pid_t pid = fork();
    if (pid < 0)
        return end;
    if (pid == 0) {
        (void)alarm(alarm_s);
        if (dup2(fds[1], 1) < 0)
            _exit(4);
        body();
        _exit(5);
    }
    (void)close(fds[1]);
    for (;;) {
        ssize_t n = read(fds[0], end.out + end.out_len, sizeof end.out - end.out_len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || (end.out_len += (size_t)n) == sizeof end.out)
            break;
    }
    (void)close(fds[0]);
    int status;
    if (waitpid(pid, &status, 0) == pid)
        end.status = status;
    return end;
}

/* The bytes from offset are exactly one Finished(budget_exhausted cpu) frame. */
static bool is_cpu_stop_frame(const struct child_end *end, size_t offset)
{
    if (end->out_len < offset + PROTO_FRAME_HEADER_BYTES)
        return false;
    uint32_t len = frame_header_decode(end->out + offset);
    if (end->out_len != offset + PROTO_FRAME_HEADER_BYTES + len)
        return false;
    struct proto_msg msg;
    if (proto_decode(end->out + offset + PROTO_FRAME_HEADER_BYTES, len, &msg) != PROTO_OK)
        return false;
    bool stop = msg.tag == PROTO_FINISHED &&
                msg.finished.outcome == PROTO_OUTCOME_BUDGET_EXHAUSTED &&
                msg.finished.exhausted == PROTO_BUDGET_CPU;
    proto_msg_free(&msg);
    return stop;
}

static bool exited(int status, int code)
{
    return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == code;
}

/* exit 0: ticks came with a limit set and none without; 1: no ticks within 2 s of
 * CPU; 2: a tick without a limit. */
static void body_ticks(void)
{
    confine_engine_mode();
    unsigned before = cpu_timer_ticks();
    cpu_timer_hard_limit(UINT64_MAX); /* an activation without a backstop */
    uint64_t give_up = thread_cpu_ns() + 2000000000u;
    while (cpu_timer_ticks() - before < 3u) {
        if (thread_cpu_ns() > give_up)
            _exit(1);
    }
    if (*cpu_timer_tick_flag() != 1)
        _exit(1);
    cpu_timer_no_limit();
    spin_cpu_ns(3u * CPU_TIMER_TICK_NS); /* a firing already on its way may still land */
    unsigned idle = cpu_timer_ticks();
    spin_cpu_ns(20u * CPU_TIMER_TICK_NS);
    _exit(cpu_timer_ticks() == idle ? 0 : 2);
}

static void body_backstop(void)
{
    confine_engine_mode();
    cpu_timer_hard_limit(thread_cpu_ns() + 5u * CPU_TIMER_TICK_NS);
    for (;;)
        spin_cpu_ns(CPU_TIMER_TICK_NS);
}

static void body_no_limit(void)
{
    confine_engine_mode();
    cpu_timer_hard_limit(UINT64_MAX);
    for (;;)
        spin_cpu_ns(CPU_TIMER_TICK_NS);
}

static void body_hold(void)
{
    confine_engine_mode();
    cpu_timer_hard_limit(thread_cpu_ns() + 2u * CPU_TIMER_TICK_NS);
    cpu_timer_frames_writing(true);
    spin_cpu_ns(30u * CPU_TIMER_TICK_NS); /* far past the limit, stdout held */
    static const char held[] = "H";
    if (write(1, held, 1) != 1)
        _exit(6);
    cpu_timer_frames_writing(false);
    for (;;)
        spin_cpu_ns(CPU_TIMER_TICK_NS);
}

int main(void)
{
    char detail[160];

    struct child_end ticks = run_child(body_ticks, 20);
    snprintf(detail, sizeof detail, "child status %d (1 no ticks, 2 ticks without a limit, "
                                    "70 refused)", ticks.status);
    result(exited(ticks.status, 0),
           "cpu timer: engine mode arms; ticks follow the thread's CPU while a limit is set, "
           "none without one", detail);

    struct child_end stop = run_child(body_backstop, 10);
    snprintf(detail, sizeof detail, "child status %d, %zu bytes on stdout", stop.status,
             stop.out_len);
    result(exited(stop.status, 0) && is_cpu_stop_frame(&stop, 0),
           "cpu timer: the backstop ends native code past the hard limit with "
           "Finished(budget_exhausted cpu), exit 0", detail);

    struct child_end control = run_child(body_no_limit, 2);
    snprintf(detail, sizeof detail, "child status %d, %zu bytes on stdout", control.status,
             control.out_len);
    result(control.status >= 0 && WIFSIGNALED(control.status) &&
               WTERMSIG(control.status) == SIGALRM && control.out_len == 0,
           "cpu timer control: with no limit the same spin runs on until its alarm", detail);

    struct child_end hold = run_child(body_hold, 10);
    snprintf(detail, sizeof detail, "child status %d, %zu bytes on stdout, first 0x%02x",
             hold.status, hold.out_len, hold.out_len > 0 ? hold.out[0] : 0);
    result(exited(hold.status, 0) && hold.out_len > 0 && hold.out[0] == 'H' &&
               is_cpu_stop_frame(&hold, 1),
           "cpu timer: the backstop waits while the engine holds stdout, then stops it",
           detail);
    return failures == 0 ? 0 : 1;
}
