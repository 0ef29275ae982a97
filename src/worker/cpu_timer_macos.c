/* The CPU timer on macOS (behind cpu_timer.h; sandbox.md "Clock and thread bounds").
 *
 * macOS has no timer on a thread's CPU clock (no timer_create), so a ticker thread
 * does what Linux's SIGPROF handler does. It waits in kevent on its own kqueue, whose
 * EVFILT_TIMER fires every CPU_TIMER_TICK_NS of wall time while an activation's limit
 * is set (cpu_timer_hard_limit adds it, cpu_timer_no_limit deletes it: an idle worker
 * has no timer running and its ticker sleeps; nothing reads ticks outside an
 * activation). At each
 * firing it reads the engine thread's CPU time: thread_info(THREAD_BASIC_INFO) on the
 * thread's Mach port (pthread_mach_thread_np), user plus system time since the thread
 * began, the quantity budget.c's clock_gettime(CLOCK_THREAD_CPUTIME_ID) reads on the
 * engine thread itself, in microseconds. Then:
 *   1. once the engine thread has used another CPU_TIMER_TICK_NS since the last tick,
 *      it counts a tick and sets the flag QuickJS polls: ticks follow CPU, as on
 *      Linux. Between two reads of the same count the thread used less than one tick
 *      since the last tick plus what it used before the next firing noticed (one wall
 *      period, so at most one more tick), within BUDGET_CPU_LAZY_MARGIN_NS;
 *   2. the backstop, for native code that reaches no poll: once the CPU time reaches
 *      the hard limit it writes the Finished(budget_exhausted cpu) frame encoded at
 *      arming and ends the process (_exit 0), as Linux's handler does.
 * Here the ticker and the engine run at once, so who may write to stdout is one
 * atomic state: the engine takes it before writing frames (cpu_timer_frames_writing)
 * and gives it back; the backstop takes it, reads the limit again (an activation
 * clears it before its Finished) and then writes its frame and ends the process, or
 * gives it back. An engine that finds it taken yields until one or the other: the
 * parent never gets a frame cut in two, nor a stop after an activation's Finished.
 *
 * Fails closed: arming refuses ("cpu-timer", exit 70) if the frame, the thread's port,
 * its CPU time, the kqueue, the timer or the thread cannot be had; a ticker that can
 * no longer wait, or a timer that cannot be added, ends the worker the same way,
 * since without ticks budget.c's lazy check would stop reading the clock. Everything
 * is set up before sandbox_init (confine_macos.c), the timer added and deleted once
 * there; afterwards only kevent on this kqueue and thread_info on our own thread are
 * used.
 * Written and compile-checked against declared signatures (tests/macos/macos_decls.h,
 * make macos-check), not run here: no macOS machine is reachable (docs/platforms.md);
 * make macos-probe (tests/macos/seatbelt_probe.c) drives it in the CI job. */
#include "worker/cpu_timer.h"

#include "proto/frame.h"
#include "proto/message.h"
#include "proto/wire.h"
#include "worker/refuse.h"

#include <errno.h>
#include <mach/mach.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/event.h>
#include <unistd.h>

static volatile sig_atomic_t tick_flag;
static atomic_uint tick_count; /* ticks taken, wrapping */
static bool ticking;           /* armed: cpu_timer_arm_or_refuse returned */

static atomic_bool hard_armed;
static _Atomic uint64_t hard_limit_ns;

/* Who may write to stdout. */
enum { WRITER_NONE, WRITER_ENGINE, WRITER_BACKSTOP };
static atomic_int writer;

static mach_port_t engine_thread; /* the thread that armed the timer: the engine's */
static int ticker_queue = -1;
#define TICKER_TIMER_ID 1

/* Finished(budget_exhausted cpu) with its frame header, encoded before arming (as
 * cpu_timer.c encodes it). */
static uint8_t stop_frame[64];
static size_t stop_frame_len;

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

/* The engine thread's user plus system time, in nanoseconds. */
static bool engine_cpu_ns(uint64_t *ns)
{
    thread_basic_info_data_t info;
    mach_msg_type_number_t count = THREAD_BASIC_INFO_COUNT;
    if (thread_info(engine_thread, THREAD_BASIC_INFO, (thread_info_t)&info, &count) !=
        KERN_SUCCESS)
        return false;
    uint64_t us = (uint64_t)info.user_time.seconds * 1000000u +
                  (uint64_t)info.user_time.microseconds +
                  (uint64_t)info.system_time.seconds * 1000000u +
                  (uint64_t)info.system_time.microseconds;
    *ns = us * 1000u;
    return true;
}

