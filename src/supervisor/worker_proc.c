#include "supervisor/worker_proc.h"

#include "base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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

static void close_pair(int fds[2])
{
    if (fds[0] >= 0)
        close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
}

/* The worker's whole environment: nothing of the parent's, one allocator setting.
 * The engines' own objects live on each engine's heap (src/worker/engine_heap.h),
 * which takes 64 KiB chunks and blocks over 1 KiB from malloc. Blocks under 1 MiB come
 * from the heap, not from mmap, and the heap keeps up to 2 MiB free at its top: an
 * Activate with a long prefix (1000 recorded calls) otherwise mapped, unmapped and
 * faulted its large blocks in again each time, about 0.7 ms at the 95th percentile of
 * such replays. Other C libraries ignore the variable. A constant: nothing of a
 * request reaches it. */
static char WORKER_ENV_TUNABLES[] = "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1048576:"
                                   "glibc.malloc.trim_threshold=2097152";
static char *const WORKER_ENV[] = {WORKER_ENV_TUNABLES, NULL};

/* Runs in the child between fork and exec: only async-signal-safe calls. */
static void exec_worker_child(const char *path, char *const argv[], int in_fd, int out_fd,
                              int err_fd, const struct worker_limits *limits, pid_t parent)
{
    /* A worker must not outlive the parent: busy in a script it would run on to the
     * end of its CPU budget, reading nothing. SIGKILL when the parent dies; the
     * setting survives the exec of the worker (not set-user-ID, no file
     * capabilities). The kernel sends it when the THREAD that forked exits, not the
     * process: a parent with threads (ck-basal serve) forks workers only from threads
     * that live as long as they do. A parent that died before
     * the prctl shows as another parent: then nothing runs. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(127);
    if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
        _exit(127);
    /* Nothing of the parent's (store, sockets) may reach the worker. */
    if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0) {
        for (int fd = 3; fd < 4096; fd++)
            close(fd);
    }
    struct rlimit as = {limits->address_space_bytes, limits->address_space_bytes};
    struct rlimit zero = {0, 0};
    struct rlimit files = {limits->open_files, limits->open_files};
    if (setrlimit(RLIMIT_AS, &as) != 0 || setrlimit(RLIMIT_CORE, &zero) != 0 ||
        setrlimit(RLIMIT_FSIZE, &zero) != 0 || setrlimit(RLIMIT_NOFILE, &files) != 0)
        _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    execve(path, argv, WORKER_ENV);
    _exit(127);
}

int worker_spawn(const char *path, const char *const extra_args[],
                 const struct worker_limits *limits, struct worker_proc *out)
{
    int in[2] = {-1, -1}, outp[2] = {-1, -1}, err[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(outp, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        int saved = errno;
        close_pair(in);
        close_pair(outp);
        close_pair(err);
        errno = saved;
        return -1;
    }
    /* execve takes char *const[] but never writes through it. */
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

    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int saved = errno;
        close_pair(in);
        close_pair(outp);
        close_pair(err);
        errno = saved;
        return -1;
    }
    if (pid == 0)
        exec_worker_child(path, argv, in[0], outp[1], err[1], limits, parent);
    close(in[0]);
    close(outp[1]);
    close(err[1]);
    /* The parent must never die of SIGPIPE because a worker did. */
    signal(SIGPIPE, SIG_IGN);
    out->pid = pid;
    out->to_worker = in[1];
    out->from_worker = outp[0];
    out->worker_log = err[0];
    return 0;
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
