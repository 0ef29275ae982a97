#include "worker/stdin_spin.h"

#include <errno.h>
#include <poll.h>
#include <time.h>

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
    struct pollfd p = {0, POLLIN, 0};
    static const struct timespec zero = {0, 0};
    int rc = ppoll(&p, 1, &zero, NULL);
    if (rc < 0)
        return errno != EINTR; /* an error: let the read report it */
    return rc > 0;
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
