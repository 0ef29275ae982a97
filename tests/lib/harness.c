/* The shared test library; see harness.h for the contract. */
#include "harness.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

char *const HARNESS_EMPTY_ENV[] = {NULL};

/* ---- reporting ------------------------------------------------------------------ */

static int checks_run;
static int checks_failed;

/* Detail text goes on one line: newlines and control bytes are escaped, so a check
 * is always exactly one line for tests/run.sh to count. */
static void print_one_line(const char *text)
{
    for (const unsigned char *c = (const unsigned char *)text; *c != '\0'; c++) {
        if (*c == '\n')
            fputs("\\n", stdout);
        else if (*c == '\\')
            fputs("\\\\", stdout);
        else if (*c < 0x20 || *c == 0x7f)
            printf("\\x%02x", *c);
        else
            putchar(*c);
    }
}

__attribute__((format(printf, 3, 0))) static void report(bool cond, const char *name,
                                                      const char *fmt, va_list ap)
{
    checks_run++;
    if (cond) {
        fputs("ok - ", stdout);
        print_one_line(name);
    } else {
        checks_failed++;
        char detail[2048];
        (void)vsnprintf(detail, sizeof detail, fmt, ap);
        fputs("not ok - ", stdout);
        print_one_line(name);
        fputs(": ", stdout);
        print_one_line(detail[0] != '\0' ? detail : "failed");
    }
    putchar('\n');
    fflush(stdout);
}

bool check(bool cond, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(cond, name, fmt, ap);
    va_end(ap);
    return cond;
}

bool check_int_eq(long long got, long long want, const char *name)
{
    return check(got == want, name, "got %lld, want %lld", got, want);
}

bool check_str_eq(const char *got, const char *want, const char *name)
{
    bool same = got != NULL && want != NULL && strcmp(got, want) == 0;
    return check(same, name, "got \"%s\", want \"%s\"", got != NULL ? got : "(null)",
                 want != NULL ? want : "(null)");
}

void fail(const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(false, name, fmt, ap);
    va_end(ap);
}

void harness_note(const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fputs("# ", stdout);
    print_one_line(text);
    putchar('\n');
    fflush(stdout);
}

int harness_failed_count(void)
{
    return checks_failed;
}

int harness_check_count(void)
{
    return checks_run;
}

int harness_finish(void)
{
    if (checks_run == 0) {
        fail("harness: at least one check ran", "the program made no check");
        return 1;
    }
    return checks_failed == 0 ? 0 : 1;
}

/* ---- build paths --------------------------------------------------------------- */

static char build_dir[PATH_MAX];
static char variant[64];

static void find_build_dir(void)
{
    if (build_dir[0] != '\0')
        return;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fail("harness: find the build directory", "readlink /proc/self/exe: %s",
             strerror(errno));
        exit(1);
    }
    exe[n] = '\0';
    /* exe is <build>/<variant>/<tests|tools>/<name>: cut three components. */
    char *cut[3];
    for (int i = 0; i < 3; i++) {
        cut[i] = strrchr(exe, '/');
        if (cut[i] == NULL || cut[i] == exe) {
            fail("harness: find the build directory", "%s is not under build/<variant>/",
                 exe);
            exit(1);
        }
        *cut[i] = '\0';
    }
    const char *last = strrchr(exe, '/');
    if (last == NULL || strcmp(last, "/build") != 0) {
        fail("harness: find the build directory",
             "the running binary is not under a build/<variant>/<dir>/ tree (%s)", exe);
        exit(1);
    }
    (void)snprintf(build_dir, sizeof build_dir, "%s", exe);
    (void)snprintf(variant, sizeof variant, "%s", cut[2] + 1);
}

const char *harness_build_dir(void)
{
    find_build_dir();
    return build_dir;
}

const char *harness_variant(void)
{
    find_build_dir();
    return variant;
}

/* Paths are kept in a table (and handed out again for the same rel), so they stay
 * reachable until exit and a leak checker does not report them. */
