/* stdin_ready.h on Linux: ppoll(2) on fd 0 with a zero timeout (docs/syscall-admission.md,
 * ppoll). */
#include "worker/stdin_ready.h"

#include <errno.h>
#include <poll.h>
#include <time.h>

bool stdin_ready_now(void)
{
    struct pollfd p = {0, POLLIN, 0};
    static const struct timespec zero = {0, 0};
    int rc = ppoll(&p, 1, &zero, NULL);
    if (rc < 0)
        return errno != EINTR; /* an error: let the read report it */
    return rc > 0;
}

