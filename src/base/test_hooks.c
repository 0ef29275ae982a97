#include "base/test_hooks.h"

#ifdef BASAL_TEST_HOOKS

#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const char *const BOUNDARY_NAMES[] = {
    [TEST_BOUNDARY_BEFORE_JOURNAL_COMMIT] = "before_journal_commit",
    [TEST_BOUNDARY_AFTER_JOURNAL_COMMIT] = "after_journal_commit",
    [TEST_BOUNDARY_AFTER_DISPATCH] = "after_dispatch",
    [TEST_BOUNDARY_AFTER_OUTCOME_COMMIT] = "after_outcome_commit",
    [TEST_BOUNDARY_AFTER_DELIVERY] = "after_delivery",
    [TEST_BOUNDARY_AFTER_SCHEDULE_ADMIT] = "after_schedule_admit",
    [TEST_BOUNDARY_EVENT_ADMITTED] = "event_admitted",
};

/* True if the variable var names this boundary and position. */
static bool asked(const char *var, enum test_boundary boundary, uint32_t position)
{
    const char *at = getenv(var);
    if (at == NULL)
        return false;
    const char *name = BOUNDARY_NAMES[boundary];
    size_t n = strlen(name);
    if (strncmp(at, name, n) != 0 || at[n] != ':')
        return false;
    char *end;
    unsigned long want = strtoul(at + n + 1, &end, 10);
    return *end == '\0' && want == position;
}

void test_hook_boundary(enum test_boundary boundary, uint32_t position)
{
    if (asked("BASAL_TEST_KILL_AT", boundary, position))
        raise(SIGKILL);
    if (asked("BASAL_TEST_STOP_AT", boundary, position))
        raise(SIGSTOP);
}

#else
/* ISO C wants a translation unit to declare something. */
typedef int test_hooks_release_build;
#endif