#define MAX_PATHS 64
static struct {
    char *rel;
    char *path;
} paths[MAX_PATHS];

const char *harness_path(const char *rel)
{
    find_build_dir();
    int i = 0;
    for (; i < MAX_PATHS && paths[i].rel != NULL; i++)
        if (strcmp(paths[i].rel, rel) == 0)
            return paths[i].path;
    if (i == MAX_PATHS) {
        fail("harness: build paths", "more than %d distinct paths asked for", MAX_PATHS);
        exit(1);
    }
    size_t len = strlen(build_dir) + 1 + strlen(rel) + 1;
    char *path = malloc(len);
    char *rel_copy = strdup(rel);
    if (path == NULL || rel_copy == NULL)
        abort();
    (void)snprintf(path, len, "%s/%s", build_dir, rel);
    paths[i].rel = rel_copy;
    paths[i].path = path;
    return path;
}

static const char *variant_path(const char *rel)
{
    char joined[PATH_MAX];
    (void)snprintf(joined, sizeof joined, "%s/%s", harness_variant(), rel);
    return harness_path(joined);
}

const char *harness_test_worker(void)
{
    return variant_path("bin/ck-basal-worker");
}

const char *harness_release_worker(void)
{
    return harness_path("bin/ck-basal-worker");
}

const char *harness_test_parent(void)
{
    return variant_path("bin/ck-basal");
}

const char *harness_release_parent(void)
{
    return harness_path("bin/ck-basal");
}

const char *harness_launcher(void)
{
    return harness_path("test/tools/launch");
}

bool require_binary(const char *path, const char *name)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || access(path, X_OK) != 0) {
        fail(name, "%s missing or not executable (run make test-build)", path);
        return false;
    }
    return true;
}

bool require_parent_and_module(const char *parent_name, const char *module_name)
{
    return require_binary(harness_test_parent(), parent_name) &&
           require_binary(harness_path("test/tools/test_module"), module_name);
}

/* ---- time ----------------------------------------------------------------------- */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int remaining_ms(int64_t deadline)
{
    int64_t left = deadline - now_ms();
    if (left < 0)
        return 0;
    return left > INT_MAX ? INT_MAX : (int)left;
}

/* ---- child processes ----------------------------------------------------------- */

static void ignore_sigpipe(void)
{
    static bool done;
    if (!done) {
        signal(SIGPIPE, SIG_IGN);
        done = true;
    }
}

static int pidfd_open_pid(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0U);
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

/* In the child, between fork and exec: async-signal-safe calls only. */
static void child_write(const char *s)
{
    ssize_t r = write(2, s, strlen(s));
    (void)r;
}

