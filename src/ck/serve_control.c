#include "ck/serve_control.h"

#include "base/error_line.h"
#include "ck/child_process.h"
#include "serve/ops_client.h"
#include "serve/serve_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* How long the ops exchange of serve.stop may take (the reply comes at once). */
#define STOP_REQUEST_TIMEOUT_MS 10000

static int lock_open(const char *home, int *fd, char *err, size_t err_cap)
{
    char path[PATH_MAX];
    *fd = -1;
    int n = snprintf(path, sizeof path, "%s/%s", home, SERVE_LOCK_NAME);
    if (n <= 0 || (size_t)n >= sizeof path)
        return error_line(err, err_cap, "%s: path too long", home);
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (*fd < 0)
        return error_line(err, err_cap, "cannot open %s: %s", path, strerror(errno));
    return 0;
}

/* The lock file names its holder (serve_lock.c does the same for a serve). */
static void lock_mark(int fd)
{
    char text[32];
    int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) == 0 && pwrite(fd, text, (size_t)n, 0) == n)
        return;
}

int serve_lock_try(const char *home, int *lock_fd, long *holder, char *err, size_t err_cap)
{
    *lock_fd = -1;
    *holder = 0;
    struct stat st;
    if (lstat(home, &st) != 0 && errno == ENOENT)
        return 1;
    int fd = -1;
    if (lock_open(home, &fd, err, err_cap) != 0)
        return -1;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int saved = errno;
        close(fd);
        if (saved != EWOULDBLOCK)
            return error_line(err, err_cap, "cannot lock %s/%s: %s", home, SERVE_LOCK_NAME,
                              strerror(saved));
        *holder = serve_lock_holder(home);
        return 0;
    }
    lock_mark(fd);
    *lock_fd = fd;
    return 1;
}

/* SIGTERM to holder through a pidfd, once the lock file still names it: a pid read
 * from the file is not signalled after it was reused by another process. */
static int stop_by_signal(const char *home, long holder, char *err, size_t err_cap)
{
    if (holder <= 0)
        return error_line(err, err_cap, "the serve's pid is unknown (%s/%s names none)", home,
                          SERVE_LOCK_NAME);
    int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)holder, 0);
    if (pidfd < 0)
        return error_line(err, err_cap, "cannot open pid %ld: %s", holder, strerror(errno));
    int rc = 0;
    if (serve_lock_holder(home) != holder)
        rc = error_line(err, err_cap, "pid %ld no longer holds %s/%s", holder, home,
                        SERVE_LOCK_NAME);
    else if (syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0) != 0)
        rc = error_line(err, err_cap, "cannot signal pid %ld: %s", holder, strerror(errno));
    close(pidfd);
    return rc;
}

int serve_stop(const char *home, long holder, char *how, size_t how_cap, char *err,
               size_t err_cap)
{
    int fd;
    char why[512];
    int connected = ops_client_connect(home, &fd, why, sizeof why);
    if (connected < 0)
        return error_line(err, err_cap, "%s", why);
    if (connected == 1) {
        json_t *request = json_pack("{s:s}", "cmd", "serve.stop");
        void *reply_ = NULL;
        int rc = request != NULL ? ops_client_call(fd, request, &reply_, STOP_REQUEST_TIMEOUT_MS,
                                                   why, sizeof why)
                                 : error_line(why, sizeof why, "out of memory");
        json_decref(request);
        if (rc != 0)
            return error_line(err, err_cap, "serve.stop: %s", why);
        json_t *reply = reply_;
        bool ok = json_is_true(json_object_get(reply, "ok"));
        const char *error = json_string_value(json_object_get(reply, "error"));
        bool unknown = !ok && error != NULL && strcmp(error, "unknown command") == 0;
        /* A serve already stopping refuses every request so: the stop ck asks for. */
        bool already = !ok && error != NULL && strcmp(error, "serve is stopping") == 0;
        if (already) {
            json_decref(reply);
            snprintf(how, how_cap, "(it was already stopping)");
            return 0;
        }
        if (!ok && !unknown) {
            rc = error_line(err, err_cap, "serve.stop: %s", error != NULL ? error : "refused");
            json_decref(reply);
            return rc;
        }
        json_decref(reply);
        if (ok) {
            snprintf(how, how_cap, "through its ops socket (serve.stop)");
            return 0;
        }
        /* A serve of a build before serve.stop: SIGTERM is the same stop. */
        snprintf(how, how_cap, "by SIGTERM (its build has no serve.stop)");
    } else {
        snprintf(how, how_cap, "by SIGTERM (its ops socket is not up)");
    }
    return stop_by_signal(home, holder, err, err_cap);
}

static void on_alarm(int sig)
{
    (void)sig; /* only interrupts the blocking flock */
}

int serve_wait_gone(const char *home, unsigned timeout_s, int *lock_fd, char *err,
                    size_t err_cap)
{
    int fd = -1;
    if (lock_open(home, &fd, err, err_cap) != 0)
        return -1;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: flock returns EINTR when it fires */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, &old);
    alarm(timeout_s);
    int rc = flock(fd, LOCK_EX);
    int saved = errno;
    alarm(0);
    sigaction(SIGALRM, &old, NULL);
    if (rc != 0) {
        close(fd);
        if (saved == EINTR)
            return error_line(err, err_cap, "the serve did not stop within %u s", timeout_s);
        return error_line(err, err_cap, "cannot lock %s/%s: %s", home, SERVE_LOCK_NAME,
                          strerror(saved));
    }
    lock_mark(fd);
    *lock_fd = fd;
    return 0;
}

bool serve_systemd_manages(long holder)
{
    if (holder <= 0)
        return false;
    char out[64], why[256], prog[] = "systemctl", user[] = "--user", show[] = "show",
                            property[] = "--property=MainPID", value[] = "--value",
                            unit[] = SERVE_SYSTEMD_UNIT;
    char *argv[] = {prog, user, show, property, value, unit, NULL};
    if (child_run(argv, out, sizeof out, 1, why, sizeof why) != 0)
        return false;
    char *end;
    long pid = strtol(out, &end, 10);
    return end != out && (*end == '\n' || *end == '\0') && pid == holder;
}

int serve_systemd_start(char *err, size_t err_cap)
{
    char why[256] = "", prog[] = "systemctl", user[] = "--user", start[] = "start",
                        unit[] = SERVE_SYSTEMD_UNIT;
    char *argv[] = {prog, user, start, unit, NULL};
    int status = child_run(argv, NULL, 0, 0, why, sizeof why);
    if (status != 0)
        return error_line(err, err_cap, "systemctl --user start %s: %s", SERVE_SYSTEMD_UNIT,
                          why[0] != '\0' ? why : "failed");
    return 0;
}
