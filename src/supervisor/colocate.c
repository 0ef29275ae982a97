#include "supervisor/colocate.h"

#include "base/thread_affinity.h"

#include <string.h>

void colocate_init(struct colocation *c, pid_t worker)
{
    memset(c, 0, sizeof *c);
    c->worker = worker;
}

void colocate_burst(struct colocation *c)
{
    if (c->pinned || c->declined || c->worker <= 0)
        return;
    /* Whatever stops this pin stops it for the rest of the activation: a call must not
     * pay for system calls that already failed. */
    c->declined = true;
    int cpu = sched_getcpu();
    if (cpu < 0 || cpu >= CPU_SETSIZE)
        return;
    if (sched_getaffinity(0, sizeof c->thread_mask, &c->thread_mask) != 0 ||
        sched_getaffinity(c->worker, sizeof c->worker_mask, &c->worker_mask) != 0)
        return;
    /* Only a CPU both may already use: the pin never moves either off the CPUs the
     * operator (or a caller's own pinning) gave it. */
    if (!CPU_ISSET(cpu, &c->thread_mask) || !CPU_ISSET(cpu, &c->worker_mask))
        return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        return;
    if (sched_setaffinity(c->worker, sizeof one, &one) != 0) {
        (void)sched_setaffinity(0, sizeof c->thread_mask, &c->thread_mask);
        return;
    }
    thread_affinity_note_pinned(&c->thread_mask);
    c->declined = false;
    c->pinned = true;
}

void colocate_release(struct colocation *c, pid_t worker_now)
{
    if (!c->pinned)
        return;
    /* An unreaped worker keeps its number, even dead (then ESRCH is harmless). */
    if (worker_now == c->worker)
        (void)sched_setaffinity(c->worker, sizeof c->worker_mask, &c->worker_mask);
    (void)sched_setaffinity(0, sizeof c->thread_mask, &c->thread_mask);
    thread_affinity_note_unpinned();
    c->pinned = false;
}