__attribute__((noreturn)) static void child_exec(char *const argv[], const int src[3],
                                                 char *const envp[])
{
    /* Move the sources out of 0..2 first so one dup2 cannot clobber another. */
    int high[3];
    for (int i = 0; i < 3; i++) {
        high[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 10);
        if (high[i] < 0) {
            child_write("harness child: cannot duplicate a stdio descriptor\n");
            _exit(127);
        }
    }
    for (int i = 0; i < 3; i++) {
        if (dup2(high[i], i) != i) {
            child_write("harness child: dup2 failed\n");
            _exit(127);
        }
    }
    /* Nothing of the test's reaches the child except 0, 1 and 2. */
    if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
        for (int fd = 3; fd < 4096; fd++)
            (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    (void)sigaction(SIGPIPE, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, NULL);

    extern char **environ;
    if (argv[0] == NULL)
        _exit(127);
    execve(argv[0], argv, envp != NULL ? envp : environ);
    child_write("harness child: exec failed: ");
    child_write(argv[0]);
    child_write(": ");
    child_write(strerror(errno));
    child_write("\n");
    _exit(127);
}

int proc_start(struct proc *p, const char *const argv[], const struct proc_opts *opts)
{
    ignore_sigpipe();
    memset(p, 0, sizeof *p);
    p->pid = -1;
    p->pidfd = p->in_fd = p->out_fd = p->err_fd = -1;

    if (argv == NULL || argv[0] == NULL) {
        errno = EINVAL;
        return -1;
    }
    int want[3] = {PROC_PIPE, PROC_PIPE, PROC_PIPE};
    if (opts != NULL && opts->use_fds) {
        want[0] = opts->stdin_fd;
        want[1] = opts->stdout_fd;
        want[2] = opts->stderr_fd;
    }
    int child_end[3] = {-1, -1, -1}; /* what the child gets */
    int our_end[3] = {-1, -1, -1};   /* what the test keeps */
    for (int i = 0; i < 3; i++) {
        if (want[i] != PROC_PIPE) {
            child_end[i] = want[i];
            continue;
        }
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0)
            goto fail;
        child_end[i] = i == 0 ? fds[0] : fds[1];
        our_end[i] = i == 0 ? fds[1] : fds[0];
    }

    /* execve takes char *const[]; copy the pointers (not the strings) so the
     * caller's const array is never cast. Done before fork: the child only execs. */
    size_t argc = 0;
    while (argv[argc] != NULL)
        argc++;
    char **exec_argv = calloc(argc + 1, sizeof *exec_argv);
    if (exec_argv == NULL)
        goto fail;
    memcpy(exec_argv, argv, argc * sizeof *exec_argv);

    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0)
        child_exec(exec_argv, child_end, opts != NULL ? opts->envp : NULL);
    free(exec_argv);
    if (pid < 0)
        goto fail;

    for (int i = 0; i < 3; i++)
        if (want[i] == PROC_PIPE)
            close(child_end[i]);
    p->pid = pid;
    p->pidfd = pidfd_open_pid(pid);
    if (p->pidfd < 0) {
        int saved = errno;
        kill(pid, SIGKILL);
        (void)waitpid(pid, NULL, 0);
        for (int i = 0; i < 3; i++)
            if (our_end[i] >= 0)
                close(our_end[i]);
        errno = saved;
        return -1;
    }
    p->in_fd = our_end[0];
    p->out_fd = our_end[1];
    p->err_fd = our_end[2];
    return 0;

fail: {
    int saved = errno;
    for (int i = 0; i < 3; i++) {
        if (want[i] == PROC_PIPE) {
            if (child_end[i] >= 0)
                close(child_end[i]);
            if (our_end[i] >= 0)
                close(our_end[i]);
        }
    }
    errno = saved;
    return -1;
}
}

struct growbuf {
    char *data;
    size_t len, cap;
};

