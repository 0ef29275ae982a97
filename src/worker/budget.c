#include "worker/budget.h"

#include "worker/cpu_timer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* QuickJS's default allocator counts each block as its usable size plus this. */
#define BUDGET_MALLOC_OVERHEAD 8u

static size_t block_size(const void *ptr)
{
    return engine_heap_usable(ptr) + BUDGET_MALLOC_OVERHEAD;
}

size_t budget_heap_slack(size_t heap_limit)
{
    size_t slack = heap_limit / 64;
    return slack < (16u << 10) ? (16u << 10) : slack;
}

/* What the heap may hold from malloc: twice the budget, so blocks freed in one size
 * and not reusable for another cannot grow it without bound. No cap between
 * activations. */
static size_t footprint_cap(const struct budget *budget)
{
    if (budget->heap_limit >= SIZE_MAX / 2 - ENGINE_HEAP_CHUNK_BYTES)
        return SIZE_MAX;
    return 2 * budget->heap_limit + ENGINE_HEAP_CHUNK_BYTES;
}

/* A refused allocation: counted, and the heap is exhausted if it is at its budget, or
 * if the heap reached its cap. */
static void refused(struct budget *budget, size_t in_use, enum engine_heap_result why)
{
    budget->alloc_failures++;
    bool at_budget = budget->heap_limit - (in_use < budget->heap_limit ? in_use : budget->heap_limit) <
                     budget_heap_slack(budget->heap_limit);
    if ((at_budget || why == ENGINE_HEAP_REFUSED_CAP) && budget->exhausted == BUDGET_OK)
        budget->exhausted = BUDGET_HEAP_EXHAUSTED;
}

static bool over_limit(const struct budget *budget, size_t in_use, size_t more)
{
    return more > budget->heap_limit || in_use > budget->heap_limit - more;
}

static void *budget_malloc(JSMallocState *state, size_t size)
{
    struct budget *budget = state->opaque;
    if (over_limit(budget, state->malloc_size, size + BUDGET_MALLOC_OVERHEAD)) {
        refused(budget, state->malloc_size, ENGINE_HEAP_OK);
        return NULL;
    }
    void *ptr = NULL;
    enum engine_heap_result got = engine_heap_alloc(&budget->heap, size, footprint_cap(budget), &ptr);
    if (got != ENGINE_HEAP_OK) {
        refused(budget, state->malloc_size, got);
        return NULL;
    }
    state->malloc_count++;
    state->malloc_size += block_size(ptr);
    return ptr;
}

static void budget_free(JSMallocState *state, void *ptr)
{
    if (ptr == NULL)
        return;
    struct budget *budget = state->opaque;
    state->malloc_count--;
    state->malloc_size -= block_size(ptr);
    engine_heap_free(&budget->heap, ptr);
}

static void *budget_realloc(JSMallocState *state, void *ptr, size_t size)
{
    struct budget *budget = state->opaque;
    if (ptr == NULL)
        return size == 0 ? NULL : budget_malloc(state, size);
    size_t old = block_size(ptr);
    if (size == 0) {
        budget_free(state, ptr);
        return NULL;
    }
    size_t in_use = state->malloc_size - old;
    if (size + BUDGET_MALLOC_OVERHEAD > old &&
        over_limit(budget, in_use, size + BUDGET_MALLOC_OVERHEAD)) {
        refused(budget, state->malloc_size, ENGINE_HEAP_OK);
        return NULL;
    }
    void *grown = NULL;
    enum engine_heap_result got =
        engine_heap_realloc(&budget->heap, ptr, size, footprint_cap(budget), &grown);
    if (got != ENGINE_HEAP_OK) {
        refused(budget, state->malloc_size, got);
        return NULL;
    }
    state->malloc_size = in_use + block_size(grown);
    return grown;
}

static size_t budget_usable_size(const void *ptr)
{
    return engine_heap_usable(ptr);
}

const JSMallocFunctions BUDGET_MALLOC_FUNCTIONS = {
    budget_malloc,
    budget_free,
    budget_realloc,
    budget_usable_size,
};

static uint64_t thread_cpu_ns(void)
{
    struct timespec now;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0)
        abort(); /* admitted by the filter; failing means the clock is gone */
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

