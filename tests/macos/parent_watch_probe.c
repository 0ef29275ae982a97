/* The macOS worker's end when its parent dies (src/worker/parent_watch_macos.c), on
 * macOS (make macos-probe; the CI job runs it). A "middle" process stands for ck-basal:
 * it forks the worker, which confines itself (confine(), as the worker does before its
 * first read) and then spins in native code, as a script would; then the middle exits.
 * Guards proven:
 *   - a busy confined worker is ended once its parent exits (this process, which is
 *     not the worker's parent, watches the worker's exit with its own kqueue, bounded
 *     by 10 s); its control, the same busy child without confine(), is still running
 *     after 1 s (then killed here), so the check can fail;
 *   - a worker whose parent is already gone when it confines itself refuses,
 *     "refusing to run unconfined: parent-gone".
 * Prints "ok - ..." / "not ok - ..." lines; exits 1 on any failure. Built only on macOS:
 * on Linux, make macos-check compiles it for arm64-apple-macos13 against
 * tests/macos/macos_decls.h. */
#include "worker/confine.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/event.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;

static void result(bool passed, const char *name, const char *detail)
{
    if (passed) {
        printf("ok - %s\n", name);
    } else {
        printf("not ok - %s: %s\n", name, detail);
        failures++;
    }
    fflush(stdout);
}

static void confine_worker(void)
{
    struct confine_options options;
    memset(&options, 0, sizeof options);
    options.landlock_policy = LANDLOCK_POLICY_REQUIRED;
    (void)confine(&options);
}

/* Reads exactly len bytes; false at end of file or on an error. */
static bool read_all(int fd, void *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = read(fd, (char *)buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        done += (size_t)n;
    }
    return true;
}

/* Waits up to seconds for pid (not a child of ours) to exit; true if it did. */
static bool exits_within(pid_t pid, long seconds)
{
    int queue = kqueue();
    if (queue < 0)
        return false;
    struct kevent change, event;
    EV_SET(&change, (uintptr_t)pid, EVFILT_PROC, EV_ADD, NOTE_EXIT, 0, NULL);
    if (kevent(queue, &change, 1, NULL, 0, NULL) != 0) {
        bool gone = errno == ESRCH;
        (void)close(queue);
        return gone;
    }
    struct timespec bound = {seconds, 0};
    int n;
    do {
        n = kevent(queue, NULL, 0, &event, 1, &bound);
    } while (n < 0 && errno == EINTR);
    (void)close(queue);
    return n == 1;
}

/* What the worker writes on its stdout once running, in one write (under PIPE_BUF, so
 * it arrives whole): its pid, then 'R'. */
struct ready_report {
    pid_t pid;
    char ready;
};

/* The middle forks a worker whose stdout is report_fd, which reports itself running
 * (struct ready_report) once confined (or not, for the control); the middle waits for
 * go_fd's end of file before it exits. */
static void run_middle(int report_fd, int go_fd, bool confined)
{
    pid_t worker = fork();
    if (worker < 0)
        _exit(2);
    if (worker == 0) {
        if (dup2(report_fd, 1) < 0)
            _exit(2);
        if (confined)
            confine_worker();
        struct ready_report report = {.pid = getpid(), .ready = 'R'};
        if (write(1, &report, sizeof report) != (ssize_t)sizeof report)
            _exit(2);
        for (;;) {
        }
    }
    (void)close(report_fd);
    char byte;
    while (read(go_fd, &byte, 1) < 0 && errno == EINTR) {
    }
    _exit(0);
}

enum busy_end { BUSY_NOT_STARTED, BUSY_ENDED, BUSY_RAN_ON };

/* Starts a busy worker under a middle, ends the middle, and tells whether the worker
 * ended within bound_s (one still running is killed here). */
static enum busy_end busy_worker_after_parent_exit(bool confined, long bound_s)
{
    int report[2], go[2];
    if (pipe(report) != 0 || pipe(go) != 0)
        return BUSY_NOT_STARTED;
    pid_t middle = fork();
    if (middle < 0)
        return BUSY_NOT_STARTED;
    if (middle == 0) {
        (void)close(report[0]);
        (void)close(go[1]);
        run_middle(report[1], go[0], confined);
    }
    (void)close(report[1]);
    (void)close(go[0]);
    struct ready_report ready = {0, 0};
    bool started = read_all(report[0], &ready, sizeof ready) && ready.ready == 'R' &&
                   ready.pid > 1;
    (void)close(go[1]); /* the middle exits now */
    int status;
    (void)waitpid(middle, &status, 0);
    (void)close(report[0]);
    if (!started)
        return BUSY_NOT_STARTED;
    if (exits_within(ready.pid, bound_s))
        return BUSY_ENDED;
    (void)kill(ready.pid, SIGKILL);
    return BUSY_RAN_ON;
}

static const char *busy_end_name(enum busy_end end)
{
    switch (end) {
    case BUSY_NOT_STARTED: return "the worker did not start";
    case BUSY_ENDED: return "it ended";
    case BUSY_RAN_ON: return "it was still running";
    }
    return "?";
}

/* A worker that confines itself after its parent exited: what it wrote on stderr. */
static void check_parent_already_gone(void)
{
    int err[2], gone[2];
    if (pipe(err) != 0 || pipe(gone) != 0) {
        result(false, "parent watch: setup", strerror(errno));
        return;
    }
    pid_t middle = fork();
    if (middle == 0) {
        pid_t middle_pid = getpid();
        pid_t worker = fork();
        if (worker == 0) {
            (void)alarm(20); /* bounds the child if the guard fails to refuse */
            if (dup2(err[1], 2) < 0)
                _exit(2);
            (void)close(gone[1]);
            char byte;
            /* End of file: the middle has exited; then wait out its reparenting. */
            while (read(gone[0], &byte, 1) < 0 && errno == EINTR) {
            }
            while (getppid() == middle_pid) {
            }
            confine_worker();
            _exit(0); /* confined: the guard did not refuse */
        }
        _exit(worker > 0 ? 0 : 2);
    }
    (void)close(err[1]);
    (void)close(gone[0]);
    (void)close(gone[1]);
    int status;
    (void)waitpid(middle, &status, 0);
    char text[256];
    size_t len = 0;
    for (;;) {
        ssize_t n = read(err[0], text + len, sizeof text - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || (len += (size_t)n) == sizeof text - 1)
            break;
    }
    text[len] = '\0';
    (void)close(err[0]);
    result(strstr(text, "refusing to run unconfined: parent-gone") != NULL,
           "parent watch: a worker whose parent already exited refuses (parent-gone)",
           len > 0 ? text : "nothing on stderr");
}

int main(void)
{
    enum busy_end control = busy_worker_after_parent_exit(false, 1);
    result(control == BUSY_RAN_ON,
           "parent watch control: an unconfined busy child outlives its parent",
           busy_end_name(control));
    enum busy_end confined = busy_worker_after_parent_exit(true, 10);
    result(confined == BUSY_ENDED,
           "parent watch: a confined busy worker is ended when its parent exits",
           busy_end_name(confined));
    check_parent_already_gone();
    return failures == 0 ? 0 : 1;
}