static void growbuf_add(struct growbuf *b, const char *src, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap == 0 ? 4096 : b->cap;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *data = realloc(b->data, cap);
        if (data == NULL)
            abort();
        b->data = data;
        b->cap = cap;
    }
    memcpy(b->data + b->len, src, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static char *growbuf_take(struct growbuf *b, size_t *len)
{
    if (b->data == NULL)
        growbuf_add(b, "", 0);
    *len = b->len;
    return b->data;
}

/* Reads what is available; returns false at EOF or a hard error (fd then closed). */
static bool drain_some(int *fd, struct growbuf *into)
{
    char buf[16384];
    for (;;) {
        ssize_t n = read(*fd, buf, sizeof buf);
        if (n > 0) {
            growbuf_add(into, buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        close_fd(fd);
        return false;
    }
}

static void set_nonblocking(int fd)
{
    if (fd >= 0) {
        int flags = fcntl(fd, F_GETFL);
        if (flags >= 0)
            (void)fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    }
}

static void reap(struct proc *p, struct proc_result *r)
{
    if (p->reaped || p->pid <= 0)
        return;
    int status = 0;
    pid_t got;
    do {
        got = waitpid(p->pid, &status, 0);
    } while (got < 0 && errno == EINTR);
    p->reaped = true;
    if (got != p->pid)
        return;
    r->status = status;
    if (WIFEXITED(status)) {
        r->exited = true;
        r->exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        r->signaled = true;
        r->signal = WTERMSIG(status);
    }
}

struct proc_result proc_finish(struct proc *p, const void *input, size_t input_len,
                               int timeout_ms)
{
    struct proc_result r;
    memset(&r, 0, sizeof r);
    r.started = true;
    struct growbuf out = {NULL, 0, 0}, err = {NULL, 0, 0};
    const char *pending = input;
    size_t left = input != NULL ? input_len : 0;
    int64_t deadline = now_ms() + timeout_ms;
    bool exited = false;

    set_nonblocking(p->in_fd);
    set_nonblocking(p->out_fd);
    set_nonblocking(p->err_fd);
    if (left == 0)
        close_fd(&p->in_fd);

    while (!exited) {
        struct pollfd fds[4];
        int n = 0;
        int idx_in = -1, idx_out = -1, idx_err = -1;
        fds[n].fd = p->pidfd;
        fds[n].events = POLLIN;
        fds[n++].revents = 0;
        if (p->in_fd >= 0) {
            idx_in = n;
            fds[n].fd = p->in_fd;
            fds[n].events = POLLOUT;
            fds[n++].revents = 0;
        }
        if (p->out_fd >= 0) {
            idx_out = n;
            fds[n].fd = p->out_fd;
            fds[n].events = POLLIN;
            fds[n++].revents = 0;
        }
        if (p->err_fd >= 0) {
            idx_err = n;
            fds[n].fd = p->err_fd;
            fds[n].events = POLLIN;
            fds[n++].revents = 0;
        }
        int wait = remaining_ms(deadline);
        if (wait == 0) {
            r.timed_out = true;
            break;
        }
        int ready = poll(fds, (nfds_t)n, wait);
        if (ready < 0) {
            if (errno == EINTR)
                continue;
            r.timed_out = true; /* cannot wait: treat as a failure to finish */
            break;
        }
        if (ready == 0)
            continue; /* the deadline check above ends the loop */
        if (idx_in >= 0 && fds[idx_in].revents != 0) {
            ssize_t w = write(p->in_fd, pending, left);
            if (w > 0) {
                pending += w;
                left -= (size_t)w;
            }
            if ((w < 0 && errno != EAGAIN && errno != EINTR) || left == 0)
                close_fd(&p->in_fd); /* done, or the child closed its stdin */
        }
        if (idx_out >= 0 && fds[idx_out].revents != 0)
            (void)drain_some(&p->out_fd, &out);
        if (idx_err >= 0 && fds[idx_err].revents != 0)
            (void)drain_some(&p->err_fd, &err);
        if (fds[0].revents != 0)
            exited = true;
    }

    if (r.timed_out) {
        kill(p->pid, SIGKILL);
    }
    /* The child has exited (or was just killed): everything it wrote is already in
     * the pipes, so a non-blocking drain collects it all. Descendants that still hold
     * a pipe open cannot make the test wait. */
    reap(p, &r);
    if (p->out_fd >= 0)
        (void)drain_some(&p->out_fd, &out);
    if (p->err_fd >= 0)
        (void)drain_some(&p->err_fd, &err);
    close_fd(&p->in_fd);
    close_fd(&p->out_fd);
    close_fd(&p->err_fd);
    close_fd(&p->pidfd);
    r.out = growbuf_take(&out, &r.out_len);
    r.err = growbuf_take(&err, &r.err_len);
    return r;
}

struct proc_result proc_run_opts(const char *const argv[], const struct proc_opts *opts,
                                 const void *input, size_t input_len, int timeout_ms)
{
    struct proc p;
    if (proc_start(&p, argv, opts) != 0) {
        struct proc_result r;
        memset(&r, 0, sizeof r);
        struct growbuf err = {NULL, 0, 0}, out = {NULL, 0, 0};
        char msg[256];
        (void)snprintf(msg, sizeof msg, "proc_start %s: %s", argv[0], strerror(errno));
        growbuf_add(&err, msg, strlen(msg));
        r.out = growbuf_take(&out, &r.out_len);
        r.err = growbuf_take(&err, &r.err_len);
        return r;
    }
    return proc_finish(&p, input, input_len, timeout_ms);
}

struct proc_result proc_run(const char *const argv[], const void *input, size_t input_len,
                            int timeout_ms)
{
    return proc_run_opts(argv, NULL, input, input_len, timeout_ms);
}

void proc_kill(struct proc *p)
{
    if (p->pid > 0 && !p->reaped) {
        kill(p->pid, SIGKILL);
        struct proc_result ignored;
        memset(&ignored, 0, sizeof ignored);
        reap(p, &ignored);
    }
    close_fd(&p->in_fd);
    close_fd(&p->out_fd);
    close_fd(&p->err_fd);
    close_fd(&p->pidfd);
}

bool proc_wait_exit(struct proc *p, int timeout_ms)
{
    if (p->reaped)
        return true;
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        struct pollfd pfd = {.fd = p->pidfd, .events = POLLIN, .revents = 0};
        int ready = poll(&pfd, 1, remaining_ms(deadline));
        if (ready > 0)
            return true;
        if (ready == 0)
            return false;
        if (errno != EINTR)
            return false;
    }
}

void proc_result_free(struct proc_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
    r->out_len = r->err_len = 0;
}

bool proc_exited_with(const struct proc_result *r, int code)
{
    return r->started && !r->timed_out && r->exited && r->exit_code == code;
}

bool died_by_signal(const struct proc_result *r, int sig)
{
    return r->started && !r->timed_out && r->signaled && r->signal == sig;
}

const char *proc_describe(const struct proc_result *r)
{
    static char text[1024];
    char how[128];
    if (!r->started)
        (void)snprintf(how, sizeof how, "not started");
    else if (r->timed_out)
        (void)snprintf(how, sizeof how, "timed out (killed)");
    else if (r->exited)
        (void)snprintf(how, sizeof how, "exit %d", r->exit_code);
    else if (r->signaled)
        (void)snprintf(how, sizeof how, "signal %d (%s)", r->signal, sigabbrev_np(r->signal) != NULL ? sigabbrev_np(r->signal) : "?");
    else
        (void)snprintf(how, sizeof how, "wait status 0x%x", (unsigned)r->status);
    (void)snprintf(text, sizeof text, "%s; stdout %zu bytes; stderr \"%.400s%s\"", how,
                   r->out_len, r->err != NULL ? r->err : "",
                   r->err_len > 400 ? "..." : "");
    return text;
}

bool output_has_line(const char *text, const char *line)
{
    if (text == NULL || line == NULL)
        return false;
    size_t len = strlen(line);
    for (const char *at = text; at != NULL && *at != '\0';) {
        if (strncmp(at, line, len) == 0 && (at[len] == '\n' || at[len] == '\0'))
            return true;
        at = strchr(at, '\n');
        if (at != NULL)
            at++;
    }
    return false;
}

bool output_has_line_prefix(const char *text, const char *prefix)
{
    if (text == NULL || prefix == NULL)
        return false;
    size_t len = strlen(prefix);
    for (const char *at = text; at != NULL && *at != '\0';) {
        if (strncmp(at, prefix, len) == 0)
            return true;
        at = strchr(at, '\n');
        if (at != NULL)
            at++;
    }
    return false;
}

/* Waits until fd is ready for events (poll again after a signal): 0, or -1 with errno
 * (ETIMEDOUT once deadline has passed). */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = events, .revents = 0};
        int ready = poll(&pfd, 1, remaining_ms(deadline));
        if (ready > 0)
            return 0;
        if (ready == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        if (errno != EINTR)
            return -1;
    }
}

