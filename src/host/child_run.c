#include "host/child_run.h"
#include "base/bounded_append.h"
#include "base/clock.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Once the child has exited, how long what it wrote may still take to arrive: only a
 * descendant that left the group (or, for a module, its namespace) holds the pipes. */
#define EXIT_GRACE_MS 200
#define OUT_FIRST_CAP 4096

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

void child_run_reset_in_child(unsigned first_closed)
{
    if (syscall(SYS_close_range, first_closed, ~0U, 0U) != 0)
        for (int fd = (int)first_closed; fd < 4096; fd++)
            close(fd);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        (void)sigaction(sig, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

int child_run_init(struct child_run *r, const char *input, size_t input_len, size_t out_max)
{
    memset(r, 0, sizeof *r);
    r->pid = -1;
    r->pidfd = r->in_fd = r->out_fd = r->err_fd = -1;
    r->input = input;
    r->input_len = input != NULL ? input_len : 0;
    r->out_max = out_max;
    r->out_cap = OUT_FIRST_CAP;
    r->out = malloc(r->out_cap + 1);
    if (r->out == NULL)
        return -1;
    r->out[0] = '\0';
    return 0;
}

void child_run_started(struct child_run *r, pid_t pid, int in_fd, int out_fd, int err_fd)
{
    r->pid = pid;
    r->in_fd = in_fd;
    r->out_fd = out_fd;
    r->err_fd = err_fd;
    int fds[3] = {in_fd, out_fd, err_fd};
    for (size_t i = 0; i < 3; i++)
        if (fds[i] >= 0)
            (void)fcntl(fds[i], F_SETFL, O_NONBLOCK);
    r->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Reaps the child if it has exited (or, with block, waits: only after a SIGKILL).
 * What it left in its group is killed before the reap, while the unreaped leader
 * still holds the group's id (so the id cannot name another group by then). */
static void reap(struct child_run *r, bool block)
{
    if (r->exited || r->pid <= 0)
        return;
    if (!block) {
        siginfo_t info;
        memset(&info, 0, sizeof info);
        int w;
        while ((w = waitid(P_PID, (id_t)r->pid, &info, WEXITED | WNOHANG | WNOWAIT)) < 0 &&
               errno == EINTR) {
        }
        if (w == 0 && info.si_pid != r->pid)
            return; /* still running */
        if (w == 0)
            (void)kill(-r->pid, SIGKILL);
    }
    int status = 0;
    pid_t done;
    while ((done = waitpid(r->pid, &status, 0)) < 0 && errno == EINTR) {
    }
    r->exited = true;
    r->status = done == r->pid ? status : 0x7f00;
    close_fd(&r->pidfd);
}

void child_run_kill(struct child_run *r)
{
    if (!r->exited && r->pid > 0) {
        (void)kill(-r->pid, SIGKILL);
        (void)kill(r->pid, SIGKILL); /* in case the group was never set */
    }
    reap(r, true);
}

static void keep(struct child_run *r, const char *buf, size_t n)
{
    if (bounded_append(&r->out, &r->out_len, &r->out_cap, r->out_max, buf, n) != BOUNDED_APPENDED)
        r->too_large = true; /* over the bound, or nothing more can be kept */
}

static void keep_tail(struct child_run *r, const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        r->tail[(r->tail_total + i) % CHILD_RUN_TAIL] = buf[i];
    r->tail_total += n;
}

/* Reads what fd has; closes it at EOF or on error. */
static void drain(struct child_run *r, int *fd, bool is_out)
{
    char buf[65536];
    while (*fd >= 0 && !(is_out && r->too_large)) {
        ssize_t n = read(*fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            close_fd(fd);
            return;
        }
        if (is_out)
            keep(r, buf, (size_t)n);
        else
            keep_tail(r, buf, (size_t)n);
    }
}

static void feed(struct child_run *r)
{
    while (r->input_off < r->input_len) {
        ssize_t n = write(r->in_fd, r->input + r->input_off, r->input_len - r->input_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) { /* EPIPE and the like: the child does not read; its output says */
            close_fd(&r->in_fd);
            return;
        }
        r->input_off += (size_t)n;
    }
    close_fd(&r->in_fd); /* all of it written: EOF */
}

static void pump_until_end(struct child_run *r, long long deadline)
{
    bool grace_set = false;
    for (;;) {
        if (r->too_large) {
            child_run_kill(r);
            return;
        }
        reap(r, false);
        if (r->exited && r->out_fd < 0 && r->err_fd < 0)
            return;
        if (r->exited && !grace_set) {
            grace_set = true;
            if (deadline > monotonic_ms() + EXIT_GRACE_MS)
                deadline = monotonic_ms() + EXIT_GRACE_MS;
        }
        long long left = deadline - monotonic_ms();
        if (left <= 0) {
            if (!r->exited) /* exited: what arrived is all it wrote */
                r->timed_out = true;
            child_run_kill(r);
            return;
        }
        struct pollfd p[4];
        int np = 0, in_i = -1, out_i = -1, err_i = -1;
        if (r->in_fd >= 0) {
            p[np] = (struct pollfd){r->in_fd, POLLOUT, 0};
            in_i = np++;
        }
        if (r->out_fd >= 0) {
            p[np] = (struct pollfd){r->out_fd, POLLIN, 0};
            out_i = np++;
        }
        if (r->err_fd >= 0) {
            p[np] = (struct pollfd){r->err_fd, POLLIN, 0};
            err_i = np++;
        }
        int wait_ms = left > 60000 ? 60000 : (int)left;
        if (!r->exited) {
            if (r->pidfd >= 0)
                p[np++] = (struct pollfd){r->pidfd, POLLIN, 0};
            else if (wait_ms > 20) /* no pidfd: look for the exit now and then */
                wait_ms = 20;
        }
        int rc = poll(p, (nfds_t)np, wait_ms);
        if (rc < 0 && errno != EINTR) { /* cannot wait: give up as a timeout would */
            r->timed_out = true;
            child_run_kill(r);
            return;
        }
        if (rc <= 0)
            continue;
        if (in_i >= 0 && p[in_i].revents != 0)
            feed(r);
        if (out_i >= 0 && p[out_i].revents != 0)
            drain(r, &r->out_fd, true);
        if (err_i >= 0 && p[err_i].revents != 0)
            drain(r, &r->err_fd, false);
    }
}

void child_run_pump(struct child_run *r, long long deadline)
{
    pump_until_end(r, deadline);
    /* The child is gone: what is left on stderr is all it wrote. */
    drain(r, &r->err_fd, false);
    close_fd(&r->in_fd);
    close_fd(&r->out_fd);
    close_fd(&r->err_fd);
}

const char *child_run_stderr_line(const struct child_run *r, char *buf, size_t cap)
{
    size_t o = 0;
    if (cap == 0)
        return buf;
    size_t kept = r->tail_total < CHILD_RUN_TAIL ? r->tail_total : CHILD_RUN_TAIL;
    for (size_t i = r->tail_total - kept; i < r->tail_total && o + 1 < cap; i++) {
        unsigned char ch = (unsigned char)r->tail[i % CHILD_RUN_TAIL];
        char shown = '?';
        if (ch >= 0x20 && ch < 0x7f)
            shown = (char)ch;
        else if (ch == '\n' || ch == '\t' || ch == '\r')
            shown = ' ';
        buf[o++] = shown;
    }
    while (o > 0 && buf[o - 1] == ' ')
        o--;
    buf[o] = '\0';
    return buf;
}

void child_run_close(struct child_run *r)
{
    child_run_kill(r);
    close_fd(&r->in_fd);
    close_fd(&r->out_fd);
    close_fd(&r->err_fd);
    close_fd(&r->pidfd);
    free(r->out);
    r->out = NULL;
    r->out_len = r->out_cap = 0;
}