__attribute__((noreturn)) static void write_stop_frame_and_exit(void)
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

/* One firing of the timer. */
static void on_firing(uint64_t *next_tick_ns)
{
    uint64_t now;
    if (!engine_cpu_ns(&now)) {
        /* No reading: tick, so the next poll reads the clock itself. */
        tick_flag = 1;
        atomic_fetch_add(&tick_count, 1u);
        return;
    }
    if (now >= *next_tick_ns) {
        tick_flag = 1;
        atomic_fetch_add(&tick_count, 1u);
        *next_tick_ns = now + CPU_TIMER_TICK_NS;
    }
    if (atomic_load(&hard_armed) && now >= atomic_load(&hard_limit_ns)) {
        int expected = WRITER_NONE;
        if (!atomic_compare_exchange_strong(&writer, &expected, WRITER_BACKSTOP))
            return; /* the engine is writing frames: the next firing tries again */
        /* Read again with stdout held: the activation may have ended (and cleared
         * the limit before its Finished) since the first read. */
        if (atomic_load(&hard_armed) && now >= atomic_load(&hard_limit_ns))
            write_stop_frame_and_exit();
        atomic_store(&writer, WRITER_NONE);
    }
}

static void *ticker_main(void *unused)
{
    (void)unused;
    uint64_t next_tick_ns = 0;
    for (;;) {
        struct kevent event;
        int n = kevent(ticker_queue, NULL, 0, &event, 1, NULL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            refuse_unconfined("cpu-timer"); /* no more ticks: the budget would not hold */
        if (n == 1 && event.filter == EVFILT_TIMER)
            on_firing(&next_tick_ns);
    }
    return NULL;
}

/* Adds (EV_ADD: a fresh period) or deletes (EV_DELETE) the timer. */
static int set_timer(uint16_t flags)
{
    struct kevent change;
    EV_SET(&change, TICKER_TIMER_ID, EVFILT_TIMER, flags, NOTE_NSECONDS, CPU_TIMER_TICK_NS, NULL);
    return kevent(ticker_queue, &change, 1, NULL, 0, NULL);
}

void cpu_timer_arm_or_refuse(void)
{
    if (!encode_stop_frame())
        refuse_unconfined("cpu-timer");
    engine_thread = pthread_mach_thread_np(pthread_self());
    uint64_t now;
    if (engine_thread == MACH_PORT_NULL || !engine_cpu_ns(&now))
        refuse_unconfined("cpu-timer");
    ticker_queue = kqueue();
    if (ticker_queue < 0)
        refuse_unconfined("cpu-timer");
    /* Proves the queue takes the timer while unconfined; each activation adds it. */
    if (set_timer(EV_ADD) != 0 || set_timer(EV_DELETE) != 0)
        refuse_unconfined("cpu-timer");
    pthread_t ticker;
    if (pthread_create(&ticker, NULL, ticker_main, NULL) != 0 || pthread_detach(ticker) != 0)
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
    return atomic_load(&tick_count) & 0x7fffffffu;
}

void cpu_timer_no_limit(void)
{
    atomic_store(&hard_armed, false);
    /* A timer left running (ENOENT: none was added) only wakes the ticker for
     * nothing: no reason to stop. */
    if (ticking)
        (void)set_timer(EV_DELETE);
}

void cpu_timer_hard_limit(uint64_t limit_ns)
{
    atomic_store(&hard_armed, false);
    if (!ticking)
        return;
    if (limit_ns != UINT64_MAX) {
        atomic_store(&hard_limit_ns, limit_ns);
        atomic_store(&hard_armed, true);
    }
    /* Without ticks the budget would not hold in native code (see above). */
    if (set_timer(EV_ADD) != 0)
        refuse_unconfined("cpu-timer");
}

void cpu_timer_frames_writing(bool writing)
{
    int expected = writing ? WRITER_NONE : WRITER_ENGINE;
    if (!writing) {
        /* Only the engine's own hold is given back, never the backstop's. */
        (void)atomic_compare_exchange_strong(&writer, &expected, WRITER_NONE);
        return;
    }
    /* Taken by the backstop: it ends the process or gives stdout back at once. */
    while (!atomic_compare_exchange_strong(&writer, &expected, WRITER_ENGINE)) {
        expected = WRITER_NONE;
        (void)sched_yield();
    }
}
