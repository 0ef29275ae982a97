#include "supervisor/worker_proc.h"

#include "base/clock.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WORKER_NAME "ck-basal-worker"

int worker_locate(char *path, size_t cap, char *why, size_t why_cap)
{
#ifdef BASAL_TEST_HOOKS
    const char *override = getenv("BASAL_TEST_WORKER");
    if (override != NULL && *override != '\0') {
        if ((size_t)snprintf(path, cap, "%s", override) >= cap) {
            snprintf(why, why_cap, "BASAL_TEST_WORKER is too long");
            return -1;
        }
        return 0;
    }
#endif
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(why, why_cap, "cannot find own executable: %s", strerror(errno));
        return -1;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash == NULL) {
        snprintf(why, why_cap, "own executable has no directory: %s", self);
        return -1;
    }
    *slash = '\0';
    if ((size_t)snprintf(path, cap, "%s/%s", self, WORKER_NAME) >= cap) {
        snprintf(why, why_cap, "worker path too long");
        return -1;
    }
    if (access(path, X_OK) != 0) {
        snprintf(why, why_cap, "worker %s is not executable: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

const char *worker_policy_arg(enum landlock_policy policy)
{
    return policy == LANDLOCK_POLICY_OPTIONAL ? "--landlock=optional" : "--landlock=required";
}

int worker_spawn(const char *path, const char *const extra_args[],
                 const struct worker_limits *limits, struct worker_proc *out)
{
    /* execve and CreateProcess take char *const[] but never write through it. */
    union {
        const char *in;
        char *out;
    } arg;
    char *argv[16];
    size_t argc = 0;
    arg.in = path;
    argv[argc++] = arg.out;
    for (size_t i = 0; extra_args != NULL && extra_args[i] != NULL && argc < 15; i++) {
        arg.in = extra_args[i];
        argv[argc++] = arg.out;
    }
    argv[argc] = NULL;
    return worker_launch(path, argv, limits, out);
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static int reap(struct worker_proc *proc)
{
    int status = 0;
    if (proc->pid > 0) {
        while (waitpid(proc->pid, &status, 0) < 0 && errno == EINTR) {
        }
        proc->pid = -1;
    }
    close_fd(&proc->to_worker);
    close_fd(&proc->from_worker);
    close_fd(&proc->worker_log);
    return status;
}

int worker_kill(struct worker_proc *proc)
{
    if (proc->pid > 0)
        kill(proc->pid, SIGKILL);
    return reap(proc);
}

int worker_kill_keep_log(struct worker_proc *proc, char *log, size_t cap)
{
    if (proc->pid > 0)
        kill(proc->pid, SIGKILL);
    int status = 0;
    if (proc->pid > 0) {
        while (waitpid(proc->pid, &status, 0) < 0 && errno == EINTR) {
        }
        proc->pid = -1;
    }
    /* The worker is gone, so its stderr ends: everything it wrote is in the pipe. */
    (void)worker_read_log(proc, log, cap);
    (void)reap(proc);
    return status;
}

int reap_within(pid_t pid, int timeout_ms, bool *killed)
{
    *killed = false;
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd >= 0) {
        long long deadline = monotonic_ms() + timeout_ms;
        for (;;) {
            long long left = deadline - monotonic_ms();
            if (left <= 0)
                break;
            struct pollfd p = {pidfd, POLLIN, 0};
            int rc = poll(&p, 1, (int)left);
            if (rc > 0 || (rc < 0 && errno != EINTR))
                break;
        }
        close(pidfd);
    }
    int status = 0;
    pid_t done;
    while ((done = waitpid(pid, &status, WNOHANG)) < 0 && errno == EINTR) {
    }
    if (done != pid) {
        kill(pid, SIGKILL);
        *killed = true;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    return status;
}

int worker_finish(struct worker_proc *proc, int timeout_ms)
{
    close_fd(&proc->to_worker);
    if (proc->pid <= 0)
        return reap(proc);
    bool killed;
    int status = reap_within(proc->pid, timeout_ms, &killed);
    proc->pid = -1;
    (void)reap(proc);
    return status;
}

size_t worker_read_log(struct worker_proc *proc, char *buf, size_t cap)
{
    size_t used = 0;
    if (cap == 0)
        return 0;
    while (proc->worker_log >= 0 && used + 1 < cap) {
        struct pollfd p = {proc->worker_log, POLLIN, 0};
        if (poll(&p, 1, 0) <= 0)
            break;
        ssize_t n = read(proc->worker_log, buf + used, cap - 1 - used);
        if (n <= 0)
            break;
        used += (size_t)n;
    }
    buf[used] = '\0';
    return used;
}
