/* The CPU timer: what makes the CPU budget hold inside native code.
 *
 * One contract, one file per system: cpu_timer.c (Linux, below), cpu_timer_windows.c
 * and cpu_timer_macos.c, each stating how it keeps it.
 *
 * A POSIX timer on the worker thread's CPU clock (CLOCK_THREAD_CPUTIME_ID) raises
 * SIGPROF every CPU_TIMER_TICK_NS of CPU the worker uses. It is created and armed
 * once, in engine mode, as the last step before the seccomp filter: timer_create and
 * timer_settime are not admitted afterwards, and the allowlist does not grow (the
 * handler's return is rt_sigreturn, already admitted). Waiting for a frame uses no
 * CPU, so an idle worker gets no signals.
 *
 * The handler does two things:
 *   1. It sets the tick flag, which QuickJS polls (JS_SetInterruptFlag, patch 0003)
 *      at bytecode branches and inside the native loops whose length a script
 *      controls. The next poll calls the interrupt handler, which reads the clock
 *      (budget_interrupt): the budget is checked within one tick of CPU, however
 *      long a builtin runs between two counted polls.
 *   2. The backstop, for native code that reaches no poll at all: while an
 *      activation runs (cpu_timer_hard_limit), it reads the thread's CPU clock and,
 *      once the hard limit has passed, writes a Finished(budget_exhausted cpu) frame
 *      encoded at arming time and ends the process (_exit 0). The parent sees the
 *      same outcome as from a poll, later, and retires the worker as after any
 *      budget. It never does so while the main code is writing frames
 *      (cpu_timer_frames_writing): the parent never gets a frame cut in two; the
 *      next tick tries again. Frames the engine encoded but had not yet written
 *      (async HostCalls waiting for a flush) are dropped, as if never made.
 *
 * Async-signal-safety: the handler touches only volatile sig_atomic_t flags, a
 * 64-bit limit it reads only while the hard_armed flag says no one is writing it
 * (the main code clears that flag before changing the limit, with a signal fence),
 * and static bytes written once before the timer was armed; it calls only
 * clock_gettime, write and _exit (all async-signal-safe in POSIX), and saves and
 * restores errno. It takes no lock and allocates nothing, so it is safe wherever it
 * lands (inside malloc, inside QuickJS). The handler is installed with SA_RESTART,
 * so reads and writes on the pipes are restarted, and the worker's loops retry
 * EINTR anyway. */
#ifndef BASAL_WORKER_CPU_TIMER_H
#define BASAL_WORKER_CPU_TIMER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* CPU time between two ticks. */
#define CPU_TIMER_TICK_NS 10000000L /* 10 ms */

/* Installs the handler, unblocks SIGPROF, encodes the backstop's frame, creates and
 * arms the timer. Refuses (exit 70, token "cpu-timer") if any of it fails: without
 * the timer the CPU budget would not hold. Before the seccomp filter only. */
void cpu_timer_arm_or_refuse(void);

/* The flag the handler sets, for JS_SetInterruptFlag. */
volatile sig_atomic_t *cpu_timer_tick_flag(void);

/* How many ticks the handler has taken so far (wrapping; compare for equality only).
 * Between two reads that return the same count the thread used less than one tick
 * of CPU plus the kernel's latency in noticing the expiry (at most one scheduler
 * tick, itself at most 10 ms): budget_cpu_check relies on this to skip reading the
 * clock while the budget is far from spent. */
unsigned cpu_timer_ticks(void);

/* The timer is armed (cpu_timer_arm_or_refuse returned): only then do ticks come. */
bool cpu_timer_ticking(void);

/* The backstop ends the process once the thread's CPU clock reads limit_ns or more
 * (an absolute CLOCK_THREAD_CPUTIME_ID value); UINT64_MAX, or cpu_timer_no_limit(),
 * turns it off. */
void cpu_timer_hard_limit(uint64_t limit_ns);
void cpu_timer_no_limit(void);

/* The main code is writing frames to stdout (true) or has finished (false). */
void cpu_timer_frames_writing(bool writing);

#endif
