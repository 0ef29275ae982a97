/* The CPU timer on Windows (behind cpu_timer.h; sandbox.md "Clock and thread bounds").
 *
 * A thread-pool timer raises the tick every CPU_TIMER_TICK_NS of wall time: its
 * callback runs on a pool thread and only sets the tick flag QuickJS polls and counts
 * the tick. The poll's interrupt handler then reads the engine thread's own CPU clock
 * (budget.c: CLOCK_THREAD_CPUTIME_ID, which mingw-w64's runtime answers with
 * GetThreadTimes of the calling thread, kernel plus user time, at scheduler-tick
 * resolution). A wall tick is at least as frequent as a CPU tick, so cpu_timer_ticks'
 * promise (no tick: less than one tick of CPU) holds.
 *
 * The pool's handles (IoCompletion, TpWorkerFactory, IRTimer, WaitCompletionPacket)
 * are the ones sandbox.md's handle table allows; the timer is armed before the table
 * is attested so they are counted. There is no backstop for native code that never
 * polls: reading the engine thread's clock from the pool thread would need a Thread
 * handle the allowlist refuses. The parent's wall deadline is the hard bound, as the
 * page says. cpu_timer_hard_limit and cpu_timer_frames_writing keep their contract's
 * state but end nothing. */
#include "worker/cpu_timer.h"

#include "worker/refuse.h"

#include <windows.h>

static volatile sig_atomic_t tick_flag;
static volatile LONG tick_count; /* ticks taken, wrapping */
static bool ticking;
static uint64_t hard_limit_ns = UINT64_MAX;
static bool frames_writing;

static VOID CALLBACK on_tick(PTP_CALLBACK_INSTANCE instance, PVOID context, PTP_TIMER timer)
{
    (void)instance;
    (void)context;
    (void)timer;
    tick_flag = 1;
    (void)InterlockedIncrement(&tick_count);
}

void cpu_timer_arm_or_refuse(void)
{
    PTP_TIMER timer = CreateThreadpoolTimer(on_tick, NULL, NULL);
    if (timer == NULL)
        refuse_unconfined("cpu-timer");
    /* A negative due time is relative, in 100 ns units. */
    LARGE_INTEGER due = {.QuadPart = -(LONGLONG)(CPU_TIMER_TICK_NS / 100)};
    FILETIME first = {.dwLowDateTime = (DWORD)due.LowPart, .dwHighDateTime = (DWORD)due.HighPart};
    SetThreadpoolTimer(timer, &first, (DWORD)(CPU_TIMER_TICK_NS / 1000000L), 0);
    if (!IsThreadpoolTimerSet(timer))
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
    return (unsigned)tick_count & 0x7fffffffu;
}

void cpu_timer_no_limit(void)
{
    hard_limit_ns = UINT64_MAX;
}

void cpu_timer_hard_limit(uint64_t limit_ns)
{
    hard_limit_ns = limit_ns;
}

void cpu_timer_frames_writing(bool writing)
{
    frames_writing = writing;
}
