/* The spin before a blocking read of stdin, the same on every system; the one question
 * it asks the system is stdin_ready.h's, answered per system (stdin_ready_linux.c,
 * stdin_ready_windows.c). */
#include "worker/stdin_spin.h"

#include "worker/stdin_ready.h"

static struct spin_wait spin;
static bool spin_ready;
static bool gave_up; /* a spin gave up and its blocking read has not ended yet */

const struct spin_wait *stdin_spin_state(void)
{
    return &spin;
}

bool stdin_spin_until_readable(void)
{
    if (!spin_ready) {
        spin_wait_init(&spin);
        spin_ready = true;
    }
    spin_wait_begin(&spin);
    if (spin.bound_ns == 0) { /* off: no system call, straight to the blocking read */
        gave_up = true;
        return false;
    }
    for (;;) {
        if (stdin_ready_now()) {
            spin_wait_end(&spin, true);
            return true;
        }
        if (!spin_wait_more(&spin)) {
            gave_up = true;
            return false;
        }
        spin_wait_relax();
    }
}

void stdin_spin_blocked_read_done(void)
{
    if (!gave_up)
        return;
    gave_up = false;
    spin_wait_end(&spin, false);
}
