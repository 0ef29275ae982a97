#include "core/test_hooks.h"

#ifdef BASAL_TEST_HOOKS

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static const char *const BOUNDARY_NAMES[] = {
    [TEST_BOUNDARY_BEFORE_JOURNAL_COMMIT] = "before_journal_commit",
    [TEST_BOUNDARY_AFTER_JOURNAL_COMMIT] = "after_journal_commit",
    [TEST_BOUNDARY_AFTER_DISPATCH] = "after_dispatch",
    [TEST_BOUNDARY_AFTER_OUTCOME_COMMIT] = "after_outcome_commit",
    [TEST_BOUNDARY_AFTER_DELIVERY] = "after_delivery",
};

void test_hook_boundary(enum test_boundary boundary, uint32_t position)
{
    const char *at = getenv("BASAL_TEST_KILL_AT");
    if (at == NULL)
        return;
    const char *name = BOUNDARY_NAMES[boundary];
    size_t n = strlen(name);
    if (strncmp(at, name, n) != 0 || at[n] != ':')
        return;
    char *end;
    unsigned long want = strtoul(at + n + 1, &end, 10);
    if (*end == '\0' && want == position)
        raise(SIGKILL);
}

#else
/* ISO C wants a translation unit to declare something. */
typedef int test_hooks_release_build;
#endif