int fd_write_all(int fd, const void *buf, size_t len, int timeout_ms)
{
    ignore_sigpipe();
    const char *at = buf;
    int64_t deadline = now_ms() + timeout_ms;
    while (len > 0) {
        if (wait_fd(fd, POLLOUT, deadline) != 0)
            return -1;
        ssize_t n = write(fd, at, len);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -1;
        }
        at += n;
        len -= (size_t)n;
    }
    return 0;
}

int fd_read_exact(int fd, void *buf, size_t len, int timeout_ms)
{
    char *at = buf;
    int64_t deadline = now_ms() + timeout_ms;
    while (len > 0) {
        if (wait_fd(fd, POLLIN, deadline) != 0)
            return -1;
        ssize_t n = read(fd, at, len);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -1;
        }
        if (n == 0) {
            errno = ENODATA;
            return -1;
        }
        at += n;
        len -= (size_t)n;
    }
    return 0;
}

bool fd_read_line(int fd, char *buf, size_t cap, int timeout_ms)
{
    size_t used = 0;
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        if (wait_fd(fd, POLLIN, deadline) != 0)
            return false;
        char c;
        ssize_t n = read(fd, &c, 1);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n != 1)
            return false;
        if (c == '\n') {
            buf[used] = '\0';
            return true;
        }
        if (used + 1 < cap)
            buf[used++] = c;
    }
}

