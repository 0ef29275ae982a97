/* The short spin before a blocking read of stdin (behind stdin_spin.h), on Windows:
 * PeekNamedPipe says whether a read would return at once, as ppoll with a zero timeout
 * does on Linux. */
#include "worker/stdin_spin.h"

#include <windows.h>

static struct spin_wait spin;
static bool spin_ready;
static bool gave_up; /* a spin gave up and its blocking read has not ended yet */

const struct spin_wait *stdin_spin_state(void)
{
    return &spin;
}

/* True if a read of stdin would not block now (bytes, end of stream or an error). */
static bool stdin_ready_now(void)
{
    DWORD available = 0;
    if (!PeekNamedPipe(GetStdHandle(STD_INPUT_HANDLE), NULL, 0, NULL, &available, NULL))
        return true; /* closed or broken: let the read report it */
    return available > 0;
}

bool stdin_spin_until_readable(void)
{
    if (!spin_ready) {
        spin_wait_init(&spin);
        spin_ready = true;
    }
    spin_wait_begin(&spin);
    if (spin.bound_ns == 0) {
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
