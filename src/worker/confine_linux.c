#include "worker/confine.h"

#include "worker/cpu_timer.h"
#include "worker/descriptors.h"
#include "worker/landlock.h"
#include "worker/refuse.h"
#include "worker/seccomp_policy.h"
#include "worker/startup_checks.h"

#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

void confine_preload(void)
{
    /* glibc reads /etc/localtime on the first localtime_r; do it while files can
     * still be opened so Date keeps its time zone inside the sandbox. */
    tzset();
    /* The first allocation sets up the main arena (and may read tunables). */
    free(malloc(1));
}

static void set_no_new_privs_and_non_dumpable(void)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
        refuse_unconfined("no-new-privs");
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 || prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
        refuse_unconfined("dumpable");
}

static void install_seccomp(void)
{
    scmp_filter_ctx ctx = seccomp_policy_build(SCMP_ARCH_NATIVE, getpid());
    if (ctx == NULL)
        refuse_unconfined("seccomp");
    int rc = seccomp_load(ctx);
    seccomp_release(ctx);
    if (rc != 0)
        refuse_unconfined("seccomp");
}

struct confinement confine(const struct confine_options *options)
{
    struct confinement state = {
        .os = "linux", .seccomp = false, .landlock_policy = options->landlock_policy};
    confine_preload();
    startup_checks_or_refuse();
    close_descriptors_or_refuse();
    set_no_new_privs_and_non_dumpable();
    struct landlock_outcome landlock = landlock_apply_or_refuse(options->landlock_policy);
    state.landlock_runtime_abi = landlock.runtime_abi;
    state.landlock_applied_abi = landlock.applied_abi;
    close_descriptors_or_refuse();
    /* Last before the filter, which refuses timer_create and timer_settime. */
    if (options->cpu_timer)
        cpu_timer_arm_or_refuse();
#ifdef BASAL_TEST_HOOKS
    if (options->test_skip_seccomp)
        return state;
#endif
    install_seccomp();
    state.seccomp = true;
    return state;
}
