/* stdin_ready.h on macOS: poll(2) on fd 0 with a zero timeout (macOS has no ppoll; a
 * zero timeout needs none of ppoll's signal mask). */
#include "worker/stdin_ready.h"

#include <errno.h>
#include <poll.h>

bool stdin_ready_now(void)
{
    struct pollfd p = {0, POLLIN, 0};
    int rc = poll(&p, 1, 0);
    if (rc < 0)
        return errno != EINTR; /* an error: let the read report it */
    return rc > 0;
}
