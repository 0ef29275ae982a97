#include "worker/cpu_timer.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proto/frame.h"
#include "proto/message.h"
#include "proto/wire.h"
#include "worker/refuse.h"

/* Shared with the handler (see cpu_timer.h). */
static volatile sig_atomic_t tick_flag;
static volatile sig_atomic_t tick_count; /* ticks handled, wrapping */
static bool ticking;                     /* the timer is armed */
static volatile sig_atomic_t hard_armed;
static volatile sig_atomic_t frames_writing;
static volatile uint64_t hard_limit_ns; /* read by the handler only while hard_armed */

/* Finished(budget_exhausted cpu) with its frame header, encoded before arming. */
static uint8_t stop_frame[64];
static size_t stop_frame_len;

static void write_stop_frame_and_exit(void)
{
    size_t done = 0;
    while (done < stop_frame_len) {
        ssize_t n = write(1, stop_frame + done, stop_frame_len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* the parent is gone: nothing left to tell */
        done += (size_t)n;
    }
    _exit(0);
}

static void on_tick(int signo)
{
    (void)signo;
    int saved_errno = errno;
    tick_flag = 1;
    tick_count = (sig_atomic_t)(((unsigned)tick_count + 1u) & 0x7fffffffu);
    if (hard_armed && !frames_writing) {
        struct timespec now;
        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) == 0 &&
            (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec >= hard_limit_ns)
            write_stop_frame_and_exit();
    }
    errno = saved_errno;
}

static bool encode_stop_frame(void)
{
    struct proto_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.tag = PROTO_FINISHED;
    msg.finished.outcome = PROTO_OUTCOME_BUDGET_EXHAUSTED;
    msg.finished.exhausted = PROTO_BUDGET_CPU;
    struct wire_buf payload;
    wire_buf_init(&payload);
    bool ok = proto_encode(&msg, &payload) == PROTO_OK &&
              payload.len + PROTO_FRAME_HEADER_BYTES <= sizeof stop_frame;
    if (ok) {
        frame_header_encode((uint32_t)payload.len, stop_frame);
        memcpy(stop_frame + PROTO_FRAME_HEADER_BYTES, payload.data, payload.len);
        stop_frame_len = PROTO_FRAME_HEADER_BYTES + payload.len;
    }
    wire_buf_free(&payload);
    return ok;
}

void cpu_timer_arm_or_refuse(void)
{
    if (!encode_stop_frame())
        refuse_unconfined("cpu-timer");
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_tick;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigset_t profile;
    sigemptyset(&profile);
    sigaddset(&profile, SIGPROF);
    /* The mask survives execve: a parent that blocked SIGPROF would silence it. */
    if (sigaction(SIGPROF, &action, NULL) != 0 ||
        sigprocmask(SIG_UNBLOCK, &profile, NULL) != 0)
        refuse_unconfined("cpu-timer");
    struct sigevent event;
    memset(&event, 0, sizeof event);
    event.sigev_notify = SIGEV_SIGNAL; /* the worker has one thread (startup checks) */
    event.sigev_signo = SIGPROF;
    timer_t timer;
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &event, &timer) != 0)
        refuse_unconfined("cpu-timer");
    struct itimerspec period;
    memset(&period, 0, sizeof period);
    period.it_interval.tv_nsec = CPU_TIMER_TICK_NS;
    period.it_value.tv_nsec = CPU_TIMER_TICK_NS;
    if (timer_settime(timer, 0, &period, NULL) != 0)
        refuse_unconfined("cpu-timer");
    ticking = true;
}

bool cpu_timer_ticking(void)
{
    return ticking;
}

volatile sig_atomic_t *cpu_timer_tick_flag(void)
{
    return &tick_flag;
}

unsigned cpu_timer_ticks(void)
{
    return (unsigned)tick_count;
}

void cpu_timer_no_limit(void)
{
    hard_armed = 0;
    atomic_signal_fence(memory_order_seq_cst);
}

void cpu_timer_hard_limit(uint64_t limit_ns)
{
    cpu_timer_no_limit(); /* the handler must not read the limit while it changes */
    if (limit_ns == UINT64_MAX)
        return;
    hard_limit_ns = limit_ns;
    atomic_signal_fence(memory_order_seq_cst);
    hard_armed = 1;
}

void cpu_timer_frames_writing(bool writing)
{
    atomic_signal_fence(memory_order_seq_cst);
    frames_writing = writing ? 1 : 0;
    atomic_signal_fence(memory_order_seq_cst);
}