bool hold_line_read(int fd, int timeout_ms)
{
    char line[128];
    return fd_read_line(fd, line, sizeof line, timeout_ms) && strncmp(line, "hold ", 5) == 0;
}

/* ---- /proc views ----------------------------------------------------------------- */

char *read_text_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct growbuf b = {NULL, 0, 0};
    char buf[8192];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int saved = errno;
            close(fd);
            free(b.data);
            errno = saved;
            return NULL;
        }
        if (n == 0)
            break;
        growbuf_add(&b, buf, (size_t)n);
    }
    close(fd);
    size_t len;
    return growbuf_take(&b, &len);
}

long long file_line_count(const char *path)
{
    char *text = read_text_file(path);
    long long n = 0;
    for (const char *p = text; p != NULL && *p != '\0'; p++)
        n += *p == '\n';
    free(text);
    return n;
}

void test_server_stop(struct test_server *s)
{
    if (!s->running)
        return;
    struct proc_result r = proc_finish(&s->p, NULL, 0, 10000);
    proc_result_free(&r);
    s->running = false;
}

long long file_occurrences(const char *path, const char *needle)
{
    char *text = read_text_file(path);
    long long n = 0;
    size_t len = strlen(needle);
    for (const char *p = text; len > 0 && p != NULL && (p = strstr(p, needle)) != NULL; p += len)
        n++;
    free(text);
    return n;
}

long process_cpu_ms(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    char *stat = read_text_file(path);
    if (stat == NULL)
        return -1;
    /* After the ")" closing the command name: state is field 3, utime 14, stime 15. */
    const char *at = strrchr(stat, ')');
    for (int field = 2; field < 14 && at != NULL; field++) {
        at = strchr(at + 1, ' ');
    }
    long ms = -1;
    long ticks = sysconf(_SC_CLK_TCK);
    if (at != NULL && ticks > 0) {
        char *end = NULL;
        unsigned long utime = strtoul(at + 1, &end, 10);
        const char *next = end;
        unsigned long stime = strtoul(next, &end, 10);
        if (end != next)
            ms = (long)((utime + stime) * 1000 / (unsigned long)ticks);
    }
    free(stat);
    return ms;
}

void sfmt(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

bool write_text_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return false;
    size_t len = strlen(text);
    bool written = write(fd, text, len) == (ssize_t)len;
    return close(fd) == 0 && written;
}

bool copy_file(const char *from, const char *to, mode_t mode)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return false;
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    bool ok = out >= 0;
    char buf[65536];
    while (ok) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ok = n == 0;
            break;
        }
        ok = fd_write_all(out, buf, (size_t)n, 10000) == 0;
    }
    close(in);
    if (out >= 0) {
        ok = ok && fchmod(out, mode) == 0;
        close(out);
        if (!ok)
            unlink(to);
    }
    return ok;
}

