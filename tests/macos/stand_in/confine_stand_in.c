/* confine() for make macos-logic: the two steps of confine_macos.c whose logic runs
 * here over the stand-in (stand_in.c), in its order: the parent watch, then in engine
 * mode the CPU timer. Descriptors and Seatbelt are left out (libproc and sandbox_init
 * have no stand-in): the CI job runs the real confine() on macOS. */
#include "worker/confine.h"
#include "worker/cpu_timer.h"
#include "worker/parent_watch.h"

#include <string.h>

void confine_preload(void)
{
}

struct confinement confine(const struct confine_options *options)
{
    struct confinement state;
    memset(&state, 0, sizeof state);
    state.os = "macos";
    parent_watch_or_refuse();
    if (options->cpu_timer)
        cpu_timer_arm_or_refuse();
    return state;
}
