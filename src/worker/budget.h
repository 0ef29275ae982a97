/* The three budgets of an activation (docs/engine.md, "Budgets"):
 *
 *   CPU    the engine thread's CPU clock (CLOCK_THREAD_CPUTIME_ID), checked by the
 *          QuickJS interrupt handler and at every point the engine waits (read when
 *          the check cannot be answered without it, see budget_cpu_check); time spent
 *          blocked reading frames is not CPU, so it is not counted. The CPU timer
 *          (cpu_timer.h) makes QuickJS call the handler at least once per tick of
 *          CPU, also inside long builtins, and ends the process itself past
 *          budget_cpu_hard_limit_ns if nothing polls.
 *   heap   a counting allocator under QuickJS (JS_NewRuntime2), over the engine's own
 *          heap (engine_heap.h): an allocation that would take the runtime's live
 *          bytes above the budget fails, and so does one that would make the heap hold
 *          more than twice the budget (free blocks of other sizes), which exhausts it.
 *          A failure that leaves less than budget_heap_slack() free marks the heap
 *          exhausted, which ends the activation uncatchably; a larger single request
 *          that fails while the heap stays below its budget is an ordinary
 *          out-of-memory error the script can catch.
 *   stack  QuickJS's own stack limit (JS_SetMaxStackSize), measured from the engine's
 *          frame and kept below the real stack (budget_stack_bytes()).
 *
 * Exhaustion of CPU or heap sets a flag the interrupt handler turns into QuickJS's
 * uncatchable "interrupted" error; the engine reports the flag whatever the script
 * did afterwards. The handler also stops the script when the engine asks it to
 * (budget_request_stop), e.g. after a nondeterministic host call.
 *
 * Only clock_gettime(CLOCK_THREAD_CPUTIME_ID) and malloc/realloc/free: both admitted
 * by the seccomp allowlist. */
#ifndef BASAL_WORKER_BUDGET_H
#define BASAL_WORKER_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <quickjs.h>

#include "proto/message.h"
#include "worker/engine_heap.h"

/* The stack QuickJS may use, whatever an Activate asks for: at least 16 KiB (0 would
 * mean no limit to QuickJS), at most 6 MiB of the main thread's 8 MiB, leaving room
 * for native recursion QuickJS does not check and for the worker's own frames. */
#define BUDGET_STACK_MIN (16u << 10)
#define BUDGET_STACK_MAX (6u << 20)

enum budget_exhausted {
    BUDGET_OK = 0,
    BUDGET_CPU_EXHAUSTED,
    BUDGET_HEAP_EXHAUSTED,
};

struct budget {
    /* heap: the JS runtime's bytes, counted like QuickJS's default allocator */
    struct engine_heap heap;  /* where they live (released with the engine) */
    size_t heap_limit;        /* SIZE_MAX while no activation runs */
    size_t alloc_failures;    /* allocations refused in this activation */
    /* CPU */
    bool cpu_armed;
    uint64_t cpu_start_ns;    /* thread CPU time when the activation started */
    uint64_t cpu_limit_ns;
    uint64_t cpu_read_ns;     /* thread CPU time at the last read of the clock */
    unsigned cpu_read_ticks;  /* cpu_timer_ticks() at that read */
    /* the first budget found exhausted in this activation */
    enum budget_exhausted exhausted;
    /* the engine asked the script to stop (the outcome is already decided) */
    bool stop_requested;
};

/* Allocation functions for JS_NewRuntime2; the opaque pointer must be the runtime's
 * struct budget, initialised with budget_init. */
extern const JSMallocFunctions BUDGET_MALLOC_FUNCTIONS;

/* No limits: the state of a runtime built ahead of its activation. The budget must
 * stay where it is from here on (its heap links to itself). */
void budget_init(struct budget *budget);

/* Gives the runtime's whole heap back at once (engine_heap_release): the runtime, its
 * context and every value in them are gone, without QuickJS freeing them one by one. */
void budget_release_heap(struct budget *budget);

/* Applies an activation's limits to a runtime that is about to run it: heap limit,
 * QuickJS stack limit measured from the caller's frame, CPU clock started now, and
 * the CPU timer's backstop armed at budget_cpu_hard_limit_ns of CPU from now. */
void budget_start(struct budget *budget, JSRuntime *rt, const struct proto_budgets *limits);

/* The activation is over: the CPU timer's backstop is off. */
void budget_end(struct budget *budget);

/* CPU after which the CPU timer ends the process itself (cpu_timer.h) when no
 * interrupt poll has stopped the script: the budget plus as much again, at least
 * BUDGET_CPU_GRACE_MIN_NS more. */
#define BUDGET_CPU_GRACE_MIN_NS UINT64_C(100000000)
uint64_t budget_cpu_hard_limit_ns(uint64_t limit_ns);

/* Budget left at the last read above which a check without a tick since skips the
 * read: one tick, plus at most one scheduler tick (10 ms at HZ 100) before the kernel
 * notices the timer's expiry, plus as much again to spare. */
#define BUDGET_CPU_LAZY_MARGIN_NS UINT64_C(30000000)

/* The stack size QuickJS is given for an Activate's stack_bytes. */
size_t budget_stack_bytes(uint32_t requested);

/* Free bytes below which a refused allocation means the heap is exhausted. */
size_t budget_heap_slack(size_t heap_limit);

/* Checks the CPU budget; true once any budget is exhausted (the CPU budget is marked
 * exhausted when spent). The clock is read (a system call: CLOCK_THREAD_CPUTIME_ID
 * has no vDSO path) unless no CPU timer tick has come since the last read and more
 * than BUDGET_CPU_LAZY_MARGIN_NS of the budget was left at that read: the thread has
 * then used less than a tick plus the kernel's latency since (cpu_timer_ticks), so
 * the budget cannot be spent yet and the answer is the same as a read's. */
bool budget_cpu_check(struct budget *budget);

/* CPU nanoseconds used since budget_start. */
uint64_t budget_cpu_used_ns(const struct budget *budget);

/* The budget found exhausted first in this activation, if any. */
enum budget_exhausted budget_state(const struct budget *budget);

/* Allocations the heap budget has refused in this activation. */
size_t budget_refusals(const struct budget *budget);

/* The heap budget is exhausted (the engine could not meet a demand of the script's
 * inside it, e.g. its console text), unless another budget was first. */
void budget_exhaust_heap(struct budget *budget);

/* Makes the interrupt handler stop the script at its next poll. */
void budget_request_stop(struct budget *budget);

/* JS_SetInterruptHandler callback; opaque is the struct budget. Non-zero stops JS
 * with an uncatchable error. */
int budget_interrupt(JSRuntime *rt, void *opaque);

#endif