void budget_init(struct budget *budget)
{
    engine_heap_init(&budget->heap);
    budget->heap_limit = SIZE_MAX;
    budget->alloc_failures = 0;
    budget->cpu_armed = false;
    budget->cpu_start_ns = 0;
    budget->cpu_limit_ns = 0;
    budget->cpu_read_ns = 0;
    budget->cpu_read_ticks = 0;
    budget->exhausted = BUDGET_OK;
    budget->stop_requested = false;
}

void budget_release_heap(struct budget *budget)
{
    engine_heap_release(&budget->heap);
}

size_t budget_stack_bytes(uint32_t requested)
{
    if (requested < BUDGET_STACK_MIN)
        return BUDGET_STACK_MIN;
    return requested > BUDGET_STACK_MAX ? BUDGET_STACK_MAX : requested;
}

void budget_start(struct budget *budget, JSRuntime *rt, const struct proto_budgets *limits)
{
    budget->heap_limit = limits->heap_bytes > SIZE_MAX ? SIZE_MAX : (size_t)limits->heap_bytes;
    budget->alloc_failures = 0;
    budget->exhausted = BUDGET_OK;
    budget->stop_requested = false;
    /* The stack is measured from here, the frame the whole activation runs under. */
    JS_UpdateStackTop(rt);
    JS_SetMaxStackSize(rt, budget_stack_bytes(limits->stack_bytes));
    budget->cpu_limit_ns = (uint64_t)limits->cpu_ms * 1000000u;
    budget->cpu_read_ticks = cpu_timer_ticks();
    budget->cpu_start_ns = thread_cpu_ns();
    budget->cpu_read_ns = budget->cpu_start_ns;
    budget->cpu_armed = true;
    cpu_timer_hard_limit(budget->cpu_start_ns + budget_cpu_hard_limit_ns(budget->cpu_limit_ns));
}

uint64_t budget_cpu_hard_limit_ns(uint64_t limit_ns)
{
    return limit_ns + (limit_ns > BUDGET_CPU_GRACE_MIN_NS ? limit_ns : BUDGET_CPU_GRACE_MIN_NS);
}

void budget_end(struct budget *budget)
{
    (void)budget;
    cpu_timer_no_limit();
}

uint64_t budget_cpu_used_ns(const struct budget *budget)
{
    return budget->cpu_armed ? thread_cpu_ns() - budget->cpu_start_ns : 0;
}

bool budget_cpu_check(struct budget *budget)
{
    if (budget->exhausted != BUDGET_OK)
        return true;
    if (!budget->cpu_armed)
        return false;
    /* The tick count is taken before the clock: a tick between the two makes the next
     * check read again, never skip a read it needed. */
    unsigned ticks = cpu_timer_ticks();
    uint64_t used = budget->cpu_read_ns - budget->cpu_start_ns;
    if (cpu_timer_ticking() && ticks == budget->cpu_read_ticks && used < budget->cpu_limit_ns &&
        budget->cpu_limit_ns - used > BUDGET_CPU_LAZY_MARGIN_NS)
        return false;
    budget->cpu_read_ticks = ticks;
    budget->cpu_read_ns = thread_cpu_ns();
    if (budget->cpu_read_ns - budget->cpu_start_ns >= budget->cpu_limit_ns)
        budget->exhausted = BUDGET_CPU_EXHAUSTED;
    return budget->exhausted != BUDGET_OK;
}

enum budget_exhausted budget_state(const struct budget *budget)
{
    return budget->exhausted;
}

size_t budget_refusals(const struct budget *budget)
{
    return budget->alloc_failures;
}

void budget_exhaust_heap(struct budget *budget)
{
    if (budget->exhausted == BUDGET_OK)
        budget->exhausted = BUDGET_HEAP_EXHAUSTED;
}

void budget_request_stop(struct budget *budget)
{
    budget->stop_requested = true;
}

int budget_interrupt(JSRuntime *rt, void *opaque)
{
    (void)rt;
    struct budget *budget = opaque;
    if (budget->stop_requested)
        return 1;
    return budget_cpu_check(budget) ? 1 : 0;
}
