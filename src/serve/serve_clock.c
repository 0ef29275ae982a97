#include "serve/serve_clock.h"

#include "base/error_line.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>

#ifdef BASAL_TEST_HOOKS
/* -1: not fixed. Read by every thread, set by the ops handler: atomic. */
static _Atomic int64_t g_fixed_ms = -1;
#endif

int64_t serve_clock_now_ms(void)
{
#ifdef BASAL_TEST_HOOKS
    int64_t fixed = atomic_load(&g_fixed_ms);
    if (fixed >= 0)
        return fixed;
#endif
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

bool serve_clock_fixed(void)
{
#ifdef BASAL_TEST_HOOKS
    return atomic_load(&g_fixed_ms) >= 0;
#else
    return false;
#endif
}

#ifdef BASAL_TEST_HOOKS
int serve_clock_init_from_env(char *err, size_t err_cap)
{
    const char *text = getenv("BASAL_TEST_CLOCK_MS");
    if (text == NULL)
        return 0;
    char *end;
    long long ms = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || ms < 0 || ms > (1LL << 53))
        return error_line(err, err_cap, "BASAL_TEST_CLOCK_MS: '%.40s' is not ms since the epoch",
                          text);
    atomic_store(&g_fixed_ms, (int64_t)ms);
    return 0;
}

void serve_clock_set_ms(int64_t ms)
{
    atomic_store(&g_fixed_ms, ms);
}
#endif
