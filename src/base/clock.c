/* The monotonic clock: see base/clock.h. */
#include "base/clock.h"

#include <time.h>

long long monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
