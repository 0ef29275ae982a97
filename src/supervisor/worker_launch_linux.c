#include "supervisor/worker_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

enum worker_os worker_launch_host_os(void)
{
    return WORKER_OS_LINUX;
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

int worker_launch(const char *path, char *const argv[], const struct worker_limits *limits,
                  struct worker_proc *out)
{
    int in[2] = {-1, -1}, outp[2] = {-1, -1}, err[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(outp, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
        goto fail;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        goto fail;
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
fail:; /* no worker was started: the pipes made so far are closed, errno kept */
    int saved = errno;
    close_pair(in);
    close_pair(outp);
    close_pair(err);
    errno = saved;
    return -1;
}
