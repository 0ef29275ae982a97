/* stdin_ready.h on Windows: PeekNamedPipe says whether a read would return at once, as
 * ppoll with a zero timeout does on Linux. */
#include "worker/stdin_ready.h"

#include <windows.h>

bool stdin_ready_now(void)
{
    DWORD available = 0;
    if (!PeekNamedPipe(GetStdHandle(STD_INPUT_HANDLE), NULL, 0, NULL, &available, NULL))
        return true; /* closed or broken: let the read report it */
    return available > 0;
}

