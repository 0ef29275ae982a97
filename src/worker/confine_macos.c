/* The macOS confinement (sandbox.md, "macOS"), behind confine.h, run before the first
 * read of stdin:
 *   1 close every descriptor above stdio, and prove none is left (libproc lists them)
 *   2 watch the parent: the worker is killed when it exits (parent_watch_macos.c)
 *   3 engine mode: arm the CPU timer (cpu_timer_macos.c)
 *   4 Seatbelt: sandbox_init with worker.sb, embedded at build time (mk/macos.mk)
 *   5 prove the profile is in force: opening /dev/null must now fail
 * Steps 2 and 3 make their kqueues and threads here, before the profile.
 * Each step refuses (exit 70, "refusing to run unconfined: <token>"):
 *   close-descriptors    the open descriptors could not be listed or closed
 *   descriptor-survived  a descriptor above stdio is open after closing
 *   parent-gone          the parent has already exited
 *   parent-watch         the parent's exit could not be watched
 *   cpu-timer            the CPU timer could not be armed
 *   seatbelt             sandbox_init refused the profile
 *   seatbelt-not-in-force  a file could still be opened after sandbox_init
 * Written and compile-checked against declared signatures (tests/macos/macos_decls.h,
 * make macos-check), not run here: no macOS machine is reachable (docs/platforms.md). */
#include "worker/confine.h"

#include "worker/cpu_timer.h"
#include "worker/parent_watch.h"
#include "worker/refuse.h"
#include "worker_sb.h"

#include <errno.h>
#include <fcntl.h>
#include <libproc.h>
#include <sandbox.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void confine_preload(void)
{
    /* The time zone file and the allocator's first zone, while files can be opened. */
    tzset();
    free(malloc(1));
}

/* Room for every descriptor the parent could leave: a listing that fills it may have
 * been cut short, so the loop lists again after closing. */
#define LISTED_FDS 256

/* Lists the open descriptors; returns how many are above stdio and closes each of
 * them when close_them is set. Refuses if the list cannot be had. */
static int descriptors_above_stdio(int close_them)
{
    struct proc_fdinfo fds[LISTED_FDS];
    int bytes = proc_pidinfo(getpid(), PROC_PIDLISTFDS, 0, fds, (int)sizeof fds);
    if (bytes <= 0)
        refuse_unconfined("close-descriptors");
    int count = bytes / (int)sizeof fds[0];
    int above = 0;
    for (int i = 0; i < count; i++) {
        if (fds[i].proc_fd <= 2)
            continue;
        above++;
        if (close_them && close(fds[i].proc_fd) != 0 && errno != EBADF)
            refuse_unconfined("close-descriptors");
    }
    return above;
}

static void close_descriptors_or_refuse(void)
{
    /* Each pass closes what it lists; one listing of LISTED_FDS entries may not have
     * shown them all, so pass until a listing shows none (bounded: every pass but the
     * last closes at least one). */
    for (int pass = 0; pass < 64; pass++) {
        if (descriptors_above_stdio(1) == 0)
            return;
    }
    if (descriptors_above_stdio(0) != 0)
        refuse_unconfined("descriptor-survived");
}

static void apply_seatbelt_or_refuse(void)
{
    char *error = NULL;
    /* Deprecated since macOS 10.8, yet still the one public call that applies a
     * profile's text; Chromium's sandbox uses it the same way. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
    int rc = sandbox_init(WORKER_SB_PROFILE, 0, &error);
#pragma clang diagnostic pop
    if (rc != 0) {
        if (error != NULL) {
            stderr_printf("ck-basal-worker: sandbox_init: %s\n", error);
            sandbox_free_error(error);
        }
        refuse_unconfined("seatbelt");
    }
    /* The profile denies every file open: one that succeeds means it is not in force. */
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)close(fd);
        refuse_unconfined("seatbelt-not-in-force");
    }
}

struct confinement confine(const struct confine_options *options)
{
    struct confinement state = {.os = "macos", .landlock_policy = options->landlock_policy};
    confine_preload();
    close_descriptors_or_refuse();
    parent_watch_or_refuse();
    if (options->cpu_timer)
        cpu_timer_arm_or_refuse();
    apply_seatbelt_or_refuse();
    state.seatbelt = true;
    return state;
}
