/* macOS's worker_launch (supervisor/worker_launch.h states the contract; sandbox.md "macOS", the disclaimed launch): posix_spawn with the worker disclaimed from the parent's privacy (TCC) grants, so flow
 * code can never use a Files & Folders or similar grant the module holds. Every launch
 * sets the disclaim attribute and fails (no worker) if the system refuses it; before
 * that, at startup, the parent proves it can (below) and exits otherwise, so no
 * worker is ever launched plainly.
 *
 * What it gives the worker: exactly fds 0-2, fresh pipes (POSIX_SPAWN_CLOEXEC_DEFAULT
 * closes every descriptor no file action names), an empty environment, the signal mask
 * cleared and SIGPIPE default. Not, unlike Linux: resource limits (posix_spawn has no
 * attribute for them; what RLIMIT_NOFILE and RLIMIT_FSIZE bound on Linux, Seatbelt
 * denies, RLIMIT_AS macOS does not enforce, and the startup check sets the parent's own
 * RLIMIT_CORE to 0, which the worker inherits; docs/platforms.md). Nor the end on the
 * parent's death: macOS has no parent-death signal, so the worker watches its parent
 * itself (worker/parent_watch_macos.c).
 * Written and compile-checked against declared signatures (tests/macos/macos_decls.h,
 * make macos-check), not run here: no macOS machine is reachable. */
#include "supervisor/worker_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* [spawn_private.h, macOS 10.14] Not in the SDK's headers: declared as Apple's
 * libsyscall declares it, weakly imported, so a system without it leaves the address
 * NULL (which the startup check refuses) instead of failing to load. */
extern int responsibility_spawnattrs_setdisclaim(posix_spawnattr_t *attrs, bool disclaim)
    __attribute__((weak_import));

/* Sets the disclaim attribute; 0, or an errno value (ENOSYS: the system has no such
 * call). */
static int set_disclaim(posix_spawnattr_t *attrs)
{
    if (responsibility_spawnattrs_setdisclaim == NULL)
        return ENOSYS;
    return responsibility_spawnattrs_setdisclaim(attrs, true);
}

/* The startup check: it runs before main in every program that can launch a worker
 * (ck-basal and the tests that link the supervisor), so none reaches a launch without
 * it; there is no earlier point at which a parent could start one. */
__attribute__((constructor)) static void disclaimed_launch_check_or_exit(void)
{
    posix_spawnattr_t attrs;
    int rc = posix_spawnattr_init(&attrs);
    if (rc == 0) {
        rc = set_disclaim(&attrs);
        (void)posix_spawnattr_destroy(&attrs);
    }
    if (rc != 0) {
        fprintf(stderr, "ck-basal: cannot launch workers disclaimed from its privacy grants "
                        "(responsibility_spawnattrs_setdisclaim: %s); refusing to start rather "
                        "than launch a worker plainly\n",
                strerror(rc));
        exit(1);
    }
    /* No core file of a worker (or of the parent): the worker inherits this limit. */
    struct rlimit zero = {0, 0};
    if (setrlimit(RLIMIT_CORE, &zero) != 0) {
        fprintf(stderr, "ck-basal: cannot set RLIMIT_CORE to 0 (%s); refusing to start\n",
                strerror(errno));
        exit(1);
    }
}

enum worker_os worker_launch_host_os(void)
{
    return WORKER_OS_MACOS;
}

static void close_pair(int fds[2])
{
    if (fds[0] >= 0)
        (void)close(fds[0]);
    if (fds[1] >= 0)
        (void)close(fds[1]);
}

/* macOS has no pipe2: the close-on-exec flag is set at once, before any launch. */
static int pipe_cloexec(int fds[2])
{
    if (pipe(fds) != 0)
        return -1;
    if (fcntl(fds[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(fds[1], F_SETFD, FD_CLOEXEC) != 0) {
        int saved = errno;
        close_pair(fds);
        fds[0] = fds[1] = -1;
        errno = saved;
        return -1;
    }
    return 0;
}

/* The attributes and file actions of one launch; 0 or an errno value. */
static int prepare(posix_spawnattr_t *attrs, posix_spawn_file_actions_t *actions, int in_fd,
                   int out_fd, int err_fd)
{
    sigset_t none, pipe_default;
    (void)sigemptyset(&none);
    (void)sigemptyset(&pipe_default);
    (void)sigaddset(&pipe_default, SIGPIPE);
    int rc = set_disclaim(attrs);
    if (rc == 0)
        rc = posix_spawnattr_setflags(attrs, POSIX_SPAWN_CLOEXEC_DEFAULT | POSIX_SPAWN_SETSIGMASK |
                                                 POSIX_SPAWN_SETSIGDEF);
    if (rc == 0)
        rc = posix_spawnattr_setsigmask(attrs, &none);
    if (rc == 0)
        rc = posix_spawnattr_setsigdefault(attrs, &pipe_default);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(actions, in_fd, 0);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(actions, out_fd, 1);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(actions, err_fd, 2);
    return rc;
}

/* The worker's whole environment: nothing. */
static char *const WORKER_ENV[] = {NULL};

int worker_launch(const char *path, char *const argv[], const struct worker_limits *limits,
                  struct worker_proc *out)
{
    (void)limits; /* see the top of this file */
    int in[2] = {-1, -1}, outp[2] = {-1, -1}, err[2] = {-1, -1};
    if (pipe_cloexec(in) != 0 || pipe_cloexec(outp) != 0 || pipe_cloexec(err) != 0) {
        int saved = errno;
        close_pair(in);
        close_pair(outp);
        close_pair(err);
        errno = saved;
        return -1;
    }
    posix_spawnattr_t attrs;
    posix_spawn_file_actions_t actions;
    int rc = posix_spawnattr_init(&attrs);
    if (rc == 0) {
        rc = posix_spawn_file_actions_init(&actions);
        if (rc == 0) {
            rc = prepare(&attrs, &actions, in[0], outp[1], err[1]);
            pid_t pid = -1;
            /* Only with every attribute set, the disclaim first among them. */
            if (rc == 0)
                rc = posix_spawn(&pid, path, &actions, &attrs, argv, WORKER_ENV);
            if (rc == 0)
                out->pid = pid;
            (void)posix_spawn_file_actions_destroy(&actions);
        }
        (void)posix_spawnattr_destroy(&attrs);
    }
    (void)close(in[0]);
    (void)close(outp[1]);
    (void)close(err[1]);
    if (rc != 0) {
        (void)close(in[1]);
        (void)close(outp[0]);
        (void)close(err[0]);
        errno = rc;
        return -1;
    }
    /* The parent must never die of SIGPIPE because a worker did. */
    (void)signal(SIGPIPE, SIG_IGN);
    out->to_worker = in[1];
    out->from_worker = outp[0];
    out->worker_log = err[0];
    return 0;
}
