/* serve's systemd notifications (serve/sd_notify.h) against a fake NOTIFY_SOCKET: an
 * AF_UNIX datagram socket this test binds, as systemd does for a Type=notify unit.
 *
 *   - without NOTIFY_SOCKET nothing is sent (and nothing fails);
 *   - serve_notify_ready sends READY=1 and the STATUS= line; a line break in the status
 *     cannot add an assignment of its own [guard: status stays one assignment];
 *   - serve_notify_stopping sends STOPPING=1, serve_notify_watchdog WATCHDOG=1;
 *   - serve_watchdog_interval_ms reads WATCHDOG_USEC (for this pid: WATCHDOG_PID), and
 *     is 0 without it, for another pid, or for a value that is not a number. */
#include "lib/harness.h"

#include "serve/sd_notify.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define RECV_TIMEOUT_MS 5000

/* The next datagram on fd within the safety timeout, NUL-terminated; "" if none. */
static const char *receive(int fd, int timeout_ms)
{
    static char buf[4096];
    buf[0] = '\0';
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, timeout_ms) != 1)
        return buf;
    ssize_t n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

static void test_notifications(const char *dir)
{
    char path[PATH_MAX];
    sfmt(path, sizeof path, "%s/notify.sock", dir);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    sfmt(sa.sun_path, sizeof sa.sun_path, "%s", path);
    if (!check(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0,
               "sd_notify: the fake NOTIFY_SOCKET is bound", "%s", strerror(errno))) {
        if (fd >= 0)
            close(fd);
        return;
    }

    /* Not started by systemd: a no-op. The STOPPING=1 sent once the socket is set must
     * be the first datagram, so the READY=1 before it went nowhere. */
    unsetenv("NOTIFY_SOCKET");
    serve_notify_ready("not sent");
    setenv("NOTIFY_SOCKET", path, 1);
    serve_notify_stopping();
    const char *got = receive(fd, RECV_TIMEOUT_MS);
    check_str_eq(got, "STOPPING=1",
                 "sd_notify: nothing sent without NOTIFY_SOCKET; serve_notify_stopping sends "
                 "STOPPING=1");

    serve_notify_ready("recovered 2 runs; admitting work");
    got = receive(fd, RECV_TIMEOUT_MS);
    check_str_eq(got, "READY=1\nSTATUS=recovered 2 runs; admitting work",
                 "sd_notify: serve_notify_ready sends READY=1 and STATUS=");

    serve_notify_ready("ready\nWATCHDOG=trigger\rMAINPID=1");
    got = receive(fd, RECV_TIMEOUT_MS);
    check_str_eq(got, "READY=1\nSTATUS=ready WATCHDOG=trigger MAINPID=1",
                 "sd_notify: line breaks in the status become spaces, no assignment of "
                 "their own [guard: status stays one assignment]");

    serve_notify_watchdog();
    got = receive(fd, RECV_TIMEOUT_MS);
    check_str_eq(got, "WATCHDOG=1", "sd_notify: serve_notify_watchdog sends WATCHDOG=1");

    unsetenv("NOTIFY_SOCKET");
    close(fd);
    unlink(path);
}

static void test_watchdog_interval(void)
{
    char pid[32];
    sfmt(pid, sizeof pid, "%ld", (long)getpid());

    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    check_int_eq(serve_watchdog_interval_ms(), 0, "watchdog: 0 without WATCHDOG_USEC");

    setenv("WATCHDOG_USEC", "30000000", 1);
    setenv("WATCHDOG_PID", pid, 1);
    check_int_eq(serve_watchdog_interval_ms(), 30000,
                 "watchdog: WATCHDOG_USEC=30000000 for this pid is 30000 ms");

    unsetenv("WATCHDOG_PID");
    check_int_eq(serve_watchdog_interval_ms(), 30000,
                 "watchdog: WATCHDOG_USEC without WATCHDOG_PID applies to this process");

    setenv("WATCHDOG_PID", "1", 1);
    check_int_eq(serve_watchdog_interval_ms(), 0,
                 "watchdog: 0 when WATCHDOG_PID names another process");

    setenv("WATCHDOG_PID", pid, 1);
    setenv("WATCHDOG_USEC", "thirty", 1);
    check_int_eq(serve_watchdog_interval_ms(), 0, "watchdog: 0 for a WATCHDOG_USEC that is "
                                                  "not a number");
    setenv("WATCHDOG_USEC", "0", 1);
    check_int_eq(serve_watchdog_interval_ms(), 0, "watchdog: 0 for WATCHDOG_USEC=0");
    setenv("WATCHDOG_USEC", "500", 1);
    check_int_eq(serve_watchdog_interval_ms(), 1,
                 "watchdog: under a millisecond rounds up to 1 ms, never 0 (off)");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
}

int main(void)
{
    const char *dir = harness_tmpdir("sd-notify");
    if (dir == NULL)
        return harness_finish();
    test_notifications(dir);
    test_watchdog_interval();
    harness_remove_tmpdir();
    return harness_finish();
}
