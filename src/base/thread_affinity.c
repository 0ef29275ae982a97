#include "base/thread_affinity.h"

#include <stdbool.h>

/* fork copies the forking thread's memory, so the child reads its thread's values. */
static __thread bool pinned;
static __thread cpu_set_t before_pin;

void thread_affinity_note_pinned(const cpu_set_t *original)
{
    before_pin = *original;
    pinned = true;
}

void thread_affinity_note_unpinned(void)
{
    pinned = false;
}

void thread_affinity_unpin_child(void)
{
    if (pinned)
        (void)sched_setaffinity(0, sizeof before_pin, &before_pin);
}
