#include "proto/spin_wait.h"

#include <time.h>

void spin_wait_init(struct spin_wait *s)
{
    s->bound_ns = SPIN_WAIT_MAX_NS;
    s->began_ns = 0;
    s->caught = 0;
    s->blocked = 0;
    s->spent_ns = 0;
    s->off_waits = 0;
}

int64_t spin_wait_now_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void spin_wait_begin(struct spin_wait *s)
{
    s->began_ns = spin_wait_now_ns();
}

bool spin_wait_more(const struct spin_wait *s)
{
    return s->bound_ns > 0 && spin_wait_now_ns() - s->began_ns < s->bound_ns;
}

void spin_wait_relax(void)
{
    /* No sched_yield here: yielding to a busy process that shares this CPU hands it a
     * whole time slice (milliseconds), while a blocked waiter that is woken preempts
     * it at once. Blocking after the bound is what lets a peer on this CPU run. */
    for (int i = 0; i < 16; i++) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield" ::: "memory");
#else
        __asm__ __volatile__("" ::: "memory");
#endif
    }
}

static int64_t clamp_bound(int64_t ns)
{
    if (ns < SPIN_WAIT_MIN_NS)
        return 0;
    return ns > SPIN_WAIT_MAX_NS ? SPIN_WAIT_MAX_NS : ns;
}

void spin_wait_end(struct spin_wait *s, bool while_spinning)
{
    spin_wait_end_after(s, while_spinning, spin_wait_now_ns() - s->began_ns);
}

void spin_wait_end_after(struct spin_wait *s, bool while_spinning, int64_t waited)
{
    /* Caught only within the bound: a spinner that was preempted (its peer shares the
     * CPU and was woken) finds the answer late, and that spin did not pay. */
    if (while_spinning && waited <= s->bound_ns) {
        s->caught++;
        s->spent_ns += waited;
        /* Follow the latency seen (twice it), shrinking slowly so one fast answer
         * does not cut the spin that the usual ones need. */
        int64_t follow = s->bound_ns - s->bound_ns / 8;
        if (follow < 2 * waited)
            follow = 2 * waited;
        s->bound_ns = clamp_bound(follow < SPIN_WAIT_MIN_NS ? SPIN_WAIT_MIN_NS : follow);
        return;
    }
    s->blocked++;
    if (s->bound_ns > 0) {
        /* The spin did not pay: halve it; below the minimum it is off for a while.
         * (When parent and worker share one CPU, every spin fails: the answer cannot
         * be made while its reader spins, so the spin must switch itself off.) */
        s->spent_ns += s->bound_ns;
        s->bound_ns = clamp_bound(s->bound_ns / 2);
        if (s->bound_ns == 0)
            s->off_waits = SPIN_WAIT_OFF_WAITS;
        return;
    }
    /* Off: after SPIN_WAIT_OFF_WAITS blocked waits, try again with a short spin. */
    if (s->off_waits > 0 && --s->off_waits == 0)
        s->bound_ns = SPIN_WAIT_PROBE_NS;
}
