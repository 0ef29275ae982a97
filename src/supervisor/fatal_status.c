#include "supervisor/fatal_status.h"

bool fatal_status_death(uint32_t exit_code, bool killed_by_parent)
{
    /* A parent's kill can leave any code (TerminateJobObject takes one): never ours to
     * count as the worker's fault. */
    if (killed_by_parent)
        return false;
    return exit_code == FATAL_STATUS_INVALID_HANDLE || exit_code == FATAL_STATUS_ACCESS_VIOLATION;
}