bool proc_status_field(pid_t pid, const char *field, char *out, size_t cap)
{
    char path[64];
    (void)snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    char *status = read_text_file(path);
    if (status == NULL)
        return false;
    size_t flen = strlen(field);
    bool found = false;
    for (const char *line = status; line != NULL && *line != '\0';) {
        if (strncmp(line, field, flen) == 0 && line[flen] == ':') {
            const char *v = line + flen + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            size_t vlen = strcspn(v, "\n");
            while (vlen > 0 && isspace((unsigned char)v[vlen - 1]))
                vlen--;
            if (cap > 0) {
                size_t take = vlen < cap - 1 ? vlen : cap - 1;
                memcpy(out, v, take);
                out[take] = '\0';
            }
            found = true;
            break;
        }
        line = strchr(line, '\n');
        if (line != NULL)
            line++;
    }
    free(status);
    return found;
}

long proc_status_number(pid_t pid, const char *field)
{
    char value[64];
    if (!proc_status_field(pid, field, value, sizeof value))
        return -1;
    char *end;
    errno = 0;
    long n = strtol(value, &end, 10);
    if (errno != 0 || end == value || *end != '\0')
        return -1;
    return n;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int proc_list_fds(pid_t pid, int *fds, int cap)
{
    char path[64];
    (void)snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *dir = opendir(path);
    if (dir == NULL)
        return -1;
    int count = 0;
    const struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        char *end;
        long fd = strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0')
            continue;
        if (count < cap)
            fds[count] = (int)fd;
        count++;
    }
    closedir(dir);
    qsort(fds, (size_t)(count < cap ? count : cap), sizeof fds[0], cmp_int);
    return count;
}

/* /proc/<pid>/syscall: "nr arg0 arg1 ... sp pc" while blocked, "running" otherwise. */
static bool blocked_in_read_stdin(pid_t pid, char *seen, size_t seen_cap)
{
    char path[64];
    (void)snprintf(path, sizeof path, "/proc/%d/syscall", (int)pid);
    char *text = read_text_file(path);
    if (text == NULL) {
        (void)snprintf(seen, seen_cap, "cannot read %s: %s", path, strerror(errno));
        return false;
    }
    (void)snprintf(seen, seen_cap, "syscall file \"%.60s\"", text);
    char *end;
    long nr = strtol(text, &end, 10);
    bool parsed = end != text && *end == ' ';
    unsigned long arg0 = parsed ? strtoul(end + 1, NULL, 16) : 1;
    free(text);
    return parsed && nr == SYS_read && arg0 == 0;
}

bool wait_blocked_reading_stdin(pid_t pid, int min_filters, int timeout_ms, char *why,
                                size_t why_cap)
{
    char scratch[256];
    if (why == NULL || why_cap == 0) {
        why = scratch;
        why_cap = sizeof scratch;
    }
    why[0] = '\0';
    int pidfd = pidfd_open_pid(pid);
    if (pidfd < 0) {
        (void)snprintf(why, why_cap, "pidfd_open(%d): %s", (int)pid, strerror(errno));
        return false;
    }
    int64_t deadline = now_ms() + timeout_ms;
    bool ready = false;
    char seen[160] = "";
    for (;;) {
        long filters = proc_status_number(pid, "Seccomp_filters");
        if (filters >= min_filters && blocked_in_read_stdin(pid, seen, sizeof seen)) {
            ready = true;
            break;
        }
        /* The pidfd is the wait: it wakes at once if the process exits. */
        struct pollfd pfd = {.fd = pidfd, .events = POLLIN, .revents = 0};
        int left = remaining_ms(deadline);
        if (left == 0) {
            (void)snprintf(why, why_cap,
                           "not blocked in read(0) with %d filters after %d ms "
                           "(Seccomp_filters %ld, %s)",
                           min_filters, timeout_ms, filters, seen);
            break;
        }
        int r = poll(&pfd, 1, left < 2 ? left : 2);
        if (r > 0) {
            (void)snprintf(why, why_cap, "process %d exited before it was ready", (int)pid);
            break;
        }
    }
    close(pidfd);
    return ready;
}

/* ---- temporary files ------------------------------------------------------------ */

static char tmp_dir_path[256];

const char *harness_tmp_root(void)
{
    const char *root = getenv("TMPDIR");
    if (root == NULL || root[0] != '/' || strlen(root) > HARNESS_TMP_ROOT_MAX)
        return "/tmp";
    return root;
}

const char *harness_tmpdir(const char *name)
{
    snprintf(tmp_dir_path, sizeof tmp_dir_path, "%s/basal-%s-XXXXXX", harness_tmp_root(), name);
    if (mkdtemp(tmp_dir_path) == NULL) {
        fail("harness: temporary directory", "mkdtemp: %s", strerror(errno));
        tmp_dir_path[0] = '\0';
        return NULL;
    }
    return tmp_dir_path;
}

bool harness_real_tmpdir(const char *name, char *out, size_t cap)
{
    const char *tmp = harness_tmpdir(name);
    if (tmp == NULL)
        return false;
    char *real = realpath(tmp, NULL);
    if (real == NULL || strlen(real) >= cap) {
        fail("harness: temporary directory", "%s: %s", tmp,
             real == NULL ? strerror(errno) : "path too long");
        free(real);
        return false;
    }
    memcpy(out, real, strlen(real) + 1);
    free(real);
    return true;
}

void mkdir_or_fail(const char *path, const char *name)
{
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        fail(name, "%s: %s", path, strerror(errno));
}

bool harness_tmpdir_copy(const char *name, char *out, size_t cap)
{
    const char *tmp = harness_tmpdir(name);
    if (tmp == NULL)
        return false;
    if (strlen(tmp) >= cap) {
        fail("harness: temporary directory", "%s: path too long", tmp);
        return false;
    }
    memcpy(out, tmp, strlen(tmp) + 1);
    return true;
}

const char *harness_tmp_file(const char *file, const char *text)
{
    static char ring[16][384];
    static unsigned next;
    char *path = ring[next++ % 16];
    snprintf(path, sizeof ring[0], "%s/%s", tmp_dir_path, file);
    FILE *f = fopen(path, "we");
    if (f == NULL)
        return "/nonexistent";
    fputs(text, f);
    fclose(f);
    return path;
}

static int remove_tree_entry(const char *path, const struct stat *sb, int flag,
                             struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag == FTW_DP || flag == FTW_D)
        (void)chmod(path, 0700);
    (void)remove(path);
    return 0;
}

void harness_remove_tree(const char *path)
{
    (void)nftw(path, remove_tree_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void harness_remove_tmpdir(void)
{
    if (tmp_dir_path[0] == '\0')
        return;
    DIR *dir = opendir(tmp_dir_path);
    if (dir != NULL) {
        const struct dirent *entry;
        while ((entry = readdir(dir)) != NULL) {
            if (entry->d_name[0] == '.')
                continue;
            char path[640];
            snprintf(path, sizeof path, "%s/%s", tmp_dir_path, entry->d_name);
            unlink(path);
        }
        closedir(dir);
    }
    rmdir(tmp_dir_path);
    tmp_dir_path[0] = '\0';
}

/* ---- confinement probes ---------------------------------------------------------- */

struct probe_result probe_result_parse(const char *err_text, const char *name)
{
    struct probe_result out = {false, 0, 0};
    char prefix[96];
    snprintf(prefix, sizeof prefix, "result %s rc=", name);
    const char *p = strstr(err_text, prefix);
    /* A whole-line match only: "result" at the start of the text or after a newline. */
    while (p != NULL && p != err_text && p[-1] != '\n')
        p = strstr(p + 1, prefix);
    if (p == NULL)
        return out;
    char *end;
    errno = 0;
    long rc = strtol(p + strlen(prefix), &end, 10);
    if (errno != 0 || strncmp(end, " errno=", 7) != 0)
        return out;
    const char *num = end + 7;
    long e = strtol(num, &end, 10);
    if (errno != 0 || end == num || (*end != '\n' && *end != '\0') || e < 0 || e > 4095)
        return out;
    out.present = true;
    out.rc = rc;
    out.err = (int)e;
    return out;
}
